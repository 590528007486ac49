"""One port for Prometheus and for people: /metrics, /report(.json|.md), /healthz, /readyz.

/metrics is the exposition of the last complete cycle of every cluster
(``exposition``); /report, /report.json and /report.md are that cycle's
report, rendered by the same writers as ``scan`` (several clusters: one
report with a section per cluster). /healthz says the process serves and
every triage loop runs (liveness); /readyz says every cluster has a complete
cycle that ended at most three intervals ago (a watch whose cycles all fail,
the API server unreachable or the credentials refused, is not ready). Only
GET and HEAD are answered.
"""

from __future__ import annotations

import html
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from triage.clusters.report import ClusterReport
from triage.clusters.report import render as render_sections
from triage.watch.cycle import ClusterWatch
from triage.writers import writers
from triage.writers.markdown import inline

_FORMATS = {"/report": ("html", "text/html; charset=utf-8"),
            "/report.html": ("html", "text/html; charset=utf-8"),
            "/report.json": ("json", "application/json"),
            "/report.md": ("markdown", "text/markdown; charset=utf-8")}


def render_report(clusters: list[ClusterWatch], fmt: str) -> str | None:
    """The served report in ``fmt``; None before the first complete cycle. After a
    failed cycle the page says so first (the report's first warning says it too)."""
    reports = [(w.status.name, w.served_report()) for w in clusters]
    if len(reports) == 1:
        report = reports[0][1]
        text = None if report is None else writers()[fmt](report, False)
    elif all(r is None for _name, r in reports):
        text = None
    else:
        text = render_sections([ClusterReport(name, r, "" if r is not None else
                                              w.unserved_reason())
                                for w, (name, r) in zip(clusters, reports, strict=True)], fmt)
    stale = [r.warnings[0] for w, (_n, r) in zip(clusters, reports, strict=True)
             if r is not None and not w.status.last_cycle_ok]
    if text is None or not stale:
        return text
    if fmt == "html":
        banner = "".join(f'<p class="stale" style="background:#fde2e1;border:1px solid #b42318;'
                         f'padding:.5em 1em"><strong>Stale:</strong> {html.escape(s)}</p>'
                         for s in stale)
        return text.replace("<body>", "<body>\n" + banner, 1)
    if fmt == "markdown":
        return "".join(f"> **Stale:** {inline(s)}\n\n" for s in stale) + text
    return text


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
    # A client that connects and sends nothing (or drips) holds a thread for at most this.
    timeout = 30

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
                why = "".join(f"{w.status.name}: {w.unserved_reason()}\n" for w in srv.clusters)
                self._send(503, why.encode("utf-8", "replace"), "text/plain; charset=utf-8",
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
            states = [(w.status.name, *w.readiness()) for w in srv.clusters]
            if all(ready for _name, ready, _why in states):
                self._send(200, b"ok\n", "text/plain; charset=utf-8")
            else:
                why = "".join(f"{name}: {said}\n" for name, ready, said in states if not ready)
                self._send(503, why.encode("utf-8", "replace"), "text/plain; charset=utf-8")
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
