"""Markdown writer: a report to paste into a GitHub or GitLab issue.

A one-line verdict, the cards (what broke, the proof, the fix with its number,
the patch), one table row per pod, each finding with the lines that
prove it (the rest of its evidence, the checklist evidence and the timeline
in collapsed ``<details>``), the checklist as a table, and a footer naming the
cluster context, namespace, time (UTC) and version. No evidence line appears
twice; code blocks wrap long lines visibly (a marked continuation) instead of
scrolling sideways.
Everything that came from the cluster is escaped: table cells cannot break
out of their row, and fenced blocks use a fence longer than any run of
backticks inside them, so a log line holding ``` cannot end the block.
"""

from __future__ import annotations

import html
import re
import textwrap

from triage.fixes import commands as patch_commands
from triage.fixes import files as fixdir
from triage.report.shown import beside_of, blocks, pick, pods_label, step_lines
from triage.results import PodResult, Report
from triage.safety import codespans

VERDICT_MARK = {"pass": "✅ pass", "warn": "⚠️ warn", "fail": "❌ fail",
                "unknown": "❔ unknown", "n/a": "⚪ n/a"}
SEVERITY_MARK = {"critical": "🔴 critical", "warning": "🟠 warning", "info": "🔵 info"}
_INLINE_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&#!])")
# GitHub and GitLab turn @name into a mention (a notification to that user or
# team), #123, org/repo#45 and GH-123 into references to issues, and http://,
# https://, www. and a@b.c into links, even in escaped text (they link the text
# the Markdown renders to); a zero-width space after the @ or the #, after GH, and
# before :// or the dot of www. keeps them plain text that reads the same (a
# ticket must not ping people or link to what a pod printed).
_MENTION_OR_AUTOLINK = re.compile(r"@|(?<=#)(?=[0-9])|(?<=\bGH)(?=-[0-9])"
                                  r"|(?<=http)(?=://)|(?<=https)(?=://)|(?<=ftp)(?=://)"
                                  r"|(?<=www)(?=\.)", re.IGNORECASE)
_ZWSP = "&#8203;"
IN_SIGHT = 4  # evidence lines of a finding shown open, the proving ones first
CODE_WIDTH = 110  # a code block's lines wrap here, visibly, instead of scrolling


def inline(text: object) -> str:
    """Text safe inside a paragraph or a table cell: one line, nothing interpreted."""
    return _escaped(" ".join(str(text).split()))


def _escaped(text: str) -> str:
    escaped = _INLINE_SPECIAL.sub(r"\\\1", text)
    return _MENTION_OR_AUTOLINK.sub(lambda m: m.group() + _ZWSP, escaped)


def code(text: object, cell: bool = False) -> str:
    """An inline code span that survives backticks in the text; in a table ``cell``,
    pipes too (there a code span's ``|`` would end the cell: GFM reads ``\\|``
    as ``|``; anywhere else ``\\|`` would be shown, and a command would not run)."""
    flat = " ".join(str(text).split())
    return codespans.code(flat.replace("|", "\\|") if cell else flat)


