"""The end of a log that is too long to keep whole, as log text.

Both collectors keep the same bound (the live one from what the API server
streams, the offline one from a file's end): the last bytes of a log, whole
lines, and before them the end of the line the cut fell in, marked as cut.
A crash is printed last, so the end is what must be read.
"""

from __future__ import annotations

# Of a line too long to keep whole, its end is kept; shorter than
# triage.logs.lines.MAX_LINE_CHARS so the kept end is what patterns are matched on.
LINE_END_KEPT = 3000


def size_label(n: int) -> str:
    return f"{n // (1024 * 1024)} MiB" if n >= 1024 * 1024 else f"{n:,} bytes"


def keep_end(data: bytes, total: int, what: str) -> tuple[bytes, str]:
    """``data`` is the last bytes of ``total`` bytes of log (``what`` names them,
    e.g. "the 3000-line tail"). Returns the text to keep and a note saying what
    was cut ("" when nothing was)."""
    if total <= len(data):
        return data, ""  # all of it (a log that shrank or rotated between reads)
    newline = data.find(b"\n")
    partial, rest = (data, b"") if newline < 0 else (data[:newline], data[newline + 1:])
    end = partial[-LINE_END_KEPT:]
    # The cut may fall inside a word (a credential's first half): start at the next one.
    gap = next((i for i, c in enumerate(end[:256]) if c in b" \t\r"), -1)
    if gap >= 0 and len(end) > gap + 1:
        end = end[gap + 1:]
    dropped = total - len(rest) - len(end) - (1 if newline >= 0 else 0)
    marker = f"[vllm-triage: {dropped:,} earlier bytes of the log not read] ".encode()
    lines = rest.count(b"\n") + (1 if rest and not rest.endswith(b"\n") else 0)
    note = (f"{what} is {size_label(total)}, more than the {size_label(len(data))} kept: read "
            f"the last {lines} line(s) whole and the last {len(end):,} bytes of the line "
            f"before them")
    return marker + end + (b"\n" + rest if newline >= 0 else b""), note
