"""The report: one ``Report`` built from the judged snapshot, one writer per format.

``build`` (``model``) makes the typed ``triage.results.Report`` (its JSON form is schema
``vllm-triage/report/v1``); every writer renders that object and nothing else, so all
formats say the same thing. What they show alike is computed here once: the cards
(``cards``: the answer first, grouped by workload and failure, with their proof, fix and
causes), the combined patch of each workload (``patches``), the headline and the rows
beside the checklist (``summary``), and what the writers pick from them (``shown``).
Every string has passed the sanitiser (no control character or escape sequence reaches a
terminal or a file) and then the redactor (reports go into tickets): ``model`` is the one
place both happen, upstream of every writer.
"""

from __future__ import annotations

from triage.report.model import build, pod_result
from triage.results import Report

__all__ = ["Report", "build", "pod_result"]
