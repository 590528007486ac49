"""Markdown writer: a report to paste into a GitHub or GitLab issue.

A one-line verdict, the cards (what broke, the proof, the fix with its number,
the patch), one table row per pod, the checklist as a table, the
evidence of every failing or warning step in fenced blocks, and a footer
naming the cluster context, namespace, time (UTC) and version.
Everything that came from the cluster is escaped: table cells cannot break
out of their row, and fenced blocks use a fence longer than any run of
backticks inside them, so a log line holding ``` cannot end the block.
"""

from __future__ import annotations

import re

from triage.results import PodResult, Report, Verdict

VERDICT_MARK = {"pass": "✅ pass", "warn": "⚠️ warn", "fail": "❌ fail",
                "unknown": "❔ unknown", "n/a": "⚪ n/a"}
SEVERITY_MARK = {"critical": "🔴 critical", "warning": "🟠 warning", "info": "🔵 info"}
_INLINE_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&#!])")
# GitHub and GitLab turn @name into a mention (a notification to that user or
# team) and http://, https://, www. and a@b.c into links even in escaped
# text; a zero-width space after the @ and before :// or the dot of www.
# keeps them plain text that reads the same (a ticket must not ping people
# or link to what a pod printed).
_MENTION_OR_AUTOLINK = re.compile(r"@|(?<=http)(?=://)|(?<=https)(?=://)|(?<=ftp)(?=://)"
                                  r"|(?<=www)(?=\.)", re.IGNORECASE)
_ZWSP = "&#8203;"


def inline(text: object) -> str:
    """Text safe inside a paragraph or a table cell: one line, nothing interpreted."""
    flat = " ".join(str(text).split())
    escaped = _INLINE_SPECIAL.sub(r"\\\1", flat)
    return _MENTION_OR_AUTOLINK.sub(lambda m: m.group() + _ZWSP, escaped)


def code(text: object) -> str:
    """An inline code span that survives backticks and pipes in the text."""
    flat = " ".join(str(text).split()).replace("|", "\\|")
    longest = max((len(m) for m in re.findall(r"`+", flat)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{ticks}{pad}{flat}{pad}{ticks}"


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

    out.append("#### Pods")
    out.append("")
    pods = report.pods
    if pods:
        out.append("| Pod | State | Restarts | Top finding |")
        out.append("| --- | --- | ---: | --- |")
        for pod in pods:
            out.append("| " + " | ".join([
                code(f"{pod.namespace}/{pod.name}"),
                inline(pod.state),
                str(pod.restarts),
                _top_finding(pod),
            ]) + " |")
    else:
        out.append("No vLLM server pods found (a container whose image or command names vLLM).")
    out.append("")

    findings = [(pod, f) for pod in pods for f in pod.findings]
    if findings:
        out.append("#### Findings")
        out.append("")
        for pod, f in findings:
            where = f"{pod.namespace}/{pod.name}"
            if f.container:
                where += f" ({f.container})"
            out.append(f"**{inline(SEVERITY_MARK[f.severity.value])}** "
                       f"{code(f.id)}: {inline(f.title)} on {code(where)} "
                       f"(step {f.step})")
            out.append("")
            if f.evidence:
                # Collapsed: the failing step below shows the same lines.
                out.append("<details><summary>evidence</summary>")
                out.append("")
                out.append(fenced(list(f.evidence)))
                out.append("")
                out.append("</details>")
                out.append("")

    timelines = [pod for pod in pods if pod.timeline]
    if timelines:
        out.append("#### Timeline")
        out.append("")
        for pod in timelines:
            out.append(f"{code(f'{pod.namespace}/{pod.name}')} (UTC):")
            out.append("")
            for ev in pod.timeline:
                when = utc(ev.at).removesuffix(" UTC")
                if ev.until:
                    when += f" to {utc(ev.until).removesuffix(' UTC')}"
                out.append(f"- {code(when)} {inline(ev.label)}"
                           + (f": {inline(ev.detail)}" if ev.detail else ""))
            out.append("")
        for pod in pods:
            b = pod.gpu_budget
            if b is None:
                continue
            parts = [f"card {b.total_gib:.1f} GiB"]
            for name, value in (("weights", b.weights_gib), ("KV cache", b.kv_cache_gib),
                                ("rest of vLLM's share", b.other_gib),
                                ("outside vLLM's share", b.free_gib)):
                if value is not None:
                    parts.append(f"{name} {value:.2f} GiB")
            if b.sequences_fit is not None:
                parts.append(f"{b.sequences_fit:.2f} sequences of --max-model-len "
                             f"{b.max_model_len:,} fit")
            out.append(f"GPU memory of {code(f'{pod.namespace}/{pod.name}')}: "
                       + inline("; ".join(parts)))
            out.append("")

    out.append("#### Checklist")
    out.append("")
    out.append("| # | Step | Verdict | Evidence |")
    out.append("| ---: | --- | --- | --- |")
    for s in report.checklist:
        evidence = [e for e in s.evidence if not e.startswith("  ")]
        first = inline(evidence[0]) if evidence else ""
        more = len(s.evidence) - 1
        if more > 0:
            first += f" *(+{more} more)*"
        out.append(f"| {s.step} | {inline(s.title)} | {VERDICT_MARK[s.verdict.value]} | "
                   f"{first} |")
    out.append("")

    flagged = [s for s in report.checklist if s.verdict in (Verdict.FAIL, Verdict.WARN)]
    if flagged:
        out.append("#### Evidence")
        out.append("")
        for s in flagged:
            out.append(f"**Step {s.step}. {inline(s.title)}: {VERDICT_MARK[s.verdict.value]}**")
            out.append("")
            out.append(fenced(list(s.evidence) or ["(no evidence)"]))
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
            for command in card.fix.commands:
                if card.fix.patch is None or command != card.fix.patch.command():
                    out.append(f"- run: {code(command)}")
        for cause in card.causes:
            out.append(f"- cause: {inline(cause)}")
        out.append("")
    if report.patches:
        out.append("Patches to review (never applied by vllm-triage; `--fix-dir DIR` writes "
                   "each to a file):")
        out.append("")
        for wp in report.patches:
            out.append(f"- {code(wp.workload)} ({inline(', '.join(wp.findings))}): preview "
                       f"with `kubectl diff`, apply with `kubectl patch`:")
            out.append("")
            out.append("  " + fenced([wp.patch.preview(), wp.patch.command()], "sh")
                       .replace(chr(10), chr(10) + "  "))
            out.append("")
    return out


def _top_finding(pod: PodResult) -> str:
    findings = pod.findings
    if not findings:
        return "no finding"
    top = findings[0]
    text = f"{SEVERITY_MARK[top.severity.value]} {code(top.id)}: {inline(top.title)}"
    if len(findings) > 1:
        text += " (also " + ", ".join(code(f.id) for f in findings[1:]) + ")"
    return text


def _remediation(text: str) -> list[str]:
    """Remediation is prose written for people: keep its lines, list items and
    code spans, but let no HTML through."""
    lines = []
    for line in text.splitlines():
        parts = re.split(r"(`+[^`]*`+)", line)
        safe = "".join(p if p.startswith("`") else
                       p.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
                       for p in parts)
        lines.append(safe.rstrip())
    return lines
