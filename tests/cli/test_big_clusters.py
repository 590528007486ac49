"""``scan -A`` on a big cluster: lists are paged as kubectl pages them, and memory holds
the triaged pods, not the cluster.

The replay server pages as a real API server does (limit, continue,
remainingItemCount, 410 Expired for a compacted continue token).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from tests.conftest import replay, run_cli
from tests.support.fixturekit import CUDA_OOM_POD, copy_fixture, load_list, template_pod
from triage.collect.live import PAGE_SIZE, LiveCollector, Options, connect

OTHER_PODS = 1_200  # more than two pages of 500


def _other_pod(template: dict[str, Any], i: int) -> dict[str, Any]:
    """A pod that is not vLLM (a web front end), with a restart and events of its own."""
    pod = copy.deepcopy(template)
    md = pod["metadata"]
    md.update(name=f"web-{i:05d}", namespace=f"team-{i % 7}", uid=f"uid-web-{i:05d}",
              labels={"app": "web"}, ownerReferences=[])
    container = pod["spec"]["containers"][0]
    container.update(name="web", image="nginx:1.27", command=["nginx"], args=[])
    pod["status"]["containerStatuses"] = [{
        "name": "web", "image": "nginx:1.27", "imageID": "", "containerID": f"containerd://{i}",
        "restartCount": 1, "started": True, "ready": True,
        "state": {"running": {"startedAt": "2026-11-28T02:40:00Z"}}, "lastState": {}}]
    return pod


def big_cluster(root: Path, **incident: Any) -> Path:
    copy_fixture(root, **incident)
    template = template_pod(root)
    pods = load_list(root, "pods")
    pods["items"] += [_other_pod(template, i) for i in range(OTHER_PODS)]
    (root / "objects" / "pods.yaml").unlink()
    (root / "objects" / "pods.json").write_text(json.dumps(pods))
    events = load_list(root, "events")
    for i in range(OTHER_PODS):
        events["items"].append({
            "metadata": {"name": f"web-{i:05d}.1", "namespace": f"team-{i % 7}",
                         "uid": f"ev-web-{i}", "resourceVersion": "1",
                         "creationTimestamp": "2026-11-28T03:00:00Z"},
            "involvedObject": {"kind": "Pod", "namespace": f"team-{i % 7}",
                               "name": f"web-{i:05d}", "uid": f"uid-web-{i:05d}",
                               "apiVersion": "v1"},
            "reason": "BackOff", "message": "Back-off restarting failed container web",
            "type": "Warning", "count": 3, "firstTimestamp": "2026-11-28T03:00:00Z",
            "lastTimestamp": "2026-11-28T03:05:00Z", "source": {"component": "kubelet"}})
    (root / "objects" / "events.yaml").unlink()
    (root / "objects" / "events.json").write_text(json.dumps(events))
    return root


def _lists(log: Path, plural: str) -> list[str]:
    return [line for line in log.read_text().splitlines()
            if line.startswith("GET ") and f"/{plural}?" in line]


def test_why_scan_all_namespaces_pages_a_big_cluster(tmp_path: Path) -> None:
    """Before: one GET per list with no limit; the 128 MiB cap of one answer refused a
    20,000-pod cluster with exit 3. Now every list is read in pages of 500."""
    root = big_cluster(tmp_path / "fx")
    with replay(root, tmp_path) as (_server, kc):
        run = run_cli("scan", "--kubeconfig", str(kc), "-A", "-o", "json")
    assert run.code == 1, run.stderr
    report = run.json()
    assert [p["name"] for p in report["pods"]] == [CUDA_OOM_POD]
    pod_lists = _lists(tmp_path / "requests.log", "pods")
    assert len(pod_lists) == 3  # 1,201 pods: 500 + 500 + 201
    assert all(f"limit={PAGE_SIZE}" in line for line in pod_lists)
    assert sum("continue=" in line for line in pod_lists) == 2
    assert all(f"limit={PAGE_SIZE}" in line for line in _lists(tmp_path / "requests.log",
                                                              "events"))


def test_why_scan_all_namespaces_restarts_a_list_once_on_410_expired(tmp_path: Path) -> None:
    """A continue token compacted away (410 Expired) starts the list over, once."""
    root = big_cluster(tmp_path / "fx", faults={"expire_continue": 1})
    with replay(root, tmp_path) as (_server, kc):
        run = run_cli("scan", "--kubeconfig", str(kc), "-A", "-o", "json")
    assert run.code == 1, run.stderr
    assert [p["name"] for p in run.json()["pods"]] == [CUDA_OOM_POD]
    first_pages = [line for line in _lists(tmp_path / "requests.log", "pods")
                   if "continue=" not in line]
    assert len(first_pages) == 2  # the list, and the list started over


def test_why_scan_all_namespaces_says_when_paging_expires_twice(tmp_path: Path) -> None:
    root = big_cluster(tmp_path / "fx", faults={"expire_continue": 5})
    with replay(root, tmp_path) as (_server, kc):
        run = run_cli("scan", "--kubeconfig", str(kc), "-A", "-o", "json")
    assert run.code == 3
    assert "Traceback" not in run.stderr
    assert "410 Expired" in run.stderr and "again" in run.stderr, run.stderr


def test_why_scan_all_namespaces_keeps_only_the_triaged_pods(tmp_path: Path) -> None:
    """Memory follows the pods analysed: pods not triaged, and events about them, are
    dropped as the pages arrive (before: the whole cluster's pods and events were held)."""
    root = big_cluster(tmp_path / "fx")
    with replay(root, tmp_path) as (_server, kc):
        conn = connect(str(kc), None, 10)
        collector = LiveCollector(conn, Options(namespace=None, all_namespaces=True,
                                                metrics=False))
        snap = collector.collect()
    assert [p["metadata"]["name"] for p in snap.objects["pods"]] == [CUDA_OOM_POD]
    about = {(e.get("involvedObject") or {}).get("name") for e in snap.objects["events"]}
    assert not any(str(name).startswith("web-") for name in about)
    assert CUDA_OOM_POD in about


def test_why_scan_all_namespaces_lists_the_events_of_triaged_namespaces_only(
        tmp_path: Path) -> None:
    """Before: -A listed every event of the cluster (here 1,200 about other pods, on a busy
    cluster its largest list) to keep a few; now the events of each namespace with a
    triaged pod, paged the same way, and the events about Nodes (where GPU health monitors
    write), selected by the API server with a field selector."""
    root = big_cluster(tmp_path / "fx")
    with replay(root, tmp_path) as (_server, kc):
        run = run_cli("scan", "--kubeconfig", str(kc), "-A", "-o", "json")
    assert run.code == 1, run.stderr
    events = _lists(tmp_path / "requests.log", "events")
    assert events and all(
        line.startswith("GET /api/v1/namespaces/llm/events?")
        or line.startswith("GET /api/v1/events?fieldSelector=involvedObject.kind%3DNode&")
        for line in events), events
    assert run.json()["unreadable"] == []
