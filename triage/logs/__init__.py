"""Container logs, searched in one streaming pass in bounded memory.

vLLM's lines come in several shapes (see shared reference, section 0):
``INFO 01-11 15:51:18 llm_engine.py:275] msg`` (V0),
``INFO 04-23 14:42:53 [file.py:124] msg`` (0.8-0.10),
``(EngineCore_DP0 pid=441) INFO 11-24 11:44:17 [gpu_worker.py:348] msg`` (V1),
with optional kubectl ``--timestamps``, ``[rank0]:`` prefixes, ANSI colours
and uvicorn's ``INFO:     msg``. Patterns match the *message* part of a line;
its level lets a pattern ignore advisory INFO lines.

How a log is searched (``scan``): the bytes are read in blocks cut at line
ends, so memory stays bounded whatever the log's size. Every regex the
patterns, the start-up parser and the facts use is a ``Query``; all of them
are compiled into one Hyperscan database in prefilter mode (a superset of
each regex: anchors and lookarounds dropped) that finds candidate lines at
grep speed. Only candidate lines are decoded, cleaned, split into prefix
and message, and checked with the exact ``regex`` pattern (with a timeout)
and the query's levels. Without Hyperscan (or for a regex it cannot take)
the same checks run over each block's messages with ``regex`` alone: slower,
same answers.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import re
import stat
from bisect import bisect_right
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache, cached_property
from itertools import accumulate, compress, filterfalse, islice, repeat
from operator import add, mul
from pathlib import Path
from typing import Any, ClassVar

import regex

from triage.logs import heap
from triage.speed import lazyregex
from triage.speed.cache import cache_dir, write_atomically
from triage.speed.lazyregex import LazyRegex

hyperscan: Any
try:  # a well-kept multi-pattern engine; optional, the pure-Python path gives the same answers
    import hyperscan
except ImportError:  # pragma: no cover - exercised by forcing the fallback in tests
    hyperscan = None

# A single line longer than this is cut for matching and evidence, keeping its head and
# its tail (a crash printed at the end of a huge line is read): one 10 MB line must not
# cost more than any other line.
MAX_LINE_CHARS = 4000
# The same bound on a line's bytes as a log is read (the middle is skipped as it streams).
MAX_LINE_BYTES = MAX_LINE_CHARS
BLOCK_BYTES = 8 * 1024 * 1024
# Per line and per block: no regex may run longer; a timeout makes the query unknown.
LINE_TIMEOUT_S = 0.25
BLOCK_TIMEOUT_S = 5.0
KEEP_FIRST = 3  # matches kept with their context, per query
MAX_CONTEXT = 10  # lines of context kept around them
TAIL_LINES = 32  # the last lines of every log, for tail windows and root causes
HEAD_LINES = 200  # the first lines, for when a start began
HEAD_BYTES = 64 * 1024  # kept of the first block to find them

_ANSI = lazyregex.compile(r"\x1b\[[0-9;?]*[A-Za-z]|#033\[[0-9;]*m")
_CONTROL = lazyregex.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_CONTROL_BYTES = bytes([*range(0, 9), 11, 12, *range(14, 32), 127])
_PREFIX_PARTS = r"""
    (?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)[ \t])?   # kubectl --timestamps
    (?:[ \t]*\|[ \t]*\[[^\]\n]*\][ \t])?                            # CI log wrappers
    (?:\[rank\d+\]:[ \t]*)?
    (?:\((?P<proc>[A-Za-z_][\w]*(?:[ \t]+rank=\d+)?[ \t]+pid=\d+[^)\n]*)\)[ \t]+)?  # (Proc pid=N)
    (?:\[rank\d+\]:[ \t]*)?
    (?:
        (?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)[ \t]+
        \d\d-\d\d[ \t]\d\d:\d\d:\d\d(?:\.\d+)?[ \t]+
        \[?(?P<src>[\w./<>-]+:\d+)\]?\]?[ \t]?
      |
        (?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL):[ \t]+                 # uvicorn
    )?"""
_PREFIX = lazyregex.compile(r"^" + _PREFIX_PARTS + r"(?P<msg>.*)$", regex.VERBOSE | regex.DOTALL)
# What in a pattern can match a newline: then a match may span a hard-wrapped message.
# (\S cannot: a newline is white space.)
_SPANS = lazyregex.compile(r"\\[snWDHV]|\[\^")

# A line that says when it was printed: kubectl --timestamps, or vLLM's MM-DD hh:mm:ss.
_STAMPED = lazyregex.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d|\b\d\d-\d\d \d\d:\d\d:\d\d\b")
# Its tail, led by a literal the regex engine skips to (the two digits before are checked).
_STAMP_TAIL = re.compile(rb"-\d\d[T ]\d\d:\d\d:\d\d")


def has_stamp(line: LogLine) -> bool:
    return _STAMPED.search(line.raw[:160]) is not None


# The same prefix over a whole block, for the pure-Python path: strips every
# line's prefix and keeps the line breaks, so line numbers stay put.
_PREFIX_LINES = lazyregex.compile(r"^" + _PREFIX_PARTS, regex.VERBOSE | regex.MULTILINE)


@dataclass(frozen=True, slots=True)
class LogLine:
    """One line of a log, as read and parsed."""

    number: int  # 1-based line number in the log as read
    raw: str  # the line as printed (cut to MAX_LINE_CHARS), ANSI and control bytes removed
    level: str | None  # DEBUG/INFO/WARNING/ERROR/CRITICAL, None for unprefixed lines
    process: str | None  # e.g. "EngineCore_DP0 pid=441"
    # Where the message sits in raw (offsets: the text is kept once).
    msg_start: int = 0
    msg_end: int = -1

    @property
    def message(self) -> str:
        """The line without timestamp / process / level prefixes."""
        return self.raw[self.msg_start:self.msg_end if self.msg_end >= 0 else None]


def clean(text: str) -> str:
    cleaned: str = _CONTROL.sub("", _ANSI.sub("", text))
    return cleaned


def parse_line(number: int, raw: str, cleaned: bool = False, cut: bool = True) -> LogLine:
    """One line as a LogLine. A line longer than MAX_LINE_CHARS keeps its head and its
    tail (the end of a line is where a crash is printed); ``cut=False`` for a line a log
    scan already bounded (its bytes were cut the same way)."""
    if "\r" in raw.rstrip("\r"):  # tqdm redraws with carriage returns: keep the last draw
        parts = [p for p in raw.split("\r") if p.strip()]
        raw = parts[-1] if parts else ""
    if cut and len(raw) > MAX_LINE_CHARS:
        half = MAX_LINE_CHARS // 2
        raw = f"{raw[:half]}{_cut_mark(len(raw) - 2 * half)}{raw[-half:]}"
    raw = raw if cleaned else clean(raw)
    raw = raw.rstrip("\r")
    m = _PREFIX.match(raw)
    if m is None:  # cannot happen with a trailing .*, kept for type narrowing
        return LogLine(number, raw, None, None)
    level = m.group("level")
    if level == "WARN":
        level = "WARNING"
    return LogLine(number, raw, level, m.group("proc"), m.start("msg"), m.end("msg"))


def _cut_mark(count: int, unit: str = "characters") -> str:
    return f" [... {count:,} more {unit} cut] "


def decode(data: bytes) -> str:
    """Logs are mostly UTF-8; binary garbage must not stop a scan."""
    text: str = data.decode("utf-8", errors="replace")
    return text


class LogReleased(RuntimeError):
    """A log was read again after its pod's analysis released it: a programming error
    (every query the steps and the report use is answered by the one scan)."""


@dataclass(eq=False)
class LogSource:
    """Where a log's bytes are: in memory (a live read, bounded) or in a file (a bundle)."""

    data: bytes | None = None
    path: Path | None = None
    released: bool = False

    def release(self) -> None:
        """Drop the bytes: the log has been scanned and its pod diagnosed."""
        self.data, self.released = None, True

    @classmethod
    def of(cls, text: str | bytes) -> LogSource:
        return cls(data=text.encode("utf-8", errors="replace") if isinstance(text, str)
                   else bytes(text))

    @property
    def size(self) -> int:
        if self.data is not None:
            return len(self.data)
        try:
            return self.path.stat().st_size if self.path else 0
        except OSError:
            return 0

    def blocks(self, size: int = BLOCK_BYTES) -> Iterator[bytes]:
        if self.released:
            raise LogReleased(f"log {self.path or '(read live)'} was read after its release")
        if self.data is not None:
            for start in range(0, len(self.data), size):
                yield self.data[start:start + size]
            return
        if self.path is None:
            return
        with open(self.path, "rb") as f:
            while block := f.read(size):
                yield block

    def text(self) -> str:
        """The whole log decoded (for writing bundles and small tests, not for scanning)."""
        return decode(b"".join(self.blocks()))


