"""One port for Prometheus and for people: /metrics, /report(.json|.md), /healthz, /readyz.

/metrics is the exposition of the last complete cycle of every cluster
(``exposition``); /report, /report.json and /report.md are that cycle's
report, rendered by the same writers as ``scan`` (several clusters: one
report with a section per cluster). /healthz says the process serves;
/readyz says every cluster has a complete report to serve. Only GET and
HEAD are answered.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from triage.report import writers
from triage.report.clusters import ClusterReport
from triage.report.clusters import render as render_sections
from triage.watch.cycle import ClusterWatch

_FORMATS = {"/report": ("html", "text/html; charset=utf-8"),
            "/report.html": ("html", "text/html; charset=utf-8"),
            "/report.json": ("json", "application/json"),
            "/report.md": ("markdown", "text/markdown; charset=utf-8")}


def render_report(clusters: list[ClusterWatch], fmt: str) -> str | None:
    """The served report in ``fmt``; None before the first complete cycle."""
    reports = [(w.status.name, w.served_report()) for w in clusters]
    if len(reports) == 1:
        report = reports[0][1]
        return None if report is None else writers()[fmt](report, False)
    if all(r is None for _name, r in reports):
        return None
    return render_sections([ClusterReport(name, r, "" if r is not None else
                                          "no complete cycle yet")
                            for name, r in reports], fmt)


class WatchServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], clusters: list[ClusterWatch],
                 registry: CollectorRegistry, alive: Callable[[], bool]) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler)
        self.clusters = clusters
        self.registry = registry
        self.alive = alive
        self.lock = threading.Lock()  # one scrape or render at a time: bounded memory


class _Handler(BaseHTTPRequestHandler):
    server: WatchServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # probes and scrapes every few seconds are not news

    def _send(self, code: int, body: bytes, content_type: str,
              headers: dict[str, str] | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].split("#", 1)[0]
        srv = self.server
        if path == "/metrics":
            encoder, content_type = choose_encoder(self.headers.get("Accept", ""))
            with srv.lock:
                body = encoder(srv.registry)
            self._send(200, body, content_type)
        elif path in _FORMATS:
            fmt, content_type = _FORMATS[path]
            with srv.lock:
                text = render_report(srv.clusters, fmt)
            if text is None:
                self._send(503, b"no complete triage cycle yet\n", "text/plain; charset=utf-8",
                           {"Retry-After": "10"})
                return
            stale = [w.status.name for w in srv.clusters if not w.status.last_cycle_ok]
            extra = {"X-Vllm-Triage-Stale": ",".join(stale)} if stale else None
            self._send(200, text.encode("utf-8"), content_type, extra)
        elif path == "/healthz":
            if srv.alive():
                self._send(200, b"ok\n", "text/plain; charset=utf-8")
            else:
                self._send(500, b"a triage loop has stopped\n", "text/plain; charset=utf-8")
        elif path == "/readyz":
            waiting = [w.status.name for w in srv.clusters if w.status.last_good is None]
            if waiting:
                self._send(503, f"no complete triage cycle yet: {', '.join(waiting)}\n".encode(),
                           "text/plain; charset=utf-8")
            else:
                self._send(200, b"ok\n", "text/plain; charset=utf-8")
        elif path == "/":
            self._send(200, b'<!DOCTYPE html><html><body><h1>vllm-triage watch</h1><ul>'
                       b'<li><a href="/report">report</a> (<a href="/report.json">json</a>, '
                       b'<a href="/report.md">markdown</a>)</li><li><a href="/metrics">'
                       b"metrics</a></li></ul></body></html>\n", "text/html; charset=utf-8")
        else:
            self._send(404, b"not found\n", "text/plain; charset=utf-8")

    def _refuse(self) -> None:
        self.close_connection = True
        self._send(405, b"only GET\n", "text/plain; charset=utf-8", {"Allow": "GET, HEAD"})

    do_POST = do_PUT = do_PATCH = do_DELETE = _refuse
