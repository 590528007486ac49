"""A pod is analysed as soon as its reads are in.

The live collector yields pods as their reads complete and reads only a
window of pods ahead of the analysis; an analysis that fails ends the reads,
collect reads everything before it returns, and waiting for reads does not spin.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from bench import synthetic
from tests.conftest import replay
from triage.collect.live import LiveCollector, Options, connect
from triage.snapshot import meta


def _namespace(tmp_path: Path, pods: int) -> Path:
    root = tmp_path / "ns"
    synthetic.generate(root, pods=pods, lines=40)
    return root


def _log_reads(requests: list[str]) -> set[str]:
    """Pods whose logs were asked for."""
    return {r.split("/pods/")[1].split("/")[0] for r in requests
            if r.endswith("/log") or "/log?" in r}


def test_reads_run_only_a_window_ahead_of_the_analysis(tmp_path: Path) -> None:
    ahead = 3
    with replay(_namespace(tmp_path, 12), tmp_path) as (server, kc):
        collector = LiveCollector(connect(str(kc), None, 10),
                                  Options(namespace=synthetic.NS, read_ahead_pods=ahead))
        snap = collector.begin()
        seen: list[str] = []
        with collector.reading(snap) as arrivals:
            for pod in arrivals:
                name = str(meta(pod)["name"])
                # Its own reads are in when it arrives ...
                assert any(k[1] == name for k in snap.logs), name
                seen.append(name)
                time.sleep(0.05)  # a slow analysis: the reads must wait for it
                with server.lock:
                    asked = _log_reads(list(server.requests))
                # ... and no more than the window beyond the pods handed out were read.
                assert len(asked) <= len(seen) + ahead, (len(seen), sorted(asked))
    assert sorted(seen) == sorted(str(meta(p)["name"]) for p in snap.pods())
    assert snap.failures == []


def test_an_analysis_that_fails_ends_the_reads(tmp_path: Path) -> None:
    with replay(_namespace(tmp_path, 30), tmp_path, latency=0.05) as (server, kc):
        collector = LiveCollector(connect(str(kc), None, 10),
                                  Options(namespace=synthetic.NS, read_ahead_pods=4))
        snap = collector.begin()
        with pytest.raises(RuntimeError, match="analysis failed"), \
                collector.reading(snap) as arrivals:
            next(iter(arrivals))
            raise RuntimeError("analysis failed")
        # Requests already on the wire may still land; then nothing more comes.
        seen, deadline = -1, time.monotonic() + 10
        while time.monotonic() < deadline:
            with server.lock:
                count = len(server.requests)
            if count == seen:
                break
            seen = count
            time.sleep(0.5)
        assert count == seen, "requests kept coming after the analysis failed"
        # Only the pods in the window were read, not every pod.
        assert len(_log_reads(list(server.requests))) <= 1 + 4
    assert threading.active_count() < 20


def test_collect_reads_everything_before_it_returns(tmp_path: Path) -> None:
    with replay(_namespace(tmp_path, 10), tmp_path) as (_server, kc):
        snap = LiveCollector(connect(str(kc), None, 10),
                             Options(namespace=synthetic.NS, read_ahead_pods=2)).collect()
    pods = {str(meta(p)["name"]) for p in snap.pods()}
    assert {k[1] for k in snap.logs} == pods
    assert not any(source.released for source in snap.logs.values())


def test_waiting_for_reads_does_not_spin(tmp_path: Path) -> None:
    """Waiting on a pod with one read done and one under way once burned a core
    (and the interpreter lock the read threads need)."""
    with replay(_namespace(tmp_path, 12), tmp_path, latency=0.1) as (_server, kc):
        # Few workers for many pods ahead: pods sit with some reads done for long.
        collector = LiveCollector(connect(str(kc), None, 10), Options(
            namespace=synthetic.NS, read_ahead_pods=6, workers=2))
        wall, cpu = time.monotonic(), time.process_time()
        collector.collect()
        wall, cpu = time.monotonic() - wall, time.process_time() - cpu
    assert cpu < wall / 2, f"{cpu:.2f} s of CPU in {wall:.2f} s of waiting on reads"
