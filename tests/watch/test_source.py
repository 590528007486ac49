"""In a pod, with its service account, there is no kubeconfig context: the commands a
watch prints name the cluster by --cluster-name, the context people reach it by."""

from __future__ import annotations

from typing import Any

import pytest

from triage.collect.live.kubeconfig import Connection
from triage.safety.shell import IN_CLUSTER, KubectlTarget, kubectl
from triage.watch import source


def _in_a_pod(kubeconfig: str | None, context: str | None, timeout: float) -> Connection:
    return Connection(api=None, context=IN_CLUSTER, default_namespace="llm",
                      kubectl=KubectlTarget())


def _options(conn: Connection) -> Any:
    raise AssertionError("not reached")


def test_in_a_pod_the_commands_name_the_cluster_given_by_cluster_name(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(source, "connect", _in_a_pod)
    conn = source.LiveSource(None, None, 5.0, _options, "gpu-east").connection()
    assert kubectl(conn.kubectl, "cordon", "n1") == [
        "kubectl", "--context", "gpu-east", "cordon", "n1"]


def test_in_a_pod_without_a_cluster_name_no_context_is_made_up(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(source, "connect", _in_a_pod)
    conn = source.LiveSource(None, None, 5.0, _options).connection()
    assert kubectl(conn.kubectl, "cordon", "n1") == ["kubectl", "cordon", "n1"]


def test_in_a_pod_without_a_cluster_name_the_report_says_the_commands_name_none() -> None:
    from triage.safety.shell import unnamed_cluster

    said = unnamed_cluster(IN_CLUSTER, KubectlTarget())
    assert said is not None and "--cluster-name" in said
    assert unnamed_cluster(IN_CLUSTER, KubectlTarget("gpu-east")) is None
    assert unnamed_cluster("gpu-east", KubectlTarget("gpu-east")) is None
