"""The kubectl commands that preview and apply a patch, as a person pastes them.

Every word is quoted for a POSIX shell (``triage.safety.shell``); every kubectl names
the cluster the report is about (``flags``: ``--context``, ``--kubeconfig``) and the
namespace; ``--patch-file`` names the file ``--fix-dir`` writes (``triage.fixes.files``),
or, without one, the patch is given inline with ``-p``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from triage.results import Patch
from triage.safety import shell

__all__ = ["apply", "lines", "preview"]

_DRY_RUN = ["--dry-run=server", "-o", "yaml"]


def _patch_words(patch: Patch, patch_file: str | None) -> list[str]:
    words = ["patch", patch.resource, shell.argument(patch.name), "-n",
             shell.argument(patch.namespace), "--type", patch.type]
    if patch_file:
        return [*words, "--patch-file", shell.visible(patch_file)]
    return [*words, "-p", json.dumps(patch.body, separators=(",", ":"), ensure_ascii=True)]


def _diff(patch: Patch, flags: Sequence[str]) -> list[str]:
    return [shell.Operator("|"), shell.KUBECTL, *flags, "diff", "-n",
            shell.argument(patch.namespace), "-f", "-"]


def apply(patch: Patch, flags: Sequence[str], patch_file: str | None = None) -> str:
    """The kubectl command that applies it (the tool never does)."""
    return shell.join([shell.KUBECTL, *flags, *_patch_words(patch, patch_file)])


def preview(patch: Patch, flags: Sequence[str], patch_file: str | None = None) -> str:
    """The kubectl command that shows what it would change, server-side, changing nothing."""
    return shell.join([shell.KUBECTL, *flags, *_patch_words(patch, patch_file), *_DRY_RUN,
                       *_diff(patch, flags)])


def lines(patch: Patch, flags: Sequence[str], patch_file: str,
          preview: bool = False) -> list[str]:
    """``apply`` / ``preview`` as short shell lines joined by backslashes (a pipe ends a
    line by itself), so a ticket or a narrow terminal never breaks one mid-argument."""
    words = _patch_words(patch, patch_file)
    body, file = shell.join(words[:-2]), shell.join(words[-2:])
    if flags:
        out = [shell.join([shell.KUBECTL, *flags]) + " \\", f"  {body} \\"]
    else:
        out = [f"{shell.KUBECTL} {body} \\"]
    if not preview:
        return [*out, f"  {file}"]
    return [*out, f"  {file} \\", f"  {shell.join(_DRY_RUN)} |",
            "  " + shell.join(_diff(patch, flags)[1:])]
