"""Names from the cluster made safe as parts of a file name."""

from __future__ import annotations

import regex

_UNSAFE = regex.compile(r"[^A-Za-z0-9_.-]+")


def safe_file_part(text: str) -> str:
    """Kubernetes names are DNS labels; anything else cannot name a path outside DIR."""
    part = _UNSAFE.sub("_", text).strip(".") or "_"
    return part[:100]
