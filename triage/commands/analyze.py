"""``vllm-triage analyze``: the same report from a bundle, with no cluster."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from triage.commands.common import (
    DebugOpt,
    FixDirOpt,
    Output,
    OutputFileOpt,
    PatternsOpt,
    emit,
    guard,
)


def analyze(
    bundle_path: Annotated[Path, typer.Argument(
        metavar="BUNDLE", help="A bundle (.tar.gz), an unpacked bundle, or a fixture directory.")],
    output: Annotated[Output, typer.Option("-o", "--output", help="Report format.")] = Output.table,
    output_file: OutputFileOpt = None,
    fix_dir: FixDirOpt = None,
    patterns: PatternsOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Produce the report from a saved bundle, with no cluster."""
    from triage import pipeline
    from triage.collect import bundle

    with guard(debug):
        snap = bundle.load(bundle_path)
        report = pipeline.analyze(snap, list(patterns or []))
        emit(report, output, output_file, fix_dir)
    raise typer.Exit(pipeline.exit_code(report))
