"""The snapshot: everything collected about one scan, in the API's own shape.

Collectors (live cluster or saved bundle) produce a Snapshot; nothing
downstream knows where it came from. Objects stay plain dicts exactly as the
API server returns them (camelCase JSON), so patterns can name API fields
such as ``lastState.terminated.reason`` directly.

The modules:

- ``collected``: the ``Snapshot``, the kinds and log streams it holds, and
  ``ReadFailure``, a read that did not succeed;
- ``events``: ``event_times`` (when an event was first and last seen, how often) and
  ``parse_rfc3339``, the one parser of the API's times;
- ``telemetry``: ``PrometheusWindow`` and ``PodTelemetry``, what Prometheus measured;
- ``objects``: ``Obj`` (an API object as a dict), ``meta`` and ``dig``.

This face re-exports the public names.
"""

from __future__ import annotations

from triage.snapshot.collected import (
    ALL_KINDS,
    CLUSTER_KINDS,
    CURRENT,
    LOG_STREAMS,
    NAMESPACED_KINDS,
    NODE_EVENTS,
    OPTIONAL_KINDS,
    PICKER_PODS,
    PREVIOUS,
    ReadFailure,
    Snapshot,
)
from triage.snapshot.events import EventTimes, event_times, parse_rfc3339
from triage.snapshot.objects import Obj, dig, meta
from triage.snapshot.telemetry import PodTelemetry, Point, PrometheusWindow, format_window

__all__ = [
    "ALL_KINDS",
    "CLUSTER_KINDS",
    "CURRENT",
    "LOG_STREAMS",
    "NAMESPACED_KINDS",
    "NODE_EVENTS",
    "OPTIONAL_KINDS",
    "PICKER_PODS",
    "PREVIOUS",
    "EventTimes",
    "Obj",
    "PodTelemetry",
    "Point",
    "PrometheusWindow",
    "ReadFailure",
    "Snapshot",
    "dig",
    "event_times",
    "format_window",
    "meta",
    "parse_rfc3339",
]
