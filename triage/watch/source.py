"""Where one cluster's cycles read from: its connection, made at the first cycle and
again after it failed, and collectors whose reads stop at once when the watch stops.

A context whose credentials cannot be loaded (a client certificate gone, an exec
plugin that fails) or whose API server cannot be reached is one failing cluster,
tried again every interval; the other clusters' loops go on.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from triage.collect.live import (
    Connection,
    LiveCollector,
    Options,
    Reader,
    ReadError,
    connect,
    transport,
)
from triage.collect.live.podwatch import PodWatcher
from triage.safety.shell import KubectlTarget


class StoppableReader(Reader):
    """The collector's reader, refusing every new request once ``stopped`` is set."""

    def __init__(self, conn: Connection, timeout: float, max_bytes: int,
                 stopped: threading.Event) -> None:
        super().__init__(conn, timeout, max_bytes)
        self.stopped = stopped

    def fetch(self, path: str, query: dict[str, Any] | None = None,
              accept: str = "application/json", cap: int | None = None, keep: str = "head",
              ring: int = 0, fail_over_cap: bool = True) -> transport.Body:
        if self.stopped.is_set():
            raise ReadError(None, "not read: the watch is stopping", "cancelled")
        return super().fetch(path, query, accept, cap, keep, ring, fail_over_cap)


class LiveSource:
    def __init__(self, kubeconfig: str | None, context: str | None, timeout: float,
                 options: Callable[[Connection], Options],
                 cluster_name: str | None = None) -> None:
        self.kubeconfig = kubeconfig
        self.context = context
        self.cluster_name = cluster_name
        self.timeout = timeout
        self.options = options
        self.conn: Connection | None = None
        self.stopped = threading.Event()
        self._lock = threading.Lock()

    def connection(self) -> Connection:
        """The connection, made once it can be (a failure raises, and the next cycle tries
        again); kept after that: tokens refresh in it."""
        with self._lock:
            if self.conn is None:
                conn = connect(self.kubeconfig, self.context, self.timeout)
                if not conn.kubectl.context and self.cluster_name:
                    # In a pod there is no context: the commands name the cluster by the
                    # name it was given (--cluster-name), the context people reach it by.
                    conn.kubectl = KubectlTarget(self.cluster_name)
                self.conn = conn
            return self.conn

    def collector(self) -> LiveCollector:
        conn = self.connection()
        collector = LiveCollector(conn, self.options(conn))
        collector.reader = StoppableReader(conn, collector.opts.request_timeout,
                                           collector.opts.max_json_bytes, self.stopped)
        return collector

    def watcher(self, collector: LiveCollector, poke: Callable[[str], None]) -> PodWatcher:
        opts = collector.opts
        ns = None if opts.all_namespaces else opts.namespace
        return PodWatcher(collector.conn, ns, opts.selector, poke)

    def stop(self) -> None:
        """Cut every read: new ones fail at once, the sockets of those in flight are shut."""
        self.stopped.set()
        transport.WATCHDOG.kill_all()
