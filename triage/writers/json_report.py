"""JSON writer: the report document (schema vllm-triage/report/v1), for scripts and tickets.

``chunks`` writes it a pod at a time: a namespace of thousands of pods never holds the
whole document (its dicts and its text) at once; ``render`` joins the same chunks."""

from __future__ import annotations

import json
from collections.abc import Iterator

from triage.results import Report

# "pods" while the rest of the document is dumped; each pod is dumped on its own in its
# place. Every string of a report is sanitised, so no cluster text dumps as this.
_PODS = "\x00pods\x00"
_INDENT = 2


def _dumps(value: object) -> str:
    return json.dumps(value, indent=_INDENT, ensure_ascii=False)


def chunks(report: Report) -> Iterator[str]:
    """The document's text in pieces, the same bytes as one ``json.dumps`` of it."""
    doc = report.to_document(pods=False)
    doc["pods"] = _PODS
    head, tail = _dumps(doc).split(f'"pods": {_dumps(_PODS)}', 1)
    yield head + '"pods": '
    if not report.pods:
        yield "[]"
    else:
        # A pod is two levels deep ("pods" in the document, an item of the list): its
        # lines get that indentation (a newline in a string is dumped as \n, never raw).
        pad = " " * (2 * _INDENT)
        for i, pod in enumerate(report.pods):
            yield ("[\n" if i == 0 else ",\n") + pad + _dumps(pod.to_document()).replace(
                "\n", "\n" + pad)
        yield "\n" + " " * _INDENT + "]"
    yield tail + "\n"


def render(report: Report, color: bool = False) -> str:
    return "".join(chunks(report))
