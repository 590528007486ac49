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

import regex

from triage import engine_config, workload
from triage.engine_config import EngineConfig
from triage.logs import LogLine, LogText, split_lines
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
    def texts(self) -> dict[str, LogText]:
        """Each log stream read, parsed once."""
        out: dict[str, LogText] = {}
        for stream in (CURRENT, PREVIOUS):
            text = self.log_text(stream)
            if text is not None:
                out[stream] = LogText(split_lines(text))
        return out

    @property
    def lines(self) -> dict[str, list[LogLine]]:
        return {stream: text.lines for stream, text in self.texts.items()}

    @cached_property
    def engine(self) -> EngineConfig:
        return engine_config.parse(self.container, self.snapshot, self.pod)

    @cached_property
    def startup(self) -> dict[str, StartupReport]:
        return {stream: read_startup(text) for stream, text in self.texts.items()}

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
    budget = workload.probe_budget(probe)
    return Fact(True, f"startupProbe allows about {budget}s ({workload.describe_probe(probe)})")


def _unschedulable(ctx: ContainerContext) -> Fact:
    """The scheduler's message when the pod's PodScheduled condition is False."""
    for cond in (ctx.pod.get("status") or {}).get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == "PodScheduled" and \
                str(cond.get("status")) == "False":
            msg = str(cond.get("message") or cond.get("reason") or "Unschedulable")
            return Fact(msg, f"pod {ctx.pod_name} condition PodScheduled=False, reason "
                             f"{cond.get('reason')}: {msg}")
    return Fact(None, f"pod {ctx.pod_name} is not reported unschedulable")


# --- Capacity, latency, probes, autoscaling, caching and rollout facts ---------

GMU_LOW, GMU_HIGH = 0.85, 0.92
LONG_CONTEXT = 32768
TYPICAL_LOAD_SECONDS = 120.0
_MAX_MODEL_LEN_LOG = regex.compile(r"\bUsing max model len (\d+)|\bmax_seq_len=(\d+)")
_BATCHED_TOKENS_LOG = regex.compile(
    r"Chunked prefill is enabled with max_num_batched_tokens=(\d+)")
_QUEUE_METRIC = regex.compile(r"num_requests_(running|waiting)")


def _where(ctx: ContainerContext, stream: str, line: LogLine) -> str:
    label = "previous log" if stream == PREVIOUS else "log"
    return f"{label} ({ctx.name}) line {line.number}: {line.message.strip()}"


def _last_log_match(ctx: ContainerContext, rx: Any) -> tuple[Any, str, LogLine] | None:
    """The last line matching ``rx``, from the current log first, then the previous one."""
    for stream in (CURRENT, PREVIOUS):
        for line in reversed(ctx.lines.get(stream, [])):
            m = rx.search(line.message)
            if m:
                return m, stream, line
    return None


def _gpu_memory_utilization(ctx: ContainerContext) -> Fact:
    value = ctx.engine.number("gpu-memory-utilization")
    desc = ctx.engine.describe("gpu-memory-utilization")
    if value is None:
        return Fact(None, f"container {ctx.name}: {desc}, not a number")
    where = "within" if GMU_LOW <= value <= GMU_HIGH else "outside"
    return Fact(value, f"container {ctx.name}: {desc}, {where} {GMU_LOW}-{GMU_HIGH}")


def _max_model_len(ctx: ContainerContext) -> Fact:
    if ctx.engine.is_set("max-model-len"):
        return Fact(ctx.engine.integer("max-model-len"),
                    f"container {ctx.name}: {ctx.engine.describe('max-model-len')}")
    found = _last_log_match(ctx, _MAX_MODEL_LEN_LOG)
    if found is None:
        return Fact(None, f"container {ctx.name}: --max-model-len unset and no log line says "
                          "which context length vLLM took from the model's config")
    m, stream, line = found
    n = int(m.group(1) or m.group(2))
    label = "previous log" if stream == PREVIOUS else "log"
    snippet = line.message[max(0, m.start() - 40):m.end()].strip()
    return Fact(n, f"container {ctx.name}: --max-model-len unset, so vLLM serves the model's "
                   f"full context of {n:,} tokens ({label} ({ctx.name}) line {line.number}: "
                   f"...{snippet})")


def _max_model_len_set(ctx: ContainerContext) -> Fact:
    return Fact(ctx.engine.is_set("max-model-len"),
                f"container {ctx.name}: {ctx.engine.describe('max-model-len')}")


