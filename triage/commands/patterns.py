"""``vllm-triage patterns``: list, lint and test the finding patterns."""

from __future__ import annotations

from typing import Annotated

import typer

from triage.commands.common import EXIT_OK, EXIT_USAGE, say
from triage.commands.options import PatternsOpt
from triage.safety.sanitize import sanitize


def list_patterns(
    patterns: PatternsOpt = None,
    facts: Annotated[bool, typer.Option(
        "--facts", help="List the facts and metrics a pattern may use instead.")] = False,
    test: Annotated[bool, typer.Option(
        "--test", help="Run every pattern's whole-rule examples (exit 1 if one fails).")] = False,
    markdown: Annotated[bool, typer.Option(
        "--markdown", help="With --facts: print the list as a Markdown table.")] = False,
) -> None:
    """List the finding patterns and check every pattern file (exit 2 if one is malformed)."""
    from triage.rules.language import CausePattern, Pattern
    from triage.rules.loader import load_patterns

    if facts:
        from triage.rules.catalogue import facts_markdown, facts_text

        typer.echo(facts_markdown() if markdown else facts_text(), nl=False)
        raise typer.Exit(EXIT_OK)
    loaded = load_patterns(list(patterns or []), check_builtin=True)  # every regex compiled
    for err in loaded.errors:
        say(f"vllm-triage: error: {err}")
    if test:
        from triage.rules.examples import run_examples

        results = run_examples(loaded.patterns, loaded.causes)
        failed = [r for r in results if not r.ok]
        for r in failed:
            typer.echo(sanitize(f"FAIL {r.describe()}"))
        tested: list[Pattern | CausePattern] = [*loaded.patterns, *loaded.causes]
        for p in tested:
            kinds = {ex.reports for ex in p.examples}
            if not {True, False} <= kinds:
                typer.echo(sanitize(f"note {p.id}: no "
                                f"{'reporting' if True not in kinds else 'silent'} "
                                f"example ({p.source})"))
        typer.echo(f"{len(results) - len(failed)} passed, {len(failed)} failed "
                   f"({len(loaded.patterns) + len(loaded.causes)} patterns)")
        raise typer.Exit(EXIT_USAGE if loaded.errors else 1 if failed else EXIT_OK)
    for p in sorted(loaded.patterns, key=lambda p: (p.step, p.id)):
        typer.echo(sanitize(f"{p.id:28} {p.severity.value:9} step {p.step:<3} {p.title}  "
                            f"[{p.source}]"))
    for c in loaded.causes:  # a cause joins findings: no severity, no step of its own
        typer.echo(sanitize(f"{c.id:28} {'cause':9} {'':8} {c.title}  [{c.source}]"))
    raise typer.Exit(EXIT_USAGE if loaded.errors else EXIT_OK)