# --- queries --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Query:
    """A regex over line messages, counted on lines of the given levels (None: any level)."""

    regex: Any  # a compiled `regex` pattern
    levels: frozenset[str] | None = None

    def __post_init__(self) -> None:
        # ^ and $ mean a message's start and end: lines are searched a block at a time.
        # Compiled on first use (after the prefilter): most queries never run on a log.
        if not self.regex.flags & regex.MULTILINE:
            object.__setattr__(self, "regex", _multiline(self.regex.pattern, self.regex.flags))

    @property
    def key(self) -> tuple[str, int, frozenset[str] | None]:
        return (self.regex.pattern, int(self.regex.flags), self.levels)

    def counts(self, line: LogLine) -> bool:
        return self.levels is None or (line.level or "NONE") in self.levels

    @cached_property
    def one_per_line(self) -> Any:
        """The regex as a pattern that matches once per line (see ``_one_per_line``)."""
        return _one_per_line(self.regex)

    @cached_property
    def spans_lines(self) -> bool:
        """Whether a match could run over a line break (\\s, \\n, a negated class, DOTALL):
        only then are the lines before a candidate searched with it."""
        return bool(self.regex.flags & regex.DOTALL
                    or _SPANS.search(self.regex.pattern) is not None)


_MULTILINE: dict[tuple[str, int], LazyRegex] = {}


def _multiline(pattern: str, flags: int) -> LazyRegex:
    """``pattern`` with MULTILINE, compiled once on first use however many Querys hold it."""
    key = (pattern, int(flags) | regex.MULTILINE)
    if key not in _MULTILINE:
        _MULTILINE[key] = LazyRegex(*key)
    return _MULTILINE[key]


@dataclass
class QuerySet:
    """The queries one scan answers, with how many last matches each needs kept."""

    queries: dict[tuple[str, int, frozenset[str] | None], Query] = field(default_factory=dict)
    keep_last: dict[tuple[str, int, frozenset[str] | None], int] = field(default_factory=dict)

    def add(self, query: Query, keep_last: int = 1) -> Query:
        self.queries.setdefault(query.key, query)
        self.keep_last[query.key] = max(keep_last, self.keep_last.get(query.key, 0))
        return self.queries[query.key]

    def merged(self, other: QuerySet) -> QuerySet:
        out = QuerySet(dict(self.queries), dict(self.keep_last))
        for key, q in other.queries.items():
            out.add(q, other.keep_last.get(key, 1))
        return out


@dataclass
class Hit:
    """One match of a query: its line, groups and context."""

    line: LogLine
    groups: tuple[str | None, ...]  # group 0 and the regex's groups, from the message
    span: tuple[int, int]  # where group 0 is in the message
    # The nearest line at or before it that carries a time (vLLM's stamp or kubectl's
    # --timestamps): tqdm and uvicorn lines have none of their own.
    stamped: LogLine | None = None
    # The lines around it as read, parsed only when evidence asks: the numbers of the lines
    # before and after it, their bytes kept once per log (by line number, non-empty lines
    # only) however many kept matches of however many queries show them.
    context: dict[int, bytes] = field(default_factory=dict, repr=False)
    before_span: range = range(0)
    after_span: range = range(0)

    @property
    def before_raw(self) -> list[tuple[int, bytes]]:
        return [(n, self.context[n]) for n in self.before_span if n in self.context]

    @property
    def after_raw(self) -> list[tuple[int, bytes]]:
        return [(n, self.context[n]) for n in self.after_span if n in self.context]

    def keep_before(self, lines: list[tuple[int, bytes]]) -> None:
        for n, raw in lines:
            self.context.setdefault(n, raw)
        if lines:
            self.before_span = range(lines[0][0], self.line.number)

    def keep_after(self, lines: list[tuple[int, bytes]]) -> None:
        for n, raw in lines:
            self.context.setdefault(n, raw)
        if lines:
            self.after_span = range(self.line.number + 1, lines[-1][0] + 1)

    @property
    def before(self) -> list[LogLine]:
        return [_parse_raw(n, raw) for n, raw in self.before_raw]

    @property
    def after(self) -> list[LogLine]:
        return [_parse_raw(n, raw) for n, raw in self.after_raw]


def _parse_raw(number: int, raw: bytes) -> LogLine:
    """A line of a scanned block (already cut to MAX_LINE_BYTES, head and tail)."""
    return parse_line(number, decode(raw), cleaned=True, cut=False)


@dataclass
class QueryResult:
    """What a query found in one log: how many lines, the first and last."""

    count: int = 0  # lines that matched
    first: list[Hit] = field(default_factory=list)  # the first KEEP_FIRST, with context
    # The last keep_last (a list once the scan is done: a deque costs a 64-slot block each,
    # and a namespace scan holds every pod's results until the report).
    last: list[Hit] = field(default_factory=list)
    unknown: str | None = None  # why the search could not finish (a regex timeout)


@dataclass
class LogIndex:
    """What one scan of a log found: per query its matches, plus the log's size and tail."""

    source: LogSource
    queries: QuerySet
    lines: int = 0  # lines read
    tail: list[LogLine] = field(default_factory=list)  # the last TAIL_LINES non-empty lines
    # The log's first bytes (whole lines), parsed into ``head`` only when asked for.
    head_data: bytes = b""
    unreadable: str | None = None  # why the log could not be read after all
    results: dict[tuple[str, int, frozenset[str] | None], QueryResult] = field(
        default_factory=dict)

    def result(self, query: Query, keep_last: int = 1) -> QueryResult:
        """A query's result; one the scan was not asked for is searched now, on its own."""
        found = self.results.get(query.key)
        if found is None and query.key in self.queries.queries and \
                self.queries.keep_last.get(query.key, 0) >= keep_last:
            return QueryResult()  # searched for, never matched
        if found is None or len(found.last) < min(keep_last, found.count):
            extra = QuerySet()
            extra.add(query, keep_last)
            found = scan(self.source, extra).results.get(query.key) or QueryResult()
            self.results[query.key] = found
        return found

    @property
    def empty(self) -> bool:
        return not self.tail

    @property
    def head(self) -> Iterator[LogLine]:
        """The first HEAD_LINES non-empty lines (where a start began), parsed as they are
        asked for: callers usually want only the first that says something."""
        block = self._head_block
        pos: int | None = 0
        shown = 0
        while pos is not None and pos < len(block.data) and shown < HEAD_LINES:
            line = block.line(pos)
            if line.raw.strip():
                shown += 1
                yield line
            pos = block.next_start(pos)

    @cached_property
    def _head_block(self) -> _Block:
        return _Block(self.head_data, 1)


