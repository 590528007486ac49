"""Latency over a window from a real Prometheus, and a report that survives one that fails.

The queueing-last-15m fixture's history (three healthy days, a queue in the
last 15 minutes that has just drained) is backfilled with promtool into a
real Prometheus on 127.0.0.1, which the test API server proxies as
``monitoring/prometheus-k8s``. The scan finds it with ``--prometheus auto``
and judges steps 5 and 7 over the window; the one scrape alone passes. When
Prometheus is down, slow, or answers with errors, the report is the
single-scrape report plus the failure, named.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml

from tests.conftest import FIXTURES, replay, replay_with_prometheus, run_cli

NAME = "queueing-last-15m"
INCIDENT = yaml.safe_load((FIXTURES / NAME / "incident.yaml").read_text())
AT = {"SOURCE_DATE_EPOCH": str(int(datetime.fromisoformat(
    INCIDENT["collected_at"].replace("Z", "+00:00")).timestamp()))}


def _step(report: dict[str, Any], n: int) -> dict[str, Any]:
    step: dict[str, Any] = report["checklist"][n - 1]
    return step


def test_window_finds_the_queue_the_scrape_misses(tmp_path: Path, backfilled: Any) -> None:
    with replay_with_prometheus(NAME, tmp_path, backfilled(INCIDENT["prometheus"]["history"])
                                ) as (server, kubeconfig, _url):
        windowed = run_cli("scan", "--kubeconfig", str(kubeconfig), "-o", "json",
                           "--prometheus", "auto", "--since", "30m", env=AT)
        single = run_cli("scan", "--kubeconfig", str(kubeconfig), "-o", "json", env=AT)
        requests = list(server.requests)
    assert windowed.code == 0 and single.code == 0, windowed.stderr + single.stderr
    win, one = windowed.json(), single.json()

    # The one scrape: gauges now (drained), histograms since the start three days ago.
    assert one["pods"][0]["findings"] == []
    assert _step(one, 5)["verdict"] == "pass" and _step(one, 7)["verdict"] == "pass"
    assert "since the server started" in " ".join(_step(one, 7)["evidence"])

    # The window: the queue, with evidence naming its source.
    assert [f["id"] for f in win["pods"][0]["findings"]] == ["request-queueing"]
    step7 = _step(win, 7)
    assert step7["verdict"] == "warn"
    text = "\n".join(step7["evidence"])
    # Issue 17: in words, with units, the source after the value.
    assert "requests waiting 13.8 (Prometheus, last 30m)" in text
    assert "queue time P99 57 s (Prometheus, last 30m)" in text
    assert "requests waiting max 42 (Prometheus, last 30m)" in text
    step5 = "\n".join(_step(win, 5)["evidence"])
    assert "e2e P50 20.3s P99 84s" in step5 and "(Prometheus, last 30m)" in step5
    # It said which Prometheus it found, and asked only with GETs, through the proxy.
    assert ("window: service monitoring/prometheus-k8s:9090 through the API server's service "
            "proxy (found by --prometheus auto), last 30m ending 2026-11-28T03:12:09Z") in step5
    assert win["prometheus"] == {
        "source": "service monitoring/prometheus-k8s:9090 through the API server's service "
                  "proxy (found by --prometheus auto)",
        "window_seconds": 1800.0, "end": "2026-11-28T03:12:09Z"}
    assert all(r.startswith("GET ") for r in requests)
    proxied = [r for r in requests if "/services/prometheus-k8s:9090/proxy/api/v1/" in r]
    assert len(proxied) > 20
    # Counters are judged over the window, never as totals since the start.
    assert "requests_finished" not in text or "518" not in text


def test_window_and_single_scrape_differ_only_where_the_window_speaks(
        tmp_path: Path, backfilled: Any) -> None:
    """--since changes the window: a 5-minute window after the queue drained holds little."""
    with replay_with_prometheus(NAME, tmp_path, backfilled(INCIDENT["prometheus"]["history"])
                                ) as (_server, kubeconfig, _url):
        short = run_cli("scan", "--kubeconfig", str(kubeconfig), "-o", "json",
                        "--prometheus", "auto", "--since", "2m", env=AT)
    assert short.code == 0, short.stderr
    evidence = "\n".join(_step(short.json(), 7)["evidence"])
    assert "(Prometheus, last 2m)" in evidence


def test_collect_with_prometheus_then_analyze_equals_scan(tmp_path: Path,
                                                          backfilled: Any) -> None:
    bundle = tmp_path / "bundle.tar.gz"
    with replay_with_prometheus(NAME, tmp_path, backfilled(INCIDENT["prometheus"]["history"])
                                ) as (_server, kubeconfig, _url):
        scan = run_cli("scan", "--kubeconfig", str(kubeconfig), "-o", "json",
                       "--prometheus", "auto", env=AT)
        collect = run_cli("collect", "--kubeconfig", str(kubeconfig), "-o", str(bundle),
                          "--prometheus", "auto", env=AT)
    assert collect.code == 0, collect.stderr
    analyzed = run_cli("analyze", str(bundle), "-o", "json")
    assert analyzed.code == scan.code
    assert analyzed.stdout == scan.stdout
    assert "request-queueing" in analyzed.stdout


def _without_prometheus_notes(report: dict[str, Any]) -> dict[str, Any]:
    out = json.loads(json.dumps(report))
    out["unreadable"] = [u for u in out["unreadable"] if not u["what"].startswith("Prometheus")]
    for step in out["checklist"]:
        step["evidence"] = [e for e in step["evidence"]
                            if "judged from one scrape of /metrics instead" not in e]
    return out


def test_prometheus_service_down_leaves_the_report_unchanged(tmp_path: Path) -> None:
    """--prometheus auto finds the Service, but nothing answers behind it (503 from the proxy)."""
    with replay(NAME, tmp_path) as (_server, kubeconfig):
        down = run_cli("scan", "--kubeconfig", str(kubeconfig), "-o", "json",
                       "--prometheus", "auto", env=AT)
        plain = run_cli("scan", "--kubeconfig", str(kubeconfig), "-o", "json", env=AT)
    assert down.code == plain.code == 0, down.stderr
    report = down.json()
    failures = [u for u in report["unreadable"] if u["what"].startswith("Prometheus")]
    assert len(failures) == 1, report["unreadable"]
    assert "monitoring/prometheus-k8s" in failures[0]["what"]
    assert "503" in failures[0]["reason"]
    assert any("judged from one scrape" in e for e in _step(report, 7)["evidence"])
    assert _without_prometheus_notes(report) == plain.json()


def test_no_prometheus_service_in_the_cluster(tmp_path: Path) -> None:
    with replay("request-queueing", tmp_path) as (_server, kubeconfig):
        run = run_cli("scan", "--kubeconfig", str(kubeconfig), "-o", "json",
                      "--prometheus", "auto", env=AT)
        plain = run_cli("scan", "--kubeconfig", str(kubeconfig), "-o", "json", env=AT)
    failures = [u for u in run.json()["unreadable"] if u["what"].startswith("Prometheus")]
    assert len(failures) == 1 and "found no Prometheus Service" in failures[0]["reason"]
    assert _without_prometheus_notes(run.json()) == plain.json()


class _Fake(BaseHTTPRequestHandler):
    mode = "error"
    seen: ClassVar[list[str]] = []

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        _Fake.seen.append(f"GET {self.path} {self.headers.get('Authorization', '')}")
        if self.mode == "slow":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            # A body that trickles: each byte within any socket timeout, the whole never.
            for ch in b'{"status":"success","data":{"resultType":"vector","result":[]}}':
                time.sleep(0.5)
                try:
                    self.wfile.write(bytes([ch]))
                    self.wfile.flush()
                except OSError:
                    return
            return
        if self.mode == "huge":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            try:
                for _ in range(20):
                    self.wfile.write(b" " * (1024 * 1024))
            except OSError:
                return
            return
        body = json.dumps({"status": "error", "errorType": "execution",
                           "error": "query processing would load too many samples into "
                                    "memory in query execution"}).encode()
        self.send_response(422)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:  # never used: the collector only GETs
        _Fake.seen.append(f"POST {self.path}")
        self.send_response(405)
        self.end_headers()


@contextmanager
def fake_prometheus(mode: str) -> Iterator[str]:
    _Fake.mode = mode
    _Fake.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Fake)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_prometheus_answering_errors_is_named(tmp_path: Path) -> None:
    with fake_prometheus("error") as url, replay(NAME, tmp_path) as (_server, kubeconfig):
        run = run_cli("scan", "--kubeconfig", str(kubeconfig), "-o", "json",
                      "--prometheus", url, "--prometheus-token", "sekrit-prom-token-123",
                      env=AT)
        plain = run_cli("scan", "--kubeconfig", str(kubeconfig), "-o", "json", env=AT)
    assert run.code == 0, run.stderr
    failures = [u for u in run.json()["unreadable"] if u["what"].startswith("Prometheus")]
    assert len(failures) == 1
    assert "every query" in failures[0]["what"]
    assert "422 execution" in failures[0]["reason"] and "too many samples" in failures[0]["reason"]
    assert _without_prometheus_notes(run.json()) == plain.json()
    assert _Fake.seen and all(s.startswith("GET /api/v1/query") for s in _Fake.seen)
    assert all(s.endswith("Bearer sekrit-prom-token-123") for s in _Fake.seen)
    assert "sekrit-prom-token-123" not in run.stdout + run.stderr


def test_prometheus_unreachable_and_credentials_in_the_url_are_masked(tmp_path: Path) -> None:
    with replay(NAME, tmp_path) as (_server, kubeconfig):
        run = run_cli("scan", "--kubeconfig", str(kubeconfig), "-o", "json",
                      "--prometheus", "http://triage:hunter2-pass@127.0.0.1:1", env=AT)
    assert run.code == 0, run.stderr
    failures = [u for u in run.json()["unreadable"] if u["what"].startswith("Prometheus")]
    assert len(failures) == 1 and "ConnectError" in failures[0]["reason"]
    assert "hunter2-pass" not in run.stdout + run.stderr


@pytest.mark.parametrize("mode", ["slow", "huge"])
def test_a_slow_or_huge_answer_is_cut_off(tmp_path: Path, mode: str) -> None:
    """The deadline covers the whole request (a trickling body cannot hold the scan), and a
    body over the size bound is not read."""
    with fake_prometheus(mode) as url, replay(NAME, tmp_path) as (_server, kubeconfig):
        started = time.monotonic()
        run = run_cli("scan", "--kubeconfig", str(kubeconfig), "-o", "json",
                      "--prometheus", url, "--request-timeout", "3s", env=AT)
        took = time.monotonic() - started
    assert run.code == 0, run.stderr
    failures = [u for u in run.json()["unreadable"] if u["what"].startswith("Prometheus")]
    assert len(failures) == 1, run.json()["unreadable"]
    reason = failures[0]["reason"]
    assert ("within 3s" in reason) if mode == "slow" else ("larger than 8 MiB" in reason)
    assert took < 25, took


@pytest.mark.parametrize(("args", "words"), [
    (["--prometheus", "prom:9090"], "neither an http(s):// URL nor auto"),
    (["--prometheus", "auto", "--since", "soon"], "--since 'soon' is not a duration"),
    (["--prometheus", "auto", "--since", "30s"], "between 1m and 7 days"),
    (["--prometheus", "https://p:9090", "--prometheus-ca-file", "/nonexistent/ca.pem"],
     "does not exist"),
])
def test_bad_prometheus_flags_are_usage_errors(tmp_path: Path, args: list[str],
                                               words: str) -> None:
    with replay(NAME, tmp_path) as (_server, kubeconfig):
        run = run_cli("scan", "--kubeconfig", str(kubeconfig), *args)
    assert run.code == 2, run.stderr
    assert words in run.stderr and "Traceback" not in run.stderr


def test_yaml_output_is_the_json_document(tmp_path: Path) -> None:
    js = run_cli("analyze", str(FIXTURES / "cuda-oom"), "-o", "json")
    ya = run_cli("analyze", str(FIXTURES / "cuda-oom"), "-o", "yaml")
    assert ya.code == js.code == 1
    assert yaml.safe_load(ya.stdout) == js.json()
