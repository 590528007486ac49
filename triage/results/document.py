"""The whole report (``Report``): the cards, the checklist, the rows beside it, what was
unreadable; its JSON document of schema ``vllm-triage/report/v1`` and back. And
``map_strings``, which rewrites every string of a result (redaction, before a document
is made)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, TypeVar

from triage.results.findings import Finding, Fix, Location, Patch, _patch
from triage.results.pods import GpuBudget, PodResult, TimelineEvent, WindowSeries
from triage.results.verdicts import Severity, Verdict

SCHEMA = "vllm-triage/report/v1"


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
    # The file ``--fix-dir`` writes it to, as the commands name it: unique in the run and
    # safe on every filesystem (``triage.fixes.files``); with --fix-dir, its path there.
    file: str = ""


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
    # The flags every kubectl command of the report carries to name its cluster
    # (``--kubeconfig FILE``, ``--context NAME``; ``triage.safety.shell.KubectlTarget``).
    kubectl: tuple[str, ...] = ()

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
                         "file": w.file, "patch": w.patch.to_document()}
                        for w in self.patches],
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
                                        tuple(w.get("findings") or ()), str(w.get("file", "")))
                          for w in doc.get("patches") or ()),
            beside=beside,
            # The context is what a saved document keeps of the cluster's flags.
            kubectl=("--context", str(doc["context"])) if doc.get("context")
            and doc.get("context") != "in-cluster" else ())


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
