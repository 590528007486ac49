"""JSON writer: the report document as it is, for scripts and tickets."""

from __future__ import annotations

import json

from triage.report import Report


def render(report: Report, color: bool = False) -> str:
    return json.dumps(report, indent=2, ensure_ascii=False) + "\n"
