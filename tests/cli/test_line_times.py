"""Line times the tool can trust, end to end: logs are read with timestamps=true, the
kubelet's time is stripped before matching and kept for the timeline, the stall measure
and bundles, and what the report derives from them agrees with them."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, fixture_names, replay, run_cli
from tests.logs.test_line_times import _times
from triage.collect.bundle import load
from triage.facts import ContainerContext
from triage.logs import linetime
from triage.snapshot import meta
from triage.vllm.selection import triaged_containers

_LOG_DETAIL = re.compile(r"^(previous log|log) \(([\w.-]+)\) line (\d+):")




def _line_times(root: Path) -> dict[tuple[str, str, str], list[datetime]]:
    out = {}
    for path in (root / "logs").glob("*/*/*.log"):
        stream = "previous" if path.name.endswith(".previous.log") else "current"
        out[(path.parent.name, path.name.split(".")[0], stream)] = \
            [t for t, _ in _times(path)] if path.stat().st_size else []
    return out


@pytest.mark.parametrize("name", fixture_names())
def test_timeline_and_stall_measure_agree_with_the_kubelet(name: str) -> None:
    root = FIXTURES / name
    times = _line_times(root)
    snapshot = load(root)
    collected = linetime.parse_time(snapshot.collected_at)
    assert collected is not None
    report = run_cli("analyze", str(root), "-o", "json").json()
    for pod in report["pods"]:
        for event in pod["timeline"]:
            m = _LOG_DETAIL.match(event["detail"])
            if not m:
                continue
            stream = "previous" if m.group(1) == "previous log" else "current"
            when = times[(pod["name"], m.group(2), stream)][int(m.group(3)) - 1]
            assert event["at"] == when.strftime("%Y-%m-%dT%H:%M:%SZ"), (pod["name"], event)
    for pod in snapshot.pods():
        for container in triaged_containers(pod, None, snapshot.selected_by_log):
            key = (meta(pod)["name"], str(container["name"]), "current")
            silent = ContainerContext(snapshot, pod, container).fact("log_silent_seconds")
            if not times.get(key) or silent.value is None:
                continue
            expected = (collected - times[key][-1]).total_seconds()
            assert silent.value == pytest.approx(max(0.0, expected), abs=0.001), silent.evidence
            assert "kubelet" in silent.evidence


def test_scan_asks_for_the_kubelets_times_and_bundles_keep_them(tmp_path: Path) -> None:
    with replay("cuda-oom", tmp_path) as (server, kubeconfig):
        out = tmp_path / "b.tar.gz"
        assert run_cli("collect", "--kubeconfig", str(kubeconfig), "-o", str(out)).code == 0
        logs = [r for r in server.requests if "/log?" in r]
    assert logs and all("timestamps=true" in r for r in logs if "tailLines" in r), logs
    import tarfile
    with tarfile.open(out) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("vllm.previous.log"))
        data = tar.extractfile(member).read()  # type: ignore[union-attr]
    assert linetime.KUBELET_STAMP.match(data.decode())
    # evidence shows the line as vLLM printed it, without the kubelet's time
    report = run_cli("analyze", str(out), "-o", "json").json()
    evidence = [e for p in report["pods"] for f in p["findings"] for e in f["evidence"]
                if " line " in e]
    assert evidence and not any(re.search(r"line \d+[> ] \d{4}-\d\d-\d\dT", e)
                                for e in evidence), evidence[:3]
