"""Every live read is bounded and the end of a log is read.

A hostile or broken API server (tests/support/kubeapi.py faults): huge lines before
the crash, a /metrics page that never ends, a gzip bomb, a server that drips
one byte a second, 429s, redirects, a server that ignores limitBytes, a pod
list that is not JSON. Each scan ends within its bounds with a partial
report, and never says healthy about what it could not read.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_bad_input import HEALTHY, OOM_LINE, clean, one_line_error, step
from tests.conftest import Run, replay, run_cli
from tests.support.fixturekit import (
    METRICS_TEXT,
    RUNNING_LOG,
    add_pod,
    copy_fixture,
    running_pod,
    template_pod,
    write_bytes,
)
from tests.support.kubeapi import KubeAPIServer, write_kubeconfig
from triage.collect.live import LiveCollector, Options, connect

TRACEBACK = b"".join(line + b"\n" for line in (
    b"(EngineCore_0 pid=270) ERROR 11-28 03:06:57 [core.py:700] EngineCore failed to start.",
    b"(EngineCore_0 pid=270) ERROR 11-28 03:06:57 [core.py:700] Traceback (most recent call last):",
    OOM_LINE,
))
HEALTH = b'(APIServer pid=1) INFO:     10.48.0.1:51234 - "GET /health HTTP/1.1" 200 OK\n'


def pod_with_log(root: Path, log: bytes) -> Path:
    pod = running_pod(template_pod(root), HEALTHY, labels={"app": "vllm-llama"})
    add_pod(root, pod, log=log, metrics=METRICS_TEXT)
    return root


def scan(kc: Path, *args: str, timeout: float = 120) -> Run:
    return run_cli("scan", "--kubeconfig", str(kc), "-o", "json", *args, timeout=timeout)


def findings(report: dict[str, Any], pod: str) -> list[str]:
    return [f["id"] for p in report["pods"] if p["name"] == pod for f in p["findings"]]


# --- point 1: the end of a log is always read ------------------------------------------------

def test_crash_after_a_five_mebibyte_line(tmp_path: Path) -> None:
    """Before: tailLines 3000, 93, 9 read only health checks; step 2 pass, exit 0."""
    log = (RUNNING_LOG.encode() * 300
           + b"(APIServer pid=1) INFO 11-28 02:41:09 [logger.py:43] Received request: "
           + b"x" * (5 * 1024 * 1024) + b"\n" + TRACEBACK + HEALTH * 150)
    root = pod_with_log(copy_fixture(tmp_path / "fx"), log)
    with replay(root, tmp_path) as (server, kc):
        start = time.monotonic()
        run = scan(kc)
        elapsed = time.monotonic() - start
        log_requests = [r for r in server.requests if f"/pods/{HEALTHY}/log" in r]
    clean(run, 1)
    report = run.json()
    assert "cuda-oom" in findings(report, HEALTHY), report["pods"]
    assert step(report, 2)["verdict"] == "fail"
    assert len(log_requests) <= 3, log_requests  # the tail, then the stream of its end
    # The report says what was cut.
    assert any(HEALTHY in w and "last" in w and "line" in w for w in report["warnings"]), \
        report["warnings"]
    assert elapsed < 30


def test_crash_at_the_end_of_a_100_mb_single_line_log(tmp_path: Path) -> None:
    """A progress bar redrawn with carriage returns for 100 MB, then the crash, no newline."""
    bar = b"Loading safetensors checkpoint shards:  50% Completed | 2/4 [00:01<00:01]\r"
    log = bar * (100 * 1024 * 1024 // len(bar)) + OOM_LINE
    root = pod_with_log(copy_fixture(tmp_path / "fx"), log)
    with replay(root, tmp_path) as (_server, kc):
        run = scan(kc)
    clean(run, 1)
    report = run.json()
    assert "cuda-oom" in findings(report, HEALTHY), report["pods"]
    assert step(report, 2)["verdict"] == "fail"


def test_tail_too_long_to_stream_falls_back_to_bisection(tmp_path: Path) -> None:
    """With a transfer cap below the tail's size, the largest tail that fits is found
    in a bounded number of requests, and the over-long line's end when it fits the cap."""
    log = (b"y" * 300_000 + b"\n") * 40 + b"z" * 150_000 + b"\n" + TRACEBACK + HEALTH * 20
    root = pod_with_log(copy_fixture(tmp_path / "fx"), log)
    with replay(root, tmp_path) as (server, kc):
        conn = connect(str(kc), None, 10)
        opts = Options(namespace="llm", limit_bytes=100_000, max_log_transfer=1_000_000)
        snap = LiveCollector(conn, opts).collect()
        requests = [r for r in server.requests if f"/pods/{HEALTHY}/log" in r]
    text = snap.logs[("llm", HEALTHY, "vllm", "current")].text()
    assert "CUDA out of memory" in text
    assert text.startswith("[vllm-triage: ") and "earlier bytes of the log not read" in text
    assert len(requests) <= 2 + 12 + 1, requests
    assert any(HEALTHY in n for n in snap.notes)


def test_limit_bytes_enforced_when_the_server_ignores_it(tmp_path: Path) -> None:
    log = RUNNING_LOG.encode() + b"q" * (6 * 1024 * 1024) + b"\n" + TRACEBACK
    root = pod_with_log(copy_fixture(tmp_path / "fx", faults={"ignore_limit_bytes": True}), log)
    with replay(root, tmp_path) as (_server, kc):
        conn = connect(str(kc), None, 10)
        snap = LiveCollector(conn, Options(namespace="llm")).collect()
    text = snap.logs[("llm", HEALTHY, "vllm", "current")].text()
    assert len(text.encode()) <= 4 * 1024 * 1024 + 4096
    assert "CUDA out of memory" in text