# --- the scan ---------------------------------------------------------------------------------


def _line_blocks(source: LogSource) -> Iterator[bytes]:
    """Blocks of whole lines, each ending with a newline.

    A line longer than a block keeps its head and its tail (MAX_LINE_BYTES in
    all, with a mark saying how much of its middle was dropped) and the rest
    is skipped as it streams past, so one huge line costs no more memory than
    any other and the crash printed at its end is still read. A file is read
    one buffer at a time: after the last whole line of a read it seeks back,
    rather than carrying the rest over.
    """
    half = MAX_LINE_BYTES // 2
    reader = _FileReader(source.path) if source.data is None else _MemoryReader(source.data)
    with reader:
        while data := reader.read(BLOCK_BYTES):
            if len(data) == BLOCK_BYTES:  # a big log: its blocks' copies reuse the heap
                heap.keep_freed_blocks()
            # A bare carriage return ends a line too (a log of tqdm redraws may hold no
            # newline at all); one at the very end may be the half of a \r\n.
            last = max(data.rfind(b"\n"), data.rfind(b"\r", 0, len(data) - 1))
            if last >= 0:
                if last < len(data) - 1:
                    if reader.at_end():  # the final line has no newline
                        data += b"\n"
                    else:
                        reader.back(len(data) - last - 1)
                        data = data[:last + 1]
                yield data
                del data  # before the next read: one block in memory at a time
                continue
            head, tail, total = data[:MAX_LINE_BYTES + 1], data[-half:], len(data)
            del data
            while chunk := reader.read(BLOCK_BYTES):
                found = _LINE_END.search(chunk)
                end = found.start() if found else -1
                part = chunk if end < 0 else chunk[:end]
                if len(head) <= MAX_LINE_BYTES:
                    head += part[:MAX_LINE_BYTES + 1 - len(head)]
                tail = (tail + part)[-half:]
                total += len(part)
                if end >= 0:
                    reader.back(len(chunk) - end - 1 - (chunk[end:end + 2] == b"\r\n"))
                    break
            if total <= MAX_LINE_BYTES:  # longer than a block, not than a line
                yield head + b"\n"
                continue
            yield (head[:half] + _cut_mark(total - 2 * half, "bytes").encode() + tail + b"\n")


def _by_query(found: list[tuple[int, int]]) -> dict[int, list[int]]:
    """Prefilter matches grouped: query index -> the ends of its matches, in order."""
    candidates: dict[int, list[int]] = {}
    for qid, end in found:
        candidates.setdefault(qid, []).append(end)
    return candidates


def _bounded_lines(data: bytes) -> bytes:
    """``data`` with carriage-return redraws split into lines and every line longer than
    MAX_LINE_BYTES cut to its head and its tail (one rule for both search paths).

    A bare ``\\r`` (tqdm's redraw, or a log separated by carriage returns only)
    ends a line, so the last redraw is a line of its own and a crash printed
    after 10,000 redraws is the line it is.
    """
    if b"\r" in data:
        data = _BARE_CR.sub(b"\n", data)
    # JSON lines whose strings hold line breaks (a backslash first: one byte is found
    # at memchr's speed, the two-byte search costs 7 ms a block)
    if b"\\" in data and b"\\n" in data and b'{"' in data:
        data = _JSON_RECORD.sub(_json_breaks, data)
    half = MAX_LINE_BYTES // 2
    # A line longer than MAX_LINE_BYTES holds a whole aligned window of `half` bytes with no
    # newline: a thousand finds per block rule that out, with no pass per line.
    if all(data.find(b"\n", p, p + half) >= 0 or p + half > len(data)
           for p in range(0, len(data), half)):
        return data
    out: list[bytes] = []
    pos = 0
    while pos < len(data):
        end = data.find(b"\n", pos)
        end = len(data) if end < 0 else end
        if end - pos > MAX_LINE_BYTES + 64:  # +64: a line cut once already, with its mark
            out.append(data[pos:pos + half] + _cut_mark(end - pos - 2 * half, "bytes").encode()
                       + data[end - half:end])
        else:
            out.append(data[pos:end])
        pos = end + 1
    return b"\n".join(out) + b"\n"


_BARE_CR = re.compile(rb"\r+(?!\n)")
# A JSON-lines record (a logger writing one object per line, after kubectl's time when
# read with --timestamps) with an escaped line break in it: a traceback in its message.
_JSON_RECORD = re.compile(
    rb"^(?:\d{4}-\d\d-\d\dT[\d:.]+(?:Z|[+-]\d\d:\d\d) )?\{\"[^\n]*\\n[^\n]*$", re.MULTILINE)


def _json_breaks(m: re.Match[bytes]) -> bytes:
    """A JSON record's escaped line breaks as line ends (and its escaped quotes as quotes):
    patterns see the message's lines as the lines they are, and a record longer than a line
    is cut per message line, never losing the crash at its end."""
    return m.group(0).replace(b"\\r\\n", b"\n").replace(b"\\n", b"\n").replace(
        b'\\"', b'"').replace(b"\\t", b"\t")


_LINE_END = re.compile(rb"[\r\n]")


class _FileReader:
    def __init__(self, path: Path | None) -> None:
        self.f: Any = None
        if path is None:
            return
        # Never through a link, never a FIFO or a device put there since it was listed.
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        fd = os.open(path, flags)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise OSError(f"{path}: not a regular file")
        self.f = os.fdopen(fd, "rb")

    def __enter__(self) -> _FileReader:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.f is not None:
            self.f.close()

    def read(self, size: int) -> bytes:
        return self.f.read(size) if self.f is not None else b""

    def back(self, count: int) -> None:
        if self.f is not None and count:
            self.f.seek(-count, os.SEEK_CUR)

    def at_end(self) -> bool:
        if self.f is None:
            return True
        pos: int = self.f.tell()
        end: int = self.f.seek(0, os.SEEK_END)
        self.f.seek(pos)
        return pos >= end


class _MemoryReader(_FileReader):
    def __init__(self, data: bytes) -> None:
        self.f = None
        self.data, self.pos = data, 0

    def read(self, size: int) -> bytes:
        out = self.data[self.pos:self.pos + size]
        self.pos += len(out)
        return out

    def back(self, count: int) -> None:
        self.pos -= count

    def at_end(self) -> bool:
        return self.pos >= len(self.data)


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


# What in a regex stands for digits without naming one: \d, \xNN, \uNNNN, {m,n}.
_DIGIT_FREE = lazyregex.compile(r"\\[dD]|\\x[0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}|\{\d*(?:,\d*)?\}")
_NAMES_DIGITS = lazyregex.compile(r"[0-9]|\\g<|\(\?P=|\(\?[0-9R&+-]")


def _names_digits(pattern: str) -> bool:
    """Whether a regex may tell one digit from another: a digit in it (a literal, a range, a
    back-reference) or a reference to a group. Conservative: ``[0-9]`` counts as naming."""
    return _NAMES_DIGITS.search(_DIGIT_FREE.sub("", pattern)) is not None


