"""Run the watch: one triage loop per cluster, one HTTP server, a clean stop on SIGTERM."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import regex

from triage.watch import exposition
from triage.watch.cycle import ClusterWatch
from triage.watch.server import WatchServer

# Go's time.ParseDuration, as kubectl's duration flags take it: a sequence of decimal
# numbers, each with a unit (300ms, 1.5h, 1m30s).
_GO_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0,
             "m": 60.0, "h": 3600.0}
_GO_PART = regex.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_GO_DURATION = regex.compile(r"[-+]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+")
MAX_INTERVAL = 24 * 3600.0
# How long SIGTERM waits for the loops after their reads were cut (a pod has 30 s).
STOP_GRACE = 2.0


def parse_interval(text: str, flag: str = "--interval") -> float:
    """A Go duration (30s, 1m30s, 2m, 1.5h, 500ms) over 0 and at most 24h, in seconds
    (bench/watch_memory.py runs cycles back to back with 0.01s).

    Raises ValueError with the message to print: a bare number has no unit (kubectl's
    duration flags refuse it too), 0 and negative durations are not intervals."""
    raw = text.strip()
    example = "a duration such as 30s, 1m30s or 2m"
    if regex.fullmatch(r"[-+]?(\d+(\.\d*)?|\.\d+)", raw):
        if float(raw) == 0 or raw.startswith("-"):
            raise ValueError(f"{flag} {text!r} is {'zero' if float(raw) == 0 else 'negative'}"
                             f": the time between cycles must be more than 0")
        raise ValueError(f"{flag} {text!r} has no unit: write {raw.lstrip('+')}s for seconds "
                         f"({example})")
    if not _GO_DURATION.fullmatch(raw):
        raise ValueError(f"{flag} {text!r} is not {example} (units: h, m, s, ms)")
    if raw.startswith("-"):
        raise ValueError(f"{flag} {text!r} is negative: the time between cycles must be more "
                         f"than 0")
    seconds = sum(float(n) * _GO_UNITS[u] for n, u in _GO_PART.findall(raw))
    if seconds <= 0:
        raise ValueError(f"{flag} {text!r} is zero: the time between cycles must be more than "
                         f"0")
    if seconds > MAX_INTERVAL:
        raise ValueError(f"{flag} {text!r} is over 24h")
    return seconds


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
        shutdown(clusters, loops, server)


def shutdown(clusters: list[ClusterWatch], loops: list[threading.Thread],
             server: WatchServer) -> None:
    """Stop within a couple of seconds whatever is in flight: the cycles' reads are cut
    (new ones fail at once, open sockets are shut) and not recorded, the server closes,
    and the loops get ``STOP_GRACE`` seconds to end, their reads being cut again
    meanwhile (a read that started just as the first cut was made)."""
    for w in clusters:
        w.stop()
    closing = threading.Thread(target=server.shutdown, name="http-stop", daemon=True)
    closing.start()
    deadline = time.monotonic() + STOP_GRACE
    while any(t.is_alive() for t in loops) and time.monotonic() < deadline:
        for t in loops:
            t.join(timeout=0.1)
        for w in clusters:
            w.stop()
    closing.join(timeout=max(0.1, deadline - time.monotonic()))
    server.server_close()
