"""``analyze`` without typer: the quick start (``vllm-triage analyze DIR -o json``) parsed
by hand, so that typer and click are neither imported nor built (about a third of its
start-up). Only a plainly written command line is taken here: ``analyze``, one BUNDLE and
analyze's own flags (``-o json`` or ``--output=json``), each value flag given once. Anything
else (``--help``, an unknown or clustered flag, ``--``, a missing value, a value that
looks like a flag, an unreadable path, completion) returns None and typer parses it, so
its usage errors read as before. The flags are the ones typer declares
(``triage/commands/flags.py``); what the command does is ``run``, which the typer command
calls too.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from triage.commands import flags

_BY_NAME = {name: flag for flag in flags.ANALYZE for name in flag.names}


def _readable(value: str) -> bool:
    """typer's path check with its defaults: an existing path must be readable (else its
    error, worded by typer)."""
    return not os.path.exists(value) or os.access(value, os.R_OK)


def parse(args: list[str]) -> dict[str, Any] | None:
    """analyze's arguments as the typer command's keyword arguments, or None when they are
    not plainly written (typer then parses them)."""
    if not args or args[0] != "analyze":
        return None
    values: dict[str, Any] = {}
    bundle: str | None = None
    rest = args[1:]
    i = 0
    while i < len(rest):
        word = rest[i]
        i += 1
        if not word.startswith("-"):
            if bundle is not None or not _readable(word):
                return None  # click's "unexpected extra argument", or its path error
            bundle = word
            continue
        name, eq, inline = word.partition("=") if word.startswith("--") else (word, "", "")
        flag = _BY_NAME.get(name)
        if flag is None:
            return None
        if flag.value is None:  # a switch
            if eq:
                return None
            values[flag.dest] = True
            continue
        if eq:
            value = inline
        elif i < len(rest):
            value, i = rest[i], i + 1
        else:
            return None  # "requires an argument": click's words
        if not value or (value.startswith("-") and value != "-" and not eq):
            return None
        if flag.path and not _readable(value):
            return None
        if flag.repeat:
            values.setdefault(flag.dest, []).append(Path(value))
        elif flag.dest in values:
            return None  # given twice: left to click's rule
        else:
            values[flag.dest] = Path(value) if flag.path else value
    if bundle is None:
        return None
    kwargs: dict[str, Any] = {"bundle_path": Path(bundle)}
    for flag in flags.ANALYZE:
        kwargs[flag.dest] = values.get(flag.dest, flag.default)
    return kwargs


def main(args: list[str], imported: Callable[[], None] | None = None) -> int | None:
    """Run ``analyze`` from its arguments: its exit code, or None for typer to parse them.
    ``imported`` is called once the analysis is imported."""
    kwargs = parse(args)
    if kwargs is None:
        return None
    from triage.commands.common import check_pattern_dirs

    check_pattern_dirs(kwargs["patterns"])  # typer's callback for --patterns
    return run(**kwargs, imported=imported)


def run(bundle_path: Path, output: str, output_file: Path | None, fix_dir: Path | None,
        quiet: bool, fail_on: str, patterns: list[Path] | None, debug: bool,
        imported: Callable[[], None] | None = None) -> int:
    """What ``analyze`` does, after its arguments are parsed: the report, and the exit code."""
    from triage import pipeline
    from triage.collect import bundle
    from triage.commands.common import check_report_flags, emit, guard, report_format

    if imported is not None:
        imported()
    with guard(debug):
        fmt = report_format(output)
        check_report_flags(output_file, quiet, fail_on)
        snap = bundle.load(bundle_path)
        report = pipeline.analyze(snap, list(patterns or []))
        emit(report, fmt, output_file, quiet, fix_dir)
    return pipeline.exit_code(report, fail_on)