SPARSE_MATCHES = 64


def _positions(lines: list[bytes], groups: set[bytes], counts: Counter[bytes]
               ) -> Iterator[int]:
    """Every index of ``lines`` holding one of ``groups`` (``counts``: how many each has)."""
    for g in groups:
        at = -1
        for _ in range(counts[g]):
            at = lines.index(g, at + 1)
            yield at


def _dirty(data: bytes) -> bool:
    """Control bytes or ANSI escapes in a block: it is cleaned before it is searched."""
    return len(data.translate(None, _CONTROL_BYTES)) != len(data) or b"#033[" in data


_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
# A block is searched as repeated lines when it has at least this many lines, of no more
# than 1/REPEAT_RATIO distinct (digits aside), averaging at least REPEAT_MIN_LINE_BYTES
# (the grouping holds a list of the block's lines: bounded by a block's size then).
REPEAT_MIN_LINES = 1024
REPEAT_RATIO = 4
REPEAT_MIN_LINE_BYTES = 40
# Runs of three lines are decided per distinct run when the first RUN_SAMPLE lines' runs
# repeat so (else the block's own lines are searched for the queries that may span lines).
RUN_SAMPLE = 4096
# The verdicts kept per scan (distinct digit-free line -> the queries it matches), bounded
# by their lines' bytes: past it they are dropped after the block and gathered again.
VERDICT_BYTES = 2 * 1024 * 1024


class _Verdicts:
    """Which queries each distinct digit-free line matches, kept across a log's blocks (a
    line repeated through a log is decided once per log). A plain class: a dataclass
    costs its generated methods at every start."""

    __slots__ = ("decided", "matching", "size")

    def __init__(self) -> None:
        self.decided: set[bytes] = set()
        self.matching: dict[Key, set[bytes]] = {}
        self.size = 0  # bytes of the lines decided

    def add(self, lines: list[bytes], matched: dict[Key, set[bytes]]) -> None:
        self.decided.update(lines)
        self.size += sum(map(len, lines))
        for key, found in matched.items():
            self.matching.setdefault(key, set()).update(found)

    def settle(self, counts: Counter[bytes]) -> None:
        """After a block: past the bound, forget all but the lines this block repeated
        (``counts``: its lines'), which are the likeliest to come again; a line seen once
        (a request's own id in it) is decided anew if it does."""
        if self.size <= VERDICT_BYTES:
            return
        keep = set(compress(counts, map((1).__lt__, counts.values())))
        size = sum(map(len, keep))
        if size > VERDICT_BYTES // 2:  # repeated lines alone fill it: forget them too
            keep, size = set(), 0
        self.decided, self.size = keep, size
        self.matching = {key: found & keep for key, found in self.matching.items()}


def _alone(i: int) -> list[int]:
    return [i]


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


Key = tuple[str, int, frozenset[str] | None]

# A query with at least this many candidate lines in a block is searched in one regex
# pass over those lines (one call, one timeout) instead of one call per line.
DENSE_LINES = 16


def _one_per_line(rx: Any) -> Any:
    """``rx`` as a pattern whose matches are the first match of ``rx`` on each line
    (group 1 is ``rx``'s group 0): one ``finditer`` then visits a line once, however
    many times ``rx`` matches in it. None when ``rx`` cannot be wrapped so (it refers
    to its groups by number)."""
    pattern = rx.pattern
    flags = regex.match(r"\(\?[aiLmsux]+\)", pattern)
    body = pattern[flags.end():] if flags else pattern
    if regex.search(r"\\[1-9]|\(\?P=|\\g<|\(\?[0-9R&]", body):
        return None
    try:
        return regex.compile(r"^.*?(" + body + r")", rx.flags | regex.MULTILINE)
    except (regex.error, ValueError):
        return None


@dataclass
class _Found:
    """A query's matches in the block being scanned: counted as they are found, turned
    into Hits (line, time, context) only for the ones kept, at the block's end."""

    first: list[tuple[int, tuple[str | None, ...], tuple[int, int]]] = field(
        default_factory=list)
    last: deque[tuple[int, Any, Any]] = field(default_factory=deque)
    line: int = -1  # the last line counted, so a line counts once


