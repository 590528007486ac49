"""Names from the cluster made safe as parts of a file name.

A part is kept as it is only when it already is safe everywhere: letters, digits,
``_ . -``, no leading or trailing dot, not a name Windows reserves (``con``, ``nul``,
``com1``, ...), at most ``MAX_PART`` characters. Anything else is made safe and
followed by a short hash of the name as it was, so two names that differ never make
the same part: not two that share their first characters, not ``.`` and ``..``, not
``a/b`` and ``a_b``.
"""

from __future__ import annotations

import hashlib

import regex

_UNSAFE = regex.compile(r"[^A-Za-z0-9_.-]+")
# Three parts and the kind fit well within the 255 bytes every filesystem allows.
MAX_PART = 63
_HASH = 8
_RESERVED = frozenset({"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)),
                       *(f"lpt{i}" for i in range(10))})


def safe_file_part(text: str) -> str:
    """``text`` as a part of a file name: itself when safe, else made safe and marked
    with a hash of ``text`` (Kubernetes names are DNS labels: a bundle's may be anything,
    and no name can reach a path outside DIR)."""
    safe = str(_UNSAFE.sub("_", text)).strip(".")
    if safe == text and safe and len(safe) <= MAX_PART and safe.lower() not in _RESERVED:
        return safe
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH]
    return f"{(safe or '_')[:MAX_PART - _HASH - 1]}-{digest}"
