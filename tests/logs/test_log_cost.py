"""The log engine's cost grows with bytes, not with matching lines: the per-match work
(line, level, time, context) is done for the matches kept, a count for the rest, and
every way of reading a dense log gives the same answers."""

from __future__ import annotations

import itertools
import random
from pathlib import Path
from typing import Any

import pytest
import regex

from bench import dense, synthetic
from tests.logs import test_logs
from tests.logs.test_logs import scanned
from triage.logs import LogLine, LogSource, Query, parse_line, queries_of, repeats, scan
from triage.logs.blocks import _LineOffsets
from triage.logs.repeats import _DIGITS_AS_ZERO, RUN_SAMPLE
from triage.logs.scanning import _Scan
from triage.logs.source import BLOCK_BYTES, _line_blocks

# A Python exception line: a query that matches most lines of the dense shapes.
EXCEPTIONS = Query(regex.compile(r"^\s*[A-Za-z_][\w.]*(?:Error|Exception)\b:", regex.MULTILINE))
QUERIES = test_logs.QUERIES.merged(queries_of([(EXCEPTIONS.regex, None, 64)]))

OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 160.00 MiB. GPU 0 has a "
       "total capacity of 22.03 GiB of which 91.06 MiB is free.")


@pytest.mark.parametrize("shape", dense.SHAPES)
def test_why_cost_grows_with_bytes_not_matches(shape: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: every matching line was parsed, numbered and looked back from (up to 200
    lines) for its time: 6.5 s per MiB when every line is an error. Now a line is parsed
    only for a match that is kept (the first and last few per query) or to decide a few
    sparse candidates; the rest are counted."""
    data = dense.block(shape, lines=30_000)
    parsed = 0
    real = parse_line

    def counting(*args: Any, **kwargs: Any) -> LogLine:
        nonlocal parsed
        parsed += 1
        return real(*args, **kwargs)
    # Where the engine looks it up: a scanned line, and a block's line holding a \r.
    monkeypatch.setattr("triage.logs.lines.parse_line", counting)
    monkeypatch.setattr("triage.logs.blocks.parse_line", counting)
    index = scan(LogSource(data=data), QUERIES)
    exceptions = sum(1 for line in data.decode().splitlines()
                     if EXCEPTIONS.regex.search(line) and not line.startswith("("))
    if shape != "stamped":  # stamped lines put the exception after vLLM's prefix
        assert index.result(EXCEPTIONS).count == exceptions
    assert parsed < 3_000, parsed  # of 30,000 lines, nearly all of them matches


@pytest.mark.slow  # 60,000 lines scanned twice, one way line by line
@pytest.mark.parametrize("shape", dense.SHAPES)
def test_why_dense_logs_count_matches_without_work_per_match(
        shape: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: every matching line of every query went through the per-match bookkeeping
    (a Python call with its groups: 140,000 of them for 20,000 error lines, 0.3-0.7 MiB/s
    through ``analyze``). Now a block of repeated lines (digits aside) decides each query
    once per distinct line or run of lines and counts the rest in C; only the kept matches
    (the first and last few per query) are worked on. The counts stay exact."""
    data = dense.block(shape, lines=60_000) + OOM.encode() + b"\n"
    index, calls = _scan_counting_matches(data, monkeypatch)
    assert calls < 3_000, calls
    monkeypatch.setattr("triage.logs.scanning.REPEAT_MIN_LINES", 1 << 40)  # each line on its own, as before
    line_by_line = scan(LogSource(data=data), QUERIES)
    assert {k: r.count for k, r in index.results.items() if r.count} == \
        {k: r.count for k, r in line_by_line.results.items() if r.count}
    oom = index.result(EXCEPTIONS)
    assert oom.count and oom.last[-1].line.raw == OOM


@pytest.mark.slow  # a dense log scanned four ways
@pytest.mark.parametrize("shape", dense.SHAPES)
def test_dense_logs_give_the_same_answers_every_way(shape: str, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "dense.log"
    path.write_bytes(dense.block(shape, lines=6_000) + OOM.encode() + b"\n")
    source = LogSource(path=path)
    reference = scanned(source, QUERIES, monkeypatch, "python")
    assert scanned(source, QUERIES, monkeypatch, "hyperscan") == reference
    assert scanned(source, QUERIES, monkeypatch, "hyperscan", block=20_011) == reference
    assert scanned(source, QUERIES, monkeypatch, "python", block=20_011) == reference


def _traffic_log(lines: int) -> bytes:
    rng = random.Random(7)
    out = synthetic._startup(rng, "11-28") + synthetic._traffic(rng, "11-28", lines)
    return ("\n".join(out) + "\n").encode()


def test_why_normal_logs_pay_no_per_match_work_for_progress_lines(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: in realistic traffic (uvicorn access lines, stats lines, "Received request")
    the start-up progress query ("ready": an access line or a stats line shows a serving
    server) matched 75% of the lines, each worked on as a match, and was searched as if it
    could span lines (``\\S`` read as matching a newline): analyze of 100 MiB ran at 14x
    grep. Its lines repeat (digits aside), so they are counted, not worked on."""
    data = _traffic_log(40_000)
    index, calls = _scan_counting_matches(data, monkeypatch)
    assert calls < 3_000, calls
    monkeypatch.setattr("triage.logs.scanning.REPEAT_MIN_LINES", 1 << 40)
    line_by_line = scan(LogSource(data=data), QUERIES)
    counts = {k: r.count for k, r in index.results.items() if r.count}
    assert counts == {k: r.count for k, r in line_by_line.results.items() if r.count}
    assert max(counts.values()) > 0.7 * index.lines  # the progress query, as dense as said


def test_why_a_namespace_scan_keeps_each_context_line_once() -> None:
    """Before: every kept match of every query held its own copy of the ten lines around
    it (as (number, bytes) pairs), and a diagnosed pod's scan stayed referenced until the
    report: a 3,000-pod namespace peaked at 882 MB. The context lines are kept once per
    log, each hit holding only which lines are its context."""
    data = _traffic_log(60) + ("\n".join(synthetic.OOM_TAIL) + "\n").encode()
    index = scan(LogSource(data=data), QUERIES)
    raws = [raw for r in index.results.values() for h in [*r.first, *r.last]
            for _, raw in [*h.before_raw, *h.after_raw]]
    assert len(raws) > index.lines  # many hits show the same lines
    assert len({id(raw) for raw in raws}) <= index.lines
    first = index.result(EXCEPTIONS).first[0]
    assert [ln.number for ln in first.before] == list(range(first.line.number - 10,
                                                             first.line.number))


def _scan_counting_matches(data: bytes, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, int]:
    """The log's index, and how many times the engine worked on a match one by one."""
    calls = 0
    real = _Scan.count

    def counting(self: _Scan, *args: Any, **kwargs: Any) -> None:
        nonlocal calls
        calls += 1
        real(self, *args, **kwargs)
    monkeypatch.setattr(_Scan, "count", counting)
    try:
        return scan(LogSource(data=data), QUERIES), calls
    finally:
        monkeypatch.setattr(_Scan, "count", real)


def _line_by_line(data: bytes, monkeypatch: pytest.MonkeyPatch) -> dict[Any, int]:
    with monkeypatch.context() as m:
        m.setattr("triage.logs.scanning.REPEAT_MIN_LINES", 1 << 40)  # each line on its own, as before
        index = scan(LogSource(data=data), QUERIES)
    return {k: r.count for k, r in index.results.items() if r.count}


def _decided(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many distinct lines each block sends to the exact regexes (per-line queries)."""
    sent: list[int] = []
    real = _Scan.units_matching

    def spying(self: _Scan, block: Any, units: Any, keys: Any, norm: Any,
               *args: Any, **kwargs: Any) -> Any:
        if keys == self.engine.kinds(self.queries).per_line:
            sent.append(units if isinstance(units, int) else len(units))
        return real(self, block, units, keys, norm, *args, **kwargs)
    monkeypatch.setattr(_Scan, "units_matching", spying)
    return sent


def test_why_a_line_repeated_through_a_log_is_decided_once_per_log(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: each block of realistic traffic sent its ~11,000 distinct lines (digits
    aside) through the prefilter and the exact regexes again, though the same lines had
    been decided in the block before. The verdicts are kept for the log (bounded), so a
    block of lines seen before decides none; the counts are the line-by-line path's."""
    seed = _traffic_log(8_000)
    data = seed * 6
    monkeypatch.setattr("triage.logs.source.BLOCK_BYTES", len(seed) // 2 + 1)
    sent = _decided(monkeypatch)
    index = scan(LogSource(data=data), QUERIES)
    distinct = set(data.translate(_DIGITS_AS_ZERO).split(b"\n"))
    assert sum(sent) <= len(distinct), sent  # about 12 blocks: each line decided once
    monkeypatch.undo()
    monkeypatch.setattr("triage.logs.source.BLOCK_BYTES", len(seed) // 2 + 1)
    counts = {k: r.count for k, r in index.results.items() if r.count}
    assert counts == _line_by_line(data, monkeypatch)


def test_the_verdicts_kept_per_log_stay_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past VERDICT_BYTES of lines the verdicts are dropped after the block and gathered
    again: the same counts, and no more kept than the bound."""
    seed = _traffic_log(8_000)
    data = seed * 4
    monkeypatch.setattr("triage.logs.source.BLOCK_BYTES", len(seed) // 2 + 1)
    monkeypatch.setattr("triage.logs.repeats.VERDICT_BYTES", 20_000)
    sent = _decided(monkeypatch)
    run = _Scan(LogSource(data=data), QUERIES)
    index = run.run()
    assert run.verdicts.size <= repeats.VERDICT_BYTES
    assert all(sent), sent  # every block decides its lines anew
    monkeypatch.undo()
    monkeypatch.setattr("triage.logs.source.BLOCK_BYTES", len(seed) // 2 + 1)
    assert {k: r.count for k, r in index.results.items() if r.count} == \
        _line_by_line(data, monkeypatch)


@pytest.mark.slow  # dense logs scanned twice, once line by line
@pytest.mark.parametrize("shape", dense.SHAPES)
def test_runs_of_lines_decided_or_searched_give_the_same_counts(
        shape: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The queries that may span lines are decided per distinct run of three lines only
    when a sample of the block's runs repeats; either way the counts are the same."""
    data = dense.block(shape, lines=20_000) + OOM.encode() + b"\n"
    reference = _line_by_line(data, monkeypatch)
    for sample in (RUN_SAMPLE, 3):  # 3: one run, which always "repeats"
        with monkeypatch.context() as m:
            m.setattr("triage.logs.scanning.RUN_SAMPLE", sample)
            index = scan(LogSource(data=data), QUERIES)
        assert {k: r.count for k, r in index.results.items() if r.count} == reference


def test_past_the_bound_the_lines_a_block_repeats_stay_decided(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: past VERDICT_BYTES every verdict was dropped after the block, so a log whose
    blocks each hold more lines seen once (a request id in each) than the bound decided its
    repeated lines again in every block. Now those a block repeats are kept."""
    rng = random.Random(3)
    lines = []
    for i in range(6_000):
        lines.append("ERROR 11-28 03:06:57 [serving_chat.py:1] RuntimeError: CUDA error: an "
                     "illegal memory access was encountered" if i % 8 else
                     f"INFO:     10.0.0.1:4 - \"POST /v1/x?id={rng.randbytes(8).hex()}\" 200 OK")
    data = ("\n".join(lines) + "\n").encode()
    monkeypatch.setattr("triage.logs.source.BLOCK_BYTES", len(data) // 3 + 1)
    monkeypatch.setattr("triage.logs.repeats.VERDICT_BYTES", 10_000)  # a block's ids alone pass it
    run = _Scan(LogSource(data=data), QUERIES)
    index = run.run()
    kept = {u for u in run.verdicts.decided if b"illegal memory" in u}
    assert kept and run.verdicts.size <= repeats.VERDICT_BYTES
    assert not any(b"?id=" in u for u in run.verdicts.decided)
    monkeypatch.undo()
    monkeypatch.setattr("triage.logs.source.BLOCK_BYTES", len(data) // 3 + 1)
    assert {k: r.count for k, r in index.results.items() if r.count} == \
        _line_by_line(data, monkeypatch)


@pytest.mark.parametrize("n", [1, 5, 2048, 2049, 4096, 4097, 4161, 9000])
def test_line_offsets_kept_in_part_are_every_line_s(n: int) -> None:
    """A block's line offsets are kept whole only for its first and last lines (a stride
    between them): each line's start, and the line holding each byte, are still exact."""
    rng = random.Random(n)
    lines = [b"x" * rng.randint(0, 50) for _ in range(n)]
    data = b"\n".join(lines) + b"\n"
    offsets = _LineOffsets(lines, len(data))
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    assert [offsets.start(i, data) for i in range(n)] == starts
    # newlines_before[pos] == data.count(b"\n", 0, pos), counted in one pass (a count per
    # position is quadratic: seconds for 9,000 lines)
    newlines_before = list(itertools.accumulate((byte == 10 for byte in data), initial=0))
    for pos in range(0, len(data), 7):
        assert offsets.index_of(pos, data) == newlines_before[pos]


def test_a_big_log_asks_for_the_heap_to_keep_its_blocks(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Each 8 MiB block's copies faulted fresh pages in (0.15-0.2 s of system time per
    100 MiB): a log longer than a block asks once to keep freed blocks in the heap; a
    short one does not, and a program that only imports the package is never tuned."""
    from triage.logs import heap

    asked: list[int] = []
    monkeypatch.setattr(heap, "keep_freed_blocks", lambda: asked.append(1) or True)
    small = tmp_path / "small.log"
    small.write_bytes(b"INFO ready\n" * 1000)
    assert list(_line_blocks(LogSource(data=None, path=small)))
    assert asked == []
    big = tmp_path / "big.log"
    big.write_bytes(b"INFO 11-28 03:00:00 a line of traffic\n" * (BLOCK_BYTES // 38 + 10))
    assert len(list(_line_blocks(LogSource(data=None, path=big)))) == 2
    assert asked  # once per block read whole; heap itself acts only once
    monkeypatch.undo()
    assert heap._state["allowed"] is False  # pytest imported triage, it is not the program
    assert heap.keep_freed_blocks() is False


def test_the_heap_is_tuned_once_and_only_when_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    from triage.logs import heap

    monkeypatch.setattr(heap, "_state", {"allowed": False, "done": False})
    assert heap.keep_freed_blocks() is False
    heap.allow()
    first = heap.keep_freed_blocks()  # True on glibc (these machines), False elsewhere
    assert heap.keep_freed_blocks() is False
    import platform

    if platform.libc_ver()[0] == "glibc":
        assert first is True