class _Scan:
    """The state of one scan: results, hits still collecting context, the tail."""

    def __init__(self, source: LogSource, queries: QuerySet) -> None:
        self.index = LogIndex(source, queries)
        self.queries = queries
        self.engine = _Engine.get(queries)
        self.results: dict[Key, QueryResult] = {}
        self.index.results = self.results
        self.tail: deque[LogLine] = deque(maxlen=TAIL_LINES)
        # Hits still collecting the lines after them: (hit, where to go on in this block).
        self.waiting: list[tuple[Hit, int | None]] = []
        # The last non-empty lines of the block before, as (number, bytes).
        self.recent: deque[tuple[int, bytes]] = deque(maxlen=MAX_CONTEXT)
        self.last_stamped: LogLine | None = None  # the last stamped line of the blocks before
        self.found: dict[Key, _Found] = {}
        self.context: dict[int, bytes] = {}  # the kept matches' context lines, shared
        self.lasts: dict[Key, deque[Hit]] = {}  # each query's last matches, as they come
        self.verdicts = _Verdicts()

    def run(self) -> LogIndex:
        try:
            return self._run()
        except OSError as exc:  # the file went away or changed kind since it was listed
            self.index.unreadable = str(exc.strerror or exc)
            return self.index
        finally:
            for key, last in self.lasts.items():
                self.results[key].last = list(last)
            self.lasts = {}

    def _run(self) -> LogIndex:
        first = 1
        head_open = True
        for data in _line_blocks(self.index.source):
            data = _bounded_lines(data)
            block = _Block(data, first)
            self.found = {}
            if not self.search_repeated(block):
                found = self.prefilter(data)
                if found is None:  # control bytes or ANSI escapes: clean, then search again
                    data = _clean_bytes(data)
                    found = self.prefilter(data) or []
                    block = _Block(data, first)
                    if self.search_repeated(block):
                        found = None
                if found is not None:
                    candidates = _by_query(found)
                    del found  # one entry per candidate line: gone before the exact pass
                    self.search(block, candidates)
                    del candidates
            self.settle(block)
            self.fill_after(block)
            if head_open:  # the log's first whole lines, contiguous, at most HEAD_BYTES
                room = HEAD_BYTES - len(self.index.head_data)
                if len(data) <= room:
                    self.index.head_data += data
                else:
                    cut = data.rfind(b"\n", 0, room) + 1
                    if not cut and not self.index.head_data:  # a first line longer than the head
                        cut = room
                    self.index.head_data += data[:cut]
                    head_open = False
            self.tail.extend(block.last_lines(TAIL_LINES))
            self.recent.extend(block.raw_before(len(block.data), MAX_CONTEXT)[0])
            self.last_stamped = block.last_stamped() or self.last_stamped
            first += block.count
            # Before the next block is read: a kept match object holds its whole block's text.
            self.found = {}
            del block, data
        self.index.lines = first - 1
        self.index.tail = list(self.tail)
        return self.index

    def prefilter(self, data: bytes, engine: _Engine | None = None
                  ) -> list[tuple[int, int]] | None:
        """(query index, match end) of every prefilter match; None if the block is dirty."""
        engine = engine or self.engine
        if engine.db is None:
            if _dirty(data):
                return None
            return []
        found: list[tuple[int, int]] = []
        dirty = engine.dirty_id

        def on_match(qid: int, start: int, end: int, flags: int, ctx: Any) -> bool | None:
            if qid == dirty:
                return True  # stop: the block is cleaned and searched again
            found.append((qid, end))
            return None
        try:
            engine.db.scan(data, match_event_handler=on_match)
        except hyperscan.ScanTerminated:
            return None
        return found

    def search(self, block: _Block, candidates: dict[int, list[int]],
               engine: _Engine | None = None) -> None:
        engine = engine or self.engine
        for qi, key in enumerate(engine.keys):
            if key in self.results and self.results[key].unknown:
                continue
            query = self.queries.queries[key]
            if key in engine.slow:
                self.search_all(key, block)
                continue
            ends = candidates.get(qi)
            if not ends:
                continue
            # Many candidates, on many lines (not one long line matching all along it).
            dense = len(ends) >= DENSE_LINES and \
                block.data.count(b"\n", ends[0], ends[-1]) >= DENSE_LINES
            if dense and (query.spans_lines or 4 * len(ends) >= block.count):
                self.search_all(key, block)  # most lines are candidates: all of them at once
                continue
            starts = sorted({block.start_of(max(end - 1, 0)) for end in ends})
            if not dense or len(starts) < DENSE_LINES:
                self.check(key, block, starts)
            else:
                self.search_lines(key, block, starts)

    def search_repeated(self, block: _Block) -> bool:
        """A block whose lines repeat (a server failing every request prints the same few
        lines, digits aside): each query is decided once per distinct line instead of once
        per line, and its matching lines are counted and found with C-level passes.

        Lines are grouped by their bytes with every digit read as ``0`` (same length, same
        prefix, same level): a query whose regex cannot tell one digit from another (no
        digit in it, no back-reference) matches every line of a group or none, so its
        verdict on the group's text is its verdict on all. The verdicts are kept for the
        rest of the log (bounded: VERDICT_BYTES of line text), so a line that repeats
        across blocks is decided once per log. A query that may span lines is decided per
        distinct run of three lines (a match starts on the first, as ``check`` reads it).
        The other queries, which name digits, are searched on the block's own lines.
        Per-match work (the exact groups, the line, its time, its context) is done only for
        the matches kept. False when the lines do not repeat enough for this to pay, or the
        block is dirty (it is cleaned first)."""
        data = block.data
        if len(data) < REPEAT_MIN_LINES * REPEAT_MIN_LINE_BYTES:  # too few lines, or too short
            return False
        norm = data.translate(_DIGITS_AS_ZERO).split(b"\n")
        norm.pop()  # the block ends with a newline
        n = len(norm)
        block.lines_known(n)  # not counted again (a count is a pass over the block)
        if n < REPEAT_MIN_LINES or n > len(data) // REPEAT_MIN_LINE_BYTES:
            return False
        counts = Counter(norm)  # in C; its keys in the order of their first lines
        if len(counts) * REPEAT_RATIO > n:
            return False
        verdicts = self.verdicts
        new = list(filterfalse(verdicts.decided.__contains__, counts))
        if new:
            # A control byte or an escape is in a group's every line, so in its text; the
            # lines decided before were clean.
            text = b"\n".join(new) + b"\n"
            if b"#000[" in text or (self.engine.db is None and _dirty(text)):
                return False
            found = self.prefilter(text) if self.engine.db is not None else []
            if found is None:  # dirty (the prefilter's own check)
                return False
            kinds = self.engine.kinds(self.queries)
            matched = self.units_matching(block, len(new), kinds.per_line, new, text, found,
                                          norm.index)
            del text, found
            verdicts.add(new, {key: {new[i] for i in idx} for key, idx in matched.items()})
        else:
            kinds = self.engine.kinds(self.queries)
        block.set_lines(norm)
        for key in self.engine.keys:
            if key not in kinds.per_line or (key in self.results and self.results[key].unknown):
                continue
            groups = verdicts.matching.get(key)
            if not groups:
                continue
            here = counts.keys() & groups
            if not here:
                continue
            total = sum(map(counts.__getitem__, here))
            if total <= SPARSE_MATCHES:  # few lines: found by C-level list searches
                at = sorted(_positions(norm, here, counts))
                self.record(key, block, total, iter(at), reversed(at))
                continue
            self.record(key, block, total,
                        compress(range(n), map(here.__contains__, norm)),
                        compress(range(n - 1, -1, -1), map(here.__contains__, reversed(norm))))
        verdicts.settle(counts)
        exact: list[Key] = []
        if kinds.spanning:  # runs of three lines, each as one number
            if not self.runs_may_repeat(norm):
                exact = list(kinds.spanning)
            else:
                exact = self.search_runs(block, norm, counts, kinds.spanning)
        del counts, norm
        # The queries that name digits (and, when runs of lines do not repeat, those that
        # may span lines): prefiltered and searched on the block's own lines.
        rest = kinds.exact_and_spanning if exact else kinds.exact
        if rest is not None:
            found_rest = self.prefilter(data, rest) or []
            self.search(block, _by_query(found_rest), rest)
        return True

    def runs_may_repeat(self, norm: list[bytes]) -> bool:
        """Whether the block's runs of three lines may repeat enough to be decided per
        distinct run: told from its first RUN_SAMPLE lines (realistic traffic's runs seldom
        repeat; counting every run to learn it cost as much as deciding the rest)."""
        sample = norm[:RUN_SAMPLE]
        # Hashed: a set of 4,096 tuples cost GC passes (a collision only errs toward the
        # runs path, which is exact either way).
        runs = set(map(hash, zip(sample, sample[1:], sample[2:], strict=False)))
        return len(runs) * REPEAT_RATIO <= len(sample)

    def search_runs(self, block: _Block, norm: list[bytes], counts: Counter[bytes],
                    spanning: frozenset[Key]) -> list[Key]:
        """The queries that may span lines, decided per distinct run of three lines; the
        queries left to search on the block's own lines (all of them when runs do not
        repeat)."""
        n = len(norm)
        number = dict(zip(counts, range(1, len(counts) + 1), strict=True))  # 0: past the end
        ids = list(map(number.__getitem__, norm))
        del number
        d = len(counts) + 1
        runs_of = list(map(add, map(mul, ids, repeat(d * d)),
                           map(add, map(mul, [*ids[1:], 0], repeat(d)), [*ids[2:], 0, 0])))
        del ids
        runs = Counter(runs_of)
        if len(runs) * REPEAT_RATIO > n:
            return list(spanning)
        run_at = dict(zip(reversed(runs_of), range(n - 1, -1, -1), strict=True))
        distinct_runs = list(runs)
        units = [[i + j for j in range(3) if i + j < n]
                 for i in (run_at[r] for r in distinct_runs)]
        for key, matched in self.units_matching(block, units, spanning, norm).items():
            found = {distinct_runs[u] for u in matched}
            self.record(key, block, sum(runs[r] for r in found),
                        compress(range(n), map(found.__contains__, runs_of)),
                        compress(range(n - 1, -1, -1),
                                 map(found.__contains__, reversed(runs_of))))
        return []

    def units_matching(self, block: _Block, units: list[list[int]] | int, keys: frozenset[Key],
                       norm: list[bytes], text: bytes | None = None,
                       found: list[tuple[int, int]] | None = None,
                       where: Callable[[bytes], int] | None = None) -> dict[Key, list[int]]:
        """Which units (runs of lines of ``norm``, by index; a number: that many units of one
        line each, ``norm``'s lines in order) each query matches, starting on the unit's
        first line: the prefilter over the units' text, the exact regex on its
        candidates. Read in ``norm``, the lines with their digits as 0: the queries asked
        here cannot tell digits apart, and neither can their prefilters. ``text`` and
        ``found``: the units' text and its prefilter matches, when the caller has them;
        ``where``: a line's index in the block (for a message), when ``norm`` is not it."""
        if isinstance(units, int):  # no list per line: 10,000 small lists cost GC passes
            lines_of: Callable[[int], list[int]] = _alone
            each = norm if units == len(norm) else norm[:units]
            if text is None:
                text = b"\n".join(each) + b"\n"
            ends = list(accumulate(map((1).__add__, map(len, each))))
            del each
            count = units
        else:
            lines_of = units.__getitem__
            count = len(units)
            text = b"\n".join(b"\n".join(map(norm.__getitem__, unit)) for unit in units) + b"\n"
            ends = list(accumulate(sum(len(norm[i]) + 1 for i in unit) for unit in units))
        if found is None:
            found = self.prefilter(text) if self.engine.db is not None else None
        del text
        candidates: dict[int, set[int]] = {}
        for qid, end in found or ():
            candidates.setdefault(qid, set()).add(bisect_right(ends, max(end - 1, 0)))
        del found
        everything = range(count)
        out: dict[Key, list[int]] = {}
        for qi, key in enumerate(self.engine.keys):
            if key not in keys or (key in self.results and self.results[key].unknown):
                continue
            query = self.queries.queries[key]
            todo = everything if self.engine.db is None or key in self.engine.slow else \
                sorted(candidates.get(qi, ()))
            for u in todo:
                lines = [_parse_raw(block.first + i, norm[i]) for i in lines_of(u)]
                if not query.counts(lines[0]):
                    continue
                message = lines[0].message
                text_u = message if len(lines) == 1 else "\n".join(ln.message for ln in lines)
                try:
                    m = query.regex.search(text_u, timeout=LINE_TIMEOUT_S)
                except TimeoutError:
                    at = lines[0].number if where is None else \
                        block.first + where(norm[lines_of(u)[0]])
                    self.result_of(key).unknown = (f"regex {query.regex.pattern[:60]!r} timed "
                                                   f"out on line {at}")
                    break
                if m is not None and m.start() <= len(message):
                    out.setdefault(key, []).append(u)
        return out

    def record(self, key: Key, block: _Block, total: int, forward: Iterator[int],
               backward: Iterator[int]) -> None:
        """``total`` matching lines of the block, of which the first few and the last few
        (from the two iterators over their indexes) are kept with their exact groups."""
        keep = max(1, self.queries.keep_last[key])
        kept = sorted({*islice(forward, KEEP_FIRST), *islice(backward, keep)})
        exact = [self.exact_at(key, block, i) for i in kept]
        if any(e is None for e in exact) or len(kept) > total:
            self.search_all(key, block)  # cannot happen for a digit-blind regex; exact anyway
            return
        for i, e in zip(kept, exact, strict=True):
            assert e is not None
            self.count(key, i, *e)
        self.result_of(key).count += total - len(kept)

    def exact_at(self, key: Key, block: _Block, index: int
                 ) -> tuple[tuple[str | None, ...], tuple[int, int]] | None:
        """The query's match starting on line ``index`` (and the two after it, for a query
        that may span lines): its groups and span in the message, as ``check`` takes them."""
        query = self.queries.queries[key]
        upto = min(block.count, index + (3 if query.spans_lines else 1))
        lines = [block.line_at(i) for i in range(index, upto)]
        try:
            m = query.regex.search("\n".join(ln.message for ln in lines),
                                   timeout=LINE_TIMEOUT_S)
        except TimeoutError:
            return None
        if m is None or m.start() > len(lines[0].message):
            return None
        return (m.group(0), *m.groups()), m.span()

    def result_of(self, key: Key) -> QueryResult:
        found = self.results.get(key)
        if found is None:
            found = self.results[key] = QueryResult()
            self.lasts[key] = deque(maxlen=max(1, self.queries.keep_last[key]))
        return found

    def count(self, key: Key, line: int, groups: Any, span: Any = None) -> None:
        """One more line matched: counted; its match kept while it is among the first or
        the last (``groups``: a match object, or the groups already taken from one)."""
        found = self.found.get(key)
        if found is None:
            found = self.found[key] = _Found(
                last=deque(maxlen=max(1, self.queries.keep_last[key])))
        if line == found.line:
            return
        found.line = line
        result = self.result_of(key)
        result.count += 1
        if len(result.first) + len(found.first) < KEEP_FIRST:
            found.first.append((line, *_groups(groups, span)))
        found.last.append((line, groups, span))

    def settle(self, block: _Block) -> None:
        """The block's kept matches as Hits: their lines, times and context."""
        for key, found in self.found.items():
            result = self.result_of(key)
            for line, groups, span in found.first:
                hit = self.hit(block, line, groups, span)
                start = block.line_start(line)
                before, top = block.raw_before(start, MAX_CONTEXT)
                if top and len(before) < MAX_CONTEXT:  # go on into the block before
                    before = list(self.recent)[len(before) - MAX_CONTEXT:] + before
                hit.keep_before(before)
                result.first.append(hit)
                nxt = block.next_start(start)
                self.waiting.append((hit, len(block.data) if nxt is None else nxt))
            firsts = {h.line.number: h for h in result.first}
            for line, groups, span in found.last:
                kept = firsts.get(block.first + line)
                self.lasts[key].append(kept if kept is not None else
                                   self.hit(block, line, *_groups(groups, span)))
        self.found = {}

    def hit(self, block: _Block, line: int, groups: tuple[str | None, ...],
            span: tuple[int, int]) -> Hit:
        parsed = block.line_at(line)
        stamped = parsed if has_stamp(parsed) else block.stamped_before(line) or \
            self.last_stamped
        return Hit(parsed, groups, span, stamped, self.context)

    def check(self, key: Key, block: _Block, starts: list[int]) -> None:
        """The exact regex on each candidate line (and the lines just before it, for a
        match that spans a hard-wrapped message)."""
        query = self.queries.queries[key]
        spans = query.spans_lines
        done: set[int] = set()
        for start in starts:
            window = [start]
            for _ in range(2 if spans else 0):
                prev = block.prev_start(window[0])
                if prev is None:
                    break
                window.insert(0, prev)
            for i in range(len(window)):  # the earliest line a match starts on wins
                head = window[i]
                if head in done:
                    continue
                lines = [block.line(s) for s in window[i:]]
                if not query.counts(lines[0]):
                    continue
                text = "\n".join(ln.message for ln in lines)
                try:
                    m = query.regex.search(text, timeout=LINE_TIMEOUT_S)
                except TimeoutError:
                    self.result_of(key).unknown = (f"regex {query.regex.pattern[:60]!r} timed "
                                                   f"out on line {lines[0].number}")
                    return
                if m is not None and m.start() <= len(lines[0].message):
                    done.add(head)
                    self.count(key, block.index_of(head), (m.group(0), *m.groups()), m.span())
                    break

    def search_lines(self, key: Key, block: _Block, starts: list[int]) -> None:
        """Many candidate lines: one pass of the exact regex over their messages."""
        query = self.queries.queries[key]
        lines = [block.index_of(s) for s in starts]
        text, offsets = block.joined(lines)
        self.scan_text(key, query, text, offsets, lines, block)

    def search_all(self, key: Key, block: _Block) -> None:
        """The exact regex over all the block's messages (the pure-Python path, and a
        query that may span lines with many candidates)."""
        query = self.queries.queries[key]
        text, offsets = block.messages()
        self.scan_text(key, query, text, offsets, None, block)

    def scan_text(self, key: Key, query: Query, text: str, offsets: list[int],
                  lines: list[int] | None, block: _Block) -> None:
        """Count each line of ``text`` (messages starting at ``offsets``: the block lines
        ``lines``, or every line in order) on which ``query`` matches, with one regex pass
        and one time limit for the block.

        A match counts for the line it starts on, as a search from each line's
        start would find it. The regex runs as it is (literal scans are fast);
        one that matches many times per line (``.``, ``\\w+``) is switched to its
        once-per-line form, and after a match that runs into the next line the
        search goes on from that line's start.
        """
        levels = query.levels or frozenset()
        level_of = block.levels() if query.levels is not None else None
        wrapped = query.one_per_line
        pattern, per_line = query.regex, False
        seen_lines = matches = 0
        last = -1
        try:
            found = pattern.finditer(text, timeout=BLOCK_TIMEOUT_S)
            while (m := next(found, None)) is not None:
                k = bisect_right(offsets, m.start()) - 1
                matches += 1
                if k != last:
                    last = k
                    seen_lines += 1
                    line = lines[k] if lines is not None else k
                    if level_of is None or level_of[line] in levels:
                        at = offsets[k]
                        if per_line:
                            self.count(key, line, m, (m.start(1) - at, m.end(1) - at))
                        else:
                            self.count(key, line, (m.group(0), *m.groups()),
                                       (m.start() - at, m.end() - at))
                nxt = offsets[k + 1] if k + 1 < len(offsets) else len(text) + 1
                restart = m.end() > nxt  # ran into the next line: search it from its start
                if not per_line and wrapped is not None and matches > 64 and \
                        matches > 4 * seen_lines:
                    pattern, per_line, restart = wrapped, True, True
                if restart and nxt <= len(text):
                    found = pattern.finditer(text, nxt, overlapped=per_line,
                                             timeout=BLOCK_TIMEOUT_S)
        except TimeoutError:
            self.result_of(key).unknown = (f"regex {query.regex.pattern[:60]!r} timed out on "
                                           f"a {len(text):,}-character stretch of the log")

    def fill_after(self, block: _Block) -> None:
        """Lines after each kept hit, up to MAX_CONTEXT, as far as this block reaches."""
        still: list[tuple[Hit, int | None]] = []
        for hit, start in self.waiting:  # start None: from the top of this (a later) block
            have = len(hit.after_raw)
            hit.keep_after(block.raw_from(0 if start is None else start, MAX_CONTEXT - have))
            if len(hit.after_raw) < MAX_CONTEXT:
                still.append((hit, None))  # go on from the start of the next block
        self.waiting = still


