"""Terminal writer: the cards first (what broke, the proof, the fix with its number, the
patch), then the pods and their diagnosis, the checklist.

It draws to the width it is given (the terminal's, or ``COLUMNS``), never
below 80 columns: boxes are only as wide as the screen, each evidence item
is one line where it fits (the line that proves a finding wraps rather than
lose a word; its context lines are cut with an ellipsis), each fact is shown
once per pod, and every "more" says where the rest is.
"""

from __future__ import annotations

import io
import re

from rich import box
from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from triage.fixes import commands as patch_commands
from triage.fixes import files as fixdir
from triage.report.shown import (
    Block,
    beside_of,
    blocks,
    pick,
    pods_label,
    step_lines,
)
from triage.results import TIMELINE_KINDS, PodResult, Report, StepResult, TimelineEvent

VERDICT_STYLE = {"pass": "bold green", "warn": "bold yellow", "fail": "bold red",
                 "unknown": "bold magenta", "n/a": "dim"}
SEVERITY_STYLE = {"critical": "bold red", "warning": "yellow", "info": "cyan"}
TIMELINE_STYLE = {"neutral": "dim", "progress": "", "good": "green", "warn": "yellow",
                  "fail": "red"}
MIN_WIDTH = 80
DEFAULT_WIDTH = 120  # not a terminal and no COLUMNS: a file or a pipe
WIDE = 140  # from here the checklist has an evidence column of its own
TOP_EVIDENCE = 8  # lines shown for the top finding of a pod, the proving ones always
ALSO_EVIDENCE = 3
STEP_EVIDENCE = 3
MAX_TIMELINE_LINES = 14
HEALTHY_NAMES = 12
MORE = "-o json or -o markdown"


def render(report: Report, color: bool = False, width: int | None = None) -> str:
    width = max(MIN_WIDTH, width or DEFAULT_WIDTH)
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=color, no_color=not color, width=width,
                      highlight=False, soft_wrap=False, emoji=False)
    ns = report.namespace or "all namespaces"
    head = Text()
    head.append(f"{ns}", style="bold cyan")
    head.append(f"  context {report.context or '-'}  at {report.generated_at}")
    console.print(_labelled("vllm-triage ", head, 0, "bold"))
    console.print(Text(report.summary, style=VERDICT_STYLE[report.verdict.value]))
    console.print()
    for line in _cards(report, width):
        console.print(line)

    troubled = [p for p in report.pods if p.findings]
    for pod in troubled:
        console.print(_pod_panel(pod, width))
    healthy = [f"{p.namespace}/{p.name}" for p in report.pods if not p.findings]
    if healthy:
        names = ", ".join(healthy[:HEALTHY_NAMES])
        if len(healthy) > HEALTHY_NAMES:
            names += f" and {len(healthy) - HEALTHY_NAMES} more ({MORE})"
        line = Text()
        line.append(f"no finding on {len(healthy)} pod(s): ", style="green")
        line.append(names)
        console.print(line)
        console.print()
    if not report.pods:
        console.print("The checklist needs a vLLM server pod (a container whose image or "
                      "command names vLLM); pass -n with a namespace where they run, -A, or "
                      "-l to select pods by label.")
        _tail(console, report)
        return _no_trailing_blanks(buf.getvalue())

    console.print(_checklist(report, width))
    console.print()
    _tail(console, report)
    return _no_trailing_blanks(buf.getvalue())


# Rich pads a wrapped cell to its column; a line's trailing blanks (before any colour
# reset) are noise in a file or a ticket.
_TRAILING = re.compile(r"[ \t]+((?:\x1b\[[0-9;]*m)*)$", re.MULTILINE)


def _no_trailing_blanks(text: str) -> str:
    return _TRAILING.sub(r"\1", text)


def _tail(console: Console, report: Report) -> None:
    if report.unreadable:
        console.print(Text("Could not read", style="bold magenta"))
        for u in report.unreadable:
            console.print(f"  - {escape(u.what)}: {escape(u.reason)}")
        console.print()
    for w in report.warnings:
        console.print(Text(f"warning: {w}", style="yellow"))


PROOF_CHARS = 220
_SOURCE_SUFFIX = re.compile(r" \((?:one scrape of /metrics[^)]*|Prometheus, last [^)]*)\)$")


def _short(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit - 3] + "..."


