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


@dataclass(frozen=True)
class StepResult:
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
    # Findings shown as their own rows beside the checklist; the checklist
    # itself is always exactly the ten steps.
    beside: tuple[BesideFinding, ...] = ()

    @property
    def failing(self) -> bool:
        return self.verdict is Verdict.FAIL

    def to_document(self) -> dict[str, Any]:
        """The ``vllm-triage/report/v1`` JSON document (key order is part of the contract)."""
        return {
            "schema": self.schema,
            "tool_version": self.tool_version,
            "generated_at": self.generated_at,
            "context": self.context,
            "namespace": self.namespace,
            "selector": self.selector,
            "verdict": self.verdict.value,
            "summary": self.summary,
            "pods": [
                {
                    "name": p.name,
                    "namespace": p.namespace,
                    "phase": p.phase,
                    "state": p.state,
                    "restarts": p.restarts,
                    "node": p.node,
                    "owner": p.owner,
                    "containers": list(p.containers),
                    "findings": [
                        {
                            "id": f.id,
                            "severity": f.severity.value,
                            "title": f.title,
                            "step": f.step,
                            "container": f.container,
                            "evidence": list(f.evidence),
                            "remediation": f.remediation,
                        }
                        for f in p.findings
                    ],
                    "timeline": [dataclasses.asdict(t) for t in p.timeline],
                    "gpu_budget": p.gpu_budget.to_document() if p.gpu_budget else None,
                    "series": {s.name: {"unit": s.unit, "points": [list(x) for x in s.points]}
                               for s in p.series},
                }
                for p in self.pods
            ],
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
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        changes = {f.name: map_strings(getattr(obj, f.name), fn)
                   for f in dataclasses.fields(obj)}
        return dataclasses.replace(obj, **changes)
    return obj
