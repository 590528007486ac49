"""The streaming log engine: same answers with and without Hyperscan, whatever the blocks.

Every log under fixtures/ is scanned for every query the shipped patterns and
facts use, with the Hyperscan prefilter and with the pure-Python path, with
the normal block size and with tiny blocks (so lines, context and wrapped
messages straddle block boundaries): the results must be identical.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path
from typing import Any

import pytest
import regex

from tests.conftest import FIXTURES
from triage.facts import LOG_QUERIES
from triage.logs import Hit, LogIndex, LogSource, Query, QuerySet, linetime, parse_line, scan
from triage.logs.source import BLOCK_BYTES
from triage.rules.evaluate import queries_for
from triage.rules.loader import load_patterns

QUERIES = LOG_QUERIES.merged(queries_for(load_patterns().patterns))
LOGS = sorted(FIXTURES.glob("*/logs/*/*/*.log"))


def summary(index: LogIndex) -> dict[str, Any]:
    def hit(h: Hit) -> tuple[Any, ...]:
        return (h.line.number, h.line.raw, h.groups, [ln.number for ln in h.before],
                [ln.number for ln in h.after])
    return {
        "lines": index.lines,
        "tail": [(ln.number, ln.raw) for ln in index.tail],
        "head": [(ln.number, ln.raw) for ln in index.head],
        "results": {key: (r.count, r.unknown, [hit(h) for h in r.first],
                          [hit(h)[:3] for h in r.last])
                    for key, r in index.results.items()},
    }


def scanned(source: LogSource, queries: QuerySet, monkeypatch: pytest.MonkeyPatch,
            engine: str, block: int | None = None) -> dict[str, Any]:
    with monkeypatch.context() as m:
        if engine == "python":
            m.setenv("VLLM_TRIAGE_NO_HYPERSCAN", "1")
        if block:
            m.setattr("triage.logs.source.BLOCK_BYTES", block)
        return summary(scan(source, queries))


@pytest.mark.slow  # every fixture log, scanned four ways
@pytest.mark.parametrize("path", LOGS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_fixture_log_gives_the_same_answers_every_way(
        path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = LogSource(path=path)
    reference = scanned(source, QUERIES, monkeypatch, "python")
    assert scanned(source, QUERIES, monkeypatch, "hyperscan") == reference
    assert scanned(source, QUERIES, monkeypatch, "hyperscan", block=997) == reference
    assert scanned(source, QUERIES, monkeypatch, "python", block=997) == reference


CRASH = ("(EngineCore_0 pid=270) ERROR 11-28 03:06:57 [core.py:700] torch.OutOfMemoryError: "
         "CUDA out of memory. Tried to allocate 160.00 MiB.")
OOM = Query(regex.compile(r"\bCUDA out of memory\. Tried to allocate\b", regex.MULTILINE))


def one(text: str | bytes, query: Query = OOM, keep_last: int = 1) -> LogIndex:
    qs = QuerySet()
    qs.add(query, keep_last)
    return scan(LogSource.of(text), qs)


@pytest.mark.parametrize("engine", ["hyperscan", "python"])
def test_a_crash_after_a_line_longer_than_a_block(engine: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    if engine == "python":
        monkeypatch.setenv("VLLM_TRIAGE_NO_HYPERSCAN", "1")
    monkeypatch.setattr("triage.logs.source.BLOCK_BYTES", 64 * 1024)
    text = "start\n" + "x" * 300_000 + "\n" + CRASH + "\n"
    index = one(text)
    result = index.result(OOM)
    assert result.count == 1 and result.first[0].line.number == 3
    cut = next(ln for ln in index.tail if ln.number == 2)  # its head and its tail
    assert cut.raw == "x" * 2000 + " [... 296,000 more bytes cut] " + "x" * 2000
    assert index.lines == 3


def test_lines_numbers_context_and_tail() -> None:
    text = "".join(f"(APIServer pid=1) INFO 11-28 03:00:{i % 60:02d} [x.py:1] line {i}\n"
                   for i in range(1, 100)) + CRASH + "\n" + "after 1\n\nafter 2\n"
    index = one(text)
    hit = index.result(OOM).first[0]
    assert hit.line.number == 100 and hit.line.level == "ERROR"
    assert [ln.number for ln in hit.before][-2:] == [98, 99]
    assert [ln.raw for ln in hit.after] == ["after 1", "after 2"]
    assert index.lines == 103 and index.tail[-1].raw == "after 2"
    assert next(index.head).number == 1


def test_a_message_wrapped_over_lines_is_found_where_it_starts() -> None:
    wrapped = Query(regex.compile(r"KV cach\s*e is needed", regex.MULTILINE))
    text = ("(EngineCore_0 pid=270) ERROR 11-28 03:06:57 [core.py:700] ValueError: To serve "
            "at least one request with the models's max seq len (131072), (4.54 GiB KV cach\n"
            "e is needed, which is larger than the available KV cache memory (1.71 GiB).\n")
    for engine in ("hyperscan", "python"):
        with pytest.MonkeyPatch.context() as m:
            if engine == "python":
                m.setenv("VLLM_TRIAGE_NO_HYPERSCAN", "1")
            result = one(text, wrapped).result(wrapped)
        assert result.count == 1 and result.first[0].line.number == 1, engine


def test_ansi_control_bytes_and_redraws_are_cleaned_before_matching() -> None:
    text = ("\x1b[31mERROR\x1b[0m 11-28 03:06:57 [core.py:700] torch.OutOfMemoryError: CUDA out "
            "of\x00 memory. Tried to allocate 2.00 MiB\n"
            "Loading safetensors checkpoint shards:  10%\rLoading safetensors checkpoint shards:"
            "  62% Completed\n")
    index = one(text.encode())
    hit = index.result(OOM).first[0]
    assert hit.line.level == "ERROR" and "\x1b" not in hit.line.raw
    assert index.tail[-1].raw == "Loading safetensors checkpoint shards:  62% Completed"


@pytest.mark.parametrize("block", [None, 300])
def test_redraws_of_a_kubelet_line_keep_its_time(block: int | None,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A bar redrawn with \\r and no newline is one kubelet line: each piece a line of its
    own with the line's time (the runtime took it when the line ended, at the last redraw),
    less how much earlier tqdm's elapsed time says the piece was drawn; never split from
    that time by a block boundary."""
    if block:
        monkeypatch.setattr("triage.logs.source.BLOCK_BYTES", block)
    text = ("2026-11-28T02:31:00.25Z (EngineCore_DP0 pid=270) INFO 11-28 02:31:00 "
            "[weight_utils.py:296] Using model weights format ['*.safetensors']\n"
            "2026-11-28T02:40:00.5Z Downloading (incomplete total...):  41%|####      | "
            "6.1G/15.0G [03:50<05:40, 26.1MB/s]\rDownloading (incomplete total...):  42%|####"
            "      | 6.3G/15.0G [04:00<05:35, 26.1MB/s]\rDownloading (incomplete total...):  43%"
            "|####      | 6.4G/15.0G [04:10<05:30, 26.1MB/s]\rno elapsed time here\n")
    index = one(text.encode())
    times = [linetime.kubelet_time(ln.raw) for ln in index.tail]
    assert [t.strftime("%H:%M:%S.%f") if t else None for t in times] == [
        "02:31:00.250000", "02:39:40.500000", "02:39:50.500000", "02:40:00.500000",
        "02:40:00.500000"]
    assert index.tail[-2].message.startswith("Downloading (incomplete total...):  43%")


