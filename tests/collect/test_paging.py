"""The live collector's paged lists, against a Reader that answers from pages as the API
server does: the next page is asked for early and each page once, a page's metadata may
come before or after its items, and a 410 Expired restarts the list once."""

from __future__ import annotations

import json
from typing import Any


class _Pages:
    """A Reader whose GETs answer from a list of pages of ``size`` items, as the API
    server pages (``head`` writes a page's bytes: metadata first, or items first)."""

    def __init__(self, total: int, size: int, head: str = "metadata", lie: bool = False,
                 expire: int = 0) -> None:
        self.total, self.size, self.head, self.lie, self.expire = total, size, head, lie, expire
        self.asked: list[str | None] = []

    def get(self, path: str, query: dict[str, Any] | None = None) -> bytes:
        from triage.collect.live import ReadError

        token = (query or {}).get("continue")
        self.asked.append(token)
        if token and self.expire:
            self.expire -= 1
            raise ReadError(410, "Expired")
        start = int(token or 0)
        end = min(start + self.size, self.total)
        meta: dict[str, Any] = {"resourceVersion": "7"}
        if end < self.total:
            meta["continue"] = str(end)
        items = json.dumps([{"metadata": {"name": f"p{i}"}} for i in range(start, end)])
        head = json.dumps(meta)
        if self.lie and "continue" in meta:  # an early metadata the later one overrides
            wrong = json.dumps({**meta, "continue": "999999"})
            return f'{{"metadata":{wrong},"items":{items},"metadata":{head}}}'.encode()
        if self.head == "items":
            return f'{{"items":{items},"metadata":{head}}}'.encode()
        return f'{{"kind":"PodList","metadata":{head},"items":{items}}}'.encode()


def _list_with(pages: _Pages) -> list[str]:
    from triage.collect.live import Reader

    reader = Reader.__new__(Reader)
    reader.get = pages.get  # type: ignore[method-assign]
    return [str(o["metadata"]["name"]) for o in reader.list_items("/api/v1/pods")]


def test_the_next_page_is_asked_for_early_and_each_page_once() -> None:
    """The next page is asked for from the continue token in a page's head, before the
    page is parsed: every page once, in order, and the list whole."""
    pages = _Pages(23, 5)
    assert _list_with(pages) == [f"p{i}" for i in range(23)]
    assert pages.asked == [None, "5", "10", "15", "20"]


def test_a_page_without_metadata_in_its_head_is_paged_in_turn() -> None:
    pages = _Pages(12, 5, head="items")
    assert _list_with(pages) == [f"p{i}" for i in range(12)]
    assert pages.asked == [None, "5", "10"]


def test_a_head_token_the_parsed_answer_overrides_is_never_used() -> None:
    """The parsed answer decides the continue token: a page asked for with another one
    (a head read wrongly) is dropped, and the right page read."""
    pages = _Pages(12, 5, lie=True)
    assert _list_with(pages) == [f"p{i}" for i in range(12)]
    assert [t for t in pages.asked if t != "999999"] == [None, "5", "10"]


def test_a_410_on_a_page_asked_for_early_restarts_the_list_once() -> None:
    from triage.collect.live import ReadError

    pages = _Pages(12, 5, expire=1)
    assert _list_with(pages) == [f"p{i}" for i in range(12)]
    assert pages.asked[:3] == [None, "5", None]
    pages = _Pages(12, 5, expire=2)
    try:
        _list_with(pages)
    except ReadError as exc:
        assert exc.status == 410 and "again" in exc.reason
    else:
        raise AssertionError("a second 410 must fail the list")
