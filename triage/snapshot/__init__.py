"""The snapshot: everything collected about one scan, in the API's own shape.

Collectors (live cluster or saved bundle) produce a Snapshot; nothing
downstream knows where it came from. Objects stay plain dicts exactly as the
API server returns them (camelCase JSON), so patterns can name API fields
such as ``lastState.terminated.reason`` directly.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from triage.logs import LogSource
from triage.logs.linetime import parse_time

Obj = dict[str, Any]

# Resource kinds a snapshot holds, by the plural the API uses. The order is
# the order collectors read them and bundles list them.
NAMESPACED_KINDS = (
    "pods",
    "events",
    "replicasets",
    "deployments",
    "statefulsets",
    "horizontalpodautoscalers",
    "persistentvolumeclaims",
    "services",
    "configmaps",
    "inferenceservices",
    "leaderworkersets",
)
CLUSTER_KINDS = ("nodes",)
ALL_KINDS = NAMESPACED_KINDS + CLUSTER_KINDS

PREVIOUS = "previous"
CURRENT = "current"
LOG_STREAMS = (CURRENT, PREVIOUS)


@dataclass(frozen=True)
class ReadFailure:
    """One read that did not succeed; the report names it and goes on."""

    what: str  # e.g. "events in llm", "previous log of llm/vllm-0 (vllm)"
    reason: str  # e.g. "403 Forbidden: events is forbidden: User ..."
    kind: str = ""  # resource kind or "logs"/"metrics", used to tie steps to gaps
    # What the read was about, most general first: () for a cluster-wide list,
    # (namespace,) for a namespaced list, (namespace, name) for one object,
    # (namespace, pod, container, stream) for a log; (node,) for a node.
    # A failure covers every subject it is a prefix of.
    subject: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{self.what}: {self.reason}"

    def covers(self, kind: str, subject: tuple[str, ...]) -> bool:
        return self.kind == kind and subject[:len(self.subject)] == self.subject


Point = tuple[float, float]  # (unix seconds, value)


@dataclass
class PodTelemetry:
    """What Prometheus measured about one pod over the window.

    ``values`` holds the pod's windowed numbers under the metric names of
    ``triage.vllm.metrics.METRICS`` (e2e_latency_p99, requests_waiting_max,
    preemptions_per_s, ...); ``by_model`` the same per ``model_name``;
    ``series`` a few of them over time (for charts); ``gpus`` one mapping per
    GPU the DCGM exporter attributes to the pod; ``restarts`` container ->
    restarts in the window (kube-state-metrics).
    """

    values: dict[str, float] = field(default_factory=dict)
    by_model: dict[str, dict[str, float]] = field(default_factory=dict)
    series: dict[str, list[Point]] = field(default_factory=dict)
    gpus: list[dict[str, Any]] = field(default_factory=list)
    restarts: dict[str, float] = field(default_factory=dict)
    # Names Prometheus answered with NaN or +/-Inf for: "NaN", "+Inf" or "-Inf".
    not_numbers: dict[str, str] = field(default_factory=dict)


@dataclass
class PrometheusWindow:
    """The Prometheus a scan read and the window it asked about."""

    source: str  # "http://prometheus:9090" or "service monitoring/prometheus-k8s:9090 (...)"
    window_seconds: float
    end: str  # RFC 3339 UTC: every query is evaluated at this instant
    step_seconds: float = 60.0
    pods: dict[tuple[str, str], PodTelemetry] = field(default_factory=dict)
    # Queries that answered but with an error: metric name -> reason.
    errors: dict[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """How evidence names this source: 'Prometheus, last 30m'."""
        return f"Prometheus, last {format_window(self.window_seconds)}"


def format_window(seconds: float) -> str:
    """30m, 2h, 1h30m, 45s: the way --since was written."""
    total = round(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    out = (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "")
    return out + (f"{secs}s" if secs or not out else "")


@dataclass
class Snapshot:
    """What one scan read, keyed the way the classifier looks it up."""

    context: str | None
    namespace: str | None  # None means every namespace (-A)
    collected_at: str  # RFC 3339, UTC
    tool_version: str
    objects: dict[str, list[Obj]] = field(default_factory=dict)
    # (namespace, pod, container, stream) -> where the log's bytes are
    logs: dict[tuple[str, str, str, str], LogSource] = field(default_factory=dict)
    # (namespace, pod) -> Prometheus exposition text
    metrics: dict[tuple[str, str], str] = field(default_factory=dict)
    failures: list[ReadFailure] = field(default_factory=list)
    # What Prometheus measured over the window; None when it was not asked
    # (or could not be read: the failure is in ``failures``, kind "prometheus").
    prometheus: PrometheusWindow | None = None
    # Kinds the cluster does not serve at all (for example no KServe CRD).
    absent_kinds: set[str] = field(default_factory=set)
    # What a read had to cut and how (a log tail too long to keep whole).
    notes: list[str] = field(default_factory=list)
    # The user's -l selector: its pods are triaged even when no container
    # looks like vLLM by image or command.
    selector: str | None = None
    # (namespace, pod, container) selected because the log's first lines are vLLM's
    # (``triage.vllm.selection``): a bundle keeps the answer, its logs may not hold the head.
    selected_by_log: set[tuple[str, str, str]] = field(default_factory=set)
    # Crash-looping pods that were not selected, described: never an all-clear.
    passed_over: list[str] = field(default_factory=list)
    # When the scanned namespace has no vLLM pod: namespace -> how many vLLM
    # pods run there, or why other namespaces could not be looked at.
    vllm_elsewhere: dict[str, int] = field(default_factory=dict)
    elsewhere_unknown: str | None = None
    # Set when the snapshot holds manifests, not a cluster (``lint``): why nothing
    # that a running pod gives (status, logs, events, metrics, its node, other
    # revisions) is there. Rules that need those are then not applicable, never
    # "no match": evaluation says unknown with this reason.
    static: str | None = None
    _indexes: dict[str, tuple[list[Obj], int, dict[tuple[str, str], Obj]]] = field(
        default_factory=dict, repr=False, compare=False)
    _events: tuple[list[Obj], int, dict[tuple[str, str, str], list[Obj]]] | None = field(
        default=None, repr=False, compare=False)

    def items(self, kind: str) -> list[Obj]:
        return self.objects.get(kind, [])

    def failure(self, kind: str, *subject: str) -> ReadFailure | None:
        """The failed read, if any, that left this kind of thing about ``subject`` unread."""
        return next((f for f in self.failures if f.covers(kind, subject)), None)

    def pods(self) -> list[Obj]:
        return self.items("pods")

    def node(self, name: str | None) -> Obj | None:
        if not name:
            return None
        return self._index("nodes").get(("", name))

    def find(self, kind: str, namespace: str, name: str) -> Obj | None:
        return self._index(kind).get((namespace, name))

    def _index(self, kind: str) -> dict[tuple[str, str], Obj]:
        """(namespace, name) -> object, built once per kind: lookups stay O(1) per pod."""
        items = self.items(kind)
        cached = self._indexes.get(kind)
        if cached is None or cached[0] is not items or cached[1] != len(items):
            index: dict[tuple[str, str], Obj] = {}
            for obj in items:
                m = meta(obj)
                index.setdefault((str(m.get("namespace") or ""), str(m.get("name") or "")), obj)
            cached = (items, len(items), index)
            self._indexes[kind] = cached
        return cached[2]

    def release_metrics(self, namespace: str, pod: str) -> None:
        """Drop a pod's /metrics text once the pod is settled: what the steps read of it
        is kept by its containers' contexts."""
        self.metrics.pop((namespace, pod), None)

    def log(self, namespace: str, pod: str, container: str, stream: str) -> LogSource | None:
        return self.logs.get((namespace, pod, container, stream))

    def events_about(self, kind: str, namespace: str, name: str,
                     uid: str | None = None) -> Iterator[Obj]:
        """Events about one object: by ``involvedObject.uid`` when both sides have one
        (a recreated StatefulSet pod has its predecessor's name, not its uid), by kind,
        namespace and name where the event gives no uid."""
        items = self.items("events")
        if self._events is None or self._events[0] is not items or self._events[1] != len(items):
            by_subject: dict[tuple[str, str, str], list[Obj]] = {}
            for ev in items:
                inv = _involved(ev)
                if inv is None:
                    continue
                key = (str(inv.get("kind")), str(inv.get("namespace") or
                                                 meta(ev).get("namespace")), str(inv.get("name")))
                by_subject.setdefault(key, []).append(ev)
            self._events = (items, len(items), by_subject)
        for ev in self._events[2].get((kind, namespace, name), []):
            about = (_involved(ev) or {}).get("uid")
            if uid and about and str(about) != uid:
                continue
            yield ev

    def clock_skew(self, stamp: str | None) -> str:
        """`` (in the future: ...)`` when ``stamp`` is after the collection time by more than
        a minute (a node or component whose clock is wrong), else ""."""
        when, now = parse_rfc3339(stamp), parse_rfc3339(self.collected_at)
        if when is None or now is None or (when - now).total_seconds() <= 60:
            return ""
        ahead = (when - now).total_seconds()
        span = (f"{ahead / 86400 / 365.25:,.0f} years" if ahead >= 2 * 365 * 86400 else
                f"{ahead / 86400:,.0f} days" if ahead >= 2 * 86400 else
                f"{ahead / 3600:,.1f} h" if ahead >= 3600 else f"{ahead / 60:,.0f} min")
        return f" (in the future: {span} after the collection time; clock skew)"


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


def meta(obj: Obj) -> Obj:
    m = obj.get("metadata")
    return m if isinstance(m, dict) else {}


def dig(obj: Any, path: str) -> Any:
    """Follow a dotted path (``lastState.terminated.reason``) through dicts."""
    cur = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return None
        cur = cur.get(part)
    return cur
