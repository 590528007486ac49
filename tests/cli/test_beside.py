"""A step's verdict answers its own question, end to end.

A port clash, no GPU or an NCCL failure is not a CUDA OOM: step 2 passes on
its own question and the finding is a failing row of its own beside it. The
JSON checklist stays exactly the ten steps; such findings stay in the pods'
findings and are listed in ``beside_checklist``. The headline names the
failures. Which findings answer their step is data (``answers_step`` in the
pattern files).
"""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURES, run_cli


@pytest.mark.parametrize(("fixture", "finding"), [
    ("port-in-use", "port-in-use"), ("no-gpu-missing-request", "no-gpu"),
    ("nccl-failure", "nccl-failure")])
def test_step_2_passes_with_a_separate_failing_row(fixture: str, finding: str) -> None:
    run = run_cli("analyze", str(FIXTURES / fixture), "-o", "json")
    assert run.code == 1, run.stderr  # still a critical finding: still exit 1
    report = run.json()
    assert [s["step"] for s in report["checklist"]] == list(range(1, 11))
    step2 = report["checklist"][1]
    assert step2["verdict"] == "pass", step2
    assert all(finding not in e for e in step2["evidence"]), step2
    rows = [b for b in report["beside_checklist"] if b["id"] == finding]
    assert len(rows) == 1 and rows[0]["step"] == 2 and rows[0]["verdict"] == "fail", rows
    assert any(f["id"] == finding for p in report["pods"] for f in p["findings"])
    assert report["summary"].split("; ")[1] == f"failing: {finding}", report["summary"]

    table = run_cli("analyze", str(FIXTURES / fixture), env={"COLUMNS": "120"}).stdout
    row = next(line for line in table.splitlines() if f"└ {finding}" in line)
    assert "fail" in row
    md = run_cli("analyze", str(FIXTURES / fixture), "-o", "markdown").stdout
    assert f"| ↳ | `{finding}`:" in md


def test_the_headline_names_every_failure() -> None:
    report = run_cli("analyze", str(FIXTURES / "cuda-oom"), "-o", "json").json()
    assert report["summary"] == ("1 vLLM pod(s); failing: cuda-oom, gpu-memory-utilization; "
                                 "steps that could not be judged: 5, 6")
    report = run_cli("analyze", str(FIXTURES / "shm-bus-error-tp2"), "-o", "json").json()
    assert "failing: shm-too-small" in report["summary"]
    assert report["checklist"][0]["verdict"] == "pass"  # step 1 asks about the memory limit