def _groups(m: Any, span: Any) -> tuple[tuple[str | None, ...], tuple[int, int]]:
    """(group 0 and the regex's groups, span) from a wrapped match or from groups taken."""
    if isinstance(m, tuple):
        return m, span
    return (m.group(1), *m.groups()[1:]), span


def _clean_bytes(block: bytes) -> bytes:
    return _CONTROL_B.sub(b"", _ANSI_B.sub(b"", block))


_ANSI_B = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]|#033\[[0-9;]*m")
_CONTROL_B = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


EDGE_LINES = 2048  # a block's first and last lines, whose offsets are all kept
OFFSET_STRIDE = 64  # between them, one offset kept per this many lines


class _LineOffsets:
    """Where a block's lines start, from their bytes already split, kept for the lines a
    scan asks about: its kept matches are its first and its last, so every offset of the
    first and last EDGE_LINES lines, and one in OFFSET_STRIDE between them (a line there is
    found from the one before it). The offsets of every line were a list of 55,000 numbers
    per block of traffic, built whether or not one was asked for."""

    def __init__(self, lines: list[bytes], size: int) -> None:
        n = len(lines)
        self.head_end = h = min(EDGE_LINES, n)
        self.tail_from = t = max(h, n - EDGE_LINES)
        # offset of line i < h: head[i] + i; of line i >= t: tail_base + tail[i - t] + i - t
        self.head = list(accumulate(map(len, lines[:h]), initial=0))
        self.tail = list(accumulate(map(len, lines[t:]), initial=0))
        self.tail_base = size - self.tail[-1] - (n - t)
        middle = iter(lines[h:t])  # whole strides: a stride's first line is all that is kept
        strides = zip(*[middle] * OFFSET_STRIDE, strict=False)
        self.mid = list(accumulate(map(sum, map(map, repeat(len), strides)), initial=0))
        self.mid_base = self.head[-1] + h

    def start(self, i: int, data: bytes) -> int:
        if i < self.head_end:
            return self.head[i] + i
        if i >= self.tail_from:
            j = i - self.tail_from
            return self.tail_base + self.tail[j] + j
        c, within = divmod(i - self.head_end, OFFSET_STRIDE)
        at = self.mid_base + self.mid[c] + c * OFFSET_STRIDE
        for _ in range(within):
            at = data.find(b"\n", at) + 1
        return at

    def index_of(self, start: int, data: bytes) -> int:
        """The index of the line that starts at ``start``."""
        if start < self.mid_base:
            head = self.head
            return bisect_right(range(len(head)), start, key=lambda i: head[i] + i) - 1
        if start >= self.tail_base:
            tail = self.tail
            return self.tail_from + bisect_right(
                range(len(tail)), start - self.tail_base, key=lambda j: tail[j] + j) - 1
        mid = self.mid
        c = bisect_right(range(len(mid)), start - self.mid_base,
                         key=lambda k: mid[k] + k * OFFSET_STRIDE) - 1
        at = self.mid_base + mid[c] + c * OFFSET_STRIDE
        return self.head_end + c * OFFSET_STRIDE + data.count(b"\n", at, start)


