"""The lint report as a terminal shows it, as JSON, and as GitHub workflow annotations.

The terminal form is a compiler's: ``file:line:col: severity id message``,
then the fix, indented, so editors and CI logs link straight to the field.
SARIF is ``triage.lint.sarif``.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable

from triage.lint import sarif
from triage.lint.report import LintFinding, LintReport
from triage.results import Severity

_COLOR = {Severity.CRITICAL: "\x1b[1;31m", Severity.WARNING: "\x1b[33m",
          Severity.INFO: "\x1b[36m"}
_RESET, _DIM = "\x1b[0m", "\x1b[2m"


def _where(f: LintFinding) -> str:
    return f"{f.file}:{f.line}:{f.column}"


def text(report: LintReport, color: bool = False, explain: bool = False) -> str:
    lines: list[str] = []
    for f in report.findings:
        sev = f.severity.value
        if color:
            sev = f"{_COLOR[f.severity]}{sev}{_RESET}"
        lines.append(f"{_where(f)}: {sev} {f.id} {f.message}")
        # The checklist step, as the scan report names it beside the pod.
        where = f"{f.object} {f.path}" if f.path else f.object
        lines.append(f"    {where}  (step {f.step})")
        if not f.exact:
            lines.append("    (line and column of the rendered kustomize output)")
        if f.fix:
            fix = textwrap.indent(f.fix.strip(), "      ")
            lines.append(f"    fix:\n{fix}")
    counts = {s: sum(1 for f in report.findings if f.severity is s) for s in Severity}
    summary = (f"{len(report.findings)} finding(s) in {report.workloads} vLLM workload(s) of "
               f"{report.objects} object(s): {counts[Severity.CRITICAL]} critical, "
               f"{counts[Severity.WARNING]} warning, {counts[Severity.INFO]} info")
    if report.suppressed:
        summary += f"; {len(report.suppressed)} suppressed"
    if report.skipped:
        summary += f"; {len(report.skipped)} object(s) skipped"
    lines.append(f"{_DIM}{summary}{_RESET}" if color else summary)
    if explain:
        lines += _explain(report)
    elif report.skipped or report.suppressed:
        lines.append("(--explain lists what was skipped or suppressed and which patterns "
                     "applied)")
    for warning in report.warnings:
        lines.append(f"warning: {warning}")
    return "\n".join(lines) + "\n"


def _explain(report: LintReport) -> list[str]:
    def rows(applied: bool) -> list[str]:
        lines: list[str] = []
        for p in report.patterns:
            if p.applied is not applied:
                continue
            lines.append(f"  {p.id:28} {p.reason}")
            if p.needs_running_pod:  # it ran on the spec; its other signs need a pod
                lines.append(f"  {'':28}   not decided without a running pod: "
                             f"{p.needs_running_pod}")
            # Per workload, where the pattern went undecided on some of them.
            lines += [f"  {'':28}   undecided on {label}: {why}" for label, why in p.undecided]
        return lines or ["  none"]

    out = ["", "Patterns that ran on the manifests:", *rows(True)]
    out += ["", "Patterns a manifest cannot decide (they need a running pod):", *rows(False)]
    out += ["", "Suppressed:"]
    out += [f"  {s.file}:{s.line}: {s.id} on {s.object} (by {s.by})"
            for s in report.suppressed] or ["  none"]
    out += ["", "Skipped:"]
    out += [f"  {s.file}:{s.line}: {s.object}: {s.reason}" for s in report.skipped] or \
        ["  none"]
    return out


def json_text(report: LintReport, explain: bool = False) -> str:
    return json.dumps(report.to_document(explain), indent=2, ensure_ascii=False) + "\n"


def _escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(value: str) -> str:
    return _escape_data(value).replace(":", "%3A").replace(",", "%2C")


_COMMAND = {Severity.CRITICAL: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def github(report: LintReport) -> str:
    """GitHub Actions workflow commands: one annotation per finding, on its line."""
    lines = []
    for f in report.findings:
        props = [f"file={_escape_property(f.file.split(' (kubectl kustomize)')[0])}"]
        if f.exact:
            props += [f"line={f.line}", f"col={f.column}"]
        props.append(f"title={_escape_property(f'{f.id} ({f.severity.value})')}")
        body = f"{f.message}\n{f.object} {f.path}\nFix: {f.fix}".rstrip()
        lines.append(f"::{_COMMAND[f.severity]} {','.join(props)}::{_escape_data(body)}")
    return "\n".join(lines) + ("\n" if lines else "")


Render = Callable[[LintReport, bool, bool], str]


def writers() -> dict[str, Render]:
    """Output format -> render(report, color, explain)."""
    return {
        "text": text,
        "json": lambda r, _color, explain: json_text(r, explain),
        "sarif": lambda r, _color, _explain: sarif.render(r),
        "github": lambda r, _color, _explain: github(r),
    }
