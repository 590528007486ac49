"""One GET of an API path within --request-timeout and a byte cap (``Reader``), and a
list read page by page as kubectl reads it, the next page asked for while this one is
parsed."""

from __future__ import annotations

import json
import threading
import time
import zlib
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import urllib3

from triage.collect import ClusterUnreachable
from triage.collect.live import transport
from triage.collect.live.errors import (
    ReadError,
    _network_reason,
    _one_line,
    _status_reason,
    _tls_reason,
)
from triage.collect.live.kubeconfig import Connection
from triage.collect.logtail import size_label
from triage.logs import decode
from triage.snapshot import Obj

# kubectl's --chunk-size: the page size a real API server is used to being asked for.
PAGE_SIZE = 500
MAX_JSON_BYTES = 128 * 1024 * 1024  # one API answer (a list)
_ERROR_BODY_BYTES = 64 * 1024
_MAX_RETRIES_429 = 3


class Reader:
    """GET one API path and return its body; every failure becomes a ReadError.

    Each request, with its retries after a 429, ends within ``timeout`` wall
    seconds (transport.deadline) and reads at most its byte cap; a redirect
    is a failed read, never content; an error answer's text is read bounded.
    """

    def __init__(self, conn: Connection, timeout: float,
                 max_bytes: int = MAX_JSON_BYTES) -> None:
        self.api = conn.api
        self.pool = conn.api.rest_client.pool_manager
        self.timeout = timeout
        self.max_bytes = max_bytes

    def fetch(self, path: str, query: dict[str, Any] | None = None,
              accept: str = "application/json", cap: int | None = None, keep: str = "head",
              ring: int = 0, fail_over_cap: bool = True) -> transport.Body:
        params = [(k, v) for k, v in (query or {}).items() if v is not None]
        cap = self.max_bytes if cap is None else cap
        try:
            # The client's own serializer adds the credentials (bearer token,
            # exec plugin token refresh) exactly as its typed methods would.
            _, url, headers, _, _ = self.api.param_serialize(
                "GET", path, query_params=params, header_params={"Accept": accept},
                auth_settings=["BearerToken"],
            )
        except ClusterUnreachable:  # the exec plugin's token refresh hung or failed
            raise
        except Exception as exc:  # a credential refresh (exec plugin) that failed
            raise ReadError(None, f"cannot get credentials: {_one_line(str(exc))}",
                            "tls") from None
        headers["Accept-Encoding"] = "identity"
        resp: Any = None
        complete = False
        with transport.deadline(self.timeout) as scope:
            try:
                for attempt in range(_MAX_RETRIES_429 + 1):
                    left = max(0.05, scope.remaining())
                    resp = self.pool.request(
                        "GET", url, headers=headers, preload_content=False, redirect=False,
                        retries=False, decode_content=False,
                        timeout=urllib3.Timeout(connect=left, read=left))
                    if resp.status == 429 and attempt < _MAX_RETRIES_429:
                        wait = transport.retry_after(resp.headers.get("Retry-After"))
                        wait = 1.0 if wait is None else wait
                        resp.close()
                        resp.release_conn()
                        if wait < scope.remaining() - 0.1:
                            time.sleep(wait)
                            continue
                        raise ReadError(429, f"429 Too Many Requests: the API server asks to "
                                        f"retry after {wait:g}s, past --request-timeout "
                                        f"{self.timeout:g}s")
                    break
                status = resp.status
                if 300 <= status < 400:
                    where = resp.headers.get("Location") or "elsewhere"
                    raise ReadError(status, f"{status} redirect to {_one_line(where)[:200]}: not "
                                    "followed (the API server answers reads itself)", "protocol")
                if status >= 400 or status < 200:
                    body = transport.read_body(resp, _ERROR_BODY_BYTES)
                    raise ReadError(status, _status_reason(status, body.data))
                got = transport.read_body(resp, cap, keep, ring, fail_over_cap)
                complete = got.complete
                return got
            except ReadError:
                raise
            except transport.BodyTooLarge as exc:
                raise ReadError(None, f"the answer is larger than {size_label(exc.limit)}; "
                                "not read", "size") from None
            except transport.UnsupportedEncoding as exc:
                raise ReadError(None, f"the answer is compressed as {str(exc)[:40]!r}, which "
                                "this tool does not decode", "protocol") from None
            except zlib.error:
                raise ReadError(None, "the answer's compressed body is corrupt",
                                "protocol") from None
            except (urllib3.exceptions.HTTPError, OSError) as exc:
                if time.monotonic() >= scope.deadline - 0.01:
                    raise ReadError(None, f"timed out: no complete answer within "
                                    f"--request-timeout {self.timeout:g}s", "timeout") from None
                tls = _tls_reason(exc)
                if tls:
                    raise ReadError(None, tls, "tls") from None
                raise ReadError(None, _network_reason(exc, self.timeout), "network") from None
            finally:
                # Back to the pool only after the deadline no longer applies to
                # it; a body not read to its end closes the connection.
                if resp is not None:
                    if not complete:
                        resp.close()
                    scope_tokens = list(scope.tokens)
                    scope.tokens.clear()
                    for token in scope_tokens:
                        transport.WATCHDOG.release(token)
                    resp.release_conn()

    def get(self, path: str, query: dict[str, Any] | None = None, accept: str = "application/json",
            cap: int | None = None) -> bytes:
        return self.fetch(path, query, accept, cap=cap).data

    def list_items(self, path: str, query: dict[str, Any] | None = None,
                   keep: Callable[[list[Any]], list[Obj]] | None = None,
                   on_version: Callable[[str], None] | None = None) -> list[Obj]:
        """Every item of a list, page by page as kubectl reads it (``limit`` and
        ``continue``), with ``keep`` applied to each page before the next is parsed;
        ``on_version`` is told the list's resourceVersion (its first page's: every page
        of a list is read at that version).

        A continue token the API server no longer honours (410 Expired: the
        list's resourceVersion was compacted away) starts the list over once,
        as client-go's pager does; a second expiry is a failed read saying so.
        """
        restarted = False
        # The next page is asked for as soon as this one's bytes are in (its continue
        # token is read from the answer's head), so the API server prepares and sends it
        # while this one is parsed and selected: one page ahead, read in order.
        while True:
            kept: list[Obj] = []
            token: str | None = None
            coming: tuple[str, Future[bytes]] | None = None
            try:
                while True:
                    if coming is not None and coming[0] == token:
                        body = coming[1].result()
                    else:
                        body = self.get(path, {**(query or {}), "limit": PAGE_SIZE,
                                               "continue": token})
                    coming = None
                    early = _early_continue(body)
                    if early:
                        coming = (early, _ahead(
                            self.get, path, {**(query or {}), "limit": PAGE_SIZE,
                                             "continue": early}))
                    page = self._parse(path, body)
                    del body
                    items = page.pop("items", None)
                    items = items if isinstance(items, list) else []
                    kept += keep(items) if keep is not None else [
                        i for i in items if isinstance(i, dict)]
                    del items  # before the next page: one page parsed at a time
                    list_meta = page.get("metadata")
                    list_meta = list_meta if isinstance(list_meta, dict) else {}
                    if token is None and on_version is not None:
                        on_version(str(list_meta.get("resourceVersion") or ""))
                    # The parsed answer decides; a page asked for with another
                    # token (a head read wrongly) is dropped, never used.
                    token = str(list_meta.get("continue") or "")
                    if not token:
                        return kept
            except ReadError as exc:
                if exc.status != 410 or token is None:
                    raise
                if restarted:
                    raise ReadError(410, "the list changed faster than it could be paged: "
                                    "its continue token expired (410 Expired) again after "
                                    f"the list was started over ({exc.reason})") from None
                restarted = True

    def get_json(self, path: str, query: dict[str, Any] | None = None) -> Obj:
        return self._parse(path, self.get(path, query))

    @staticmethod
    def _parse(path: str, body: bytes) -> Obj:
        try:
            data = json.loads(body)
        except (ValueError, RecursionError):
            raise ReadError(None, f"the answer to {path} is not JSON "
                            f"({_one_line(decode(body[:80]))!r}...)", "protocol") from None
        if not isinstance(data, dict):
            raise ReadError(None, f"the answer to {path} is a JSON {type(data).__name__}, not an "
                            "object", "protocol")
        return data


