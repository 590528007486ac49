"""Run the patterns over a snapshot: findings with their evidence, per pod.

Evaluation is three-valued. A leaf whose input could not be read (a log or
event list that failed, a fact that could not be measured, a regex that
timed out) is *unknown*, and so is any condition that depends on it
(``any`` is true if one child is true, ``all`` false if one child is false,
``not`` keeps unknown). A pattern that ends unknown is never a silent "no
match": it is reported as unevaluated, with the reason, and its checklist
step says ``unknown``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import regex

from triage.facts import REGISTRY, ContainerContext, Fact, NodeContext, PodContext, WorkloadContext
from triage.fixes import compute as fixes
from triage.kube import workload
from triage.logs import LogLine, Query, QuerySet, linetime, parse_line
from triage.logs.linetime import without_kubelet_time
from triage.results import Finding, Location, PodResult, Severity, Unevaluated, Verdict
from triage.rules.fields import dig_path
from triage.rules.language import (
    LOG_LEVELS,
    AllOf,
    AnyOf,
    Comparison,
    Condition,
    EventLeaf,
    FactLeaf,
    FieldLeaf,
    FindingLeaf,
    LogLeaf,
    MetricLeaf,
    NodeConditionLeaf,
    Not,
    Pattern,
    RootCauseLeaf,
    walk,
)
from triage.snapshot import LOG_STREAMS, NODE_EVENTS, Obj, Snapshot, event_times, meta
from triage.speed import lazyregex
from triage.vllm import rootcause
from triage.vllm.metrics import describe

REGISTRY_UNITS = {name: spec.unit for name, spec in REGISTRY.items()}
# What a condition is evaluated on: a container's context, or (a pattern of a wider scope,
# a cause's side) a pod's, workload's or node's. The loader lets each scope use only the
# leaves its context answers.
Subject = ContainerContext | PodContext | NodeContext | WorkloadContext
# No single regex search may take longer than this: a pattern that hits it
# is unknown for that log, never allowed to hang.
REGEX_TIMEOUT_S = 0.25
MAX_MATCHES_PER_LEAF = 3


class Truth(Enum):
    TRUE = "true"
    FALSE = "false"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Outcome:
    """A condition's truth and the evidence for it."""

    truth: Truth
    evidence: tuple[str, ...] = ()
    reason: str = ""  # why, when unknown
    at: tuple[Location, ...] = ()  # the fields that made it true

    @property
    def true(self) -> bool:
        return self.truth is Truth.TRUE


FALSE = Outcome(Truth.FALSE)


def _unknown(reason: str) -> Outcome:
    return Outcome(Truth.UNKNOWN, reason=reason)


def _true(*evidence: str, at: tuple[Location, ...] = ()) -> Outcome:
    return Outcome(Truth.TRUE, tuple(evidence), at=at)


def merge_locations(groups: Iterable[tuple[Location, ...]]) -> tuple[Location, ...]:
    out: list[Location] = []
    for group in groups:
        for loc in group:
            if not any(loc.same(o) for o in out):
                out.append(loc)
    return tuple(out)


@dataclass
class PodDiagnosis:
    """One pod's findings while they are being worked out (frozen into a PodResult later)."""

    pod: Obj
    contexts: list[ContainerContext]
    findings: list[Finding] = field(default_factory=list)
    states: dict[str, Truth] = field(default_factory=dict)  # pattern id -> outcome on this pod
    unevaluated: list[Unevaluated] = field(default_factory=list)
    # The pod's part of the report, built when the pod is settled (its logs dropped).
    result: PodResult | None = None

    @property
    def name(self) -> str:
        return str(meta(self.pod).get("name", ""))

    @property
    def namespace(self) -> str:
        return str(meta(self.pod).get("namespace", ""))


