"""The README shows what the tool prints today: its example report is the first screen of
`vllm-triage analyze fixtures/cuda-oom` in an 80-column terminal."""

from __future__ import annotations

from tests.conftest import ROOT, run_cli

README = (ROOT / "README.md").read_text()


def test_the_example_report_is_what_analyze_prints_at_80_columns() -> None:
    section = README.split("## Example report", 1)[1]
    example = section.split("```\n", 2)[1]
    shown = example.removesuffix("...\n").splitlines()
    assert len(shown) > 20
    run = run_cli("analyze", str(ROOT / "fixtures" / "cuda-oom"), env={"COLUMNS": "80"})
    assert run.stdout.splitlines()[:len(shown)] == shown
