"""JSON writer: the report document (schema vllm-triage/report/v1), for scripts and tickets."""

from __future__ import annotations

import json

from triage.results import Report


def render(report: Report, color: bool = False) -> str:
    return json.dumps(report.to_document(), indent=2, ensure_ascii=False) + "\n"