def _cards(report: Report, width: int) -> list[RenderableType]:
    """The answer first: one block per workload and failure, then the patches to review.

    Every line wraps under its own text (a hanging indent), and commands wrap only
    between arguments, with a backslash, so what is copied from the screen still runs.
    """
    out: list[RenderableType] = []
    for n, card in enumerate(report.cards, 1):
        head = Text()
        head.append(f"[{card.severity}] ", style=SEVERITY_STYLE[card.severity.value])
        head.append(card.finding, style="bold")
        head.append(f"  {card.title}")
        out.append(_labelled(f"{n}. ", head, 0, "bold"))
        out.append(_labelled("", Text(f"{card.scope}  (step {card.step})", style="cyan"), 3))
        # The numbers' source is said once, with the pod's evidence below.
        proof = _SOURCE_SUFFIX.sub("", card.proof)
        out.append(_labelled("proof: ", Text(_short(proof, PROOF_CHARS)), 3))
        if card.fix is not None:
            first, *rest = _items(card.fix.text.splitlines()) or [""]
            shown: list[RenderableType] = [Text(first, style="bold", overflow="fold")]
            shown += [_hanging(item, 0) for item in rest[:FIX_ITEMS]]
            if len(rest) > FIX_ITEMS:
                shown.append(Text(f"... {len(rest) - FIX_ITEMS} more (see -o markdown)",
                                  style="dim"))
            out.append(_labelled("fix:   ", Group(*shown), 3))
            for command in card.fix.run:
                out.append(_labelled("run:   ", Text("\n".join(
                    shell_lines(command, width - 10))), 3))
        for cause in card.causes:
            out.append(_labelled("cause: ", Text(cause, style="yellow"), 3))
    if report.patches:
        out.append(Text("Patches to review (never applied by vllm-triage; --fix-dir DIR "
                        "writes them):", style="bold"))
        for wp in report.patches:
            out.append(_labelled("", Text(f"{wp.workload} ({', '.join(wp.findings)}): "
                                          f"{wp.file}"), 3))
            body = fixdir.body_yaml(wp.patch.body, width=max(40, width - 10))
            out.append(Padding(Text(body.rstrip("\n"), no_wrap=True, overflow="fold"),
                               (0, 0, 0, 5)))
            out.append(_labelled("", Text("preview, then apply:", style="dim"), 3))
            lines = (patch_commands.lines(wp.patch, report.kubectl, wp.file, preview=True)
                     + patch_commands.lines(wp.patch, report.kubectl, wp.file))
            # A line too long for the screen is broken between arguments, with a
            # backslash: folded, what is copied would run a command cut short.
            lines = [f"{' ' * _indent(line)}{part}" for line in lines
                     for part in shell_lines(line.strip(), width - 6 - _indent(line))]
            out.append(Padding(Text("\n".join(lines), overflow="fold"), (0, 0, 0, 5)))
    if out:
        out.append(Text(""))
    return out


FIX_ITEMS = 3  # sentences and items of a multi-line fix shown under its first line (a card stays
# about ten lines: the next card's answer stays on the first screen)


def _items(lines: list[str]) -> list[str]:
    """A fix's text as the sentences and ``- `` items it is made of: the pattern file
    wraps them for its own width, the terminal wraps them again for its own (each item
    under its own text), so a line that goes on the one before is joined to it."""
    items: list[str] = []
    for line in lines:
        text = line.strip()
        if not text:
            continue
        if items and not text.startswith("- ") and not items[-1].endswith(":") \
                and _indent(line) == _indent(items[-1]) + _bullet(items[-1]):
            items[-1] = f"{items[-1]} {text}"
        else:
            items.append(line.rstrip())
    return items


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _bullet(line: str) -> int:
    """The width of a ``- `` item's mark (its text goes on two columns in)."""
    return 2 if line.lstrip(" ").startswith("- ") else 0


def _labelled(label: str, text: RenderableType, indent: int,
              label_style: str = "") -> RenderableType:
    """``label`` then ``text``, the text wrapping under itself, not under the margin."""
    grid = Table.grid(expand=False)
    if label:
        grid.add_column(width=len(label), no_wrap=True)
    grid.add_column(ratio=1, overflow="fold")
    if isinstance(text, Text):
        text.overflow = "fold"
    grid.add_row(*([Text(label, style=label_style)] if label else []), text)
    return Padding(grid, (0, 0, 0, indent), expand=False)


def shell_lines(command: str, room: int) -> list[str]:
    """A shell command in lines of at most ``room`` characters, broken only at spaces
    outside quotes and continued with a backslash; a word longer than a line stays whole."""
    words: list[str] = []
    word, quote = "", ""
    for ch in command:
        if ch == " " and not quote:
            if word:
                words.append(word)
            word = ""
            continue
        if quote and ch == quote:
            quote = ""
        elif not quote and ch in "'\"":
            quote = ch
        word += ch
    if word:
        words.append(word)
    lines: list[str] = []
    for w in words:
        indent = "  " if lines else ""
        if lines and len(lines[-1]) + 1 + len(w) + 2 <= room:
            lines[-1] += " " + w
        elif not lines:
            lines.append(w)
        else:
            lines[-1] += " \\"
            lines.append(indent + w)
    return lines or [command]


