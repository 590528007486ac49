"""The typer application: every command, or only the one being run.

``triage/cli.py`` is the entry point; it builds this with the command the arguments name,
so that the other commands' modules are not imported.
"""

from __future__ import annotations

import importlib
from typing import Annotated

import typer

from triage import __version__
from triage.commands.common import EXIT_OK

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
