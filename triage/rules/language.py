"""The pattern language: conditions, comparisons, whole-rule examples, as typed objects.

A pattern file names a finding (id, severity, title, checklist step,
remediation) and a condition over what was collected. Conditions are a small
tree: ``any`` / ``all`` / ``not`` over leaves, one leaf kind per kind of
evidence (``log``, ``container``, ``pod``, ``node``, ``event``, ``fact``,
``metric``, ``finding``, ``root_cause``). ``triage.rules.loader`` builds
these from YAML and checks every name; ``triage.rules.evaluate`` runs them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, overload

from triage.fixes.language import FixCase
from triage.results import Severity, Verdict

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL", "NONE")
# By default a log leaf ignores lines that vLLM itself logged at INFO/DEBUG:
# advisory lines ("If out-of-memory error occurs during cudagraph capture")
# and argument dumps are not crashes.
DEFAULT_LOG_LEVELS = ("WARNING", "ERROR", "CRITICAL", "NONE")
STREAMS = ("current", "previous", "any")
# What a pattern is about (``scope:``). A container pattern is evaluated on each triaged
# container; a pod, workload or node pattern once per pod, workload or node, on that
# scope's context, and raises its finding on each triaged pod of it; a cluster pattern
# joins pods after every pod is diagnosed (a cause, ``CausePattern``).
PATTERN_SCOPES = ("container", "pod", "workload", "node", "cluster")
E = TypeVar("E")  # a whole-rule example
NUMERIC_OPS = ("gt", "gte", "lt", "lte")
COMPARISONS = ("equals", "not_equals", "in", "not_in", "regex", *NUMERIC_OPS, "between",
               "exists")
# Whose events an event leaf reads: the pod's, its owners' (ReplicaSet, Deployment, ...),
# both, its node's (GPU health monitors record warnings there) or its workload's
# autoscalers' (HorizontalPodAutoscaler, KEDA ScaledObject).
EVENT_ABOUT = ("pod", "owner", "any", "node", "autoscaler")
# How a cause groups the pods whose failure is the cause: by workload (said when pods of
# other workloads suffer it, ``of``), or by node (said of the pods of one node together).
CAUSE_GROUPS = ("workload", "node")


@dataclass(frozen=True)
class Comparison:
    """How a leaf's value is compared (an operator and a value)."""

    op: str
    value: Any
    # Compare against another fact's value instead of a constant: ``lt: {fact: NAME}``.
    fact_ref: str | None = None
    # An estimate's rule over that fact: ``lt: {fact: model_weights_gib, times: 4, plus: 60}``
    # compares with 4 x the fact + 60 (the pattern holds the rule, the fact the figure).
    times: float = 1.0
    plus: float = 0.0

    def reference(self, value: Any) -> Any:
        """The value compared against, from the referenced fact's value."""
        if self.times == 1.0 and self.plus == 0.0:
            return value
        try:
            return float(value) * self.times + self.plus if value is not None else None
        except (TypeError, ValueError):
            return None


@dataclass(frozen=True)
class LogLeaf:
    """A log regex, on a stream and at levels."""

    regex: Any  # compiled regex.Pattern
    stream: str = "any"
    levels: tuple[str, ...] = DEFAULT_LOG_LEVELS
    tail: int | None = None  # only the last N lines of the stream
    context: int = 1


@dataclass(frozen=True)
class FieldLeaf:
    """A field of a container, pod or node."""

    scope: str  # "container" | "pod" | "node"
    field: str  # as written: lastState.terminated.reason, metadata.labels["nvidia.com/gpu"]
    path: tuple[str, ...]  # the keys to follow
    comparison: Comparison | None  # None: display the value when it is set


@dataclass(frozen=True)
class EventLeaf:
    """A Kubernetes event by reason, message and type."""

    reason: Any | None
    message: Any | None
    type: str | None
    about: str = "pod"


@dataclass(frozen=True)
class NodeConditionLeaf:
    """A node condition and its status."""

    condition: str
    status: str = "True"


@dataclass(frozen=True)
class FactLeaf:
    """A fact, compared or displayed."""

    name: str
    comparison: Comparison | None  # None: display the fact


