"""Cluster patterns: causes that join pods, evaluated once every pod is diagnosed.

A cause (``patterns/*.yaml`` with ``scope: cluster``, ``triage.rules.language.
CausePattern``) has two sides, each a condition on a pod: the pods whose failure is the
cause (``by``) and the pods that suffer it (``of``). Every pod of the snapshot is tried
(a pod that is not a vLLM server can hold what vLLM pods wait for); the ``by`` pods are
grouped by workload, and for each group that has ``of`` pods in other workloads the
cause's sentence is filled from the cluster's facts and what the two sides hold
(``by_workload``, ``by_pods``, the sum of a pod fact as ``by_<fact>``, ``of_workloads``,
...). The sentence is then said on the cards of the findings both sides carry: the
report joins the two where an engineer reads either.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from triage.facts import REGISTRY, PodContext, Scopes
from triage.fixes.language import FixCase, Missing, render_text, template_names
from triage.kube import workload
from triage.results import Finding
from triage.rules.evaluate import Evaluator, PodDiagnosis
from triage.rules.language import CausePattern, CauseSide, FactLeaf, walk
from triage.snapshot import Obj, meta


@dataclass(frozen=True)
class CauseLink:
    """One sentence of a cause, said on the card of one finding of one workload."""

    cause: str  # the cause pattern's id
    namespace: str
    workload: str  # "Kind/name", as the cards name it
    finding: str
    text: str


@dataclass
class _Pod:
    pod: Obj
    context: PodContext
    diagnosis: PodDiagnosis
    workload: str

    @property
    def namespace(self) -> str:
        return str(meta(self.pod).get("namespace", ""))

    @property
    def node(self) -> str:
        return str(workload.pod_spec(self.pod).get("nodeName") or "")


def facts_read(causes: Iterable[CausePattern]) -> set[str]:
    """The pod facts the causes read (in their sides' conditions and, as by_FACT or
    of_FACT, in their sentences): kept when a pod is settled, since the causes are joined
    after every pod's logs are dropped."""
    names: set[str] = set()
    for cause in causes:
        for side in (cause.by, cause.of):
            if side is not None:
                names |= {leaf.name for leaf in walk(side.pods, into_not=True)
                          if isinstance(leaf, FactLeaf)}
        for case in cause.says:
            said = template_names(case.text) | {n for _, e in case.values
                                               for n in _expression_names(e)}
            names |= {n.split("_", 1)[1] for n in said if n.startswith(("by_", "of_"))}
    return {n for n in names if n in REGISTRY and REGISTRY[n].scope == "pod"}


def _expression_names(expr: Any) -> frozenset[str]:
    parsed = expr.parsed() if hasattr(expr, "parsed") else expr
    return frozenset(getattr(parsed, "names", frozenset()))


def join(causes: Iterable[CausePattern], scopes: Scopes, diagnoses: list[PodDiagnosis],
         warnings: list[str]) -> list[CauseLink]:
    """Every cause's sentences, on the findings they join, in the snapshot's pod order."""
    causes = list(causes)
    if not causes:
        return []
    pods = _pods(scopes, diagnoses)
    evaluator = Evaluator(warnings)
    links: list[CauseLink] = []
    for cause in causes:
        for link in _links(cause, pods, scopes, evaluator):
            if link not in links:
                links.append(link)
    return links


def _pods(scopes: Scopes, diagnoses: list[PodDiagnosis]) -> list[_Pod]:
    """Every pod of the snapshot with its context and diagnosis (an empty one for a pod
    that was not triaged: it has facts, no findings)."""
    diagnosed = {(d.namespace, d.name): d for d in diagnoses}
    out: list[_Pod] = []
    for pod in scopes.snapshot.pods():
        key = (str(meta(pod).get("namespace", "")), str(meta(pod).get("name", "")))
        diag = diagnosed.get(key)
        if diag is not None and diag.contexts:
            context = diag.contexts[0].pod_context
        else:
            diag, context = PodDiagnosis(pod, []), scopes.pod(pod)
        label = workload.owner_label(scopes.snapshot, pod) or f"Pod/{key[1]}"
        out.append(_Pod(pod, context, diag, label))
    return out