class Evaluator:
    def __init__(self, warnings: list[str]) -> None:
        self.warnings = warnings

    def _warn(self, note: str) -> None:
        if note not in self.warnings:
            self.warnings.append(note)

    def evaluate(self, cond: Condition, ctx: Subject, diag: PodDiagnosis,
                 pid: str) -> Outcome:
        if isinstance(cond, AnyOf):
            outcomes = [self.evaluate(c, ctx, diag, pid) for c in cond.children]
            trues = [o for o in outcomes if o.true]
            if trues:
                return _true(*_merge(o.evidence for o in trues),
                             at=merge_locations(o.at for o in trues))
            unknown = next((o for o in outcomes if o.truth is Truth.UNKNOWN), None)
            return unknown or FALSE
        if isinstance(cond, AllOf):
            evidence: list[str] = []
            at: list[tuple[Location, ...]] = []
            unknown = None
            for child in cond.children:
                o = self.evaluate(child, ctx, diag, pid)
                if o.truth is Truth.FALSE:
                    return FALSE
                if o.truth is Truth.UNKNOWN:
                    unknown = unknown or o
                evidence += o.evidence
                at.append(o.at)
            return unknown or _true(*_merge([evidence]), at=merge_locations(at))
        if isinstance(cond, Not):
            o = self.evaluate(cond.child, ctx, diag, pid)
            if o.truth is Truth.UNKNOWN:
                return o
            return FALSE if o.true else _true()
        if isinstance(cond, FactLeaf):
            return self.fact(cond, ctx)
        if isinstance(cond, FindingLeaf):
            return _finding(cond, diag)
        if isinstance(cond, NodeConditionLeaf):
            return self.node_condition(cond, _on_node(ctx, cond))
        if isinstance(cond, FieldLeaf):
            return self.field(cond, ctx)
        if isinstance(cond, EventLeaf):
            return self.event(cond, _of_pod(ctx, cond), pid)
        if isinstance(cond, MetricLeaf):
            return self.metric(cond, _of_pod(ctx, cond))
        if isinstance(cond, LogLeaf):
            return self.log(cond, _of_container(ctx, cond), pid)
        if isinstance(cond, RootCauseLeaf):
            return _true(*root_cause(_of_container(ctx, cond), cond))
        raise TypeError(f"unknown condition {cond!r}")

    # --- leaves -------------------------------------------------------------

    def _search(self, rx: Any, text: str, pid: str) -> Any:
        try:
            return rx.search(text, timeout=REGEX_TIMEOUT_S)
        except TimeoutError:
            self._warn(f"pattern {pid}: regex timed out on a line; that line was not checked")
            raise

    def log(self, leaf: LogLeaf, ctx: ContainerContext, pid: str) -> Outcome:
        out: list[str] = []
        total = shown = 0
        unknown: str | None = None
        streams = LOG_STREAMS if leaf.stream == "any" else (leaf.stream,)
        for stream in streams:
            index = ctx.log(stream)
            if index is None:
                unknown = unknown or ctx.log_failure(stream)
                continue
            if leaf.tail:
                found, why = self._tail(leaf, index.tail[-leaf.tail:], pid)
                total += len(found)
            else:
                result = index.result(log_query(leaf))
                found = [(h.line, h.before, h.after) for h in result.first]
                total += result.count
                why = result.unknown
                if why:
                    self._warn(f"pattern {pid}: {why} in the {stream} log of "
                               f"{ctx.namespace}/{ctx.pod_name} ({ctx.name})")
                    why = f"pattern {pid}: {why}"
            if why and not found:
                unknown = unknown or why
            for line, before, after in found:
                if shown == MAX_MATCHES_PER_LEAF:
                    break
                shown += 1
                context = [*(before[len(before) - leaf.context:] if leaf.context else []), line,
                           *after[:leaf.context]]
                for ln in context:
                    item = log_evidence(ctx, stream, ln, marked=ln is line)
                    if item not in out:
                        out.append(item)
        if total:
            if total > shown:
                out.append(f"... and {total - shown} more matching line(s)")
            return _true(*out)
        return _unknown(unknown) if unknown else FALSE

    def _tail(self, leaf: LogLeaf, window: list[LogLine], pid: str
              ) -> tuple[list[tuple[LogLine, list[LogLine], list[LogLine]]], str | None]:
        """A tail leaf: its regex over the last lines only, one by one."""
        found: list[tuple[LogLine, list[LogLine], list[LogLine]]] = []
        for idx, line in enumerate(window):
            if (line.level or "NONE") not in leaf.levels:
                continue
            try:
                if self._search(leaf.regex, line.message, pid) is None:
                    continue
            except TimeoutError:
                return found, f"pattern {pid}: its regex timed out on line {line.number}"
            found.append((line, window[max(0, idx - leaf.context):idx],
                          window[idx + 1:idx + 1 + leaf.context]))
        return found, None

    def field(self, leaf: FieldLeaf, ctx: Subject) -> Outcome:
        static = ctx.snapshot.static
        if static is not None and (leaf.scope != "pod" or leaf.path[:1] == ("status",)):
            what = {"container": "the container's status", "node": "the pod's node"}.get(
                leaf.scope, "the pod's status")
            return _unknown(f"needs {what}: {static}")
        at: tuple[Location, ...] = ()
        if leaf.scope == "container":
            container = _of_container(ctx, leaf)
            obj, label = container.status, f"{container.status_field}[{container.name}]"
        elif leaf.scope == "pod":
            pod = _of_pod(ctx, leaf)
            obj, label = pod.pod, f"pod {pod.pod_name}"
            at = (pod.pod_field(*leaf.path),)
        else:
            on = _on_node(ctx, leaf)
            if on.node is None:
                why = on.node_failure()
                return _unknown(why) if why else FALSE
            obj, label = on.node, f"node {meta(on.node).get('name')}"
        value = dig_path(obj, leaf.path)
        if leaf.comparison is None:  # display
            return _true(f"{label}.{leaf.field} = {value!r}") if value is not None else FALSE
        if not compare(value, leaf.comparison):
            return FALSE
        return _true(f"{label}.{leaf.field} = {value!r}" if value is not None
                     else f"{label}.{leaf.field} is not set", at=at)

    def event(self, leaf: EventLeaf, ctx: ContainerContext | PodContext, pid: str
              ) -> Outcome:
        events: list[Obj] = []
        if leaf.about in ("pod", "any"):
            events += ctx.snapshot.events_about("Pod", ctx.namespace, ctx.pod_name,
                                                str(meta(ctx.pod).get("uid") or ""))
        if leaf.about in ("owner", "any"):
            for owner in workload.owner_chain(ctx.snapshot, ctx.pod):
                events += ctx.snapshot.events_about(str(owner.get("kind")), ctx.namespace,
                                                    str(meta(owner).get("name")),
                                                    str(meta(owner).get("uid") or ""))
        if leaf.about == "node" and ctx.node_name:
            events += ctx.snapshot.events_about("Node", "", ctx.node_name)
        if leaf.about == "autoscaler":
            events += autoscaler_events(ctx)
        out: list[str] = []
        for ev in events:
            if leaf.type and ev.get("type") != leaf.type:
                continue
            reason = str(ev.get("reason") or "")
            message = str(ev.get("message") or ev.get("note") or "")
            try:
                if leaf.reason is not None and self._search(leaf.reason, reason, pid) is None:
                    continue
                if leaf.message is not None and self._search(leaf.message, message,
                                                             pid) is None:
                    continue
            except TimeoutError:
                continue
            inv = ev.get("involvedObject") or ev.get("regarding") or {}
            seen = event_times(ev)
            skew = ctx.snapshot.clock_skew(seen.last)
            item = (f"event {ev.get('type', '')} {reason} on {inv.get('kind')}/{inv.get('name')}"
                    f" (x{seen.count}, last {seen.last}{skew}): {parse_line(0, message).raw}")
            if item not in out:
                out.append(item)
        if out:
            return _true(*out)
        if leaf.about == "node":
            failed = ctx.snapshot.failure(NODE_EVENTS)
            return _unknown(str(failed)) if failed and ctx.node_name else FALSE
        why = ctx.events_failure()
        return _unknown(why) if why else FALSE

    def node_condition(self, leaf: NodeConditionLeaf,
                       ctx: ContainerContext | PodContext | NodeContext) -> Outcome:
        if ctx.snapshot.static is not None:
            return _unknown(f"needs the pod's node: {ctx.snapshot.static}")
        node = ctx.node
        if node is None:
            why = ctx.node_failure()
            return _unknown(why) if why else FALSE
        for cond in (node.get("status") or {}).get("conditions") or []:
            if cond.get("type") == leaf.condition and str(cond.get("status")) == leaf.status:
                return _true(f"node {meta(node).get('name')} condition {leaf.condition}="
                             f"{leaf.status}: {cond.get('reason', '')} "
                             f"{cond.get('message', '')}".rstrip())
        return FALSE

    def fact(self, leaf: FactLeaf, ctx: Subject) -> Outcome:
        fact = ctx.fact(leaf.name)
        if not fact.known:
            return _unknown(f"fact {fact.name}: {fact.unknown}")
        if leaf.comparison is None:  # display
            return _true(fact.evidence, at=fact.at)
        other: Fact | None = None
        if leaf.comparison.fact_ref:
            other = ctx.fact(leaf.comparison.fact_ref)
            if not other.known:
                return _unknown(f"fact {other.name}: {other.unknown}")
        ref = leaf.comparison.reference(other.value) if other else None
        if not compare(fact.value, leaf.comparison, ref):
            return FALSE
        rule: list[str] = []
        if other is not None and ref is not None and ref != other.value:
            unit = REGISTRY_UNITS.get(fact.name, "")
            times = f"{leaf.comparison.times:g} x " if leaf.comparison.times != 1 else ""
            rule.append(f"estimate: {times}{other.name} + {_amount(leaf.comparison.plus, unit)}"
                        f" = {_amount(ref, unit)}")
        # The field compared is the finding's; the one it is compared with is evidence.
        return _true(fact.evidence, *([other.evidence] if other else []), *rule, at=fact.at)

    def metric(self, leaf: MetricLeaf, ctx: ContainerContext | PodContext) -> Outcome:
        failed = ctx.metrics_failure()
        if failed:
            return _unknown(failed)
        values = ctx.metric_values()
        value = values.get(leaf.name) if values is not None else None
        if value is None:
            problem = ctx.metric_problems().get(leaf.name)
            return _unknown(problem) if problem else FALSE
        if leaf.comparison is not None and not compare(value, leaf.comparison):
            return FALSE
        return _true(f"{describe(leaf.name, value)} ({ctx.metrics_source()})")