def test_binary_garbage_does_not_stop_a_scan() -> None:
    data = bytes(range(256)) * 4000 + b"\n" + CRASH.encode() + b"\n\xff\xfe\n"
    assert one(data).result(OOM).count == 1


def test_levels_count_only_their_lines() -> None:
    errors_only = Query(regex.compile(".", regex.MULTILINE), frozenset({"ERROR", "CRITICAL"}))
    text = "INFO 11-28 03:00:00 [a.py:1] fine\n" + CRASH + "\nplain line\n"
    result = one(text, errors_only).result(errors_only)
    assert result.count == 1 and result.first[0].line.number == 2


def test_keep_last_keeps_the_last_matches_in_order() -> None:
    text = "".join(f"RuntimeError: failure {i}\n" for i in range(500))
    err = Query(regex.compile(r"^RuntimeError: failure (\d+)$", regex.MULTILINE))
    result = one(text, err, keep_last=5).result(err, keep_last=5)
    assert result.count == 500
    assert [h.groups[1] for h in result.last] == ["495", "496", "497", "498", "499"]
    assert [h.line.number for h in result.first] == [1, 2, 3]


@pytest.mark.slow  # logs of tens of MiB
def test_memory_stays_bounded_whatever_the_log_size(tmp_path: Path) -> None:
    """A 48 MiB log is scanned in blocks: peak Python allocation stays near one block."""
    path = tmp_path / "big.log"
    line = (b"(APIServer pid=1) INFO:     10.48.3.7:51234 - \"POST /v1/chat/completions "
            b"HTTP/1.1\" 200 OK\n")
    with path.open("wb") as f:
        for _ in range(48 * 1024 * 1024 // (len(line) * 1000)):
            f.write(line * 1000)
        f.write(CRASH.encode() + b"\n")
    tracemalloc.start()
    index = scan(LogSource(path=path), QUERIES)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert index.result(OOM).count == 1
    assert peak < 4 * BLOCK_BYTES, f"peak {peak / 2**20:.1f} MiB"


@pytest.mark.parametrize("process", ["VllmWorker rank=1 pid=413", "VllmWorker TP1 pid=413",
                                     "VllmWorker TP0 EP0 pid=3", "Worker_TP1 pid=413",
                                     "EngineCore_DP0 pid=270"])
def test_every_vllm_process_prefix_gives_the_level_and_keeps_the_indentation(
        process: str) -> None:
    # vLLM names a worker by its rank in each release's way (0.9 "rank=1", 0.10 "TP1",
    # 0.11 "Worker_TP1"); the source echo under a frame keeps its four spaces
    line = parse_line(1, f"({process}) ERROR 11-28 03:09:20 [multiproc_executor.py:596]"
                         "     assert param_data.shape == loaded_weight.shape")
    assert (line.process, line.level) == (process, "ERROR")
    assert line.message == "    assert param_data.shape == loaded_weight.shape"
