"""Where a log's bytes are (``LogSource``) and how a scan reads them: in blocks of whole
lines, so memory stays bounded whatever the log's size, with every line longer than
MAX_LINE_BYTES cut to its head and its tail and carriage-return redraws split into lines."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from triage.logs import heap
from triage.logs.lines import _CONTROL_BYTES, MAX_LINE_BYTES, _cut_mark, decode

# A log is read this many bytes at a time, cut back to its last whole line.
BLOCK_BYTES = 8 * 1024 * 1024


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


# --- blocks of whole lines ------------------------------------------------------------------


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
    stamp = b""  # the kubelet's time of a line cut at a redraw, for the rest of it
    with reader:
        while data := reader.read(BLOCK_BYTES):
            if len(data) == BLOCK_BYTES:  # a big log: its blocks' copies reuse the heap
                heap.keep_freed_blocks()
            # A block ends at a line's end; a bare carriage return ends one only when the
            # block has no newline (a log of tqdm redraws may hold none): the redraws of one
            # kubelet line stay in one block, with the line's time in front of them, and a
            # line longer than a block cut at a redraw gives its rest the same time. One at
            # the very end may be the half of a \r\n.
            last = data.rfind(b"\n")
            at_redraw = last < 0
            if at_redraw:
                last = data.rfind(b"\r", 0, len(data) - 1)
            if last >= 0:
                if last < len(data) - 1:
                    if reader.at_end():  # the final line has no newline
                        data += b"\n"
                    else:
                        reader.back(len(data) - last - 1)
                        data = data[:last + 1]
                if stamp:
                    data = stamp + data
                found = _KUBELET_PREFIX.match(data) if at_redraw else None
                stamp = (found.group(0) if found else stamp) if at_redraw else b""
                yield data
                del data  # before the next read: one block in memory at a time
                continue
            stamp = b""
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


def _bounded_lines(data: bytes) -> bytes:
    """``data`` with carriage-return redraws split into lines and every line longer than
    MAX_LINE_BYTES cut to its head and its tail (one rule for both search paths).

    A bare ``\\r`` (tqdm's redraw, or a log separated by carriage returns only)
    ends a line, so the last redraw is a line of its own and a crash printed
    after 10,000 redraws is the line it is. The redraws of a line read with
    the kubelet's times keep that line's time (``_redraw_times``).
    """
    if b"\r" in data:
        if data[:1].isdigit():  # read with timestamps=true: each piece keeps its line's
            data = _STAMPED_REDRAWS.sub(_redraw_times, data)
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
# The kubelet's time in front of a line read with timestamps=true, and its space.
_KUBELET_PREFIX = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?Z ")
# A line read with the kubelet's time (RFC3339Nano, UTC) whose text holds redraws.
_STAMPED_REDRAWS = re.compile(
    rb"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?Z) ([^\n]*\r(?!\n)[^\n]*)$", re.MULTILINE)
# tqdm's elapsed time, right after its counts: "[04:10<05:30, ...]" or "[1:04:10, ...]".
_ELAPSED = re.compile(rb"\[(?:(\d+):)?(\d\d):(\d\d)[<,\]]")


def _redraw_times(m: re.Match[bytes]) -> bytes:
    """A kubelet line's redraws, each a line with the kubelet's time in front: the line's
    time, which the runtime took when the line ended (its last redraw), less how much
    earlier tqdm's elapsed time says a redraw was drawn than the last one."""
    stamp, pieces = m.group(1), [p for p in _BARE_CR.split(m.group(2)) if p.strip()]
    if len(pieces) < 2:
        return m.group(0)
    elapsed = [_elapsed(p) for p in pieces]
    last = next((e for e in reversed(elapsed) if e is not None), None)
    when = _kubelet_datetime(stamp) if last is not None else None
    out = []
    for piece, seconds in zip(pieces, elapsed, strict=True):
        own = stamp
        if when is not None and last is not None and seconds is not None and seconds < last:
            own = _rfc3339nano(when - timedelta(seconds=last - seconds))
        out.append(own + b" " + piece)
    return b"\r".join(out)


def _elapsed(piece: bytes) -> int | None:
    found = _ELAPSED.search(piece)
    if found is None:
        return None
    hours, minutes, seconds = found.groups()
    return int(hours or 0) * 3600 + int(minutes) * 60 + int(seconds)


def _kubelet_datetime(stamp: bytes) -> datetime:
    whole, _, fraction = stamp.rstrip(b"Z").partition(b".")
    base = datetime.fromisoformat(whole.decode()).replace(tzinfo=timezone.utc)
    return base + timedelta(microseconds=int((fraction.decode() or "0").ljust(6, "0")[:6]))


def _rfc3339nano(when: datetime) -> bytes:
    """The kubelet's format: UTC, the fraction's trailing zeros trimmed."""
    base = when.strftime("%Y-%m-%dT%H:%M:%S")
    fraction = f"{when.microsecond:06d}".rstrip("0")
    return f"{base}.{fraction}Z".encode() if fraction else f"{base}Z".encode()
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


# --- a block's control bytes and ANSI escapes -----------------------------------------------


def _dirty(data: bytes) -> bool:
    """Control bytes or ANSI escapes in a block: it is cleaned before it is searched."""
    return len(data.translate(None, _CONTROL_BYTES)) != len(data) or b"#033[" in data


def _clean_bytes(block: bytes) -> bytes:
    return _CONTROL_B.sub(b"", _ANSI_B.sub(b"", block))


_ANSI_B = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]|#033\[[0-9;]*m")
_CONTROL_B = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
