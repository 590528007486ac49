"""Scopes and causes through the CLI: a cause's sentence reaches the report from its
pattern file, and a checklist.yaml in --patterns moves titles and settings or is named when
it is wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT, run_cli
from triage.rules.loader import load_patterns

LOADED = load_patterns()


def test_the_cross_pod_cause_reaches_the_report_from_its_pattern_file(tmp_path: Path) -> None:
    """Overriding the cause's file with --patterns changes the sentence: the report holds
    what the pattern says, not words of its own."""
    text = (ROOT / "patterns" / "gpus-held-by-crash-loops.yaml").read_text()
    (tmp_path / "gpus-held-by-crash-loops.yaml").write_text(
        text.replace("frees them.", "frees them (said by our own pattern)."))
    run = run_cli("analyze", str(FIXTURES / "busy-namespace"), "-o", "json",
                  "--patterns", str(tmp_path))
    causes = [c for card in run.json()["cards"] for c in card["causes"]]
    assert causes and all(c.endswith("(said by our own pattern).") for c in causes)


def test_a_checklist_file_in_patterns_moves_a_setting_and_a_title(tmp_path: Path) -> None:
    (tmp_path / "checklist.yaml").write_text(
        "steps:\n  4: --gpu-memory-utilization within 0.80-0.95\n"
        "settings:\n  stats_fresh_seconds: 1\n")
    run = run_cli("analyze", str(FIXTURES / "cuda-oom"), "-o", "json", "--patterns",
                  str(tmp_path))
    doc = run.json()
    titles = {s["step"]: s["title"] for s in doc["checklist"]}
    assert titles[4] == "--gpu-memory-utilization within 0.80-0.95"
    assert titles[1] == LOADED.checklist.titles[1]
    assert not [w for w in doc["warnings"] if "checklist.yaml" in w]


@pytest.mark.parametrize(("text", "problem"), [
    ("settings:\n  stats_fresh_minutes: 5\n", "settings.stats_fresh_minutes: unknown setting"),
    ("settings:\n  stats_fresh_seconds: soon\n", "settings.stats_fresh_seconds: must be a "
                                                  "number"),
    ("steps:\n  11: An eleventh step\n", "steps.11: a step is a number from 1 to 10"),
])
def test_a_bad_checklist_file_is_named_and_the_shipped_one_stays(
        tmp_path: Path, text: str, problem: str) -> None:
    (tmp_path / "checklist.yaml").write_text(text)
    run = run_cli("patterns", "--patterns", str(tmp_path))
    assert run.code == 2 and "checklist.yaml" in run.stderr and problem in run.stderr, \
        run.stderr
    scan = run_cli("analyze", str(FIXTURES / "cuda-oom"), "-o", "json", "--patterns",
                   str(tmp_path))
    assert {s["step"]: s["title"] for s in scan.json()["checklist"]} == \
        LOADED.checklist.titles
    assert any("checklist.yaml" in w for w in scan.json()["warnings"])
