"""The Hyperscan prefilter: one database per query set, in prefilter mode (a superset of
each regex: anchors and lookarounds dropped), that finds candidate lines at grep speed.
Compiled once and cached on disk; without Hyperscan every query is searched by the
pure-Python path, with the same answers."""

from __future__ import annotations

import hashlib
import importlib
import json
import os
from dataclasses import dataclass
from functools import cache
from typing import Any, ClassVar

import regex

from triage.logs.queries import Key, QuerySet
from triage.logs.repeats import _names_digits
from triage.speed.cache import cache_dir, write_atomically

hyperscan: Any
try:  # a well-kept multi-pattern engine; optional, the pure-Python path gives the same answers
    import hyperscan
except ImportError:  # pragma: no cover - exercised by forcing the fallback in tests
    hyperscan = None


@cache  # the engines of a query set's parts ask again for the same regexes
def _prefilter_pattern(pattern: str) -> str | None:
    """A regex that matches at least wherever ``pattern`` matches a message, in raw bytes.

    The message is a line without its prefix, so anchors are dropped (``^``
    is the message start, not the line start); Hyperscan's prefilter mode
    drops what else it cannot take. None when the pattern is not selective
    enough to be worth a prefilter (it would match nearly every line).
    """
    out: list[str] = []
    i, in_class = 0, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
            if pattern[i + 1:i + 2] == "^":
                out.append("[^")
                i += 2
                continue
        elif ch in "^$":
            i += 1
            continue
        out.append(ch)
        i += 1
    text = "".join(out)
    if _min_width(text) < 4:
        return None
    return text


def _min_width(pattern: str) -> int:
    try:  # the stdlib's own parser knows the pattern's minimum width
        try:
            parser: Any = importlib.import_module("re._parser")
        except ImportError:  # Python 3.10
            parser = importlib.import_module("sre_parse")
        low, _ = parser.parse(pattern).getwidth()
        return int(low)
    except Exception:  # syntax only the `regex` module knows: assume it is selective
        return 4


_LEVEL_WORDS = {"WARNING": ("WARNING", "WARN"), "ERROR": ("ERROR",), "CRITICAL": ("CRITICAL",),
                "INFO": ("INFO",), "DEBUG": ("DEBUG",)}


def _level_prefilter(levels: frozenset[str] | None) -> str | None:
    """For a query that matches nearly anything: the level words its lines must carry."""
    if levels is None or "NONE" in levels:
        return None
    words = sorted({w for lv in levels for w in _LEVEL_WORDS.get(lv, ())})
    return r"\b(?:" + "|".join(words) + r")\b" if words else None


class _Engine:
    """A query set's Hyperscan database (in prefilter mode), compiled once and cached on disk.

    ``slow`` are the queries with no prefilter (not selective, or a regex
    Hyperscan cannot take): the pure-Python path searches those.
    """

    _cache: ClassVar[dict[tuple[Any, ...], _Engine]] = {}

    def __init__(self, keys: list[tuple[str, int, frozenset[str] | None]],
                 queries: QuerySet) -> None:
        self.keys = keys
        self.db: Any = None
        self._kinds: _Kinds | None = None
        self.dirty_id = len(keys)
        if hyperscan is None or os.environ.get("VLLM_TRIAGE_NO_HYPERSCAN"):
            self.slow = set(keys)
            return
        self.db, slow = _load_or_compile(_prefilters(keys, queries))
        self.slow = {keys[i] for i in slow}

    def kinds(self, queries: QuerySet) -> _Kinds:
        """The queries split by how a block of repeated lines can decide them (made once)."""
        if self._kinds is None:
            per_line, spanning, exact, both = set(), set(), QuerySet(), QuerySet()
            for key in self.keys:
                query = queries.queries[key]
                if _names_digits(query.regex.pattern):
                    exact.add(query, queries.keep_last.get(key, 1))
                    both.add(query, queries.keep_last.get(key, 1))
                elif query.spans_lines:
                    spanning.add(key)
                    both.add(query, queries.keep_last.get(key, 1))
                else:
                    per_line.add(key)
            self._kinds = _Kinds(frozenset(per_line), frozenset(spanning),
                                 _Engine.get(exact) if exact.queries else None,
                                 _Engine.get(both) if both.queries else None)
        return self._kinds

    @classmethod
    def get(cls, queries: QuerySet) -> _Engine:
        keys = sorted(queries.queries, key=lambda k: (k[0], k[1], sorted(k[2] or ())))
        ident = (tuple(keys), bool(hyperscan is None or os.environ.get("VLLM_TRIAGE_NO_HYPERSCAN")))
        engine = cls._cache.get(ident)
        if engine is None:
            engine = cls._cache[ident] = cls(keys, queries)
        return engine


