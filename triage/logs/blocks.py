"""A block of a log's whole lines as a scan holds it: lines known by their index, found,
decoded and parsed only when a search asks (offsets, messages, levels, the nearest line
that carries a time, the lines around a match)."""

from __future__ import annotations

import re
from bisect import bisect_right
from itertools import accumulate, repeat

from triage.logs.lines import (
    _PREFIX_LINES,
    _STAMP_TAIL,
    LogLine,
    _parse_raw,
    decode,
    has_stamp,
    parse_line,
)

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
