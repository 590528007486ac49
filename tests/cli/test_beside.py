"""Issue 17 point 2: a step's verdict answers its own question.

A port clash, no GPU or an NCCL failure is not a CUDA OOM: step 2 passes on
its own question and the finding is a failing row of its own beside it. The
JSON checklist stays exactly the ten steps; such findings stay in the pods'
findings and are listed in ``beside_checklist``. The headline names the
failures. Which findings answer their step is data (``answers_step`` in the
pattern files).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_cli
from triage.rules.loader import load_patterns


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


def test_answers_step_must_be_a_boolean(tmp_path: Path) -> None:
    text = (FIXTURES.parent / "patterns" / "port-in-use.yaml").read_text()
    (tmp_path / "port-in-use.yaml").write_text(
        text.replace("answers_step: false", "answers_step: maybe"))
    loaded = load_patterns([tmp_path])
    assert any("answers_step: must be true or false" in str(e) for e in loaded.errors)


def test_every_pattern_beside_its_step_is_not_about_what_the_step_names() -> None:
    """The data, pinned: which findings stand beside their step."""
    beside = {p.id for p in load_patterns([]).patterns if not p.answers_step}
    assert beside == {"shm-too-small", "crashloop-unknown", "cuda-driver-mismatch",
                      "gpu-arch-unsupported", "nccl-failure", "no-gpu", "port-in-use",
                      "gpu-hardware-error", "gpu-unschedulable", "model-arch-unsupported",
                      "vllm-port-env-clash",
                      # issue 15: a stall, a hang, a dead engine, an unwritable cache and a
                      # rejected flag are none of them what their step names.
                      "startup-stalled", "engine-hung", "engine-died",
                      "cache-dir-not-writable", "engine-args-invalid"}
