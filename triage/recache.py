"""The standard library's ``re``: compiled code kept between runs of the program.

``re`` parses and compiles a pattern in Python before its C engine (``_sre``) gets the
result, a list of opcodes. The modules a short ``analyze`` imports compile a few dozen
patterns at import (PyYAML's reader, resolver and constructor, ``json``, the log
engine's byte patterns): about a tenth of the run, the same opcodes every time. As
``triage/lazyregex.py`` does for ``regex``, the opcodes are kept in the user's cache
directory, keyed by the interpreter (its exact version and ``_sre``'s magic number), the
pattern and its flags, and handed to ``_sre`` directly next run. Anything unexpected (a
damaged or foreign file, another interpreter) is a plain compile.

Installed by the program only (``triage.cli`` run as ``vllm-triage``), never when another
program imports the package.
"""

from __future__ import annotations

import atexit
import importlib
import marshal
import sys
import threading
from pathlib import Path
from typing import Any

from triage.cache import cache_dir, write_atomically

_CODE: dict[tuple[type, str | bytes, int], tuple[Any, ...]] = {}
_NEW: dict[tuple[type, str | bytes, int], tuple[Any, ...]] = {}
_LOCK = threading.Lock()
_SEEN = threading.local()
_DEBUG = 128  # re.DEBUG
_MAX_KEPT = 2000
_INSTALLED: list[tuple[Any, Any, Any]] = []  # (compiler module, its compile, its _sre)


def _compiler() -> Any:
    """The module whose ``compile`` ``re`` calls on a miss of its own cache (3.11+:
    ``re._compiler``; 3.10: ``sre_compile``)."""
    import re

    found = getattr(re, "_compiler", None)
    return found if found is not None else importlib.import_module("sre_compile")


def code_file() -> Path:
    magic = getattr(_compiler()._sre, "MAGIC", 0)
    tag = f"{sys.implementation.cache_tag}-{sys.version.split()[0]}-{magic}"
    return cache_dir() / f"re-{tag}.marshal"


class _Recorder:
    """``_sre`` as the compiler sees it, noting what each compile hands it."""

    def __init__(self, real: Any) -> None:
        self._real = real

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def compile(self, *args: Any) -> Any:
        out = self._real.compile(*args)
        _SEEN.args = args
        return out


def install() -> None:
    """Compile through the kept code from now on; this run's new compiles are added to
    the file when the process exits."""
    if _INSTALLED:
        return
    module = _compiler()
    real_compile, real_sre = module.compile, module._sre
    if isinstance(real_sre, _Recorder):
        return
    try:
        loaded = marshal.loads(code_file().read_bytes())
        _CODE.update({(bytes if isinstance(p, bytes) else str, p, int(f)): tuple(a)
                      for (p, f), a in loaded.items()})
    except Exception:  # absent, damaged, or from another Python
        _CODE.clear()

    def compile(pattern: Any, flags: Any = 0) -> Any:
        if not isinstance(pattern, (str, bytes)) or int(flags) & _DEBUG:
            return real_compile(pattern, flags)  # a parsed pattern; DEBUG prints the parse
        key = (type(pattern), pattern, int(flags))
        args = _CODE.get(key) or _NEW.get(key)
        if args is not None:
            try:
                return real_sre.compile(*args)
            except Exception:  # not what this _sre expects: compile it
                pass
        _SEEN.args = None
        compiled = real_compile(pattern, flags)
        seen = getattr(_SEEN, "args", None)
        if seen is not None and seen[0] == pattern:
            # The opcodes and flags are int subclasses (named constants): plain ints here.
            record = tuple(int(a) if isinstance(a, int) else
                           [int(c) for c in a] if isinstance(a, list) else a for a in seen)
            try:
                marshal.dumps(record)
            except ValueError:
                return compiled
            with _LOCK:
                if not _NEW:
                    atexit.register(_save)
                _NEW[key] = record
        return compiled

    module._sre = _Recorder(real_sre)
    module.compile = compile
    _INSTALLED.append((module, real_compile, real_sre))


def uninstall() -> None:
    """Back to the standard library's own compile (tests)."""
    if _INSTALLED:
        module, real_compile, real_sre = _INSTALLED.pop()
        module.compile, module._sre = real_compile, real_sre


def _save() -> None:
    """Add this run's compiles to the file (replaced atomically; a read-only home is fine)."""
    with _LOCK:
        # Patterns made at run time (from input) would grow the file without bound.
        kept = {**_CODE, **_NEW} if len(_CODE) + len(_NEW) <= _MAX_KEPT else dict(_NEW)
        merged = {(p, f): a for (_, p, f), a in kept.items()}
    write_atomically(code_file(), marshal.dumps(merged))
