"""API objects as the snapshot holds them: plain dicts in the API's own shape (``Obj``),
and the two ways code reads them (``meta``, ``dig``)."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def meta(obj: Obj) -> Obj:
    m = obj.get("metadata")
    return m if isinstance(m, dict) else {}


def dig(obj: Any, path: str) -> Any:
    """Follow a dotted path (``lastState.terminated.reason``) through dicts."""
    cur = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return None
        cur = cur.get(part)
    return cur
