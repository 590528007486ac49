"""The line that states the cause: what a log line says about a failure, and which line of
a crash to read first.

One mechanism for every place that quotes a log as proof: the fallbacks' root-cause line
(``crashloop-unknown``, ``engine-died``), the order of every finding's evidence (its
first line is the one that states the cause), the card's proof line and the timeline's
error entry.

A line *states a cause* (``Says.CAUSE``) when it has the shape of an error's message in
any program's log: a Python exception's line (``ValueError: Total number of attention
heads (32) must be divisible ...``, the innermost and the chained ones alike), one of
pydantic's error lines under its "N validation errors for X" header, argparse's
``PROG: error: ...``, C++'s ``what():``, torch's "terminated with exception: ...",
NCCL's ``WARN`` line. What is not the cause, whatever comes last:

- ``AFTERMATH``: what followed the failure (the shell's ``Killed``, ``Segmentation fault
  (core dumped)``, Python's ``Fatal Python error: Aborted``, vLLM's SIGTERM handler);
  it states the cause only when nothing before it does;
- ``POINTER``: a wrapper that says something failed and points elsewhere (vLLM's
  "Engine core initialization failed. See root cause above.", ``EngineDeadError``,
  NCCL's "unhandled system error (run with NCCL_DEBUG=INFO for details)", pydantic's
  header, "terminate called after throwing ...");
- ``WARNING``: a Python warning, or an exception logged at WARNING (handled);
- ``PLAIN``: any other line (an INFO line a pattern matched: "Available KV cache memory:
  -2.16 GiB");
- ``NOISE``: never the cause: a traceback's frames and source echo, carets, argparse's
  usage text, the hints printed after a CUDA error, NCCL's INFO chatter.

Among the lines of one crash, the best rank wins and, within a rank, the first in time:
the first error of a CUDA or NCCL sequence, not the chatter after it; the cause a
chained exception started from, not the wrapper that re-raised it. A crash is the
lines after the server last said it was serving (a stats line, "Application startup
complete") and, where the lines say when they were printed, within a few minutes before
its last error line (``crash_window_seconds`` of patterns/checklist.yaml): an error the
server survived, or one long before, is not this crash's cause.

The words of particular programs (vLLM's wrappers, PyTorch's hints) are wordings
(``patterns/wordings.yaml``); the shapes of an error line are this module's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import IntEnum
from typing import Any

from triage.logs import LogIndex, LogLine, Query, linetime
from triage.speed import lazyregex
from triage.vllm import wordings


class Says(IntEnum):
    """What a line says about a failure; lower states it better."""

    CAUSE = 0
    AFTERMATH = 1
    POINTER = 2
    WARNING = 3
    PLAIN = 4
    NOISE = 5


# The shapes of an error line in any program's log. The message may follow a prefix the
# log parser did not recognise because it was cut or mangled in copying ("[multiproc_
# executor.py:492] ValueError: ...", "orkerWrapper pid=581) RuntimeError: ...", a k9s box
# "│ ERROR ... RuntimeError: ..."): after a closing bracket or parenthesis, or a box / pipe
# border. No \s: the log engine tries a match across a line and the two before it
# (hard-wrapped messages), and a shape must not start on one line and end on the next.
ERROR_SHAPE = lazyregex.compile(
    r"(?:^|[\])│|][ \t]*|:\d+: )(?:(?P<trace>Traceback \(most recent)"
    r"|(?P<warn>[A-Za-z_][\w.]*Warning\b:)"
    r"|(?P<after>Fatal Python error|Bus error|Segmentation fault|Killed$"
    r"|Aborted \(core dumped\)|Illegal instruction)"
    r"|(?P<header>[A-Za-z_][\w.]*ValidationError: \d+ validation errors? for )"
    r"|(?P<exc>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)\b:?|(?:Exception|Error): "
    r"|[A-Za-z_][\w.]*Failed:"
    r"|Exception in (?:worker|thread)\b))"
    r"|(?P<nccl>\bNCCL WARN\b)"
    r"|^[ \t]*(?P<pydantic>Value error, |Assertion failed, )"
    r"|^[ \t]*(?P<field>\S[^\n]*\[type=\w+, input_value=)"
    r"|^(?P<argparse>[\w.\- ]*\w: error: )"
    r"|(?P<torch>\bterminated with exception: )"
    r"|^[ \t]*(?P<what>what\(\): )"
    r"|(?P<terminate>\bterminate called after throwing an instance of )"
    r"|(?P<signal>\*\*\* SIG[A-Z]+ received at time=)"
    r"|^(?P<shell>(?:/bin/)?(?:ba|da)?sh: line \d+: +\d+ (?:Killed|Segmentation fault"
    r"|Aborted|Bus error))"
)
# A traceback's own lines, never a message: its header, a frame ("File ..., line N, in f",
# C++'s "frame #0:", torch's "Exception raised from ... at"), the chaining sentences, the
# carets under a source line, and the source echo (a line of code indented four or more,
# as Python prints it under its frame: a statement, a call, an assignment, a closing
# bracket); argparse's usage text and its indented option lines.
NOT_A_MESSAGE = lazyregex.compile(
    r'^[ \t]*File "[^"\n]*", line \d+|^[ \t]*frame #\d+: |^Exception raised from \S+ at '
    r"|^[ \t]*Traceback \(most recent call last\)|^The above exception was the direct cause"
    r"|^During handling of the above exception|^[ \t]*[\^~]+[ \t]*$|^usage: "
    r"|^[ \t]{4,}(?:(?:raise|return|assert|await|yield|del|if|elif|for|while|with|from"
    r"|import)\b|[A-Za-z_][\w.]*(?:\[[^\]\n]*\])*(?:\(|[ \t]*[-+*/|&]?=[^=])|\[-"
    r"|[)\]}],?[ \t]*$)")
_HINTS = wordings.regex("log_hints")
_AFTERMATH = wordings.regex("failure_aftermath")
_POINTERS = wordings.either("vllm_engine_start_failed", "vllm_engine_dead",
                            "nccl_debug_pointer")
_QUIET_LEVELS = ("DEBUG", "INFO")

# The error-shaped lines of every log, answered by the scan's one pass: the candidates of
# a crash's root cause (the last ERROR_LINES_KEPT of them).
ERROR_LINES = Query(ERROR_SHAPE)
ERROR_LINES_KEPT = 256
# The last line that says the server was serving: a crash's lines come after it.
SERVING = Query(wordings.either("vllm_server_ready", "vllm_stats_line"))


def says(line: LogLine, skip: Sequence[Any] = ()) -> Says:
    """What ``line`` says about a failure; ``skip``: more wrappers (a pattern's own)."""
    message = line.message
    if _HINTS.search(message) or NOT_A_MESSAGE.search(message):
        return Says.NOISE
    if line.level in _QUIET_LEVELS:
        return Says.PLAIN
    if _AFTERMATH.search(message):
        return Says.AFTERMATH
    if _POINTERS.search(message) or any(rx.search(message) for rx in skip):
        return Says.POINTER
    m = ERROR_SHAPE.search(message)
    if m is None:
        return Says.PLAIN
    kind = m.lastgroup
    if kind == "trace":
        return Says.NOISE
    if kind in ("after", "signal", "shell"):
        return Says.AFTERMATH
    if kind in ("header", "terminate"):
        return Says.POINTER
    if kind == "warn" or (kind == "exc" and line.level == "WARNING"):
        return Says.WARNING
    return Says.CAUSE


@dataclass(frozen=True)
class Cause:
    """A line of a log and what it says, in the order lines were printed."""

    stream: str
    line: LogLine
    says: Says

    def key(self, streams: Sequence[str]) -> tuple[int, int, int]:
        return (self.says, streams.index(self.stream) if self.stream in streams else 0,
                self.line.number)


def first_cause(found: Iterable[Cause], streams: Sequence[str] = ()) -> Cause | None:
    """The line to read first: the best rank, then the first printed (``streams`` in the
    order their runs happened, the previous container's log before the current one)."""
    return min(found, key=lambda c: c.key(streams), default=None)


def crash_lines(index: LogIndex, stream: str, skip: Sequence[Any] = (),
                window: float | None = None, anchor: datetime | None = None) -> list[Cause]:
    """The error-shaped lines of the log's last crash, each with what it says: those after
    the server last said it was serving and, when the lines say when they were printed,
    within ``window`` seconds before the last of them (``anchor``: when the run started,
    for the year of vLLM's own stamps); not logged at DEBUG or INFO, not noise."""
    serving = index.result(SERVING).last
    start = serving[-1].line.number if serving else 0
    found: list[tuple[Cause, datetime | None]] = []
    for hit in index.result(ERROR_LINES, ERROR_LINES_KEPT).last:
        line = hit.line
        if line.number <= start or line.level in _QUIET_LEVELS:
            continue
        said = says(line, skip)
        if said < Says.PLAIN:
            when = linetime.line_time(hit.stamped.raw, anchor) if hit.stamped else None
            found.append((Cause(stream, line, said), when[0] if when else None))
    last = max((t for _, t in found if t is not None), default=None)
    if window is None or last is None:
        return [c for c, _ in found]
    earliest = last - timedelta(seconds=window)
    return [c for c, t in found if t is None or t >= earliest]


def root_line(index: LogIndex, stream: str, skip: Sequence[Any] = (),
              window: float | None = None, anchor: datetime | None = None) -> Cause | None:
    """The line of the log's last crash that states its cause; None when no line has the
    shape of an error."""
    return first_cause(crash_lines(index, stream, skip, window, anchor))


def same_message(cause: Cause, found: Iterable[Cause], reach: int = 6) -> list[Cause]:
    """The lines of a multi-line message with ``cause`` (pydantic's header above it and its
    other error lines below it), as the crash's error lines hold them."""
    n = cause.line.number
    return [c for c in found if c.line.number != n and n - 3 <= c.line.number <= n + reach
            and c.says in (Says.CAUSE, Says.POINTER)]
