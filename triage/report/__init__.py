"""The report: one ``Report`` built from the judged snapshot, one writer per format.

``build`` makes the typed ``triage.results.Report`` (its JSON form is schema
``vllm-triage/report/v1``); every writer renders that object and nothing
else, so all formats say the same thing. Every string in it has passed the
sanitiser (no control character or escape sequence reaches a terminal or a
file) and then the redactor (reports go into tickets): this is the one place
both happen, upstream of every writer.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Iterable

from triage import __version__
from triage.facts import timeline
from triage.fixes import patches
from triage.kube import workload
from triage.results import (
    BesideFinding,
    Card,
    Finding,
    Patch,
    PodResult,
    PrometheusSource,
    Report,
    Severity,
    StepResult,
    Unreadable,
    Verdict,
    WorkloadPatch,
    map_strings,
)
from triage.rules.causes import CauseLink
from triage.rules.evaluate import PodDiagnosis
from triage.safety.redact import redact_text
from triage.safety.sanitize import sanitize
from triage.snapshot import Snapshot

__all__ = ["Report", "build", "pod_result"]


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
    cards = _cards(raw, list(causes))
    failing = any(s.verdict is Verdict.FAIL for s in steps) or any(
        f.severity is Severity.CRITICAL for p in raw for f in p.findings)
    beside = _beside(raw)
    report = Report(
        tool_version=__version__,
        generated_at=snapshot.collected_at,
        context=snapshot.context,
        namespace=snapshot.namespace,
        selector=snapshot.selector,
        verdict=_overall(failing, steps),
        summary=_summary(raw, steps, snapshot),
        pods=(),
        checklist=tuple(steps),
        unreadable=tuple(Unreadable(f.what, f.reason) for f in snapshot.failures),
        warnings=tuple(sorted(snapshot.notes)) + _passed_over(snapshot.passed_over)
        + tuple(warnings),
        prometheus=None if snapshot.prometheus is None else PrometheusSource(
            snapshot.prometheus.source, snapshot.prometheus.window_seconds,
            snapshot.prometheus.end),
        cards=cards,
        patches=_workload_patches(snapshot, pods, cards),
        beside=beside,
    )
    # Every string, whatever field of the cluster it came from, is made safe
    # for a terminal first (an escape sequence could hide a credential from
    # the redactor), then redacted.
    return dataclasses.replace(map_strings(report, _clean), pods=results)


# --- cards: the answer first --------------------------------------------------------

# A log line shown only as context around a match ("line 46  ..."; a match is "line 47> ").
_CONTEXT_LINE = re.compile(r"\bline \d+  ")


_MATCHED_LINE = re.compile(r"\bline \d+> ")
_WARNING_EVENT = re.compile(r"^event Warning \S+ on .*\): \S")
_CONDITION = re.compile(r"^pod \S+ condition \w+=\w+ \(\w+\): \S")


def _proof(finding: Finding) -> str:
    """The one line that proves a finding: the first thing its rule matched when that is an
    event, a pod condition's message or a matched log line; when it is a bare field
    (``lastState.terminated.reason = 'OOMKilled'``, ``state.waiting.reason``), the first
    Warning event's message or matched error line instead, if there is one (the
    kubelet's own words: "Failed to pull image ...: not found"). Never a context line,
    an "explains" or a "... more" note."""
    lines = [line for line in finding.evidence
             if not _CONTEXT_LINE.search(line[:80]) and not line.startswith(("... ",
                                                                             "explains "))]
    if not lines:
        return finding.evidence[0] if finding.evidence else finding.title

    def sentence(line: str) -> bool:
        return bool(line.startswith("event ") or _MATCHED_LINE.search(line[:120])
                    or _CONDITION.search(line[:200]))
    if sentence(lines[0]):
        return lines[0]
    return next((line for line in lines if _WARNING_EVENT.search(line)
                 or _MATCHED_LINE.search(line[:120])), lines[0])


def _owner(pod: PodResult) -> str:
    return pod.owner or f"Pod/{pod.name}"


def _cards(pods: tuple[PodResult, ...], causes: list[CauseLink]) -> tuple[Card, ...]:
    """One card per workload and failure; pods of a workload with the same findings share
    it, with the causes said on it. Critical first, then by checklist step; fallbacks ("no
    known signature") last."""
    per_workload = Counter((p.namespace, _owner(p)) for p in pods)
    groups: dict[tuple[str, str, tuple[str, ...]], list[PodResult]] = {}
    for pod in pods:
        ids = tuple(f.id for f in pod.findings if f.severity is not Severity.INFO)
        if ids:
            groups.setdefault((pod.namespace, _owner(pod), ids), []).append(pod)
    cards: list[Card] = []
    for (namespace, owner, ids), members in groups.items():
        first = members[0]
        for finding in first.findings:
            if finding.id not in ids:
                continue
            cards.append(Card(
                workload=owner, namespace=namespace, finding=finding.id,
                severity=finding.severity, title=finding.title, step=finding.step,
                pods=tuple(p.name for p in members),
                pods_total=per_workload[(namespace, owner)], proof=_proof(finding),
                fix=finding.fix,
                causes=tuple(dict.fromkeys(
                    c.text for c in causes
                    if (c.namespace, c.workload, c.finding) == (namespace, owner, finding.id))),
                also=tuple(i for i in ids if i != finding.id)))
    fallback = {f.id for p in pods for f in p.findings if f.fallback}
    cards.sort(key=lambda c: (c.finding in fallback, c.severity.rank, c.step))
    return tuple(cards)


def _workload_patches(snapshot: Snapshot, diags: list[PodDiagnosis], cards: tuple[Card, ...]
                      ) -> tuple[WorkloadPatch, ...]:
    """Every card's patch of one object combined into one, applied to the object as read.

    Each container gets its own fixes' edits (merged so that neither fix undoes the
    other: ``patches.Edits.merged``), whatever the order of the cards."""
    combined: dict[tuple[str, str, str], tuple[dict[tuple[str, tuple[str, ...] | None],
                                                   patches.Edits], list[str]]] = {}
    for card in cards:
        fix = card.fix
        if fix is None or fix.patch is None or not isinstance(fix.edits, dict):
            continue
        key = (fix.patch.kind, fix.patch.namespace, fix.patch.name)
        template = tuple(fix.edits["template"]) if fix.edits.get("template") else None
        edits = patches.Edits(args=fix.edits["args"], container=fix.edits["container"],
                              pod=fix.edits["pod"], spec=fix.edits["spec"], template=template)
        container = _container_of(diags, card)
        per_container, ids = combined.setdefault(key, ({}, []))
        before = per_container.get((container, template))
        per_container[(container, template)] = edits if before is None \
            else before.merged(edits)
        ids.append(card.finding)
    out: list[WorkloadPatch] = []
    for (kind, namespace, name), (per_container, ids) in combined.items():
        obj = snapshot.find(_PLURAL.get(kind, kind.lower() + "s"), namespace, name)
        if obj is None:
            continue
        typed = {"apiVersion": obj.get("apiVersion") or patches.API_VERSION.get(kind, "v1"),
                 "kind": kind, **obj}
        doc = patches.build_all(patches.Target(kind, typed, ""),
                                [(c, e) for (c, _), e in per_container.items()])
        if doc is None:
            continue
        out.append(WorkloadPatch(f"{kind}/{name}", Patch(
            doc["apiVersion"], doc["kind"], doc["namespace"], doc["name"], doc["type"],
            doc["patch"]), tuple(dict.fromkeys(ids))))
    return tuple(out)


_PLURAL = {"Deployment": "deployments", "StatefulSet": "statefulsets",
           "InferenceService": "inferenceservices",
           "HorizontalPodAutoscaler": "horizontalpodautoscalers",
           "PersistentVolumeClaim": "persistentvolumeclaims"}


def _container_of(diags: list[PodDiagnosis], card: Card) -> str:
    for diag in diags:
        if diag.name == card.pods[0]:
            for f in diag.findings:
                if f.id == card.finding:
                    return f.container
    return ""


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