def _ahead(get: Callable[[str, dict[str, Any]], bytes], path: str,
           query: dict[str, Any]) -> Future[bytes]:
    """``get(path, query)`` on a thread of its own. A daemon: a page asked for ahead and
    never used (the list failed, or was interrupted) ends on its own deadline, and the
    process does not wait for it to exit."""
    done: Future[bytes] = Future()

    def run() -> None:
        try:
            done.set_result(get(path, query))
        except BaseException as exc:  # handed to the reader of the page
            done.set_exception(exc)
    threading.Thread(target=run, name="list-ahead", daemon=True).start()
    return done


_HEAD_BYTES = 4096  # of a list's answer, where its metadata (and continue token) is


def _early_continue(body: bytes) -> str | None:
    """The continue token of a list's answer, read from its head before the whole answer
    is parsed (an API server writes ``metadata`` before ``items``); None when it is not
    there. Only a guess to ask for the next page early: the parsed answer decides."""
    head = body[:_HEAD_BYTES]
    at = head.find(b'"metadata"')
    items = head.find(b'"items"')
    if at < 0 or 0 <= items < at:
        return None
    colon = head.find(b":", at + len(b'"metadata"'))
    if colon < 0:
        return None
    try:
        text = head[colon + 1:].decode("utf-8", "ignore").lstrip()
        found, _ = json.JSONDecoder().raw_decode(text)
    except (ValueError, RecursionError):
        return None
    token = found.get("continue") if isinstance(found, dict) else None
    return token if isinstance(token, str) and token else None
