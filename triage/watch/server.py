"""One port for Prometheus and for people: /metrics, /report(.json|.md), /healthz, /readyz.

/metrics is the exposition of the last complete cycle of every cluster
(``exposition``); /report, /report.json and /report.md are that cycle's
report, rendered by the same writers as ``scan`` (several clusters: one
report with a section per cluster). /healthz says the process serves and
every triage loop runs (liveness); /readyz says every cluster has a complete
cycle that ended at most three intervals ago (a watch whose cycles all fail,
the API server unreachable or the credentials refused, is not ready). Only
GET and HEAD are answered.

Under a flood of slow or half-open clients every request is still answered within
``ANSWER_WITHIN`` seconds, or refused with 503: at most ``MAX_CLIENTS`` connections
are served at once (one more is answered 503 at once and closed), a connection that
sends nothing or reads nothing for ``IDLE_TIMEOUT`` seconds is closed, a request that
waits longer than ``LOCK_WAIT`` for the scrape and render lock is answered 503, and a
report is rendered once per cycle, not once per request. A client that goes away is
no error worth a traceback.
"""

from __future__ import annotations

import contextlib
import html
import socket
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, HTTPServer
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


MAX_CLIENTS = 256  # connections served at once, each in a thread of its own
IDLE_TIMEOUT = 8.0  # seconds a connection may send or read nothing
LOCK_WAIT = 8.0  # seconds a request waits for the scrape and render lock
ANSWER_WITHIN = 10.0
_BUSY = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
         b"Retry-After: 5\r\nConnection: close\r\nContent-Length: 5\r\n\r\nbusy\n")
# What a client that goes away (or never speaks) makes a read or a write raise.
_GONE = (ConnectionError, TimeoutError, socket.timeout)


class WatchServer(HTTPServer):
    """An HTTP server with a thread per connection, at most ``MAX_CLIENTS`` of them."""

    allow_reuse_address = True
    request_queue_size = 1024  # a burst of connections waits in the kernel, not in SYN retries

    def __init__(self, address: tuple[str, int], clusters: list[ClusterWatch],
                 registry: CollectorRegistry, alive: Callable[[], bool]) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler)
        self.clusters = clusters
        self.registry = registry
        self.alive = alive
        self.lock = threading.Lock()  # one scrape or render at a time: bounded memory
        self.slots = threading.BoundedSemaphore(MAX_CLIENTS)
        # The last render of each format, with what it was rendered from (kept alive, so
        # compared by identity): a report is rendered once per cycle.
        self.rendered: dict[str, tuple[tuple[Any, ...], str | None]] = {}

    def process_request(self, request: Any, client_address: Any) -> None:
        """Each connection in a thread of its own while there is a slot; else a 503 at
        once, written without waiting on the client."""
        if not self.slots.acquire(blocking=False):
            _refuse_busy(request)
            self.shutdown_request(request)
            return
        threading.Thread(target=self._serve_one, args=(request, client_address),
                         name="http-client", daemon=True).start()

    def _serve_one(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)
            self.slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away, or never spoke, is not news; anything else is one
        line on stderr, never a traceback."""
        exc = sys.exc_info()[1]
        if exc is None or isinstance(exc, _GONE):
            return
        sys.stderr.write(f"vllm-triage watch: serving a request failed: "
                         f"{type(exc).__name__}: {exc}\n")

    def render(self, fmt: str) -> str | None:
        """``render_report``, once per what it is rendered from (called under ``lock``)."""
        source = tuple((w.status.last_complete, w.status.last_partial, w.status.last_cycle,
                        w.status.last_error_at, w.unserved_reason()) for w in self.clusters)
        cached = self.rendered.get(fmt)
        if cached is not None and len(cached[0]) == len(source) and all(
                a[0] is b[0] and a[1] is b[1] and a[2:] == b[2:]
                for a, b in zip(cached[0], source, strict=True)):
            return cached[1]
        text = render_report(self.clusters, fmt)
        self.rendered[fmt] = (source, text)
        return text


def _refuse_busy(request: socket.socket) -> None:
    """503 on a connection there is no slot for: what the client sent is drained (so
    closing sends no reset that could lose the answer), nothing is waited for."""
    try:
        request.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            request.recv(65536)
        request.send(_BUSY)
    except OSError:
        pass


class _Handler(BaseHTTPRequestHandler):
    server: WatchServer
    protocol_version = "HTTP/1.1"
    # A client that connects and sends nothing, or reads nothing, holds its slot at most
    # this long per read or write.
    timeout = IDLE_TIMEOUT

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
            if not srv.lock.acquire(timeout=LOCK_WAIT):
                self._busy()
                return
            try:
                body = encoder(srv.registry)
            finally:
                srv.lock.release()
            self._send(200, body, content_type)
        elif path in _FORMATS:
            fmt, content_type = _FORMATS[path]
            if not srv.lock.acquire(timeout=LOCK_WAIT):
                self._busy()
                return
            try:
                text = srv.render(fmt)
            finally:
                srv.lock.release()
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

    def _busy(self) -> None:
        self._send(503, b"busy\n", "text/plain; charset=utf-8", {"Retry-After": "5"})

    def _refuse(self) -> None:
        self.close_connection = True
        self._send(405, b"only GET\n", "text/plain; charset=utf-8", {"Allow": "GET, HEAD"})

    do_POST = do_PUT = do_PATCH = do_DELETE = _refuse
