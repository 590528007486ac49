"""The ten steps, one unit each: how each says pass, n/a or unknown without a finding."""

from __future__ import annotations

from collections.abc import Iterable

from triage.checklist.base import Inputs, Step, label
from triage.facts import ContainerContext
from triage.facts.engine import recent_stats, stats_summary
from triage.results import StepResult, Verdict
from triage.rules.evaluate import PodDiagnosis

# Every fact a step reads: a settled container keeps these and drops the others
# (tests/pipeline/test_settle.py checks this list against the steps' code).
FACTS_READ = (
    "autoscalers",
    "canary_traffic_percent",
    "container_started",
    "container_state",
    "gpu_memory_utilization",
    "has_startup_probe",
    "image_pull_seconds",
    "inference_service",
    "kv_cache_tokens",
    "last_exit_code",
    "last_termination_reason",
    "liveness_probe",
    "load_probe_budget_seconds",
    "log_lines_read",
    "logs_read",
    "max_concurrency",
    "max_model_len_set",
    "max_num_batched_tokens",
    "memory_limit",
    "metrics_models",
    "node_disk_pressure",
    "observed_startup_seconds",
    "pod_state",
    "rollout_revision",
    "workload_replicas",
)


def settle(ctx: ContainerContext, also: Iterable[str] = ()) -> None:
    """Compute what the steps read from a container (its facts, the stats lines' series),
    then drop the rest: the steps run after the last pod, the logs are gone by then.
    ``also``: facts others read after the pod is settled (the causes')."""
    stats_summary(ctx)  # memoized on the context, with recent_stats
    ctx.settle((*FACTS_READ, *also))


class ContainerOOMKilled(Step):
    number = 1

    def judge(self, inputs: Inputs) -> StepResult:
        ev: list[str] = []
        unknown: list[str] = []
        for pod, ctx in inputs.containers():
            why = ctx.no_status()
            if why:  # no status: not OOMKilled is not known, it is not a pass
                unknown.append(f"{label(pod, ctx)}: {why}")
                continue
            ev.append(f"{label(pod, ctx)}: not OOMKilled; "
                      f"{ctx.fact('last_termination_reason').evidence}; "
                      f"{ctx.fact('memory_limit').evidence}")
        if unknown:
            return self.result(Verdict.UNKNOWN, unknown + ev)
        return self.result(Verdict.PASS, ev)


class CudaOOM(Step):
    number = 2

    def judge(self, inputs: Inputs) -> StepResult:
        ev: list[str] = []
        missing: list[str] = []
        idle: list[str] = []
        for pod, ctx in inputs.containers():
            started = ctx.fact("container_started")
            if not started.value:
                idle.append(f"{label(pod, ctx)}: {started.evidence}")
                continue
            need = ["previous"] if ctx.value("last_exit_code") is not None else []
            need.append("current")
            read = [s for s in need if s in ctx.value("logs_read")]
            lost = [s for s in need if s not in read]
            if lost and not read:
                missing.append(f"{label(pod, ctx)}: {' and '.join(lost)} log not read")
                continue
            ev.append(f"{label(pod, ctx)}: no CUDA out-of-memory error in "
                      f"{' and '.join(s + ' log' for s in read)} "
                      f"({ctx.value('log_lines_read')} lines)")
        if idle and not ev and not missing:
            return self.result(Verdict.NA, idle)
        if missing:
            return self.result(Verdict.UNKNOWN, missing + inputs.unread("logs") + ev + idle)
        return self.result(Verdict.PASS, ev + idle)


class MaxModelLen(Step):
    number = 3
    needs = ("logs",)

    def judge(self, inputs: Inputs) -> StepResult:
        ev: list[str] = []
        confirmed = False
        for pod, ctx in inputs.containers():
            setting = ctx.fact("max_model_len_set")
            kv, conc = ctx.fact("kv_cache_tokens"), ctx.fact("max_concurrency")
            reported = [f.evidence for f in (kv, conc) if f.value is not None]
            if reported:  # one fact per line: the setting, the capacity, the concurrency
                confirmed = True
                ev += [f"{label(pod)}: {line}" for line in (setting.evidence, *reported)]
            elif setting.value:
                ev += [f"{label(pod)}: {setting.evidence}",
                       f"{label(pod)}: no KV cache capacity line in the logs read, so whether "
                       "it fits is not confirmed"]
        if not ev:
            return self.result(Verdict.UNKNOWN, [
                "--max-model-len is not set and no vLLM start-up line reports the KV cache "
                "size (the server may not have reached that point)"])
        return self.result(Verdict.PASS if confirmed else Verdict.UNKNOWN, ev)


