"""``vllm-triage lint``: the same patterns on manifests, before they are applied.

Exit codes: 0 nothing at or above ``--fail-on``; 1 a finding at or above it
(default ``critical``; ``warning`` for strict CI); 2 usage error or an input
that cannot be read (the findings of what could be read are still printed).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from enum import Enum
from typing import Annotated

import regex
import typer

from triage.commands.common import (
    EXIT_OK,
    EXIT_USAGE,
    fail,
    guard,
    say,
    stderr_console,
    use_color,
)
from triage.commands.options import DebugOpt, PatternsOpt

EPILOG = """\
\b
Suppress a finding on one object with the annotation
  vllm-triage.io/ignore: "image-tag-latest,probe-timing"

\b
Exit codes: 0 clean; 1 a finding at or above --fail-on; 2 usage error or
unreadable input.
"""


class LintOutput(str, Enum):
    text = "text"
    json = "json"
    sarif = "sarif"
    github = "github"


class FailOn(str, Enum):
    critical = "critical"
    warning = "warning"
    info = "info"
    never = "never"


def _one_of(kind: type[Enum]) -> Callable[[str], str]:
    """The option's check: its value is one of ``kind``'s, or a usage error said in words
    ("'wide' is not one of text, json, sarif, github"; typer's own wording quotes each
    choice, or, from typer 0.29, adds pydantic's "Value error, ")."""
    choices = [str(member.value) for member in kind]

    def check(value: str) -> str:
        if value not in choices:
            raise typer.BadParameter(f"{value!r} is not one of {', '.join(choices)}")
        return value
    return check


def lint(
    files: Annotated[list[str] | None, typer.Argument(  # usage: optional, repeatable
        metavar="[FILE]...", hidden=True, show_default=False)] = None,
    filename: Annotated[list[str] | None, typer.Option(
        "-f", "--filename", metavar="FILE|DIR|-",
        help="Manifest file, directory of .yaml/.yml/.json files, or - for stdin "
        "(repeatable).")] = None,
    recursive: Annotated[bool, typer.Option(
        "-R", "--recursive", help="Read the directories given with -f recursively.")] = False,
    kustomize: Annotated[list[str] | None, typer.Option(
        "-k", "--kustomize", metavar="DIR",
        help="Render a kustomization directory with `kubectl kustomize` and lint the "
        "output (repeatable).")] = None,
    output: Annotated[str, typer.Option(
        "-o", "--output", metavar="FORMAT", callback=_one_of(LintOutput),
        autocompletion=lambda: [o.value for o in LintOutput],
        help="Output format: text, json, sarif, github.")] = LintOutput.text.value,
    fail_on: Annotated[str, typer.Option(
        "--fail-on", metavar="LEVEL", callback=_one_of(FailOn),
        autocompletion=lambda: [f.value for f in FailOn],
        help="Exit 1 when a finding is at least this severe: critical, warning, info, or "
        "never.")] = FailOn.critical.value,
    ignore: Annotated[list[str] | None, typer.Option(
        "--ignore", metavar="ID", help="Do not report this finding id (repeatable, or "
        "comma-separated).")] = None,
    explain: Annotated[bool, typer.Option(
        "--explain", help="Also say which patterns applied, which need a running pod, and "
        "what was skipped or suppressed.")] = False,
    patterns: PatternsOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Check Kubernetes manifests for the vLLM traps, with the rules scan uses.

    FILE... are manifest files, as with -f (how pre-commit passes them).
    """
    from triage.lint.manifests import Input, collect
    from triage.lint.run import lint as lint_manifests
    from triage.lint.writers import writers
    from triage.speed import gcpause

    inputs = [Input(f) for f in [*(filename or []), *(files or [])]] + [Input(k, kustomize=True)
                                                  for k in kustomize or []]
    if not inputs:
        fail("give manifests with -f FILE|DIR|- or -k DIR (see --help)", EXIT_USAGE)
    if sum(1 for i in inputs if i.path == "-" and not i.kustomize) > 1:
        fail("-f - (stdin) can be given once", EXIT_USAGE)
    ignored = {part for item in ignore or [] for part in regex.split(r"[\s,]+", item) if part}
    with guard(debug):
        with gcpause.paused():  # every workload is kept to the end: see triage.speed.gcpause
            manifests = collect(inputs, recursive)
            report = lint_manifests(manifests, list(patterns or []), ignored)
        unknown = sorted(ignored - {r.id for r in report.rules} - {"all"})
        if unknown:
            fail(f"--ignore {unknown[0]}: no such finding id (vllm-triage patterns lists "
                 "them)", EXIT_USAGE)
        for problem in report.problems:
            # Already safe: the path made terminal-safe, what went wrong redacted (a path
            # is not a credential, so it is not masked as one).
            stderr_console().print(f"vllm-triage: error: {problem}", markup=False,
                                   highlight=False)
        if output != LintOutput.text.value:
            for warning in report.warnings:  # the text output says them itself
                say(f"vllm-triage: warning: {warning}")
        sys.stdout.write(writers()[output](
            report, output == LintOutput.text.value and use_color(), explain))
        sys.stdout.flush()
    if report.problems:
        raise typer.Exit(EXIT_USAGE)
    raise typer.Exit(1 if report.failing(fail_on) else EXIT_OK)