def autoscaler_events(ctx: ContainerContext | PodContext) -> list[Obj]:
    """The events about the HorizontalPodAutoscalers and KEDA ScaledObjects acting on the
    pod's workload (the HPA controller's FailedGetPodsMetric, KEDA's KEDAScalerFailed)."""
    if ctx.owner is None:
        return []
    kind, obj = ctx.owner
    name = str(meta(obj).get("name"))
    targets = [("HorizontalPodAutoscaler", h) for h in
               workload.autoscalers_for(ctx.snapshot, kind, name, ctx.namespace)]
    targets += [("ScaledObject", so) for so in
                workload.scaled_objects_for(ctx.snapshot, kind, name, ctx.namespace)]
    return [ev for k, target in targets for ev in ctx.snapshot.events_about(
        k, ctx.namespace, str(meta(target).get("name")), str(meta(target).get("uid") or ""))]


def _finding(leaf: FindingLeaf, diag: PodDiagnosis) -> Outcome:
    if leaf.severity is not None:  # any finding of at least that severity
        worst = leaf.severity
        return _true() if any(f.severity.rank <= worst.rank for f in diag.findings) else FALSE
    states = [diag.states.get(i, Truth.FALSE) for i in leaf.ids]
    if Truth.TRUE in states:
        return _true()
    if Truth.UNKNOWN in states:
        return _unknown(f"finding {', '.join(leaf.ids)} could not be evaluated")
    return FALSE


