"""``vllm-triage analyze``: the same report from a bundle, with no cluster.

A plainly written ``analyze`` command line is parsed without typer
(``triage/commands/offline.py``); this is the typer command for the rest (help, completion,
usage errors). Both run ``offline.run``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from triage.commands import flags, offline
from triage.commands.options import (
    DebugOpt,
    FailOnOpt,
    FixDirOpt,
    OutputFileOpt,
    OutputOpt,
    PatternsOpt,
    QuietOpt,
)


def analyze(
    # Described in the docstring: typer would print the Python type in an Arguments list.
    bundle_path: Annotated[Path, typer.Argument(metavar="BUNDLE", hidden=True)],
    output: OutputOpt = flags.DEFAULT_OUTPUT,
    output_file: OutputFileOpt = None,
    fix_dir: FixDirOpt = None,
    quiet: QuietOpt = False,
    fail_on: FailOnOpt = flags.DEFAULT_FAIL_ON,
    patterns: PatternsOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Produce the report from a saved bundle, with no cluster.

    BUNDLE is a bundle (.tar.gz) that collect wrote, an unpacked bundle, or a fixture
    directory.
    """
    raise typer.Exit(offline.run(bundle_path, output, output_file, fix_dir, quiet, fail_on,
                                 patterns, debug))
