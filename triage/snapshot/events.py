"""Events and their times: what an event is about, when it was first and last seen and
how often (core/v1 and events.k8s.io alike), and the one parser of the API's times."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from triage.logs.linetime import parse_time
from triage.snapshot.objects import Obj, meta


def _involved(ev: Obj) -> Obj | None:
    inv = ev.get("involvedObject") or ev.get("regarding") or {}
    return inv if isinstance(inv, dict) else None


parse_rfc3339 = parse_time  # one parser of the API's times, in the lowest layer


@dataclass(frozen=True)
class EventTimes:
    """When an event was first and last seen, and how often."""

    first: str | None  # RFC 3339, as the event says
    last: str | None
    count: int


def event_times(ev: Obj) -> EventTimes:
    """When an event was first and last seen and how often, from either API's fields.

    core/v1 events carry ``firstTimestamp``/``lastTimestamp``/``count``;
    events written through ``events.k8s.io`` carry ``eventTime`` (the first
    occurrence) and, once repeated, ``series.lastObservedTime`` and
    ``series.count``, with the legacy fields empty or stale. The latest of
    the "last" fields is the last occurrence.
    """
    raw_series = ev.get("series")
    series: Obj = raw_series if isinstance(raw_series, dict) else {}
    first = next((str(v) for v in (ev.get("firstTimestamp"), ev.get("deprecatedFirstTimestamp"),
                                   ev.get("eventTime"), meta(ev).get("creationTimestamp"))
                  if isinstance(v, str) and v and not _zero_time(v)), None)
    lasts = [str(v) for v in (ev.get("lastTimestamp"), ev.get("deprecatedLastTimestamp"),
                              series.get("lastObservedTime"), ev.get("eventTime"))
             if isinstance(v, str) and v and not _zero_time(v) and parse_rfc3339(v) is not None]
    last = max(lasts, key=lambda v: parse_rfc3339(v) or datetime.min.replace(
        tzinfo=timezone.utc)) if lasts else first
    count = 1
    for raw in (series.get("count"), ev.get("count"), ev.get("deprecatedCount")):
        if isinstance(raw, (int, str)) and str(raw).isdigit():
            count = max(count, int(raw))
    return EventTimes(first, last, count)


def _zero_time(stamp: str) -> bool:
    """Go's zero time (``0001-01-01T00:00:00Z``): what client-go writes for a time that
    was never set. No time, not the year 1."""
    when = parse_rfc3339(stamp)
    return when is not None and when.year <= 1