# A leaf on a context that cannot answer it is a programming error: the loader lets a
# pattern of each scope use only what that scope's context answers.
def _on_node(ctx: Subject, leaf: Condition) -> ContainerContext | PodContext | NodeContext:
    if isinstance(ctx, WorkloadContext):
        raise TypeError(f"a workload context cannot evaluate {leaf!r}")
    return ctx


def _of_pod(ctx: Subject, leaf: Condition) -> ContainerContext | PodContext:
    if not isinstance(ctx, (ContainerContext, PodContext)):
        raise TypeError(f"a {type(ctx).__name__} cannot evaluate {leaf!r}")
    return ctx


def _of_container(ctx: Subject, leaf: Condition) -> ContainerContext:
    if not isinstance(ctx, ContainerContext):
        raise TypeError(f"a {type(ctx).__name__} cannot evaluate {leaf!r}")
    return ctx


def _amount(value: float, unit: str) -> str:
    """A number of a fact's unit, as a person reads it (bytes in GiB)."""
    if unit == "bytes":
        return f"{value / 2**30:g} GiB"
    return f"{value:g} {unit}".rstrip()


def _merge(groups: Any) -> list[str]:
    out: list[str] = []
    for group in groups:
        for item in group:
            if item not in out:
                out.append(item)
    return out


def log_evidence(ctx: ContainerContext, stream: str, line: LogLine, marked: bool) -> str:
    """A log line as evidence, as the container printed it (the kubelet's time, which the
    timeline and the stall measure use, is not repeated on every line)."""
    label = "previous log" if stream == "previous" else "log"
    marker = ">" if marked else " "
    return f"{label} ({ctx.name}) line {line.number}{marker} {without_kubelet_time(line.raw)}"


def compare(value: Any, cmp: Comparison, ref: Any = None) -> bool:
    """Does ``value`` satisfy the comparison? A list value: does any element (none, for not_*)."""
    op = cmp.op
    if op == "exists":
        present = value is not None and value != []
        return present is bool(cmp.value)
    if isinstance(value, (list, tuple)):
        if op in ("not_equals", "not_in"):
            positive = Comparison("equals" if op == "not_equals" else "in", cmp.value)
            return not any(compare(v, positive) for v in value)
        return any(compare(v, cmp, ref) for v in value)
    if value is None:
        return op in ("not_equals", "not_in")
    want = ref if cmp.fact_ref else cmp.value
    if op == "equals":
        return _same(value, want)
    if op == "not_equals":
        return not _same(value, want)
    if op == "in":
        return any(_same(value, w) for w in want)
    if op == "not_in":
        return not any(_same(value, w) for w in want)
    if op == "regex":
        try:
            return bool(want.search(str(value), timeout=REGEX_TIMEOUT_S) is not None)
        except TimeoutError:
            return False
    number = _number(value)
    if number is None:
        return False
    if op == "between":
        low, high = want
        return bool(low <= number <= high)
    limit = _number(want)
    if limit is None:
        return False
    checks: dict[str, Callable[[float, float], bool]] = {
        "gt": lambda a, b: a > b, "gte": lambda a, b: a >= b,
        "lt": lambda a, b: a < b, "lte": lambda a, b: a <= b,
    }
    return checks[op](number, limit)


def _same(value: Any, want: Any) -> bool:
    if isinstance(value, bool) or isinstance(want, bool):
        return str(value).lower() == str(want).lower()
    return bool(value == want or str(value) == str(want))


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


# crash_window_seconds of patterns/checklist.yaml: how long before a crash's last error
# line its cause may have been printed.
CRASH_WINDOW_SETTING = "crash_window_seconds"


