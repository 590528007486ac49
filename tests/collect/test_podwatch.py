"""The pod watch's decisions, unit by unit: what starts an early cycle and what ends a watch.

Only a vLLM pod's restart count or readiness moving pokes the loop; a new
pod, a deleted pod, another pod's change, a bookmark do not. An ERROR event
(410 Gone) or an event line over the size bound ends the watch (the loop
then falls back to the interval).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.conftest import FIXTURES
from tests.support.fixturekit import HEALTHY_POD, load_list
from triage.collect.live.podwatch import PodWatcher, pod_state


def _pods() -> list[dict[str, Any]]:
    return load_list(FIXTURES / "well-sized-healthy", "pods")["items"]


def _watcher(pokes: list[str]) -> PodWatcher:
    watcher = PodWatcher(None, "llm", None, pokes.append)
    watcher.rebase("424242", _pods())
    return watcher


def _crashed(pod: dict[str, Any]) -> dict[str, Any]:
    pod = copy.deepcopy(pod)
    pod["metadata"]["resourceVersion"] = "424250"
    pod["status"]["containerStatuses"][0]["restartCount"] = 1
    for cond in pod["status"]["conditions"]:
        if cond["type"] == "Ready":
            cond["status"] = "False"
    return pod


def test_a_restart_or_readiness_change_pokes_the_loop() -> None:
    pokes: list[str] = []
    watcher = _watcher(pokes)
    pod = next(p for p in _pods() if p["metadata"]["name"] == HEALTHY_POD)
    assert pod_state(pod) == (0, True)
    watcher._handle({"type": "MODIFIED", "object": _crashed(pod)})
    assert pokes == [f"llm/{HEALTHY_POD}: restarts 0 -> 1, ready True -> False"]
    # The next watch starts where this one got to.
    assert watcher._version == "424250"


def test_other_changes_do_not() -> None:
    pokes: list[str] = []
    watcher = _watcher(pokes)
    pod = next(p for p in _pods() if p["metadata"]["name"] == HEALTHY_POD)
    relabelled = copy.deepcopy(pod)
    relabelled["metadata"]["labels"]["touched"] = "yes"
    watcher._handle({"type": "MODIFIED", "object": relabelled})  # same restarts, ready
    new = copy.deepcopy(pod)
    new["metadata"].update(name="vllm-qwen-new", uid="uid-new")
    watcher._handle({"type": "ADDED", "object": _crashed(new)})  # unknown before: no baseline
    watcher._handle({"type": "DELETED", "object": pod})
    redis = copy.deepcopy(pod)
    redis["spec"]["containers"][0].update(image="redis:7", command=["redis-server"], args=[])
    redis["metadata"].update(name="redis-0", uid="uid-redis")
    watcher._handle({"type": "MODIFIED", "object": _crashed(redis)})  # not a vLLM pod
    watcher._handle({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "5"}}})
    assert pokes == []
    assert watcher._version == "5"
    # The pod seen ADDED is known now: its next change counts.
    recovered = copy.deepcopy(new)
    recovered["status"]["containerStatuses"][0]["restartCount"] = 1
    watcher._handle({"type": "MODIFIED", "object": recovered})
    assert pokes == ["llm/vllm-qwen-new: restarts 1 -> 1, ready False -> True"]


def test_an_error_event_ends_the_watch() -> None:
    watcher = _watcher([])
    with pytest.raises(RuntimeError, match="410 Expired"):
        watcher._handle({"type": "ERROR", "object": {"kind": "Status", "code": 410,
                                                     "reason": "Expired",
                                                     "message": "too old resource version"}})


class _Stream:
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    def stream(self, _size: int) -> list[bytes]:
        return self.chunks


def test_event_lines_are_bounded() -> None:
    watcher = PodWatcher(None, "llm", None, lambda _why: None, max_event_bytes=1024)
    events = list(watcher._events(_Stream([b'{"type": "BOOKMARK", ', b'"object": {}}\n{"ty'])))
    assert events == [{"type": "BOOKMARK", "object": {}}]
    with pytest.raises(RuntimeError, match="larger than"):
        list(watcher._events(_Stream([b"x" * 2048])))
