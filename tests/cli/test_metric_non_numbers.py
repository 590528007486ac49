"""Metrics that are not plain numbers, end to end: a histogram without +Inf is unknown
with the reason, never a pass; after an oversized answer or a timeout the other
Prometheus queries are not sent; NaN and Inf are named as such, not read as "no vLLM
series"."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

from tests.cli.test_prometheus import AT, NAME
from tests.conftest import replay, run_cli
from tests.support.fixturekit import copy_fixture

HEALTHY = "well-sized-healthy"


def _step5(report: dict[str, Any]) -> dict[str, Any]:
    step: dict[str, Any] = report["checklist"][4]
    return step


def test_why_prometheus_histogram_without_inf_bucket_is_unknown(tmp_path: Path) -> None:
    """Before: with no le="+Inf" bucket the quantiles were silently absent and step 5 said
    "pass: no finished requests" over 2,000 finished requests."""
    root = copy_fixture(tmp_path / "fx", HEALTHY)
    for page in (root / "metrics").rglob("*.txt"):
        page.write_text("".join(line for line in page.read_text().splitlines(keepends=True)
                                if not (line.startswith("vllm:e2e_request_latency_seconds_bucket")
                                        and 'le="+Inf"' in line)))
    run = run_cli("analyze", str(root), "-o", "json")
    step = _step5(run.json())
    assert step["verdict"] == "unknown", step
    assert any("no +Inf bucket" in e and "vllm:e2e_request_latency_seconds" in e
               and "2,000 observations" in e for e in step["evidence"]), step


def test_why_prometheus_nan_in_a_scrape_is_named(tmp_path: Path) -> None:
    root = copy_fixture(tmp_path / "fx", HEALTHY)
    for page in (root / "metrics").rglob("*.txt"):
        page.write_text(re.sub(r"^(vllm:e2e_request_latency_seconds_count\{[^}]*\}) \S+$",
                               r"\1 NaN", page.read_text(), flags=re.M))
    step = _step5(run_cli("analyze", str(root), "-o", "json").json())
    assert any("vllm:e2e_request_latency_seconds (e2e_latency_count) is NaN" in e for e in step["evidence"]), step


def test_why_prometheus_nan_in_the_inf_bucket_is_unknown_not_a_pass(tmp_path: Path) -> None:
    """Before: a NaN +Inf bucket silently dropped the e2e quantiles (histogram_quantile
    found no bucket over a NaN total) and step 5 passed on the other histograms."""
    root = copy_fixture(tmp_path / "fx", HEALTHY)
    for page in (root / "metrics").rglob("*.txt"):
        page.write_text(re.sub(
            r'^(vllm:e2e_request_latency_seconds_bucket\{[^}]*le="\+Inf"[^}]*\}) \S+$',
            r"\1 NaN", page.read_text(), flags=re.M))
    step = _step5(run_cli("analyze", str(root), "-o", "json").json())
    assert step["verdict"] == "unknown", step
    assert any('vllm:e2e_request_latency_seconds bucket le="+Inf" is NaN, so its quantiles '
               "cannot be computed" in e for e in step["evidence"]), step


def test_why_prometheus_duplicate_samples_are_malformed_not_summed(tmp_path: Path) -> None:
    """Before: every e2e bucket line but +Inf twice (Prometheus rejects such a scrape as
    duplicate samples) was summed as if from two engines: P99 4.98 s read as 2.21 s and
    step 5 passed."""
    root = copy_fixture(tmp_path / "fx", HEALTHY)
    for page in (root / "metrics").rglob("*.txt"):
        page.write_text("".join(
            line * 2 if line.startswith("vllm:e2e_request_latency_seconds_bucket")
            and 'le="+Inf"' not in line else line
            for line in page.read_text().splitlines(keepends=True)))
    step = _step5(run_cli("analyze", str(root), "-o", "json").json())
    assert step["verdict"] == "unknown", step
    assert not any("P99 2.21s" in e for e in step["evidence"]), step
    assert any("vllm:e2e_request_latency_seconds has the sample "
               'vllm:e2e_request_latency_seconds_bucket{engine="0",le="0.3",'
               'model_name="Qwen/Qwen3-8B"} twice in one page (Prometheus rejects such a '
               "scrape)" in e for e in step["evidence"]), step


class _Answers(BaseHTTPRequestHandler):
    """A Prometheus whose latency quantiles are NaN (a histogram with no +Inf bucket)
    while 17,849 requests finished; or whose answers are too large (mode "huge")."""

    mode = "nan"
    seen: ClassVar[list[str]] = []
    pod = "vllm-qwen-6c9f7d8b5d-m4n8q"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        _Answers.seen.append(self.path)
        if self.mode == "slow-charts" and "query_range" in self.path:
            time.sleep(4)  # past --request-timeout 2s: the charts time out
            self.close_connection = True  # the client has gone: no answer
            return
        if self.mode == "huge" and len(_Answers.seen) > 1:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            try:
                for _ in range(10):
                    self.wfile.write(b" " * (1024 * 1024))
            except OSError:
                pass
            return
        from urllib.parse import parse_qs, urlsplit
        query = parse_qs(urlsplit(self.path).query).get("query", [""])[0]
        labels = {"namespace": "llm", "pod": self.pod, "model_name": "Qwen/Qwen3-8B"}
        if query.startswith("histogram_quantile"):
            value = "4.25" if self.mode == "slow-charts" else "NaN"
        elif "e2e_request_latency_seconds_count" in query and query.startswith("sum"):
            value = "17849"
        else:
            value = None
        result = [{"metric": labels, "value": [1764299529.0, value]}] if value else []
        body = json.dumps({"status": "success", "data": {
            "resultType": "matrix" if "query_range" in self.path else "vector",
            "result": [] if "query_range" in self.path else result}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@contextmanager
def answers(mode: str) -> Iterator[str]:
    _Answers.mode, _Answers.seen = mode, []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Answers)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_why_prometheus_nan_quantiles_with_finished_requests_are_unknown(
        tmp_path: Path) -> None:
    """Before: P99 NaN over 17,849 finished requests was read as no series at all."""
    with answers("nan") as url, replay(NAME, tmp_path) as (_server, kubeconfig):
        run = run_cli("scan", "--kubeconfig", str(kubeconfig), "-o", "json",
                      "--prometheus", url, env=AT)
    step = _step5(run.json())
    assert step["verdict"] == "unknown", step
    assert any("e2e_latency_p99 is NaN" in e and "no +Inf bucket" in e
               for e in step["evidence"]), step
    assert not any("has no vLLM series" in e for e in step["evidence"]), step


def test_why_prometheus_oversized_answer_cuts_the_other_queries_short(
        tmp_path: Path) -> None:
    """Before: every one of the 54 queries was still sent after the first answer over the
    8 MiB bound (10 s and 385 MB where 1.2 s and 66 MB would do)."""
    with answers("huge") as url, replay(NAME, tmp_path) as (_server, kubeconfig):
        run = run_cli("scan", "--kubeconfig", str(kubeconfig), "-o", "json",
                      "--prometheus", url, env=AT)
    assert run.code == 0, run.stderr
    failures = [u for u in run.json()["unreadable"] if u["what"].startswith("Prometheus")]
    assert len(failures) == 1 and "larger than 8 MiB" in failures[0]["reason"], failures
    assert "queries were not sent" in failures[0]["reason"]
    assert len(_Answers.seen) <= 1 + 4, len(_Answers.seen)  # the first, and those in flight


def test_why_prometheus_answers_before_a_timeout_are_kept(tmp_path: Path) -> None:
    """Before: once a query timed out, the answers already received (here every latency
    number; the charts' range queries timed out) were dropped and the report fell back to
    the one scrape, as if Prometheus had said nothing."""
    with answers("slow-charts") as url, replay(NAME, tmp_path) as (_server, kubeconfig):
        run = run_cli("scan", "--kubeconfig", str(kubeconfig), "-o", "json",
                      "--prometheus", url, "--request-timeout", "2s", env=AT)
    assert run.code in (0, 1), run.stderr
    report = run.json()
    step = _step5(report)
    assert any("P99 4.25s" in e and "17849 requests" in e and "Prometheus, last 30m" in e
               for e in step["evidence"]), step
    failures = [u for u in report["unreadable"] if u["what"].startswith("Prometheus")]
    assert len(failures) == 1 and "stopped answering" in failures[0]["what"], failures