def root_cause(ctx: ContainerContext, leaf: RootCauseLeaf) -> list[str]:
    """The line of the last crash that states its cause (``triage.vllm.rootcause``: the
    first in time of the best kind, an error's message before an aftermath before a
    wrapper before a warning), with the other lines of its message, then the last lines
    of the log; only the last lines when no line has the shape of an error.

    INFO and DEBUG lines are never the cause (they quote exception names in argument
    dumps and advice); a wrapper (vLLM's, or one of ``leaf.skip``) still beats the bare
    tail, because it usually repeats what failed.
    """
    for stream in ("previous", "current"):
        index = ctx.log(stream)
        if index is None or index.empty:
            continue
        tail = index.tail[-leaf.lines:]
        found = rootcause.crash_lines(index, stream, leaf.skip,
                                      float(ctx.setting(CRASH_WINDOW_SETTING)),
                                      linetime.parse_time(ctx.snapshot.collected_at))
        cause = rootcause.first_cause(found)
        if cause is None:
            return [log_evidence(ctx, stream, ln, marked=False) for ln in tail]
        message = [c.line for c in rootcause.same_message(cause, found)]
        shown = {cause.line.number, *(ln.number for ln in message)}
        return [log_evidence(ctx, stream, cause.line, marked=True),
                *(log_evidence(ctx, stream, ln, marked=False) for ln in message),
                *(log_evidence(ctx, stream, ln, marked=False) for ln in tail
                  if ln.number not in shown)]
    return ["no log text could be read for this container"]


# The tool's own evidence format for a log line (log_evidence): which log, the line's
# number, ">" on the line a rule matched, the line as printed.
_LOG_ITEM = lazyregex.compile(r"^((?:previous log|log) \([^)]*\)) line (\d+)([> ]) (.*)$",
                              regex.DOTALL)


def lead_with_cause(evidence: list[str], decided: int | None = None) -> list[str]:
    """A finding's evidence with the line that states the cause first: of the log lines
    its rule matched (the first ``decided`` items are what made it true, the rest what its
    ``show`` adds), the best kind and then the first printed (``rootcause``), followed by
    the lines shown around it; the rest in their order. When the rule itself matched no
    log line, a shown one (a fallback's root-cause line) leads, unless the rule's proof is
    an event or a condition: then only a log line that states an error goes before it.
    Evidence that quotes no log line is left as it is."""
    decided = len(evidence) if decided is None else decided
    own = _marked_lines(evidence[:decided])
    shown = _marked_lines(evidence, decided)
    if any(_SENTENCE.search(e) for e in evidence[:decided]):
        # an event or a condition is the rule's proof; a log line leads it only when it
        # states an error (a probe kill's event before the shard line it stopped at)
        own = [(c, i) for c, i in own + shown if c.says < rootcause.Says.PLAIN]
        return _place(evidence, own) if own else evidence
    # the rule's own line, unless a shown one states the cause better (engine-died's
    # wrapper line before the root-cause line its show adds)
    best_own = rootcause.first_cause((c for c, _ in own), _STREAMS)
    best_shown = rootcause.first_cause((c for c, _ in shown), _STREAMS)
    if best_shown is not None and (best_own is None or best_shown.says < best_own.says):
        return _place(evidence, shown)
    return _place(evidence, own) if own else evidence


def _marked_lines(evidence: list[str], start: int = 0) -> list[tuple[rootcause.Cause, int]]:
    """The matched log lines of ``evidence`` (from ``start``), each with what it says."""
    marked: list[tuple[rootcause.Cause, int]] = []
    for i, item in enumerate(evidence):
        if i < start:
            continue
        m = _LOG_ITEM.match(item)
        if m is not None and m.group(3) == ">":
            stream = "previous" if m.group(1).startswith("previous log") else "current"
            line = parse_line(int(m.group(2)), m.group(4))
            marked.append((rootcause.Cause(stream, line, rootcause.says(line)), i))
    return marked


# The log streams in the order their runs happened.
_STREAMS = ("previous", "current")
# A finding's own proof that is not a log line: an event, a pod condition's message.
_SENTENCE = lazyregex.compile(r"^event |^pod \S+ condition \w+=")


def _place(evidence: list[str], marked: list[tuple[rootcause.Cause, int]]) -> list[str]:
    """``evidence`` led by the best of the ``marked`` log lines and the lines around it."""
    best = rootcause.first_cause((c for c, _ in marked), _STREAMS)
    assert best is not None  # marked is not empty
    lead = next(i for c, i in marked if c is best)
    # its context: the unmarked lines of the same log right around it
    label = str(_LOG_ITEM.match(evidence[lead]).group(1))
    first = last = lead
    while first > 0 and _context_of(evidence[first - 1], label):
        first -= 1
    while last + 1 < len(evidence) and _context_of(evidence[last + 1], label):
        last += 1
    lead_item, around = _message_of(evidence, lead, best, first, last)
    rest = [e for i, e in enumerate(evidence) if not first <= i <= last]
    # a frame or a source echo a rule also matched (the line of code that raised the
    # error quotes its words), whether the rule's own or a shown line leads, is shown as
    # the context it is, not as proof
    noise = {evidence[i] for c, i in _marked_lines(evidence)
             if c.says is rootcause.Says.NOISE and i != lead}
    return _once([lead_item, *(_remark(e, " ") if e in noise else e
                               for e in [*around, *rest])])


def _once(evidence: list[str]) -> list[str]:
    """Each log line once: a line shown as the context of one match and matched by another
    condition stays where it came first, as proof if either marked it."""
    out: list[str] = []
    at: dict[tuple[str, str], int] = {}
    for item in evidence:
        m = _LOG_ITEM.match(item)
        if m is None:
            out.append(item)
            continue
        key = (m.group(1), m.group(2))
        if key not in at:
            at[key] = len(out)
            out.append(item)
        elif m.group(3) == ">":
            out[at[key]] = _remark(out[at[key]], ">")
    return out


