"""Container log text as lines that patterns can be matched against.

vLLM's lines come in several shapes (see shared reference, section 0):
``INFO 01-11 15:51:18 llm_engine.py:275] msg`` (V0),
``INFO 04-23 14:42:53 [file.py:124] msg`` (0.8-0.10),
``(EngineCore_DP0 pid=441) INFO 11-24 11:44:17 [gpu_worker.py:348] msg`` (V1),
with optional kubectl ``--timestamps``, ``[rank0]:`` prefixes, ANSI colours
and uvicorn's ``INFO:     msg``. Patterns match the message part; the
level, when there is one, lets a pattern ignore advisory INFO lines.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import regex

# A single line longer than this is cut for matching and evidence: one 10 MB
# line must not cost more than any other line.
MAX_LINE_CHARS = 4000

_ANSI = regex.compile(r"\x1b\[[0-9;?]*[A-Za-z]|#033\[[0-9;]*m")
_CONTROL = regex.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_PREFIX = regex.compile(
    r"""^
    (?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)\s)?   # kubectl --timestamps
    (?:\s*\|\s*\[[^\]]*\]\s)?                                             # CI log wrappers
    (?:\[rank\d+\]:\s*)?
    (?:\((?P<proc>[A-Za-z_][\w]*(?:\s+rank=\d+)?\s+pid=\d+[^)]*)\)\s+)?   # (EngineCore_DP0 pid=N)
    (?:\[rank\d+\]:\s*)?
    (?:
        (?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s+
        \d\d-\d\d\s\d\d:\d\d:\d\d(?:\.\d+)?\s+
        \[?(?P<src>[\w./<>-]+:\d+)\]?\]?\s?
      |
        (?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL):\s+                 # uvicorn
    )?
    (?P<msg>.*)$""",
    regex.VERBOSE | regex.DOTALL,
)


@dataclass(frozen=True, slots=True)  # hundreds of thousands of these in a big scan
class LogLine:
    number: int  # 1-based line number in the collected text
    raw: str  # the line as printed (cut to MAX_LINE_CHARS), ANSI removed
    level: str | None  # DEBUG/INFO/WARNING/ERROR/CRITICAL, None for unprefixed lines
    process: str | None  # e.g. "EngineCore_DP0 pid=441"
    # Where the message sits in raw; kept as offsets so a big scan holds each
    # line's text once, not twice.
    msg_start: int = 0
    msg_end: int = -1

    @property
    def message(self) -> str:
        """The line without timestamp / process / level prefixes."""
        return self.raw[self.msg_start:self.msg_end if self.msg_end >= 0 else None]


def _clean(text: str) -> str:
    cleaned: str = _CONTROL.sub("", _ANSI.sub("", text))
    return cleaned


def parse_line(number: int, raw: str, cleaned: bool = False) -> LogLine:
    cut = len(raw) - MAX_LINE_CHARS
    raw = raw[:MAX_LINE_CHARS] if cleaned else _clean(raw[:MAX_LINE_CHARS])
    raw = raw.rstrip("\r")
    m = _PREFIX.match(raw)
    if m is None:  # cannot happen with a trailing .*, kept for type narrowing
        return LogLine(number, raw, None, None)
    level = m.group("level")
    if level == "WARN":
        level = "WARNING"
    shown = f"{raw} [... {cut:,} more characters cut]" if cut > 0 else raw
    return LogLine(number, shown, level, m.group("proc"), m.start("msg"), m.end("msg"))


def split_lines(text: str) -> list[LogLine]:
    """Parse a whole log. tqdm redraws with carriage returns; keep the last draw."""
    lines: list[LogLine] = []
    # One pass over the whole text, not two substitutions per line.
    text = _clean(text)
    for number, chunk in enumerate(text.split("\n"), start=1):
        if "\r" in chunk.rstrip("\r"):
            parts = [p for p in chunk.split("\r") if p.strip()]
            chunk = parts[-1] if parts else ""
        if chunk.strip():
            lines.append(parse_line(number, chunk, cleaned=True))
    return lines


class LogText:
    """A parsed log plus its messages joined, so a pattern is searched once per log.

    One C-speed ``finditer`` over the joined messages, mapped back to lines,
    replaces a Python call per line per pattern; a message that matches on
    its own also matches inside the joined text (patterns use MULTILINE, so
    ``^`` and ``$`` still mean a line's message start and end).
    """

    def __init__(self, lines: list[LogLine]) -> None:
        self.lines = lines
        self.joined = "\n".join(line.message for line in lines)
        self._starts: list[int] = []
        offset = 0
        for line in lines:
            self._starts.append(offset)
            offset += len(line.message) + 1

    def matching(self, rx: Any, timeout: float | None = None) -> Iterator[tuple[int, Any]]:
        """(line index, first match) for every line the pattern matches, in order."""
        last = -1
        for m in rx.finditer(self.joined, timeout=timeout):
            index = bisect_right(self._starts, m.start()) - 1
            if index != last:
                last = index
                yield index, m


def decode(data: bytes) -> str:
    """Logs are mostly UTF-8; binary garbage must not stop a scan."""
    text: str = data.decode("utf-8", errors="replace")
    return text
