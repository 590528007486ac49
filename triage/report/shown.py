"""What every writer shows the same way, computed once from the report: the
findings beside each checklist step and the remedies in the order to read them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from triage.results import BesideFinding, Report, StepResult, TimelineEvent, Verdict


@dataclass(frozen=True)
class Remedy:
    heading: str  # "Step 2. CUDA out of memory in vLLM logs (GPU)" or "port-in-use: ..."
    verdict: Verdict
    texts: tuple[str, ...]


def beside_of(report: Report, step: int) -> list[BesideFinding]:
    """The rows shown beside a step: findings that are not what it asks about."""
    return [b for b in report.beside if b.step == step]


def pods_label(pods: tuple[str, ...], limit: int = 3) -> str:
    """'llm/a, llm/b and 4 more pods'."""
    shown = ", ".join(pods[:limit])
    return shown + (f" and {len(pods) - limit} more pods" if len(pods) > limit else "")


def remedies(report: Report) -> list[Remedy]:
    """Failing and warning steps, each followed by the findings beside it, in step order."""
    out: list[Remedy] = []
    for s in report.checklist:
        if s.verdict in (Verdict.FAIL, Verdict.WARN) and s.remediation:
            out.append(Remedy(f"Step {s.step}. {s.title}", s.verdict, s.remediation))
        for b in beside_of(report, s.step):
            if b.remediation and b.verdict in (Verdict.FAIL, Verdict.WARN):
                out.append(Remedy(f"{b.id}: {b.title}", b.verdict, (b.remediation,)))
    return out


# "previous log (vllm) line 47> text": the log evidence the rules write
# (triage.rules.evaluate.log_evidence); ">" marks the line that proves the finding.
_LOG_LINE = re.compile(r"^(previous log|log) \(([^)]*)\) line (\d+)([> ]) ?(.*)$", re.DOTALL)
# The source a measured number names at its end, said once per block instead.
_SOURCE = re.compile(r" \((one scrape of /metrics, since the server started|Prometheus, last "
                     r"[^()]+|vLLM's stats log lines?[^()]*)\)$")


@dataclass(frozen=True)
class LogItem:
    number: int
    proving: bool
    text: str


@dataclass(frozen=True)
class Block:
    """Evidence lines that share a source, said once: a log (with its line numbers) or
    where a run of measured numbers comes from; ``source`` is '' for plain lines."""

    source: str
    lines: tuple[str, ...] = ()
    log: tuple[LogItem, ...] = ()


def is_proving(line: str) -> bool:
    m = _LOG_LINE.match(line)
    return bool(m and m.group(4) == ">")


def pick(lines: list[str], limit: int) -> tuple[list[str], int]:
    """At most ``limit`` lines in their order, the proving log lines always among them;
    and how many were left out."""
    if len(lines) <= limit:
        return lines, 0
    keep = {i for i, line in enumerate(lines) if is_proving(line)}
    for i in range(len(lines)):
        if len(keep) >= limit:
            break
        keep.add(i)
    chosen = [line for i, line in enumerate(lines) if i in keep]
    return chosen, len(lines) - len(chosen)


# What a line says after the process prefix, the level and the stamp vLLM prints.
_PREFIX = re.compile(r"^(?:\([^)]*\) )?(?:(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d "
                     r"\d\d:\d\d:\d\d (?:\[[^\]]*\] )?)?")


def _said_by(text: str) -> str:
    return " ".join(_PREFIX.sub("", text).split())


def _again(item: LogItem, before: tuple[LogItem, ...]) -> LogItem:
    """A proving line that repeats an earlier one of the block (the exception re-raised at
    the end of its traceback) is named as that line again, not printed twice."""
    said = _said_by(item.text)
    if not item.proving or len(said) < 20:
        return item
    for earlier in before:
        if earlier.proving and said in _said_by(earlier.text):
            return LogItem(item.number, True, f"(line {earlier.number}'s error again)")
    return item


def blocks(lines: list[str]) -> list[Block]:
    """Consecutive log lines of one log become one block under its name, in the log's
    order (the evidence leads with the line that states the cause, its context after it);
    consecutive numbers from one source become one block under the source."""
    out: list[Block] = []
    for line in lines:
        m = _LOG_LINE.match(line)
        if m:
            source = f"{m.group(1)} ({m.group(2)})"
            item = LogItem(int(m.group(3)), m.group(4) == ">", m.group(5))
            if out and out[-1].source == source and out[-1].log:
                same = next((i for i in out[-1].log if i.number == item.number), None)
                if same is not None:  # a line shown twice (context of two matches): once,
                    if item.proving and not same.proving:  # as proof if it is one
                        out[-1] = Block(source, log=tuple(item if i is same else i
                                                          for i in out[-1].log))
                    continue
                log = sorted((*out[-1].log, item), key=lambda i: i.number)
                at = log.index(item)
                log[at] = _again(item, tuple(log[:at]))
                out[-1] = Block(source, log=tuple(log))
            else:
                out.append(Block(source, log=(item,)))
            continue
        s = _SOURCE.search(line)
        source = s.group(1) if s else ""
        text = line[:s.start()] if s else line
        if out and out[-1].source == source and not out[-1].log:
            out[-1] = Block(source, lines=(*out[-1].lines, text))
        else:
            out.append(Block(source, lines=(text,)))
    return out


_POD_LINE = re.compile(r"^(\S+)/(\S+?)( \([^)]*\))?: (.*)$", re.DOTALL)


def workload_pods(report: Report, pods: list[str]) -> str:
    """'4 of 4 pods of Deployment/vllm-llama, llm/other-0': pods named per workload, so
    no pod is left behind an "and N more"."""
    owner = {f"{p.namespace}/{p.name}": (p.namespace, p.owner) for p in report.pods}
    total: dict[tuple[str, str | None], int] = {}
    for p in report.pods:
        total[(p.namespace, p.owner)] = total.get((p.namespace, p.owner), 0) + 1
    groups: dict[tuple[str, str | None] | str, list[str]] = {}
    for pod in pods:
        found = owner.get(pod)
        groups.setdefault(found if found is not None and found[1] else pod, []).append(pod)
    spaces = len({p.namespace for p in report.pods}) > 1
    out = []
    for group, members in groups.items():
        if isinstance(group, str) or len(members) == 1:
            out += members
        else:
            ns, who = group
            out.append(f"{len(members)} of {total[group]} pods of {who}"
                       + (f" in {ns}" if spaces else ""))
    return ", ".join(out)


def _said(line: str, shown: set[str]) -> bool:
    m = _POD_LINE.match(line.strip())
    return " ".join((m.group(4) if m else line).split()) in shown


def by_workload(report: Report, lines: list[str]) -> list[str]:
    """The same evidence of several pods of one workload, said once for the workload
    ("2 of 2 pods of Deployment/vllm-qwen (vllm): ..."), where its first pod's line was.
    A pod's line and the indented lines under it are one unit, grouped only whole."""
    owner = {(p.namespace, p.name): p.owner for p in report.pods}
    total: dict[tuple[str, str], int] = {}
    for p in report.pods:
        if p.owner:
            total[(p.namespace, p.owner)] = total.get((p.namespace, p.owner), 0) + 1
    spaces = len({p.namespace for p in report.pods}) > 1
    units: list[list[str]] = []
    for line in lines:
        if line.startswith("  ") and units:
            units[-1].append(line)
        else:
            units.append([line])
    groups: dict[tuple[str, ...], list[str]] = {}
    keyed: list[tuple[str, ...] | list[str]] = []
    for unit in units:
        m = _POD_LINE.match(unit[0])
        who = owner.get((m.group(1), m.group(2))) if m else None
        if m is None or not who:
            keyed.append(unit)
            continue
        key = (m.group(1), who, m.group(3) or "", m.group(4), *unit[1:])
        if key not in groups:
            keyed.append(key)
        groups.setdefault(key, []).append(m.group(2))
    out: list[str] = []
    for item in keyed:
        if isinstance(item, list):
            out += item
            continue
        ns, who, container, text, *rest = item
        pods = list(dict.fromkeys(groups[item]))
        if len(pods) == 1:
            out.append(f"{ns}/{pods[0]}{container}: {text}")
        else:
            where = f"{who} in {ns}" if spaces else who
            out.append(f"{len(pods)} of {total[(ns, who)]} pods of {where}{container}: {text}")
        out += rest
    return out


