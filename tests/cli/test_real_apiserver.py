"""The collectors against a real Kubernetes API server (tests/support/realapi.py):
kube-apiserver v1.20.2 with etcd, every recorded incident loaded through the API, its
logs from a kubelet endpoint of the tests' own, its pods' /metrics through the API
server's pod proxy, the tool reading as the shipped least-privilege role allows.

A real server sets creationTimestamp, uid and resourceVersion itself and keeps only the
fields its version knows: the verdicts are compared, not the recorded times. Scenarios
that need fields newer than v1.20 (a native sidecar's restartPolicy) stay on the
replaying server (tests/cli/test_container_kinds.py). Where the replaying server and the
real one answered differently, the replaying one was made to agree: the last tests here
ask both the same and compare.

Skipped where kube-apiserver, etcd or root are missing, except in CI (.ci/run builds and
installs them), where that fails.
"""

from __future__ import annotations

import copy
import re
import shutil
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.cli.test_scan_fixtures import assert_triage_as_expected, collection_time
from tests.conftest import FIXTURES, fixture_names, replay, run_cli
from tests.support.fixturekit import (
    CUDA_OOM_POD,
    METRICS_TEXT,
    RUNNING_LOG,
    add_pod,
    copy_fixture,
    load_list,
    running_pod,
    save_list,
    template_pod,
)
from tests.support.kubeapi import TOKEN
from tests.support.realapi import READER_TOKEN, LoadError, RealCluster

# One real API server for the run: these tests go to one worker (scripts/test runs xdist
# with --dist loadgroup), alongside the rest, instead of a server started on each.
pytestmark = pytest.mark.xdist_group("real-apiserver")

# Fields v1.20 drops that no verdict reads: a Service's dual-stack and traffic policy
# fields (1.20 serves them only behind a feature gate; internalTrafficPolicy is 1.21's).
IGNORED_DROPS = {".spec.ipFamilies", ".spec.ipFamilyPolicy", ".spec.internalTrafficPolicy"}
# Recorded incidents whose triage needs what a v1.20 server does not keep, replayed by
# the replaying server only: fixture -> why. (A fixture that comes to need a newer field
# fails test_scan_against_a_real_api_server, naming the field.)
KEPT_ON_THE_REPLAYING_SERVER: dict[str, str] = {
    "inference-pool-empty": "its endpoint pickers' gRPC probes (Kubernetes 1.24+): v1.20 "
                            "drops the grpc handler and refuses the pods",
}


