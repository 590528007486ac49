"""HTML writer: one self-contained page, easy to read on screen and on paper.

No external asset, no script: inline CSS only, ``<details>`` for evidence
(open for failing and warning steps, so they print expanded). Every string
from the report passes ``html.escape``: a log line may hold ``<script>``.
"""

from __future__ import annotations

from html import escape

from triage.fixes import commands as patch_commands
from triage.fixes import files as fixdir
from triage.report.shown import beside_of, incident_window, pods_label
from triage.results import PodResult, Report
from triage.safety import codespans
from triage.snapshot import format_window
from triage.writers import svg
from triage.writers.markdown import utc

CSS = """
:root { color-scheme: light; --fail: #b42318; --warn: #b54708; --pass: #067647;
  --unknown: #6941c6; --na: #667085; --line: #d0d5dd; --soft: #f2f4f7; }
* { box-sizing: border-box; }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif;
  color: #101828; background: #fff; margin: 0 auto; max-width: 1100px; padding: 24px; }
h1 { font-size: 1.4em; margin: 0 0 4px; }
h2 { font-size: 1.15em; margin: 28px 0 8px; border-bottom: 1px solid var(--line);
  padding-bottom: 4px; }
h3 { font-size: 1em; margin: 16px 0 6px; }
.summary { font-size: 1.05em; margin: 8px 0 0; }
.verdict { display: inline-block; padding: 2px 10px; border-radius: 4px; color: #fff;
  font-weight: 700; letter-spacing: .03em; }
.verdict.fail { background: var(--fail); } .verdict.pass { background: var(--pass); }
.verdict.warn { background: var(--warn); } .verdict.unknown { background: var(--unknown); }
.badge { display: inline-block; padding: 0 8px; border-radius: 10px; font-size: .85em;
  font-weight: 600; border: 1px solid currentColor; white-space: nowrap; }
.v-fail, .s-critical { color: var(--fail); } .v-warn, .s-warning { color: var(--warn); }
.v-pass { color: var(--pass); } .v-unknown, .s-info { color: var(--unknown); }
.v-na { color: var(--na); }
table { border-collapse: collapse; width: 100%; margin: 6px 0 12px; }
th, td { border: 1px solid var(--line); padding: 5px 8px; text-align: left;
  vertical-align: top; }
th { background: var(--soft); font-weight: 600; }
table.checklist th:nth-child(1) { width: 2.5em; }
table.checklist th:nth-child(2) { width: 28%; }
table.checklist th:nth-child(3) { width: 6.5em; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.row-fail td:first-child { border-left: 4px solid var(--fail); }
tr.row-warn td:first-child { border-left: 4px solid var(--warn); }
code { font: .9em/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  background: var(--soft); padding: 0 3px; border-radius: 3px; overflow-wrap: anywhere; }
pre { font: 12.5px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  background: var(--soft); border: 1px solid var(--line); border-radius: 4px; padding: 8px 10px;
  margin: 6px 0; white-space: pre-wrap; overflow-wrap: anywhere; }
details { margin: 6px 0 10px; border: 1px solid var(--line); border-radius: 4px;
  padding: 4px 10px; }
details > summary { cursor: pointer; font-weight: 600; }
details[open] > summary { margin-bottom: 4px; }
.remedy { margin: 4px 0 12px; }
.remedy p { margin: 4px 0; }
.remedy ul { margin: 4px 0 8px; padding-left: 22px; }
.muted { color: var(--na); }
.cards { margin: 14px 0 8px; }
.card { border: 1px solid var(--line); border-left: 5px solid var(--na); border-radius: 4px;
  padding: 6px 12px; margin: 8px 0; }
.card.critical { border-left-color: var(--fail); } .card.warning { border-left-color: var(--warn); }
.card h2 { border: 0; margin: 2px 0; padding: 0; font-size: 1.05em; }
.card p, .card .fix p { margin: 3px 0; }
.card .fix ul { margin: 2px 0 4px; padding-left: 22px; }
.card .sev { text-transform: uppercase; font-size: .8em; letter-spacing: .04em; }
.card.critical .sev { color: var(--fail); } .card.warning .sev { color: var(--warn); }
.card .fix { background: #ecfdf3; border-radius: 3px; padding: 2px 8px; margin: 4px 0; }
.card .cause { color: var(--warn); }
.patch h3 { margin: 10px 0 2px; }
footer { margin-top: 32px; padding-top: 8px; border-top: 1px solid var(--line);
  color: var(--na); font-size: .85em; }
@media print {
  body { max-width: none; padding: 0; font-size: 11pt; }
  h2 { break-after: avoid; }
  tr, pre, details { break-inside: avoid; }
  details { border: none; padding: 0; }
  details > summary { list-style: none; }
  details > summary::-webkit-details-marker { display: none; }
  .verdict, .badge, th, pre, code { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
}
"""

