"""HTTP reads that are bounded in wall time and in bytes, whatever the server does.

A socket timeout bounds each read, not a request: a server (or a pod whose
``/metrics`` the API server relays) that sends one byte a second holds a
read forever. Here every request runs under a deadline: a watchdog thread
shuts the connection's socket down when the deadline passes, which ends any
blocked connect, TLS handshake, header or body read at once. The body is
read in pieces up to a byte cap, keeping either its first or its last bytes;
a compressed body is decompressed here, bounded after decompression (a few
kilobytes of gzip can unpack to gigabytes).
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import socket
import threading
import time
import zlib
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import urllib3

CHUNK = 64 * 1024


class Watchdog:
    """Shuts down the sockets of requests whose deadline has passed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._heap: list[tuple[float, int]] = []
        self._live: dict[int, socket.socket] = {}
        self._ids = itertools.count()
        self._thread: threading.Thread | None = None

    def watch(self, sock: socket.socket, deadline: float) -> int:
        with self._lock:
            token = next(self._ids)
            self._live[token] = sock
            heapq.heappush(self._heap, (deadline, token))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="deadline-watchdog",
                                                 daemon=True)
                self._thread.start()
            self._wake.notify()
            return token

    def release(self, token: int) -> None:
        # Under the lock: once this returns, the watchdog cannot shut this
        # socket down any more (the connection may go back to the pool).
        with self._lock:
            self._live.pop(token, None)

    def kill_all(self) -> None:
        """Shut every watched socket down now (the process is being interrupted)."""
        with self._lock:
            for sock in self._live.values():
                _shutdown(sock)
            self._live.clear()

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._heap:
                    self._wake.wait()
                deadline, token = self._heap[0]
                now = time.monotonic()
                if deadline > now:
                    self._wake.wait(deadline - now)
                    continue
                heapq.heappop(self._heap)
                sock = self._live.pop(token, None)
                if sock is not None:
                    _shutdown(sock)