@dataclass(frozen=True)
class MetricLeaf:
    """A derived metric, compared or displayed."""

    name: str  # a derived metric, see triage.vllm.metrics.METRICS
    comparison: Comparison | None  # None: display the value when /metrics has it


@dataclass(frozen=True)
class FindingLeaf:
    """True when one of these findings was raised for the same pod, or (``severity``) any
    finding of at least that severity."""

    ids: tuple[str, ...]
    severity: Severity | None = None


@dataclass(frozen=True)
class RootCauseLeaf:
    """Always true when a log exists: shows the last error that is not a wrapper."""

    skip: tuple[Any, ...]
    lines: int = 8


@dataclass(frozen=True)
class AnyOf:
    """True when one child is."""

    children: tuple[Condition, ...]


@dataclass(frozen=True)
class AllOf:
    """True when every child is."""

    children: tuple[Condition, ...]


@dataclass(frozen=True)
class Not:
    """The child's truth, negated."""

    child: Condition


Condition = (
    AnyOf | AllOf | Not | LogLeaf | FieldLeaf | EventLeaf | NodeConditionLeaf | FactLeaf
    | MetricLeaf | FindingLeaf | RootCauseLeaf
)


@dataclass(frozen=True)
class Escalation:
    """When ``when`` holds for the container that raised the finding, its step says ``verdict``."""

    when: Condition
    verdict: Verdict
    note: str


@dataclass(frozen=True)
class Example:
    """A whole-rule example: a small snapshot and whether the pattern reports on it."""

    name: str
    reports: bool | None  # None: the rule cannot be evaluated on this input (unknown)
    log: str | None = None
    previous_log: str | None = None
    status: dict[str, Any] = field(default_factory=dict)  # containerStatus keys
    pod: dict[str, Any] = field(default_factory=dict)  # deep-merged into the example pod
    container: dict[str, Any] = field(default_factory=dict)  # deep-merged into its container
    events: tuple[dict[str, Any], ...] = ()
    node: dict[str, Any] = field(default_factory=dict)  # deep-merged into the example node
    objects: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)  # given facts, not computed
    metrics: dict[str, float] = field(default_factory=dict)  # given derived metrics
    findings: tuple[str, ...] = ()  # findings already raised on the pod
    unread: tuple[str, ...] = ()  # kinds whose read failed (logs, events, metrics, ...)
    severity: str | None = None  # with reports: true, the severity it must be raised with


class Deferred(Sequence[E]):
    """A shipped pattern's whole-rule examples, read from its file when first asked for
    (``vllm-triage patterns --test``, the tests): a run that only triages never reads them,
    and they are most of the files' text."""

    __slots__ = ("_items", "_read")

    def __init__(self, read: Callable[[], tuple[E, ...]]) -> None:
        self._read: Callable[[], tuple[E, ...]] | None = read
        self._items: tuple[E, ...] = ()

    def _all(self) -> tuple[E, ...]:
        if self._read is not None:
            self._items, self._read = self._read(), None
        return self._items

    @overload
    def __getitem__(self, index: int) -> E: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[E]: ...
    def __getitem__(self, index: int | slice) -> E | Sequence[E]:
        return self._all()[index]

    def __len__(self) -> int:
        return len(self._all())

    def __iter__(self) -> Iterator[E]:
        return iter(self._all())

    def __eq__(self, other: object) -> bool:
        return self._all() == (tuple(other) if isinstance(other, Sequence) else other)

    def __hash__(self) -> int:
        return hash(self._all())

    def __repr__(self) -> str:
        return repr(self._all())


