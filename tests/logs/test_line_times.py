"""Every fixture's logs carry the kubelet's times, consistent with the pods' status and
vLLM's own stamps; a log without them falls back to vLLM's stamps."""

from __future__ import annotations

import itertools
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import FIXTURES, fixture_names
from tests.support.kubeapi import strip_kubelet_times
from triage.logs import linetime

# tqdm's elapsed time after its counts: "[04:10<05:30, ...]" or "[1:04:10, ...]"
_TQDM_ELAPSED = re.compile(r"\[(?:(\d+):)?(\d\d):(\d\d)[<,\]]")


def _elapsed(text: str) -> timedelta | None:
    m = _TQDM_ELAPSED.search(text)
    return None if m is None else timedelta(hours=int(m.group(1) or 0),
                                            minutes=int(m.group(2)), seconds=int(m.group(3)))


def _times(path: Path) -> list[tuple[datetime, str]]:
    """Each line the tool reads, with its time: a kubelet line's tqdm redraws (pieces
    between bare carriage returns) are lines of their own, at the line's time less how
    much earlier than the last redraw tqdm's elapsed time says each was drawn."""
    out = []
    # bytes, not read_text: universal newlines would make every "\r" a line of its own
    for raw in path.read_bytes().decode("utf-8", errors="replace").split("\n")[:-1]:
        when = linetime.kubelet_time(raw)
        assert when is not None, f"{path}: a line without the kubelet's time: {raw[:80]!r}"
        pieces = [p for p in re.split(r"\r+", linetime.without_kubelet_time(raw).rstrip("\r"))
                  if p.strip()] or [""]
        last = next((e for e in map(_elapsed, reversed(pieces)) if e is not None), None)
        for piece in pieces:
            own = _elapsed(piece)
            earlier = last - own if last is not None and own is not None and own < last \
                else timedelta(0)
            out.append((when - earlier, piece))
    return out


def _runs(root: Path) -> dict[tuple[str, str, str], tuple[Any, Any, Any]]:
    pods = yaml.safe_load((root / "objects" / "pods.yaml").read_text())["items"]
    out = {}
    for pod in pods:
        # init containers (a model download before vLLM) have logs of their own
        for cs in [*(pod["status"].get("initContainerStatuses") or []),
                   *(pod["status"].get("containerStatuses") or [])]:
            state = cs.get("state") or {}
            now = state.get("running") or state.get("terminated") or {}
            last = (cs.get("lastState") or {}).get("terminated") or {}
            out[(pod["metadata"]["name"], cs["name"], "current")] = (
                now.get("startedAt") or last.get("startedAt"),
                now.get("finishedAt") or (None if now else last.get("finishedAt")), None)
            out[(pod["metadata"]["name"], cs["name"], "previous")] = (
                last.get("startedAt"), last.get("finishedAt"), None)
    return out


@pytest.mark.parametrize("name", fixture_names())
def test_fixture_logs_carry_consistent_kubelet_times(name: str) -> None:
    """As `collect` writes them: the kubelet's time on every line, never backwards, within
    the container run the log belongs to, and agreeing with vLLM's own stamps."""
    root = FIXTURES / name
    incident = yaml.safe_load((root / "incident.yaml").read_text())
    collected = linetime.parse_time(incident["collected_at"])
    runs = _runs(root)
    for path in sorted((root / "logs").glob("*/*/*.log")):
        if not path.stat().st_size:
            continue
        container = path.name.split(".")[0]
        stream = "previous" if path.name.endswith(".previous.log") else "current"
        start, end, _ = runs.get((path.parent.name, container, stream), (None, None, None))
        lo = linetime.parse_time(start)
        hi = linetime.parse_time(end) or collected
        times = _times(path)
        assert all(a[0] <= b[0] for a, b in itertools.pairwise(times)), f"{path}: times go back"
        assert lo is not None and hi is not None, f"{path}: no container run in the status"
        assert lo - timedelta(seconds=1) <= times[0][0] and times[-1][0] <= hi, \
            f"{path}: {times[0][0]}..{times[-1][0]} outside the run {lo}..{hi}"
        for when, text in times:
            own = linetime.vllm_time(text, lo)
            if own is not None:
                # the kubelet receives a line after vLLM stamped it (a worker's output may
                # wait in a pipe a few seconds), never before (vLLM's stamp has no fraction)
                lag = (when - own).total_seconds()
                assert -1 < lag < 10, f"{path}: {text[:80]!r} at {when}"


def test_a_log_without_the_kubelets_times_falls_back_to_vllms_stamps() -> None:
    anchor = datetime(2026, 11, 28, 2, 0, tzinfo=timezone.utc)
    raw = "(APIServer pid=1) INFO 11-28 03:05:19 [api_server.py:1805] vLLM API server"
    assert linetime.line_time(raw, anchor) == (
        datetime(2026, 11, 28, 3, 5, 19, tzinfo=timezone.utc), linetime.VLLM)
    stamped = "2026-11-28T03:05:19.123456789Z " + raw
    when, source = linetime.line_time(stamped, anchor) or (None, "")
    assert source == linetime.KUBELET and when == datetime(2026, 11, 28, 3, 5, 19, 123456,
                                                         tzinfo=timezone.utc)
    # a year boundary: December's stamps in a run that started on January 1st
    jan = datetime(2027, 1, 1, 0, 0, 5, tzinfo=timezone.utc)
    assert linetime.vllm_time("INFO 12-31 23:59:58 [x.py:1] y", jan) == \
        datetime(2026, 12, 31, 23, 59, 58, tzinfo=timezone.utc)
    assert strip_kubelet_times(stamped.encode() + b"\n" + stamped.encode()) == \
        (raw + "\n" + raw).encode()
