"""Cards: the answer first. One card per workload and failure, its proof line, its fix and
the causes said on it."""

from __future__ import annotations

import re
from collections import Counter

from triage.logs import parse_line
from triage.results import (
    Card,
    Finding,
    PodResult,
    Severity,
)
from triage.rules.causes import CauseLink

# --- cards: the answer first --------------------------------------------------------

# A log line shown only as context around a match ("line 46  ..."; a match is "line 47> ").
_CONTEXT_LINE = re.compile(r"\bline \d+  ")


_MATCHED_LINE = re.compile(r"\bline \d+> ")
_WARNING_EVENT = re.compile(r"^event Warning \S+ on .*\): \S")
_CONDITION = re.compile(r"^pod \S+ condition \w+=\w+ \(\w+\): \S")


def proof(finding: Finding) -> str:
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
        return _with_statement(lines[0], finding.evidence)
    return _with_statement(next((line for line in lines if _WARNING_EVENT.search(line)
                                 or _MATCHED_LINE.search(line[:120])), lines[0]),
                           finding.evidence)


# A log line of the evidence: which log, its number, its marker, the line as printed.
_LOG_ITEM = re.compile(r"^((?:previous log|log) \([^)]*\)) line (\d+)([> ]) (.*)$", re.DOTALL)
# An exception raised bare (an assert without a message): it names no cause of its own.
_BARE_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception)$")
# The statement that raised it, as Python echoes it under its frame.
_STATEMENT = re.compile(r"^(?:assert|raise) \S")


def _with_statement(line: str, evidence: tuple[str, ...]) -> str:
    """A bare exception's proof with the statement that raised it, from the lines shown
    just above it ("AssertionError (assert param_data.shape == loaded_weight.shape)")."""
    m = _LOG_ITEM.match(line)
    if m is None or not _BARE_EXCEPTION.match(parse_line(0, m.group(4)).message.strip()):
        return line
    number = int(m.group(2))
    for item in evidence:
        c = _LOG_ITEM.match(item)
        if c is None or c.group(1) != m.group(1) or not 0 < number - int(c.group(2)) <= 3:
            continue
        statement = parse_line(0, c.group(4)).message.strip()
        if _STATEMENT.match(statement):
            return f"{line} ({statement}, line {c.group(2)})"
    return line


def _owner(pod: PodResult) -> str:
    return pod.owner or f"Pod/{pod.name}"


def cards(pods: tuple[PodResult, ...], causes: list[CauseLink]) -> tuple[Card, ...]:
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
                pods_total=per_workload[(namespace, owner)], proof=proof(finding),
                fix=finding.fix,
                causes=tuple(dict.fromkeys(
                    c.text for c in causes
                    if (c.namespace, c.workload, c.finding) == (namespace, owner, finding.id))),
                also=tuple(i for i in ids if i != finding.id)))
    fallback = {f.id for p in pods for f in p.findings if f.fallback}
    cards.sort(key=lambda c: (c.finding in fallback, c.severity.rank, c.step))
    return tuple(cards)
