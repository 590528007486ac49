"""Every shipped pattern loads, is documented, and proves itself with whole-rule examples.

The examples inside each pattern file (small in-memory snapshots marked
``reports: true`` or ``reports: false``) run here as ``vllm-triage patterns
--test`` runs them. Loading checks every name a pattern uses; the docs carry the
generated finding catalogue.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.support.evidence import first_line_problem
from triage.rules.examples import run_example
from triage.rules.loader import DATA_FILES, load_patterns

PATTERN_DIR = ROOT / "patterns"
LOADED = load_patterns()
PATTERNS = {p.id: p for p in LOADED.patterns}
SEVERITIES = {p.id: p.severity for p in LOADED.patterns}


def test_every_pattern_file_loads() -> None:
    assert LOADED.errors == (), [str(e) for e in LOADED.errors]
    files = [f for f in sorted(PATTERN_DIR.glob("*.yaml")) if f.name not in DATA_FILES]
    assert len(PATTERNS) + len(LOADED.causes) == len(files), "two pattern files share an id"
    assert {Path(p.source).stem for p in (*LOADED.patterns, *LOADED.causes)} == \
        {f.stem for f in files}


def test_pattern_file_name_is_its_id() -> None:
    for p in LOADED.patterns:
        assert Path(p.source).stem == p.id, p.source


@pytest.mark.parametrize("pid", sorted(PATTERNS))
def test_pattern_is_documented(pid: str) -> None:
    p = PATTERNS[pid]
    assert p.remediation and p.title and p.summary and p.references, pid


@pytest.mark.parametrize("pid", sorted(PATTERNS))
def test_pattern_has_a_reporting_and_a_silent_example(pid: str) -> None:
    kinds = {ex.reports for ex in PATTERNS[pid].examples}
    assert {True, False} <= kinds, f"{pid}: needs whole-rule examples that report and that " \
                                   f"stay silent, has {kinds or 'none'}"


@pytest.mark.parametrize("pid", sorted(PATTERNS))
def test_whole_rule_examples(pid: str) -> None:
    """Each example reports or stays silent as it says; one that reports and quotes a log
    opens its evidence with the line that states the cause (not a frame, a source echo,
    usage text, a hint, or the shell's Killed after an error)."""
    results = [run_example(PATTERNS[pid], ex, SEVERITIES) for ex in PATTERNS[pid].examples]
    failed = [r.describe() for r in results if not r.ok]
    failed += [f"{pid}: example {r.example.name!r}: {why}" for r in results
               if r.reported and (why := first_line_problem(r.evidence))]
    assert not failed, "\n".join(failed)


def test_docs_carry_the_generated_finding_catalogue() -> None:
    """docs/catalogue.md holds every finding, what it reads and its sources, as generated."""
    from triage.rules.catalogue import findings_markdown

    text = (ROOT / "docs" / "catalogue.md").read_text()
    start, end = "<!-- catalogue:start -->\n", "<!-- catalogue:end -->"
    block = text.split(start, 1)[1].split(end, 1)[0]
    assert block == findings_markdown(LOADED.patterns, LOADED.checklist.titles,
                                      LOADED.causes), "regenerate with ./scripts/update-docs"
    for pid in PATTERNS:
        assert f"### {pid}\n" in block, pid
