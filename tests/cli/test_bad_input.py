"""Bad input gets one clear line and, where anything can be read, a partial report.

Never a traceback, never a hang: every run has a subprocess timeout, and
every stderr is checked for 'Traceback'. Fixture variants are built in
temporary directories from fixtures/cuda-oom (see tests/support/fixturekit.py).
"""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import Any

from tests.conftest import FIXTURES, Run, replay, run_cli
from tests.support.fixturekit import (
    CUDA_OOM_POD,
    METRICS_TEXT,
    RUNNING_LOG,
    add_pod,
    copy_fixture,
    running_pod,
    template_pod,
)
from tests.support.kubeapi import write_kubeconfig

HEALTHY = "vllm-llama-7d9f8b6c5d-m2x4q"
OOM_LINE = (b"(EngineCore_0 pid=270) ERROR 11-28 03:06:57 [core.py:700] torch.OutOfMemoryError: "
            b"CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
            b"22.03 GiB of which 91.06 MiB is free.")


def clean(run: Run, code: int) -> None:
    """The run ended with ``code`` and without a traceback."""
    assert "Traceback" not in run.stderr, run.stderr
    assert run.code == code, (run.code, run.stderr, run.stdout[-1500:])


def one_line_error(run: Run, *needles: str) -> str:
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("vllm-triage: error: "), lines[0]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def scan(kubeconfig: Path, *args: str, timeout: float = 60) -> Run:
    return run_cli("scan", "--kubeconfig", str(kubeconfig), "-o", "json", *args, timeout=timeout)


def with_healthy_pod(root: Path, metrics: str | bytes = METRICS_TEXT,
                     log: str | bytes = RUNNING_LOG) -> Path:
    pod = running_pod(template_pod(root), HEALTHY, labels={"app": "vllm-llama"})
    add_pod(root, pod, log=log, metrics=metrics)
    return root


def step(report: dict[str, Any], number: int) -> dict[str, Any]:
    found: dict[str, Any] = report["checklist"][number - 1]
    assert found["step"] == number
    return found


# --- kubeconfig and connection -------------------------------------------------------------

def test_kubeconfig_that_is_not_yaml(tmp_path: Path) -> None:
    kc = tmp_path / "kubeconfig"
    kc.write_bytes(b"apiVersion: v1\nclusters: [\n  - {name: x\n\x00\xff: : :\n")
    run = scan(kc, timeout=30)
    clean(run, 2)
    one_line_error(run, "kubeconfig")
    assert run.stdout == ""


def test_kubeconfig_that_is_yaml_but_not_a_kubeconfig(tmp_path: Path) -> None:
    kc = tmp_path / "kubeconfig"
    kc.write_text("- just\n- a list\n")
    run = scan(kc, timeout=30)
    clean(run, 2)
    one_line_error(run, "kubeconfig")


