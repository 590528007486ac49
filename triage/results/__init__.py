"""The results every stage hands on and every writer takes.

Frozen dataclasses with enums for verdicts and severities: nothing is
mutated after it is built. ``Report.to_document`` gives the JSON document
of schema ``vllm-triage/report/v1``, whose shape is a public contract.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, TypeVar

SCHEMA = "vllm-triage/report/v1"


class Verdict(str, Enum):
    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    UNKNOWN = "unknown"
    NA = "n/a"

    def __str__(self) -> str:
        return self.value


class Severity(str, Enum):
    CRITICAL = "critical"
    WARNING = "warning"
    INFO = "info"

    def __str__(self) -> str:
        return self.value

    @property
    def rank(self) -> int:
        """Sort key: critical first."""
        return {"critical": 0, "warning": 1, "info": 2}[self.value]

    @property
    def verdict(self) -> Verdict | None:
        """The verdict a finding of this severity gives its checklist step."""
        return {"critical": Verdict.FAIL, "warning": Verdict.WARN}.get(self.value)


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

    def command(self, patch_file: str | None = None) -> str:
        """The kubectl command that applies it (the tool never does)."""
        return (f"kubectl patch {self.resource} {self.name} -n {self.namespace} "
                f"--type {self.type} " + (f"--patch-file {patch_file}" if patch_file else
                                         f"-p '{_compact(self.body)}'"))

    def preview(self, patch_file: str | None = None) -> str:
        """The kubectl command that shows what it would change, server-side, changing nothing."""
        return (self.command(patch_file) + " --dry-run=server -o yaml | kubectl diff -f -")

    def command_lines(self, patch_file: str, preview: bool = False) -> list[str]:
        """``command`` / ``preview`` with ``--patch-file`` as short shell lines joined by
        backslashes, so a ticket or a narrow terminal never breaks one mid-argument."""
        head = (f"kubectl patch {self.resource} {self.name} -n {self.namespace} "
                f"--type {self.type} \\")
        if preview:
            return [head, f"  --patch-file {patch_file} \\",
                    "  --dry-run=server -o yaml | kubectl diff -f -"]
        return [head, f"  --patch-file {patch_file}"]


PATCH_RESOURCES = {
    "Deployment": "deployment", "StatefulSet": "statefulset", "ReplicaSet": "replicaset",
    "DaemonSet": "daemonset", "InferenceService": "inferenceservice",
    "LeaderWorkerSet": "leaderworkerset", "HorizontalPodAutoscaler": "hpa",
    "PersistentVolumeClaim": "pvc",
}


def _patch(p: dict[str, Any]) -> Patch:
    return Patch(str(p["apiVersion"]), str(p["kind"]), str(p["namespace"]), str(p["name"]),
                 str(p["type"]), p["patch"])


def _compact(body: Any) -> str:
    import json
    return json.dumps(body, separators=(",", ":")).replace("'", "'\\''")


@dataclass(frozen=True)
class Fix:
    """What to change, computed from the pod's own facts by the pattern's ``fix``."""

    text: str
    values: tuple[tuple[str, Any], ...] = ()  # each computed number under a stable name
    patch: Patch | None = None
    commands: tuple[str, ...] = ()  # kubectl commands with the real names
    # Facts the fix needed and did not have (then ``text`` is the general advice).
    missing: tuple[str, ...] = ()
    # The edits behind ``patch`` (filled), so one workload's fixes combine into one patch.
    edits: Any = None

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


@dataclass(frozen=True)
class TimelineEvent:
    """One moment (or span) in a pod's incident timeline, on one UTC time axis."""

    at: str  # RFC 3339 UTC
    kind: str  # one of TIMELINE_KINDS
    label: str  # a few words: "weights loaded", "killed: failed liveness probe"
    detail: str = ""  # where it comes from: the event message, the log line
    until: str | None = None  # the last time, when an event repeated (probe failures)
    count: int = 1
    container: str = ""


# How a timeline entry is drawn: neutral, progress, warning or failure.
TIMELINE_KINDS = {
    "pod": "neutral", "image": "neutral", "rollout": "neutral", "start": "progress",
    "milestone": "progress", "ready": "good", "probe": "warn", "backoff": "warn",
    "schedule": "warn", "queue": "warn", "kill": "fail", "oom": "fail", "crash": "fail",
    "error": "fail",
}


