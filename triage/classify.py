"""Evaluate finding patterns against a snapshot; each finding carries its evidence."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import regex

from triage import workload
from triage.facts import ContainerContext
from triage.logs import LogLine, LogText, parse_line
from triage.patterns import (
    AllOf,
    AnyOf,
    Comparison,
    Condition,
    EventLeaf,
    FactLeaf,
    FieldLeaf,
    LogLeaf,
    MetricLeaf,
    NodeConditionLeaf,
    Not,
    Pattern,
    RootCauseLeaf,
)
from triage.snapshot import LOG_STREAMS, Obj, Snapshot, dig, meta

# No single regex search may take longer than this; a pattern that hits it
# is treated as not matching that line and reported, never allowed to hang.
REGEX_TIMEOUT_S = 0.25
# One pattern searched over a whole log (megabytes) in one call.
WHOLE_LOG_TIMEOUT_S = 5.0
MAX_MATCHES_PER_LEAF = 3
SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}


@dataclass
class Finding:
    pattern: Pattern
    container: str
    evidence: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.pattern.id


@dataclass
class PodDiagnosis:
    pod: Obj
    owner: str | None
    contexts: list[ContainerContext]
    findings: list[Finding] = field(default_factory=list)

    @property
    def name(self) -> str:
        return str(meta(self.pod).get("name", ""))

    @property
    def namespace(self) -> str:
        return str(meta(self.pod).get("namespace", ""))

    def has(self, finding_id: str) -> bool:
        return any(f.id == finding_id for f in self.findings)


@dataclass
class Classification:
    pods: list[PodDiagnosis]
    warnings: list[str] = field(default_factory=list)

    def findings(self, finding_id: str | None = None) -> Iterable[tuple[PodDiagnosis, Finding]]:
        for pod in self.pods:
            for f in pod.findings:
                if finding_id is None or f.id == finding_id:
                    yield pod, f


class _Evaluator:
    def __init__(self, warnings: list[str]) -> None:
        self.warnings = warnings

    def search(self, rx: Any, text: str, pattern_id: str) -> Any:
        try:
            return rx.search(text, timeout=REGEX_TIMEOUT_S)
        except TimeoutError:
            note = f"pattern {pattern_id}: regex timed out on a line; treated as no match"
            if note not in self.warnings:
                self.warnings.append(note)
            return None

    def evaluate(self, cond: Condition, ctx: ContainerContext, pid: str) -> list[str] | None:
        """None when the condition is false; otherwise the evidence that made it true."""
        if isinstance(cond, AnyOf):
            found: list[str] | None = None
            for child in cond.children:
                ev = self.evaluate(child, ctx, pid)
                if ev is not None:
                    found = (found or []) + ev
            return found
        if isinstance(cond, AllOf):
            out: list[str] = []
            for child in cond.children:
                ev = self.evaluate(child, ctx, pid)
                if ev is None:
                    return None
                out += ev
            return out
        if isinstance(cond, Not):
            return [] if self.evaluate(cond.child, ctx, pid) is None else None
        if isinstance(cond, LogLeaf):
            return self.log(cond, ctx, pid)
        if isinstance(cond, FieldLeaf):
            return self.field(cond, ctx)
        if isinstance(cond, EventLeaf):
            return self.event(cond, ctx, pid)
        if isinstance(cond, NodeConditionLeaf):
            return self.node_condition(cond, ctx)
        if isinstance(cond, FactLeaf):
            fact = ctx.fact(cond.name)
            if fact is None:
                return None
            return [fact.text] if compare(fact.value, cond.comparison) else None
        if isinstance(cond, MetricLeaf):
            view = ctx.metrics
            if view is None or view.error:
                return None
            value = view.derived().get(cond.name)
            if value is None or not compare(value, cond.comparison):
                return None
            return [f"/metrics: {cond.name} = {_fmt(value)}"]
        if isinstance(cond, RootCauseLeaf):
            return root_cause(ctx, cond)
        raise TypeError(f"unknown condition {cond!r}")

    def _matching_lines(self, leaf: LogLeaf, text: LogText, window: list[LogLine],
                        pid: str) -> Iterator[int]:
        """Indexes into ``window`` of the lines whose message the leaf's regex matches."""
        if window is not text.lines:  # a tail window: a handful of lines, one by one
            for idx, line in enumerate(window):
                if self.search(leaf.regex, line.message, pid) is not None:
                    yield idx
            return
        try:
            for idx, _ in text.matching(leaf.regex, WHOLE_LOG_TIMEOUT_S):
                yield idx
        except TimeoutError:
            note = f"pattern {pid}: regex timed out on a whole log; treated as no match"
            if note not in self.warnings:
                self.warnings.append(note)

    def log(self, leaf: LogLeaf, ctx: ContainerContext, pid: str) -> list[str] | None:
        out: list[str] = []
        matches = 0
        streams = LOG_STREAMS if leaf.stream == "any" else (leaf.stream,)
        for stream in streams:
            text = ctx.texts.get(stream)
            if text is None or not text.lines:
                continue
            window = text.lines[-leaf.tail:] if leaf.tail else text.lines
            for idx in self._matching_lines(leaf, text, window, pid):
                line = window[idx]
                if (line.level or "NONE") not in leaf.levels:
                    continue
                matches += 1
                if matches <= MAX_MATCHES_PER_LEAF:
                    lo, hi = max(0, idx - leaf.context), min(len(window), idx + leaf.context + 1)
                    for j in range(lo, hi):
                        item = _log_evidence(ctx, stream, window[j], marked=j == idx)
                        if item not in out:
                            out.append(item)
        if not matches:
            return None
        if matches > MAX_MATCHES_PER_LEAF:
            out.append(f"... and {matches - MAX_MATCHES_PER_LEAF} more matching line(s)")
        return out

    def field(self, leaf: FieldLeaf, ctx: ContainerContext) -> list[str] | None:
        if leaf.scope == "container":
            obj, label = ctx.status, f"containerStatuses[{ctx.name}]"
        elif leaf.scope == "pod":
            obj, label = ctx.pod, f"pod {ctx.pod_name}"
        else:
            if ctx.node is None:
                return None
            obj, label = ctx.node, f"node {meta(ctx.node).get('name')}"
        value = dig(obj, leaf.field)
        if not compare(value, leaf.comparison):
            return None
        return [f"{label}.{leaf.field} = {value!r}" if value is not None
                else f"{label}.{leaf.field} is not set"]

    def event(self, leaf: EventLeaf, ctx: ContainerContext, pid: str) -> list[str] | None:
        events: list[Obj] = []
        if leaf.about in ("pod", "any"):
            events += ctx.snapshot.events_about("Pod", ctx.namespace, ctx.pod_name)
        if leaf.about in ("owner", "any"):
            for owner in workload.owner_chain(ctx.snapshot, ctx.pod):
                events += ctx.snapshot.events_about(str(owner.get("kind")), ctx.namespace,
                                                    str(meta(owner).get("name")))
        out: list[str] = []
        for ev in events:
            if leaf.type and ev.get("type") != leaf.type:
                continue
            reason = str(ev.get("reason") or "")
            message = str(ev.get("message") or ev.get("note") or "")
            if leaf.reason is not None and self.search(leaf.reason, reason, pid) is None:
                continue
            if leaf.message is not None and self.search(leaf.message, message, pid) is None:
                continue
            inv = ev.get("involvedObject") or {}
            count = ev.get("count") or (ev.get("series") or {}).get("count") or 1
            when = ev.get("lastTimestamp") or ev.get("eventTime") or meta(ev).get(
                "creationTimestamp")
            item = (f"event {ev.get('type', '')} {reason} on {inv.get('kind')}/{inv.get('name')}"
                    f" (x{count}, last {when}): {parse_line(0, message).raw}")
            if item not in out:
                out.append(item)
        return out or None

    def node_condition(self, leaf: NodeConditionLeaf, ctx: ContainerContext) -> list[str] | None:
        node = ctx.node
        if node is None:
            return None
        for cond in (node.get("status") or {}).get("conditions") or []:
            if cond.get("type") == leaf.condition and str(cond.get("status")) == leaf.status:
                return [f"node {meta(node).get('name')} condition {leaf.condition}="
                        f"{leaf.status}: {cond.get('reason', '')} "
                        f"{cond.get('message', '')}".rstrip()]
        return None


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def _log_evidence(ctx: ContainerContext, stream: str, line: LogLine, marked: bool) -> str:
    label = "previous log" if stream == "previous" else "log"
    marker = ">" if marked else " "
    return f"{label} ({ctx.name}) line {line.number}{marker} {line.raw}"


