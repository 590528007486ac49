"""The bounded reader under the live collector, in isolation: Retry-After, the proxy
pool class, a head within its cap or cut, a tail that keeps the last bytes, and gzip
bounded after decompression."""

from __future__ import annotations

import gzip
import io
from typing import Any

import pytest
import urllib3
from urllib3.connection import HTTPSConnection
from urllib3.connectionpool import HTTPSConnectionPool

from triage.collect.live import transport


class FakeResponse:
    def __init__(self, body: bytes, encoding: str | None = None) -> None:
        self.headers = {"Content-Encoding": encoding} if encoding else {}
        self._fp = io.BytesIO(body)

    def read1(self, amt: int, decode_content: bool = False) -> bytes:
        return self._fp.read(min(amt, 1000))  # small pieces, as a slow server gives them


def test_head_within_the_cap() -> None:
    got = transport.read_body(FakeResponse(b"x" * 5000), cap=10_000)
    assert got.data == b"x" * 5000 and got.complete


def test_head_over_the_cap_is_cut_or_refused() -> None:
    got = transport.read_body(FakeResponse(b"x" * 5000), cap=1000, fail_over_cap=False)
    assert got.data == b"x" * 1000 and not got.complete
    with pytest.raises(transport.BodyTooLarge):
        transport.read_body(FakeResponse(b"x" * 5000), cap=1000, fail_over_cap=True)


def test_tail_keeps_the_last_bytes() -> None:
    body = b"".join(b"%06d\n" % i for i in range(10_000))
    got = transport.read_body(FakeResponse(body), cap=10**6, keep="tail", ring=70)
    assert got.data == body[-70:] and got.total == len(body) and got.complete
    capped = transport.read_body(FakeResponse(body), cap=7000, keep="tail", ring=70)
    assert not capped.complete and capped.data == body[7000 - 70:7000]


def test_gzip_is_bounded_after_decompression() -> None:
    bomb = gzip.compress(bytes(64 * 2**20), 9)  # 64 MiB of zeros in ~64 KiB
    assert len(bomb) < 2**20
    with pytest.raises(transport.BodyTooLarge):
        transport.read_body(FakeResponse(bomb, "gzip"), cap=2**20, fail_over_cap=True)
    small = gzip.compress(b"vllm:num_requests_running 1\n")
    assert transport.read_body(FakeResponse(small, "gzip"), cap=2**20).data.startswith(b"vllm:")
    with pytest.raises(transport.UnsupportedEncoding):
        transport.read_body(FakeResponse(b"x", "br"), cap=10)


@pytest.mark.parametrize(("header", "seconds"), [
    ("3", 3.0), ("0", 0.0), (None, None), ("soon", None),
    ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0),
])
def test_retry_after_is_read_in_seconds_or_as_a_date(header: str | None, seconds: float | None) -> None:
    assert transport.retry_after(header) == seconds


def test_install_keeps_a_proxy_pool_class() -> None:
    """A SOCKS (or other) pool class stays itself; it only learns the deadline."""
    class ProxyConnection(HTTPSConnection):
        pass

    class ProxyPool(HTTPSConnectionPool):
        ConnectionCls = ProxyConnection

    manager: Any = urllib3.PoolManager()
    manager.pool_classes_by_scheme = {"https": ProxyPool}
    transport.install(manager)
    transport.install(manager)  # twice is harmless
    pool = manager.pool_classes_by_scheme["https"]
    assert issubclass(pool, ProxyPool) and issubclass(pool.ConnectionCls, ProxyConnection)