_VERDICT_CLASS = {"pass": "v-pass", "warn": "v-warn", "fail": "v-fail", "unknown": "v-unknown",
                  "n/a": "v-na"}
_SEVERITY_CLASS = {"critical": "s-critical", "warning": "s-warning", "info": "s-info"}


def e(value: object) -> str:
    return escape(str(value), quote=True)


def _verdict(verdict: str) -> str:
    return f'<span class="badge {_VERDICT_CLASS.get(verdict, "v-na")}">{e(verdict)}</span>'


def _severity(severity: str) -> str:
    return f'<span class="badge {_SEVERITY_CLASS.get(severity, "s-info")}">{e(severity)}</span>'


def _pre(lines: list[str]) -> str:
    return "<pre>" + e("\n".join(lines)) + "</pre>"


def render(report: Report, color: bool = False) -> str:
    ns = report.namespace or "all namespaces"
    verdict = report.verdict.value
    title = f"vLLM triage: {verdict.upper()} in {ns}"
    parts: list[str] = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{e(title)}</title>",
        f"<style>{CSS}{svg.CSS}</style>",
        "</head>",
        "<body>",
        "<header>",
        f'<h1>vLLM triage <span class="verdict {verdict}">'
        f"{e(verdict.upper())}</span></h1>",
        f'<p class="summary">{e(report.summary)}</p>',
        f'<p class="muted">namespace <code>{e(ns)}</code> · context '
        f'<code>{e(report.context or "-")}</code> · collected '
        f'{e(utc(report.generated_at))}</p>',
    ]
    if report.prometheus is not None:
        prom = report.prometheus
        window = format_window(prom.window_seconds)
        parts.append(f'<p class="muted">latency and queue over the last {e(window)} from '
                     f"Prometheus: {e(prom.source)}</p>")
    parts += [
        "</header>",
    ]
    parts += _cards(report)
    parts += _pods(report.pods)
    parts += _checklist(report)
    if report.unreadable:
        parts.append("<h2>Could not read</h2><ul>")
        parts += [f"<li>{e(u.what)}: {e(u.reason)}</li>" for u in report.unreadable]
        parts.append("</ul>")
    if report.warnings:
        parts.append("<h2>Warnings</h2><ul>")
        parts += [f"<li>{e(w)}</li>" for w in report.warnings]
        parts.append("</ul>")
    footer = [f"context <code>{e(report.context or '-')}</code>",
              f"namespace <code>{e(ns)}</code>"]
    if report.selector:
        footer.append(f"selector <code>{e(report.selector)}</code>")
    footer += [f"collected {e(utc(report.generated_at))}",
               f"vllm-triage {e(report.tool_version)}",
               f"schema {e(report.schema)}"]
    parts.append("<footer>" + " · ".join(footer) + "</footer>")
    parts += ["</body>", "</html>"]
    return "\n".join(parts) + "\n"


