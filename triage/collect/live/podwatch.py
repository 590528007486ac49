"""Watch the vLLM pods between triage cycles, to re-triage as soon as one restarts.

The only watch the tool ever opens: pods, from the ``resourceVersion`` of the
pod list the last cycle made (so it lists nothing of its own), in the same
namespace and with the same label selector. It keeps no objects, only each
vLLM pod's restart count and readiness, and calls ``on_change`` when one of
those moves. It is bounded every way: one connection, each watch ends after
``timeout_seconds`` (the server closes it, the client's deadline enforces it),
an event line larger than ``max_event_bytes`` ends the watch, and any failure
(410 Gone, a refused watch, a broken stream) ends watching until the next
cycle's list gives a fresh ``resourceVersion``: the interval is the fallback.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import urllib3

from triage.collect.live import transport
from triage.collect.logtail import size_label
from triage.kube import workload
from triage.snapshot import Obj, meta
from triage.vllm import selection

PodState = tuple[int, bool]  # (restart count, ready)


def pod_state(pod: Obj) -> PodState:
    """What a change of triggers an early cycle: the restart count and readiness."""
    ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                for c in (pod.get("status") or {}).get("conditions") or []
                if isinstance(c, dict))
    return workload.restarts(pod), ready


@dataclass
class WatchStatus:
    """What /metrics says about the watch (read without a lock: plain values)."""

    up: bool = False
    events: int = 0
    failures: int = 0
    last_error: str = ""


class PodWatcher:
    def __init__(self, conn: Any, namespace: str | None, selector: str | None,
                 on_change: Callable[[str], None], timeout_seconds: int = 300,
                 max_event_bytes: int = 4 * 1024 * 1024) -> None:
        self.conn = conn
        self.namespace = namespace
        self.selector = selector
        self.on_change = on_change
        self.timeout_seconds = timeout_seconds
        self.max_event_bytes = max_event_bytes
        self.status = WatchStatus()
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._version = ""  # where the next watch starts; "" = wait for a cycle's list
        self._known: dict[str, PodState] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def rebase(self, resource_version: str, pods: list[Obj]) -> None:
        """A cycle listed pods at ``resource_version``: watch from there, against
        the state those pods were triaged in."""
        with self._lock:
            self._known = {str(meta(p).get("uid") or meta(p).get("name")): pod_state(p)
                           for p in pods}
            if resource_version and not self.status.up:
                self._version = resource_version
                self._wake.notify()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="pod-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            self._wake.notify()

    def _run(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                while not self._version and not self._stop.is_set():
                    self._wake.wait()
                version = self._version
            if self._stop.is_set():
                return
            try:
                self.status.up = True
                began = time.monotonic()
                self._watch(version)
                if not self._stop.is_set() and time.monotonic() - began < min(
                        10.0, self.timeout_seconds / 2):
                    # A server that ends every watch at once would be asked again and
                    # again: that is a failure too, not a reason to reconnect.
                    raise RuntimeError("the API server ended the watch at once")
            except Exception as exc:  # any failure: fall back to the interval
                with self._lock:
                    self._version = ""
                self.status.failures += 1
                self.status.last_error = " ".join(str(exc).split())[:300]
            finally:
                self.status.up = False

    def _path(self) -> str:
        if self.namespace is None:
            return "/api/v1/pods"
        return f"/api/v1/namespaces/{quote(self.namespace, safe='')}/pods"

    def _watch(self, version: str) -> None:
        query = [("watch", "1"), ("resourceVersion", version), ("allowWatchBookmarks", "true"),
                 ("timeoutSeconds", str(self.timeout_seconds))]
        if self.selector:
            query.append(("labelSelector", self.selector))
        _, url, headers, _, _ = self.conn.api.param_serialize(
            "GET", self._path(), query_params=query, header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"])
        headers["Accept-Encoding"] = "identity"
        pool = self.conn.api.rest_client.pool_manager
        # The server ends the watch after timeoutSeconds; the deadline ends it
        # a little later whatever the server does.
        with transport.deadline(self.timeout_seconds + 30):
            resp = pool.request("GET", url, headers=headers, preload_content=False,
                                redirect=False, retries=False, decode_content=False,
                                timeout=urllib3.Timeout(connect=30, read=None))
            try:
                if resp.status != 200:
                    raise RuntimeError(f"watch refused: HTTP {resp.status}")
                for event in self._events(resp):
                    if self._stop.is_set():
                        return
                    self._handle(event)
            finally:
                resp.close()
                resp.release_conn()

    def _events(self, resp: Any) -> Iterator[Obj]:
        pending = b""
        for chunk in resp.stream(64 * 1024):
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                if line.strip():
                    event = json.loads(line)
                    if isinstance(event, dict):
                        yield event
            if len(pending) > self.max_event_bytes:
                raise RuntimeError(f"a watch event is larger than "
                                   f"{size_label(self.max_event_bytes)}")

    def _handle(self, event: Obj) -> None:
        kind, obj = event.get("type"), event.get("object")
        if not isinstance(obj, dict):
            return
        if kind == "ERROR":  # 410 Gone (the version expired) and other watch errors
            raise RuntimeError(f"watch ended by the server: {obj.get('code')} "
                               f"{obj.get('reason') or ''} {obj.get('message') or ''}")
        version = str(meta(obj).get("resourceVersion") or "")
        changed = ""
        if kind != "BOOKMARK" and selection.select_pods([obj], self.selector):
            key = str(meta(obj).get("uid") or meta(obj).get("name"))
            state = pod_state(obj)
            with self._lock:
                before = self._known.get(key)
                if kind == "DELETED":
                    self._known.pop(key, None)
                else:
                    self._known[key] = state
            if before is not None and kind != "DELETED" and before != state:
                changed = (f"{meta(obj).get('namespace')}/{meta(obj).get('name')}: restarts "
                           f"{before[0]} -> {state[0]}, ready {before[1]} -> {state[1]}")
        with self._lock:
            if version:
                self._version = version
        self.status.events += 1
        if changed:
            self.on_change(changed)
