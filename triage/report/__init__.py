"""The report: one ``Report`` built from the judged snapshot, one writer per format.

``build`` makes the typed ``triage.results.Report`` (its JSON form is schema
``vllm-triage/report/v1``); every writer renders that object and nothing
else, so all formats say the same thing. Every string in it has passed the
sanitiser (no control character or escape sequence reaches a terminal or a
file) and then the redactor (reports go into tickets): this is the one place
both happen, upstream of every writer.
"""

from __future__ import annotations

from collections.abc import Callable

from triage import __version__, workload
from triage.facts import timeline
from triage.redact import redact_text
from triage.results import (
    BesideFinding,
    Finding,
    PodResult,
    PrometheusSource,
    Report,
    Severity,
    StepResult,
    Unreadable,
    Verdict,
    map_strings,
)
from triage.rules.evaluate import PodDiagnosis
from triage.sanitize import sanitize
from triage.snapshot import Snapshot

__all__ = ["Report", "Writer", "build", "writers"]


def build(snapshot: Snapshot, pods: list[PodDiagnosis], steps: list[StepResult],
          warnings: list[str]) -> Report:
    results = tuple(
        PodResult(
            name=diag.name,
            namespace=diag.namespace,
            phase=str((diag.pod.get("status") or {}).get("phase", "Unknown")),
            state=workload.pod_state(diag.pod),
            restarts=workload.restarts(diag.pod),
            node=workload.pod_spec(diag.pod).get("nodeName"),
            owner=workload.owner_label(snapshot, diag.pod),
            containers=tuple(c.name for c in diag.contexts),
            findings=tuple(diag.findings),
            unevaluated=tuple(diag.unevaluated),
            timeline=timeline.pod_timeline(diag.contexts),
            gpu_budget=timeline.gpu_budget(diag.contexts[0]) if diag.contexts else None,
            series=timeline.window_series(diag.contexts[0]) if diag.contexts else (),
        )
        for diag in pods
    )
    failing = any(s.verdict is Verdict.FAIL for s in steps) or any(
        f.severity is Severity.CRITICAL for p in results for f in p.findings)
    beside = _beside(results)
    report = Report(
        tool_version=__version__,
        generated_at=snapshot.collected_at,
        context=snapshot.context,
        namespace=snapshot.namespace,
        selector=snapshot.selector,
        verdict=_overall(failing, steps),
        summary=_summary(results, steps, snapshot),
        pods=results,
        checklist=tuple(steps),
        unreadable=tuple(Unreadable(f.what, f.reason) for f in snapshot.failures),
        warnings=tuple(sorted(snapshot.notes)) + _passed_over(snapshot.passed_over)
        + tuple(warnings),
        prometheus=None if snapshot.prometheus is None else PrometheusSource(
            snapshot.prometheus.source, snapshot.prometheus.window_seconds,
            snapshot.prometheus.end),
        beside=beside,
    )
    # Every string, whatever field of the cluster it came from, is made safe
    # for a terminal first (an escape sequence could hide a credential from
    # the redactor), then redacted.
    return map_strings(report, _clean)


def _clean(text: str) -> str:
    return redact_text(sanitize(text))


def _passed_over(pods: list[str]) -> tuple[str, ...]:
    return tuple(f"not triaged (nothing marks it as a vLLM server), but crash-looping: {p}; "
                 "if it serves with vLLM, select it with -l" for p in pods)


def _beside(pods: tuple[PodResult, ...]) -> tuple[BesideFinding, ...]:
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


def _summary(pods: tuple[PodResult, ...], steps: list[StepResult], snapshot: Snapshot) -> str:
    """The headline: what fails, by name (finding ids), then what to review and what could
    not be judged, by step."""
    if not pods:
        return _no_pods(snapshot)
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


def _no_pods(snapshot: Snapshot) -> str:
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


def _overall(failing: bool, steps: list[StepResult]) -> Verdict:
    """fail, else warn, else unknown when a step could not be judged: the headline
    says pass only when every step that applies passed."""
    if failing:
        return Verdict.FAIL
    for verdict in (Verdict.WARN, Verdict.UNKNOWN):
        if any(s.verdict is verdict for s in steps):
            return verdict
    return Verdict.PASS


Writer = Callable[[Report, bool], str]


def writers() -> dict[str, Writer]:
    from triage.report import (  # late: each writer's deps
        html,
        json_report,
        markdown,
        table,
        yaml_report,
    )

    return {"table": table.render, "json": json_report.render, "yaml": yaml_report.render,
            "markdown": markdown.render, "html": html.render}