def _pod_panel(pod: PodResult, width: int) -> Panel:
    title = Text()
    title.append(f"{pod.namespace}/{pod.name}", style="bold")
    body: list[RenderableType] = []
    meta = Text(overflow="fold")
    meta.append(f"state {pod.state}  restarts {pod.restarts}")
    if pod.owner:
        meta.append(f"  owner {pod.owner}")
    if pod.node:
        meta.append(f"  node {pod.node}")
    body.append(meta)
    seen: set[str] = set()  # one line per fact in the whole panel
    for i, f in enumerate(pod.findings):
        line = Text()
        line.append(f"[{f.severity}] ", style=SEVERITY_STYLE[f.severity.value])
        line.append(f"{f.id}", style="bold")
        line.append(f"  {f.title}")
        body.append(_labelled("top: " if i == 0 else "also: ", line, 0,
                              "bold" if i == 0 else ""))
        fresh = [e for e in dict.fromkeys(f.evidence) if e not in seen]
        seen.update(fresh)
        shown, hidden = pick(fresh, TOP_EVIDENCE if i == 0 else ALSO_EVIDENCE)
        body += _evidence(shown, dim=i > 0)
        if hidden:
            body.append(_hanging(f"… {hidden} more evidence line(s) for {f.id}: {MORE}", 4,
                                 "dim"))
    if pod.timeline and any(f.severity.value == "critical" or
                            (f.severity.value == "warning" and not f.fallback)
                            for f in pod.findings):
        body += _timeline(pod.timeline, width - 4)
    return Panel(Group(*body), title=title, title_align="left", expand=True)


def _hanging(line: str, indent: int, style: str = "") -> RenderableType:
    """A line that wraps under itself, not under the margin ('- ' items under their text)."""
    bullet = _indent(line) + _bullet(line)
    if not bullet:
        return Padding(Text(line, style=style, overflow="fold"), (0, 0, 0, indent),
                       expand=False)
    grid = Table.grid(expand=False)
    grid.add_column(width=bullet, no_wrap=True)
    grid.add_column(ratio=1, overflow="fold")
    grid.add_row(Text(line[:bullet], style=style), Text(line[bullet:], style=style))
    return Padding(grid, (0, 0, 0, indent), expand=False)


def _evidence(lines: list[str], dim: bool) -> list[RenderableType]:
    """Evidence under a finding: a log's lines under the log's name with their numbers;
    numbers from one source under that source."""
    out: list[RenderableType] = []
    style = "dim" if dim else ""
    for block in blocks(lines):
        out += _block(block, style)
    return out


def _block(block: Block, style: str) -> list[RenderableType]:
    out: list[RenderableType] = []
    if block.log:
        out.append(Padding(Text(f"{block.source}:", style="dim"), (0, 0, 0, 4)))
        grid = Table.grid(padding=(0, 1, 0, 0))
        grid.add_column(width=10, justify="right", no_wrap=True)
        grid.add_column(ratio=1)
        for item in block.log:
            number = Text(f"{item.number}{'>' if item.proving else ' '}",
                          style="bold" if item.proving else "dim")
            if item.proving:  # the line that proves it: every word of it
                grid.add_row(number, Text(item.text, style=style, overflow="fold"))
            else:
                grid.add_row(number, Text(item.text, style="dim", no_wrap=True,
                                          overflow="ellipsis"))
        out.append(grid)
        return out
    if block.source and len(block.lines) > 1:
        out.append(Padding(Text(f"{block.source}:", style="dim"), (0, 0, 0, 4)))
        out += [_hanging(line, 6, style) for line in block.lines]
        return out
    suffix = f" ({block.source})" if block.source else ""
    return [_hanging(f"{line}{suffix}", 4, style) for line in block.lines]


def _clock(stamp: str, with_date: bool) -> str:
    # 2026-11-28T03:05:12Z -> 03:05:12, or 11-28 03:05:12 when the timeline spans days
    day, _, time = stamp.partition("T")
    time = time.rstrip("Z")[:8]
    return f"{day[5:]} {time}" if with_date else time


def _when(ev: TimelineEvent, with_date: bool) -> str:
    """'02:31:45-03:05:11'; the date once when a range stays within a day."""
    start = _clock(ev.at, with_date)
    if not ev.until:
        return start
    same_day = ev.until[:10] == ev.at[:10]
    return f"{start}-{_clock(ev.until, with_date and not same_day)}"


