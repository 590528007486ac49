"""A finding (a pattern that matched a pod) with the fields it is about, its fix and the
patch that applies it; a rule that could not be evaluated."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from triage.results.verdicts import Severity, Verdict


@dataclass(frozen=True)
class Patch:
    """A reviewable patch against the object that owns the pod; never applied by the tool."""

    api_version: str
    kind: str
    namespace: str
    name: str
    type: str  # strategic | merge | json
    body: Any  # the patch: an object (strategic, merge) or a list (json)

    @property
    def resource(self) -> str:
        return PATCH_RESOURCES.get(self.kind, self.kind.lower())

    def to_document(self) -> dict[str, Any]:
        return {"apiVersion": self.api_version, "kind": self.kind, "namespace": self.namespace,
                "name": self.name, "type": self.type, "patch": self.body}


PATCH_RESOURCES = {
    "Deployment": "deployment", "StatefulSet": "statefulset", "ReplicaSet": "replicaset",
    "DaemonSet": "daemonset", "InferenceService": "inferenceservice",
    "LeaderWorkerSet": "leaderworkerset", "HorizontalPodAutoscaler": "hpa",
    "PersistentVolumeClaim": "pvc",
}


def _patch(p: dict[str, Any]) -> Patch:
    return Patch(str(p["apiVersion"]), str(p["kind"]), str(p["namespace"]), str(p["name"]),
                 str(p["type"]), p["patch"])


@dataclass(frozen=True)
class Fix:
    """What to change, computed from the pod's own facts by the pattern's ``fix``."""

    text: str
    values: tuple[tuple[str, Any], ...] = ()  # each computed number under a stable name
    patch: Patch | None = None
    # kubectl commands with the real names, quoted, naming the cluster; the last is the
    # patch's (``kubectl patch ... -p``) when there is a patch.
    commands: tuple[str, ...] = ()
    # Facts the fix needed and did not have (then ``text`` is the general advice).
    missing: tuple[str, ...] = ()
    # The edits behind ``patch`` (filled), so one workload's fixes combine into one patch.
    edits: Any = None

    @property
    def run(self) -> tuple[str, ...]:
        """The commands to run besides the patch (the patch is shown with its file)."""
        return self.commands[:-1] if self.patch is not None and self.commands \
            else self.commands

    def value_map(self) -> dict[str, Any]:
        return dict(self.values)

    def to_document(self) -> dict[str, Any]:
        return {"text": self.text, "values": self.value_map(),
                "patch": self.patch.to_document() if self.patch else None,
                "commands": list(self.commands), "missing": list(self.missing)}

    @classmethod
    def from_document(cls, doc: dict[str, Any] | None) -> Fix | None:
        if not doc:
            return None
        p = doc.get("patch")
        return cls(text=str(doc.get("text", "")),
                   values=tuple((str(k), v) for k, v in (doc.get("values") or {}).items()),
                   patch=_patch(p) if p else None,
                   commands=tuple(doc.get("commands") or ()),
                   missing=tuple(doc.get("missing") or ()))


@dataclass(frozen=True)
class Location:
    """A field of an API object a finding is about: the object as it was read and the
    path to the field inside it (``("spec", "containers", 0, "args")``). The field may
    be missing (no startupProbe): the path then says where it belongs. ``lint`` turns
    it into a file, line and column; a report about a live pod does not show it."""

    obj: dict[str, Any] = field(compare=False, repr=False)
    path: tuple[str | int, ...] = ()

    def same(self, other: Location) -> bool:
        return self.obj is other.obj and self.path == other.path


@dataclass(frozen=True)
class Finding:
    """One pattern that matched a pod, with its evidence and fix."""

    id: str
    severity: Severity
    title: str
    step: int
    container: str
    evidence: tuple[str, ...]
    remediation: str
    # A fallback finding (a crash with no known signature) names no cause:
    # it is shown, but never decides its step's verdict.
    fallback: bool = False
    # Set when the pattern's `escalate` rule held: the step verdict this
    # finding asks for, and the sentence that says why.
    escalated: Verdict | None = None
    escalation_note: str = ""
    fix: Fix | None = None
    # The fields the finding's rule found true, most specific first (see Location).
    at: tuple[Location, ...] = ()
    # False: not what its step asks about (a port clash under step 2, "CUDA
    # OOM"); shown beside the step, never deciding its verdict.
    answers_step: bool = True

    @property
    def verdict(self) -> Verdict | None:
        """What this finding says about its own row: its escalation, else by severity."""
        return self.escalated or self.severity.verdict


@dataclass(frozen=True)
class Unevaluated:
    """A rule that could not be evaluated for a container: never a silent 'no match'."""

    pattern: str
    step: int
    container: str
    reason: str
