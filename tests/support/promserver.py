"""A real Prometheus for the tests: recorded history backfilled with promtool, served on 127.0.0.1.

Debian's ``prometheus`` package provides both binaries. In CI (``CI`` set)
a missing binary fails the test; on a developer's machine without it the
test is skipped. The server listens on 127.0.0.1 on a free port, scrapes
nothing, keeps its data in a temporary directory and is stopped by the test.
"""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.conftest import need
from tests.support.prometheus_history import SCENARIOS, openmetrics


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def backfill(scenario: str, data: Path) -> None:
    """Write the scenario's history as OpenMetrics and turn it into TSDB blocks."""
    promtool = need("promtool")
    source = data.parent / f"{scenario}.om"
    source.write_text(openmetrics(SCENARIOS[scenario]), encoding="utf-8")
    proc = subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", "-q",
                           str(source), str(data)], capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    source.unlink()


@contextmanager
def prometheus(data: Path, port: int | None = None, config_text: str | None = None,
               netns: str | None = None, host: str = "127.0.0.1") -> Iterator[str]:
    """Serve ``data`` with a real Prometheus; yields its base URL; stops it after.
    ``config_text``: its prometheus.yml (default: scrapes nothing); ``netns``: run it in
    that network namespace, listening on ``host`` (a real API server proxies to no
    loopback address: tests/support/realapi.py)."""
    binary = need("prometheus")
    port = port or free_port()
    config = data.parent / "prometheus.yml"
    config.write_text(config_text or "global:\n  scrape_interval: 1h\n", encoding="utf-8")
    log = data.parent / "prometheus.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [*(["ip", "netns", "exec", netns] if netns else []),
             binary, f"--config.file={config}", f"--storage.tsdb.path={data}",
             f"--web.listen-address={host}:{port}", "--storage.tsdb.retention.time=100y",
             "--log.level=warn"],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    url = f"http://{host}:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise AssertionError("prometheus exited: " + log.read_text()[-2000:])
            try:
                if httpx.get(f"{url}/-/ready", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError("prometheus did not become ready in 60s: "
                                     + log.read_text()[-2000:])
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