def _pods(pods: tuple[PodResult, ...]) -> list[str]:
    out = ["<h2>Pods</h2>"]
    if not pods:
        out.append("<p>No vLLM server pods found (a container whose image or command names "
                   "vLLM). Use <code>-l</code> to select pods by label.</p>")
        return out
    out.append("<table><thead><tr><th>Pod</th><th>State</th><th>Restarts</th><th>Node</th>"
               "<th>Top finding</th></tr></thead><tbody>")
    for pod in pods:
        findings = pod.findings
        if findings:
            top = findings[0]
            cell = f"{_severity(top.severity.value)} <code>{e(top.id)}</code> {e(top.title)}"
            if len(findings) > 1:
                cell += " <span class=\"muted\">(also " + ", ".join(
                    f"<code>{e(f.id)}</code>" for f in findings[1:]) + ")</span>"
        else:
            cell = '<span class="v-pass">no finding</span>'
        out.append(f"<tr><td><code>{e(pod.namespace)}/{e(pod.name)}</code></td>"
                   f"<td>{e(pod.state)}</td>"
                   f"<td class=\"num\">{e(pod.restarts)}</td>"
                   f"<td>{e(pod.node or '-')}</td><td>{cell}</td></tr>")
    out.append("</tbody></table>")
    for pod in pods:
        for f in pod.findings:
            where = f"{pod.namespace}/{pod.name}"
            if f.container:
                where += f" ({f.container})"
            out.append(f"<details><summary>{_severity(f.severity.value)} <code>{e(f.id)}</code> "
                       f"{e(f.title)} on <code>{e(where)}</code> (step "
                       f"{e(f.step)})</summary>")
            out.append(_pre(list(f.evidence) or ["(no evidence)"]))
            out.append("</details>")
    for pod in pods:
        out += _visuals(pod)
    return out


def _visuals(pod: PodResult) -> list[str]:
    """The pod's timeline, GPU memory budget and window charts, as inline SVG."""
    name = f"{pod.namespace}/{pod.name}"
    drawn: list[str] = []
    history, incident = incident_window(pod.timeline)
    line = svg.timeline(incident, f"timeline of {name}")
    if line:
        earlier = ""
        if history:
            earlier = ('<p class="history">Earlier: ' + "; ".join(
                f"{e(utc(ev.at))} {e(ev.label)}" for ev in history) + "</p>")
        drawn.append(f"<h3>Timeline of <code>{e(name)}</code></h3>{earlier}{line}")
    if pod.gpu_budget is not None:
        drawn.append(f"<h3>GPU memory of <code>{e(name)}</code></h3>"
                     + svg.budget(pod.gpu_budget, f"GPU memory budget of {name}"))
        drawn.append('<ul class="budget-notes">' + "".join(
            f"<li>{e(n)}</li>" for n in pod.gpu_budget.notes) + "</ul>")
    charts = [c for c in (svg.chart(s) for s in pod.series) if c]
    if charts:
        drawn.append(f"<h3>Over the Prometheus window: <code>{e(name)}</code></h3>"
                     '<div class="charts">' + "".join(charts) + "</div>")
    if not drawn:
        return []
    return [f'<section class="visual" id="pod-{e(pod.namespace)}-{e(pod.name)}">',
            *drawn, "</section>"]


def _checklist(report: Report) -> list[str]:
    steps = report.checklist
    out = ["<h2>10-step checklist</h2>",
           '<table class="checklist"><thead><tr><th>#</th><th>Step</th><th>Verdict</th>'
           "<th>Evidence</th></tr>"
           "</thead><tbody>"]
    for s in steps:
        verdict = s.verdict.value
        evidence = list(s.evidence)
        top = [x for x in evidence if not x.startswith("  ")]
        first = e(top[0]) if top else ""
        if len(evidence) > 1:
            first += (f' <span class="muted">(+{len(evidence) - 1} more in the evidence of '
                      f"step {e(s.step)}, below)</span>")
        row_class = f' class="row-{verdict}"' if verdict in ("fail", "warn") else ""
        out.append(f"<tr{row_class}><td class=\"num\">{e(s.step)}</td><td>{e(s.title)}"
                   f"</td><td>{_verdict(verdict)}</td><td>{first}</td></tr>")
        for b in beside_of(report, s.step):
            mark = b.verdict.value
            out.append(f'<tr class="row-{e(mark)} beside"><td class="num">&#8627;</td><td>'
                       f"<code>{e(b.id)}</code> {e(b.title)} (beside step {e(s.step)})</td>"
                       f"<td>{_verdict(mark)}</td><td>on {e(pods_label(b.pods))}</td></tr>")
    out.append("</tbody></table>")
    out.append("<h2>Evidence</h2>")
    for s in steps:
        verdict = s.verdict.value
        is_open = " open" if verdict in ("fail", "warn") else ""
        evidence = list(s.evidence) or ["(no evidence)"]
        out.append(f'<details{is_open} id="step-{e(s.step)}"><summary>Step {e(s.step)}. '
                   f"{e(s.title)} {_verdict(verdict)}</summary>")
        out.append(_pre(evidence))
        out.append("</details>")
    return out


