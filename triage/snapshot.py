"""The snapshot: everything collected about one scan, in the API's own shape.

Collectors (live cluster or saved bundle) produce a Snapshot; nothing
downstream knows where it came from. Objects stay plain dicts exactly as the
API server returns them (camelCase JSON), so patterns can name API fields
such as ``lastState.terminated.reason`` directly.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

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

    def __str__(self) -> str:
        return f"{self.what}: {self.reason}"


@dataclass
class Snapshot:
    """What one scan read, keyed the way the classifier looks it up."""

    context: str | None
    namespace: str | None  # None means every namespace (-A)
    collected_at: str  # RFC 3339, UTC
    tool_version: str
    objects: dict[str, list[Obj]] = field(default_factory=dict)
    # (namespace, pod, container, stream) -> text
    logs: dict[tuple[str, str, str, str], str] = field(default_factory=dict)
    # (namespace, pod) -> Prometheus exposition text
    metrics: dict[tuple[str, str], str] = field(default_factory=dict)
    failures: list[ReadFailure] = field(default_factory=list)
    # Kinds the cluster does not serve at all (for example no KServe CRD).
    absent_kinds: set[str] = field(default_factory=set)
    # The user's -l selector: its pods are triaged even when no container
    # looks like vLLM by image or command.
    selector: str | None = None

    def items(self, kind: str) -> list[Obj]:
        return self.objects.get(kind, [])

    def pods(self) -> list[Obj]:
        return self.items("pods")

    def node(self, name: str | None) -> Obj | None:
        if not name:
            return None
        return next((n for n in self.items("nodes") if meta(n).get("name") == name), None)

    def find(self, kind: str, namespace: str, name: str) -> Obj | None:
        for obj in self.items(kind):
            m = meta(obj)
            if m.get("name") == name and m.get("namespace") == namespace:
                return obj
        return None

    def log(self, namespace: str, pod: str, container: str, stream: str) -> str | None:
        return self.logs.get((namespace, pod, container, stream))

    def events_about(self, kind: str, namespace: str, name: str) -> Iterator[Obj]:
        for ev in self.items("events"):
            inv = ev.get("involvedObject") or ev.get("regarding") or {}
            if (
                inv.get("kind") == kind
                and inv.get("name") == name
                and (inv.get("namespace") or meta(ev).get("namespace")) == namespace
            ):
                yield ev


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
