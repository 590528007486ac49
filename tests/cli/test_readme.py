"""Issue 17: the README shows what the tool prints today: its checklist table names the
ten steps as the code does, in order, and its example report is the first screen of
`vllm-triage analyze fixtures/cuda-oom` in an 80-column terminal."""

from __future__ import annotations

import re

from tests.conftest import ROOT, run_cli
from triage.checklist import STEPS

README = (ROOT / "README.md").read_text()


def test_the_checklist_table_is_the_codes() -> None:
    table = README.split("## The checklist", 1)[1].split("\n\n")[2]
    rows = [line for line in table.splitlines() if re.match(r"^\| \d+ \|", line)]
    titles = [row.split("|")[2].strip().replace("`", "") for row in rows]
    assert titles == [s.title for s in STEPS]


def test_the_example_report_is_what_analyze_prints_at_80_columns() -> None:
    section = README.split("## Example report", 1)[1]
    example = section.split("```\n", 2)[1]
    shown = example.removesuffix("...\n").splitlines()
    assert len(shown) > 20
    run = run_cli("analyze", str(ROOT / "fixtures" / "cuda-oom"), env={"COLUMNS": "80"})
    assert run.stdout.splitlines()[:len(shown)] == shown
