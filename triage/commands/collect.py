"""``vllm-triage collect``: save everything scan reads, redacted, into a bundle."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from triage.collect import InputError
from triage.commands.common import (
    AllNsOpt,
    ContextOpt,
    DebugOpt,
    KubeconfigOpt,
    NamespaceOpt,
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
    guard,
    live_collector,
    progress,
    say,
)


def collect(
    output: Annotated[Path, typer.Option("-o", "--output", help="Bundle file to write "
                                         "(.tar.gz).")],
    namespace: NamespaceOpt = None,
    all_namespaces: AllNsOpt = False,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    selector: SelectorOpt = None,
    request_timeout: TimeoutOpt = "30s",
    tail_lines: TailOpt = 3000,
    prometheus: PrometheusOpt = None,
    since: SinceOpt = "30m",
    prometheus_token: PromTokenOpt = None,
    prometheus_user: PromUserOpt = None,
    prometheus_password: PromPasswordOpt = None,
    prometheus_ca_file: PromCaOpt = None,
    prometheus_insecure_skip_tls_verify: PromInsecureOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Save everything scan reads (redacted) into a bundle for offline analysis."""
    from triage.collect import bundle

    prom = PrometheusArgs(prometheus, since, prometheus_token, prometheus_user,
                          prometheus_password, prometheus_ca_file,
                          prometheus_insecure_skip_tls_verify)
    with guard(debug):
        with progress() as tick:
            snap = live_collector(namespace, all_namespaces, kubeconfig, context, selector,
                                  request_timeout, tail_lines, tick, prom).collect()
        try:
            bundle.write(snap, output)
        except OSError as exc:
            raise InputError(f"cannot write {output}: {exc.strerror or exc}") from None
        failures = len(snap.failures)
        say(f"bundle written to {output}"
            + (f" ({failures} read(s) failed, listed inside)" if failures else ""))
