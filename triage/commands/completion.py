"""Shell completion, for people and for kubectl.

``vllm-triage completion bash|zsh|fish`` prints the script to source; the
shell then runs vllm-triage with ``_VLLM_TRIAGE_COMPLETE`` set to ask for
the words that fit. kubectl 1.26 and later complete ``kubectl vllm-triage``
by running ``kubectl_complete-vllm_triage`` with the words typed after the
plugin's name (the last one being completed) and reading Cobra's
``__complete`` answer: one candidate per line (a tab, then its help), then
``:DIRECTIVE``.
"""

from __future__ import annotations

import os
from contextlib import suppress
from typing import Annotated

import typer

# typer's own shell classes: they speak to the command objects typer builds (typer 0.2x
# carries its own copy of click) and write the scripts that call back with
# _VLLM_TRIAGE_COMPLETE=complete_bash (or _zsh, _fish).
from typer._completion_classes import BashComplete, FishComplete, ZshComplete

from triage.collect import InputError
from triage.commands.common import COMPLETE_VAR, guard
from triage.commands.options import DebugOpt

PROG = "vllm-triage"
SHELLS: dict[str, type[BashComplete | ZshComplete | FishComplete]] = {
    "bash": BashComplete, "zsh": ZshComplete, "fish": FishComplete}
# Flags whose value is a path: kubectl then completes file names itself.
PATH_FLAGS = {"--kubeconfig", "--output-file", "--prometheus-ca-file", "--patterns"}
# Cobra's ShellCompDirective values.
COBRA_DEFAULT, COBRA_NO_FILES, COBRA_DIRS = 0, 4, 16


def completion(
    ctx: typer.Context,
    shell: Annotated[str, typer.Argument(metavar="SHELL", hidden=True)],
    debug: DebugOpt = False,
) -> None:
    """Print the shell completion script for SHELL (bash, zsh or fish).

    source <(vllm-triage completion bash) in ~/.bashrc; kubectl vllm-triage completes through
    the kubectl_complete-vllm_triage executable installed with the package.
    """
    with guard(debug):
        cls = SHELLS.get(shell.strip().lower())
        if cls is None:
            raise InputError(f"no completion for shell {shell!r}; use bash, zsh or fish")
        root = ctx.find_root().command  # the whole application, to complete its commands
        typer.echo(cls(root, {}, PROG, COMPLETE_VAR).source())


def answer_shell(app: typer.Typer, prog: str) -> int:
    """The shell asked (``_VLLM_TRIAGE_COMPLETE=complete_bash`` and the words typed)."""
    instruction, _, shell = os.environ.get(COMPLETE_VAR, "").partition("_")
    cls = SHELLS.get(shell)
    if cls is None:
        return 1
    comp = cls(typer.main.get_command(app), {}, PROG, COMPLETE_VAR)
    text = comp.source() if instruction == "source" else comp.complete()
    if text:
        with suppress(BrokenPipeError):
            print(text)
    return 0


def answer_kubectl(app: typer.Typer, words: list[str]) -> int:
    """kubectl's plugin completion: the typed words, the last one being completed."""
    incomplete = words[-1] if words else ""
    comp = BashComplete(typer.main.get_command(app), {}, "kubectl vllm-triage", COMPLETE_VAR)
    try:
        items = comp.get_completions(words[:-1], incomplete)
    except Exception:  # a half-typed command line: no candidates, never a traceback
        items = []
    kinds = {item.type for item in items}
    after = words[-2] if len(words) >= 2 else ""
    if after in PATH_FLAGS or (not items and words[:1] == ["analyze"]
                               and not incomplete.startswith("-")):
        kinds.add("file")
    for item in items:
        if item.type in ("file", "dir"):
            continue
        print(f"{item.value}\t{item.help}" if item.help else item.value)
    directive = (COBRA_DEFAULT if "file" in kinds else COBRA_DIRS if "dir" in kinds
                 else COBRA_NO_FILES)
    print(f":{directive}")
    return 0
