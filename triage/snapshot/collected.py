"""The ``Snapshot``: what one scan collected (objects by kind, logs, /metrics, Prometheus'
window, notes), keyed the way the classifier looks it up, and the reads that failed
(``ReadFailure``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from triage.logs import LogSource
from triage.safety.shell import KubectlTarget
from triage.snapshot.events import _involved, parse_rfc3339
from triage.snapshot.objects import Obj, meta
from triage.snapshot.telemetry import PrometheusWindow

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
    # The layers beside the pods, each read only when the API serves it (discovery):
    # EndpointSlices (the Services' ready endpoints), KEDA ScaledObjects, Gateway API
    # Inference Extension InferencePools and KServe LLMInferenceServices.
    "endpointslices",
    "scaledobjects",
    "inferencepools",
    "llminferenceservices",
)
CLUSTER_KINDS = ("nodes",)
# Kinds of the layers beside the pods that are CRDs (or, for EndpointSlices, an API a
# cluster may not serve): read only when discovery says the API serves them; a cluster
# that does not serve one has none ("absent"), which is not a failed read.
OPTIONAL_KINDS = ("endpointslices", "scaledobjects", "inferencepools", "llminferenceservices")
# The kind of the failed read of the events about nodes (listed cluster-wide, apart from
# the namespaces' events, into the same list): not "events", so a step that reads the
# pods' events is not left unknown by it.
NODE_EVENTS = "nodeevents"
# The pods of the InferencePools' endpoint pickers (EPP), read after the pools and Services
# (their Service's selector) so that their logs can be read: not triaged, evidence for
# the pools. Written to a bundle as a PodList of their own; a fixture's are among its pods.
PICKER_PODS = "pickerpods"
ALL_KINDS = NAMESPACED_KINDS + CLUSTER_KINDS + (PICKER_PODS,)

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
    # The cluster as every printed kubectl command names it (--context, --kubeconfig).
    kubectl: KubectlTarget = field(default_factory=KubectlTarget)
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
        namespace and name where the event gives no uid. A Node is cluster-scoped: its
        events (recorded in namespace default) are found with namespace ""."""
        items = self.items("events")
        if self._events is None or self._events[0] is not items or self._events[1] != len(items):
            by_subject: dict[tuple[str, str, str], list[Obj]] = {}
            for ev in items:
                inv = _involved(ev)
                if inv is None:
                    continue
                kind_of = str(inv.get("kind"))
                key = (kind_of, "" if kind_of == "Node" else str(
                    inv.get("namespace") or meta(ev).get("namespace")), str(inv.get("name")))
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
