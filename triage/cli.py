"""Command line: ``vllm-triage`` and, as a kubectl plugin, ``kubectl vllm-triage``.

This module is the entry point: the application is assembled in
``triage/commands/app.py`` (each command in its own module under ``triage/commands/``,
what they share in ``triage/commands/common.py``, their options in
``triage/commands/options.py``). Adding a command is a module there and one line in
``app.COMMANDS``.

Exit codes (a public contract): 0 nothing failing; 1 a checklist step is
``fail`` or a finding is critical; 2 usage error or unreadable input; 3 the
cluster cannot be reached or refuses the credentials.
"""

from __future__ import annotations

import os
import sys
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from triage.commands.common import (
    COMPLETE_VAR,
    Terminated,
    install_signal_handlers,
    write_atomically,
)

if TYPE_CHECKING:
    import typer

SCRIPTS = ("vllm-triage", "kubectl-vllm_triage")


def _is_the_program() -> bool:
    program = sys.modules.get("__main__")
    spec = getattr(program, "__spec__", None)
    if spec is not None and spec.name == "triage.cli":
        return True
    return str(getattr(program, "__file__", "")).rpartition("/")[2] in SCRIPTS


if _is_the_program():
    from triage.logs import heap

    heap.allow()  # big logs' blocks reuse the C heap (triage/logs/heap.py)

__all__ = ["Terminated", "app", "kubectl_complete", "main", "write_atomically"]

_APP: list[typer.Typer] = []
app: typer.Typer  # built by __getattr__ below, on first use


def __getattr__(name: str) -> Any:
    """``triage.cli.app``: the whole application, built when first asked for (and the
    application module's names, ``build_app``, ``COMMANDS``, ``EPILOG``)."""
    from triage.commands import app as application

    if name == "app":
        if not _APP:
            _APP.append(application.build_app())
        return _APP[0]
    if name in ("build_app", "COMMANDS", "EPILOG"):
        return getattr(application, name)
    raise AttributeError(name)


def _invoked(args: list[str]) -> str | None:
    """The command the arguments run, when the first of them names one (completion's
    script describes every command: it gets the whole application)."""
    from triage.commands.app import COMMANDS

    return args[0] if args and args[0] in COMMANDS and args[0] != "completion" else None


def main() -> None:
    # kubectl passes plugin flags through unchanged; nothing to translate. Run
    # as kubectl-vllm_triage, usage lines read "kubectl vllm-triage ...".
    plugin = Path(sys.argv[0]).name.startswith("kubectl-")
    prog = "kubectl vllm-triage" if plugin else "vllm-triage"
    if COMPLETE_VAR in os.environ:  # the shell asks for completions
        from triage.commands import completion
        from triage.commands.app import build_app

        raise SystemExit(completion.answer_shell(build_app(), prog))
    with suppress(ValueError):  # not the main thread (embedded): leave signals alone
        install_signal_handlers()
    from triage.commands.app import build_app

    build_app(_invoked(sys.argv[1:]))(prog_name=prog)


def kubectl_complete() -> None:
    """``kubectl_complete-vllm_triage``: kubectl 1.26+ runs it to complete
    ``kubectl vllm-triage ...`` and reads Cobra's __complete answer."""
    from triage.commands import completion
    from triage.commands.app import build_app

    raise SystemExit(completion.answer_kubectl(build_app(), sys.argv[1:]))


if __name__ == "__main__":
    main()
