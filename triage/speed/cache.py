"""The tool's own files between runs: ``$XDG_CACHE_HOME/vllm-triage``, else
``~/.cache/vllm-triage`` (parsed pattern files, compiled regexes and prefilters,
Hyperscan databases). Every one is derived again when absent or unreadable."""

from __future__ import annotations

import hashlib
import json
import marshal
import os
import threading
from collections.abc import Callable, Iterable
from contextlib import suppress
from pathlib import Path
from typing import Any


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


def derived_json(prefix: str, parts: Iterable[str], derive: Callable[[], Any],
                 keep: int = 8) -> Any:
    """What ``derive()`` gives, kept between runs as ``PREFIX-DIGEST.json`` in the cache
    directory, the digest of ``parts`` (everything the result follows from: the files'
    names and texts, the parser's version and schema): the same parts read it back, and
    anything else derives it again. Plain data only (JSON, never pickle): a file can at
    worst hold wrong data for its key, and a result JSON does not give back exactly
    (dates, non-string keys) is not kept. The ``keep`` newest files of a prefix stay."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(f"{len(part)}\0{part}\0".encode("utf-8", "surrogatepass"))
    path = cache_dir() / f"{prefix}-{digest.hexdigest()[:40]}.json"
    with suppress(OSError, ValueError):
        return json.loads(path.read_text(encoding="utf-8"))
    out = derive()
    with suppress(OSError, ValueError, TypeError, RecursionError):
        encoded = json.dumps(out)
        if json.loads(encoded) == out:  # exactly what was derived, or not kept
            write_atomically(path, encoded.encode("utf-8"))
            kept = sorted(path.parent.glob(f"{prefix}-*.json"),
                          key=lambda p: p.stat().st_mtime, reverse=True)
            for old in kept[keep:]:
                with suppress(OSError):
                    old.unlink()
    return out


def read_own(path: Path) -> Any:
    """A marshalled cache file's content, if this user alone can have written it (what is
    read may be code that runs or opcodes handed to a C engine: a ``.pyc``'s trust)."""
    with open(path, "rb") as fh:
        info = os.fstat(fh.fileno())
        if info.st_uid != os.getuid() or info.st_mode & 0o022:
            raise PermissionError(f"{path}: not this user's own")
        return marshal.loads(fh.read())


class CompileRecorder:
    """A regex engine's C module (``_sre``, or ``regex``'s ``_regex``) as its Python
    compiler sees it: everything passes through, and the arguments of this thread's last
    compile are noted in ``seen.args``, the opcodes a code cache keeps."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.seen = threading.local()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def compile(self, *args: Any) -> Any:
        out = self.real.compile(*args)
        self.seen.args = args
        return out
