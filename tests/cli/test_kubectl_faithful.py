"""The test API server is only worth trusting if the real kubectl believes it.

Every test runs the real ``kubectl`` against tests/support/kubeapi.py replaying
fixtures/cuda-oom (plus one healthy vLLM pod with a /metrics file, added in a
temporary copy) and checks that what kubectl prints is what a real cluster in
that state would print. Skipped only where kubectl is not installed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import FIXTURES, need, replay
from tests.support.fixturekit import (
    CUDA_OOM_POD,
    METRICS_TEXT,
    RUNNING_LOG,
    add_pod,
    copy_fixture,
    running_pod,
    template_pod,
)
from tests.support.kubeapi import KubeAPIServer, strip_kubelet_times

KUBECTL = shutil.which("kubectl")


@pytest.fixture(autouse=True)
def _kubectl() -> None:
    need("kubectl")  # skipped without it, except in CI, where it fails


NS = "llm"
HEALTHY = "vllm-llama-7d9f8b6c5d-m2x4q"
CRASHING = CUDA_OOM_POD


@dataclass
class Kubectl:
    server: KubeAPIServer
    kubeconfig: Path
    home: Path
    root: Path

    def __call__(self, *args: str, check: bool = True, timeout: float = 60) -> Any:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
        env["HOME"] = str(self.home)  # a fresh discovery cache
        proc = subprocess.run([str(KUBECTL), "--kubeconfig", str(self.kubeconfig), *args],
                              capture_output=True, env=env, timeout=timeout)
        if check:
            assert proc.returncode == 0, proc.stderr.decode(errors="replace")
        return proc

    def text(self, *args: str) -> str:
        out: bytes = self(*args).stdout
        return out.decode()


def build_fixture(root: Path) -> Path:
    """cuda-oom plus a healthy vLLM pod that serves /metrics and has never restarted."""
    copy_fixture(root)
    pod = running_pod(template_pod(root), HEALTHY, labels={"app": "vllm-llama"})
    add_pod(root, pod, log=RUNNING_LOG, metrics=METRICS_TEXT)
    return root


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    tmp = tmp_path_factory.mktemp("faithful")
    root = build_fixture(tmp / "fixture")
    with replay(root, tmp) as (server, kubeconfig):
        yield Kubectl(server, kubeconfig, tmp / "home", root)


def fixture_pods(root: Path) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = yaml.safe_load(
        (root / "objects" / "pods.yaml").read_text())["items"]
    return items


def table(text: str) -> list[dict[str, str]]:
    """Split kubectl's column output on the header's column starts."""
    lines = [line for line in text.splitlines() if line.strip()]
    header = lines[0]
    starts = [m.start() for m in re.finditer(r"\S+(?: \S+)*", header)]
    names = [header[s:e].strip() for s, e in zip(starts, [*starts[1:], None], strict=True)]
    return [{n: line[s:e].strip() for n, s, e in zip(names, starts, [*starts[1:], None],
                                                          strict=True)}
            for line in lines[1:]]


def test_get_pods_json_matches_fixture(kubectl: Kubectl) -> None:
    got = json.loads(kubectl.text("get", "pods", "-o", "json"))
    want = fixture_pods(kubectl.root)
    assert got["kind"] == "List"
    # A real API server lists in key order (namespace, name), not file order.
    assert [p["metadata"]["name"] for p in got["items"]] == sorted(
        p["metadata"]["name"] for p in want)
    by_name = {p["metadata"]["name"]: p for p in want}
    for item in got["items"]:
        # The list's items come without apiVersion/kind; kubectl puts them back.
        assert (item["apiVersion"], item["kind"]) == ("v1", "Pod")
        assert item["status"] == by_name[item["metadata"]["name"]]["status"]
        assert item["spec"]["containers"] == by_name[item["metadata"]["name"]]["spec"][
            "containers"]


def test_raw_list_items_lack_apiversion_and_kind(kubectl: Kubectl) -> None:
    raw = json.loads(kubectl.text("get", "--raw", f"/api/v1/namespaces/{NS}/pods"))
    assert (raw["apiVersion"], raw["kind"]) == ("v1", "PodList")
    assert raw["items"] and all("kind" not in i and "apiVersion" not in i for i in raw["items"])


def test_get_pods_table_shows_crashloop_and_restarts(kubectl: Kubectl) -> None:
    rows = {r["NAME"]: r for r in table(kubectl.text("get", "pods"))}
    assert rows[CRASHING]["STATUS"] == "CrashLoopBackOff"
    assert rows[CRASHING]["RESTARTS"] == "6"
    assert rows[CRASHING]["READY"] == "0/1"
    assert rows[HEALTHY]["STATUS"] == "Running"
    assert rows[HEALTHY]["READY"] == "1/1"
    assert rows["redis-cache-0"]["RESTARTS"] == "0"


def test_get_pods_wide_shows_ip_and_node(kubectl: Kubectl) -> None:
    rows = {r["NAME"]: r for r in table(kubectl.text("get", "pods", "-o", "wide"))}
    assert rows[CRASHING]["IP"] == "10.48.3.17"
    assert rows[CRASHING]["NODE"] == "gke-inference-l4-pool-6f1d2a9c-q8wz"


def test_describe_pod_shows_last_state_and_events(kubectl: Kubectl) -> None:
    out = kubectl.text("describe", "pod", CRASHING)
    assert re.search(r"State:\s+Waiting\n\s+Reason:\s+CrashLoopBackOff", out)
    assert re.search(r"Last State:\s+Terminated\n\s+Reason:\s+Error\n\s+Exit Code:\s+1", out)
    assert re.search(r"Restart Count:\s+6", out)
    events = out.split("\nEvents:", 1)[1]
    assert re.search(r"Warning\s+BackOff\s+.*kubelet\s+Back-off restarting failed container "
                     r"vllm in pod " + CRASHING, events)


# A fixture log holds the kubelet's time in front of each line, as `collect` reads it
# (timestamps=true); kubectl shows it only with --timestamps.
STAMPED = (FIXTURES / "cuda-oom" / "logs" / NS / CRASHING / "vllm.previous.log").read_bytes()
PRINTED = strip_kubelet_times(STAMPED)


def test_logs_previous_is_byte_for_byte(kubectl: Kubectl) -> None:
    assert kubectl("logs", CRASHING, "-c", "vllm", "--previous").stdout == PRINTED


def test_logs_timestamps_are_the_kubelets(kubectl: Kubectl) -> None:
    got = kubectl("logs", CRASHING, "-c", "vllm", "--previous", "--timestamps").stdout
    assert got == STAMPED
    assert re.match(rb"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z \(APIServer pid=1\)", got)
    # a log written without them gets one per line, like any kubelet's
    healthy = kubectl("logs", HEALTHY, "-c", "vllm", "--timestamps").stdout.splitlines()
    assert len(healthy) == len(RUNNING_LOG.splitlines())
    assert all(re.match(rb"^\d{4}-\d\d-\d\dT[\d:.]+Z ", line) for line in healthy), healthy[:2]


def test_logs_tail_and_limit_bytes(kubectl: Kubectl) -> None:
    tail = kubectl("logs", CRASHING, "-c", "vllm", "--previous", "--tail=3").stdout
    assert tail == b"".join(PRINTED.splitlines(keepends=True)[-3:])
    head = kubectl("logs", CRASHING, "-c", "vllm", "--previous", "--limit-bytes=40").stdout
    assert head == PRINTED[:40]
    stamped = kubectl("logs", CRASHING, "-c", "vllm", "--previous", "--timestamps",
                      "--tail=2", "--limit-bytes=60").stdout
    assert stamped == b"".join(STAMPED.splitlines(keepends=True)[-2:])[:60]


def test_logs_of_a_waiting_container_are_its_last_run(kubectl: Kubectl) -> None:
    """The kubelet serves a CrashLoopBackOff container's last run without --previous."""
    assert kubectl("logs", CRASHING, "-c", "vllm").stdout == PRINTED