def _links(cause: CausePattern, pods: list[_Pod], scopes: Scopes,
           evaluator: Evaluator) -> list[CauseLink]:
    def holds(side: CauseSide, pod: _Pod) -> bool:
        return evaluator.evaluate(side.pods, pod.context, pod.diagnosis, cause.id).true

    groups: dict[str, list[_Pod]] = {}
    for pod in pods:
        key = pod.workload if cause.same == "workload" else pod.node
        if key and holds(cause.by, pod):
            groups.setdefault(key, []).append(pod)
    out: list[CauseLink] = []
    if cause.of is None:  # the pods of one node, said together on each of their cards
        for members in groups.values():
            said = _says(cause, scopes, members, [])
            if said is None:
                continue
            for pod in members:
                for f in _carried(cause.by, pod.diagnosis.findings):
                    out.append(CauseLink(cause.id, pod.namespace, pod.workload, f.id, said))
        return out
    suffering = [pod for pod in pods if holds(cause.of, pod)]
    for label, members in groups.items():
        others = [p for p in suffering if p.workload != label]
        if not others:
            continue
        text = _says(cause, scopes, members, others)
        if text is None:
            continue
        for side, chosen in ((cause.by, members), (cause.of, others)):
            for pod in chosen:
                for f in _carried(side, pod.diagnosis.findings):
                    out.append(CauseLink(cause.id, pod.namespace, pod.workload, f.id, text))
    return out


def _carried(side: CauseSide, findings: Iterable[Finding]) -> list[Finding]:
    return [f for f in findings if side.carries(f.id, f.severity)]


class _Values(dict[str, Any]):
    """The names a cause's sentence reads: the cluster's facts and, for each side, its
    workload(s), its pods, its findings and the sum of any pod fact over its pods;
    computed when first read."""

    def __init__(self, scopes: Scopes, sides: dict[str, list[_Pod]], cause: CausePattern
                 ) -> None:
        super().__init__()
        self.scopes, self.sides, self.cause = scopes, sides, cause

    def __missing__(self, key: str) -> Any:
        value = self._compute(key)
        self[key] = value
        return value

    def get(self, key: str, default: Any = None) -> Any:
        value = self[key]
        return default if value is None else value

    def _compute(self, key: str) -> Any:
        side, _, what = key.partition("_")
        pods = self.sides.get(side)
        if pods is None:  # a cluster fact
            return self.scopes.cluster.value(key)
        if what == "workload":
            return pods[0].workload
        if what == "workloads":
            return ", ".join(sorted({p.workload for p in pods}))
        if what == "pods":
            return len(pods)
        if what == "findings":
            chosen = self.cause.by if side == "by" else self.cause.of
            found = _carried(chosen, pods[0].diagnosis.findings) if chosen else []
            return ", ".join(f.id for f in found)
        if what == "node":
            return pods[0].node
        if what == "pod_names":
            return ", ".join(str(meta(p.pod).get("name")) for p in pods)
        values = [p.context.value(what) for p in pods]
        numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if numbers:
            return sum(numbers)
        # A text fact of the pods (the CUDA error each ended with): each distinct one, once.
        texts = list(dict.fromkeys(str(v) for v in values if v not in (None, "", [])))
        return "; ".join(texts) if texts else None


def _says(cause: CausePattern, scopes: Scopes, by: list[_Pod], of: list[_Pod]) -> str | None:
    """The first of the cause's sentences whose values are all known and whose ``if``
    holds, filled; None when none can be said."""
    values = _Values(scopes, {"by": by, "of": of}, cause)
    for case in cause.says:
        text = _case(case, values)
        if text is not None:
            return text
    return None


def _case(case: FixCase, values: _Values) -> str | None:
    assigned: dict[str, Any] = {}
    scope = _Layered(values, assigned)
    for name, expr in case.values:
        value = expr.evaluate(scope)
        if isinstance(value, Missing):
            return None
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        assigned[name] = value
    if case.check is not None:
        ok = case.check.evaluate(scope)
        if isinstance(ok, Missing) or not ok:
            return None
    text = render_text(case.text, scope, values.scopes.snapshot.kubectl)
    return None if isinstance(text, Missing) else text


class _Layered(dict[str, Any]):
    """A case's own values over the cause's."""

    def __init__(self, base: _Values, own: dict[str, Any]) -> None:
        super().__init__()
        self.base, self.own = base, own

    def __contains__(self, key: object) -> bool:
        return True

    def __getitem__(self, key: str) -> Any:
        return self.own[key] if key in self.own else self.base[key]

    def get(self, key: str, default: Any = None) -> Any:
        value = self[key]
        return default if value is None else value
