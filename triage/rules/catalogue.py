"""Listed for people: the names a pattern may use (facts with their scope, unit and doc,
and the metrics derived from /metrics; kept in patterns/README.md), and the finding
catalogue (every finding, what it reads and its sources; kept in docs/catalogue.md)."""

from __future__ import annotations

from triage.facts import describe_registry
from triage.rules.language import (
    CausePattern,
    Condition,
    EventLeaf,
    FactLeaf,
    FieldLeaf,
    FindingLeaf,
    LogLeaf,
    MetricLeaf,
    NodeConditionLeaf,
    Pattern,
    RootCauseLeaf,
    walk,
)
from triage.vllm.metrics import METRICS


def facts_text() -> str:
    lines = ["Facts (fact: NAME):"]
    for spec in describe_registry():
        lines.append(f"  {spec.name:32} {spec.scope:9} {spec.unit:12} {spec.doc}")
    lines.append("")
    lines.append("Metrics (metric: NAME), from the pod's /metrics:")
    for name, (unit, doc) in METRICS.items():
        lines.append(f"  {name:32} {unit:12} {doc}")
    return "\n".join(lines) + "\n"


def facts_markdown() -> str:
    lines = ["| fact | scope | unit | what it measures |", "| --- | --- | --- | --- |"]
    for spec in describe_registry():
        lines.append(f"| `{spec.name}` | {spec.scope} | {spec.unit} | {_cell(spec.doc)} |")
    lines += ["", "| metric | unit | what it measures |", "| --- | --- | --- |"]
    for name, (unit, doc) in METRICS.items():
        lines.append(f"| `{name}` | {unit} | {_cell(doc)} |")
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def findings_markdown(patterns: tuple[Pattern, ...], step_titles: dict[int, str],
                      causes: tuple[CausePattern, ...] = ()) -> str:
    """Every finding: what it means, what it reads (from its conditions) and its sources;
    then every cause (a cluster pattern joining findings of several pods)."""
    ordered = sorted(patterns, key=lambda p: (p.step, p.id))
    lines = ["| finding | severity | step | title |", "| --- | --- | --- | --- |"]
    for p in ordered:
        severity = p.severity.value + (" (warning form)" if p.warn_when is not None else "")
        lines.append(f"| [`{p.id}`](#{p.id}) | {severity} | {p.step} | {_cell(p.title)} |")
    for p in ordered:
        lines += ["", f"### {p.id}", "", f"**{_cell(p.title)}**: {p.severity.value}"
                  + (", with a warning form (`warn_when`)" if p.warn_when is not None else "")
                  + (", a fallback (only when no critical finding explains the pod)"
                     if p.fallback else "")
                  + (f", generic (stands back when a more specific {p.explained_by.value} "
                     "finding explains the pod)" if p.explained_by is not None else "")
                  + f"; checklist step {p.step} ({step_titles.get(p.step, '?')}).", ""]
        if p.scope != "container":
            lines += [f"Evaluated once per {p.scope}, raised on each triaged pod of it.", ""]
        if p.summary:
            lines += [" ".join(p.summary.split()), ""]
        lines.append("Reads: " + "; ".join(_reads(p)) + ".")
        if p.yields_to:
            lines.append(f"Stands back for: {', '.join(f'`{y}`' for y in p.yields_to)}.")
        lines += ["", "Sources:", ""]
        lines += [f"- {_cell(ref)}" for ref in p.references] or ["- (none listed)"]
    if causes:
        lines += ["", "## Causes", "", "Cluster patterns: evaluated once every pod is diagnosed, "
                  "a cause joins the pods that fail (`by`) to the pods of other workloads "
                  "that suffer it (`of`) and says so on both sides' cards."]
    for c in sorted(causes, key=lambda c: c.id):
        carried = (f"every {c.by.severity.value} finding" if c.by.severity is not None else
                   ", ".join(f"`{i}`" for i in c.by.finding_ids))
        if c.of is not None:
            said = (f"**{_cell(c.title)}**: a cause, said on the cards of {carried} of the pods "
                    "it holds for, and of " + ", ".join(f"`{i}`" for i in c.of.finding_ids)
                    + " of the pods that suffer it.")
        else:
            said = (f"**{_cell(c.title)}**: a cause, said together on the cards of {carried} "
                    f"of the pods it holds for that share a {c.same}.")
        lines += ["", f"### {c.id}", "", said, ""]
        if c.summary:
            lines += [" ".join(c.summary.split()), ""]
        lines.append("Reads: " + "; ".join(_condition_reads(
            [s.pods for s in (c.by, c.of) if s is not None])) + ".")
        lines += ["", "Sources:", ""]
        lines += [f"- {_cell(ref)}" for ref in c.references] or ["- (none listed)"]
    return "\n".join(lines) + "\n"


def _reads(p: Pattern) -> list[str]:
    conds: list[Condition] = [p.when, *p.show]
    if p.warn_when is not None:
        conds.append(p.warn_when)
    if p.escalate is not None:
        conds.append(p.escalate.when)
    return _condition_reads(conds)


def _condition_reads(conds: list[Condition]) -> list[str]:
    streams: set[str] = set()
    events: list[str] = []
    fields: dict[str, list[str]] = {"container": [], "pod": [], "node": []}
    facts: list[str] = []
    metrics: list[str] = []
    findings: list[str] = []
    root_cause = False
    for cond in conds:
        for leaf in walk(cond, into_not=True):
            if isinstance(leaf, LogLeaf):
                streams.add(leaf.stream)
            elif isinstance(leaf, EventLeaf):
                reason = leaf.reason.pattern.strip("^$") if leaf.reason is not None else "any"
                if reason not in events:
                    events.append(reason)
            elif isinstance(leaf, FieldLeaf):
                if leaf.field not in fields[leaf.scope]:
                    fields[leaf.scope].append(leaf.field)
            elif isinstance(leaf, NodeConditionLeaf):
                if f"condition {leaf.condition}" not in fields["node"]:
                    fields["node"].append(f"condition {leaf.condition}")
            elif isinstance(leaf, FactLeaf):
                for name in (leaf.name, leaf.comparison.fact_ref if leaf.comparison else None):
                    if name and name not in facts:
                        facts.append(name)
            elif isinstance(leaf, MetricLeaf) and leaf.name not in metrics:
                metrics.append(leaf.name)
            elif isinstance(leaf, FindingLeaf):
                findings += [i for i in leaf.ids if i not in findings]
                if leaf.severity is not None and f"any {leaf.severity.value}" not in findings:
                    findings.append(f"any {leaf.severity.value}")
            elif isinstance(leaf, RootCauseLeaf):
                root_cause = True
    out: list[str] = []
    if streams or root_cause:
        which = ("the previous container log" if streams == {"previous"} else
                 "the current and previous container logs")
        out.append(which + (" (the root-cause line)" if root_cause else ""))
    if events:
        out.append("events " + ", ".join(f"`{e}`" for e in events))
    for scope, label in (("container", "container status"), ("pod", "the Pod"),
                         ("node", "the Node")):
        if fields[scope]:
            out.append(f"{label} " + ", ".join(f"`{f}`" for f in fields[scope]))
    if facts:
        out.append("facts " + ", ".join(f"`{f}`" for f in facts))
    if metrics:
        out.append("/metrics " + ", ".join(f"`{m}`" for m in metrics))
    if findings:
        out.append("findings " + ", ".join(f"`{f}`" for f in findings))
    return out or ["nothing"]