def _message_of(evidence: list[str], lead: int, best: rootcause.Cause, first: int, last: int
                ) -> tuple[str, list[str]]:
    """The line that leads and the lines around it. A wrapper whose message goes on in the
    lines right under it (pydantic's "1 validation error for X" above its "Value error,
    ...", "terminate called after throwing" above C++'s "what(): ...") gives the lead to
    the first of them that states the cause, which is then the marked line."""
    around = [evidence[i] for i in range(first, last + 1) if i != lead]
    if best.says is not rootcause.Says.POINTER:
        return evidence[lead], around
    for i in range(lead + 1, last + 1):
        m = _LOG_ITEM.match(evidence[i])
        number = int(m.group(2)) if m else 0
        if m is None or not 0 < number - best.line.number <= 3:
            continue
        if rootcause.says(parse_line(number, m.group(4))) is rootcause.Says.CAUSE:
            unmarked = _remark(evidence[lead], " ")
            return _remark(evidence[i], ">"), [unmarked if j == lead else evidence[j]
                                               for j in range(first, last + 1) if j != i]
    return evidence[lead], around


def _remark(item: str, marker: str) -> str:
    """A log evidence line with its marker set (">" the proving line, " " context)."""
    m = _LOG_ITEM.match(item)
    return f"{m.group(1)} line {m.group(2)}{marker} {m.group(4)}" if m else item


def _context_of(item: str, label: str) -> bool:
    m = _LOG_ITEM.match(item)
    return m is not None and m.group(3) == " " and m.group(1) == label


@functools.lru_cache(maxsize=4096)
def log_query(leaf: LogLeaf) -> Query:
    """The engine's query for a log leaf (the same object every time it is asked for)."""
    levels = None if set(leaf.levels) >= set(LOG_LEVELS) else frozenset(leaf.levels)
    return Query(leaf.regex, levels)


def queries_for(patterns: tuple[Pattern, ...]) -> QuerySet:
    """Every log regex the patterns use, for one pass over each log."""
    out = QuerySet()
    out.add(rootcause.ERROR_LINES, rootcause.ERROR_LINES_KEPT)
    out.add(rootcause.SERVING)
    for p in patterns:
        conds: list[Condition] = [p.when, *p.show]
        if p.escalate is not None:
            conds.append(p.escalate.when)
        if p.warn_when is not None:
            conds.append(p.warn_when)
        for cond in conds:
            for leaf in walk(cond, into_not=True):
                if isinstance(leaf, LogLeaf) and not leaf.tail:
                    out.add(log_query(leaf))
    return out


# --- running a pattern set over pods ------------------------------------------


def _state(outcomes: list[Outcome]) -> Truth:
    if any(o.true for o in outcomes):
        return Truth.TRUE
    if any(o.truth is Truth.UNKNOWN for o in outcomes):
        return Truth.UNKNOWN
    return Truth.FALSE


def _evidence(evaluator: Evaluator, pattern: Pattern, ctx: Subject,
              diag: PodDiagnosis, outcome: Outcome) -> list[str]:
    """A finding's evidence: what made its rule true, then what its ``show`` leaves add."""
    evidence = list(outcome.evidence)
    for extra in pattern.show:
        shown = evaluator.evaluate(extra, ctx, diag, pattern.id)
        if shown.true:
            evidence += [e for e in shown.evidence if e not in evidence]
    return lead_with_cause(evidence, len(outcome.evidence))


def subjects(pattern: Pattern, diag: PodDiagnosis) -> list[tuple[Subject, str]]:
    """What the pattern is evaluated on for this pod, each with the container its finding
    is raised in: every triaged container, or (a pod, workload or node pattern) that
    scope's context once, the finding in the pod's first triaged container."""
    if pattern.scope == "container" or not diag.contexts:
        return [(ctx, ctx.name) for ctx in diag.contexts]
    first = diag.contexts[0]
    pod = first.pod_context
    around: Subject = pod.workload_context if pattern.scope == "workload" else \
        pod.node_context if pattern.scope == "node" else pod
    return [(around, first.name)]


def _outcome(evaluator: Evaluator, cond: Condition, pattern: Pattern, ctx: Subject,
             diag: PodDiagnosis) -> Outcome:
    """``cond`` on ``ctx``; a workload's or node's outcome is worked out once for all its
    pods (what they read is the same), a container's or pod's every time."""
    if not isinstance(ctx, (NodeContext, WorkloadContext)):
        return evaluator.evaluate(cond, ctx, diag, pattern.id)
    key = ("outcome", pattern.id, id(cond))
    found: Outcome | None = ctx.memo.get(key)
    if found is None:
        found = ctx.memo[key] = evaluator.evaluate(cond, ctx, diag, pattern.id)
    return found