def _incident(name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((FIXTURES / name / "incident.yaml").read_text())
    return data


@pytest.mark.parametrize("name", [n for n in fixture_names()
                                  if n not in KEPT_ON_THE_REPLAYING_SERVER])
def test_scan_against_a_real_api_server(name: str, real_apiserver: RealCluster,
                                        tmp_path: Path, backfilled: Any) -> None:
    """The fixture's expected triage, from a real API server; the tool only read, and
    every read was allowed by deploy/rbac-clusterrole.yaml as it is shipped."""
    incident = _incident(name)
    loaded = real_apiserver.load(FIXTURES / name)
    dropped = {obj: [f for f in fields if f not in IGNORED_DROPS]
               for obj, fields in loaded.dropped.items()}
    dropped = {obj: fields for obj, fields in dropped.items() if fields}
    history = (incident.get("prometheus") or {}).get("history")
    blocks = backfilled(history) if history else None
    with _prometheus_behind_service(real_apiserver, name, incident, blocks, tmp_path):
        kubeconfig = real_apiserver.kubeconfig(tmp_path / "kubeconfig",
                                               incident.get("namespace") or "default")
        mark = real_apiserver.audit_mark()
        run = run_cli("scan", "--kubeconfig", str(kubeconfig), "-o", "json",
                      *incident.get("scan_args", []), env=collection_time(incident))
    try:
        assert_triage_as_expected(run, incident["expected"])
    except AssertionError as exc:
        if dropped:
            raise AssertionError(
                f"{exc}\nkube-apiserver {real_apiserver.version} dropped fields of this "
                f"fixture: {dropped}; if its triage needs them, keep it on the replaying "
                "server (KEPT_ON_THE_REPLAYING_SERVER)") from None
        raise
    requests = real_apiserver.reader_requests(mark)
    assert requests and {verb for verb, _uri, _code in requests} <= {"get", "list"}, requests
    assert not [r for r in requests if r[2] == 403], requests


def test_kept_fixtures_still_need_a_newer_server(real_apiserver: RealCluster) -> None:
    """A fixture kept on the replaying server is kept for a field v1.20 drops."""
    for name in sorted(KEPT_ON_THE_REPLAYING_SERVER):
        try:
            loaded = real_apiserver.load(FIXTURES / name)
        except LoadError as exc:  # refused outright for a field v1.20 does not know
            assert " 422 " in str(exc) and "is invalid" in str(exc), (name, exc)
            continue
        assert any(f not in IGNORED_DROPS for fields in loaded.dropped.values()
                   for f in fields), name


@contextmanager
def _prometheus_behind_service(cluster: RealCluster, name: str, incident: dict[str, Any],
                               blocks: Path | None, tmp_path: Path) -> Iterator[None]:
    """A real Prometheus on the fixture's recorded history, in the pod network, behind the
    fixture's Prometheus Service (its Endpoints point at it)."""
    if not blocks:
        yield
        return
    from tests.support.promserver import free_port, prometheus

    data = tmp_path / "prometheus" / "data"
    shutil.copytree(blocks, data)
    ns, service_name = incident["prometheus"]["service"].split("/", 1)
    service = next(s for s in load_list(FIXTURES / name, "services")["items"]
                   if s["metadata"]["namespace"] == ns and s["metadata"]["name"] == service_name)
    port_name = service["spec"]["ports"][0].get("name", "")
    ip, port = cluster.service_address(), free_port()
    with prometheus(data, port=port, netns=cluster.net.name, host=ip):
        cluster.route_service(ns, service_name, port_name, ip, port)
        yield


# ---------------------------------------------------------------------------------------
# HorizontalPodAutoscalers through autoscaling/v1


@pytest.mark.parametrize("name", [n for n in fixture_names()
                                  if load_list(FIXTURES / n, "horizontalpodautoscalers")["items"]])
def test_hpas_read_through_v1_are_what_v2_says(name: str, real_apiserver: RealCluster) -> None:
    """A v1.20 server serves no autoscaling/v2: the tool reads HPAs through v1, discovery's
    preferred version, and turns them back into v2's shape. That shape is what the server
    itself answers in v2beta2 (v2's, before it was named v2), for every recorded HPA."""
    from triage.kube.autoscaling import from_v1

    real_apiserver.load(FIXTURES / name)
    admin = real_apiserver.admin
    assert admin is not None
    group = admin.get("/apis/autoscaling").json()
    assert "v2" not in {v["version"] for v in group["versions"]}
    assert group["preferredVersion"]["version"] == "v1"
    ns = _incident(name).get("namespace") or "default"
    v1 = admin.get(f"/apis/autoscaling/v1/namespaces/{ns}/horizontalpodautoscalers").json()
    v2 = admin.get(f"/apis/autoscaling/v2beta2/namespaces/{ns}/horizontalpodautoscalers").json()
    assert v1["items"] and len(v1["items"]) == len(v2["items"])
    for old, new in zip(v1["items"], v2["items"], strict=True):
        got = from_v1(old)
        assert got["spec"] == new["spec"], (old, new)
        assert got.get("status", {}) == new.get("status", {}), (old, new)
        assert got["metadata"].get("annotations") == new["metadata"].get("annotations")


# ---------------------------------------------------------------------------------------
# The replaying server answers as the real one does


HEALTHY = "vllm-llama-7d9f8b6c5d-m2x4q"
NODELESS = "vllm-llama-7d9f8b6c5d-gone1"  # its Node object was deleted
NS = "llm"


def _variant(root: Path) -> Path:
    """cuda-oom, a healthy vLLM pod serving /metrics, and a pod on a Node that is gone."""
    copy_fixture(root)
    add_pod(root, running_pod(template_pod(root), HEALTHY, labels={"app": "vllm-llama"}),
            log=RUNNING_LOG, metrics=METRICS_TEXT)
    add_pod(root, running_pod(template_pod(root), NODELESS, labels={"app": "vllm-llama"},
                              node="gpu-node-deleted-7"), log=RUNNING_LOG)
    sets = load_list(root, "statefulsets")
    redis = next(p for p in load_list(root, "pods")["items"]
                 if p["metadata"]["name"] == "redis-cache-0")
    sets["items"].append({
        "metadata": {"name": "redis-cache", "namespace": NS, "uid": "uid-sts-redis"},
        "spec": {"replicas": 1, "serviceName": "redis-cache",
                 "selector": {"matchLabels": {"app": "redis"}},
                 "template": {"metadata": {"labels": {"app": "redis"}},
                              "spec": copy.deepcopy(redis["spec"])}},
        "status": {"replicas": 1, "readyReplicas": 1, "currentReplicas": 1}})
    save_list(root, "statefulsets", sets)
    return root


@dataclass
class Both:
    fake: httpx.Client
    real: httpx.Client
    cluster: RealCluster
    root: Path
    fake_kubeconfig: Path

    def __iter__(self) -> Iterator[Any]:
        # Another test on this worker may have loaded another fixture since.
        self.cluster.ensure_loaded(self.root)
        return iter((self.fake, self.real, self.cluster))


@pytest.fixture(scope="module")
def both(real_apiserver: RealCluster, tmp_path_factory: pytest.TempPathFactory
         ) -> Iterator[Both]:
    """The same fixture served by the replaying server and by the real one; a client of
    each, reading as the tool does."""
    tmp = tmp_path_factory.mktemp("both")
    root = _variant(tmp / "fixture")
    real_apiserver.load(root)
    with replay(root, tmp) as (server, kubeconfig):
        ca = ssl.create_default_context(cafile=str(server.tls.ca_file))
        with httpx.Client(base_url=server.url, verify=ca, timeout=30,
                          headers={"Authorization": f"Bearer {TOKEN}"}) as fake, \
                httpx.Client(base_url=real_apiserver.url, verify=ca, timeout=30,
                             headers={"Authorization": f"Bearer {READER_TOKEN}"}) as real:
            yield Both(fake, real, real_apiserver, root, kubeconfig)


def _status(resp: httpx.Response) -> dict[str, Any]:
    body = resp.json()
    # The pods' addresses differ (the real server's are in its pod network).
    message = re.sub(r"dial tcp [\d.]+:", "dial tcp IP:", str(body.get("message")))
    return {"code": resp.status_code, **{k: body.get(k) for k in ("kind", "status", "reason",
                                                                  "details", "code")},
            "message": message}


@pytest.mark.parametrize("target", [f"{CUDA_OOM_POD}:8000", f"{HEALTHY}:9999"])
def test_pod_proxy_to_a_dead_port_answers_as_the_real_server(
        both: Both, target: str) -> None:
    """A port nobody listens on (a crash-looping pod's, a port the pod does not serve):
    500 and a Status without reason, from both."""
    fake, real, _cluster = both
    path = f"/api/v1/namespaces/{NS}/pods/{target}/proxy/metrics"
    want = _status(real.get(path))
    assert want["code"] == 500 and want["reason"] is None, want
    assert "connect: connection refused" in want["message"]
    assert _status(fake.get(path)) == want


def test_pod_proxy_to_a_live_port_answers_as_the_real_server(
        both: Both) -> None:
    fake, real, _cluster = both
    path = f"/api/v1/namespaces/{NS}/pods/{HEALTHY}:8000/proxy/metrics"
    got, want = fake.get(path), real.get(path)
    assert (got.status_code, got.content) == (want.status_code, want.content) == (
        200, METRICS_TEXT.encode())


def test_log_of_a_pod_whose_node_is_gone_answers_as_the_real_server(
        both: Both) -> None:
    fake, real, _cluster = both
    path = f"/api/v1/namespaces/{NS}/pods/{NODELESS}/log"
    want = _status(real.get(path, params={"container": "vllm"}))
    assert want["code"] == 404 and want["reason"] == "NotFound", want
    assert want["message"] == 'pods "gpu-node-deleted-7" not found'
    assert _status(fake.get(path, params={"container": "vllm"})) == want


@pytest.mark.parametrize("query", [
    {"container": "vllm", "previous": "true"},
    {"container": "vllm", "previous": "true", "tailLines": "3", "timestamps": "true"},
    {"container": "vllm", "limitBytes": "40"},
])
def test_logs_answer_as_the_real_server(both: Both,
                                        query: dict[str, str]) -> None:
    fake, real, _cluster = both
    path = f"/api/v1/namespaces/{NS}/pods/{CUDA_OOM_POD}/log"
    got, want = fake.get(path, params=query), real.get(path, params=query)
    assert (got.status_code, got.content) == (want.status_code, want.content)
    assert want.status_code == 200 and want.content


def test_log_errors_answer_as_the_real_server(
        both: Both) -> None:
    fake, real, _cluster = both
    for pod, query in ((HEALTHY, {"container": "vllm", "previous": "true"}),
                       (HEALTHY, {"container": "nope"})):
        path = f"/api/v1/namespaces/{NS}/pods/{pod}/log"
        want = _status(real.get(path, params=query))
        assert want["code"] == 400, want
        assert _status(fake.get(path, params=query)) == want


@pytest.mark.parametrize("plural", ["deployments", "replicasets", "statefulsets"])
def test_workload_tables_answer_as_the_real_server(
        both: Both, plural: str) -> None:
    """kubectl get deploy / rs / sts: the columns the API server's printers send, and their
    cells (but Age: the real server's objects were created just now)."""
    fake, real, _cluster = both
    accept = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"}
    path = f"/apis/apps/v1/namespaces/{NS}/{plural}"
    got, want = fake.get(path, headers=accept).json(), real.get(path, headers=accept).json()

    def columns(table: dict[str, Any]) -> list[tuple[str, str, int]]:
        return [(c["name"], c["type"], c.get("priority", 0)) for c in table["columnDefinitions"]]

    def cells(table: dict[str, Any]) -> list[list[Any]]:
        age = [c["name"] for c in table["columnDefinitions"]].index("Age")
        return [[c for i, c in enumerate(r["cells"]) if i != age] for r in table["rows"]]

    assert columns(got) == columns(want)
    assert want["rows"] and cells(got) == cells(want)


def test_scan_reads_both_servers_alike(both: Both, tmp_path: Path) -> None:
    """The tool's report from the replaying server is the real one's: the log of a pod whose
    Node is gone (404, 'pods "NODE" not found') is unread and says why, naming the node;
    the /metrics of a Running pod that serves none (500 from the proxy) is unread and says
    nothing answers on the port; the verdicts are the same."""
    _fake, _real, cluster = both
    runs = []
    for kubeconfig in (both.fake_kubeconfig, cluster.kubeconfig(tmp_path / "kubeconfig", NS)):
        run = run_cli("scan", "--kubeconfig", str(kubeconfig), "-o", "json")
        assert run.code in (0, 1), run.stderr
        report = run.json()
        runs.append((
            {(u["what"], re.sub(r"dial tcp [\d.]+:", "dial tcp IP:", u["reason"]))
             for u in report["unreadable"]},
            [(s["step"], s["verdict"]) for s in report["checklist"]],
            {p["name"]: sorted(f["id"] for f in p["findings"]) for p in report["pods"]}))
    assert runs[0] == runs[1]
    reasons = dict(runs[1][0])
    said = reasons[f"log of {NS}/{NODELESS} (vllm)"]
    assert said.startswith("its node gpu-node-deleted-7 is not in the cluster any more"), said
    assert 'pods "gpu-node-deleted-7" not found' in said
    dead = reasons[f"metrics of {NS}/{NODELESS} (port 8000)"]
    assert dead.startswith("nothing answers on port 8000 of the pod (500 "), dead
