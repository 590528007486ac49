"""Command line: ``vllm-triage`` and, as a kubectl plugin, ``kubectl vllm-triage``.

This module is the entry point: the application is assembled in
``triage/commands/app.py`` (each command in its own module under ``triage/commands/``,
what they share in ``triage/commands/common.py``); a plainly written ``analyze`` runs
without typer (``triage/commands/offline.py``). Adding a command is a module there and
one line in ``app.COMMANDS``.

Exit codes (a public contract): 0 nothing failing; 1 a checklist step is
``fail`` or a finding is critical; 2 usage error or unreadable input; 3 the
cluster cannot be reached or refuses the credentials.
"""

from __future__ import annotations

import gc
import sys

SCRIPTS = ("vllm-triage", "kubectl-vllm_triage")


def _is_the_program() -> bool:
    program = sys.modules.get("__main__")
    spec = getattr(program, "__spec__", None)
    if spec is not None and spec.name == "triage.cli":
        return True
    return str(getattr(program, "__file__", "")).rpartition("/")[2] in SCRIPTS


# The imports a command needs create tens of thousands of objects that live as long as
# the process; the collector, run over and over while they are made, finds nothing to
# free. Paused only in the program (not when another program imports this module).
_GC_PAUSED = _is_the_program() and gc.isenabled()
if _GC_PAUSED:
    gc.disable()
if _is_the_program():
    from triage.logs import heap

    heap.allow()  # big logs' blocks reuse the C heap (triage/logs/heap.py)

import atexit  # noqa: E402
import os  # noqa: E402
import threading  # noqa: E402
from contextlib import suppress  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import TYPE_CHECKING, Any  # noqa: E402

from triage.commands.common import (  # noqa: E402
    Terminated,
    install_signal_handlers,
    write_atomically,
)
from triage.commands.flags import COMPLETE_VAR  # noqa: E402

if TYPE_CHECKING:
    import typer

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


def _imports_done() -> None:
    """Collect again once the modules the command needs are in: what they made is moved
    out of the collector's sight (``gc.freeze``), so collections while the command runs
    walk only what it makes."""
    global _GC_PAUSED
    if _GC_PAUSED:
        _GC_PAUSED = False
        gc.freeze()
        gc.enable()


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

        _imports_done()
        raise SystemExit(completion.answer_shell(build_app(), prog))
    with suppress(ValueError):  # not the main thread (embedded): leave signals alone
        install_signal_handlers()
    try:
        from triage.commands import offline

        code = offline.main(sys.argv[1:], _imports_done)
        if code is not None:
            raise SystemExit(code)
        from triage.commands.app import build_app

        application = build_app(_invoked(sys.argv[1:]))
        _imports_done()
        application(prog_name=prog)
    except SystemExit as done:
        _imports_done()
        _fast_exit(done)
        raise
    _imports_done()
    _fast_exit(SystemExit(0))


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
    from triage.commands import completion
    from triage.commands.app import build_app

    _imports_done()
    raise SystemExit(completion.answer_kubectl(build_app(), sys.argv[1:]))


if __name__ == "__main__":
    main()
