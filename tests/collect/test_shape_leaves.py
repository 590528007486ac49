"""Normalizing a listed pod keeps or drops plain leaves without a call per leaf, skips
managedFields (which nothing reads and redaction drops), and bounds depth: the result
is what a leaf-by-leaf walk gives."""

from __future__ import annotations

from typing import Any

from bench.scale import _big_pod
from triage.collect.shape import Shaped, normalize, normalize_items


def test_wrong_typed_leaves_are_still_dropped_and_counted() -> None:
    pod: dict[str, Any] = {
        "metadata": {"name": 5, "labels": {"a": "b", "c": True}, "uid": "u",
                     "managedFields": [{"manager": "x", "fieldsV1": {"f:spec": {}}}]},
        "spec": {"nodeName": "n", "hostIPC": "yes", "containers": [
            {"name": "vllm", "args": "--oops", "env": [{"name": "A", "value": 3},
                                                     {"name": "B", "value": False}],
             "ports": [{"containerPort": "8000", "port": 8000}],
             "resources": {"limits": {"nvidia.com/gpu": 1}}}]},
        "status": {"containerStatuses": [{"name": "vllm", "restartCount": True,
                                          "ready": 1, "started": False}]},
    }
    shaped = Shaped()
    out = normalize(pod, shaped)
    assert out["metadata"] == {"labels": {"a": "b"}, "uid": "u"}  # name 5, label True gone
    assert "hostIPC" not in out["spec"]
    c = out["spec"]["containers"][0]
    assert "args" not in c  # a string where a list of strings belongs
    assert c["env"] == [{"name": "A", "value": 3}, {"name": "B"}]  # a bool is no scalar
    assert c["ports"] == [{"port": 8000}]  # containerPort must be an integer
    assert c["resources"] == {"limits": {"nvidia.com/gpu": 1}}
    assert out["status"]["containerStatuses"] == [{"name": "vllm", "started": False}]
    assert shaped.dropped == 8
    assert "metadata.name" in shaped.paths


def test_managed_fields_are_skipped_and_nothing_else_changes() -> None:
    pods = [_big_pod(i, "team-00") for i in range(3)]
    out = normalize_items("pods", pods, notes := [])
    assert notes == []
    for before, after in zip(pods, out, strict=True):
        expected = {**before, "metadata": {k: v for k, v in before["metadata"].items()
                                           if k != "managedFields"}}
        assert after == expected


def test_leaves_past_the_depth_bound_are_dropped() -> None:
    deep: dict[str, Any] = {"leaf": "x"}
    for _ in range(45):
        deep = {"nest": deep}
    shaped = Shaped()
    out = normalize({"metadata": {"name": "p"}, "spec": deep}, shaped)
    node = out["spec"]
    depth = 0
    while isinstance(node, dict) and "nest" in node:
        node, depth = node["nest"], depth + 1
    assert depth <= 41 and shaped.dropped == 1