# --- points 4 and 5: bytes and wall time -------------------------------------------------------

def test_metrics_page_larger_than_its_cap(tmp_path: Path) -> None:
    """Before: a 64 MiB page cost 1.37 GB of memory. Now it is refused at 16 MiB."""
    root = pod_with_log(copy_fixture(tmp_path / "fx"), RUNNING_LOG.encode())
    page = METRICS_TEXT.encode() + b"# padding\n" * (64 * 1024 * 1024 // 10)
    write_bytes(root / "metrics" / "llm" / f"{HEALTHY}.txt", page)
    with replay(root, tmp_path) as (_server, kc):
        run = scan(kc)
    clean(run, 1)
    report = run.json()
    hits = [u for u in report["unreadable"] if u["what"].startswith(f"metrics of llm/{HEALTHY}")]
    assert hits and "larger than 16 MiB" in hits[0]["reason"], report["unreadable"]
    assert step(report, 5)["verdict"] == "unknown"


def test_gzip_bomb_is_bounded_after_decompression(tmp_path: Path) -> None:
    """Before: a gzip-encoded 1 GiB body ended in MemoryError with no report."""
    root = pod_with_log(copy_fixture(tmp_path / "fx", faults={"gzip_bomb": {"proxy": 2**30}}),
                        RUNNING_LOG.encode())
    with replay(root, tmp_path) as (_server, kc):
        run = scan(kc)
    clean(run, 1)
    report = run.json()
    hits = [u for u in report["unreadable"] if u["what"].startswith(f"metrics of llm/{HEALTHY}")]
    assert hits and "larger than 16 MiB" in hits[0]["reason"], report["unreadable"]


@pytest.mark.parametrize("kind", ["proxy", "log", "events"])
def test_a_server_that_drips_one_byte_a_second(tmp_path: Path, kind: str) -> None:
    """Before: 121 s with --request-timeout 2s before it was killed."""
    root = pod_with_log(copy_fixture(tmp_path / "fx", faults={"drip": {kind: 0.5}}),
                        RUNNING_LOG.encode())
    with replay(root, tmp_path) as (_server, kc):
        start = time.monotonic()
        run = scan(kc, "--request-timeout", "2s", timeout=150)
        elapsed = time.monotonic() - start
    clean(run, 1)
    assert elapsed < 40, elapsed  # against 121 s before; room for a loaded machine
    report = run.json()
    timed_out = [u for u in report["unreadable"] if "within --request-timeout 2s" in u["reason"]]
    assert timed_out, report["unreadable"]


def test_pod_list_that_drips(tmp_path: Path) -> None:
    root = copy_fixture(tmp_path / "fx", faults={"drip": {"pods": 0.5}})
    with replay(root, tmp_path) as (_server, kc):
        start = time.monotonic()
        run = scan(kc, "--request-timeout", "2s", timeout=60)
    clean(run, 3)
    one_line_error(run, "timed out", "--request-timeout 2s")
    assert time.monotonic() - start < 12


# --- point 11: 429, redirects, invalid JSON ------------------------------------------------

def test_429_is_retried_after_retry_after(tmp_path: Path) -> None:
    root = copy_fixture(tmp_path / "fx", faults={"too_many": {"events": 2}})
    with replay(root, tmp_path) as (server, kc):
        run = scan(kc, "--request-timeout", "10s")
        events = [r for r in server.requests if "/events" in r]
    clean(run, 1)
    # Two 429s, then each events list (the namespace's, the Nodes') answered once.
    assert len(events) == 2 + len(set(events)), events
    assert not [u for u in run.json()["unreadable"] if u["what"].startswith("events")]


def test_429_past_the_deadline_is_a_failed_read(tmp_path: Path) -> None:
    root = copy_fixture(tmp_path / "fx", faults={"too_many": {"events": 10}})
    with replay(root, tmp_path) as (_server, kc):
        run = scan(kc, "--request-timeout", "1s")
    clean(run, 1)
    hits = [u for u in run.json()["unreadable"] if u["what"].startswith("events")]
    assert hits and hits[0]["reason"].startswith("429"), hits


def test_redirect_is_not_content(tmp_path: Path) -> None:
    root = copy_fixture(tmp_path / "fx", faults={"redirect": ["events"]})
    with replay(root, tmp_path) as (_server, kc):
        run = scan(kc)
    clean(run, 1)
    report = run.json()
    hits = [u for u in report["unreadable"] if u["what"].startswith("events")]
    assert hits and "302" in hits[0]["reason"] and "not followed" in hits[0]["reason"]
    assert step(report, 9)["verdict"] == "unknown"


def test_pod_list_that_is_not_json(tmp_path: Path) -> None:
    """Before: worded 'cannot reach the Kubernetes API', which it could."""
    root = copy_fixture(tmp_path / "fx", faults={"not_json": ["pods"]})
    with replay(root, tmp_path) as (_server, kc):
        run = scan(kc)
    clean(run, 3)
    line = one_line_error(run, "not JSON")
    assert "cannot reach" not in line


def test_watchdog_leaves_no_thread_or_socket_behind(tmp_path: Path) -> None:
    """In process: a dripping read ends at its deadline and the next read works."""
    root = copy_fixture(tmp_path / "fx", faults={"drip": {"events": 0.2}})
    server = KubeAPIServer(root).start()
    try:
        kc = write_kubeconfig(tmp_path / "kc", server.url)
        conn = connect(str(kc), None, 1)
        start = time.monotonic()
        snap = LiveCollector(conn, Options(namespace="llm", request_timeout=1.0)).collect()
        assert time.monotonic() - start < 6
        assert any("within --request-timeout 1s" in f.reason for f in snap.failures)
        assert snap.pods()
    finally:
        server.stop()
