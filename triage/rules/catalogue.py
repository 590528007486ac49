"""The names a pattern may use, listed for people: facts with their scope, unit and doc, and
the metrics derived from /metrics. The same text is kept in patterns/README.md."""

from __future__ import annotations

from triage.facts import describe_registry
from triage.metrics import METRICS


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