def test_logs_previous_without_a_previous_run_fails_like_the_kubelet(kubectl: Kubectl) -> None:
    proc = kubectl("logs", HEALTHY, "-c", "vllm", "--previous", check=False)
    assert proc.returncode == 1
    assert (f'previous terminated container "vllm" in pod "{HEALTHY}" not found'
            in proc.stderr.decode())
    assert proc.stderr.decode().startswith("Error from server (BadRequest)")
    assert kubectl("logs", HEALTHY, "-c", "vllm").stdout == RUNNING_LOG.encode()


def test_get_events_field_selector(kubectl: Kubectl) -> None:
    got = json.loads(kubectl.text("get", "events", "-o", "json", "--field-selector",
                                  f"involvedObject.name={CRASHING}"))
    events = yaml.safe_load((FIXTURES / "cuda-oom" / "objects" / "events.yaml").read_text())
    want = sorted(e["metadata"]["name"] for e in events["items"]
                  if e["involvedObject"]["name"] == CRASHING)
    assert sorted(e["metadata"]["name"] for e in got["items"]) == want
    assert "BackOff" in {e["reason"] for e in got["items"]}
    rows = table(kubectl.text("get", "events", "--field-selector",
                              f"involvedObject.name={CRASHING},type=Warning"))
    assert rows and all(r["TYPE"] == "Warning" for r in rows)
    assert any(r["REASON"] == "BackOff" and r["OBJECT"] == f"pod/{CRASHING}" for r in rows)
    none = kubectl("get", "events", "--field-selector", "involvedObject.name=nope")
    assert none.stdout == b"" and b"No resources found" in none.stderr