def apply(evaluator: Evaluator, pattern: Pattern, diag: PodDiagnosis) -> None:
    """Evaluate one pattern on every triaged container of the pod (or once, on the pod,
    workload or node it is about)."""
    outcomes: list[Outcome] = []
    for ctx, container in subjects(pattern, diag):
        outcome = _outcome(evaluator, pattern.when, pattern, ctx, diag)
        outcomes.append(outcome)
        if outcome.truth is Truth.UNKNOWN:
            diag.unevaluated.append(Unevaluated(pattern.id, pattern.step, container,
                                                outcome.reason))
            continue
        if not outcome.true:
            continue
        evidence = _evidence(evaluator, pattern, ctx, diag, outcome)
        existing = next((i for i, f in enumerate(diag.findings) if f.id == pattern.id), None)
        if existing is not None:
            old = diag.findings[existing]
            merged = old.evidence + tuple(e for e in evidence if e not in old.evidence)
            diag.findings[existing] = dataclasses.replace(
                old, evidence=merged, at=merge_locations([old.at, outcome.at]))
        else:
            diag.findings.append(Finding(
                id=pattern.id, severity=pattern.severity, title=pattern.title, step=pattern.step,
                container=container, evidence=tuple(evidence), remediation=pattern.remediation,
                fallback=pattern.fallback, answers_step=pattern.answers_step,
                at=outcome.at))
    diag.states[pattern.id] = _state(outcomes)


def escalate(evaluator: Evaluator, patterns: dict[str, Pattern], diag: PodDiagnosis) -> None:
    """Apply each raised finding's ``escalate`` rule, in the container that raised it."""
    for i, f in enumerate(diag.findings):
        rule = patterns[f.id].escalate if f.id in patterns else None
        if rule is None:
            continue
        ctx = next((c for c in diag.contexts if c.name == f.container), None)
        if ctx is not None and evaluator.evaluate(rule.when, ctx, diag, f.id).true:
            diag.findings[i] = dataclasses.replace(f, escalated=rule.verdict,
                                                   escalation_note=rule.note)


def diagnose(evaluator: Evaluator, patterns: tuple[Pattern, ...], diag: PodDiagnosis,
             raised: dict[str, Severity] | None = None) -> None:
    """All patterns on one pod: signatures first, then yields, the warning forms
    (``warn_when``), then the fallbacks.

    ``raised`` are findings taken as already raised, with their severity
    (whole-rule examples use it).
    """
    raised = raised or {}
    by_id = {p.id: p for p in patterns}
    for fid in raised:
        diag.states[fid] = Truth.TRUE
    for pattern in patterns:
        if not pattern.fallback:
            apply(evaluator, pattern, diag)
    found = {f.id for f in diag.findings} | set(raised)
    diag.findings = [f for f in diag.findings if not set(by_id[f.id].yields_to) & found]
    explain(by_id, diag, raised)
    warn_when(evaluator, patterns, diag)
    critical = (any(f.severity is Severity.CRITICAL for f in diag.findings)
                or Severity.CRITICAL in raised.values())
    for pattern in patterns:
        if pattern.fallback:
            if critical:
                diag.states[pattern.id] = Truth.FALSE
            else:
                apply(evaluator, pattern, diag)
    if not critical:  # a fallback's milder form, as its critical form, only then
        warn_when(evaluator, patterns, diag, fallback=True)
    escalate(evaluator, by_id, diag)
    diag.findings.sort(key=lambda f: (f.severity.rank, f.step))


def explain(by_id: dict[str, Pattern], diag: PodDiagnosis, raised: dict[str, Severity]) -> None:
    """Generic findings (``explained_by``) stand back for a specific one on the same pod.

    A finding is specific when its pattern has no ``explained_by``; a generic
    finding is dropped when a specific one of at least the named severity was
    raised, and the specific one (the first, most severe) says what it explains,
    so the one crash is reported once, by its most precise name. Generic
    findings never explain each other: two of them both stay.
    """
    def generic(fid: str) -> bool:
        return fid in by_id and by_id[fid].explained_by is not None

    specific = [(f.severity, f.id) for f in diag.findings if not generic(f.id)]
    specific += [(sev, fid) for fid, sev in raised.items() if not generic(fid)]
    kept: list[Finding] = []
    explained: list[Finding] = []
    for f in diag.findings:
        level = by_id[f.id].explained_by if f.id in by_id else None
        # A specific finding whose rule reads this one (a cause built on its consequence:
        # shm-too-small on a start stalled at NCCL set-up) stands beside it, not instead.
        if level is not None and any(sev.rank <= level.rank and f.id not in _reads(by_id, sid)
                                     for sev, sid in specific):
            explained.append(f)
            diag.states[f.id] = Truth.FALSE
        else:
            kept.append(f)
    if explained:
        lead = min((i for i, f in enumerate(kept) if not generic(f.id)),
                   key=lambda i: kept[i].severity.rank, default=None)
        if lead is not None:
            notes = tuple(f"explains {f.id} ({f.title})"
                          + (f": {_marked(f.evidence)}" if f.evidence else "")
                          for f in explained)
            kept[lead] = dataclasses.replace(kept[lead], evidence=kept[lead].evidence + notes)
    diag.findings = kept