def _kv_cache_tokens(ctx: ContainerContext) -> Fact:
    for stream in (CURRENT, PREVIOUS):
        rep = ctx.startup.get(stream)
        if rep is None:
            continue
        label = "previous log" if stream == PREVIOUS else "log"
        if rep.kv_cache_tokens:
            line = rep.evidence.get("kv_cache_tokens")
            return Fact(rep.kv_cache_tokens,
                        f"vLLM's KV cache holds {rep.kv_cache_tokens:,} tokens ({label} "
                        f"({ctx.name}) line {line.number if line else '?'}: "
                        f"{line.message.strip() if line else ''})")
        if rep.gpu_blocks:
            block = ctx.engine.integer("block-size") or 16
            tokens = rep.gpu_blocks * block
            line = rep.evidence.get("gpu_blocks")
            return Fact(tokens, f"vLLM's KV cache holds {tokens:,} tokens: {rep.gpu_blocks:,} "
                                f"GPU blocks x block size {block} ({label} ({ctx.name}) line "
                                f"{line.number if line else '?'}: "
                                f"{line.message.strip() if line else ''})")
    return Fact(None, f"container {ctx.name}: no KV cache size line in the logs read")


def _max_model_len_over_kv(ctx: ContainerContext) -> Fact:
    mml, kv = ctx.fact("max_model_len"), ctx.fact("kv_cache_tokens")
    if mml is None or kv is None or not mml.value or not kv.value:
        return Fact(None, "max model length or KV cache size not known")
    ratio = float(mml.value) / float(kv.value)
    return Fact(ratio, f"max model length {mml.value:,} tokens is {ratio:.2f}x the KV cache "
                       f"({kv.value:,} tokens)")


def _max_num_batched_tokens(ctx: ContainerContext) -> Fact:
    if ctx.engine.is_set("max-num-batched-tokens"):
        return Fact(ctx.engine.integer("max-num-batched-tokens"),
                    f"container {ctx.name}: {ctx.engine.describe('max-num-batched-tokens')}")
    found = _last_log_match(ctx, _BATCHED_TOKENS_LOG)
    if found is not None:
        m, stream, line = found
        return Fact(int(m.group(1)), f"container {ctx.name}: --max-num-batched-tokens unset; "
                                     f"vLLM chose {int(m.group(1)):,} "
                                     f"({_where(ctx, stream, line)})")
    return Fact(None, f"container {ctx.name}: --max-num-batched-tokens unset and vLLM logged no "
                      "chunked-prefill token budget: without chunked prefill a step batches up "
                      "to max(--max-model-len, 2048) prompt tokens, so one long prefill stalls "
                      "every running request")


def _batched_tokens_over_prompt(ctx: ContainerContext) -> Fact:
    budget = ctx.fact("max_num_batched_tokens")
    view = ctx.metrics
    p99 = view.derived().get("prompt_len_p99") if view is not None and not view.error else None
    if budget is None or budget.value is None or not p99:
        return Fact(None, "token budget per step or prompt length P99 not known")
    ratio = float(budget.value) / p99
    return Fact(ratio, f"token budget per step {budget.value:,} is {ratio:.1f}x the P99 prompt "
                       f"length ({p99:,.0f} tokens, /metrics vllm:request_prompt_tokens)")


def observed_startup(ctx: ContainerContext) -> tuple[float, str] | None:
    """The longest start-up vLLM logged in any stream read, and how it was measured."""
    best: tuple[float, str] | None = None
    for stream, rep in ctx.startup.items():
        seconds = rep.startup_seconds
        if seconds is None:
            continue
        label = "previous log" if stream == PREVIOUS else "log"
        if best is None or seconds > best[0]:
            best = (seconds, f"{label} ({ctx.name}): {rep.startup_basis}")
    return best


