"""Issue 16, "Prometheus": a histogram without +Inf is unknown with the reason, never a
pass; after an oversized answer or a timeout the other queries are not sent; NaN and Inf
are named as such, not read as "no vLLM series"."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

from tests.conftest import replay, run_cli
from tests.fixturekit import copy_fixture
from tests.test_prometheus import AT, NAME

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
            value = "NaN"
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
