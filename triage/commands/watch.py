"""``vllm-triage watch``: triage on an interval, findings as Prometheus metrics, the report
on one port. The loop, the metrics and the server live in ``triage.watch``."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from triage.collect import InputError
from triage.commands.common import (
    EXIT_OK,
    Terminated,
    guard,
    parse_duration,
    prometheus_options,
    say,
)
from triage.commands.options import (
    NO_PROMETHEUS,
    AllContextsOpt,
    AllNsOpt,
    ContextsOpt,
    DebugOpt,
    KubeconfigOpt,
    NamespaceOpt,
    PatternsOpt,
    PrometheusArgs,
    SelectorOpt,
    TailOpt,
    TimeoutOpt,
    with_prometheus_options,
)

if TYPE_CHECKING:
    from triage.watch.cycle import ClusterWatch

EPILOG = """\
Examples:

\b
  vllm-triage watch -n llm                      # every 60s and on a restart; :8080
  vllm-triage watch -A -l app=vllm --interval 2m --listen 127.0.0.1:9090
  vllm-triage watch --context prod-a --context prod-b   # one loop per cluster
  kubectl apply -k deploy/watch                 # in the cluster, with alerts

\b
Serves /metrics (Prometheus), /report (HTML), /report.json, /report.md,
/healthz and /readyz. SIGTERM stops it cleanly (exit 0).
"""


@with_prometheus_options
def watch(
    namespace: NamespaceOpt = None,
    all_namespaces: AllNsOpt = False,
    kubeconfig: KubeconfigOpt = None,
    context: ContextsOpt = None,
    all_contexts: AllContextsOpt = False,
    selector: SelectorOpt = None,
    interval: Annotated[str, typer.Option(
        "--interval", metavar="DURATION", help="Time between triage cycles, a Go duration "
        "as kubectl takes it (30s, 1m30s, 2m; at most 24h); a vLLM pod's restart or readiness "
        "change starts one sooner.")] = "60s",
    listen: Annotated[str, typer.Option(
        "--listen", metavar="HOST:PORT", help="Address to serve /metrics and /report on.")
    ] = "0.0.0.0:8080",
    cluster_name: Annotated[str | None, typer.Option(
        "--cluster-name", metavar="NAME", help="The cluster label of every series "
        "(default: the context's name; set it in the cluster, where the context is "
        "'in-cluster').")] = None,
    report_url: Annotated[str, typer.Option(
        "--report-url", metavar="URL", help="Where people reach /report (for the "
        "alerts' links), e.g. https://triage.example.com/report.")] = "",
    request_timeout: TimeoutOpt = "30s",
    tail_lines: TailOpt = 3000,
    patterns: PatternsOpt = None,
    prometheus: PrometheusArgs = NO_PROMETHEUS,  # the --prometheus options
    debug: DebugOpt = False,
) -> None:
    """Triage on an interval in the cluster; serve the findings as Prometheus metrics."""
    from triage.watch.run import parse_interval, parse_listen, serve

    stop = threading.Event()
    with guard(debug):
        try:
            every = parse_interval(interval)
            address = parse_listen(listen)
        except ValueError as exc:
            raise InputError(str(exc)) from None
        contexts: list[str | None] = list(dict.fromkeys(context or [])) or [None]
        several = ("--cluster-name names one cluster; with several contexts each series "
                   "carries its context's name")
        if cluster_name and len(contexts) > 1:
            raise InputError(several)
        if all_contexts or len(contexts) > 1:
            from triage.collect.live import list_contexts

            if all_contexts:
                if context:
                    raise InputError("give either --context or --all-contexts, not both")
                known = list_contexts(kubeconfig)  # an unreadable kubeconfig is exit 2
                contexts = list(known)
            else:
                try:
                    known = list_contexts(kubeconfig)
                except InputError:  # (several files in $KUBECONFIG): each loop says it
                    known = [c for c in contexts if c]
            unknown = [c for c in contexts if c not in known]
            if unknown:
                raise InputError(f"context {unknown[0]!r} not found in the kubeconfig; "
                                 f"contexts: {', '.join(known[:12])}")
            if cluster_name and len(contexts) > 1:
                raise InputError(several)
        # One cluster: a kubeconfig or credentials that cannot be loaded is an error now
        # (exit 2 or 3). Several: that cluster fails and is retried, the others go on.
        clusters = [cluster_watch(ctx, cluster_name, namespace, all_namespaces, kubeconfig,
                                  selector, request_timeout, tail_lines, prometheus,
                                  list(patterns or []), every, eager=len(contexts) == 1)
                    for ctx in contexts]
        try:
            serve(clusters, address, report_url, stop, say)
        except (KeyboardInterrupt, Terminated):
            stop.set()
            say("vllm-triage watch: stopped")
            raise typer.Exit(EXIT_OK) from None
        except OSError as exc:
            raise InputError(f"cannot listen on {listen}: {exc.strerror or exc}") from None


def cluster_watch(context: str | None, cluster_name: str | None, namespace: str | None,
                  all_namespaces: bool, kubeconfig: str | None, selector: str | None,
                  request_timeout: str, tail_lines: int, prom: PrometheusArgs,
                  patterns: list[Path], interval: float, eager: bool = True) -> ClusterWatch:
    """One cluster's loop; its connection is made once it can be and kept (tokens
    refresh in it). ``eager``: connect now, so that a bad kubeconfig is an error."""
    from triage.collect.live import Connection, Options
    from triage.watch.cycle import ClusterWatch
    from triage.watch.source import LiveSource

    timeout = parse_duration(request_timeout)
    prom_opts = prometheus_options(prom, timeout)

    def options(conn: Connection) -> Options:
        return Options(namespace=namespace or conn.default_namespace,
                       all_namespaces=all_namespaces, selector=selector, tail_lines=tail_lines,
                       request_timeout=timeout, prometheus=prom_opts)

    source = LiveSource(kubeconfig, context, timeout, options, cluster_name)
    name = cluster_name or context
    if eager:
        name = cluster_name or source.connection().context
    return ClusterWatch(name or "default", source.collector, patterns, interval,
                        watcher_factory=source.watcher, on_stop=source.stop)