def _reads(by_id: dict[str, Pattern], pid: str) -> set[str]:
    """The finding ids a pattern's rule reads (its ``finding`` leaves)."""
    pattern = by_id.get(pid)
    if pattern is None:
        return set()
    return {i for leaf in walk(pattern.when, into_not=True) if isinstance(leaf, FindingLeaf)
            for i in leaf.ids}


_MARKED = lazyregex.compile(r" line \d+> ")


def _marked(evidence: tuple[str, ...]) -> str:
    """The line a finding's evidence marks (a log match), else its first line."""
    return next((e for e in evidence if _MARKED.search(e)), evidence[0])


def warn_when(evaluator: Evaluator, patterns: tuple[Pattern, ...], diag: PodDiagnosis,
              fallback: bool = False) -> None:
    """The milder form of a critical finding: a pattern whose ``when`` did not hold but whose
    ``warn_when`` does raises the same id as a warning (a finding id is a public contract,
    so an early sign cannot have an id of its own). Patterns that refer to the finding
    with a ``finding`` leaf see only its critical form; ``escalate`` does not apply.
    A fallback's warning form is tried with the fallbacks (``fallback=True``): after them,
    only when no critical finding explains the pod, and not when a known signature quotes
    the previous log (a crash it explains is not one of no known signature)."""
    raised = {f.id for f in diag.findings}
    if fallback and any(not f.fallback and _quotes_previous_log(f) for f in diag.findings):
        return  # a known signature already says why the previous run crashed
    for pattern in patterns:
        if pattern.warn_when is None or diag.states.get(pattern.id) is Truth.TRUE \
                or pattern.fallback is not fallback:
            continue
        if pattern.id in raised or set(pattern.yields_to) & raised:
            continue
        for ctx, container in subjects(pattern, diag):
            outcome = _outcome(evaluator, pattern.warn_when, pattern, ctx, diag)
            if outcome.truth is Truth.UNKNOWN:
                if diag.states.get(pattern.id, Truth.FALSE) is Truth.FALSE:
                    diag.unevaluated.append(Unevaluated(pattern.id, pattern.step, container,
                                                        outcome.reason))
                    diag.states[pattern.id] = Truth.UNKNOWN
                continue
            if not outcome.true:
                continue
            evidence = _evidence(evaluator, pattern, ctx, diag, outcome)
            diag.findings.append(Finding(
                id=pattern.id, severity=Severity.WARNING, title=pattern.title,
                step=pattern.step, container=container, evidence=tuple(evidence),
                remediation=pattern.remediation, answers_step=pattern.answers_step,
                at=outcome.at))
            diag.states[pattern.id] = Truth.TRUE
            raised.add(pattern.id)
            break  # one finding per pod, as for the critical form's first container


def _quotes_previous_log(f: Finding) -> bool:
    """The finding rests on a line of the previous container's log (its first evidence line
    is one its rule matched there: ``lead_with_cause`` put it first)."""
    return bool(f.evidence) and f.evidence[0].startswith("previous log (") and \
        _MARKED.search(f.evidence[0][:160]) is not None


def classify(snapshot: Snapshot, patterns: tuple[Pattern, ...],
             contexts: Callable[[Obj], list[ContainerContext]],
             arrivals: Iterable[Obj] | None = None,
             settle: Callable[[PodDiagnosis], None] | None = None
             ) -> tuple[list[PodDiagnosis], list[str]]:
    """Every triaged pod of the snapshot, diagnosed, in the snapshot's order.

    ``arrivals`` yields the pods as their reads come in (a live scan); each is
    diagnosed then and its log bytes released, so memory holds only the logs
    still being read. Without it, the snapshot's pods in order. ``settle`` is
    called with each pod once diagnosed, before its logs are released: what
    the report and the steps need of it is kept, the rest dropped.
    """
    order = {id(pod): i for i, pod in enumerate(snapshot.pods())}
    by_id = {p.id: p for p in patterns}
    done: dict[int, tuple[PodDiagnosis, list[str]]] = {}
    for pod in snapshot.pods() if arrivals is None else arrivals:
        warnings: list[str] = []
        diag = PodDiagnosis(pod, contexts(pod))
        evaluator = Evaluator(warnings)
        diagnose(evaluator, patterns, diag)
        # Fixes read the same facts and logs: computed before the logs are released.
        fixes.attach(by_id, diag, lambda cond, ctx, f, d=diag, e=evaluator:
                     e.evaluate(cond, ctx, d, f.id).true)
        if settle is not None:
            settle(diag)
        for ctx in diag.contexts:
            ctx.release_logs()
        done[order[id(pod)]] = (diag, warnings)
    # Warnings in the snapshot's order, each once, whatever order the pods came in.
    merged: list[str] = []
    for _, (_, warnings) in sorted(done.items()):
        merged += [w for w in warnings if w not in merged]
    return [diag for _, (diag, _) in sorted(done.items())], merged


def verdict_of(f: Finding) -> Verdict | None:
    """The verdict a finding gives its step: its escalation, else by severity; fallbacks none."""
    if f.fallback:
        return None
    return f.escalated or f.severity.verdict
