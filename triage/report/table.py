"""Terminal writer: the cards (what broke, the proof, the fix, the patch) first, then the
pods with their evidence and timeline, the checklist."""

from __future__ import annotations

import io

from rich.console import Console, Group
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from triage.results import TIMELINE_KINDS, PodResult, Report, Severity, TimelineEvent

VERDICT_STYLE = {"pass": "bold green", "warn": "bold yellow", "fail": "bold red",
                 "unknown": "bold magenta", "n/a": "dim"}
SEVERITY_STYLE = {"critical": "bold red", "warning": "yellow", "info": "cyan"}
MAX_EVIDENCE_LINES = 8
MAX_TIMELINE_LINES = 14
TIMELINE_STYLE = {"neutral": "dim", "progress": "", "good": "green", "warn": "yellow",
                  "fail": "red"}


def render(report: Report, color: bool = False) -> str:
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=color, no_color=not color, width=120,
                      highlight=False, soft_wrap=False)
    ns = report.namespace or "all namespaces"
    head = Text()
    head.append("vllm-triage ", style="bold")
    head.append(f"{ns}", style="bold cyan")
    head.append(f"  context {report.context or '-'}  at {report.generated_at}")
    console.print(head)
    console.print(Text(report.summary, style=VERDICT_STYLE[report.verdict.value]))
    console.print()
    for line in _cards(report):
        console.print(line)

    for pod in report.pods:
        console.print(_pod_panel(pod))
    if not report.pods:
        console.print("No vLLM server pods found (a container whose image or command names "
                      "vLLM). Use -l to select pods by label.")

    console.print(_checklist(report))
    if report.unreadable:
        console.print(Text("Could not read", style="bold magenta"))
        for u in report.unreadable:
            console.print(f"  - {escape(u.what)}: {escape(u.reason)}")
        console.print()
    for w in report.warnings:
        console.print(Text(f"warning: {w}", style="yellow"))
    return buf.getvalue()


PROOF_CHARS = 220


def _short(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit - 3] + "..."


def _cards(report: Report) -> list[Text]:
    """The answer first: one block per workload and failure, then the patches to review."""
    out: list[Text] = []
    for n, card in enumerate(report.cards, 1):
        head = Text()
        head.append(f"{n}. ", style="bold")
        head.append(f"[{card.severity}] ", style=SEVERITY_STYLE[card.severity.value])
        head.append(card.finding, style="bold")
        head.append(f"  {card.title}")
        out.append(head)
        out.append(Text(f"   {card.scope}  (step {card.step})", style="cyan"))
        out.append(Text(f"   proof: {_short(card.proof, PROOF_CHARS)}", overflow="fold"))
        if card.fix is not None:
            first, *rest = card.fix.text.splitlines() or [""]
            out.append(Text(f"   fix:   {first}", style="bold", overflow="fold"))
            out += [Text(f"          {line}", overflow="fold") for line in rest[:8]]
            if len(rest) > 8:
                out.append(Text(f"          ... {len(rest) - 8} more lines (see -o markdown)",
                                style="dim"))
            for command in card.fix.commands:
                if card.fix.patch is None or command != card.fix.patch.command():
                    out.append(Text(f"   run:   {command}", overflow="fold"))
        for cause in card.causes:
            out.append(Text(f"   cause: {cause}", style="yellow", overflow="fold"))
    if report.patches:
        out.append(Text("Patches to review (never applied by vllm-triage; --fix-dir DIR "
                        "writes each to a file):", style="bold"))
        for wp in report.patches:
            out.append(Text(f"   {wp.workload} ({', '.join(wp.findings)}):"))
            out.append(Text(f"     {wp.patch.command()}", overflow="fold"))
        out.append(Text("   preview a patch first: add --dry-run=server -o yaml | kubectl diff "
                        "-f -", style="dim"))
    if out:
        out.append(Text(""))
    return out


def _pod_panel(pod: PodResult) -> Panel:
    findings = pod.findings
    title = Text()
    title.append(f"{pod.namespace}/{pod.name}", style="bold")
    body: list[Text | Table] = []
    meta = Text()
    meta.append(f"state {pod.state}  restarts {pod.restarts}")
    if pod.owner:
        meta.append(f"  owner {pod.owner}")
    if pod.node:
        meta.append(f"  node {pod.node}")
    body.append(meta)
    if not findings:
        body.append(Text("no finding", style="green"))
    for i, f in enumerate(findings):
        line = Text()
        line.append("top: " if i == 0 else "also: ", style="bold" if i == 0 else "")
        line.append(f"[{f.severity}] ", style=SEVERITY_STYLE[f.severity.value])
        line.append(f"{f.id}", style="bold")
        line.append(f"  {f.title}")
        body.append(line)
        shown = f.evidence if i == 0 else f.evidence[:3]
        for ev in shown[:MAX_EVIDENCE_LINES]:
            body.append(Text(f"    {ev}", style="dim" if i else "", overflow="fold"))
        if len(shown) > MAX_EVIDENCE_LINES:
            body.append(Text(f"    ... {len(shown) - MAX_EVIDENCE_LINES} more (see -o json)",
                             style="dim"))
    failing = any((f.severity in (Severity.CRITICAL, Severity.WARNING) and not f.fallback)
                  or f.severity is Severity.CRITICAL for f in findings)
    if failing and pod.timeline:
        body += _timeline(pod.timeline)
    return Panel(Group(*body), title=title, title_align="left", expand=True)


def _clock(stamp: str, with_date: bool) -> str:
    # 2026-11-28T03:05:12Z -> 03:05:12, or 11-28 03:05:12 when the timeline spans days
    day, _, time = stamp.partition("T")
    time = time.rstrip("Z")[:8]
    return f"{day[5:]} {time}" if with_date else time


def _timeline(events: tuple[TimelineEvent, ...]) -> list[Text]:
    """The pod's timeline, compact: one line per entry, the latest ones when there are many."""
    with_date = len({e.at[:10] for e in events}) > 1
    shown = events[-MAX_TIMELINE_LINES:]
    out = [Text("timeline (UTC):", style="bold")]
    if len(events) > len(shown):
        out.append(Text(f"    ... {len(events) - len(shown)} earlier (see -o html)",
                        style="dim"))
    for ev in shown:
        when = _clock(ev.at, with_date)
        if ev.until:
            when += f"-{_clock(ev.until, with_date)}"
        style = TIMELINE_STYLE[TIMELINE_KINDS.get(ev.kind, "neutral")]
        out.append(Text(f"    {when:<{28 if with_date else 18}} {ev.label}", style=style,
                        overflow="ellipsis", no_wrap=True))
    return out


def _checklist(report: Report) -> Table:
    table = Table(title="10-step checklist", title_justify="left", expand=True, show_lines=False)
    table.add_column("#", justify="right", width=3)
    table.add_column("Step", ratio=2)
    table.add_column("Verdict", width=8)
    table.add_column("Evidence", ratio=5, overflow="fold")
    for s in report.checklist:
        evidence = [e for e in s.evidence if not e.startswith("  ")][:3]
        more = len(s.evidence) - len(evidence)
        text = "\n".join(evidence) + (f"\n(+{more} more lines)" if more > 0 else "")
        table.add_row(str(s.step), s.title, Text(s.verdict.value,
                      style=VERDICT_STYLE[s.verdict.value]), Text(text))
    return table