def _probe_shortfall(ctx: ContainerContext) -> Fact:
    c = ctx.container
    if c.get("startupProbe"):
        return Fact(None, f"container {ctx.name} has a startupProbe: liveness and readiness "
                          "wait until it succeeds")
    kind = "livenessProbe" if c.get("livenessProbe") else \
        "readinessProbe" if c.get("readinessProbe") else None
    if kind is None:
        return Fact(None, f"container {ctx.name} has no startup, liveness or readiness probe")
    probe = c[kind]
    budget = workload.probe_budget(probe)
    observed = observed_startup(ctx)
    if observed is not None:
        need, why = observed[0], f"vLLM took {observed[0]:.0f}s to start ({observed[1]})"
    else:
        need, why = TYPICAL_LOAD_SECONDS, (
            f"no completed start-up in the logs read; a model server typically needs about "
            f"{TYPICAL_LOAD_SECONDS:.0f}s to download, load and warm up")
    action = "restarts the container" if kind == "livenessProbe" else "keeps the pod unready"
    return Fact(need - budget, f"container {ctx.name} has no startupProbe and its {kind} "
                f"{action} after about {budget}s ({workload.describe_probe(probe)}); {why}")


def _liveness_timeout(ctx: ContainerContext) -> Fact:
    probe = ctx.container.get("livenessProbe")
    if not probe:
        return Fact(None, f"container {ctx.name} has no livenessProbe")
    t = int(probe.get("timeoutSeconds", 1))
    return Fact(t, f"container {ctx.name} livenessProbe timeoutSeconds {t}"
                   + (" (unset: Kubernetes default 1)" if "timeoutSeconds" not in probe else "")
                   + f", failureThreshold {probe.get('failureThreshold', 3)}")


def _hpas(ctx: ContainerContext) -> list[Obj]:
    owner = workload.workload_owner(ctx.snapshot, ctx.pod)
    if owner is None:
        return []
    kind, obj = owner
    return workload.autoscalers_for(ctx.snapshot, kind, str(meta(obj).get("name")), ctx.namespace)


def _hpa_label(hpa: Obj) -> str:
    ref = (hpa.get("spec") or {}).get("scaleTargetRef") or {}
    return f"HorizontalPodAutoscaler {meta(hpa).get('name')} (scaleTargetRef " \
           f"{ref.get('kind')}/{ref.get('name')})"


def _hpa_resource_metric(ctx: ContainerContext) -> Fact:
    found: list[str] = []
    texts: list[str] = []
    for hpa in _hpas(ctx):
        spec = hpa.get("spec") or {}
        if spec.get("targetCPUUtilizationPercentage") is not None:  # autoscaling/v1
            found.append("cpu")
            texts.append(f"{_hpa_label(hpa)} spec.targetCPUUtilizationPercentage "
                         f"{spec['targetCPUUtilizationPercentage']}")
        for i, metric in enumerate(spec.get("metrics") or []):
            if metric.get("type") in ("Resource", "ContainerResource"):
                body = metric.get("resource") or metric.get("containerResource") or {}
                name = str(body.get("name"))
                target = body.get("target") or {}
                goal = target.get("averageUtilization", target.get("averageValue",
                                                                   target.get("value")))
                found.append(name)
                texts.append(f"{_hpa_label(hpa)} spec.metrics[{i}]: {metric.get('type')} "
                             f"{name} target {target.get('type', '')} {goal}")
        for cur in (hpa.get("status") or {}).get("currentMetrics") or []:
            body = cur.get("resource") or {}
            if cur.get("type") == "Resource" and body.get("name") in found:
                now = body.get("current") or {}
                texts.append(f"{_hpa_label(hpa)} status.currentMetrics: {body.get('name')} "
                             f"{now.get('averageUtilization', now.get('averageValue'))}"
                             f"{'%' if 'averageUtilization' in now else ''} now")
    isvc = workload.inference_service(ctx.snapshot, ctx.pod)
    pred = ((isvc or {}).get("spec") or {}).get("predictor") or {}
    if str(pred.get("scaleMetric", "")).lower() in ("cpu", "memory"):
        found.append(str(pred["scaleMetric"]).lower())
        texts.append(f"InferenceService {meta(isvc or {}).get('name')} spec.predictor."
                     f"scaleMetric {pred['scaleMetric']} (scaleTarget {pred.get('scaleTarget')})")
    names = [n for n in dict.fromkeys(found) if n in ("cpu", "memory")]
    if not names:
        return Fact(None, "no autoscaler of this workload scales on CPU or memory")
    return Fact(",".join(names), "; ".join(texts) + ": vLLM is bound by the GPU, so CPU and "
                                 "memory stay flat while requests queue")


def _quantity(value: Any) -> float | None:
    text = str(value).strip()
    try:
        if text.endswith("m"):
            return float(text[:-1]) / 1000
        return float(text)
    except ValueError:
        return None


