"""The tool's own files between runs: ``$XDG_CACHE_HOME/vllm-triage``, else
``~/.cache/vllm-triage`` (parsed pattern files, the log engine's prefilters and
Hyperscan databases). Every one is derived again when absent or unreadable."""

from __future__ import annotations

import os
from contextlib import suppress
from pathlib import Path


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "vllm-triage"


def write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` in one step, so a run beside this one never reads a
    half-written file; a read-only or full home writes nothing (the next run derives it
    again), and no temporary file is left behind."""
    import tempfile  # only when a cache file is written (tempfile brings shutil and random)

    with suppress(OSError):
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except BaseException:
            with suppress(OSError):
                os.unlink(tmp)
            raise
