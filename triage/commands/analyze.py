"""``vllm-triage analyze``: the same report from a bundle, with no cluster."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from triage.commands.common import check_report_flags, emit, guard, report_format
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
    output: OutputOpt = "table",
    output_file: OutputFileOpt = None,
    fix_dir: FixDirOpt = None,
    quiet: QuietOpt = False,
    fail_on: FailOnOpt = "critical",
    patterns: PatternsOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Produce the report from a saved bundle, with no cluster.

    BUNDLE is a bundle (.tar.gz) that collect wrote, an unpacked bundle, or a fixture
    directory.
    """
    from triage import pipeline
    from triage.collect import bundle

    with guard(debug):
        fmt = report_format(output)
        check_report_flags(output_file, quiet, fail_on)
        snap = bundle.load(bundle_path)
        report = pipeline.analyze(snap, list(patterns or []))
        emit(report, fmt, output_file, quiet, fix_dir)
    raise typer.Exit(pipeline.exit_code(report, fail_on))
