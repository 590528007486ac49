"""Events are joined to their pod by involvedObject.uid, events.k8s.io series are
honoured, and times in the future are flagged as clock skew in the evidence."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.conftest import run_cli
from tests.support.fixturekit import copy_fixture

POD = "vllm-qwen14b-59f7c8d6b4-r8tzn"


def _probe_timing(tmp_path: Path) -> Path:
    return copy_fixture(tmp_path / "fx", "probe-timing")


def _edit(root: Path, plural: str, change: Any) -> None:
    path = root / "objects" / f"{plural}.yaml"
    data = yaml.safe_load(path.read_text())
    for item in data["items"]:
        change(item)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def _report(root: Path) -> dict[str, Any]:
    run = run_cli("analyze", str(root), "-o", "json")
    assert run.code in (0, 1), run.stderr
    report: dict[str, Any] = run.json()
    return report


def _evidence(report: dict[str, Any], finding: str) -> list[str]:
    return [e for p in report["pods"] for f in p["findings"] if f["id"] == finding
            for e in f["evidence"]]


def test_why_events_of_a_recreated_pod_are_not_its_own(tmp_path: Path) -> None:
    """Before: events matched by kind, namespace and name, so a StatefulSet pod recreated
    under the same name carried its predecessor's probe kills."""
    root = _probe_timing(tmp_path)
    assert "probe-killed-during-load" in {
        f["id"] for p in _report(root)["pods"] for f in p["findings"]}

    def recreate(pod: dict[str, Any]) -> None:
        pod["metadata"]["uid"] = "0b7a4c1e-9d6f-4e3a-8c2b-5f1e7d9a3c60"
    _edit(root, "pods", recreate)
    report = _report(root)
    assert "probe-killed-during-load" not in {
        f["id"] for p in report["pods"] for f in p["findings"]}
    assert "failed liveness probe" not in str(report["pods"])


def test_why_events_series_last_observed_is_the_last_time(tmp_path: Path) -> None:
    """Before: for an events.k8s.io event with a series, "last" was its first occurrence
    (eventTime), so a kill looked over an hour older than it was."""
    root = _probe_timing(tmp_path)

    def as_series(ev: dict[str, Any]) -> None:
        if ev["reason"] != "Killing":
            return
        ev["eventTime"] = "2026-11-28T01:41:12.000000Z"
        ev["series"] = {"count": 9, "lastObservedTime": "2026-11-28T03:10:51.000000Z"}
        for legacy in ("firstTimestamp", "lastTimestamp", "count"):
            ev[legacy] = None
    _edit(root, "events", as_series)
    kills = [e for e in _evidence(_report(root), "probe-killed-during-load")
             if "Killing" in e]
    assert kills and "x9, last 2026-11-28T03:10:51" in kills[0], kills


def test_why_events_in_the_future_are_flagged_as_clock_skew(tmp_path: Path) -> None:
    """Before: an event stamped in year 2999 was printed as an ordinary time."""
    root = _probe_timing(tmp_path)

    def future(ev: dict[str, Any]) -> None:
        if ev["reason"] == "Killing":
            ev["lastTimestamp"] = "2999-01-01T00:00:00Z"
    _edit(root, "events", future)
    kills = [e for e in _evidence(_report(root), "probe-killed-during-load")
             if "Killing" in e]
    assert kills and "2999-01-01T00:00:00Z (in the future" in kills[0], kills
    assert "clock skew" in kills[0]


def test_why_events_at_go_zero_time_have_no_time(tmp_path: Path) -> None:
    """Before: 0001-01-01T00:00:00Z, Go's zero time (client-go's "never set"), was
    printed as the time of the last kill."""
    root = _probe_timing(tmp_path)

    def zero(ev: dict[str, Any]) -> None:
        ev["lastTimestamp"] = "0001-01-01T00:00:00Z"
        ev["firstTimestamp"] = ev["eventTime"] = None
        if ev["reason"] == "Unhealthy":  # and not even a creation time to fall back to
            ev["metadata"].pop("creationTimestamp", None)
    _edit(root, "events", zero)
    report = _report(root)
    evidence = _evidence(report, "probe-killed-during-load")
    assert "0001-01-01" not in str(report), [e for e in evidence if "0001" in e]
    kills = [e for e in evidence if "Killing" in e]
    assert kills and "x9, last 2026-11-28T01:41:12Z" in kills[0], kills  # its creation
