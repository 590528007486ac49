"""Code the program makes at every start, kept between runs instead.

- The standard library's ``re`` parses and compiles a pattern in Python before its C
  engine (``_sre``) gets the result, a list of opcodes. The modules a short ``analyze``
  imports compile a few dozen patterns at import (PyYAML's reader, resolver and
  constructor, ``json``, the log engine's byte patterns): the same opcodes every time.
  As ``triage/lazyregex.py`` does for ``regex``, they are kept, keyed by the pattern and
  its flags, and handed to ``_sre`` directly next run; ``_sre`` checks what it is given.
- ``dataclasses`` writes each class's ``__init__``, ``__repr__``, ``__eq__``, ``__hash__``
  (and a frozen one's ``__setattr__`` and ``__delattr__``) as source text and compiles it:
  about 50 classes made at import, the same texts every time. The code objects compiled
  from those texts are kept, keyed by the text, and run instead of compiling it again.

Both files are in the user's cache directory, named by the interpreter's exact version
(and ``_sre``'s magic number), read only when the user owns them and nobody else may write
them (a code object is run: the same trust as a ``.pyc``). Anything unexpected (a damaged
or foreign file) is a plain compile.

Installed by the program only (``triage.cli`` run as ``vllm-triage``), never when another
program imports the package.
"""

from __future__ import annotations

import atexit
import importlib
import marshal
import sys
import threading
import types
from pathlib import Path
from typing import Any

from triage.speed.cache import CompileRecorder, cache_dir, read_own, write_atomically

_CODE: dict[tuple[type, str | bytes, int], tuple[Any, ...]] = {}
_NEW: dict[tuple[type, str | bytes, int], tuple[Any, ...]] = {}
_LOCK = threading.Lock()
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
    return cache_dir() / f"re-{_interpreter()}-{magic}.marshal"


def dataclass_file() -> Path:
    return cache_dir() / f"dataclass-{_interpreter()}.marshal"


def _interpreter() -> str:
    return f"{sys.implementation.cache_tag}-{sys.version.split()[0]}"


def install() -> None:
    """Compile through the kept code from now on; this run's new compiles are added to
    the file when the process exits."""
    if _INSTALLED:
        return
    module = _compiler()
    real_compile, real_sre = module.compile, module._sre
    if isinstance(real_sre, CompileRecorder):
        return
    try:
        loaded = read_own(code_file())
        _CODE.update({(bytes if isinstance(p, bytes) else str, p, int(f)): tuple(a)
                      for (p, f), a in loaded.items()})
    except Exception:  # absent, damaged, or from another Python
        _CODE.clear()

    recorder = CompileRecorder(real_sre)

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
        recorder.seen.args = None
        compiled = real_compile(pattern, flags)
        seen = getattr(recorder.seen, "args", None)
        if seen is not None and seen[0] == pattern:
            # The opcodes and flags are int subclasses (named constants): plain ints here.
            record = tuple(int(a) if isinstance(a, int) else
                           [int(c) for c in a] if isinstance(a, list) else a for a in seen)
            try:
                marshal.dumps(record)
            except ValueError:
                return compiled
            with _LOCK:
                if not _NEW and not _NEW_FUNCTIONS:
                    atexit.register(_save)
                _NEW[key] = record
        return compiled

    module._sre = recorder
    module.compile = compile
    _INSTALLED.append((module, real_compile, real_sre))
    _install_dataclasses()


def uninstall() -> None:
    """Back to the standard library's own compile (tests)."""
    if _INSTALLED:
        module, real_compile, real_sre = _INSTALLED.pop()
        module.compile, module._sre = real_compile, real_sre
        import dataclasses

        vars(dataclasses).pop("exec", None)


_FUNCTIONS: dict[str, Any] = {}  # dataclasses' source text: its code object
_NEW_FUNCTIONS: dict[str, Any] = {}


def _install_dataclasses() -> None:
    """dataclasses calls ``exec(text, globals, namespace)`` for every method it writes; a
    module global named ``exec`` is found before the built-in one."""
    import dataclasses

    try:
        loaded = read_own(dataclass_file())
        _FUNCTIONS.update({text: code for text, code in loaded.items()
                           if isinstance(text, str) and isinstance(code, types.CodeType)})
    except Exception:  # absent, damaged, or from another Python
        _FUNCTIONS.clear()
    real_exec = exec

    def kept_exec(source: Any, globals: Any = None, locals: Any = None) -> None:
        if isinstance(source, str):
            code = _FUNCTIONS.get(source) or _NEW_FUNCTIONS.get(source)
            if code is None:
                code = compile(source, "<string>", "exec")  # as exec(source) compiles it
                with _LOCK:
                    if not _NEW and not _NEW_FUNCTIONS:
                        atexit.register(_save)
                    _NEW_FUNCTIONS[source] = code
            source = code
        real_exec(source, globals, locals)

    dataclasses.exec = kept_exec  # type: ignore[attr-defined]


def _save() -> None:
    """Add this run's compiles to the files (replaced atomically; a read-only home is
    fine). What a run makes from its input would grow a file without bound: past
    _MAX_KEPT entries, a file keeps only this run's."""
    with _LOCK:
        if _NEW:
            kept = {**_CODE, **_NEW} if len(_CODE) + len(_NEW) <= _MAX_KEPT else dict(_NEW)
            write_atomically(code_file(), marshal.dumps(
                {(p, f): a for (_, p, f), a in kept.items()}))
        if _NEW_FUNCTIONS:
            functions = {**_FUNCTIONS, **_NEW_FUNCTIONS}
            if len(functions) > _MAX_KEPT:
                functions = dict(_NEW_FUNCTIONS)
            write_atomically(dataclass_file(), marshal.dumps(functions))