def test_unsupported_field_selector_is_refused(kubectl: Kubectl) -> None:
    proc = kubectl("get", "pods", "--field-selector", "spec.containers=x", check=False)
    assert proc.returncode == 1
    assert "field label not supported: spec.containers" in proc.stderr.decode()


def test_metrics_through_the_pod_proxy(kubectl: Kubectl) -> None:
    out = kubectl("get", "--raw", f"/api/v1/namespaces/{NS}/pods/{HEALTHY}:8000/proxy/metrics")
    assert out.stdout == METRICS_TEXT.encode()
    # Nothing listens on another port, and a crashing pod answers on none.
    for target in (f"{HEALTHY}:9999", f"{CRASHING}:8000"):
        proc = kubectl("get", "--raw", f"/api/v1/namespaces/{NS}/pods/{target}/proxy/metrics",
                       check=False)
        assert proc.returncode == 1
        assert "connect: connection refused" in proc.stderr.decode()


def test_label_selection(kubectl: Kubectl) -> None:
    def names(*selector: str) -> list[str]:
        return kubectl.text("get", "pods", "-o", "name", *selector).split()

    assert names("-l", "app=vllm-qwen") == [f"pod/{CRASHING}"]
    assert names("-l", "app in (vllm-qwen,vllm-llama)") == [f"pod/{HEALTHY}", f"pod/{CRASHING}"]
    assert names("-l", "app notin (redis),app") == [f"pod/{HEALTHY}", f"pod/{CRASHING}"]
    assert names("-l", "app!=redis,pod-template-hash") == [f"pod/{CRASHING}"]
    assert names("-l", "!pod-template-hash") == ["pod/redis-cache-0", f"pod/{HEALTHY}"]
    proc = kubectl("get", "pods", "-l", "app in (a", check=False)
    assert proc.returncode == 1 and "unable to parse requirement" in proc.stderr.decode()


def test_chunked_list_follows_continue(kubectl: Kubectl) -> None:
    proc = kubectl("get", "pods", "-o", "name", "--chunk-size=1", "-v=6")
    assert len(proc.stdout.split()) == 3
    gets = [line for line in proc.stderr.decode().splitlines() if "/pods?" in line]
    assert len(gets) == 3 and "continue=" in gets[-1]


def test_wrong_token_is_refused(kubectl: Kubectl) -> None:
    """kubectl's login error, as it words it whether its discovery cache is empty (the
    discovery request is refused first: client-go's own words) or warm (the list is: the
    Status the server sent), whichever test of this module ran before on this worker."""
    proc = kubectl("--token=not-the-token", "get", "pods", check=False)
    assert proc.returncode == 1
    said = proc.stderr.decode()
    assert "You must be logged in to the server (Unauthorized)" in said or \
        "You must be logged in to the server (the server has asked for the client to " \
        "provide credentials)" in said, said


def test_watch_sends_no_changes_and_ends_at_the_timeout(kubectl: Kubectl) -> None:
    proc = kubectl("get", "pods", "-w", "--request-timeout=2s", check=False, timeout=30)
    assert len(table(proc.stdout.decode())) == 3  # the list once; a replay never changes


def test_kubectl_sends_only_get(tmp_path: Path) -> None:
    root = build_fixture(tmp_path / "fixture")
    with replay(root, tmp_path) as (server, kubeconfig):
        k = Kubectl(server, kubeconfig, tmp_path / "home", root)
        seen: list[str] = []
        for args in (["get", "pods"], ["describe", "pod", CRASHING],
                     ["logs", CRASHING, "-c", "vllm", "--previous"],
                     ["get", "events", f"--field-selector=involvedObject.name={CRASHING}"],
                     ["get", "deploy,rs,nodes"],
                     ["get", "--raw",
                      f"/api/v1/namespaces/{NS}/pods/{HEALTHY}:8000/proxy/metrics"]):
            proc = k(*args, "-v=6")
            seen += re.findall(r"round_trippers.go:\d+\] (\w+) https://", proc.stderr.decode())
        assert seen and set(seen) == {"GET"}
        logged = (tmp_path / "requests.log").read_text().splitlines()
        assert logged and all(line.startswith("GET ") for line in logged)
        assert list(server.requests) == logged


def test_writes_are_refused_and_change_nothing(tmp_path: Path) -> None:
    root = build_fixture(tmp_path / "fixture")
    with replay(root, tmp_path) as (server, kubeconfig):
        k = Kubectl(server, kubeconfig, tmp_path / "home", root)
        proc = k("delete", "pod", CRASHING, "--wait=false", check=False)
        assert proc.returncode == 1 and "MethodNotAllowed" in proc.stderr.decode()
        proc = k("auth", "can-i", "list", "pods", check=False)
        # The refused POST's body is read, so it is not mistaken for the next request.
        assert "Unsolicited response" not in proc.stderr.decode()
        assert f"pod/{CRASHING}" in k.text("get", "pods", "-o", "name")
        assert any(r.startswith("DELETE ") for r in server.requests)
