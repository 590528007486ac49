"""The ten-step troubleshooting checklist, each step a verdict with its evidence.

The steps and their order are the field article's ("트러블슈팅 체크리스트").
Every step starts from the findings that feed it (critical -> fail,
warning -> warn) and otherwise looks for positive evidence to pass. Without
the input it needs it says ``unknown`` and names what could not be read;
``n/a`` only when the step does not apply, with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from triage import workload
from triage.classify import Classification, Finding, PodDiagnosis
from triage.facts import GMU_HIGH, GMU_LOW, ContainerContext, observed_startup
from triage.snapshot import PREVIOUS, Obj, Snapshot, meta

PASS, WARN, FAIL, UNKNOWN, NA = "pass", "warn", "fail", "unknown", "n/a"

TITLES = {
    1: "Container OOMKilled (CPU RAM limit)",
    2: "CUDA out of memory in vLLM logs (GPU)",
    3: "--max-model-len too large for the KV cache",
    4: "--gpu-memory-utilization within 0.85-0.92",
    5: "P99 latency high: bound --max-num-batched-tokens",
    6: "Probe delays versus model load time",
    7: "Autoscale target too high, requests queue",
    8: "minScale >= 1, no cold starts",
    9: "Node disk, image cache, model cache",
    10: "One change at a time, canary",
}

MIN_SCALE = "autoscaling.knative.dev/minScale"


@dataclass
class StepResult:
    step: int
    title: str
    verdict: str
    evidence: list[str] = field(default_factory=list)
    remediation: list[str] = field(default_factory=list)


@dataclass
class Judge:
    snapshot: Snapshot
    classification: Classification

    @property
    def pods(self) -> list[PodDiagnosis]:
        return self.classification.pods

    def contexts(self) -> Iterable[tuple[PodDiagnosis, ContainerContext]]:
        for pod in self.pods:
            for ctx in pod.contexts:
                yield pod, ctx

    def unread(self, *kinds: str) -> list[str]:
        return [str(f) for f in self.snapshot.failures if f.kind in kinds]

    def step_findings(self, step: int) -> list[tuple[PodDiagnosis, Finding]]:
        return [(p, f) for p, f in self.classification.findings() if f.pattern.step == step]


def _from_findings(step: int, judge: Judge) -> StepResult | None:
    """fail / warn straight from the findings that feed this step.

    A fallback finding (a crash with no known signature) names no cause, so
    it is shown where it belongs but never decides a step's verdict.
    """
    hits = [(p, f) for p, f in judge.step_findings(step) if not f.pattern.fallback]
    severities = {f.pattern.severity for _, f in hits}
    verdict = FAIL if "critical" in severities else WARN if "warning" in severities else None
    if verdict is None:
        return None
    result = StepResult(step, TITLES[step], verdict)
    for pod, f in hits:
        if f.pattern.severity == "info":
            continue
        result.evidence.append(f"{pod.namespace}/{pod.name}: {f.id}: {f.pattern.title}")
        result.evidence += [f"  {e}" for e in f.evidence[:6]]
        if f.pattern.remediation not in result.remediation:
            result.remediation.append(f.pattern.remediation)
    return result


def _no_pods(step: int, judge: Judge) -> StepResult | None:
    if judge.pods:
        return None
    why = judge.unread("pods") or ["no vLLM server pods were found"]
    return StepResult(step, TITLES[step], UNKNOWN, why)


def step1(judge: Judge) -> StepResult:
    ev = []
    for pod, ctx in judge.contexts():
        term = (ctx.status.get("lastState") or {}).get("terminated") or {}
        last = f"last termination {term.get('reason')} (exit {term.get('exitCode')})" if term \
            else "no previous termination"
        limit = ctx.fact("memory_limit")
        ev.append(f"{pod.namespace}/{pod.name} ({ctx.name}): not OOMKilled; {last}; "
                  f"{limit.text if limit else ''}")
    return StepResult(1, TITLES[1], PASS, ev)


def _never_ran(ctx: ContainerContext) -> bool:
    state = ctx.status.get("state") or {}
    return not (state.get("running") or state.get("terminated")
                or (ctx.status.get("lastState") or {}).get("terminated"))


def step2(judge: Judge) -> StepResult:
    ev, missing, idle = [], [], []
    for pod, ctx in judge.contexts():
        if _never_ran(ctx):
            idle.append(f"{pod.namespace}/{pod.name} ({ctx.name}): {pod_state(pod.pod)}, the "
                        "container has not started, so there is no log")
            continue
        need = [PREVIOUS] if ctx.status.get("lastState", {}).get("terminated") else []
        need.append("current")
        read = [s for s in need if s in ctx.lines or ctx.log_text(s) is not None]
        lost = [s for s in need if s not in read]
        if lost and not read:
            missing.append(f"{pod.namespace}/{pod.name} ({ctx.name}): "
                           f"{' and '.join(lost)} log not read")
            continue
        counted = sum(len(ctx.lines.get(s, [])) for s in read)
        ev.append(f"{pod.namespace}/{pod.name} ({ctx.name}): no CUDA out-of-memory error in "
                  f"{' and '.join(s + ' log' for s in read)} ({counted} lines)")
    if idle and not ev and not missing:
        return StepResult(2, TITLES[2], NA, idle)
    if missing:
        return StepResult(2, TITLES[2], UNKNOWN, missing + judge.unread("logs") + ev + idle)
    return StepResult(2, TITLES[2], PASS, ev + idle)


def step3(judge: Judge) -> StepResult:
    ev = []
    for pod, ctx in judge.contexts():
        setting = ctx.engine.describe("max-model-len")
        caps = [r for r in ctx.startup.values() if r.kv_cache_tokens or r.max_concurrency]
        if caps:
            rep = caps[-1]
            parts = []
            if rep.kv_cache_tokens:
                parts.append(f"KV cache holds {rep.kv_cache_tokens:,} tokens")
            if rep.max_concurrency is not None:
                parts.append(f"max concurrency {rep.max_concurrency:g}x at "
                             f"{rep.concurrency_tokens:,} tokens per request")
            ev.append(f"{pod.namespace}/{pod.name}: {setting}; vLLM reported {', '.join(parts)}")
        elif ctx.engine.is_set("max-model-len"):
            ev.append(f"{pod.namespace}/{pod.name}: {setting}; no KV cache capacity line in the "
                      "logs read, so whether it fits is not confirmed")
    if not ev:
        return StepResult(3, TITLES[3], UNKNOWN, [
            "--max-model-len is not set and no vLLM start-up line reports the KV cache size "
            "(the server may not have reached that point)"])
    confirmed = any("vLLM reported" in e for e in ev)
    return StepResult(3, TITLES[3], PASS if confirmed else UNKNOWN, ev)


def step4(judge: Judge) -> StepResult:
    ev, verdict = [], PASS
    for pod, ctx in judge.contexts():
        value = ctx.engine.number("gpu-memory-utilization")
        desc = ctx.engine.describe("gpu-memory-utilization")
        if value is None:
            return StepResult(4, TITLES[4], UNKNOWN, [f"{pod.namespace}/{pod.name}: {desc} is "
                                                      "not a number vLLM would accept"])
        inside = GMU_LOW <= value <= GMU_HIGH
        verdict = verdict if inside else WARN
        ev.append(f"{pod.namespace}/{pod.name}: {desc}, {'within' if inside else 'outside'} "
                  f"{GMU_LOW}-{GMU_HIGH}")
    return StepResult(4, TITLES[4], verdict, ev)


def _escalate_step4(result: StepResult, judge: Judge) -> StepResult:
    """A utilisation outside the range that explains a CUDA OOM is a failure."""
    if result.verdict != WARN:
        return result
    both = [p for p in judge.pods if p.has("gpu-memory-utilization") and p.has("cuda-oom")]
    if both:
        result.verdict = FAIL
        result.evidence.insert(0, "the utilisation setting explains the CUDA OOM on "
                               + ", ".join(f"{p.namespace}/{p.name}" for p in both))
    return result


def _metrics_views(judge: Judge) -> list[tuple[PodDiagnosis, ContainerContext]]:
    return [(p, c) for p, c in judge.contexts() if c.metrics and not c.metrics.error]


def _metrics_unknown(step: int, judge: Judge) -> StepResult | None:
    if _metrics_views(judge):
        return None
    reasons = [f"{p.namespace}/{p.name}: /metrics is not Prometheus text: {c.metrics.error}"
               for p, c in judge.contexts() if c.metrics and c.metrics.error]
    reasons += judge.unread("metrics")
    if not reasons:
        reasons = [f"{p.namespace}/{p.name}: no /metrics "
                   + ("in what was collected" if c.status.get("state", {}).get("running")
                      else f"to scrape: the vLLM container is not running ({pod_state(p.pod)})")
                   for p, c in judge.contexts()] or ["no metrics were read"]
    return StepResult(step, TITLES[step], UNKNOWN, reasons)


def _latency_line(pod: PodDiagnosis, ctx: ContainerContext) -> str:
    m = ctx.metrics
    assert m is not None
    d = m.derived()
    parts = []
    for name, label in (("e2e_latency", "e2e"), ("ttft", "TTFT"), ("queue_time", "queue")):
        p50, p99 = d.get(f"{name}_p50"), d.get(f"{name}_p99")
        if p50 is not None and p99 is not None:
            parts.append(f"{label} P50 {p50:.3g}s P99 {p99:.3g}s")
    count = int(d.get("e2e_latency_count", 0))
    model = f" model {', '.join(m.models)}" if m.models else ""
    if not parts:
        return f"{pod.namespace}/{pod.name}:{model} no finished requests in the histograms yet"
    return (f"{pod.namespace}/{pod.name}:{model} {'; '.join(parts)} over {count} requests "
            "(one scrape: the distribution since the server started)")


def step5(judge: Judge) -> StepResult:
    missing = _metrics_unknown(5, judge)
    if missing:
        return missing
    ev = []
    for pod, ctx in _metrics_views(judge):
        ev.append(_latency_line(pod, ctx))
        ev.append(f"  {ctx.engine.describe('max-num-batched-tokens')}")
    return StepResult(5, TITLES[5], PASS, ev)


def step6(judge: Judge) -> StepResult:
    ev = []
    for pod, ctx in judge.contexts():
        c = ctx.container
        observed = observed_startup(ctx)
        load = (f"vLLM started in {observed[0]:.0f}s ({observed[1]})" if observed
                else "no completed start-up in the logs read")
        startup = ctx.fact("has_startup_probe")
        live = c.get("livenessProbe")
        live_txt = (f"livenessProbe {workload.describe_probe(live)}" if live
                    else "no livenessProbe")
        ev.append(f"{pod.namespace}/{pod.name} ({ctx.name}): {load}; "
                  f"{startup.text if startup else ''}; {live_txt}")
    return StepResult(6, TITLES[6], PASS, ev)


def _autoscalers(judge: Judge) -> list[str]:
    """The autoscalers that act on the vLLM workloads, described for evidence."""
    hpas: dict[str, Obj] = {}
    isvcs: dict[str, Obj] = {}
    for pod in judge.pods:
        owner = workload.workload_owner(judge.snapshot, pod.pod)
        if owner is not None:
            kind, obj = owner
            for hpa in workload.autoscalers_for(judge.snapshot, kind, str(meta(obj).get("name")),
                                                pod.namespace):
                hpas.setdefault(f"{pod.namespace}/{meta(hpa).get('name')}", hpa)
        isvc = workload.inference_service(judge.snapshot, pod.pod)
        if isvc is not None:
            isvcs.setdefault(f"{pod.namespace}/{meta(isvc).get('name')}", isvc)
    out = []
    for hpa in hpas.values():
        spec = hpa.get("spec") or {}
        ref = spec.get("scaleTargetRef") or {}
        metrics = []
        for m in spec.get("metrics") or []:
            kind = m.get("type", "")
            body = m.get(kind[:1].lower() + kind[1:]) or {}
            name = body.get("name") or (body.get("metric") or {}).get("name")
            target = body.get("target") or {}
            value = target.get("averageUtilization") or target.get("averageValue") or \
                target.get("value")
            metrics.append(f"{kind} {name} target {value}")
        out.append(f"HPA {meta(hpa).get('name')} -> {ref.get('kind')}/{ref.get('name')}: "
                   f"replicas {spec.get('minReplicas', 1)}-{spec.get('maxReplicas')}, "
                   f"{'; '.join(metrics) or 'default CPU 80%'}")
    for isvc in isvcs.values():
        ann = meta(isvc).get("annotations") or {}
        keys = {k.split("/", 1)[1]: v for k, v in ann.items()
                if k.startswith("autoscaling.knative.dev/")}
        pred = (isvc.get("spec") or {}).get("predictor") or {}
        extra = {k: pred[k] for k in ("minReplicas", "maxReplicas", "scaleTarget", "scaleMetric")
                 if k in pred}
        shown = ", ".join(f"{k}={v}" for k, v in (keys | extra).items()) or \
            "KServe defaults (concurrency target 100 per pod)"
        out.append(f"InferenceService {meta(isvc).get('name')}: {shown}")
    return out


def step7(judge: Judge) -> StepResult:
    scalers = _autoscalers(judge)
    if not scalers:
        unread = judge.unread("horizontalpodautoscalers", "inferenceservices")
        if unread:
            return StepResult(7, TITLES[7], UNKNOWN, unread)
        return StepResult(7, TITLES[7], NA, ["no HorizontalPodAutoscaler or InferenceService "
                                             "autoscaling acts on the vLLM workloads"])
    missing = _metrics_unknown(7, judge)
    if missing:
        missing.evidence = scalers + ["whether requests queue is unknown: " + e
                                      for e in missing.evidence]
        return missing
    ev = list(scalers)
    for pod, ctx in _metrics_views(judge):
        d = ctx.metrics.derived() if ctx.metrics else {}
        ev.append(f"{pod.namespace}/{pod.name}: {d.get('requests_running', 0):g} running, "
                  f"{d.get('requests_waiting', 0):g} waiting, KV cache usage "
                  f"{100 * d.get('kv_cache_usage', 0):.0f}%, preemptions "
                  f"{d.get('preemptions', 0):g}")
    return StepResult(7, TITLES[7], PASS, ev)


def step8(judge: Judge) -> StepResult:
    scalers = _autoscalers(judge)
    if scalers:
        return StepResult(8, TITLES[8], PASS, scalers)
    ev = []
    for pod in judge.pods:
        chain = workload.owner_chain(judge.snapshot, pod.pod)
        top = chain[-1] if chain else None
        if top is not None and (top.get("kind") or "") != "ReplicaSet":
            ev.append(f"{top.get('kind', 'owner')} {meta(top).get('name')}: replicas "
                      f"{(top.get('spec') or {}).get('replicas', 1)}, no autoscaler: "
                      "no scale to zero")
    if not ev:
        unread = judge.unread("deployments", "statefulsets", "replicasets",
                              "horizontalpodautoscalers", "inferenceservices")
        return StepResult(8, TITLES[8], UNKNOWN, unread or [
            "the workload that owns the vLLM pods was not found"])
    return StepResult(8, TITLES[8], PASS, sorted(set(ev)))


def step9(judge: Judge) -> StepResult:
    ev = []
    for pod in judge.pods:
        node_name = workload.pod_spec(pod.pod).get("nodeName")
        node = judge.snapshot.node(node_name)
        if node is None:
            continue
        conds = {c.get("type"): c.get("status") for c in
                 (node.get("status") or {}).get("conditions") or []}
        ev.append(f"node {node_name}: DiskPressure={conds.get('DiskPressure', 'not reported')}")
    if not ev:
        why = judge.unread("nodes") or ["the vLLM pods are not scheduled on any node"]
        return StepResult(9, TITLES[9], UNKNOWN, why)
    ev = sorted(set(ev))
    ev.append("no disk-full, eviction, download-failure or model-cache finding in logs, "
              "events and pod specs")
    return StepResult(9, TITLES[9], PASS, ev)


def step10(judge: Judge) -> StepResult:
    ev = []
    for isvc in judge.snapshot.items("inferenceservices"):
        pred = (isvc.get("spec") or {}).get("predictor") or {}
        pct = pred.get("canaryTrafficPercent")
        ev.append(f"InferenceService {meta(isvc).get('name')}: "
                  + (f"canary rollout, canaryTrafficPercent {pct}" if pct is not None
                     else "no canary traffic split (canaryTrafficPercent unset)"))
    for dep in judge.snapshot.items("deployments"):
        revs = [rs for rs in judge.snapshot.items("replicasets")
                if any(r.get("name") == meta(dep).get("name")
                       for r in meta(rs).get("ownerReferences") or [])]
        if revs:
            ann = meta(dep).get("annotations") or {}
            ev.append(f"Deployment {meta(dep).get('name')}: revision "
                      f"{ann.get('deployment.kubernetes.io/revision', '?')}, {len(revs)} "
                      "ReplicaSet(s) read")
    if not ev:
        return StepResult(10, TITLES[10], UNKNOWN, judge.unread(
            "replicasets", "deployments", "inferenceservices") or [
            "no rollout history (ReplicaSets or InferenceService revisions) was read"])
    ev.append("no multi-change rollout, unpinned image or GPU surge finding")
    return StepResult(10, TITLES[10], PASS, ev)


# What a step must have read to say "pass". A finding is positive evidence
# and stands on its own; a pass is only as good as what was looked at.
STEP_NEEDS: dict[int, tuple[str, ...]] = {
    3: ("logs",),
    6: ("events",),
    7: ("horizontalpodautoscalers", "inferenceservices"),
    8: ("horizontalpodautoscalers", "inferenceservices", "deployments", "statefulsets"),
    9: ("nodes", "events", "logs"),
    10: ("replicasets", "deployments", "inferenceservices"),
}


def _needs_met(result: StepResult, judge: Judge) -> StepResult:
    if result.verdict != PASS:
        return result
    gaps = judge.unread(*STEP_NEEDS.get(result.step, ()))
    if gaps:
        result.verdict = UNKNOWN
        result.evidence = [f"could not read {g}" for g in gaps] + result.evidence
    return result


STEPS: dict[int, Callable[[Judge], StepResult]] = {
    1: step1, 2: step2, 3: step3, 4: step4, 5: step5,
    6: step6, 7: step7, 8: step8, 9: step9, 10: step10,
}


def judge(snapshot: Snapshot, classification: Classification) -> list[StepResult]:
    j = Judge(snapshot, classification)
    results = []
    for step in range(1, 11):
        result = _no_pods(step, j) or _from_findings(step, j) or STEPS[step](j)
        if step == 4:
            result = _escalate_step4(result, j)
        results.append(_needs_met(result, j))
    return results


def overall_failing(results: list[StepResult], classification: Classification) -> bool:
    return any(r.verdict == FAIL for r in results) or any(
        f.pattern.severity == "critical" for _, f in classification.findings())


def pod_state(pod: Obj) -> str:
    """A kubectl-like one-word state: CrashLoopBackOff, OOMKilled, Pending, Running..."""
    status = pod.get("status") or {}
    if meta(pod).get("deletionTimestamp"):
        return "Terminating"
    for cs in status.get("containerStatuses") or []:
        state = cs.get("state") or {}
        if state.get("waiting", {}).get("reason"):
            return str(state["waiting"]["reason"])
        if state.get("terminated", {}).get("reason"):
            return str(state["terminated"]["reason"])
    if status.get("reason"):
        return str(status["reason"])
    phase = str(status.get("phase") or "Unknown")
    if phase == "Running":
        ready = all(cs.get("ready") for cs in status.get("containerStatuses") or [])
        return "Running" if ready else "Running (not ready)"
    return phase