class _Block:
    """Whole lines of a log (ending with a newline), decoded and parsed only when asked for.

    Lines are known by their index in the block (0 for the first); offsets into
    ``data`` are computed once per block, and only when a search needs them.
    """

    def __init__(self, data: bytes, first: int) -> None:
        self.data = data
        self.first = first  # number of its first line
        self._count: int | None = None
        self._parsed: dict[int, LogLine] = {}  # by line index
        self._starts: list[int] | None = None
        self._sums: _LineOffsets | None = None
        self._messages: tuple[str, list[int]] | None = None
        self._levels: list[str] | None = None
        self._stamps: list[int] | None = None  # offsets of time-like texts
        self._marks: list[tuple[int, int]] = [(0, 0)]  # known (offset, line index)

    @property
    def count(self) -> int:
        """How many lines the block holds (counted when asked, unless a split told it)."""
        if self._count is None:
            self._count = self.data.count(b"\n")
        return self._count

    def lines_known(self, count: int) -> None:
        self._count = count

    def set_lines(self, lines: list[bytes]) -> None:
        """The offsets of the block's lines, from their bytes already split."""
        self._sums = _LineOffsets(lines, len(self.data))

    @property
    def starts(self) -> list[int]:
        """Where each line starts (one pass over the block, made once)."""
        if self._starts is None:
            ends = [m.end() for m in re.finditer(b"\n", self.data)]
            self._starts = [0, *ends[:-1]]
        return self._starts

    def start_of(self, offset: int) -> int:
        return self.data.rfind(b"\n", 0, offset) + 1 if offset else 0

    def index_of(self, start: int) -> int:
        """The index of the line at ``start``: from the line offsets when a search made
        them, else counted from the nearest line already known (few lines are asked)."""
        if self._starts is not None:
            return bisect_right(self._starts, start) - 1
        if self._sums is not None:
            return self._sums.index_of(start, self.data)
        i = bisect_right(self._marks, (start, 1 << 62)) - 1
        offset, index = self._marks[i]
        if i + 1 < len(self._marks) and self._marks[i + 1][0] - start < start - offset:
            after, after_index = self._marks[i + 1]
            index = after_index - self.data.count(b"\n", start, after)
        else:
            index += self.data.count(b"\n", offset, start)
        if offset != start:
            self._marks.insert(i + 1, (start, index))
        return index

    def line_start(self, index: int) -> int:
        if self._sums is not None:
            return self._sums.start(index, self.data)
        if self._starts is None:
            known = next((o for o, i in self._marks if i == index), None)
            if known is not None:
                return known
        return self.starts[index]

    def prev_start(self, start: int) -> int | None:
        return None if start == 0 else self.data.rfind(b"\n", 0, start - 1) + 1

    def next_start(self, start: int) -> int | None:
        nxt = self.data.find(b"\n", start) + 1
        return nxt if nxt < len(self.data) else None

    def line_end(self, start: int) -> int:
        return self.data.find(b"\n", start)

    def line_at(self, index: int, start: int | None = None) -> LogLine:
        found = self._parsed.get(index)
        if found is None:
            start = self.line_start(index) if start is None else start
            found = _parse_raw(self.first + index, self.data[start:self.line_end(start)])
            self._parsed[index] = found
        return found

    def line(self, start: int) -> LogLine:
        return self.line_at(self.index_of(start), start)

    def stamped_before(self, index: int) -> LogLine | None:
        """The nearest line before line ``index`` in this block that carries a time.

        Asked only for the matches kept: the bytes just before the line are
        searched, then, when no time is near, the block's stamped lines (found
        in one pass, once per block)."""
        return self._stamped_in(self.line_start(index))

    def last_stamped(self) -> LogLine | None:
        """The block's last line that carries a time, for the block after it."""
        return self._stamped_in(len(self.data))

    def _stamped_in(self, end: int) -> LogLine | None:
        lo = max(0, end - 4096)
        for m in reversed(list(_STAMP_TAIL.finditer(self.data, lo, end))):
            line = self._stamp_candidate(m.start())
            if line is not None:
                return line
        if lo == 0:
            return None
        if self._stamps is None:  # the block's time-like texts, found once (a literal leads)
            self._stamps = [m.start() for m in _STAMP_TAIL.finditer(self.data)]
        i = bisect_right(self._stamps, lo - 1)
        while i > 0:
            i -= 1
            line = self._stamp_candidate(self._stamps[i])
            if line is not None:
                return line
        return None

    def _stamp_candidate(self, dash: int) -> LogLine | None:
        """The line whose ``MM-DD hh:mm:ss`` has its dash at ``dash``, if it is its time."""
        if dash < 2 or not self.data[dash - 2:dash].isdigit():
            return None
        return self._stamped_at(dash - 2)

    def _stamped_at(self, offset: int) -> LogLine | None:
        """The line holding a time-like text at ``offset``, if it is the line's time."""
        start = self.start_of(offset)
        if offset - start >= 160:
            return None
        line = self.line(start)
        return line if has_stamp(line) else None

    def raw_before(self, start: int, count: int) -> tuple[list[tuple[int, bytes]], bool]:
        """Up to ``count`` non-empty lines before the line at ``start`` (``len(data)``: the
        block's end), as (number, bytes) in order, and whether the block's top was reached."""
        out: list[tuple[int, bytes]] = []
        if start >= len(self.data):
            prev: int | None = self.start_of(len(self.data) - 1)
            number = self.first + self.count - 1
        else:
            prev, number = self.prev_start(start), self.first + self.index_of(start) - 1
        while prev is not None and len(out) < count:
            raw = self.data[prev:self.line_end(prev)]
            if raw.strip():
                out.insert(0, (number, raw))
            prev = self.prev_start(prev)
            number -= 1
        return out, prev is None

    def raw_from(self, start: int, count: int) -> list[tuple[int, bytes]]:
        """Up to ``count`` non-empty lines from ``start`` on, as (number, bytes)."""
        out: list[tuple[int, bytes]] = []
        if start >= len(self.data) or count <= 0:
            return out
        number = self.first + self.index_of(start)
        pos: int | None = start
        while pos is not None and len(out) < count:
            raw = self.data[pos:self.line_end(pos)]
            if raw.strip():
                out.append((number, raw))
            pos = self.next_start(pos)
            number += 1
        return out

    def last_lines(self, count: int) -> list[LogLine]:
        """The block's last ``count`` non-empty lines, in order (numbered from the end)."""
        out: list[LogLine] = []
        start: int | None = self.start_of(len(self.data) - 1)  # of the last line
        number = self.first + self.count - 1
        while start is not None and len(out) < count:
            line = _parse_raw(number, self.data[start:self.line_end(start)])
            if line.raw.strip():
                out.insert(0, line)
            start = self.prev_start(start)
            number -= 1
        return out

    def messages(self) -> tuple[str, list[int]]:
        """The block's messages, one per line (prefixes stripped), and where each starts."""
        if self._messages is None:
            # Decoded through a view: a slice would copy the whole block once more.
            text = str(memoryview(self.data)[:-1], "utf-8", "replace")
            if "\r" in text:
                text = "\n".join(parse_line(0, ln, cleaned=True, cut=False).message
                                 if "\r" in ln else ln for ln in text.split("\n"))
            text = _PREFIX_LINES.sub("", text)
            self._messages = (text, _offsets(text))
        return self._messages

    def joined(self, lines: list[int]) -> tuple[str, list[int]]:
        """The messages of these lines, one per line, and where each starts."""
        text, offsets = self.messages()
        joined = "\n".join([text[offsets[i]:(offsets[i + 1] - 1 if i + 1 < len(offsets)
                                               else None)] for i in lines])
        return joined, _offsets(joined)

    def levels(self) -> list[str]:
        """Each line's level (``NONE`` without one), in one pass over the block."""
        if self._levels is None:
            text = decode(self.data[:-1])
            if "\r" in text:  # a line ending in \r\n: its level is read as parse_line reads it
                text = text.replace("\r", "")
            self._levels = [_LEVEL_NAMES.get(level, level) for _, level, _ in
                            _PREFIX_LINES.findall(text)]
        return self._levels


_LEVEL_NAMES = {"": "NONE", "WARN": "WARNING"}


def _offsets(text: str) -> list[int]:
    """Where each line of ``text`` starts."""
    out = [0]
    out += accumulate(len(part) + 1 for part in text.split("\n")[:-1])
    return out


def scan(source: LogSource, queries: QuerySet) -> LogIndex:
    """Search a log once for every query; memory stays bounded whatever its size."""
    return _Scan(source, queries).run()


def queries_of(regexes: Iterable[tuple[Any, frozenset[str] | None, int]]) -> QuerySet:
    """A QuerySet from (compiled regex, levels, keep_last) triples."""
    out = QuerySet()
    for rx, levels, keep in regexes:
        out.add(Query(rx, levels), keep)
    return out
