"""YAML writer: the same document as ``-o json`` (schema vllm-triage/report/v1), as kubectl users
expect from ``-o yaml``."""

from __future__ import annotations

import yaml

from triage.results import Report


def render(report: Report, color: bool = False) -> str:
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    text: str = yaml.dump(report.to_document(), Dumper=dumper, sort_keys=False,
                          allow_unicode=True, default_flow_style=False, width=100)
    return text
