"""What a scan is asked (``Query``, ``QuerySet``) and what it answers per query (``Hit``,
``QueryResult``): every regex the patterns, the start-up parser and the facts use is a
Query over line messages."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import regex

from triage.logs.lines import LogLine, _parse_raw
from triage.speed import lazyregex
from triage.speed.lazyregex import LazyRegex

Key = tuple[str, int, frozenset[str] | None]


# What in a pattern can match a newline: then a match may span a hard-wrapped message.
# (\S cannot: a newline is white space.)
_SPANS = lazyregex.compile(r"\\[snWDHV]|\[\^")


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


@dataclass
class QueryResult:
    """What a query found in one log: how many lines, the first and last."""

    count: int = 0  # lines that matched
    first: list[Hit] = field(default_factory=list)  # the first KEEP_FIRST, with context
    # The last keep_last (a list once the scan is done: a deque costs a 64-slot block each,
    # and a namespace scan holds every pod's results until the report).
    last: list[Hit] = field(default_factory=list)
    unknown: str | None = None  # why the search could not finish (a regex timeout)


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


def queries_of(regexes: Iterable[tuple[Any, frozenset[str] | None, int]]) -> QuerySet:
    """A QuerySet from (compiled regex, levels, keep_last) triples."""
    out = QuerySet()
    for rx, levels, keep in regexes:
        out.add(Query(rx, levels), keep)
    return out