class GpuMemoryUtilization(Step):
    number = 4

    def judge(self, inputs: Inputs) -> StepResult:
        ev: list[str] = []
        unknown: list[str] = []
        for pod, ctx in inputs.containers():
            f = ctx.fact("gpu_memory_utilization")
            if f.known:
                ev.append(f"{label(pod)}: {f.evidence}")
            else:
                unknown.append(f"{label(pod, ctx)}: --gpu-memory-utilization is not known: "
                               f"{f.unknown}")
        if unknown:
            return self.result(Verdict.UNKNOWN, unknown + ev)
        return self.result(Verdict.PASS, ev)


def _metrics_unknown(step: Step, inputs: Inputs) -> StepResult | None:
    """unknown, saying why, when no triaged pod has /metrics to judge from."""
    views = [(p, c) for p, c in inputs.containers() if c.metric_values() is not None]
    if views:
        return None
    reasons = [f"{label(p)}: {c.metrics_failure()}" for p, c in inputs.containers()
               if c.metrics_read() and c.metrics_failure()]
    reasons += inputs.unread("metrics")
    if not reasons:
        reasons = [f"{label(p)}: no /metrics "
                   + ("in what was collected" if c.value("container_state") == "running"
                      else f"to scrape: the vLLM container is not running "
                           f"({c.value('pod_state')})")
                   for p, c in inputs.containers()] or ["no metrics were read"]
    return step.result(Verdict.UNKNOWN, reasons)


def _with_metrics(inputs: Inputs) -> list[tuple[PodDiagnosis, ContainerContext]]:
    return [(p, c) for p, c in inputs.containers() if c.metric_values() is not None]


def _latency_line(pod: PodDiagnosis, ctx: ContainerContext) -> str:
    d = ctx.metric_values() or {}
    parts = []
    for name, what in (("e2e_latency", "e2e"), ("ttft", "TTFT"), ("queue_time", "queue"),
                       ("itl", "ITL")):
        p50, p99 = d.get(f"{name}_p50"), d.get(f"{name}_p99")
        if p50 is not None and p99 is not None:
            parts.append(f"{what} P50 {p50:.3g}s P99 {p99:.3g}s")
    count = d.get("e2e_latency_count")  # absent when the histogram could not be read
    if ctx.window is not None and ctx.telemetry is not None:
        models = sorted(m for m in ctx.telemetry.by_model if m)
    else:
        models = ctx.fact("metrics_models").value or []
    model = f" model {', '.join(models)}" if models else ""
    source = ctx.metrics_source()
    if not parts:
        span = "in the window" if ctx.window is not None else "yet"
        return f"{label(pod)}:{model} no finished requests in the histograms {span} ({source})"
    rate = d.get("requests_per_s")
    pace = f", {rate:.3g} requests/s" if rate is not None else ""
    over = f" over {count:.0f} requests" if count is not None else ""
    return f"{label(pod)}:{model} {'; '.join(parts)}{over}{pace} ({source})"


def _recent_queue(ctx: ContainerContext) -> list[str]:
    """The queue as vLLM's own stats lines said it in the last minutes (without Prometheus:
    a histogram since the server started cannot say what happens now), as one series with
    its source and age; stale lines are said as such, never as "now"."""
    if ctx.window is not None:
        return []
    line = stats_summary(ctx)
    return [line] if line else []


SINCE_START = ("judged from /metrics histograms since the server started, which can hide a "
               "queue of the last minutes: --prometheus auto (or a URL) measures a window")


def since_start(ctx: ContainerContext) -> bool:
    """The container's metrics are one scrape's counts since the server started, and no
    Prometheus was asked."""
    return (ctx.metric_values() is not None and ctx.window is None
            and ctx.snapshot.prometheus is None)


def _since_start(inputs: Inputs) -> list[str]:
    """Say so when a step was judged from histograms since the server started."""
    if any(since_start(ctx) for _, ctx in _with_metrics(inputs)):
        return [SINCE_START]
    return []


def _prometheus_note(inputs: Inputs) -> list[str]:
    """When Prometheus was asked and said nothing about a pod, say the step is judged from
    the scrape, and why."""
    failed = [f for f in inputs.failures if f.kind == "prometheus" and not f.what.startswith(
        "Prometheus query ")]
    if failed:
        return [f"{failed[0]} (judged from one scrape of /metrics instead)"]
    out = []
    for pod, ctx in inputs.containers():
        prom = ctx.snapshot.prometheus
        if ctx.window is not None:
            out.append(f"window: {ctx.window.source}, {ctx.window.label.split(', ', 1)[1]} "
                       f"ending {ctx.window.end}")
        elif prom is not None and ctx.telemetry is not None and ctx.telemetry.not_numbers:
            names = ", ".join(f"{n} {v}" for n, v in sorted(ctx.telemetry.not_numbers.items()))
            out.append(f"{label(pod)}: {prom.source} answered no numbers for it, only {names} "
                       "(judged from one scrape of /metrics)")
        elif prom is not None and ctx.metric_values() is not None:
            out.append(f"{label(pod)}: {prom.source} has no vLLM series with namespace="
                       f"{pod.namespace}, pod={pod.name} in the last "
                       f"{prom.label.rsplit(' ', 1)[-1]} (judged from one scrape of /metrics)")
    return list(dict.fromkeys(out))