def compare(value: Any, cmp: Comparison) -> bool:
    op, want = cmp.op, cmp.value
    if op == "exists":
        return (value is not None) is bool(want)
    if value is None:
        return op in ("not_equals", "not_in")
    if op == "equals":
        return bool(value == want or str(value) == str(want))
    if op == "not_equals":
        return not (value == want or str(value) == str(want))
    if op == "in":
        return bool(value in want or str(value) in [str(w) for w in want])
    if op == "not_in":
        return not (value in want or str(value) in [str(w) for w in want])
    if op == "regex":
        try:
            return bool(want.search(str(value), timeout=REGEX_TIMEOUT_S) is not None)
        except TimeoutError:
            return False
    try:
        number = float(value)
    except (TypeError, ValueError):
        return False
    if math.isnan(number):
        return False
    limit = float(want)
    return number >= limit if op == "gte" else number <= limit


# An exception line as Python prints it ("torch.OutOfMemoryError: ...",
# "RuntimeError: ..."), or a fatal signal / error line.
_ERROR_SHAPE = regex.compile(
    r"^(?:[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning)\b:?|Traceback \(most recent"
    r"|Fatal Python error|Bus error|Segmentation fault|Killed$)"
)


def root_cause(ctx: ContainerContext, leaf: RootCauseLeaf) -> list[str] | None:
    """The last error line that is not a wrapper, else the last lines of the log."""
    for stream in ("previous", "current"):
        lines = ctx.lines.get(stream)
        if not lines:
            continue
        for line in reversed(lines):
            if any(rx.search(line.message) for rx in leaf.skip):
                continue
            if _ERROR_SHAPE.search(line.message) and not line.message.startswith("Traceback"):
                tail = [_log_evidence(ctx, stream, ln, marked=False)
                        for ln in lines[-leaf.lines:] if ln is not line]
                return [_log_evidence(ctx, stream, line, marked=True), *tail]
        return [_log_evidence(ctx, stream, ln, marked=False) for ln in lines[-leaf.lines:]]
    return ["no log text could be read for this container"]