def cut_words(text: str, room: int) -> str:
    """``text`` in at most ``room`` cells, cut at a word boundary with an ellipsis."""
    if len(text) <= room:
        return text
    head = text[:max(1, room - 1)]
    space = head.rfind(" ")
    if space >= room // 2:
        head = head[:space]
    return head.rstrip(" ,;:") + "…"


# Rows that say least, dropped first when the timeline is too long for the window:
# the pod object, image pulls and rollout bookkeeping, never vLLM's own milestones.
_LOW_VALUE = ("pod", "image", "rollout")


def _timeline(events: tuple[TimelineEvent, ...], room: int) -> list[Text]:
    """The pod's timeline: vLLM's milestones and every failure kept, low-value rows
    dropped first when there are too many, labels cut at a word."""
    chosen = list(events)
    dropped = 0
    while len(chosen) > MAX_TIMELINE_LINES:
        low = next((i for i, e in enumerate(chosen) if e.kind in _LOW_VALUE), None)
        chosen.pop(0 if low is None else low)
        dropped += 1
    with_date = len({e.at[:10] for e in chosen}) > 1
    out = [Text("timeline (UTC):", style="bold")]
    whens = [_when(ev, with_date) for ev in chosen]
    column = max((len(w) for w in whens), default=8)
    for ev, when in zip(chosen, whens, strict=True):
        style = TIMELINE_STYLE[TIMELINE_KINDS.get(ev.kind, "neutral")]
        label = cut_words(ev.label, room - 4 - column - 1)
        out.append(Text(f"    {when:<{column}} {label}", style=style, no_wrap=True,
                        overflow="ellipsis"))
    if dropped:
        out.append(Text(f"    … {dropped} earlier or routine row(s): -o html or -o markdown",
                        style="dim"))
    return out


def _step_lines(report: Report, s: StepResult) -> tuple[list[str], str]:
    """A step's evidence as the table shows it, and where the rest is."""
    top, nested = step_lines(report, s)
    # The suggestion to measure a window is never among the lines left out.
    shown = top[:STEP_EVIDENCE] + [line for line in top[STEP_EVIDENCE:] if
                                   "--prometheus auto" in line]
    more = len(top) - len(shown)
    where = []
    fed = any(f.step == s.step and f.answers_step for p in report.pods for f in p.findings)
    if nested:
        where.append("the findings' evidence is in the pod panels above" if fed else
                     f"{nested} more line(s) in the pod panels above")
    if more:
        where.append(f"{more} more line(s): {MORE}")
    return shown, "; ".join(where)


def _checklist(report: Report, width: int) -> Table:
    wide = width >= WIDE
    if wide:
        table = Table(title="10-step checklist", title_justify="left", expand=True,
                      box=box.HEAVY_HEAD)
        table.add_column("#", justify="right", width=2)
        table.add_column("Step", width=min(44, width // 5))
        table.add_column("Verdict", width=7)
        table.add_column("Evidence", ratio=1, overflow="fold")
    else:
        table = Table(title="10-step checklist", title_justify="left", expand=True,
                      box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
        table.add_column("#", justify="right", width=2)
        table.add_column("Step and evidence", ratio=1, overflow="fold")
        table.add_column("Verdict", width=7)
    for s in report.checklist:
        lines, where = _step_lines(report, s)
        evidence = Text()
        for i, line in enumerate(lines):
            evidence.append(("\n" if i else "") + line)
        if where:
            evidence.append(("\n" if lines else "") + f"({where})", style="dim")
        verdict = Text(s.verdict.value, style=VERDICT_STYLE[s.verdict.value])
        if wide:
            table.add_row(str(s.step), s.title, verdict, evidence)
        else:
            table.add_row(str(s.step), _under(Text(s.title, style="bold"), evidence), verdict)
        for b in beside_of(report, s.step):
            verdict = Text(b.verdict.value, style=VERDICT_STYLE[b.verdict.value])
            what = Text(f"{b.title}: not a step {s.step} question, on {pods_label(b.pods)}")
            name = Text(f"└ {b.id}", style="bold")
            if wide:
                table.add_row("", name, verdict, what)
            else:
                table.add_row("", _under(name, what), verdict)
    return table


def _under(title: Text, evidence: Text) -> RenderableType:
    """The narrow layout: evidence lines under the step's title, each wrapping under
    itself."""
    lines = [Padding(line, (0, 0, 0, 2)) for line in evidence.split("\n") if line.plain]
    for line in lines:
        line.renderable.stylize("dim")  # type: ignore[union-attr]
    return Group(title, *lines)