_LATENCY = ("e2e_latency", "ttft", "queue_time", "itl")


class P99Latency(Step):
    number = 5

    def judge(self, inputs: Inputs) -> StepResult:
        missing = _metrics_unknown(self, inputs)
        if missing:
            return missing
        ev: list[str] = []
        unknown: list[str] = []
        for pod, ctx in _with_metrics(inputs):
            problems = ctx.metric_problems()
            unknown += [f"{label(pod)}: {why}" for name, why in problems.items()
                        if name.startswith(_LATENCY)]
            ev.append(_latency_line(pod, ctx))
            ev.append(f"  {ctx.fact('max_num_batched_tokens').evidence}")
            ev += [f"  {line}" for line in _recent_queue(ctx)]
        if unknown:  # a latency that could not be computed is never a pass
            return self.result(Verdict.UNKNOWN, list(dict.fromkeys(unknown)) + ev)
        return self.result(Verdict.PASS, ev + _prometheus_note(inputs) + _since_start(inputs))


class ProbeTiming(Step):
    number = 6
    needs = ("events",)

    def judge(self, inputs: Inputs) -> StepResult:
        ev: list[str] = []
        unknown: list[str] = []
        for pod, ctx in inputs.containers():
            who = label(pod, ctx)
            started = ctx.fact("observed_startup_seconds")
            budget = ctx.fact("load_probe_budget_seconds")
            lines = [started.evidence, ctx.fact("has_startup_probe").evidence]
            if ctx.value("liveness_probe") is not None:
                lines.append(ctx.fact("liveness_probe").evidence)
            lines += _pull_time(ctx)
            if started.value is None and budget.value is not None:
                # A probe that can restart the container while the model loads, and no
                # load time to hold it against: not a pass.
                kind = "startupProbe" if ctx.value("has_startup_probe") else "livenessProbe"
                unknown.append(f"{who}: the model load time is not known "
                               f"({started.unknown or started.evidence}), so whether the "
                               f"{kind}'s {budget.value:.0f}s cover it cannot be judged; "
                               "a load that takes longer is restarted by it")
                lines = lines[1:]
            ev += [f"{who}: {line}" for line in lines]
        if unknown:
            return self.result(Verdict.UNKNOWN, unknown + ev)
        return self.result(Verdict.PASS, ev)


def _pull_time(ctx: ContainerContext) -> list[str]:
    """The image pull before the start: the kubelet starts probes only once the container
    runs, so the pull is not in the probes' budget, but a new pod waits for it."""
    pull = ctx.fact("image_pull_seconds")
    if not pull.known or not pull.value:
        return []
    started = ctx.fact("observed_startup_seconds")
    total = (f"; pull plus start-up {pull.value + started.value:.0f}s until ready"
             if started.known and started.value is not None else "")
    return [f"{pull.evidence}; probes start after the pull, so it is not in their budget, "
            f"but every new pod on a node without the image waits for it{total}"]


def _autoscalers(inputs: Inputs) -> tuple[list[str], list[str]]:
    """(descriptions of the autoscalers acting on the triaged workloads, reasons unknown)."""
    found: list[str] = []
    unknown: list[str] = []
    for f in inputs.workload_facts("autoscalers"):
        if not f.known:
            unknown.append(str(f.unknown))
        for text in f.value or []:
            if text not in found:
                found.append(text)
    return found, list(dict.fromkeys(unknown))


class AutoscaleTarget(Step):
    number = 7
    needs = ("horizontalpodautoscalers", "inferenceservices")

    def judge(self, inputs: Inputs) -> StepResult:
        scalers, unknown = _autoscalers(inputs)
        if not scalers:
            if unknown:
                return self.result(Verdict.UNKNOWN, unknown)
            return self.result(Verdict.NA, ["no HorizontalPodAutoscaler or InferenceService "
                                            "autoscaling acts on the vLLM workloads"])
        missing = _metrics_unknown(self, inputs)
        if missing:
            # Without /metrics, vLLM's own stats lines of the last minutes still say whether
            # requests queue now (request-queueing reads them): judged from them when every
            # triaged container has them fresh, never from a stale or absent series.
            containers = list(inputs.containers())
            fresh = [(p, c) for p, c in containers
                     if (series := recent_stats(c)) is not None and series.fresh]
            if containers and len(fresh) == len(containers):
                return self.result(Verdict.PASS, scalers + [
                    f"{label(p, c)}: {stats_summary(c)}" for p, c in fresh] + [
                    "judged from vLLM's stats lines: " + e for e in missing.evidence])
            return self.result(Verdict.UNKNOWN, scalers + [
                "whether requests queue is unknown: " + e for e in missing.evidence])
        ev = list(scalers)
        for pod, ctx in _with_metrics(inputs):
            ev.append(_queue_line(pod, ctx))
            ev += [f"  {line}" for line in _recent_queue(ctx)]
        return self.result(Verdict.PASS, ev + _prometheus_note(inputs) + _since_start(inputs))