@dataclass(frozen=True)
class GpuBudget:
    """One GPU's memory as vLLM divided it, in GiB; None where the logs did not say."""

    total_gib: float
    total_source: str
    utilization: float | None  # --gpu-memory-utilization
    weights_gib: float | None
    kv_cache_gib: float | None
    other_gib: float | None  # activations, CUDA graphs, non-torch memory: vLLM's share minus
    free_gib: float | None  # outside vLLM's share
    kv_cache_tokens: int | None = None
    max_model_len: int | None = None
    sequences_fit: float | None = None  # kv_cache_tokens / max_model_len
    dcgm_used_gib: float | None = None  # what DCGM saw used on the card (every process)
    notes: tuple[str, ...] = ()  # where each number came from

    def to_document(self) -> dict[str, Any]:
        return {k: (list(v) if isinstance(v, tuple) else v)
                for k, v in dataclasses.asdict(self).items()}


@dataclass(frozen=True)
class WindowSeries:
    """A value over the Prometheus window, for a small chart."""

    name: str  # e2e_latency_p99, queue_time_p99, requests_waiting, requests_running
    unit: str
    points: tuple[tuple[float, float], ...]  # (unix seconds, value)


@dataclass(frozen=True)
class PodResult:
    """One pod's findings, checklist and facts."""

    name: str
    namespace: str
    phase: str
    state: str
    restarts: int
    node: str | None
    owner: str | None
    containers: tuple[str, ...]
    findings: tuple[Finding, ...]
    unevaluated: tuple[Unevaluated, ...] = ()
    timeline: tuple[TimelineEvent, ...] = ()
    gpu_budget: GpuBudget | None = None
    series: tuple[WindowSeries, ...] = ()

    def has(self, finding_id: str) -> bool:
        return any(f.id == finding_id for f in self.findings)

    def to_document(self) -> dict[str, Any]:
        """This pod's entry of the report document's "pods"."""
        return {
            "name": self.name,
            "namespace": self.namespace,
            "phase": self.phase,
            "state": self.state,
            "restarts": self.restarts,
            "node": self.node,
            "owner": self.owner,
            "containers": list(self.containers),
            "findings": [
                {
                    "id": f.id,
                    "severity": f.severity.value,
                    "title": f.title,
                    "step": f.step,
                    "container": f.container,
                    "evidence": list(f.evidence),
                    "remediation": f.remediation,
                    "fix": f.fix.to_document() if f.fix else None,
                }
                for f in self.findings
            ],
            "timeline": [dataclasses.asdict(t) for t in self.timeline],
            "gpu_budget": self.gpu_budget.to_document() if self.gpu_budget else None,
            "series": {s.name: {"unit": s.unit, "points": [list(x) for x in s.points]}
                       for s in self.series},
        }


@dataclass(frozen=True)
class Card:
    """One failure of one workload: what broke, the line that proves it, the fix.

    Pods of a workload with the same findings share a card; the report shows
    the cards first, in this order."""

    workload: str  # Deployment/vllm-qwen, or Pod/NAME for a bare pod
    namespace: str
    finding: str
    severity: Severity
    title: str
    step: int
    pods: tuple[str, ...]  # the pods it covers
    pods_total: int  # the workload's pods in the report
    proof: str  # the one log or event line that proves it
    fix: Fix | None = None
    causes: tuple[str, ...] = ()  # what other pods or workloads have to do with it
    also: tuple[str, ...] = ()  # the other findings of the same pods (their own cards)

    @property
    def scope(self) -> str:
        """"4 of 4 pods of Deployment/x" or "pod NAME of Deployment/x"."""
        if self.workload.startswith("Pod/"):
            return f"pod {self.namespace}/{self.workload[4:]}"
        if len(self.pods) == 1 and self.pods_total == 1:
            return f"pod {self.pods[0]} of {self.workload}"
        return f"{len(self.pods)} of {self.pods_total} pods of {self.workload}"

    def to_document(self) -> dict[str, Any]:
        return {"workload": self.workload, "namespace": self.namespace,
                "finding": self.finding, "severity": self.severity.value, "title": self.title,
                "step": self.step, "scope": self.scope, "pods": list(self.pods),
                "pods_total": self.pods_total, "proof": self.proof,
                "fix": self.fix.to_document() if self.fix else None,
                "causes": list(self.causes), "also": list(self.also)}

    @classmethod
    def from_document(cls, d: dict[str, Any]) -> Card:
        return cls(workload=str(d["workload"]), namespace=str(d.get("namespace", "")),
                   finding=str(d["finding"]), severity=Severity(d["severity"]),
                   title=str(d.get("title", "")), step=int(d.get("step", 0)),
                   pods=tuple(d.get("pods") or ()), pods_total=int(d.get("pods_total", 0)),
                   proof=str(d.get("proof", "")), fix=Fix.from_document(d.get("fix")),
                   causes=tuple(d.get("causes") or ()), also=tuple(d.get("also") or ()))


