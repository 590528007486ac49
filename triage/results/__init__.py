"""The results every stage hands on and every writer takes.

Frozen dataclasses with enums for verdicts and severities: nothing is
mutated after it is built. ``Report.to_document`` gives the JSON document
of schema ``vllm-triage/report/v1``, whose shape is a public contract.

The modules:

- ``verdicts``: ``Verdict`` (a step's) and ``Severity`` (a finding's);
- ``findings``: ``Finding``, the ``Location`` of the fields it is about, its ``Fix``
  and ``Patch``; ``Unevaluated``, a rule that could not be evaluated;
- ``pods``: ``PodResult``, one pod's findings with its timeline, GPU budget and series;
- ``document``: ``Report`` and the rows it holds beside the pods (cards, the checklist,
  combined patches, what was unreadable), its JSON document and back; ``map_strings``.

This face re-exports the public names.
"""

from __future__ import annotations

from triage.results.document import (
    SCHEMA,
    BesideFinding,
    Card,
    PrometheusSource,
    Report,
    StepResult,
    Unreadable,
    WorkloadPatch,
    map_strings,
)
from triage.results.findings import PATCH_RESOURCES, Finding, Fix, Location, Patch, Unevaluated
from triage.results.pods import TIMELINE_KINDS, GpuBudget, PodResult, TimelineEvent, WindowSeries
from triage.results.verdicts import Severity, Verdict

__all__ = [
    "PATCH_RESOURCES",
    "SCHEMA",
    "TIMELINE_KINDS",
    "BesideFinding",
    "Card",
    "Finding",
    "Fix",
    "GpuBudget",
    "Location",
    "Patch",
    "PodResult",
    "PrometheusSource",
    "Report",
    "Severity",
    "StepResult",
    "TimelineEvent",
    "Unevaluated",
    "Unreadable",
    "Verdict",
    "WindowSeries",
    "WorkloadPatch",
    "map_strings",
]