def _isvc_annotations(isvc: Obj) -> dict[str, str]:
    ann = {str(k): str(v) for k, v in (meta(isvc).get("annotations") or {}).items()}
    pred = (isvc.get("spec") or {}).get("predictor") or {}
    ann.update({str(k): str(v) for k, v in (pred.get("annotations") or {}).items()})
    return ann


def _concurrency_targets(ctx: ContainerContext) -> list[tuple[float, str, str]]:
    """(target per pod, what it counts: running|waiting, where it is set)."""
    out: list[tuple[float, str, str]] = []
    isvc = workload.inference_service(ctx.snapshot, ctx.pod)
    if isvc is not None:
        name = meta(isvc).get("name")
        ann = _isvc_annotations(isvc)
        pred = (isvc.get("spec") or {}).get("predictor") or {}
        metric = ann.get("autoscaling.knative.dev/metric", "concurrency").lower()
        raw = ann.get("autoscaling.knative.dev/target")
        scale_metric = str(pred.get("scaleMetric", "concurrency")).lower()
        if metric == "concurrency" and raw is not None and _quantity(raw) is not None:
            out.append((float(_quantity(raw) or 0), "running",
                        f"InferenceService {name} annotation autoscaling.knative.dev/target "
                        f"\"{raw}\" (concurrent requests per pod)"))
        elif scale_metric == "concurrency" and pred.get("scaleTarget") is not None:
            out.append((float(pred["scaleTarget"]), "running",
                        f"InferenceService {name} spec.predictor.scaleTarget "
                        f"{pred['scaleTarget']} (scaleMetric concurrency)"))
    for hpa in _hpas(ctx):
        for i, metric in enumerate((hpa.get("spec") or {}).get("metrics") or []):
            kind = metric.get("type")
            body = metric.get("pods") if kind == "Pods" else \
                metric.get("external") if kind == "External" else None
            if not body:
                continue
            mname = str((body.get("metric") or {}).get("name", ""))
            m = _QUEUE_METRIC.search(mname)
            target = body.get("target") or {}
            goal = target.get("averageValue", target.get("value"))
            if m and goal is not None and _quantity(goal) is not None:
                out.append((float(_quantity(goal) or 0), m.group(1),
                            f"{_hpa_label(hpa)} spec.metrics[{i}]: {kind} {mname} "
                            f"averageValue {goal}"))
    return out


def _pod_capacity(ctx: ContainerContext) -> tuple[float, str] | None:
    for stream in (CURRENT, PREVIOUS):
        rep = ctx.startup.get(stream)
        if rep is not None and rep.max_concurrency:
            line = rep.evidence.get("max_concurrency")
            where = _where(ctx, stream, line) if line else f"{stream} log"
            return rep.max_concurrency, f"one pod serves about {rep.max_concurrency:g} " \
                                        f"requests at once ({where})"
    view = ctx.metrics
    seqs = ctx.engine.integer("max-num-seqs")
    if view is not None and not view.error and seqs:
        running = view.derived().get("requests_running")
        if running is not None and running >= seqs:
            return float(seqs), (f"one pod serves at most {seqs} requests at once: /metrics "
                                 f"requests_running {running:g} = --max-num-seqs {seqs}")
    return None


def _autoscale_target_over_capacity(ctx: ContainerContext) -> Fact:
    targets = _concurrency_targets(ctx)
    if not targets:
        return Fact(None, "no concurrency or queue-length autoscaling target for this workload")
    cap = _pod_capacity(ctx)
    if cap is None:
        return Fact(None, f"{targets[0][2]}; what one pod can serve is not known (no "
                          "'Maximum concurrency' line in the logs read)")
    capacity, cap_text = cap
    ratio, text = 0.0, ""
    for target, counts, where in targets:
        r = target / capacity if capacity else 0.0
        if r >= ratio:
            noun = "concurrent requests" if counts == "running" else "waiting requests"
            ratio, text = r, (f"{where}: the autoscaler adds pods only above {target:g} "
                              f"{noun} per pod, {r:.1f}x the per-pod capacity; {cap_text}")
    return Fact(ratio, text)