@dataclass(frozen=True)
class WorkloadPatch:
    """Every fix of one workload combined into one patch (``--fix-dir`` writes one file each)."""

    workload: str
    patch: Patch
    findings: tuple[str, ...]


@dataclass(frozen=True)
class StepResult:
    """One checklist step's verdict and evidence."""

    step: int
    title: str
    verdict: Verdict
    evidence: tuple[str, ...] = ()
    remediation: tuple[str, ...] = ()


@dataclass(frozen=True)
class BesideFinding:
    """A finding that is not what its checklist step asks about (a port clash near
    step 2, "CUDA OOM"): its own row beside that step, with the pods it was found on.
    The step's verdict answers only the step's own question."""

    step: int
    id: str
    severity: Severity
    verdict: Verdict
    title: str
    pods: tuple[str, ...]
    remediation: str = ""

    def to_document(self) -> dict[str, Any]:
        return {"step": self.step, "id": self.id, "severity": self.severity.value,
                "verdict": self.verdict.value, "title": self.title, "pods": list(self.pods)}


@dataclass(frozen=True)
class Unreadable:
    """Something the run could not read, and why."""

    what: str
    reason: str


@dataclass(frozen=True)
class PrometheusSource:
    """The Prometheus a report's windowed numbers come from."""

    source: str
    window_seconds: float
    end: str


