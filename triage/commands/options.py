"""The commands' typer options, each declared once: ``Annotated`` aliases the command
signatures use, and the seven ``--prometheus`` options as the fields of ``PrometheusArgs``
(``with_prometheus_options`` gives a command all of them).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Annotated, Any, get_type_hints

import typer

from triage.commands.common import (
    MAX_TAIL_LINES,
    Output,
    check_label_selector,
    check_pattern_dirs,
)

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

# The report's options (analyze, scan; lint and patterns share some).
OutputOpt = Annotated[str, typer.Option(
    "-o", "--output", metavar="FORMAT",
    help=f"Report format: {', '.join(o.value for o in Output)}.",
    autocompletion=lambda: [o.value for o in Output])]
OutputFileOpt = Annotated[Path | None, typer.Option(
    "--output-file", metavar="FILE", help="Write the report to this file (the terminal still "
    "gets the table, unless --quiet).")]
FixDirOpt = Annotated[Path | None, typer.Option(
    "--fix-dir", metavar="DIR", help="Write one reviewable patch file per workload into DIR, "
    "with the kubectl patch / kubectl diff commands for it (never applied by vllm-triage).")]
QuietOpt = Annotated[bool, typer.Option(
    "-q", "--quiet", help="With --output-file: print nothing but errors (no table).")]
FailOnOpt = Annotated[str, typer.Option(
    "--fail-on", metavar="LEVEL", help="What exits 1: critical (a failing step or a critical "
    "finding) or warning (also a step to review, a warning finding).",
    autocompletion=lambda: ["critical", "warning"])]
PatternsOpt = Annotated[list[Path] | None, typer.Option(
    "--patterns", metavar="DIR", callback=check_pattern_dirs,
    help="Extra directory of pattern files (repeatable); a file with the id of a built-in "
    "pattern replaces it.")]
DebugOpt = Annotated[bool, typer.Option("--debug", help="Show tracebacks on internal errors.")]


@dataclass(frozen=True)
class PrometheusArgs:
    """The ``--prometheus`` options as given. Each field is one option, declared here
    only: its annotation carries the typer option, its name is the command parameter's."""

    prometheus: Annotated[str | None, typer.Option(  # the URL, or auto
        "--prometheus", metavar="URL|auto", help="Also ask this Prometheus (http(s)://host:port) "
        "about latency, the queue and the GPUs over --since; 'auto' finds a Prometheus Service "
        "in the cluster and asks it through the API server's service proxy.")] = None
    since: Annotated[str, typer.Option(
        "--since", metavar="DURATION",
        help="The window Prometheus is asked about, ending now (30m, 2h, 1h30m).")] = "30m"
    prometheus_token: Annotated[str | None, typer.Option(
        "--prometheus-token", metavar="TOKEN", envvar="VLLM_TRIAGE_PROMETHEUS_TOKEN",
        show_envvar=True,
        help="Bearer token for --prometheus URL.")] = None
    prometheus_user: Annotated[str | None, typer.Option(
        "--prometheus-user", metavar="USER", envvar="VLLM_TRIAGE_PROMETHEUS_USER",
        show_envvar=True,
        help="Basic-auth user for --prometheus URL.")] = None
    prometheus_password: Annotated[str | None, typer.Option(
        "--prometheus-password", metavar="PASSWORD", envvar="VLLM_TRIAGE_PROMETHEUS_PASSWORD",
        show_envvar=True,
        help="Basic-auth password for --prometheus URL (prefer the environment variable).")
    ] = None
    prometheus_ca_file: Annotated[Path | None, typer.Option(
        "--prometheus-ca-file", metavar="FILE",
        help="CA bundle that signed --prometheus URL's certificate.")] = None
    prometheus_insecure_skip_tls_verify: Annotated[bool, typer.Option(
        "--prometheus-insecure-skip-tls-verify",
        help="Do not check --prometheus URL's certificate (like kubectl's "
        "--insecure-skip-tls-verify).")] = False


NO_PROMETHEUS = PrometheusArgs()


def with_prometheus_options(command: Callable[..., None]) -> Callable[..., None]:
    """``command`` as typer sees it with the ``--prometheus`` options in place of its
    ``prometheus`` parameter (a ``PrometheusArgs``): typer reads a command's parameters
    from its signature (``inspect.signature``, which takes ``__signature__`` as given);
    the options come in as keywords and are handed on as one ``PrometheusArgs``."""
    signature = inspect.signature(command, eval_str=True)
    hints = get_type_hints(PrometheusArgs, include_extras=True)
    names = [f.name for f in fields(PrometheusArgs)]
    parameters: list[inspect.Parameter] = []
    for parameter in signature.parameters.values():
        if parameter.name == "prometheus":
            parameters += [inspect.Parameter(f.name, parameter.kind, default=f.default,
                                             annotation=hints[f.name])
                           for f in fields(PrometheusArgs)]
        else:
            parameters.append(parameter)
    if len(parameters) != len(signature.parameters) + len(names) - 1:
        raise TypeError(f"{command.__name__} takes no prometheus parameter")

    @functools.wraps(command)
    def run(**given: Any) -> None:
        args = PrometheusArgs(**{name: given.pop(name) for name in names})
        command(**given, prometheus=args)

    shown = signature.replace(parameters=parameters)
    run.__signature__ = shown  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in parameters}
    return run
