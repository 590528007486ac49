"""Every shipped pattern loads, and its own examples prove its regexes.

``examples.match`` lines must match one of the pattern's log leaves and
``examples.no_match`` lines (healthy look-alikes) must match none, the way
the classifier matches a log line (``triage.classify.match_example``). A
pattern without log leaves (scheduling, for example) has its examples
checked against its event-message and fact regexes instead. A malformed
pattern passed with ``--patterns`` is reported by file and field while the
scan still produces a report.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, run_cli
from triage.classify import match_example
from triage.patterns import (
    AllOf,
    AnyOf,
    Condition,
    EventLeaf,
    FactLeaf,
    LogLeaf,
    Pattern,
    load_patterns,
)

PATTERN_DIR = ROOT / "patterns"
LOADED = load_patterns()
PATTERNS = {p.id: p for p in LOADED.patterns}


def _walk(cond: Condition) -> Iterator[Condition]:
    yield cond
    if isinstance(cond, (AnyOf, AllOf)):
        for child in cond.children:
            yield from _walk(child)
    # "not" subtrees are exclusions, not signatures.


def _log_leaves(p: Pattern) -> list[LogLeaf]:
    return [c for c in _walk(p.when) if isinstance(c, LogLeaf)]


def _text_regexes(p: Pattern) -> list[Any]:
    """Event message and fact regexes, for patterns that match no log line."""
    out: list[Any] = []
    for c in _walk(p.when):
        if isinstance(c, EventLeaf) and c.message is not None:
            out.append(c.message)
        elif isinstance(c, FactLeaf) and c.comparison.op == "regex":
            out.append(c.comparison.value)
    return out


def _matches(p: Pattern, line: str) -> bool:
    if _log_leaves(p):
        return match_example(p, line)
    return any(rx.search(line) for rx in _text_regexes(p))


def test_every_pattern_file_loads() -> None:
    assert LOADED.errors == [], [str(e) for e in LOADED.errors]
    files = sorted(PATTERN_DIR.glob("*.yaml"))
    assert len(PATTERNS) == len(files), "two pattern files share an id"
    assert {Path(p.source).stem for p in LOADED.patterns} == {f.stem for f in files}


def test_pattern_file_name_is_its_id() -> None:
    for p in LOADED.patterns:
        assert Path(p.source).stem == p.id, p.source


@pytest.mark.parametrize("pid", sorted(PATTERNS))
def test_pattern_is_documented(pid: str) -> None:
    p = PATTERNS[pid]
    assert p.remediation and p.title and p.summary and p.references, pid


# Patterns decided by status fields, specs or metrics alone have no text to
# give examples of; their fixtures are their examples.
TEXT_PATTERNS = sorted(pid for pid, p in PATTERNS.items() if _log_leaves(p) or _text_regexes(p))


@pytest.mark.parametrize("pid", TEXT_PATTERNS)
def test_text_pattern_has_examples(pid: str) -> None:
    p = PATTERNS[pid]
    assert p.examples_match, f"{pid}: examples.match is empty"
    assert p.examples_no_match, f"{pid}: examples.no_match is empty"


@pytest.mark.parametrize("pid", sorted(PATTERNS))
def test_examples_match(pid: str) -> None:
    p = PATTERNS[pid]
    missed = [line for line in p.examples_match if not _matches(p, line)]
    assert not missed, f"{pid}: these examples.match lines match no leaf: {missed}"


@pytest.mark.parametrize("pid", sorted(PATTERNS))
def test_examples_no_match(pid: str) -> None:
    p = PATTERNS[pid]
    wrong = [line for line in p.examples_no_match if _matches(p, line)]
    assert not wrong, f"{pid}: these examples.no_match lines match: {wrong}"


@pytest.mark.parametrize("pid", sorted(PATTERNS))
def test_yields_to_names_known_findings(pid: str) -> None:
    unknown = set(PATTERNS[pid].yields_to) - set(PATTERNS)
    assert not unknown, f"{pid}: yields_to names unknown ids {unknown}"


MALFORMED = """\
id: broken-example
severity: critical
title: A pattern with a bad log leaf
step: 2
remediation: nothing
when:
  any:
    - log: {regex: 'unbalanced (group', levels: [INFO]}
"""

BAD_STEP = """\
id: bad-step
severity: warning
title: A pattern with a step that does not exist
step: 11
remediation: nothing
when:
  log: {regex: 'x'}
"""


def test_malformed_pattern_is_reported_and_scan_goes_on(tmp_path: Path) -> None:
    (tmp_path / "broken-example.yaml").write_text(MALFORMED)
    (tmp_path / "bad-step.yaml").write_text(BAD_STEP)
    run = run_cli("analyze", "fixtures/cuda-oom", "--patterns", str(tmp_path), "-o", "json")
    report = run.json()
    text = json.dumps(report)
    assert "broken-example.yaml" in text
    assert "when.any[0].log.regex" in text
    assert "bad-step.yaml" in text
    assert "step" in text
    # The rest of the patterns still ran.
    found = {p["name"]: [f["id"] for f in p["findings"]] for p in report["pods"]}
    assert "cuda-oom" in found["vllm-qwen-5b7d9c8f6d-7xk2p"]
    assert "broken-example" not in json.dumps(found)
    assert run.code == 1, run.stderr
