"""The watch's port under a flood of slow and half-open clients: every request is
answered (or refused with 503) within 10 s, a connection that says nothing is closed,
and no client that goes away prints a traceback."""

from __future__ import annotations

import http.client
import socket
import struct
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from prometheus_client import CollectorRegistry

from tests.conftest import FIXTURES
from triage import pipeline
from triage.collect import bundle
from triage.watch import server as watch_server
from triage.watch.cycle import ClusterStatus, CycleResult


class _Cluster:
    """What the server reads of a cluster's watch: one complete cycle."""

    def __init__(self) -> None:
        report = pipeline.analyze(bundle.load(FIXTURES / "cuda-oom"))
        self.status = ClusterStatus("gpu-east")
        self.status.record(CycleResult(report, report.to_document(), {}, 1, 1.0, time.time()))

    def served_report(self) -> object:
        return self.status.last_complete.report if self.status.last_complete else None

    def unserved_reason(self) -> str:
        return ""

    def readiness(self) -> tuple[bool, str]:
        return True, ""


@contextmanager
def serving() -> Iterator[int]:
    srv = watch_server.WatchServer(("127.0.0.1", 0), [_Cluster()],  # type: ignore[list-item]
                                   CollectorRegistry(), lambda: True)
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.1},
                              daemon=True)
    thread.start()
    try:
        yield srv.server_address[1]
    finally:
        srv.shutdown()
        srv.server_close()


def _get(port: int, path: str, out: list[tuple[int, float]]) -> None:
    start = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        response.read()
        out.append((response.status, time.monotonic() - start))
    except OSError as exc:
        out.append((-1, time.monotonic() - start))
        raise AssertionError(f"{path}: {exc!r}") from None
    finally:
        conn.close()


def _reset(sock: socket.socket) -> None:
    """Close as a client that goes away does: a reset, not a goodbye."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def test_a_slow_client_flood_is_answered_in_time_without_tracebacks(
        capfd: pytest.CaptureFixture[str]) -> None:
    """300 half-open connections (more than are served at once), then 200 GETs at once;
    the half-open ones then go away with a reset. About 10 s: the quiet connection is
    closed after the server's idle timeout."""
    with serving() as port:
        # Half-open: connected, saying nothing, or half a request line, or a request
        # whose answer is never read.
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(300)]
        for i, sock in enumerate(idle):
            if i % 3 == 1:
                sock.sendall(b"GET /rep")
            elif i % 3 == 2:
                sock.sendall(b"GET /report HTTP/1.1\r\nHost: x\r\n\r\n" * 50)
        answers: list[tuple[int, float]] = []
        clients = [threading.Thread(target=_get, args=(port, path, answers))
                   for _ in range(50) for path in ("/metrics", "/report", "/report.json",
                                                   "/report.md")]
        for t in clients:
            t.start()
        for t in clients:
            t.join(timeout=30)
        assert len(answers) == 200
        assert {status for status, _ in answers} <= {200, 503}, answers
        assert max(took for _, took in answers) < 10, sorted(answers)[-5:]
        for sock in idle:
            _reset(sock)
        time.sleep(0.5)
        # A connection that says nothing is closed by the server.
        quiet = socket.create_connection(("127.0.0.1", port))
        quiet.settimeout(10)
        start = time.monotonic()
        assert quiet.recv(1) == b""
        assert time.monotonic() - start < 10
        quiet.close()
        # Served again, once the flood is gone.
        again: list[tuple[int, float]] = []
        _get(port, "/report.json", again)
        assert again[0][0] == 200
    assert "Traceback" not in capfd.readouterr().err