def _prefilters(keys: list[Key], queries: QuerySet) -> list[tuple[str | None, int]]:
    """Each query's prefilter and Hyperscan flags. Deriving them parses every regex
    (a large part of a small analyze's start-up), so they are cached beside the
    databases, keyed by the queries and by the code that derives them."""
    code = [_code_ident(getattr(f, "__wrapped__", f).__code__)  # a @cache'd one's own
            for f in (_prefilter_pattern, _min_width, _level_prefilter, _flags)]
    named = [(pattern, flags, None if levels is None else sorted(levels))
             for pattern, flags, levels in keys]  # a frozenset's order varies by run
    digest = hashlib.sha256(repr((named, code, getattr(hyperscan, "__version__", ""))).encode()
                            ).hexdigest()[:24]
    path = cache_dir() / f"prefilters-{digest}.json"
    try:
        return [(p, int(f)) for p, f in json.loads(path.read_text())]
    except Exception:  # absent or unreadable: derive them
        pass
    wanted = [(_prefilter_pattern(q.regex.pattern) or _level_prefilter(q.levels),
               _flags(q.regex)) for q in (queries.queries[k] for k in keys)]
    write_atomically(path, json.dumps(wanted).encode())
    return wanted


def _code_ident(code: Any) -> tuple[Any, ...]:
    """A function's bytecode and constants, nested code included (no addresses)."""
    return (code.co_code, code.co_names, tuple(
        _code_ident(c) if hasattr(c, "co_code") else c for c in code.co_consts))


@dataclass(frozen=True)
class _Kinds:
    """A block's queries, by how they are decided."""

    per_line: frozenset[Key]  # decided per distinct line (digits aside)
    spanning: frozenset[Key]  # may span lines: decided per distinct run of three lines
    exact: _Engine | None  # name digits: searched on the block's own lines
    exact_and_spanning: _Engine | None  # those and the spanning ones, when runs do not repeat


def _flags(rx: Any) -> int:
    if hyperscan is None:
        return 0
    out: int = hyperscan.HS_FLAG_PREFILTER | hyperscan.HS_FLAG_MULTILINE
    if rx.flags & regex.IGNORECASE:
        out |= hyperscan.HS_FLAG_CASELESS
    if rx.flags & regex.DOTALL:
        out |= hyperscan.HS_FLAG_DOTALL
    return out


def _compiles(pattern: str, flags: int) -> bool:
    try:
        hyperscan.Database().compile(expressions=[pattern.encode("utf-8")], ids=[0],
                                     elements=1, flags=[flags])
    except Exception:
        return False
    return True


def _load_or_compile(wanted: list[tuple[str | None, int]]) -> tuple[Any, list[int]]:
    """The database for these prefilters, and the indexes that have none.

    Compiling costs ~0.2 s; a scan during an outage should not pay it twice,
    so the database is kept in the user's cache directory, keyed by what it
    was compiled from.
    """
    digest = hashlib.sha256(repr((wanted, getattr(hyperscan, "__version__", ""))).encode()
                            ).hexdigest()[:24]
    path = cache_dir() / f"hs-{digest}.db"
    meta = path.with_suffix(".json")
    try:
        slow = [int(i) for i in json.loads(meta.read_text())["slow"]]
        db = hyperscan.loadb(path.read_bytes(), hyperscan.HS_MODE_BLOCK)
        db.scratch = hyperscan.Scratch(db)  # a loaded database comes without scratch space
        return db, slow
    except Exception:  # absent, unreadable or from another build: compile it
        pass
    exprs, ids, flags, slow = [], [], [], []
    for i, (pattern, fl) in enumerate(wanted):
        if pattern is None or not _compiles(pattern, fl):
            slow.append(i)
            continue
        exprs.append(pattern.encode("utf-8"))
        ids.append(i)
        flags.append(fl)
    # Control bytes and ANSI escapes in a block: it is cleaned, then searched again.
    exprs.append(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]|#033\[")
    ids.append(len(wanted))
    flags.append(hyperscan.HS_FLAG_SINGLEMATCH)
    db = hyperscan.Database()
    db.compile(expressions=exprs, ids=ids, elements=len(exprs), flags=flags)
    write_atomically(path, hyperscan.dumpb(db))
    write_atomically(meta, json.dumps({"slow": slow}).encode())
    return db, slow
