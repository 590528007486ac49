"""What the report says in one line, and around the cards: the headline, the overall
verdict, the findings beside their step and the pods passed over."""

from __future__ import annotations

from triage.kube import workload
from triage.results import (
    BesideFinding,
    Finding,
    PodResult,
    StepResult,
    Verdict,
)
from triage.snapshot import Obj, Snapshot, meta


def passed_over(pods: list[str]) -> tuple[str, ...]:
    return tuple(f"not triaged (nothing marks it as a vLLM server), but crash-looping: {p}; "
                 "if it serves with vLLM, select it with -l" for p in pods)


def no_status(pods: list[Obj]) -> tuple[str, ...]:
    """The triaged pods on a node whose status holds no container's: what the tool says
    of them comes from their logs and spec alone, and a person should know why."""
    return tuple(
        f"pod {meta(p).get('namespace')}/{meta(p).get('name')}: the kubelet reported no "
        "container status (status.containerStatuses is empty); its logs were read and "
        "judged without it" for p in pods
        if workload.pod_spec(p).get("nodeName") and not workload.container_statuses(p))


def beside(pods: tuple[PodResult, ...]) -> tuple[BesideFinding, ...]:
    """The findings that are not what their step asks about, one row per (step, id),
    naming the pods; the worst form (critical before its warning) decides the row."""
    rows: dict[tuple[int, str], list[tuple[Finding, str]]] = {}
    for p in pods:
        for f in p.findings:
            if not f.answers_step:
                rows.setdefault((f.step, f.id), []).append((f, f"{p.namespace}/{p.name}"))
    out = []
    for (step, fid), hits in sorted(rows.items()):
        worst = min((f for f, _ in hits), key=lambda f: f.severity.rank)
        out.append(BesideFinding(step=step, id=fid, severity=worst.severity,
                                 verdict=worst.verdict or Verdict.WARN, title=worst.title,
                                 pods=tuple(dict.fromkeys(where for _, where in hits)),
                                 remediation=worst.remediation))
    return tuple(out)


def summary(pods: tuple[PodResult, ...], steps: list[StepResult], snapshot: Snapshot) -> str:
    """The headline: what fails, by name (finding ids), then what to review and what could
    not be judged, by step."""
    if not pods:
        return no_pods(snapshot)
    failing: list[str] = []
    review: list[str] = []
    for p in pods:
        for f in p.findings:
            verdict = f.verdict if not f.fallback else f.severity.verdict
            if verdict is Verdict.FAIL and f.id not in failing:
                failing.append(f.id)
            elif verdict is Verdict.WARN and f.id not in review:
                review.append(f.id)
    review = [r for r in review if r not in failing]
    unknown = [str(s.step) for s in steps if s.verdict is Verdict.UNKNOWN]
    parts = [f"{len(pods)} vLLM pod(s)"]
    parts.append(f"failing: {', '.join(failing)}" if failing else "nothing failing")
    if review:
        parts.append(f"to review: {', '.join(review)}")
    if unknown:
        parts.append(f"steps that could not be judged: {', '.join(unknown)}")
    return "; ".join(parts)


def no_pods(snapshot: Snapshot) -> str:
    """The headline of a scan that found no vLLM pod: where they are instead, when known."""
    where = f"in namespace {snapshot.namespace}" if snapshot.namespace else "in any namespace"
    head = f"no vLLM server pods {where}"
    if snapshot.vllm_elsewhere:
        return (head + "; vLLM pods run in: " + ", ".join(
            f"{ns} ({n})" for ns, n in sorted(snapshot.vllm_elsewhere.items())))
    if snapshot.passed_over:
        names = ", ".join(p.split(" (", 1)[0] for p in snapshot.passed_over)
        head += (f"; but {len(snapshot.passed_over)} crash-looping pod(s) were not triaged: "
                 f"{names} (if they serve with vLLM, select them with -l)")
    if snapshot.elsewhere_unknown:
        return head + f"; could not look in other namespaces ({snapshot.elsewhere_unknown})"
    return head


def overall(failing: bool, steps: list[StepResult]) -> Verdict:
    """fail, else warn, else unknown when a step could not be judged: the headline
    says pass only when every step that applies passed."""
    if failing:
        return Verdict.FAIL
    for verdict in (Verdict.WARN, Verdict.UNKNOWN):
        if any(s.verdict is verdict for s in steps):
            return verdict
    return Verdict.PASS