def _min_replicas(ctx: ContainerContext) -> Fact:
    sources: list[tuple[int, str]] = []
    isvc = workload.inference_service(ctx.snapshot, ctx.pod)
    if isvc is not None:
        name = meta(isvc).get("name")
        pred = (isvc.get("spec") or {}).get("predictor") or {}
        if pred.get("minReplicas") is not None:
            sources.append((int(pred["minReplicas"]),
                            f"InferenceService {name} spec.predictor.minReplicas "
                            f"{pred['minReplicas']}"))
        for key in ("autoscaling.knative.dev/min-scale", "autoscaling.knative.dev/minScale"):
            raw = _isvc_annotations(isvc).get(key)
            if raw is not None and raw.strip().isdigit():
                sources.append((int(raw), f"InferenceService {name} annotation {key} \"{raw}\""))
        if not sources:
            sources.append((1, f"InferenceService {name}: minReplicas unset (KServe default 1)"))
    for hpa in _hpas(ctx):
        spec = hpa.get("spec") or {}
        n = int(spec.get("minReplicas", 1))
        sources.append((n, f"{_hpa_label(hpa)} spec.minReplicas {n}"
                           + (" (unset: default 1)" if "minReplicas" not in spec else "")))
    if not sources:
        owner = workload.workload_owner(ctx.snapshot, ctx.pod)
        if owner is None:
            return Fact(None, "no autoscaler or owning workload was read for this pod")
        kind, obj = owner
        replicas = (obj.get("spec") or {}).get("replicas", 1)
        return Fact(None, f"no autoscaler targets {kind} {meta(obj).get('name')}; it runs "
                          f"spec.replicas {replicas}"
                          + (" (a single replica: every restart is an outage)"
                             if replicas == 1 else ""))
    low = min(n for n, _ in sources)
    return Fact(low, "; ".join(t for _, t in sources)
                + (": the service scales to zero when idle, and the next request waits for a "
                   "GPU node and a full model load (cold start)" if low == 0 else ""))


def _hf_cache_dir(ctx: ContainerContext) -> tuple[str, str]:
    env = {str(e.get("name")): str(e.get("value")) for e in ctx.container.get("env") or []
           if isinstance(e, dict) and e.get("value") is not None}
    if ctx.engine.is_set("download-dir"):
        return str(ctx.engine.raw("download-dir")), ctx.engine.describe("download-dir")
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE"):
        if env.get(var):
            return env[var], f"env {var}={env[var]}"
    if env.get("HF_HOME"):
        return env["HF_HOME"].rstrip("/") + "/hub", f"env HF_HOME={env['HF_HOME']}"
    if env.get("XDG_CACHE_HOME"):
        return env["XDG_CACHE_HOME"].rstrip("/") + "/huggingface/hub", \
            f"env XDG_CACHE_HOME={env['XDG_CACHE_HOME']}"
    home = env.get("HOME", "/root").rstrip("/")
    return f"{home}/.cache/huggingface/hub", (
        "HF_HOME, HF_HUB_CACHE, TRANSFORMERS_CACHE and --download-dir unset: the Hugging Face "
        "default")


def _model_cache(ctx: ContainerContext) -> Fact:
    model = ctx.engine.model or ""
    if not model:
        return Fact(None, f"container {ctx.name}: the served model is not known from its args")
    if model.startswith(("/", "./", "file:")) or "://" in model:
        return Fact("local", f"container {ctx.name} serves {model} from a path or object "
                             "store, not from the Hugging Face cache")
    path, why = _hf_cache_dir(ctx)
    found = workload.volume_for_path(ctx.pod, ctx.container, path)
    if found is None:
        return Fact("container", f"container {ctx.name} downloads {model} into {path} ({why}) "
                                 "and no volume is mounted there: the weights live in the "
                                 "container's writable layer and are downloaded again by every "
                                 "new container")
    mount, vol = found
    if vol.get("persistentVolumeClaim"):
        claim = vol["persistentVolumeClaim"].get("claimName")
        return Fact("pvc", f"container {ctx.name} caches {model} in {path} ({why}), on volume "
                           f"{vol.get('name')} = PersistentVolumeClaim {claim} mounted at "
                           f"{mount.get('mountPath')}")
    kind = next((k for k in vol if k != "name"), "unknown")
    note = {"emptyDir": "an emptyDir is deleted with the pod, so every new pod downloads again",
            "ephemeral": "a generic ephemeral volume is deleted with the pod, so every new pod "
                         "downloads again"}.get(kind, "")
    return Fact(kind, f"container {ctx.name} caches {model} in {path} ({why}), on volume "
                      f"{vol.get('name')} ({kind}) mounted at {mount.get('mountPath')}"
                      + (f": {note}" if note else ""))


