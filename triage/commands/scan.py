"""``vllm-triage scan``: read the cluster, print the diagnosis and the checklist."""

from __future__ import annotations

import typer

from triage.commands.common import (
    AllNsOpt,
    ContextOpt,
    DebugOpt,
    FailOnOpt,
    KubeconfigOpt,
    NamespaceOpt,
    OutputFileOpt,
    OutputOpt,
    PatternsOpt,
    PromCaOpt,
    PrometheusArgs,
    PrometheusOpt,
    PromInsecureOpt,
    PromPasswordOpt,
    PromTokenOpt,
    PromUserOpt,
    QuietOpt,
    SelectorOpt,
    SinceOpt,
    TailOpt,
    TimeoutOpt,
    check_report_flags,
    emit,
    guard,
    live_collector,
    progress,
    report_format,
)


def scan(
    namespace: NamespaceOpt = None,
    all_namespaces: AllNsOpt = False,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    selector: SelectorOpt = None,
    output: OutputOpt = "table",
    output_file: OutputFileOpt = None,
    quiet: QuietOpt = False,
    fail_on: FailOnOpt = "critical",
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
        fmt = report_format(output)
        check_report_flags(output_file, quiet, fail_on)
        with progress() as tick:
            collector = live_collector(namespace, all_namespaces, kubeconfig, context,
                                       selector, request_timeout, tail_lines, tick, prom)
            snap = collector.begin()
            # Each pod is analysed as soon as its reads are in, while the others are read.
            with collector.reading(snap) as arrivals:
                # Loaded now, while the first reads are under way.
                from triage import pipeline

                report = pipeline.analyze(snap, list(patterns or []), arrivals)
        emit(report, fmt, output_file, quiet)
    raise typer.Exit(pipeline.exit_code(report, fail_on))