def classify(snapshot: Snapshot, patterns: list[Pattern]) -> Classification:
    warnings: list[str] = []
    evaluator = _Evaluator(warnings)
    pods: list[PodDiagnosis] = []
    for pod in snapshot.pods():
        contexts = [ContainerContext(snapshot, pod, c)
                    for c in workload.triage_containers(pod, bool(snapshot.selector))]
        diag = PodDiagnosis(pod, workload.owner_label(snapshot, pod), contexts)
        for pattern in patterns:
            if pattern.fallback:
                continue
            _apply(evaluator, pattern, diag)
        _drop_yielding(diag)
        if not any(f.pattern.severity == "critical" for f in diag.findings):
            for pattern in patterns:
                if pattern.fallback:
                    _apply(evaluator, pattern, diag)
        diag.findings.sort(key=lambda f: (SEVERITY_ORDER[f.pattern.severity], f.pattern.step))
        pods.append(diag)
    return Classification(pods, warnings)


def _apply(evaluator: _Evaluator, pattern: Pattern, diag: PodDiagnosis) -> None:
    for ctx in diag.contexts:
        evidence = evaluator.evaluate(pattern.when, ctx, pattern.id)
        if evidence is None:
            continue
        for extra in pattern.show:
            shown = evaluator.evaluate(extra, ctx, pattern.id)
            evidence += [e for e in shown or [] if e not in evidence]
        existing = next((f for f in diag.findings if f.id == pattern.id), None)
        if existing:
            existing.evidence += [e for e in evidence if e not in existing.evidence]
        else:
            diag.findings.append(Finding(pattern, ctx.name, evidence))


def _drop_yielding(diag: PodDiagnosis) -> None:
    found = {f.id for f in diag.findings}
    diag.findings = [f for f in diag.findings if not set(f.pattern.yields_to) & found]


def match_example(pattern: Pattern, line: str) -> bool:
    """Does one example log line match any of the pattern's log leaves?

    Used by the pattern test-suite for ``examples.match`` / ``no_match``.
    """
    parsed = parse_line(1, line)
    for leaf in _log_leaves(pattern.when):
        if (parsed.level or "NONE") in leaf.levels and leaf.regex.search(parsed.message):
            return True
    return False


def _log_leaves(cond: Condition) -> Iterable[LogLeaf]:
    if isinstance(cond, LogLeaf):
        yield cond
    elif isinstance(cond, (AnyOf, AllOf)):
        for child in cond.children:
            yield from _log_leaves(child)
    # A log leaf under "not" is an exclusion, not a signature: skip it.
