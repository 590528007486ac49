"""The report model: the typed ``Report`` built from the diagnoses, the checklist and the
causes, sanitised and redacted once for every writer."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from triage import __version__
from triage.facts import timeline
from triage.fixes import files
from triage.kube import workload
from triage.report.cards import cards
from triage.report.summary import beside, no_status, overall, passed_over, summary
from triage.report.workload_patches import workload_patches
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
from triage.rules.causes import CauseLink
from triage.rules.evaluate import PodDiagnosis
from triage.safety.redact import redact_text
from triage.safety.sanitize import sanitize
from triage.snapshot import Snapshot


def pod_result(snapshot: Snapshot, diag: PodDiagnosis) -> PodResult:
    """A pod's part of the report, sanitised and redacted: built while its logs are
    there (its timeline reads them), when it is settled or else by ``build``."""
    return map_strings(PodResult(
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
    ), _clean)


def build(snapshot: Snapshot, pods: list[PodDiagnosis], steps: list[StepResult],
          warnings: list[str], causes: Iterable[CauseLink] = ()) -> Report:
    """``causes``: the sentences of the cluster patterns, each for the card of one finding
    of one workload (``triage.rules.causes``)."""
    results = tuple(diag.result or pod_result(snapshot, diag) for diag in pods)
    # Cards, the summary and the rows beside are worked out from the findings as
    # found (then cleaned with the rest); the pods' part is clean already.
    raw = tuple(dataclasses.replace(r, findings=tuple(d.findings))
                for r, d in zip(results, pods, strict=True))
    shown = cards(raw, list(causes))
    failing = any(s.verdict is Verdict.FAIL for s in steps) or any(
        f.severity is Severity.CRITICAL for p in raw for f in p.findings)
    report = Report(
        tool_version=__version__,
        generated_at=snapshot.collected_at,
        context=snapshot.context,
        namespace=snapshot.namespace,
        selector=snapshot.selector,
        verdict=overall(failing, steps),
        summary=summary(raw, steps, snapshot),
        pods=(),
        checklist=tuple(steps),
        unreadable=tuple(Unreadable(f.what, f.reason) for f in snapshot.failures),
        warnings=tuple(sorted(snapshot.notes)) + passed_over(snapshot.passed_over)
        + no_status([d.pod for d in pods]) + tuple(warnings),
        prometheus=None if snapshot.prometheus is None else PrometheusSource(
            snapshot.prometheus.source, snapshot.prometheus.window_seconds,
            snapshot.prometheus.end),
        cards=shown,
        patches=workload_patches(snapshot, pods, shown),
        beside=beside(raw),
        kubectl=tuple(snapshot.kubectl.flags()),
    )
    # Every string, whatever field of the cluster it came from, is made safe
    # for a terminal first (an escape sequence could hide a credential from
    # the redactor), then redacted. File names are given after: two names the
    # redaction made alike still get a file each.
    clean = map_strings(report, _clean)
    return dataclasses.replace(clean, pods=results, patches=tuple(
        files.named([("", wp) for wp in clean.patches])))


def _clean(text: str) -> str:
    return redact_text(sanitize(text))
