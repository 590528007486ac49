"""One line of a log: its prefix parsed (level, process) and its message found.

vLLM's lines come in several shapes (see shared reference, section 0):
``INFO 01-11 15:51:18 llm_engine.py:275] msg`` (V0),
``INFO 04-23 14:42:53 [file.py:124] msg`` (0.8-0.10),
``(EngineCore_DP0 pid=441) INFO 11-24 11:44:17 [gpu_worker.py:348] msg`` (V1),
with optional kubectl ``--timestamps``, ``[rank0]:`` prefixes, ANSI colours
and uvicorn's ``INFO:     msg``. Patterns match the *message* part of a line;
its level lets a pattern ignore advisory INFO lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import regex

from triage.speed import lazyregex

# A single line longer than this is cut for matching and evidence, keeping its head and
# its tail (a crash printed at the end of a huge line is read): one 10 MB line must not
# cost more than any other line.
MAX_LINE_CHARS = 4000
# The same bound on a line's bytes as a log is read (the middle is skipped as it streams).
MAX_LINE_BYTES = MAX_LINE_CHARS


_ANSI = lazyregex.compile(r"\x1b\[[0-9;?]*[A-Za-z]|#033\[[0-9;]*m")
_CONTROL = lazyregex.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_CONTROL_BYTES = bytes([*range(0, 9), 11, 12, *range(14, 32), 127])
_PREFIX_PARTS = r"""
    (?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)[ \t])?   # kubectl --timestamps
    (?:[ \t]*\|[ \t]*\[[^\]\n]*\][ \t])?                            # CI log wrappers
    (?:\[rank\d+\]:[ \t]*)?
    # (Proc pid=N), a worker's with its rank: "VllmWorker rank=1" (vLLM 0.8-0.9),
    # "VllmWorker TP1" (0.10), "VllmWorker TP0 EP0"
    (?:\((?P<proc>[A-Za-z_][\w]*(?:[ \t]+(?:rank=\d+|[A-Z]{2}\d+(?:(?:_|[ \t])[A-Z]{2}\d+)*))?
        [ \t]+pid=\d+[^)\n]*)\)[ \t])?
    # one space after it: the message keeps a traceback's indentation
    (?:\[rank\d+\]:[ \t]*)?
    (?:
        (?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)[ \t]+
        \d\d-\d\d[ \t]\d\d:\d\d:\d\d(?:\.\d+)?[ \t]+
        \[?(?P<src>[\w./<>-]+:\d+)\]?\]?[ \t]?
      |
        (?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL):[ \t]+                 # uvicorn
    )?"""
_PREFIX = lazyregex.compile(r"^" + _PREFIX_PARTS + r"(?P<msg>.*)$", regex.VERBOSE | regex.DOTALL)


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


def _parse_raw(number: int, raw: bytes) -> LogLine:
    """A line of a scanned block (already cut to MAX_LINE_BYTES, head and tail)."""
    return parse_line(number, decode(raw), cleaned=True, cut=False)