def fenced(lines: list[str], info: str = "text") -> str:
    """A fenced block longer than any backtick run inside it."""
    body = "\n".join(lines)
    longest = max((len(m) for m in re.findall(r"`{3,}", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{body}\n{fence}"


def utc(stamp: str | None) -> str:
    if not stamp:
        return "unknown time"
    return stamp.replace("T", " ").removesuffix("Z").removesuffix("+00:00") + " UTC"


def render(report: Report, color: bool = False) -> str:
    out: list[str] = []
    ns = report.namespace or "all namespaces"
    mark = VERDICT_MARK[report.verdict.value].upper()
    out.append(f"### vLLM triage: {mark} ({inline(ns)}): {inline(report.summary)}")
    out.append("")
    out += _cards(report)

    pods = report.pods
    if pods:
        out += _pods(pods)
        out += _findings(pods)
        out += _checklist(report)
        out += _timelines(pods)
    else:
        out.append("No vLLM server pods found (a container whose image or command names "
                   "vLLM): pass `-n` with a namespace where they run, `-A`, or `-l` to select "
                   "pods by label.")
        out.append("")

    if report.unreadable:
        out.append("#### Could not read")
        out.append("")
        for u in report.unreadable:
            out.append(f"- {inline(u.what)}: {inline(u.reason)}")
        out.append("")
    if report.warnings:
        out.append("#### Warnings")
        out.append("")
        for w in report.warnings:
            out.append(f"- {inline(w)}")
        out.append("")

    footer = [f"context {code(report.context or '-')}",
              f"namespace {code(ns)}"]
    if report.selector:
        footer.append(f"selector {code(report.selector)}")
    footer.append(f"collected {inline(utc(report.generated_at))}")
    footer.append(f"vllm-triage {inline(report.tool_version)}")
    out.append("---")
    out.append("")
    out.append("<sub>" + " · ".join(footer) + "</sub>")
    return "\n".join(out) + "\n"


PROOF_CHARS = 300


def _cards(report: Report) -> list[str]:
    """The answer first: per workload and failure, the proof and the fix; then the patches."""
    out: list[str] = []
    for n, card in enumerate(report.cards, 1):
        out.append(f"**{n}. {inline(SEVERITY_MARK[card.severity.value])} {code(card.finding)}: "
                   f"{inline(card.title)}** ({inline(card.scope)}, step {card.step})")
        out.append("")
        proof = " ".join(card.proof.split())
        if len(proof) > PROOF_CHARS:
            proof = proof[:PROOF_CHARS - 3] + "..."
        out.append(f"- proof: {code(proof)}")
        if card.fix is not None:
            first, *rest = card.fix.text.splitlines() or [""]
            out.append(f"- **fix:** {_remediation(first)[0]}")
            out += [f"  {line}" for line in _remediation(chr(10).join(rest)) if line]
            for command in card.fix.run:
                out.append(f"- run: {code(command)}")
        for cause in card.causes:
            out.append(f"- cause: {inline(cause)}")
        out.append("")
    if report.patches:
        out.append("Patches to review (never applied by vllm-triage; `--fix-dir DIR` writes "
                   "each to a file):")
        out.append("")
        for wp in report.patches:
            p = wp.patch
            out.append(f"- {code(wp.workload)} ({inline(', '.join(wp.findings))}): "
                       f"{code(wp.file)}")
            out.append("")
            body = fixdir.body_yaml(p.body, width=100).splitlines()
            out.append("  " + fenced(body, "yaml").replace(chr(10), chr(10) + "  "))
            out.append("")
            out.append("  preview, then apply:")
            out.append("")
            out.append("  " + fenced(
                patch_commands.lines(p, report.kubectl, wp.file, preview=True)
                + patch_commands.lines(p, report.kubectl, wp.file), "sh")
                       .replace(chr(10), chr(10) + "  "))
            out.append("")
    return out


def _pods(pods: tuple[PodResult, ...]) -> list[str]:
    out = ["#### Pods", "", "| Pod | State | Restarts | Top finding |",
           "| --- | --- | ---: | --- |"]
    for pod in pods:
        out.append("| " + " | ".join([code(f"{pod.namespace}/{pod.name}", cell=True),
                                      inline(pod.state), str(pod.restarts),
                                      _top_finding(pod)]) + " |")
    out.append("")
    return out


def _findings(pods: tuple[PodResult, ...]) -> list[str]:
    """Each finding with the lines that prove it in sight; the rest of its evidence in a
    collapsed block. Every evidence line appears once in the whole comment."""
    found = [(pod, f) for pod in pods for f in pod.findings]
    if not found:
        return []
    out = ["#### Findings", ""]
    seen: dict[str, set[str]] = {}  # pod -> evidence lines already shown (one per fact)
    for pod, f in found:
        where = f"{pod.namespace}/{pod.name}"
        if f.container:
            where += f" ({f.container})"
        out.append(f"**{inline(SEVERITY_MARK[f.severity.value])}** "
                   f"{code(f.id)}: {inline(f.title)} on {code(where)} "
                   f"({'step' if f.answers_step else 'beside step'} {f.step})")
        out.append("")
        shown_here = seen.setdefault(f"{pod.namespace}/{pod.name}", set())
        evidence = [e for e in dict.fromkeys(f.evidence) if e not in shown_here]
        shown_here.update(evidence)
        shown, _hidden = pick(evidence, IN_SIGHT)
        rest = [e for e in evidence if e not in shown]
        if shown:
            out.append(fenced(_code_lines(shown)))
            out.append("")
        if rest:
            out += _details(f"the rest of the evidence ({len(rest)} lines)",
                            [fenced(_code_lines(rest))])
    return out


def _checklist(report: Report) -> list[str]:
    out = ["#### Checklist", "", "| # | Step | Verdict | Evidence |",
           "| ---: | --- | --- | --- |"]
    full: list[str] = []
    for s in report.checklist:
        lines, nested = step_lines(report, s)
        first = inline(lines[0]) if lines else ""
        if nested and not lines[1:]:
            first += " *(evidence under Findings)*"
        elif lines[1:]:
            first += f" *(+{len(lines) - 1} in the checklist evidence below)*"
        out.append(f"| {s.step} | {inline(s.title)} | {VERDICT_MARK[s.verdict.value]} | "
                   f"{first} |")
        for row in beside_of(report, s.step):
            out.append(f"| ↳ | {code(row.id, cell=True)}: {inline(row.title)} "
                       f"(beside step {s.step}) | "
                       f"{VERDICT_MARK[row.verdict.value]} | on {inline(pods_label(row.pods))} |")
        if len(lines) > 1:
            full.append(f"**Step {s.step}. {inline(s.title)}: {VERDICT_MARK[s.verdict.value]}**")
            full.append("")
            full.append(fenced(_code_lines(lines)))
            full.append("")
    out.append("")
    if full:
        out += _details("checklist evidence", full)
    return out


def _timelines(pods: tuple[PodResult, ...]) -> list[str]:
    out: list[str] = []
    for pod in pods:
        body: list[str] = []
        for ev in pod.timeline:
            when = utc(ev.at).removesuffix(" UTC")
            if ev.until:
                until = utc(ev.until).removesuffix(" UTC")
                when += " to " + (until[11:] if until[:10] == when[:10] else until)
            body.append(f"- {code(when)} {inline(ev.label)}"
                        + (f": {inline(ev.detail)}" if ev.detail else ""))
        budget = _budget(pod)
        if budget:
            body += ["", budget]
        if body:
            name = html.escape(f"{pod.namespace}/{pod.name}")
            out += _details(f"timeline of <code>{name}</code> (UTC)", body)
    return out


def _budget(pod: PodResult) -> str:
    b = pod.gpu_budget
    if b is None:
        return ""
    parts = [f"card {b.total_gib:.1f} GiB"]
    for name, value in (("weights", b.weights_gib), ("KV cache", b.kv_cache_gib),
                        ("rest of vLLM's share", b.other_gib),
                        ("outside vLLM's share", b.free_gib)):
        if value is not None:
            parts.append(f"{name} {value:.2f} GiB")
    if b.sequences_fit is not None:
        parts.append(f"{b.sequences_fit:.2f} sequences of --max-model-len "
                     f"{b.max_model_len:,} fit")
    return "GPU memory: " + inline("; ".join(parts))


def _details(summary: str, body: list[str]) -> list[str]:
    """A collapsed block; blank lines around its Markdown so trackers render it."""
    return [f"<details><summary>{summary}</summary>", "", *body, "", "</details>", ""]


def _code_lines(lines: list[str]) -> list[str]:
    """Evidence for a code block: a log's lines under its name, and every line wrapped
    visibly at CODE_WIDTH (GitHub and GitLab scroll code blocks sideways)."""
    out: list[str] = []
    for block in blocks(lines):
        if block.log:
            out.append(f"{block.source}:")
            for item in block.log:
                prefix = f"{item.number:>6}{'>' if item.proving else ' '} "
                out += _wrap(prefix, item.text)
        elif block.source and len(block.lines) > 1:
            out.append(f"{block.source}:")
            for line in block.lines:
                out += _wrap("  ", line)
        else:
            suffix = f" ({block.source})" if block.source else ""
            for line in block.lines:
                out += _wrap("", line + suffix)
    return out


def _wrap(prefix: str, text: str) -> list[str]:
    """``prefix + text`` in lines of at most CODE_WIDTH, continued lines marked '↪'."""
    room = max(40, CODE_WIDTH - len(prefix))
    chunks = textwrap.wrap(text, room, break_long_words=True, break_on_hyphens=False,
                           drop_whitespace=True) or [""]
    pad = " " * max(0, len(prefix) - 2) + "↪ "
    return [prefix + chunks[0]] + [pad + c for c in chunks[1:]]


def _top_finding(pod: PodResult) -> str:
    findings = pod.findings
    if not findings:
        return "no finding"
    top = findings[0]
    text = f"{SEVERITY_MARK[top.severity.value]} {code(top.id, cell=True)}: " \
           f"{inline(top.title)}"
    if len(findings) > 1:
        text += " (also " + ", ".join(code(f.id, cell=True) for f in findings[1:]) + ")"
    return text


def _remediation(text: str) -> list[str]:
    """Remediation is prose written for people, hard-wrapped in the pattern files: each
    paragraph and each list item becomes one line (trackers turn a newline in a comment
    into a line break). Its code spans stay code (split as CommonMark splits them, each
    written with a fence no value inside can close); everything else is escaped as
    ``inline`` escapes it: no HTML, link, mention or reference gets through."""
    lines: list[str] = []
    for raw in text.splitlines():
        item = _ITEM.match(raw)
        mark, rest = (item.group(1), raw[item.end():]) if item else ("", raw)
        safe = "".join(code(part) if is_code else _escaped(part)
                       for is_code, part in codespans.split(rest)).rstrip()
        if not raw.strip():
            lines.append("")
        elif item or not lines or not lines[-1]:
            lines.append(f"{mark} {safe.strip()}" if item else safe.strip())
        else:
            lines[-1] += " " + safe.strip()
    return lines


_ITEM = re.compile(r"^\s*([-*]|\d+[.)])\s+")
