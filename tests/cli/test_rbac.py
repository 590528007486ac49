"""The least-privilege RBAC manifests in deploy/ are exactly what a scan needs.

The test API server enforces the manifest's rules (403 for anything else,
as a real API server does) and the scan must still get every read: the same
report as with no access control at all. With the namespaced Role, nodes are
the only thing refused, and step 9 says unknown naming the 403.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.cli.test_bad_input import step
from tests.cli.test_unread_input import config_file_fixture
from tests.conftest import ROOT, replay, run_cli
from tests.support.fixturekit import copy_fixture, load_list, save_list
from tests.support.kubeapi import RBAC

CLUSTER = ROOT / "deploy" / "rbac-clusterrole.yaml"
NAMESPACED = ROOT / "deploy" / "rbac-namespaced.yaml"
PINNED = {"SOURCE_DATE_EPOCH": "1795834800"}


def every_read_fixture(tmp_path: Path) -> Path:
    """cuda-oom with a --config ConfigMap, plus a KServe fixture's objects: every kind
    the tool reads is there to be read (pods, logs, metrics, ConfigMaps, nodes, ...)."""
    root = config_file_fixture(tmp_path / "fx")
    kserve = copy_fixture(tmp_path / "kserve", "kserve-target-too-high")
    for plural in ("pods", "inferenceservices", "horizontalpodautoscalers",
                   "persistentvolumeclaims", "services"):
        ours, theirs = load_list(root, plural), load_list(kserve, plural)
        ours["items"] += theirs["items"]
        save_list(root, plural, ours)
    for sub in ("logs", "metrics"):
        for p in (kserve / sub).rglob("*"):
            if p.is_file():
                dest = root / sub / p.relative_to(kserve / sub)
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(p.read_bytes())
    return root


@pytest.mark.parametrize("extra", [[], ["-A"]])
def test_cluster_role_allows_every_read(tmp_path: Path, extra: list[str]) -> None:
    root = every_read_fixture(tmp_path)
    with replay(root, tmp_path) as (_server, kc):
        open_run = run_cli("scan", "--kubeconfig", str(kc), "-o", "json", *extra, env=PINNED)
    with replay(root, tmp_path, rbac=RBAC.from_files(CLUSTER)) as (server, kc):
        rbac_run = run_cli("scan", "--kubeconfig", str(kc), "-o", "json", *extra, env=PINNED)
        kinds = {r.split("?")[0].split("/")[-1] for r in server.requests}
        denied = list(server.denied)
    assert denied == []
    assert rbac_run.code == open_run.code, rbac_run.stderr
    assert rbac_run.json() == open_run.json()
    assert rbac_run.json()["unreadable"] == []
    # The scan did exercise every kind of read the manifest grants.
    assert {"log", "metrics", "pods", "events", "inferenceservices"} <= kinds


def test_namespaced_role_refuses_only_nodes(tmp_path: Path) -> None:
    root = every_read_fixture(tmp_path)
    with replay(root, tmp_path, rbac=RBAC.from_files(NAMESPACED)) as (server, kc):
        run = run_cli("scan", "--kubeconfig", str(kc), "-n", "llm", "-o", "json")
        denied = list(server.denied)
    assert denied and all(d.startswith(("get /nodes", "list /nodes")) for d in denied), denied
    report = run.json()
    assert {u["what"].split()[0] for u in report["unreadable"]} == {"node"}
    s9 = step(report, 9)
    assert s9["verdict"] == "unknown"
    assert any("nodes is forbidden" in e for e in s9["evidence"]), s9


def test_enforcement_is_real(tmp_path: Path) -> None:
    """Without pods/log in the rules, the logs are refused: the server does check."""
    docs = [d for d in yaml.safe_load_all(CLUSTER.read_text()) if d]
    role = next(d for d in docs if d["kind"] == "ClusterRole")
    for rule in role["rules"]:
        rule["resources"] = [r for r in rule["resources"] if r != "pods/log"]
    root = every_read_fixture(tmp_path)
    with replay(root, tmp_path, rbac=RBAC([role])) as (server, kc):
        run = run_cli("scan", "--kubeconfig", str(kc), "-o", "json")
        denied = list(server.denied)
    assert denied and all("pods/log" in d for d in denied)
    assert step(run.json(), 2)["verdict"] == "unknown"
