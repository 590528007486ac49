"""The least-privilege RBAC manifests in deploy/ are exactly what a scan needs.

The test API server enforces the manifest's rules (403 for anything else,
as a real API server does) and the scan must still get every read: the same
report as with no access control at all. With the namespaced Role, nodes and
the events about them are the only things refused, and step 9 says unknown
naming the 403. The layers beside the pods (EndpointSlices, ScaledObjects,
InferencePools, LLMInferenceServices) are granted list, read only where the
API serves them, and a 403 on one leaves the rules that need it unknown.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli.test_bad_input import step
from tests.cli.test_unread_input import config_file_fixture
from tests.conftest import FIXTURES, ROOT, replay, run_cli
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
    # The layers beside the pods, each from the fixture that has it (both InferencePool API
    # groups), and a GPU health monitor's event about the pods' node.
    for plural, source in BESIDE.items():
        save_list(root, plural, load_list(FIXTURES / source, plural))
    # The InferencePools' endpoint pickers: their Services, pods and logs (pods/log, granted).
    pools = FIXTURES / BESIDE["inferencepools"]
    for plural in ("services", "pods"):
        ours, theirs = load_list(root, plural), load_list(pools, plural)
        ours["items"] += [o for o in theirs["items"]
                          if o["metadata"]["name"].startswith(PICKERS)]
        save_list(root, plural, ours)
    # ... and the Node they run on: the API server reads a pod's log through its node.
    picker_nodes = {p["spec"]["nodeName"] for p in load_list(root, "pods")["items"]
                    if p["metadata"]["name"].startswith(PICKERS)}
    nodes = load_list(root, "nodes")
    nodes["items"] += [n for n in load_list(pools, "nodes")["items"]
                       if n["metadata"]["name"] in picker_nodes]
    save_list(root, "nodes", nodes)
    for p in (pools / "logs" / "llm").glob("*-epp-*/*.log"):
        dest = root / "logs" / "llm" / p.parent.name / p.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(p.read_bytes())
    events = load_list(root, "events")
    node = load_list(root, "pods")["items"][0]["spec"]["nodeName"]
    events["items"].append({
        "metadata": {"name": f"{node}.18b4c2d9e0f1a2b3", "namespace": "default"},
        "involvedObject": {"kind": "Node", "name": node, "apiVersion": "v1"},
        "reason": "NvidiaXID13Warning", "type": "Warning", "count": 1,
        "message": "detected unknown XID-13 on the instance, review kernel logs for additional "
                   "information.", "source": {"component": "eks-node-monitoring-agent"},
        "firstTimestamp": "2026-11-28T02:44:18Z", "lastTimestamp": "2026-11-28T02:44:18Z"})
    save_list(root, "events", events)
    return root


# kind -> a fixture that has it
BESIDE = {"endpointslices": "probe-fails-under-load", "scaledobjects": "autoscaler-blind-keda",
          "inferencepools": "inference-pool-empty",
          "llminferenceservices": "llmisvc-storage-initializer"}
# The endpoint pickers of inference-pool-empty's two pools (Services and pods).
PICKERS = ("qwen-pool-epp", "llama-pool-epp")
# What the roles grant of the layers beside the pods: list, nothing else.
BESIDE_GRANTS = {("discovery.k8s.io", "endpointslices", "list"),
                 ("keda.sh", "scaledobjects", "list"),
                 ("inference.networking.k8s.io", "inferencepools", "list"),
                 ("inference.networking.x-k8s.io", "inferencepools", "list"),
                 ("serving.kserve.io", "llminferenceservices", "list")}


@pytest.mark.parametrize("extra", [[], ["-A"]])
def test_cluster_role_allows_every_read(tmp_path: Path, extra: list[str]) -> None:
    root = every_read_fixture(tmp_path)
    with replay(root, tmp_path) as (_server, kc):
        open_run = run_cli("scan", "--kubeconfig", str(kc), "-o", "json", *extra, env=PINNED)
    with replay(root, tmp_path, rbac=RBAC.from_files(CLUSTER)) as (server, kc):
        rbac_run = run_cli("scan", "--kubeconfig", str(kc), "-o", "json", *extra, env=PINNED)
        kinds = {r.split("?")[0].split("/")[-1] for r in server.requests}
        requests = list(server.requests)
        denied = list(server.denied)
    assert denied == []
    assert rbac_run.code == open_run.code, rbac_run.stderr
    assert rbac_run.json() == open_run.json()
    assert rbac_run.json()["unreadable"] == []
    # The scan did exercise every kind of read the manifest grants, the layers beside the
    # pods from both InferencePool groups and the nodes' events among them.
    assert {"log", "metrics", "pods", "events", "inferenceservices", *BESIDE} <= kinds
    listed = {r.split("?")[0] for r in requests}
    assert any("/apis/inference.networking.x-k8s.io/v1alpha2/" in r for r in listed)
    assert any("/apis/inference.networking.k8s.io/v1/" in r for r in listed)
    assert any(r.startswith("GET /api/v1/events?") and "involvedObject.kind%3DNode" in r
               for r in requests), requests
    # The pickers' pods, listed by their Service's selector, and their logs.
    assert any("/namespaces/llm/pods?" in r and "inferencepool%3Dqwen-pool-epp" in r
               for r in requests), requests
    assert any("/pods/qwen-pool-epp-5c8f7d9b6d-x4k9m/log" in r for r in requests), requests


def test_namespaced_role_refuses_only_nodes_and_their_events(tmp_path: Path) -> None:
    root = every_read_fixture(tmp_path)
    with replay(root, tmp_path, rbac=RBAC.from_files(NAMESPACED)) as (server, kc):
        run = run_cli("scan", "--kubeconfig", str(kc), "-n", "llm", "-o", "json")
        denied = list(server.denied)
    assert denied and all(d.startswith(("get /nodes", "list /nodes", "list /events in (cluster)"))
                          for d in denied), denied
    report = run.json()
    assert {u["what"].split()[0] for u in report["unreadable"]} == {"node", "events"}
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


def _grants(doc: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {(g, r, v) for rule in doc.get("rules") or [] for g in rule["apiGroups"]
            for r in rule["resources"] for v in rule["verbs"]}


@pytest.mark.parametrize("path", [CLUSTER, NAMESPACED, ROOT / "deploy" / "watch" / "rbac.yaml"])
def test_the_roles_grant_exactly_list_on_the_layers_beside_the_pods(path: Path) -> None:
    (role,) = [d for d in yaml.safe_load_all(path.read_text()) if d and d["kind"] in
               ("ClusterRole", "Role")]
    beside = {g for g in _grants(role) if g[1] in BESIDE}
    assert beside == BESIDE_GRANTS


def test_kinds_the_cluster_does_not_serve_are_never_requested(tmp_path: Path) -> None:
    """Discovery, as kubectl: no KEDA, no Inference Extension, no LLMInferenceService here,
    so their lists are not asked for (and none of them is a failed read)."""
    with replay(FIXTURES / "cuda-oom", tmp_path) as (server, kc):
        run = run_cli("scan", "--kubeconfig", str(kc), "-o", "json")
        requests = list(server.requests)
    assert any(r.startswith("GET /apis?") or r == "GET /apis" for r in requests), requests
    for plural in ("scaledobjects", "inferencepools", "llminferenceservices"):
        assert not any(f"/{plural}" in r for r in requests), (plural, requests)
    assert run.json()["unreadable"] == []


def test_a_refused_layer_leaves_its_rules_unknown_never_a_pass(tmp_path: Path) -> None:
    """The ScaledObjects refused (403): the autoscaler's rule cannot be evaluated, and step 7
    says so, naming the 403; with them read it reports the blind autoscaler."""
    root = copy_fixture(tmp_path / "fx", "autoscaler-blind-keda")
    # No queue in the stats lines or /metrics: only the autoscaler speaks at step 7.
    pod = "vllm-qwen-6c9f7d8b5d-m4n8q"
    log = root / "logs" / "llm" / pod / "vllm.log"
    log.write_text("".join(line for line in log.read_text().splitlines(keepends=True)
                           if "Engine 000:" not in line))
    page = root / "metrics" / "llm" / f"{pod}.txt"
    page.write_text(page.read_text().replace("} 14.0\n", "} 0.0\n"))
    docs = [d for d in yaml.safe_load_all(CLUSTER.read_text()) if d]
    role = next(d for d in docs if d["kind"] == "ClusterRole")
    with replay(root, tmp_path, rbac=RBAC([role])) as (_server, kc):
        allowed = run_cli("scan", "--kubeconfig", str(kc), "-o", "json").json()
    role["rules"] = [r for r in role["rules"] if "scaledobjects" not in r["resources"]]
    (tmp_path / "refused").mkdir()
    with replay(root, tmp_path / "refused", rbac=RBAC([role])) as (server, kc):
        refused = run_cli("scan", "--kubeconfig", str(kc), "-o", "json").json()
        denied = list(server.denied)
    found = {p["name"]: [f["id"] for f in p["findings"]] for p in allowed["pods"]}
    assert found[pod] == ["autoscaler-blind"] and step(allowed, 7)["verdict"] == "warn"
    assert denied and all("scaledobjects" in d for d in denied)
    assert all(f["id"] != "autoscaler-blind" for p in refused["pods"] for f in p["findings"])
    s7 = step(refused, 7)
    assert s7["verdict"] == "unknown", s7
    assert any("could not evaluate autoscaler-blind" in e and "forbidden" in e
               for e in s7["evidence"]), s7


def test_discovery_that_fails_leaves_the_layers_unknown_never_absent(tmp_path: Path) -> None:
    """GET /apis answers 503: whether the cluster serves InferencePools cannot be told, so
    they are an unread kind (named), not "none installed", and the pool's rule is unknown."""
    root = copy_fixture(tmp_path / "fx", "inference-pool-empty")
    incident = yaml.safe_load((root / "incident.yaml").read_text())
    incident["faults"] = {"unavailable": ["discovery"]}
    (root / "incident.yaml").write_text(yaml.safe_dump(incident, sort_keys=False))
    with replay(root, tmp_path) as (server, kc):
        report = run_cli("scan", "--kubeconfig", str(kc), "-o", "json").json()
        requests = list(server.requests)
    assert not any("/inferencepools" in r for r in requests)
    unread = {u["what"] for u in report["unreadable"]}
    assert "inferencepools (discovery: /apis)" in unread, unread
    assert all(f["id"] != "inference-pool-empty" for p in report["pods"] for f in p["findings"])
    s8 = step(report, 8)
    assert s8["verdict"] == "unknown", s8
    assert any("could not evaluate inference-pool-empty" in e and "503" in e
               for e in s8["evidence"]), s8
