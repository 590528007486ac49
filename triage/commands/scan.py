"""``vllm-triage scan``: read the cluster, print the diagnosis and the checklist."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import typer

from triage.collect import InputError
from triage.commands.common import (
    Output,
    check_report_flags,
    emit,
    guard,
    live_collector,
    progress,
    report_format,
    say,
    use_color,
    write_fixes,
    write_report,
)
from triage.commands.options import (
    NO_PROMETHEUS,
    AllContextsOpt,
    AllNsOpt,
    ContextsOpt,
    DebugOpt,
    FailOnOpt,
    FixDirOpt,
    KubeconfigOpt,
    NamespaceOpt,
    OutputFileOpt,
    OutputOpt,
    PatternsOpt,
    PrometheusArgs,
    QuietOpt,
    SelectorOpt,
    TailOpt,
    TimeoutOpt,
    with_prometheus_options,
)


@with_prometheus_options
def scan(
    namespace: NamespaceOpt = None,
    all_namespaces: AllNsOpt = False,
    kubeconfig: KubeconfigOpt = None,
    context: ContextsOpt = None,
    all_contexts: AllContextsOpt = False,
    selector: SelectorOpt = None,
    output: OutputOpt = "table",
    output_file: OutputFileOpt = None,
    fix_dir: FixDirOpt = None,
    quiet: QuietOpt = False,
    fail_on: FailOnOpt = "critical",
    request_timeout: TimeoutOpt = "30s",
    tail_lines: TailOpt = 3000,
    patterns: PatternsOpt = None,
    prometheus: PrometheusArgs = NO_PROMETHEUS,  # the --prometheus options
    debug: DebugOpt = False,
) -> None:
    """Read the cluster and print the diagnosis and the 10-step checklist."""
    with guard(debug):
        fmt = report_format(output)
        check_report_flags(output_file, quiet, fail_on)
    contexts = list(dict.fromkeys(context or []))
    if all_contexts or len(contexts) > 1:
        scan_clusters(contexts, all_contexts, namespace, all_namespaces, kubeconfig, selector,
                      fmt, output_file, request_timeout, tail_lines, patterns, prometheus, debug,
                      quiet=quiet, fail_on=fail_on, fix_dir=fix_dir)
    with guard(debug):
        with progress() as tick:
            collector = live_collector(namespace, all_namespaces, kubeconfig,
                                       contexts[0] if contexts else None,
                                       selector, request_timeout, tail_lines, tick, prometheus)
            snap = collector.begin()
            # Each pod is analysed as soon as its reads are in, while the others are read.
            with collector.reading(snap) as arrivals:
                # Loaded now, while the first reads are under way.
                from triage import pipeline

                report = pipeline.analyze(snap, list(patterns or []), arrivals)
        emit(report, fmt, output_file, quiet, fix_dir)
    raise typer.Exit(pipeline.exit_code(report, fail_on))


def scan_clusters(contexts: list[str], all_contexts: bool, namespace: str | None,
                  all_namespaces: bool, kubeconfig: str | None, selector: str | None,
                  output: Output, output_file: Path | None, request_timeout: str,
                  tail_lines: int, patterns: list[Path] | None, prom: PrometheusArgs,
                  debug: bool, quiet: bool = False, fail_on: str = "critical",
                  fix_dir: Path | None = None) -> None:
    """scan over several clusters: read in parallel, one report with a section each;
    --fail-on, -q and --fix-dir apply to the whole run (patch files named per cluster)."""
    from triage.clusters import scan as fleet
    from triage.clusters.report import render

    with guard(debug):
        if all_contexts:
            from triage.collect.live import list_contexts

            if contexts:
                raise InputError("give either --context or --all-contexts, not both")
            contexts = list_contexts(kubeconfig)

        def make(ctx: str) -> object:
            return live_collector(namespace, all_namespaces, kubeconfig, ctx, selector,
                                  request_timeout, tail_lines, lambda _msg: None, prom)

        with progress() as tick:
            tick(f"{len(contexts)} clusters")
            sections = fleet.scan_contexts(contexts, make, list(patterns or []))
        for s in sections:
            if s.report is None:
                say(f"vllm-triage: warning: cluster {s.context}: {s.error}")
        if fix_dir is not None:
            from triage.fixes import files as fixdir

            # The commands printed name the files where they are written.
            sections = [s if s.report is None else
                        dataclasses.replace(s, report=fixdir.placed(s.report, fix_dir))
                        for s in sections]
            write_fixes([s.report for s in sections if s.report is not None], fix_dir)
        if output_file is not None:
            if write_report(output_file, lambda: render(sections, output.value)) and not quiet:
                say(f"report written to {output_file}")
                sys.stdout.write(render(sections, "table", use_color()))
        else:
            sys.stdout.write(render(sections, output.value,
                                    output is Output.table and use_color()))
        sys.stdout.flush()
    raise typer.Exit(fleet.exit_code(sections, fail_on))
