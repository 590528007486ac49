"""Writers: one module per report format, each rendering the typed ``Report`` and nothing
else, so every format says the same thing (``table``, ``json_report``, ``yaml_report``,
``markdown``, ``html`` with its ``svg`` pictures). What they show alike is computed once in
``triage.report``."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from triage.results import Report

__all__ = ["Writer", "chunks", "writers"]

Writer = Callable[[Report, bool], str]


def writers() -> dict[str, Writer]:
    """Format -> writer; each writer's module (and what it needs: rich, the HTML page's
    SVG) is imported when that format is written, not for the others."""
    def late(module: str) -> Writer:
        def render(report: Report, color: bool) -> str:
            from importlib import import_module

            writer: Writer = import_module(f"triage.writers.{module}").render
            return writer(report, color)
        return render

    return {"table": late("table"), "json": late("json_report"), "yaml": late("yaml_report"),
            "markdown": late("markdown"), "html": late("html")}


def chunks(fmt: str, report: Report, color: bool, render: Writer) -> Iterable[str]:
    """The report in pieces to write one after the other: a pod at a time where the
    format allows (JSON: a namespace of thousands of pods never holds the whole text),
    else ``render``'s text whole."""
    if fmt == "json":
        from triage.writers import json_report

        return json_report.chunks(report)
    return (render(report, color),)
