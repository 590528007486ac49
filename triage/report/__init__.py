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
    report = Report(
        tool_version=__version__,
        generated_at=snapshot.collected_at,
        context=snapshot.context,
        namespace=snapshot.namespace,
        selector=snapshot.selector,
        verdict=_overall(failing, steps),
        summary=_summary(results, steps, snapshot.passed_over),
        pods=results,
        checklist=tuple(steps),
        unreadable=tuple(Unreadable(f.what, f.reason) for f in snapshot.failures),
        warnings=tuple(sorted(snapshot.notes)) + _passed_over(snapshot.passed_over)
        + tuple(warnings),
        prometheus=None if snapshot.prometheus is None else PrometheusSource(
            snapshot.prometheus.source, snapshot.prometheus.window_seconds,
            snapshot.prometheus.end),
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


def _summary(pods: tuple[PodResult, ...], steps: list[StepResult],
             passed_over: list[str] | None = None) -> str:
    if not pods:
        if passed_over:
            names = ", ".join(p.split(" (", 1)[0] for p in passed_over)
            return (f"no vLLM server pods found, but {len(passed_over)} crash-looping pod(s) "
                    f"were not triaged: {names} (if they serve with vLLM, select them with -l)")
        return "no vLLM server pods found"
    ids: list[str] = []
    for p in pods:
        for f in p.findings:
            if f.severity is Severity.CRITICAL and f.id not in ids:
                ids.append(f.id)
    failing = [str(s.step) for s in steps if s.verdict is Verdict.FAIL]
    if ids:
        return (f"{len(pods)} vLLM pod(s); critical: {', '.join(ids)}; failing steps: "
                f"{', '.join(failing) or 'none'}")
    warn = [str(s.step) for s in steps if s.verdict is Verdict.WARN]
    unknown = [str(s.step) for s in steps if s.verdict is Verdict.UNKNOWN]
    return (f"{len(pods)} vLLM pod(s); no critical finding"
            + (f"; failing steps: {', '.join(failing)}" if failing else "")
            + (f"; steps to review: {', '.join(warn)}" if warn else "")
            + (f"; steps that could not be judged: {', '.join(unknown)}" if unknown else ""))


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