def test_kubeconfig_path_that_does_not_exist(tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "kubeconfig"
    run = scan(missing, timeout=30)
    clean(run, 2)
    one_line_error(run, str(missing), "does not exist")


def test_unknown_context(tmp_path: Path) -> None:
    kc = write_kubeconfig(tmp_path / "kubeconfig", "https://127.0.0.1:1")
    run = scan(kc, "--context", "prod-east", timeout=30)
    clean(run, 2)
    one_line_error(run, "'prod-east'", "not found")


def test_server_not_listening(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    kc = write_kubeconfig(tmp_path / "kubeconfig", f"https://127.0.0.1:{port}")
    start = time.monotonic()
    run = scan(kc, timeout=90)
    elapsed = time.monotonic() - start
    clean(run, 3)
    one_line_error(run, f"127.0.0.1:{port}", "cannot reach")
    # No retrying a refused connection for the whole request timeout (30 s); the bound
    # leaves room for a loaded machine's start-up.
    assert elapsed < 25, elapsed


def test_wrong_token(tmp_path: Path) -> None:
    with replay("cuda-oom", tmp_path, token="not-the-token") as (_server, kc):
        run = scan(kc, timeout=30)
    clean(run, 3)
    one_line_error(run, "refused the credentials", "401")


def test_pod_list_forbidden(tmp_path: Path) -> None:
    root = copy_fixture(tmp_path / "fx", faults={"forbidden": ["pods"]})
    with replay(root, tmp_path) as (_server, kc):
        run = scan(kc, timeout=30)
    clean(run, 3)
    one_line_error(run, "not allowed to list pods in llm", "403 Forbidden")


def test_request_timeout_flag_that_is_not_a_duration(tmp_path: Path) -> None:
    kc = write_kubeconfig(tmp_path / "kubeconfig", "https://127.0.0.1:1")
    run = scan(kc, "--request-timeout", "soon", timeout=30)
    clean(run, 2)
    assert "not a duration" in run.stderr


# --- partial reports when reads are refused --------------------------------------------------

FORBIDDEN_TEXT = 'is forbidden: User "system:serviceaccount:llm:vllm-triage" cannot'


def forbidden_scan(tmp_path: Path, kinds: list[str]) -> dict[str, Any]:
    root = with_healthy_pod(copy_fixture(tmp_path / "fx", faults={"forbidden": kinds}))
    with replay(root, tmp_path) as (server, kc):
        run = scan(kc)
        requests = list(server.requests)
    assert "Traceback" not in run.stderr, run.stderr
    assert run.code in (0, 1), run.stderr
    assert requests and all(r.startswith("GET ") for r in requests)
    report: dict[str, Any] = run.json()
    assert {p["name"] for p in report["pods"]} == {CUDA_OOM_POD, HEALTHY}
    return report


def unreadable(report: dict[str, Any], what: str) -> list[dict[str, str]]:
    hits = [u for u in report["unreadable"] if what in u["what"]]
    assert hits, report["unreadable"]
    for u in hits:
        assert u["reason"].startswith("403 Forbidden: ") and FORBIDDEN_TEXT in u["reason"], u
    return hits


def test_events_forbidden(tmp_path: Path) -> None:
    report = forbidden_scan(tmp_path, ["events"])
    unreadable(report, "events")
    # Everything else was still read: the CUDA OOM comes from the previous log.
    findings = {p["name"]: [f["id"] for f in p["findings"]] for p in report["pods"]}
    assert "cuda-oom" in findings[CUDA_OOM_POD]
    assert step(report, 2)["verdict"] == "fail"


def test_events_forbidden_makes_the_steps_that_read_events_unknown(tmp_path: Path) -> None:
    report = forbidden_scan(tmp_path, ["events"])
    s9 = step(report, 9)
    assert s9["verdict"] == "unknown"
    assert any("events" in e and "403" in e for e in s9["evidence"])


def test_nodes_forbidden(tmp_path: Path) -> None:
    report = forbidden_scan(tmp_path, ["nodes"])
    unreadable(report, "node gke-inference-l4-pool-6f1d2a9c-q8wz")
    s9 = step(report, 9)
    assert s9["verdict"] == "unknown"
    assert any("nodes is forbidden" in e for e in s9["evidence"]), s9


def test_pod_logs_forbidden(tmp_path: Path) -> None:
    report = forbidden_scan(tmp_path, ["log"])
    hits = unreadable(report, "log of llm/")
    assert {h["what"] for h in hits} == {
        f"previous log of llm/{CUDA_OOM_POD} (vllm)", f"log of llm/{HEALTHY} (vllm)"}
    s2 = step(report, 2)
    assert s2["verdict"] == "unknown"
    assert any("pods/log is forbidden" in e for e in s2["evidence"]), s2
    # Without the log, the OOM cannot be named; the report says so instead of guessing.
    assert "cuda-oom" not in [f["id"] for p in report["pods"] for f in p["findings"]]


def test_pod_proxy_forbidden(tmp_path: Path) -> None:
    report = forbidden_scan(tmp_path, ["proxy"])
    unreadable(report, f"metrics of llm/{HEALTHY}")
    s5 = step(report, 5)
    assert s5["verdict"] == "unknown"
    assert any("pods/proxy is forbidden" in e for e in s5["evidence"]), s5


def test_optional_kinds_unavailable(tmp_path: Path) -> None:
    root = copy_fixture(tmp_path / "fx", faults={
        "unavailable": ["horizontalpodautoscalers", "replicasets", "deployments"]})
    with replay(root, tmp_path) as (_server, kc):
        run = scan(kc)
    clean(run, 1)
    report = run.json()
    reasons = {u["what"].split()[0]: u["reason"] for u in report["unreadable"]}
    assert reasons["horizontalpodautoscalers"].startswith("503 Service Unavailable")
    assert step(report, 7)["verdict"] == "unknown"


# --- hostile log and metrics content ---------------------------------------------------------

def test_ten_megabyte_line_and_binary_bytes(tmp_path: Path) -> None:
    """A 10 MB line, NULs, invalid UTF-8 and ANSI colours: fast, bounded, still diagnosed.

    The OOM is at the very end, after the huge line: limitBytes keeps the first bytes
    of a tail, so a collector that does not retry with fewer lines loses it.
    """
    log = (RUNNING_LOG.encode()
           + b"(APIServer pid=1) INFO 11-28 02:41:09 [logger.py:43] Received request: "
           + b"A" * (10 * 1024 * 1024) + b"\n"
           + b"\x00\x00\xff\xfe\xc3\x28 binary \x1b[31mred\x1b[0m \x1b[2K\r\n"
           + b"\x1b[1;31m" + OOM_LINE + b"\x1b[0m \xff\n")
    root = copy_fixture(tmp_path / "fx")
    pod = running_pod(template_pod(root), HEALTHY, labels={"app": "vllm-llama"})
    pod["status"]["containerStatuses"][0]["restartCount"] = 0
    add_pod(root, pod, log=log, metrics=METRICS_TEXT)
    with replay(root, tmp_path) as (_server, kc):
        start = time.monotonic()
        run = scan(kc, timeout=120)
        elapsed = time.monotonic() - start
    clean(run, 1)
    assert elapsed < 60, elapsed  # a hang guard; what it costs is bench/hostile.py's
    report = run.json()
    pods = {p["name"]: p for p in report["pods"]}
    oom = [f for f in pods[HEALTHY]["findings"] if f["id"] == "cuda-oom"]
    assert oom, pods[HEALTHY]["findings"]
    evidence = [e for p in report["pods"] for f in p["findings"] for e in f["evidence"]]
    evidence += [e for s in report["checklist"] for e in s["evidence"]]
    assert max(len(e) for e in evidence) <= 4200
    joined = "\n".join(evidence)
    assert "\x1b" not in joined and "\x00" not in joined
    assert any("Tried to allocate 2.00 GiB" in e for e in oom[0]["evidence"])

    # Offline, the same directory: the whole 10 MB line is read and cut for evidence.
    start = time.monotonic()
    offline = run_cli("analyze", str(root), "-o", "json", timeout=120)
    clean(offline, 1)
    assert time.monotonic() - start < 60
    names = {p["name"]: [f["id"] for f in p["findings"]] for p in offline.json()["pods"]}
    assert "cuda-oom" in names[HEALTHY]


def test_malformed_metrics(tmp_path: Path) -> None:
    bad = ('vllm:num_requests_running{engine="0",model_name="m" 3\n'
           "# TYPE vllm:e2e_request_latency_seconds histogram\nthis is not a sample\n")
    root = with_healthy_pod(copy_fixture(tmp_path / "fx"), metrics=bad)
    with replay(root, tmp_path) as (_server, kc):
        run = scan(kc)
    clean(run, 1)
    s5 = step(run.json(), 5)
    assert s5["verdict"] == "unknown"
    assert any(HEALTHY in e and "malformed Prometheus text" in e for e in s5["evidence"]), s5


def test_binary_metrics(tmp_path: Path) -> None:
    root = with_healthy_pod(copy_fixture(tmp_path / "fx"), metrics=b"\x00\xff\x1f\x8b" * 1000)
    with replay(root, tmp_path) as (_server, kc):
        run = scan(kc)
    clean(run, 1)
    assert step(run.json(), 5)["verdict"] == "unknown"


# --- slow servers -------------------------------------------------------------------------

def test_request_timeout_against_a_slow_read(tmp_path: Path) -> None:
    # The events answer would take two minutes; a 2 s request timeout cuts it short
    # (the bound leaves room for a loaded machine, far below the slow answer).
    root = copy_fixture(tmp_path / "fx", faults={"slow": {"events": 120}})
    with replay(root, tmp_path) as (_server, kc):
        start = time.monotonic()
        run = scan(kc, "--request-timeout", "2s", timeout=150)
        elapsed = time.monotonic() - start
    clean(run, 1)
    assert elapsed < 40, elapsed
    report = run.json()
    hits = [u for u in report["unreadable"] if u["what"].startswith("events")]
    assert hits and "timed out" in hits[0]["reason"], report["unreadable"]
    # Everything else arrived.
    assert report["pods"][0]["findings"][0]["id"] == "cuda-oom"


def test_slow_pod_list_is_a_cluster_error(tmp_path: Path) -> None:
    root = copy_fixture(tmp_path / "fx", faults={"slow": {"pods": 120}})
    with replay(root, tmp_path) as (_server, kc):
        start = time.monotonic()
        run = scan(kc, "--request-timeout", "1s", timeout=150)
        elapsed = time.monotonic() - start
    clean(run, 3)
    one_line_error(run, "timed out")
    assert elapsed < 40, elapsed


# --- scope: -A and -l ---------------------------------------------------------------------

def test_all_namespaces(tmp_path: Path) -> None:
    root = copy_fixture(tmp_path / "fx")
    pod = running_pod(template_pod(root), HEALTHY, namespace="llm-canary",
                      labels={"app": "vllm-llama"})
    add_pod(root, pod, log=RUNNING_LOG, metrics=METRICS_TEXT)
    with replay(root, tmp_path) as (server, kc):
        one_ns = scan(kc)
        every = scan(kc, "-A")
        requests = list(server.requests)
    clean(one_ns, 1)
    clean(every, 1)
    assert {(p["namespace"], p["name"]) for p in one_ns.json()["pods"]} == {
        ("llm", CUDA_OOM_POD)}
    report = every.json()
    assert report["namespace"] is None
    assert {(p["namespace"], p["name"]) for p in report["pods"]} == {
        ("llm", CUDA_OOM_POD), ("llm-canary", HEALTHY)}
    assert "GET /api/v1/pods?limit=500" in requests  # paged, as kubectl lists
    assert any(r.startswith("GET /api/v1/namespaces/llm-canary/pods/" + HEALTHY + ":8000/proxy")
               for r in requests)
    assert step(report, 5)["verdict"] != "unknown"


def test_selector_picks_a_pod_whose_image_does_not_name_vllm(tmp_path: Path) -> None:
    root = copy_fixture(tmp_path / "fx")
    pod = running_pod(template_pod(root), "inference-x-0", labels={"app": "x"},
                      image="registry.example.com/acme/inference-server:2.3.1")
    container = pod["spec"]["containers"][0]
    container["command"] = ["/opt/acme/bin/serve"]
    container["args"] = ["--listen", "0.0.0.0:8000"]
    add_pod(root, pod, log=RUNNING_LOG.encode() + OOM_LINE + b"\n")
    with replay(root, tmp_path) as (server, kc):
        default = scan(kc)
        selected = scan(kc, "-l", "app=x")
        requests = list(server.requests)
    clean(default, 1)
    # Nothing in its spec or labels names vLLM, but its log starts as vLLM's does and it
    # asks for a GPU: the default scan recognises it by its log's first lines (issue 15).
    assert "inference-x-0" in {p["name"] for p in default.json()["pods"]}
    clean(selected, 1)
    report = selected.json()
    assert report["selector"] == "app=x"
    assert [p["name"] for p in report["pods"]] == ["inference-x-0"]
    assert "cuda-oom" in [f["id"] for f in report["pods"][0]["findings"]]
    assert any("labelSelector=app%3Dx" in r or "labelSelector=app=x" in r for r in requests)


def test_selector_that_the_api_server_rejects(tmp_path: Path) -> None:
    """Refused before it is sent, as the API server would refuse it (issue 17)."""
    with replay("cuda-oom", tmp_path) as (_server, kc):
        run = scan(kc, "-l", "app in (x", timeout=30)
    assert "Traceback" not in run.stderr
    assert run.code == 2, run.stderr
    one_line_error(run, "-l 'app in (x'", "not closed")


def test_selector_matching_nothing(tmp_path: Path) -> None:
    with replay("cuda-oom", tmp_path) as (_server, kc):
        run = scan(kc, "-l", "app=nothing-here")
    clean(run, 0)
    report = run.json()
    assert report["pods"] == []
    assert "no vLLM server pods" in report["summary"]


# --- analyze on bad paths -----------------------------------------------------------------

def test_analyze_missing_path(tmp_path: Path) -> None:
    run = run_cli("analyze", str(tmp_path / "nope.tar.gz"), timeout=30)
    clean(run, 2)
    one_line_error(run, "no such file or directory")


def test_analyze_empty_dir(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    run = run_cli("analyze", str(tmp_path / "empty"), timeout=30)
    clean(run, 2)
    one_line_error(run, "neither manifest.json")


def test_analyze_a_file_that_is_not_a_bundle(tmp_path: Path) -> None:
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(b"\x1f\x8b\x08\x00garbage" * 100)
    run = run_cli("analyze", str(junk), timeout=30)
    clean(run, 2)
    one_line_error(run, "not a readable bundle")


def test_analyze_fixture_with_broken_objects(tmp_path: Path) -> None:
    root = copy_fixture(tmp_path / "fx")
    (root / "objects" / "events.yaml").write_text("items: [ {unclosed\n")
    run = run_cli("analyze", str(root), timeout=30)
    clean(run, 2)
    one_line_error(run, "events.yaml", "not valid YAML")


def test_fixture_dir_still_analyzes(tmp_path: Path) -> None:
    """Sanity: the unmodified fixture analyzes, so the failures above are the input's."""
    run = run_cli("analyze", str(FIXTURES / "cuda-oom"), "-o", "json", timeout=60)
    clean(run, 1)
