"""``vllm-triage scan``: read the cluster, print the diagnosis and the checklist."""

from __future__ import annotations

from typing import Annotated

import typer

from triage.commands.common import (
    AllNsOpt,
    ContextOpt,
    DebugOpt,
    FixDirOpt,
    KubeconfigOpt,
    NamespaceOpt,
    Output,
    OutputFileOpt,
    PatternsOpt,
    PromCaOpt,
    PrometheusArgs,
    PrometheusOpt,
    PromInsecureOpt,
    PromPasswordOpt,
    PromTokenOpt,
    PromUserOpt,
    SelectorOpt,
    SinceOpt,
    TailOpt,
    TimeoutOpt,
    emit,
    guard,
    live_collector,
    progress,
)


def scan(
    namespace: NamespaceOpt = None,
    all_namespaces: AllNsOpt = False,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    selector: SelectorOpt = None,
    output: Annotated[Output, typer.Option("-o", "--output", help="Report format.")] = Output.table,
    output_file: OutputFileOpt = None,
    fix_dir: FixDirOpt = None,
    request_timeout: TimeoutOpt = "30s",
    tail_lines: TailOpt = 3000,
    patterns: PatternsOpt = None,
    prometheus: PrometheusOpt = None,
    since: SinceOpt = "30m",
    prometheus_token: PromTokenOpt = None,
    prometheus_user: PromUserOpt = None,
    prometheus_password: PromPasswordOpt = None,
    prometheus_ca_file: PromCaOpt = None,
    prometheus_insecure_skip_tls_verify: PromInsecureOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Read the cluster and print the diagnosis and the 10-step checklist."""
    prom = PrometheusArgs(prometheus, since, prometheus_token, prometheus_user,
                          prometheus_password, prometheus_ca_file,
                          prometheus_insecure_skip_tls_verify)
    with guard(debug):
        with progress() as tick:
            collector = live_collector(namespace, all_namespaces, kubeconfig, context,
                                       selector, request_timeout, tail_lines, tick, prom)
            snap = collector.begin()
            # Each pod is analysed as soon as its reads are in, while the others are read.
            with collector.reading(snap) as arrivals:
                # Loaded now, while the first reads are under way.
                from triage import pipeline

                report = pipeline.analyze(snap, list(patterns or []), arrivals)
        emit(report, output, output_file, fix_dir)
    raise typer.Exit(pipeline.exit_code(report))
