"""When a log line was printed: the kubelet's time first, vLLM's own stamp second.

Logs are read with ``timestamps=true``: the kubelet puts the time it
received each line in front of it, RFC 3339 with nanoseconds in UTC
(``2026-11-28T03:05:19.123456789Z ``), as ``kubectl logs --timestamps``
shows. That time is trusted: it has a year and a zone, and every line has
one (tqdm bars and uvicorn lines included). The log engine strips it before
matching (``triage.logs``: a pattern sees the message); bundles keep it.

Without it (a log pasted or saved without ``--timestamps``) the only time is
vLLM's own ``MM-DD hh:mm:ss`` stamp, which has no year and is in the
container's local zone: the year is taken from the container run the log
belongs to and UTC is assumed, and lines without a stamp have no time.
``source`` says which one a time came from, for the evidence.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from triage.speed import lazyregex

# The kubelet's prefix with timestamps=true: RFC3339Nano (trailing zeros of the fraction
# trimmed, as Go prints it), then one space.
KUBELET_STAMP = lazyregex.compile(
    r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)[ \t]")
# vLLM's own stamp, MM-DD hh:mm:ss (no year).
VLLM_STAMP = lazyregex.compile(r"\b(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)\b")

KUBELET = "kubelet"
VLLM = "vllm"
SOURCES = {
    KUBELET: "the kubelet's time of each line (logs read with timestamps=true)",
    VLLM: "vLLM's own MM-DD hh:mm:ss stamps (no year: taken from the container run; UTC "
          "assumed; lines without a stamp have no time)",
}


def parse_time(stamp: Any) -> datetime | None:
    """An RFC 3339 time as the API writes it (``2026-11-28T02:31:02Z``), or None."""
    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        when = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def kubelet_time(raw: str) -> datetime | None:
    """The kubelet's time in front of a line read with timestamps=true, or None."""
    m = KUBELET_STAMP.match(raw)
    if m is None:
        return None
    fraction = (m.group(2) or "").ljust(6, "0")[:6]  # datetime keeps microseconds
    when = parse_time(f"{m.group(1)}.{fraction}{m.group(3)}")
    return when.astimezone(timezone.utc) if when else None


def without_kubelet_time(raw: str) -> str:
    """The line as the container printed it (the kubelet's time removed)."""
    m = KUBELET_STAMP.match(raw)
    return raw[m.end():] if m else raw


def vllm_time(raw: str, anchor: datetime | None) -> datetime | None:
    """vLLM's own stamp as a UTC time, its year from ``anchor`` (the run's start)."""
    m = VLLM_STAMP.search(without_kubelet_time(raw)[:160])
    if not m or anchor is None:
        return None
    month, day, hour, minute, second = (int(g) for g in m.groups())
    for year in (anchor.year, anchor.year - 1, anchor.year + 1):
        try:
            when = datetime(year, month, day, hour, minute, second, tzinfo=timezone.utc)
        except ValueError:
            continue
        if abs(when - anchor) < timedelta(days=180):
            return when
    return None


def line_time(raw: str, anchor: datetime | None) -> tuple[datetime, str] | None:
    """When a line was printed and where that time came from (KUBELET or VLLM)."""
    when = kubelet_time(raw)
    if when is not None:
        return when, KUBELET
    when = vllm_time(raw, anchor)
    return (when, VLLM) if when is not None else None
