"""Repeated lines: a block whose lines repeat (a server failing every request prints the
same few lines, digits aside) is grouped by its lines with every digit read as ``0``, and
each query that cannot tell one digit from another is decided once per distinct line.
Here: when a block is grouped so, and the verdicts kept across a log's blocks."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from itertools import compress

from triage.logs.queries import Key
from triage.speed import lazyregex

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
