"""Every recorded incident, scanned live through the test API server.

Each fixture's incident.yaml says what a correct triage finds: the findings
per pod (and no others), the verdicts of the named checklist steps, and the
exit code. The server's request log proves the tool only ever sent GETs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.conftest import FIXTURES, fixture_names, replay, run_cli


@pytest.mark.parametrize("name", fixture_names())
def test_scan_matches_expected(name: str, tmp_path: Path) -> None:
    incident = yaml.safe_load((FIXTURES / name / "incident.yaml").read_text())
    expected = incident["expected"]
    with replay(name, tmp_path) as (server, kubeconfig):
        args = ["scan", "--kubeconfig", str(kubeconfig), "-o", "json"]
        args += incident.get("scan_args", [])
        run = run_cli(*args)
        requests = list(server.requests)
    assert run.code == expected["exit_code"], run.stderr + run.stdout[-2000:]
    report = run.json()
    assert report["schema"] == "vllm-triage/report/v1"
    found = {p["name"]: sorted(f["id"] for f in p["findings"]) for p in report["pods"]}
    assert found == {pod: sorted(ids) for pod, ids in expected["pods"].items()}
    verdicts = {s["step"]: s["verdict"] for s in report["checklist"]}
    assert [s["step"] for s in report["checklist"]] == list(range(1, 11))
    for step, verdict in expected.get("checklist", {}).items():
        assert verdicts[int(step)] == verdict, (step, report["checklist"][int(step) - 1])
    for pod in report["pods"]:
        for f in pod["findings"]:
            assert f["evidence"], f"{f['id']} on {pod['name']} has no evidence"
    assert requests and all(r.startswith("GET ") for r in requests), requests


@pytest.mark.parametrize("name", fixture_names())
def test_analyze_fixture_directory(name: str) -> None:
    """The offline path reads the same fixture and names the same findings."""
    incident = yaml.safe_load((FIXTURES / name / "incident.yaml").read_text())
    if incident.get("faults"):
        pytest.skip("faults are played by the API server; offline there is nothing to refuse")
    run = run_cli("analyze", str(FIXTURES / name), "-o", "json")
    assert run.code == incident["expected"]["exit_code"], run.stderr
    found = {p["name"]: sorted(f["id"] for f in p["findings"]) for p in run.json()["pods"]}
    assert found == {pod: sorted(ids) for pod, ids in incident["expected"]["pods"].items()}
