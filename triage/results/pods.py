"""One pod's result: its findings, its incident timeline, its GPU memory budget and the
Prometheus series charted for it."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from triage.results.findings import Finding, Unevaluated


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
