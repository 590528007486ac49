"""Several clusters in one scan: ``--context A --context B`` or ``--all-contexts``.

Each context gets its own connection (made one after the other: loading a
kubeconfig is quick and the client's loader is not thread-safe), then every
cluster is read in parallel and analysed as its reads complete; one report
comes out with a section per cluster. A cluster that cannot be reached is a
section saying so, and the others are still reported.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from triage import pipeline
from triage.clusters.report import ClusterReport
from triage.collect import ClusterUnreachable, CollectError
from triage.fixes import files
from triage.results import Report


def scan_contexts(contexts: list[str], make_collector: Callable[[str], object],
                  patterns: list[Path], workers: int = 4) -> list[ClusterReport]:
    """One ClusterReport per context, in the order given."""
    collectors: dict[str, object] = {}
    errors: dict[str, str] = {}
    for ctx in contexts:
        try:
            collectors[ctx] = make_collector(ctx)
        except CollectError as exc:
            errors[ctx] = str(exc)

    def one(ctx: str) -> Report:
        collector = collectors[ctx]
        snap = collector.begin()  # type: ignore[attr-defined]
        with collector.reading(snap) as arrivals:  # type: ignore[attr-defined]
            return pipeline.analyze(snap, patterns, arrivals)

    reports: dict[str, Report] = {}
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(collectors)))) as pool:
        futures = {ctx: pool.submit(one, ctx) for ctx in collectors}
        for ctx, fut in futures.items():
            try:
                reports[ctx] = fut.result()
            except CollectError as exc:
                errors[ctx] = str(exc)
    return with_file_names([ClusterReport(ctx, reports.get(ctx), errors.get(ctx, ""))
                            for ctx in contexts])


def with_file_names(sections: list[ClusterReport]) -> list[ClusterReport]:
    """Each cluster's patch files named with its context first ('gpu-east.llm....'),
    unique over the whole run, as --fix-dir writes them and the commands name them."""
    named = iter(files.named([(s.context, wp) for s in sections if s.report is not None
                              for wp in s.report.patches]))
    return [s if s.report is None else dataclasses.replace(s, report=dataclasses.replace(
        s.report, patches=tuple(next(named) for _ in s.report.patches)))
        for s in sections]


def exit_code(sections: list[ClusterReport], fail_on: str = "critical") -> int:
    """1 when a cluster fails (the failure is the news; with --fail-on warning, also when
    one has a step to review or a warning finding), else 3 when one could not be read
    (the answer is incomplete: never 0), else 0."""
    if any(s.report is not None and pipeline.exit_code(s.report, fail_on)
           for s in sections):
        return 1
    if any(s.report is None for s in sections):
        return ClusterUnreachable.exit_code
    return 0
