"""A ``regex`` pattern compiled when it is first used, not when it is defined.

The ``regex`` module compiles in Python: a few hundred patterns compiled at start-up (the
shipped pattern files', the redaction rules') were a large part of a small ``analyze``'s
time, although most of them never run on a given input.
"""

from __future__ import annotations

import atexit
import marshal
import re
import threading
from pathlib import Path
from typing import Any, cast

import regex

from triage.speed.cache import CompileRecorder, cache_dir, read_own, write_atomically


class LazyRegex:
    """``regex.compile(pattern, flags)``, done on first use.

    ``pattern`` and ``flags`` are known without compiling (``flags`` as the compiled
    pattern gives them, with an inline global flag such as ``(?i)`` only after a
    compile); any other attribute (``search``, ``finditer``, ...) is the compiled
    pattern's.
    """

    __slots__ = ("_compiled", "_flags", "_known_flags", "pattern")

    def __init__(self, pattern: str, flags: int) -> None:
        self.pattern = pattern
        self._flags = int(flags)
        self._compiled: Any = None
        self._known_flags: int | None = None

    def compiled(self) -> Any:
        if self._compiled is None:
            try:
                self._compiled = _compile(self.pattern, self._flags)
            except regex.error as exc:
                raise ValueError(f"invalid regular expression {self.pattern!r}: {exc}") from None
        return self._compiled

    @property
    def flags(self) -> int:
        if self._known_flags is None:
            leading = _leading_flags(self.pattern) if self._compiled is None else None
            if leading is not None:
                flags = self._flags | leading
                self._known_flags = flags | _implied_flags(flags)
            else:
                self._known_flags = int(self.compiled().flags)
        return self._known_flags

    # The calls the log engine and the facts make, without __getattr__'s failed lookup.
    def search(self, *args: Any, **kwargs: Any) -> Any:
        return self.compiled().search(*args, **kwargs)

    def match(self, *args: Any, **kwargs: Any) -> Any:
        return self.compiled().match(*args, **kwargs)

    def finditer(self, *args: Any, **kwargs: Any) -> Any:
        return self.compiled().finditer(*args, **kwargs)

    def sub(self, *args: Any, **kwargs: Any) -> Any:
        return self.compiled().sub(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.compiled(), name)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, LazyRegex) or hasattr(other, "pattern")) and \
            (self.pattern, self.flags) == (getattr(other, "pattern", None),
                                           getattr(other, "flags", None))

    def __hash__(self) -> int:
        return hash((self.pattern, self._flags))

    def __reduce__(self) -> tuple[Any, ...]:
        return (LazyRegex, (self.pattern, self._flags))

    def __repr__(self) -> str:
        return f"LazyRegex({self.pattern!r}, {self._flags:#x})"


def compile(pattern: str, flags: int = 0) -> regex.Pattern[str]:
    """``regex.compile(pattern, flags)`` on first use, typed as the compiled pattern: for
    module constants, most of which a given run never uses."""
    return cast("regex.Pattern[str]", LazyRegex(pattern, flags))


def _leading_flags(pattern: str) -> int | None:
    """The global flags a pattern sets inline, when they are all in one group at its start
    (``(?i)abc``: IGNORECASE) or it sets none (0); None when only compiling can tell."""
    m = _LEADING.match(pattern)
    rest = pattern[m.end():] if m else pattern
    if _INLINE_FLAGS.search(rest):
        return None
    out = 0
    for letter in m.group(1) if m else "":
        out |= _LETTERS[letter]
    return out


_LETTERS = {"i": regex.IGNORECASE, "m": regex.MULTILINE, "s": regex.DOTALL, "x": regex.VERBOSE}
# The standard library's re for these two: `regex` compiles in Python, several times slower,
# and they run at import.
_LEADING = re.compile(r"\(\?([imsx]+)\)")

# An inline flag group that sets a flag for the whole pattern ((?i), (?s-m), not (?i:...)
# nor (?P<name>...)): the pattern's flags are then known only once it is compiled.
_INLINE_FLAGS = re.compile(r"\(\?(?!P[<=>])[a-zA-Z^-]+\)")
_IMPLIED: dict[int, int] = {}


def _implied_flags(flags: int) -> int:
    """The flags `regex` adds to a pattern compiled with ``flags`` (UNICODE, FULLCASE)."""
    if flags not in _IMPLIED:
        _IMPLIED[flags] = int(regex.compile("", flags).flags)
    return _IMPLIED[flags]


# --- compiled code, kept between runs ----------------------------------------------------
#
# `regex` parses and compiles a pattern in Python (a few milliseconds each) and hands the
# result, a list of opcodes, to its C engine. The opcodes of the patterns compiled lazily
# are kept in the user's cache directory (beside the log engine's Hyperscan databases),
# keyed by `regex`'s version, the pattern and its flags, so the next run hands them to the
# C engine directly. Anything unexpected (another `regex`, a damaged file) is a plain
# compile.

_CODE: dict[tuple[str, int], tuple[Any, ...]] | None = None
_NEW: dict[tuple[str, int], tuple[Any, ...]] = {}
_LOCK = threading.Lock()


def _code_file() -> Path:
    version = regex.__version__.replace("/", "_")
    return cache_dir() / f"regex-{version}-v{int(regex.DEFAULT_VERSION)}.marshal"


def _load_code() -> dict[tuple[str, int], tuple[Any, ...]]:
    global _CODE
    if _CODE is None:
        try:
            loaded = read_own(_code_file())
            _CODE = {(p, int(f)): tuple(a) for (p, f), a in loaded.items()}
        except Exception:  # absent, damaged, or from another Python
            _CODE = {}
    return _CODE


def _engine() -> CompileRecorder:
    from regex import _main

    current = _main._regex
    if not isinstance(current, CompileRecorder):
        current = _main._regex = CompileRecorder(current)
    return current


def _compile(pattern: str, flags: int) -> Any:
    key = (pattern, int(flags))
    with _LOCK:
        args = _load_code().get(key) or _NEW.get(key)
        engine = _engine()
    if args is not None:
        try:
            return engine.real.compile(*args)
        except Exception:  # not what this `regex` expects: compile it
            pass
    engine.seen.args = None
    compiled = regex.compile(pattern, flags)
    seen = getattr(engine.seen, "args", None)
    if seen is not None and not seen[5] and not seen[6]:  # no named lists
        record = tuple(int(a) if isinstance(a, int) else a for a in seen)  # flags are enums
        try:
            marshal.dumps(record)
        except ValueError:
            return compiled
        with _LOCK:
            if not _NEW:
                atexit.register(_save_code)
            _NEW[key] = record
    return compiled


def _save_code() -> None:
    """Add this run's compiles to the file (replaced atomically; a read-only home is fine)."""
    with _LOCK:
        merged = {**_load_code(), **_NEW}
    write_atomically(_code_file(), marshal.dumps(merged))
