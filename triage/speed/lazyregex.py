"""A ``regex`` pattern compiled when it is first used, not when it is defined.

The ``regex`` module compiles in Python: a few hundred patterns compiled at start-up (the
shipped pattern files', the redaction rules') were a large part of a small ``analyze``'s
time, although most of them never run on a given input.
"""

from __future__ import annotations

import re
from typing import Any, cast

import regex


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
                self._compiled = regex.compile(self.pattern, self._flags)
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
