"""Named facts about one vLLM container that patterns can test (``fact:`` leaves).

A fact is computed from the pod spec, the engine configuration, the start-up
lines and the metrics; each comes with a sentence that says where it came
from, which becomes evidence when a pattern relies on it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from triage import engine_config, workload
from triage.engine_config import EngineConfig
from triage.logs import LogLine, split_lines
from triage.metrics import MetricsView, parse_metrics
from triage.snapshot import CURRENT, PREVIOUS, Obj, Snapshot, meta
from triage.startup import StartupReport, read_startup


@dataclass(frozen=True)
class Fact:
    value: Any
    text: str


class ContainerContext:
    """Everything the classifier may look at for one vLLM container of one pod."""

    def __init__(self, snapshot: Snapshot, pod: Obj, container: Obj) -> None:
        self.snapshot = snapshot
        self.pod = pod
        self.container = container
        self.namespace = str(meta(pod).get("namespace", ""))
        self.pod_name = str(meta(pod).get("name", ""))
        self.name = str(container.get("name", ""))
        self._facts: dict[str, Fact] = {}

    @cached_property
    def status(self) -> Obj:
        return workload.container_status(self.pod, self.name)

    def log_text(self, stream: str) -> str | None:
        return self.snapshot.log(self.namespace, self.pod_name, self.name, stream)

    @cached_property
    def lines(self) -> dict[str, list[LogLine]]:
        out: dict[str, list[LogLine]] = {}
        for stream in (CURRENT, PREVIOUS):
            text = self.log_text(stream)
            if text is not None:
                out[stream] = split_lines(text)
        return out

    @cached_property
    def engine(self) -> EngineConfig:
        return engine_config.parse(self.container, self.snapshot, self.pod)

    @cached_property
    def startup(self) -> dict[str, StartupReport]:
        return {stream: read_startup(lines) for stream, lines in self.lines.items()}

    @cached_property
    def metrics(self) -> MetricsView | None:
        text = self.snapshot.metrics.get((self.namespace, self.pod_name))
        return parse_metrics(text) if text is not None else None

    @cached_property
    def node(self) -> Obj | None:
        return self.snapshot.node(workload.pod_spec(self.pod).get("nodeName"))

    def fact(self, name: str) -> Fact | None:
        if name not in self._facts:
            fn = FACTS.get(name)
            if fn is None:
                return None
            self._facts[name] = fn(self)
        return self._facts[name]


def _gpu_request(ctx: ContainerContext) -> Fact:
    n = workload.gpu_request(ctx.container)
    if n:
        return Fact(n, f"container {ctx.name} requests {n} GPU(s) "
                       f"(resources.limits: {_gpu_limits(ctx.container)})")
    return Fact(0, f"container {ctx.name} requests no GPU: resources.limits has no "
                   "nvidia.com/gpu, so the device plugin gives it no device")


def _gpu_limits(container: Obj) -> str:
    limits = (container.get("resources") or {}).get("limits") or {}
    return ", ".join(f"{k}={v}" for k, v in limits.items() if k in workload.GPU_RESOURCES)


def _parallel(flag: str) -> Callable[[ContainerContext], Fact]:
    def compute(ctx: ContainerContext) -> Fact:
        return Fact(ctx.engine.integer(flag) or 1, ctx.engine.describe(flag))
    return compute


def _shm(ctx: ContainerContext) -> Fact:
    if workload.pod_spec(ctx.pod).get("hostIPC"):
        return Fact(True, "pod uses hostIPC, /dev/shm is the node's")
    vol = workload.shm_volume(ctx.pod, ctx.container)
    if vol is None:
        return Fact(False, f"no volume is mounted at /dev/shm in container {ctx.name}: "
                           "the container runtime's default is 64 MiB")
    medium = (vol.get("emptyDir") or {}).get("medium")
    if medium == "Memory":
        limit = (vol.get("emptyDir") or {}).get("sizeLimit", "no sizeLimit")
        return Fact(True, f"/dev/shm is emptyDir medium Memory ({limit}), volume {vol.get('name')}")
    return Fact(False, f"/dev/shm is volume {vol.get('name')} but not memory-backed")


def _memory_limit(ctx: ContainerContext) -> Fact:
    limit = workload.memory_limit(ctx.container)
    req = ((ctx.container.get("resources") or {}).get("requests") or {}).get("memory")
    if limit:
        return Fact(limit, f"container {ctx.name} memory limit {limit}"
                           + (f", request {req}" if req else ""))
    return Fact(None, f"container {ctx.name} has no memory limit")


def _restart_count(ctx: ContainerContext) -> Fact:
    n = int(ctx.status.get("restartCount") or 0)
    return Fact(n, f"container {ctx.name} restarted {n} time(s)")


def _last_exit(ctx: ContainerContext) -> Fact:
    term = (ctx.status.get("lastState") or {}).get("terminated") or {}
    if not term:
        return Fact(None, f"container {ctx.name} has no previous termination")
    return Fact(term.get("exitCode"), f"container {ctx.name} last terminated: reason "
                f"{term.get('reason')}, exit code {term.get('exitCode')}, "
                f"finished {term.get('finishedAt')}")


def _startup_probe(ctx: ContainerContext) -> Fact:
    probe = ctx.container.get("startupProbe")
    if not probe:
        return Fact(False, f"container {ctx.name} has no startupProbe")
    budget = int(probe.get("initialDelaySeconds", 0)) + int(probe.get("periodSeconds", 10)) * int(
        probe.get("failureThreshold", 3))
    return Fact(True, f"startupProbe allows about {budget}s "
                      f"(initialDelaySeconds {probe.get('initialDelaySeconds', 0)}, periodSeconds "
                      f"{probe.get('periodSeconds', 10)}, failureThreshold "
                      f"{probe.get('failureThreshold', 3)})")


def _unschedulable(ctx: ContainerContext) -> Fact:
    """The scheduler's message when the pod's PodScheduled condition is False."""
    for cond in (ctx.pod.get("status") or {}).get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == "PodScheduled" and \
                str(cond.get("status")) == "False":
            msg = str(cond.get("message") or cond.get("reason") or "Unschedulable")
            return Fact(msg, f"pod {ctx.pod_name} condition PodScheduled=False, reason "
                             f"{cond.get('reason')}: {msg}")
    return Fact(None, f"pod {ctx.pod_name} is not reported unschedulable")


FACTS: dict[str, Callable[[ContainerContext], Fact]] = {
    "gpu_request": _gpu_request,
    "tensor_parallel_size": _parallel("tensor-parallel-size"),
    "pipeline_parallel_size": _parallel("pipeline-parallel-size"),
    "shm_memory_backed": _shm,
    "memory_limit": _memory_limit,
    "restart_count": _restart_count,
    "last_exit_code": _last_exit,
    "has_startup_probe": _startup_probe,
    "unschedulable": _unschedulable,
}