_FINDING_REF = re.compile(r"^(\S+/\S+): ([a-z0-9]+(?:-[a-z0-9]+)*): (.*)$")


def step_lines(report: Report, step: StepResult) -> tuple[list[str], int]:
    """A step's own evidence lines as shown beside its verdict, and how many lines of
    findings' evidence it also carries (shown with the pods). A finding is named once
    with its pods ("cuda-oom on llm/a, llm/b"), not once per pod with its title; with a
    single pod in the report, lines do not repeat its name."""
    titles = {f.id: f.title for p in report.pods for f in p.findings}
    fed = any(f.step == step.step and f.answers_step for p in report.pods for f in p.findings)
    if fed:  # indented lines are the findings' evidence, shown with the pods
        top = [e for e in step.evidence if not e.startswith("  ")]
        nested = len(step.evidence) - len(top)
    else:
        # A line a finding already shows with its pod is not said again under the step.
        shown = {" ".join(e.split()) for p in report.pods for f in p.findings
                 for e in f.evidence}
        own = [e for e in step.evidence if not _said(e, shown)]
        top = [e.strip() for e in by_workload(report, own)]
        nested = len(step.evidence) - len(own)
    out: list[str] = []
    refs: dict[str, list[str]] = {}
    for line in top:
        m = _FINDING_REF.match(line)
        if m and titles.get(m.group(2)) == m.group(3):
            if m.group(2) not in refs:
                out.append("\0" + m.group(2))
            refs.setdefault(m.group(2), []).append(m.group(1))
            continue
        out.append(line)
    out = [f"{line[1:]} on {workload_pods(report, list(dict.fromkeys(refs[line[1:]])))}"
           if line.startswith("\0") else line for line in out]
    if fed:
        out = by_workload(report, out)
    if len(report.pods) == 1:
        pod = report.pods[0]
        name = re.escape(f"{pod.namespace}/{pod.name}")
        mine = re.compile(rf"^{name}(?: \([^)]*\))?: | on {name}$")
        out = [mine.sub("", line) for line in out]
    return out, nested


