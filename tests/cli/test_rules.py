"""A rule's warning form, end to end: ``analyze`` reports it as a warning and its step
warns."""

from __future__ import annotations

from typing import Any


def test_scan_reports_the_warning_form_and_its_step_warns(tmp_path: Any) -> None:
    """End to end: Ray's "over 95% full" on a healthy pod is disk-full as a warning."""
    from tests.conftest import run_cli
    from tests.support.fixturekit import copy_fixture

    root = copy_fixture(tmp_path / "fx", "well-sized-healthy")
    log = root / "logs/llm/vllm-qwen-6d8f7b9c5d-2kqzt/vllm.log"
    log.write_text(log.read_text() + "(APIServer pid=1) (raylet) [2025-12-23 23:06:29,336 E "
                   "133251 133275] (raylet) file_system_monitor.cc:116: /tmp/ray/session_2025-"
                   "12-23_22-55-15_211286_132135 is over 95% full, available space: 46.5185 GB; "
                   "capacity: 7096.47 GB. Object creation will fail if spilling is required.\n")
    run = run_cli("analyze", str(root), "-o", "json")
    report = run.json()
    found = {p["name"]: [(f["id"], f["severity"]) for f in p["findings"]]
             for p in report["pods"]}
    assert found["vllm-qwen-6d8f7b9c5d-2kqzt"] == [("disk-full", "warning")]
    assert found["vllm-qwen-6d8f7b9c5d-m4x7w"] == []
    step9 = next(s for s in report["checklist"] if s["step"] == 9)
    assert step9["verdict"] == "warn" and run.code == 0
