"""Markdown writer: a report to paste into a GitHub or GitLab issue.

A one-line verdict, one table row per pod, the checklist as a table, the
evidence of every failing or warning step in fenced blocks, the remediation,
and a footer naming the cluster context, namespace, time (UTC) and version.
Everything that came from the cluster is escaped: table cells cannot break
out of their row, and fenced blocks use a fence longer than any run of
backticks inside them, so a log line holding ``` cannot end the block.
"""

from __future__ import annotations

import re
from typing import Any

from triage.report import Report

VERDICT_MARK = {"pass": "✅ pass", "warn": "⚠️ warn", "fail": "❌ fail",
                "unknown": "❔ unknown", "n/a": "⚪ n/a"}
SEVERITY_MARK = {"critical": "🔴 critical", "warning": "🟠 warning", "info": "🔵 info"}
_INLINE_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&#!])")


def inline(text: object) -> str:
    """Text safe inside a paragraph or a table cell: one line, nothing interpreted."""
    flat = " ".join(str(text).split())
    return _INLINE_SPECIAL.sub(r"\\\1", flat)


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
    ns = report.get("namespace") or "all namespaces"
    verdict = str(report.get("verdict", "unknown"))
    mark = "❌ FAIL" if verdict == "fail" else "✅ PASS"
    out.append(f"### vLLM triage: {mark} ({inline(ns)}): {inline(report.get('summary', ''))}")
    out.append("")

    out.append("#### Pods")
    out.append("")
    pods: list[dict[str, Any]] = report.get("pods") or []
    if pods:
        out.append("| Pod | State | Restarts | Top finding |")
        out.append("| --- | --- | ---: | --- |")
        for pod in pods:
            out.append("| " + " | ".join([
                code(f"{pod['namespace']}/{pod['name']}"),
                inline(pod.get("state", "")),
                str(pod.get("restarts", 0)),
                _top_finding(pod),
            ]) + " |")
    else:
        out.append("No vLLM server pods found (a container whose image or command names vLLM).")
    out.append("")

    findings = [(pod, f) for pod in pods for f in pod.get("findings") or []]
    if findings:
        out.append("#### Findings")
        out.append("")
        for pod, f in findings:
            where = f"{pod['namespace']}/{pod['name']}"
            if f.get("container"):
                where += f" ({f['container']})"
            out.append(f"**{inline(SEVERITY_MARK.get(f['severity'], f['severity']))}** "
                       f"{code(f['id'])}: {inline(f['title'])} on {code(where)} "
                       f"(step {f.get('step', '?')})")
            out.append("")
            if f.get("evidence"):
                # Collapsed: the failing step below shows the same lines.
                out.append("<details><summary>evidence</summary>")
                out.append("")
                out.append(fenced([str(e) for e in f["evidence"]]))
                out.append("")
                out.append("</details>")
                out.append("")

    out.append("#### Checklist")
    out.append("")
    out.append("| # | Step | Verdict | Evidence |")
    out.append("| ---: | --- | --- | --- |")
    for s in report.get("checklist") or []:
        evidence = [e for e in s.get("evidence") or [] if not str(e).startswith("  ")]
        first = inline(evidence[0]) if evidence else ""
        more = len(s.get("evidence") or []) - 1
        if more > 0:
            first += f" *(+{more} more)*"
        out.append(f"| {s['step']} | {inline(s['title'])} | "
                   f"{VERDICT_MARK.get(s['verdict'], inline(s['verdict']))} | {first} |")
    out.append("")

    flagged = [s for s in report.get("checklist") or [] if s.get("verdict") in ("fail", "warn")]
    if flagged:
        out.append("#### Evidence")
        out.append("")
        for s in flagged:
            out.append(f"**Step {s['step']}. {inline(s['title'])}: "
                       f"{VERDICT_MARK.get(s['verdict'], inline(s['verdict']))}**")
            out.append("")
            out.append(fenced([str(e) for e in s.get("evidence") or []] or ["(no evidence)"]))
            out.append("")

    remedies = [s for s in flagged if s.get("remediation")]
    if remedies:
        out.append("#### Remediation")
        out.append("")
        for s in remedies:
            out.append(f"**Step {s['step']}. {inline(s['title'])}**")
            out.append("")
            for rem in s["remediation"]:
                out.extend(_remediation(str(rem)))
                out.append("")

    if report.get("unreadable"):
        out.append("#### Could not read")
        out.append("")
        for u in report["unreadable"]:
            out.append(f"- {inline(u['what'])}: {inline(u['reason'])}")
        out.append("")
    if report.get("warnings"):
        out.append("#### Warnings")
        out.append("")
        for w in report["warnings"]:
            out.append(f"- {inline(w)}")
        out.append("")

    footer = [f"context {code(report.get('context') or '-')}",
              f"namespace {code(ns)}"]
    if report.get("selector"):
        footer.append(f"selector {code(report['selector'])}")
    footer.append(f"collected {inline(utc(report.get('generated_at')))}")
    footer.append(f"vllm-triage {inline(report.get('tool_version', ''))}")
    out.append("---")
    out.append("")
    out.append("<sub>" + " · ".join(footer) + "</sub>")
    return "\n".join(out) + "\n"


def _top_finding(pod: dict[str, Any]) -> str:
    findings = pod.get("findings") or []
    if not findings:
        return "no finding"
    top = findings[0]
    text = (f"{SEVERITY_MARK.get(top['severity'], inline(top['severity']))} {code(top['id'])}: "
            f"{inline(top['title'])}")
    if len(findings) > 1:
        text += " (also " + ", ".join(code(f["id"]) for f in findings[1:]) + ")"
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