# --- a pod's timeline: the incident and the history before it -------------------------------

# A stretch of quiet this many times longer than everything after it, and of six hours at
# least, separates the history (a revision made weeks ago, a pod created days before it
# failed) from the incident: the incident's axis starts after it, and what came before is
# said as a note. A slow start or an hour-long crash loop stays one incident.
HISTORY_GAP_RATIO = 4.0
HISTORY_GAP_MIN_SECONDS = 6 * 3600.0


def incident_window(events: tuple[TimelineEvent, ...]
                    ) -> tuple[tuple[TimelineEvent, ...], tuple[TimelineEvent, ...]]:
    """The timeline split into (history, incident): the incident is the events after the
    last quiet stretch of at least HISTORY_GAP_MIN_SECONDS that lasts HISTORY_GAP_RATIO
    times longer than all that follows it; without one, everything is the incident."""
    times = [_seconds(ev.at) for ev in events]
    if len(events) < 2 or any(t is None for t in times):
        return (), events
    ends = [max(t or 0.0, _seconds(ev.until) or 0.0) for ev, t in zip(events, times,
                                                                        strict=True)]
    last = max(ends)
    for i in range(len(events) - 1, 0, -1):
        before = max(ends[:i])
        gap = (times[i] or 0.0) - before
        if gap >= HISTORY_GAP_MIN_SECONDS and gap > HISTORY_GAP_RATIO * (last - (times[i] or 0.0)):
            return events[:i], events[i:]
    return (), events


def _seconds(stamp: str | None) -> float | None:
    if not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