# A dataclass: callers (the tests) derive variants with dataclasses.replace.
@dataclass(frozen=True)
class Pattern:
    """One finding pattern, as loaded from its file."""

    id: str
    severity: Severity
    title: str
    step: int
    remediation: str
    when: Condition
    source: str
    summary: str = ""
    show: tuple[Condition, ...] = ()
    fallback: bool = False
    # Findings this one stands back for: when any of them is found for the
    # same pod, this one is dropped (a more specific explanation won).
    yields_to: tuple[str, ...] = ()
    escalate: Escalation | None = None
    examples: Sequence[Example] = ()  # a Deferred for a shipped file
    references: tuple[str, ...] = ()
    # The milder form of a critical finding under the same id: when ``when``
    # does not hold but this does, the finding is raised as a warning
    # (``disk-full``: a disk "over 95% full" that has not failed a write yet).
    warn_when: Condition | None = None
    # A generic finding (engine-died, startup-stalled) stands back when a more
    # specific one of at least this severity is raised on the same pod: the
    # specific one explains the same crash and leads (see ``diagnose``).
    explained_by: Severity | None = None
    # How to fix it with the pod's own numbers: the first case that holds and
    # whose facts are known; else the remediation, saying what was not known.
    fix: tuple[FixCase, ...] = ()
    # False: the finding is not what its step asks about (a port clash under
    # step 2 "CUDA OOM"); it is shown as its own row beside that step and
    # leaves the step's verdict to the step's own question.
    answers_step: bool = True
    # What it is about: evaluated on each triaged container (the default), or once per
    # pod, workload or node (PATTERN_SCOPES).
    scope: str = "container"

    def finding_refs(self) -> set[str]:
        """Finding ids this pattern's conditions look at (it is evaluated after them)."""
        conds: list[Condition] = [self.when, *self.show]
        if self.escalate is not None:
            conds.append(self.escalate.when)
        if self.warn_when is not None:
            conds.append(self.warn_when)
        conds += [case.when for case in self.fix if case.when is not None]
        found: set[str] = set()
        for cond in conds:
            for leaf in walk(cond, into_not=True):
                if isinstance(leaf, FindingLeaf):
                    found.update(leaf.ids)
        return found


def walk(cond: Condition, into_not: bool = False) -> list[Condition]:
    """Every node of a condition tree, depth first."""
    out: list[Condition] = [cond]
    if isinstance(cond, (AnyOf, AllOf)):
        for child in cond.children:
            out += walk(child, into_not)
    elif isinstance(cond, Not) and into_not:
        out += walk(cond.child, into_not)
    return out


@dataclass(frozen=True)
class CauseSide:
    """One end of a cause: the pods for which ``pods`` holds, and which of their findings'
    cards carry the cause's sentence (these ids, or every finding of ``severity`` or
    worse)."""

    pods: Condition
    finding_ids: tuple[str, ...] = ()
    severity: Severity | None = None

    def carries(self, finding_id: str, severity: Severity) -> bool:
        return finding_id in self.finding_ids or (
            self.severity is not None and severity.rank <= self.severity.rank)


@dataclass(frozen=True)
class CauseExample:
    """A whole-rule example of a cause: nodes and pods in short form, and whether the cause
    is said (``says``: the exact sentence, when given)."""

    name: str
    reports: bool
    pods: tuple[dict[str, Any], ...] = ()
    nodes: tuple[dict[str, Any], ...] = ()
    says: str | None = None


@dataclass(frozen=True)
class CausePattern:
    """A cluster-scope pattern: a failure of some pods (``by``) that explains what other
    pods suffer (``of``). Evaluated after every pod is diagnosed; its sentence (the first
    of ``says`` that holds, filled with the cluster's facts and what the two sides hold)
    is added to the cards of the findings it joins, on both sides."""

    id: str
    title: str
    by: CauseSide
    of: CauseSide | None  # None for a cause of pods that share a node (``same: node``)
    says: tuple[FixCase, ...]
    source: str
    summary: str = ""
    references: tuple[str, ...] = ()
    examples: Sequence[CauseExample] = ()
    same: str = "workload"  # CAUSE_GROUPS: how the ``by`` pods are grouped

    def finding_refs(self) -> set[str]:
        sides = [s for s in (self.by, self.of) if s is not None]
        found = {i for s in sides for i in s.finding_ids}
        for cond in (s.pods for s in sides):
            for leaf in walk(cond, into_not=True):
                if isinstance(leaf, FindingLeaf):
                    found.update(leaf.ids)
        return found
