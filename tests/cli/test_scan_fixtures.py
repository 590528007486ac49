"""Every recorded incident, scanned live through the test API server.

Each fixture's incident.yaml says what a correct triage finds: the findings
per pod (and no others), the verdicts of the named checklist steps, and the
exit code. The server's request log proves the tool only ever sent GETs.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import FIXTURES, Run, fixture_names, replay_with_prometheus, run_cli


@pytest.mark.parametrize("name", fixture_names())
def test_scan_matches_expected(name: str, tmp_path: Path, backfilled: Any) -> None:
    """A fixture with recorded metric history (incident.yaml ``prometheus``) is scanned
    with a real Prometheus serving it behind the fixture's Prometheus Service."""
    incident = yaml.safe_load((FIXTURES / name / "incident.yaml").read_text())
    expected = incident["expected"]
    history = (incident.get("prometheus") or {}).get("history")
    blocks = backfilled(history) if history else None
    # The scan runs at the fixture's collection time: Prometheus is asked about the window
    # ending then, and how long a log has been silent is measured to then.
    env = collection_time(incident)
    with replay_with_prometheus(name, tmp_path, blocks) as (server, kubeconfig, _url):
        args = ["scan", "--kubeconfig", str(kubeconfig), "-o", "json"]
        args += incident.get("scan_args", [])
        run = run_cli(*args, env=env)
        requests = list(server.requests)
    assert_triage_as_expected(run, expected)
    assert requests and all(r.startswith("GET ") for r in requests), requests


def collection_time(incident: dict[str, Any]) -> dict[str, str]:
    """The environment that pins a scan's time to the fixture's collection time."""
    return {"SOURCE_DATE_EPOCH": str(int(datetime.fromisoformat(
        incident["collected_at"].replace("Z", "+00:00")).timestamp()))}


def assert_triage_as_expected(run: Run, expected: dict[str, Any]) -> None:
    """The scan's exit code, findings per pod, named checklist verdicts and rows beside
    the checklist are the fixture's ``expected``."""
    assert run.code == expected["exit_code"], run.stderr + run.stdout[-2000:]
    report = run.json()
    assert report["schema"] == "vllm-triage/report/v1"
    found = {p["name"]: sorted(f["id"] for f in p["findings"]) for p in report["pods"]}
    assert found == {pod: sorted(ids) for pod, ids in expected["pods"].items()}
    verdicts = {s["step"]: s["verdict"] for s in report["checklist"]}
    assert [s["step"] for s in report["checklist"]] == list(range(1, 11))
    for step, verdict in expected.get("checklist", {}).items():
        assert verdicts[int(step)] == verdict, (step, report["checklist"][int(step) - 1])
    # Findings that are not what their step asks about: rows of their own beside it.
    beside = {(b["step"], b["id"]): b["verdict"] for b in report["beside_checklist"]}
    assert beside == {(int(step), fid): verdict
                      for step, rows in (expected.get("beside") or {}).items()
                      for fid, verdict in rows.items()}, report["beside_checklist"]
    for pod in report["pods"]:
        for f in pod["findings"]:
            assert f["evidence"], f"{f['id']} on {pod['name']} has no evidence"


@pytest.mark.parametrize("name", fixture_names())
def test_analyze_fixture_directory(name: str) -> None:
    """The offline path reads the same fixture and names the same findings."""
    incident = yaml.safe_load((FIXTURES / name / "incident.yaml").read_text())
    if incident.get("faults"):
        pytest.skip("faults are played by the API server; offline there is nothing to refuse")
    # Offline there is no Prometheus: a fixture that has one says what the scrape alone gives.
    expected = incident.get("expected_single_scrape") or incident["expected"]
    run = run_cli("analyze", str(FIXTURES / name), "-o", "json")
    assert run.code == expected["exit_code"], run.stderr
    report = run.json()
    found = {p["name"]: sorted(f["id"] for f in p["findings"]) for p in report["pods"]}
    assert found == {pod: sorted(ids) for pod, ids in expected["pods"].items()}
    verdicts = {s["step"]: s["verdict"] for s in report["checklist"]}
    for step, verdict in (expected.get("checklist") or {}).items() if \
            "expected_single_scrape" in incident else ():
        assert verdicts[int(step)] == verdict, (step, report["checklist"][int(step) - 1])
