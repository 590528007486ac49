"""The commands' typer options (``Annotated`` aliases the command signatures use).

The ones ``analyze`` takes are built from ``triage/commands/flags.py``, which the
typer-free front (``triage/commands/offline.py``) parses too: one definition for both.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from triage.commands import flags
from triage.commands.common import (
    MAX_TAIL_LINES,
    Output,
    check_label_selector,
    check_pattern_dirs,
)


def _option(flag: flags.Flag, **extra: Any) -> Any:
    """The typer option of a shared flag (a switch when it takes no value)."""
    if flag.value is not None:
        extra["metavar"] = flag.value
    return typer.Option(*flag.names, help=flag.help, **extra)


# Metavars as kubectl writes them (NAMESPACE, FILE, DURATION), never Python types.
NamespaceOpt = Annotated[str | None, typer.Option(
    "-n", "--namespace", metavar="NAMESPACE",
    help="Namespace to scan (default: the kubeconfig context's).")]
AllNsOpt = Annotated[bool, typer.Option("-A", "--all-namespaces", help="Scan every namespace.")]
KubeconfigOpt = Annotated[str | None, typer.Option(
    "--kubeconfig", metavar="FILE", help="Path to the kubeconfig file (default: $KUBECONFIG, "
    "~/.kube/config, or the in-cluster service account).")]
ContextOpt = Annotated[str | None, typer.Option(
    "--context", metavar="CONTEXT", help="Kubeconfig context to use.")]
ContextsOpt = Annotated[list[str] | None, typer.Option(
    "--context", metavar="CONTEXT", help="Kubeconfig context to use; repeat it to read "
    "several clusters in parallel (one section, or one triage loop, per cluster).")]
AllContextsOpt = Annotated[bool, typer.Option(
    "--all-contexts", help="Every context of the kubeconfig (one section, or one triage "
    "loop, per cluster).")]
SelectorOpt = Annotated[str | None, typer.Option(
    "-l", "--selector", metavar="SELECTOR", callback=check_label_selector,
    help="Label selector for the vLLM pods (e.g. app=vllm); selected pods are triaged even "
    "when their image does not name vLLM.")]
TimeoutOpt = Annotated[str, typer.Option(
    "--request-timeout", metavar="DURATION", help="Wall-time limit of each API request, answer "
    "included (30s, 1m; 0 for an hour).")]
TailOpt = Annotated[int, typer.Option(
    "--tail-lines", metavar="N", help=f"Log lines read per container log (1 to "
    f"{MAX_TAIL_LINES}).")]
PrometheusOpt = Annotated[str | None, typer.Option(
    "--prometheus", metavar="URL|auto", help="Also ask this Prometheus (http(s)://host:port) "
    "about latency, the queue and the GPUs over --since; 'auto' finds a Prometheus Service in "
    "the cluster and asks it through the API server's service proxy.")]
SinceOpt = Annotated[str, typer.Option(
    "--since", metavar="DURATION",
    help="The window Prometheus is asked about, ending now (30m, 2h, 1h30m).")]
PromTokenOpt = Annotated[str | None, typer.Option(
    "--prometheus-token", metavar="TOKEN", envvar="VLLM_TRIAGE_PROMETHEUS_TOKEN",
    show_envvar=True,
    help="Bearer token for --prometheus URL.")]
PromUserOpt = Annotated[str | None, typer.Option(
    "--prometheus-user", metavar="USER", envvar="VLLM_TRIAGE_PROMETHEUS_USER", show_envvar=True,
    help="Basic-auth user for --prometheus URL.")]
PromPasswordOpt = Annotated[str | None, typer.Option(
    "--prometheus-password", metavar="PASSWORD", envvar="VLLM_TRIAGE_PROMETHEUS_PASSWORD",
    show_envvar=True,
    help="Basic-auth password for --prometheus URL (prefer the environment variable).")]
PromCaOpt = Annotated[Path | None, typer.Option(
    "--prometheus-ca-file", metavar="FILE",
    help="CA bundle that signed --prometheus URL's certificate.")]
PromInsecureOpt = Annotated[bool, typer.Option(
    "--prometheus-insecure-skip-tls-verify",
    help="Do not check --prometheus URL's certificate (like kubectl's "
    "--insecure-skip-tls-verify).")]


# analyze's options (scan and lint share some): flags.py says them once.
OutputOpt = Annotated[str, _option(flags.OUTPUT, autocompletion=lambda: [o.value for o in Output])]
OutputFileOpt = Annotated[Path | None, _option(flags.OUTPUT_FILE)]
FixDirOpt = Annotated[Path | None, _option(flags.FIX_DIR)]
QuietOpt = Annotated[bool, _option(flags.QUIET)]
FailOnOpt = Annotated[str, _option(flags.FAIL_ON_LEVEL, autocompletion=lambda: list(flags.FAIL_ON))]
PatternsOpt = Annotated[list[Path] | None, _option(flags.PATTERNS, callback=check_pattern_dirs)]
DebugOpt = Annotated[bool, _option(flags.DEBUG)]