def _shutdown(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed by its owner
        sock.shutdown(socket.SHUT_RDWR)


WATCHDOG = Watchdog()
_local = threading.local()


@dataclass
class Scope:
    deadline: float
    tokens: list[int]
    expired: bool = False

    def remaining(self) -> float:
        return self.deadline - time.monotonic()


@contextmanager
def deadline(seconds: float) -> Iterator[Scope]:
    """Everything this thread sends or reads inside the block ends by ``seconds`` from now."""
    scope = Scope(time.monotonic() + seconds, [])
    previous = getattr(_local, "scope", None)
    _local.scope = scope
    try:
        yield scope
    finally:
        _local.scope = previous
        for token in scope.tokens:
            WATCHDOG.release(token)
        if time.monotonic() >= scope.deadline:
            scope.expired = True


def _attach(conn: Any) -> None:
    scope: Scope | None = getattr(_local, "scope", None)
    handle = getattr(conn, "_deadline_handle", None)
    if scope is not None and handle is not None:
        scope.tokens.append(WATCHDOG.watch(handle, scope.deadline))


class _DeadlineMixin:
    """A connection whose socket the watchdog can shut down from another thread.

    It keeps a duplicate of the socket's descriptor: shutting that down ends
    the connection (TLS or not, even mid-handshake, when the original socket
    object has been wrapped), and closing it later leaves the connection alone.
    """

    _deadline_handle: socket.socket | None = None

    def _new_conn(self) -> socket.socket:
        sock: socket.socket = super()._new_conn()  # type: ignore[misc]
        self._close_handle()
        self._deadline_handle = sock.dup()
        _attach(self)
        return sock

    def request(self, *args: Any, **kwargs: Any) -> Any:
        _attach(self)
        return super().request(*args, **kwargs)  # type: ignore[misc]

    def close(self) -> None:
        try:
            super().close()  # type: ignore[misc]
        finally:
            self._close_handle()

    def _close_handle(self) -> None:
        handle, self._deadline_handle = self._deadline_handle, None
        if handle is not None:
            handle.close()


_DEADLINE_POOLS: dict[type, type] = {}


def _deadline_pool(pool_cls: type) -> type:
    """``pool_cls`` with a deadline-aware connection class (kept per pool class, so a
    SOCKS or other proxy pool stays what it is and only learns the deadline)."""
    conn_cls = pool_cls.ConnectionCls  # type: ignore[attr-defined]
    if issubclass(conn_cls, _DeadlineMixin):
        return pool_cls  # installed already
    if pool_cls not in _DEADLINE_POOLS:
        deadline_conn = type(f"Deadline{conn_cls.__name__}", (_DeadlineMixin, conn_cls), {})
        _DEADLINE_POOLS[pool_cls] = type(f"Deadline{pool_cls.__name__}", (pool_cls,),
                                         {"ConnectionCls": deadline_conn})
    return _DEADLINE_POOLS[pool_cls]


def install(pool_manager: Any) -> None:
    """Make a urllib3 PoolManager (or ProxyManager) open deadline-aware connections."""
    pool_manager.clear()
    pool_manager.pool_classes_by_scheme = {
        scheme: _deadline_pool(cls) for scheme, cls in pool_manager.pool_classes_by_scheme.items()}


class BodyTooLarge(Exception):
    def __init__(self, limit: int) -> None:
        super().__init__(f"larger than {limit:,} bytes")
        self.limit = limit


class UnsupportedEncoding(Exception):
    pass


@dataclass
class Body:
    data: bytes
    total: int  # bytes of (decoded) body seen, kept or not
    complete: bool  # the whole body arrived (False: stopped at the cap)


def read_body(resp: Any, cap: int, keep: str = "head", ring: int = 0,
              fail_over_cap: bool = False) -> Body:
    """Read ``resp``'s body, decoding gzip/deflate, never holding more than needed.

    ``keep="head"``: the first ``cap`` bytes; one more byte shows whether the
    body was longer (``complete`` False), or with ``fail_over_cap`` raises
    BodyTooLarge. ``keep="tail"``: read up to ``cap`` bytes, keep the last
    ``ring`` of them.
    """
    encoding = str(resp.headers.get("Content-Encoding") or "identity").strip().lower()
    decoder: Any = None
    if encoding in ("gzip", "x-gzip", "deflate"):
        decoder = zlib.decompressobj(wbits=47)  # gzip or zlib header, detected
    elif encoding not in ("identity", ""):
        raise UnsupportedEncoding(encoding)
    head = bytearray()
    tail: deque[bytes] = deque()
    tail_len = 0
    total = 0
    limit = cap + 1 if keep == "head" else cap

    def take(data: bytes) -> bool:
        """Add decoded bytes; False once the cap is reached."""
        nonlocal total, tail_len
        room = limit - total
        if len(data) > room:
            data = data[:room]
        total += len(data)
        if keep == "head":
            head.extend(data)
        elif data:
            tail.append(data)
            tail_len += len(data)
            while tail and tail_len - len(tail[0]) >= ring:
                tail_len -= len(tail.popleft())
        return total < limit

    going = True
    while going:
        raw = resp.read1(CHUNK, decode_content=False) if hasattr(resp, "read1") else \
            resp.read(CHUNK, decode_content=False)
        if not raw:
            break
        if decoder is None:
            going = take(raw)
            continue
        going = take(decoder.decompress(raw, max(1, limit - total)))
        while going and decoder.unconsumed_tail:
            going = take(decoder.decompress(decoder.unconsumed_tail, max(1, limit - total)))
    if going and decoder is not None:
        take(decoder.flush())
    if keep == "tail":
        data = b"".join(tail)
        return Body(data[-ring:] if ring else b"", total, total < limit)
    over = total >= limit
    if over:
        del head[cap:]
        if fail_over_cap:
            raise BodyTooLarge(cap)
    return Body(bytes(head), min(total, cap), not over)


def retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return max(0.0, when - (now if now is not None else time.time()))


__all__ = ["WATCHDOG", "Body", "BodyTooLarge", "UnsupportedEncoding", "deadline", "install",
           "read_body", "retry_after", "urllib3"]
