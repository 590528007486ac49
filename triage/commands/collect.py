"""``vllm-triage collect``: save everything scan reads, redacted, into a bundle."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from triage.collect import InputError
from triage.commands.common import Output, guard, live_collector, progress, say
from triage.commands.options import (
    NO_PROMETHEUS,
    AllNsOpt,
    ContextOpt,
    DebugOpt,
    KubeconfigOpt,
    NamespaceOpt,
    PrometheusArgs,
    SelectorOpt,
    TailOpt,
    TimeoutOpt,
    with_prometheus_options,
)
from triage.safety import outfile


@with_prometheus_options
def collect(
    output_file: Annotated[Path | None, typer.Option(
        "--output-file", metavar="FILE", help="Bundle file to write (default: "
        "vllm-triage-NAMESPACE-TIME.tar.gz in the current directory).")] = None,
    output: Annotated[str | None, typer.Option(
        "-o", "--output", metavar="FILE", hidden=True,
        help="Older spelling of --output-file; a report format there is an error.")] = None,
    namespace: NamespaceOpt = None,
    all_namespaces: AllNsOpt = False,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    selector: SelectorOpt = None,
    request_timeout: TimeoutOpt = "30s",
    tail_lines: TailOpt = 3000,
    prometheus: PrometheusArgs = NO_PROMETHEUS,  # the --prometheus options
    debug: DebugOpt = False,
) -> None:
    """Save everything scan reads (redacted) into a bundle for offline analysis."""
    from triage.collect import bundle

    with guard(debug):
        path = _bundle_path(output_file, output)
        stream = _check_target(path) if path is not None else None
        with progress() as tick:
            snap = live_collector(namespace, all_namespaces, kubeconfig, context, selector,
                                  request_timeout, tail_lines, tick, prometheus).collect()
        target = path or Path(_default_name(snap.namespace, snap.collected_at))
        try:
            bundle.write(snap, target)
        except OSError as exc:
            raise InputError(f"cannot write {target}: {exc.strerror or exc}") from None
        failures = len(snap.failures)
        if stream != 2:  # not into the bundle itself
            say(f"bundle written to {target}"
                + (f" ({failures} read(s) failed, listed inside)" if failures else ""))


def _check_target(path: Path) -> int | None:
    """What scan's --output-file allows (triage/collect/outfile.py), said before the
    cluster is read: a device, a pipe or a link to one is refused, never replaced; a
    stream of this process (-, /dev/stdout) is written through, unless it is a terminal.
    The stream's descriptor, or None for a file."""
    target = outfile.classify(path)
    if target.refused:
        raise InputError(f"--output-file {path}: {target.refused}; not replaced (give a "
                         "regular file or a new path, or - for stdout)")
    if target.fd is not None and os.isatty(target.fd):
        raise InputError(f"--output-file {path} is a terminal: a bundle is a binary "
                         ".tar.gz; redirect it (> bundle.tar.gz) or name a file")
    return target.fd


def _bundle_path(output_file: Path | None, output: str | None) -> Path | None:
    """--output-file, or the older -o FILE; -o json is a report format, not a file name
    (collect writes a bundle; scan and analyze write reports)."""
    if output is not None and output.strip().lower() in {o.value for o in Output}:
        raise InputError(f"collect writes a bundle, not a report: -o {output} is a report "
                         "format; name the bundle with --output-file FILE, or run analyze "
                         f"on the bundle with -o {output}")
    if output is not None and output_file is not None:
        raise InputError("give the bundle path once, with --output-file")
    return output_file or (Path(output) if output else None)


def _default_name(namespace: str | None, collected_at: str) -> str:
    """vllm-triage-llm-20261128T031209Z.tar.gz: sorts by time, says what it holds."""
    stamp = "".join(ch for ch in collected_at if ch.isalnum()) or "now"
    return f"vllm-triage-{namespace or 'all-namespaces'}-{stamp}.tar.gz"
