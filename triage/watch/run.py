"""Run the watch: one triage loop per cluster, one HTTP server, a clean stop on SIGTERM."""

from __future__ import annotations

import threading
from collections.abc import Callable

from triage.watch import exposition
from triage.watch.cycle import ClusterWatch
from triage.watch.server import WatchServer


def parse_listen(text: str) -> tuple[str, int]:
    """HOST:PORT as kubectl and Prometheus take it: 0.0.0.0:8080, [::]:8080, :8080."""
    host, sep, port = text.strip().rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"--listen {text!r} is not HOST:PORT (for example 0.0.0.0:8080)")
    host = host.strip("[]") or "0.0.0.0"
    return host, int(port)


def serve(clusters: list[ClusterWatch], listen: tuple[str, int], report_url: str,
          stop: threading.Event, say: Callable[[str], None]) -> None:
    """Serve until ``stop`` is set (or an interrupt arrives in the calling thread)."""
    loops = [threading.Thread(target=w.loop, args=(stop,), name=f"triage-{w.status.name}",
                              daemon=True) for w in clusters]
    server = WatchServer(listen, clusters, exposition.registry(clusters, report_url),
                         lambda: all(t.is_alive() for t in loops))
    for t in loops:
        t.start()
    http = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.5},
                            name="http", daemon=True)
    http.start()
    port = server.server_address[1]
    say(f"vllm-triage watch: serving /metrics and /report on {listen[0]}:{port} for "
        f"{', '.join(w.status.name for w in clusters)}")
    try:
        while not stop.wait(0.5):
            pass
    finally:
        stop.set()
        server.shutdown()
        server.server_close()
        # A cycle in flight ends within --request-timeout; do not hold the exit for it.
        for t in loops:
            t.join(timeout=2.0)

