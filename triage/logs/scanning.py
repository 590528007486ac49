"""The scan: one streaming pass over a log for every query (``scan``), and what it found
(``LogIndex``).

Each block of whole lines goes through the prefilter (or, for repeated lines, is decided
once per distinct line); only candidate lines are decoded, cleaned, split into prefix and
message, and checked with the exact ``regex`` pattern (with a timeout) and the query's
levels. Line numbers, times and context are worked out for the matches kept only.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from itertools import accumulate, compress, filterfalse, islice, repeat
from operator import add, mul
from typing import Any

from triage.logs.blocks import _Block
from triage.logs.lines import LogLine, _parse_raw, has_stamp
from triage.logs.prefilter import _Engine, hyperscan
from triage.logs.queries import Hit, Key, Query, QueryResult, QuerySet
from triage.logs.repeats import (
    _DIGITS_AS_ZERO,
    REPEAT_MIN_LINE_BYTES,
    REPEAT_MIN_LINES,
    REPEAT_RATIO,
    RUN_SAMPLE,
    SPARSE_MATCHES,
    _alone,
    _positions,
    _Verdicts,
)
from triage.logs.source import LogSource, _bounded_lines, _clean_bytes, _dirty, _line_blocks

# Per line and per block: no regex may run longer; a timeout makes the query unknown.
LINE_TIMEOUT_S = 0.25
BLOCK_TIMEOUT_S = 5.0
KEEP_FIRST = 3  # matches kept with their context, per query
MAX_CONTEXT = 10  # lines of context kept around them
TAIL_LINES = 32  # the last lines of every log, for tail windows and root causes
HEAD_LINES = 200  # the first lines, for when a start began
HEAD_BYTES = 64 * 1024  # kept of the first block to find them


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


def _by_query(found: list[tuple[int, int]]) -> dict[int, list[int]]:
    """Prefilter matches grouped: query index -> the ends of its matches, in order."""
    candidates: dict[int, list[int]] = {}
    for qid, end in found:
        candidates.setdefault(qid, []).append(end)
    return candidates


# A query with at least this many candidate lines in a block is searched in one regex
# pass over those lines (one call, one timeout) instead of one call per line.
DENSE_LINES = 16


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


def scan(source: LogSource, queries: QuerySet) -> LogIndex:
    """Search a log once for every query; memory stays bounded whatever its size."""
    return _Scan(source, queries).run()
