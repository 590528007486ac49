"""The rollout check costs pods + ReplicaSets, not pods x ReplicaSets x pods.

"Does a pod of another revision still run?" is asked for every pod; walking every
pod of the snapshot each time (and every ReplicaSet) would take seconds for 1,600
pods. Counted, not timed: the number of owner-reference lookups grows with the
number of pods, not with its square.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES
from triage import pipeline
from triage.collect import bundle
from triage.kube import workload
from triage.snapshot import Snapshot

BASE = bundle.load(FIXTURES / "rollout-gpu-surge")


def scaled(pods: int, replicasets: int) -> Snapshot:
    snap = copy.deepcopy(BASE)
    template = snap.pods()
    snap.objects["pods"] = []
    for i in range(pods):
        pod = copy.deepcopy(template[i % len(template)])
        pod["metadata"]["name"] = f"{pod['metadata']['name']}-{i}"
        snap.objects["pods"].append(pod)
    sets = snap.items("replicasets")
    for j in range(replicasets):
        old = copy.deepcopy(sets[0])
        old["metadata"]["name"] = f"old-{j}"
        old["metadata"].setdefault("annotations", {})[workload.REVISION_ANNOTATION] = str(100 + j)
        sets.append(old)
    return snap


def lookups(snap: Snapshot, monkeypatch: pytest.MonkeyPatch) -> int:
    calls = [0]
    real = workload.controller_ref

    def counted(obj: Any) -> Any:
        calls[0] += 1
        return real(obj)

    with monkeypatch.context() as patch:
        patch.setattr(workload, "controller_ref", counted)
        pipeline.analyze(snap)
    return calls[0]


def test_rollout_check_is_linear_in_pods(monkeypatch: pytest.MonkeyPatch) -> None:
    small = lookups(scaled(100, 10), monkeypatch)
    big = lookups(scaled(400, 10), monkeypatch)
    assert big < 6 * small, (small, big)  # 4x the pods: about 4x the work, not 16x


def test_rollout_findings_unchanged_by_the_index() -> None:
    report = pipeline.analyze(bundle.load(FIXTURES / "rollout-gpu-surge")).to_document()
    evidence = [e for p in report["pods"] for f in p["findings"] for e in f["evidence"]]
    assert any("still runs" in e or "surge" in e for e in evidence), evidence


def test_scaled_snapshot_is_analyzed(tmp_path: Path) -> None:
    report = pipeline.analyze(scaled(50, 3))
    assert len(report.pods) == 50
