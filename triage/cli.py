"""Command line: ``vllm-triage`` and, as a kubectl plugin, ``kubectl vllm-triage``.

This module only assembles the application: each command lives in its own
module under ``triage/commands/`` and what they share in
``triage/commands/common.py``. Adding a command is a module there and one
``app.command`` line here.

Exit codes (a public contract): 0 nothing failing; 1 a checklist step is
``fail`` or a finding is critical; 2 usage error or unreadable input; 3 the
cluster cannot be reached or refuses the credentials.
"""

from __future__ import annotations

import atexit
import importlib
import os
import sys
import threading
from contextlib import suppress
from pathlib import Path
from typing import Annotated, Any

import typer

from triage import __version__
from triage.commands import completion, params
from triage.commands.common import EXIT_OK, Terminated, install_signal_handlers, write_atomically

params.install()  # no pydantic to coerce --output json (triage/commands/params.py)

__all__ = ["Terminated", "app", "kubectl_complete", "main", "write_atomically"]

EPILOG = """\
Examples:

\b
  kubectl vllm-triage scan -n llm              # vLLM pods in namespace llm
  kubectl vllm-triage scan -n llm -o json > report.json
  kubectl vllm-triage scan -A -l app=vllm      # all namespaces, label app=vllm
  kubectl vllm-triage scan -n llm --prometheus auto --since 1h   # latency over the last hour
  kubectl vllm-triage scan --context prod --kubeconfig ~/.kube/prod
  vllm-triage scan -n llm -o markdown --output-file ticket.md
  vllm-triage scan -n llm --fail-on warning -q --output-file report.json -o json   # CI
  vllm-triage collect -n llm --output-file bundle.tar.gz   # redacted evidence, for later
  vllm-triage analyze bundle.tar.gz -o html --output-file report.html
  vllm-triage lint -f k8s/ -R --fail-on warning   # manifests, before they are applied
  helm template llm charts/vllm | vllm-triage lint -f - -o sarif > vllm-triage.sarif
  source <(vllm-triage completion bash)        # also zsh, fish

\b
Exit codes: 0 nothing failing; 1 a step fails or a finding is critical;
2 usage error or unreadable input; 3 cluster unreachable or login refused.
"""


def _version(value: bool) -> None:
    if value:
        typer.echo(f"vllm-triage {__version__}")
        raise typer.Exit(EXIT_OK)


def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """vllm-triage."""


# name: (module under triage.commands, function, whether its module's EPILOG is shown).
# The examples are said once, under the top-level help.
COMMANDS: dict[str, tuple[str, str, bool]] = {
    "scan": ("scan", "scan", False),
    "collect": ("collect", "collect", False),
    "analyze": ("analyze", "analyze", False),
    "patterns": ("patterns", "list_patterns", False),
    "watch": ("watch", "watch", True),
    "lint": ("lint", "lint", True),
    "completion": ("completion", "completion", False),
}


def build_app(only: str | None = None) -> typer.Typer:
    """The application; with ``only``, just that command (the one being run: the others'
    modules are neither imported nor turned into click commands)."""
    application = typer.Typer(
        name="vllm-triage",
        help="Read-only triage of vLLM inference servers on Kubernetes: finds why vLLM pods crash, "
        "restart or stall and walks the 10-step checklist with a verdict and evidence per step.",
        epilog=EPILOG,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    application.callback()(_root)
    for name, (module_name, function, epilog) in COMMANDS.items():
        if only is not None and name != only:
            continue
        module = importlib.import_module(f"triage.commands.{module_name}")
        application.command(name, epilog=module.EPILOG if epilog else None)(
            getattr(module, function))
    return application


_APP: list[typer.Typer] = []
app: typer.Typer  # built by __getattr__ below, on first use


def __getattr__(name: str) -> Any:
    """``triage.cli.app``: the whole application, built when first asked for."""
    if name == "app":
        if not _APP:
            _APP.append(build_app())
        return _APP[0]
    raise AttributeError(name)


def _invoked(args: list[str]) -> str | None:
    """The command the arguments run, when the first of them names one (completion's
    script describes every command: it gets the whole application)."""
    return args[0] if args and args[0] in COMMANDS and args[0] != "completion" else None


def main() -> None:
    # kubectl passes plugin flags through unchanged; nothing to translate. Run
    # as kubectl-vllm_triage, usage lines read "kubectl vllm-triage ...".
    plugin = Path(sys.argv[0]).name.startswith("kubectl-")
    prog = "kubectl vllm-triage" if plugin else "vllm-triage"
    if completion.COMPLETE_VAR in os.environ:  # the shell asks for completions
        raise SystemExit(completion.answer_shell(build_app(), prog))
    with suppress(ValueError):  # not the main thread (embedded): leave signals alone
        install_signal_handlers()
    try:
        build_app(_invoked(sys.argv[1:]))(prog_name=prog)
    except SystemExit as done:
        _fast_exit(done)
        raise
    _fast_exit(SystemExit(0))


SCRIPTS = ("vllm-triage", "kubectl-vllm_triage")


def _is_the_program() -> bool:
    program = sys.modules.get("__main__")
    spec = getattr(program, "__spec__", None)
    if spec is not None and spec.name == "triage.cli":
        return True
    return Path(str(getattr(program, "__file__", ""))).name in SCRIPTS


def _fast_exit(done: SystemExit) -> None:
    """End the process without the interpreter's teardown (collecting every module's
    objects: a noticeable share of a short run), once nothing is left to do: only when
    run as the program (its console scripts or ``python -m triage.cli``; not called
    from another program), no other thread runs, the exit handlers ran and
    both streams flushed. Otherwise (an error flushing, say) return, and the normal exit
    happens, with its usual reporting."""
    if not _is_the_program() or threading.active_count() > 1 or \
            threading.current_thread() is not threading.main_thread():
        return
    code = done.code
    if code is not None and not isinstance(code, int):
        return  # a message to print: SystemExit's own way
    try:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        return
    os._exit(code or 0)


def kubectl_complete() -> None:
    """``kubectl_complete-vllm_triage``: kubectl 1.26+ runs it to complete
    ``kubectl vllm-triage ...`` and reads Cobra's __complete answer."""
    raise SystemExit(completion.answer_kubectl(build_app(), sys.argv[1:]))


if __name__ == "__main__":
    main()