def _queue_line(pod: PodDiagnosis, ctx: ContainerContext) -> str:
    d = ctx.metric_values() or {}
    if ctx.window is None:
        return (f"{label(pod)}: {d.get('requests_running', 0):g} running, "
                f"{d.get('requests_waiting', 0):g} waiting, KV cache usage "
                f"{100 * d.get('kv_cache_usage', 0):.0f}%, preemptions "
                f"{d.get('preemptions', 0):g} ({ctx.metrics_source()})")
    return (f"{label(pod)}: running mean {d.get('requests_running', 0):.3g} (max "
            f"{d.get('requests_running_max', 0):g}), waiting mean "
            f"{d.get('requests_waiting', 0):.3g} (max {d.get('requests_waiting_max', 0):g}), "
            f"KV cache usage mean {100 * d.get('kv_cache_usage', 0):.0f}% (max "
            f"{100 * d.get('kv_cache_usage_max', 0):.0f}%), preemptions "
            f"{d.get('preemptions', 0):.0f} ({d.get('preemptions_per_s', 0):.2g}/s) "
            f"({ctx.metrics_source()})")


class MinScale(Step):
    number = 8
    needs = ("horizontalpodautoscalers", "inferenceservices", "deployments", "statefulsets")

    def judge(self, inputs: Inputs) -> StepResult:
        scalers, _ = _autoscalers(inputs)
        if scalers:
            return self.result(Verdict.PASS, scalers)
        ev: list[str] = []
        for f in inputs.workload_facts("workload_replicas"):
            if f.value is not None:
                ev.append(f"{f.evidence}, no autoscaler: no scale to zero")
        if not ev:
            unread = inputs.unread("deployments", "statefulsets", "replicasets",
                                   "horizontalpodautoscalers", "inferenceservices")
            return self.result(Verdict.UNKNOWN, unread or [
                "the workload that owns the vLLM pods was not found"])
        return self.result(Verdict.PASS, sorted(set(ev)))


def _no_finding_from(inputs: Inputs, step: int) -> str:
    return "no finding from " + ", ".join(inputs.fed_by(step)) + " in logs, events and specs"


class NodeDisk(Step):
    number = 9
    needs = ("nodes", "events", "logs")

    def judge(self, inputs: Inputs) -> StepResult:
        ev: list[str] = []
        for _, ctx in inputs.containers():
            f = ctx.fact("node_disk_pressure")
            if f.known and f.value is not None and f.evidence not in ev:
                ev.append(f.evidence)
        if not ev:
            return self.result(Verdict.UNKNOWN, inputs.unread("nodes") or [
                "the vLLM pods are not scheduled on any node"])
        return self.result(Verdict.PASS, [*sorted(ev), _no_finding_from(inputs, self.number)])


class OneChange(Step):
    number = 10
    needs = ("replicasets", "deployments", "inferenceservices")

    def judge(self, inputs: Inputs) -> StepResult:
        ev: list[str] = []
        isvcs = inputs.workload_facts("inference_service")
        canaries = inputs.workload_facts("canary_traffic_percent")
        revisions = inputs.workload_facts("rollout_revision")
        for isvc, canary in zip(isvcs, canaries, strict=True):
            if isvc.value is not None and canary.known and canary.evidence not in ev:
                ev.append(canary.evidence)
        for f in revisions:
            if f.known and f.value is not None and f.evidence not in ev:
                ev.append(f.evidence)
        if not ev:
            return self.result(Verdict.UNKNOWN, inputs.unread(
                "replicasets", "deployments", "inferenceservices") or [
                "no rollout history (ReplicaSets or InferenceService revisions) was read"])
        return self.result(Verdict.PASS, [*ev, _no_finding_from(inputs, self.number)])


STEPS: tuple[Step, ...] = (
    ContainerOOMKilled(), CudaOOM(), MaxModelLen(), GpuMemoryUtilization(), P99Latency(),
    ProbeTiming(), AutoscaleTarget(), MinScale(), NodeDisk(), OneChange(),
)