@dataclass(frozen=True)
class Report:
    """The whole report: every pod's result and what was unreadable."""

    tool_version: str
    generated_at: str
    context: str | None
    namespace: str | None
    selector: str | None
    verdict: Verdict
    summary: str
    pods: tuple[PodResult, ...]
    checklist: tuple[StepResult, ...]
    unreadable: tuple[Unreadable, ...] = ()
    warnings: tuple[str, ...] = ()
    schema: str = field(default=SCHEMA)
    prometheus: PrometheusSource | None = None
    cards: tuple[Card, ...] = ()
    patches: tuple[WorkloadPatch, ...] = ()
    # Findings shown as their own rows beside the checklist; the checklist
    # itself is always exactly the ten steps.
    beside: tuple[BesideFinding, ...] = ()

    @property
    def failing(self) -> bool:
        return self.verdict is Verdict.FAIL

    def to_document(self, pods: bool = True) -> dict[str, Any]:
        """The ``vllm-triage/report/v1`` JSON document (key order is part of the contract).
        ``pods=False``: with "pods" empty, for a writer that streams them one at a time."""
        return {
            "schema": self.schema,
            "tool_version": self.tool_version,
            "generated_at": self.generated_at,
            "context": self.context,
            "namespace": self.namespace,
            "selector": self.selector,
            "verdict": self.verdict.value,
            "summary": self.summary,
            "cards": [c.to_document() for c in self.cards],
            "patches": [{"workload": w.workload, "findings": list(w.findings),
                         "patch": w.patch.to_document()} for w in self.patches],
            "pods": [p.to_document() for p in self.pods] if pods else [],
            "checklist": [
                {"step": s.step, "title": s.title, "verdict": s.verdict.value,
                 "evidence": list(s.evidence), "remediation": list(s.remediation)}
                for s in self.checklist
            ],
            "beside_checklist": [b.to_document() for b in self.beside],
            "unreadable": [{"what": u.what, "reason": u.reason} for u in self.unreadable],
            "warnings": list(self.warnings),
            "prometheus": None if self.prometheus is None else {
                "source": self.prometheus.source,
                "window_seconds": self.prometheus.window_seconds,
                "end": self.prometheus.end},
        }

    @classmethod
    def from_document(cls, doc: dict[str, Any]) -> Report:
        """A report back from its JSON document (to render a saved report in another format)."""
        beside = tuple(BesideFinding(
            step=int(b["step"]), id=str(b["id"]), severity=Severity(b["severity"]),
            verdict=Verdict(b["verdict"]), title=str(b.get("title", "")),
            pods=tuple(b.get("pods") or ()),
            remediation=next((str(f.get("remediation", "")) for p in doc.get("pods") or ()
                              for f in p.get("findings") or () if f.get("id") == b["id"]), ""))
            for b in doc.get("beside_checklist") or ())
        apart = {(b.step, b.id) for b in beside}

        def finding(f: dict[str, Any]) -> Finding:
            return Finding(id=f["id"], severity=Severity(f["severity"]), title=f["title"],
                           step=int(f["step"]), container=f.get("container", ""),
                           evidence=tuple(f.get("evidence") or ()),
                           remediation=f.get("remediation", ""),
                           fix=Fix.from_document(f.get("fix")),
                           answers_step=(int(f["step"]), f["id"]) not in apart)

        pods = tuple(PodResult(
            name=p["name"], namespace=p["namespace"], phase=p.get("phase", "Unknown"),
            state=p.get("state", ""), restarts=int(p.get("restarts", 0)), node=p.get("node"),
            owner=p.get("owner"), containers=tuple(p.get("containers") or ()),
            findings=tuple(finding(f) for f in p.get("findings") or ()),
            timeline=tuple(TimelineEvent(**t) for t in p.get("timeline") or ()),
            gpu_budget=GpuBudget(**{**p["gpu_budget"], "notes": tuple(
                p["gpu_budget"].get("notes") or ())}) if p.get("gpu_budget") else None,
            series=tuple(WindowSeries(name, str(v.get("unit", "")), tuple(
                (float(a), float(b)) for a, b in v.get("points") or ()))
                for name, v in (p.get("series") or {}).items()))
            for p in doc.get("pods") or ())
        prom = doc.get("prometheus")
        steps = tuple(StepResult(int(s["step"]), s["title"], Verdict(s["verdict"]),
                                 tuple(s.get("evidence") or ()), tuple(s.get("remediation") or ()))
                      for s in doc.get("checklist") or ())
        return cls(
            tool_version=doc.get("tool_version", ""), generated_at=doc.get("generated_at", ""),
            context=doc.get("context"), namespace=doc.get("namespace"),
            selector=doc.get("selector"), verdict=Verdict(doc.get("verdict", "pass")),
            summary=doc.get("summary", ""), pods=pods, checklist=steps,
            unreadable=tuple(Unreadable(u["what"], u["reason"])
                             for u in doc.get("unreadable") or ()),
            warnings=tuple(doc.get("warnings") or ()), schema=doc.get("schema", SCHEMA),
            prometheus=PrometheusSource(str(prom["source"]), float(prom["window_seconds"]),
                                        str(prom["end"])) if prom else None,
            cards=tuple(Card.from_document(c) for c in doc.get("cards") or ()),
            patches=tuple(WorkloadPatch(str(w["workload"]), _patch(w["patch"]),
                                        tuple(w.get("findings") or ()))
                          for w in doc.get("patches") or ()),
            beside=beside)


T = TypeVar("T")


def map_strings(obj: T, fn: Callable[[str], str]) -> T:
    """A copy of a result (dataclasses, tuples, strings) with ``fn`` applied to every string.

    Enums are left alone: they are the tool's own words, never cluster text; so are
    Locations (lint renders them itself).
    """
    if isinstance(obj, (Enum, Location)):  # a Location points into the objects read
        return obj
    if isinstance(obj, str):
        return fn(obj)  # type: ignore[return-value]
    if isinstance(obj, tuple):
        return tuple(map_strings(x, fn) for x in obj)  # type: ignore[return-value]
    if isinstance(obj, list):
        return [map_strings(x, fn) for x in obj]  # type: ignore[return-value]
    if isinstance(obj, dict):  # a patch body: its values come from the cluster
        return {k: map_strings(v, fn) for k, v in obj.items()}  # type: ignore[return-value]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        changes = {f.name: map_strings(getattr(obj, f.name), fn)
                   for f in dataclasses.fields(obj)}
        return dataclasses.replace(obj, **changes)
    return obj