def _weights_downloaded(ctx: ContainerContext) -> Fact:
    for stream in (CURRENT, PREVIOUS):
        rep = ctx.startup.get(stream)
        if rep is not None and rep.downloaded:
            line = rep.evidence.get("download")
            where = _where(ctx, stream, line) if line else f"{stream} log"
            restarts = int(ctx.status.get("restartCount") or 0)
            return Fact(True, f"the weights were downloaded from the hub during this start "
                              f"({where}); pod created {meta(ctx.pod).get('creationTimestamp')}"
                              f", container restarts {restarts}")
    return Fact(False, f"container {ctx.name}: no weight download in the logs read")


def _rollout_surge_pods(ctx: ContainerContext) -> Fact:
    owner = workload.workload_owner(ctx.snapshot, ctx.pod)
    if owner is None or owner[0] != "Deployment":
        return Fact(None, "the pod is not run by a Deployment that was read")
    dep = owner[1]
    name = meta(dep).get("name")
    spec = dep.get("spec") or {}
    strategy = spec.get("strategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return Fact(0, f"Deployment {name} spec.strategy.type {strategy.get('type')}")
    rolling = strategy.get("rollingUpdate") or {}
    raw = rolling.get("maxSurge", "25%")
    replicas = int(spec.get("replicas", 1))
    surge = workload.scaled_count(raw, replicas, round_up=True)
    gpus = workload.gpu_request(ctx.container)
    own_rs = workload.pod_replicaset(ctx.snapshot, ctx.pod)
    own_name = meta(own_rs).get("name") if own_rs else None
    old_running = []
    for rs in workload.replicasets_of(ctx.snapshot, dep):
        rs_name = meta(rs).get("name")
        if rs_name == own_name:
            continue
        for pod in ctx.snapshot.pods():
            ref = workload.controller_ref(pod)
            if (ref is not None and ref.get("name") == rs_name
                    and (pod.get("status") or {}).get("phase") == "Running"):
                old_running.append(f"pod {meta(pod).get('name')} of ReplicaSet {rs_name} "
                                   f"(revision {workload.revision(rs)}) still runs")
    text = (f"Deployment {name} spec.strategy RollingUpdate maxSurge {raw}"
            + (" (unset: default 25%)" if "maxSurge" not in rolling else "")
            + f" = {surge} extra pod(s) over spec.replicas {replicas}, each asking for "
            f"{gpus} GPU(s)")
    if not gpus or not old_running:
        return Fact(0, text + ("" if gpus else "; the pod asks for no GPU")
                    + ("" if old_running else "; no pod of an older revision is running"))
    return Fact(surge, text + "; " + "; ".join(old_running[:3]) + ", holding its GPU(s)")


def _changes(old: Obj, new: Obj, container_name: str) -> list[tuple[str, str]]:
    def pick(rs: Obj) -> Obj:
        cs = workload.template_containers(rs)
        return next((c for c in cs if c.get("name") == container_name), cs[0] if cs else {})
    a, b = pick(old), pick(new)
    out: list[tuple[str, str]] = []
    if a.get("image") != b.get("image"):
        out.append(("image", f"image {a.get('image')} -> {b.get('image')}"))
    ea, eb = engine_config.parse(a), engine_config.parse(b)
    if ea.model != eb.model:
        out.append(("model", f"model {ea.model} -> {eb.model}"))
    skip = {"model", "port", "host"}
    flags = sorted((set(ea.flags) | set(eb.flags)) - skip)
    diffs = [f"--{f} {ea.flags.get(f, 'unset')} -> {eb.flags.get(f, 'unset')}" for f in flags
             if ea.flags.get(f) != eb.flags.get(f)]
    if diffs:
        out.append(("flags", "engine flags " + ", ".join(diffs)))
    ra, rb = a.get("resources") or {}, b.get("resources") or {}
    if ra != rb:
        parts = []
        for section in ("requests", "limits"):
            sa, sb = ra.get(section) or {}, rb.get(section) or {}
            for key in sorted(set(sa) | set(sb)):
                if str(sa.get(key)) != str(sb.get(key)):
                    parts.append(f"{section}.{key} {sa.get(key, 'unset')} -> "
                                 f"{sb.get(key, 'unset')}")
        out.append(("resources", "resources " + ", ".join(parts)))
    return out


def _rollout_changes(ctx: ContainerContext) -> Fact:
    owner = workload.workload_owner(ctx.snapshot, ctx.pod)
    if owner is None or owner[0] != "Deployment":
        return Fact(None, "the pod is not run by a Deployment that was read")
    dep = owner[1]
    sets = [rs for rs in workload.replicasets_of(ctx.snapshot, dep) if workload.revision(rs)]
    if len(sets) < 2:
        return Fact(None, f"Deployment {meta(dep).get('name')}: fewer than two ReplicaSet "
                          "revisions were read")
    new, old = sets[0], sets[1]
    changes = _changes(old, new, ctx.name)
    head = (f"Deployment {meta(dep).get('name')} revision {workload.revision(old)} "
            f"(ReplicaSet {meta(old).get('name')}) -> revision {workload.revision(new)} "
            f"(ReplicaSet {meta(new).get('name')})")
    if not changes:
        return Fact(0, f"{head}: no change to image, model, engine flags or resources")
    return Fact(len(changes), f"{head} changed {len(changes)} thing(s): "
                + "; ".join(text for _, text in changes))


def _image_unpinned(ctx: ContainerContext) -> Fact:
    image = str(ctx.container.get("image") or "")
    _repo, tag, digest = workload.split_image(image)
    resolved = ctx.status.get("imageID")
    seen = f"; the node ran {resolved}" if resolved else ""
    if digest:
        return Fact(False, f"container {ctx.name} image {image} is pinned by digest")
    if tag is None or tag == "latest":
        what = "has no tag (Kubernetes pulls :latest)" if tag is None else "uses tag latest"
        policy = ctx.container.get("imagePullPolicy", "Always (default for latest)")
        return Fact(True, f"container {ctx.name} image {image} {what}, imagePullPolicy "
                          f"{policy}: each new node or pull can run a different vLLM{seen}")
    return Fact(False, f"container {ctx.name} image {image} is pinned to tag {tag}")


def _vllm_service_link(ctx: ContainerContext) -> Fact:
    svc = ctx.snapshot.find("services", ctx.namespace, "vllm")
    if svc is None:
        return Fact(None, f"no Service named vllm in namespace {ctx.namespace}")
    links = workload.pod_spec(ctx.pod).get("enableServiceLinks")
    spec = svc.get("spec") or {}
    ip = spec.get("clusterIP")
    ports = spec.get("ports") or [{}]
    if links is False:
        return Fact(None, f"Service vllm exists but pod {ctx.pod_name} sets "
                          "spec.enableServiceLinks: false, so no VLLM_* variables are injected")
    if not ip or ip == "None":
        return Fact(None, "Service vllm is headless: Kubernetes injects no variables for it")
    explicit = any(isinstance(e, dict) and e.get("name") == "VLLM_PORT"
                   for e in ctx.container.get("env") or [])
    if explicit:
        return Fact(None, f"container {ctx.name} sets VLLM_PORT itself, which wins over the "
                          "Service variable")
    proto = str(ports[0].get("protocol", "TCP")).lower()
    value = f"{proto}://{ip}:{ports[0].get('port')}"
    return Fact(value, f"Service vllm (clusterIP {ip}, port {ports[0].get('port')}) in namespace "
                       f"{ctx.namespace} and pod spec.enableServiceLinks "
                       f"{'unset (default true)' if links is None else links}: the kubelet sets "
                       f"VLLM_PORT={value} in the container, and vLLM reads VLLM_PORT as its "
                       "internal port number")


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
    "gpu_memory_utilization": _gpu_memory_utilization,
    "max_model_len": _max_model_len,
    "max_model_len_set": _max_model_len_set,
    "kv_cache_tokens": _kv_cache_tokens,
    "max_model_len_over_kv_cache": _max_model_len_over_kv,
    "max_num_batched_tokens": _max_num_batched_tokens,
    "batched_tokens_over_prompt_p99": _batched_tokens_over_prompt,
    "probe_budget_shortfall_seconds": _probe_shortfall,
    "liveness_timeout_seconds": _liveness_timeout,
    "hpa_resource_metric": _hpa_resource_metric,
    "autoscale_target_over_capacity": _autoscale_target_over_capacity,
    "min_replicas": _min_replicas,
    "model_cache_volume": _model_cache,
    "weights_downloaded": _weights_downloaded,
    "rollout_surge_pods": _rollout_surge_pods,
    "rollout_changes": _rollout_changes,
    "image_unpinned": _image_unpinned,
    "vllm_service_link": _vllm_service_link,
}