PROOF_CHARS = 400


def _cards(report: Report) -> list[str]:
    """The answer first: one card per workload and failure, then the patches to review."""
    if not report.cards:
        return []
    out = ['<section class="cards">']
    for card in report.cards:
        proof = " ".join(card.proof.split())
        if len(proof) > PROOF_CHARS:
            proof = proof[:PROOF_CHARS - 3] + "..."
        out.append(f'<div class="card {e(card.severity.value)}">')
        out.append(f'<h2><span class="sev">{e(card.severity.value)}</span> '
                   f"<code>{e(card.finding)}</code> {e(card.title)}</h2>")
        out.append(f'<p class="muted">{e(card.scope)} · step {e(card.step)}</p>')
        out.append(f'<p class="proof"><strong>proof</strong> <code>{e(proof)}</code></p>')
        if card.fix is not None:
            out.append(f'<div class="fix"><strong>fix</strong> {_prose(card.fix.text)}</div>')
            for command in card.fix.run:
                out.append(f'<p class="cmd"><code>{e(command)}</code></p>')
        for cause in card.causes:
            out.append(f'<p class="cause"><strong>cause</strong> {e(cause)}</p>')
        out.append("</div>")
    for wp in report.patches:
        out.append('<div class="patch">')
        out.append(f"<h3>Patch for {e(wp.workload)} ({e(', '.join(wp.findings))})</h3>")
        out.append(f"<details><summary><code>{e(wp.file)}</code> (--fix-dir DIR writes it)"
                   f"</summary>{_pre(fixdir.body_yaml(wp.patch.body, width=100).splitlines())}"
                   "</details>")
        out.append("<p class=\"muted\">never applied by vllm-triage; preview, then apply:</p>")
        out.append(_pre(patch_commands.lines(wp.patch, report.kubectl, wp.file, preview=True)
                        + patch_commands.lines(wp.patch, report.kubectl, wp.file)))
        out.append("</div>")
    out.append("</section>")
    return out


def _inline(text: str) -> str:
    """Prose escaped, its code spans as <code> (split as CommonMark splits them)."""
    return "".join(f"<code>{e(part)}</code>" if is_code else e(part)
                   for is_code, part in codespans.split(text))


def _prose(text: str) -> str:
    """Remediation as written in the pattern files: paragraphs and '- ' lists, `code`."""
    blocks: list[str] = []
    para: list[str] = []
    items: list[list[str]] = []

    def flush_para() -> None:
        if para:
            blocks.append(f"<p>{_inline(' '.join(para))}</p>")
            para.clear()

    def flush_list() -> None:
        if items:
            blocks.append("<ul>" + "".join(f"<li>{_inline(' '.join(i))}</li>" for i in items)
                          + "</ul>")
            items.clear()

    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            flush_para()
            flush_list()
        elif line.startswith(("- ", "* ")):
            flush_para()
            items.append([line[2:].strip()])
        elif items and raw[:1].isspace():
            items[-1].append(line)  # a list item continued on an indented line
        else:
            flush_list()
            para.append(line)
    flush_para()
    flush_list()
    return "".join(blocks)
