"""Whole-rule examples: each pattern proves itself on small in-memory snapshots.

An example in a pattern file is a pod (with a default vLLM container that
requests one GPU, Running on a healthy GPU node), plus what the case needs:
container status, log text, events, node fields, extra API objects, given
facts and metrics, findings already raised, reads that failed. The pattern
is evaluated exactly as in a scan, and the example says whether it must
report (``reports: true``) or stay silent. ``vllm-triage patterns --test``
and the test suite run them all.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from triage.facts import LOG_QUERIES, Scopes
from triage.logs import LogSource
from triage.results import Finding, Severity
from triage.rules.causes import join
from triage.rules.evaluate import Evaluator, PodDiagnosis, Truth, diagnose, queries_for
from triage.rules.language import CauseExample, CausePattern, Example, Pattern
from triage.rules.loader import shipped_checklist
from triage.snapshot import ALL_KINDS, PREVIOUS, Obj, ReadFailure, Snapshot

NAMESPACE, POD, CONTAINER, NODE = "llm", "vllm-0", "vllm", "gpu-node-1"

_POD: Obj = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": POD, "namespace": NAMESPACE, "uid": "example-pod",
                 "creationTimestamp": "2026-11-28T02:00:00Z"},
    "spec": {
        "nodeName": NODE,
        "containers": [{
            "name": CONTAINER, "image": "vllm/vllm-openai:v0.10.1.1",
            "args": ["--model", "Qwen/Qwen3-8B"],
            "resources": {"limits": {"nvidia.com/gpu": "1", "memory": "32Gi"},
                          "requests": {"nvidia.com/gpu": "1", "memory": "32Gi"}},
        }],
    },
    "status": {"phase": "Running"},
}
_STATUS: Obj = {
    "name": CONTAINER, "image": "vllm/vllm-openai:v0.10.1.1", "ready": True, "started": True,
    "restartCount": 0, "state": {"running": {"startedAt": "2026-11-28T02:00:05Z"}},
    "lastState": {},
}
_NODE: Obj = {
    "apiVersion": "v1", "kind": "Node",
    "metadata": {"name": NODE, "labels": {"nvidia.com/gpu.product": "NVIDIA-L4"}},
    "status": {
        "capacity": {"nvidia.com/gpu": "1", "memory": "64Gi"},
        "allocatable": {"nvidia.com/gpu": "1", "memory": "62Gi"},
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"},
                       {"type": "DiskPressure", "status": "False",
                        "reason": "KubeletHasNoDiskPressure"}],
    },
}


def merge(base: Any, change: Any) -> Any:
    """``change`` laid over ``base`` as a JSON merge patch (RFC 7386): mappings merge key by
    key, ``null`` removes a key, anything else replaces."""
    if isinstance(base, dict) and isinstance(change, dict):
        out = dict(base)
        for key, value in change.items():
            if value is None:
                out.pop(key, None)
            else:
                out[key] = merge(base.get(key), value) if key in base else copy.deepcopy(value)
        return out
    return copy.deepcopy(change)


def _event(spec: dict[str, Any], index: int) -> Obj:
    involved = spec.get("involvedObject") or {"kind": "Pod", "name": POD,
                                               "namespace": NAMESPACE}
    return {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": f"example.{index}", "namespace": NAMESPACE},
        "involvedObject": involved,
        "reason": spec.get("reason", ""), "message": spec.get("message", ""),
        "type": spec.get("type", "Warning"), "count": spec.get("count", 1),
        "lastTimestamp": spec.get("lastTimestamp", "2026-11-28T02:10:00Z"),
    }


def build(example: Example) -> tuple[Snapshot, Obj, Obj]:
    """The example's snapshot, its pod and the container under test."""
    pod = copy.deepcopy(_POD)
    pod = merge(pod, {k: v for k, v in example.pod.items() if k != "spec"})
    spec = merge(pod["spec"], {k: v for k, v in (example.pod.get("spec") or {}).items()
                               if k != "containers"})
    container = merge(spec["containers"][0], example.container)
    spec["containers"] = [container, *(example.pod.get("spec") or {}).get("containers", [])[1:]]
    pod["spec"] = spec
    status = {**_STATUS, **example.status, "name": container["name"]}
    pod["status"] = {**pod.get("status", {}), "containerStatuses": [status]}
    snap = Snapshot(context="example", namespace=NAMESPACE, collected_at="2026-11-28T03:00:00Z",
                    tool_version="example")
    snap.objects = {kind: [] for kind in ALL_KINDS}
    snap.objects["pods"] = [pod]
    if spec.get("nodeName"):
        snap.objects["nodes"] = [merge(_NODE, {**example.node, "metadata": {
            **_NODE["metadata"], **example.node.get("metadata", {}), "name": spec["nodeName"]}})]
    snap.objects["events"] = [_event(e, i) for i, e in enumerate(example.events)]
    for kind, items in example.objects.items():
        snap.objects.setdefault(kind, []).extend(copy.deepcopy(items))
    name = str(container["name"])
    if example.log is not None:
        snap.logs[(NAMESPACE, POD, name, "current")] = LogSource.of(example.log)
    if example.previous_log is not None:
        snap.logs[(NAMESPACE, POD, name, PREVIOUS)] = LogSource.of(example.previous_log)
    for kind in example.unread:  # what could not be read is not there
        snap.failures.append(ReadFailure(f"{kind} (example)", "403 Forbidden (example)", kind))
        if kind == "logs":
            snap.logs.clear()
        elif kind != "metrics":
            snap.objects[kind] = []
    return snap, pod, container


def given_metrics(example: Example) -> dict[str, float] | None:
    return example.metrics or None if "metrics" not in example.unread else None


@dataclass(frozen=True)
class ExampleResult:
    pattern: str
    example: Example | CauseExample
    reported: bool
    unknown: str | None
    severity: Severity | None = None  # of the finding, when reported
    said: str | None = None  # a cause's sentence, when said
    evidence: tuple[str, ...] = ()  # of the finding, when reported

    @property
    def ok(self) -> bool:
        if isinstance(self.example, CauseExample):
            return self.reported is self.example.reports and (
                self.example.says is None or _words(self.said) == _words(self.example.says))
        if self.example.reports is None:
            return not self.reported and self.unknown is not None
        if self.example.severity and self.severity is not None and \
                self.severity.value != self.example.severity:
            return False
        return self.reported is self.example.reports and not (
            not self.example.reports and self.unknown)

    def describe(self) -> str:
        if isinstance(self.example, CauseExample):
            want = "say" if self.example.reports else "stay silent"
            got = f"said {self.said!r}" if self.reported else "stayed silent"
            if self.example.says is not None:
                want += f" {self.example.says!r}"
            return f"{self.pattern}: example {self.example.name!r}: should {want}, {got}"
        want = {True: "report", False: "stay silent", None: "be unknown"}[self.example.reports]
        if self.example.severity:
            want += f" as {self.example.severity}"
        got = (f"reported as {self.severity}" if self.reported else
               f"could not be evaluated ({self.unknown})" if self.unknown else "stayed silent")
        return f"{self.pattern}: example {self.example.name!r}: should {want}, {got}"


def run_example(pattern: Pattern, example: Example,
                severities: dict[str, Severity]) -> ExampleResult:
    snap, pod, container = build(example)
    scopes = Scopes(snap, queries=LOG_QUERIES.merged(queries_for((pattern,))),
                    settings=shipped_checklist().settings, given=example.facts,
                    given_metrics=given_metrics(example))
    ctx = scopes.containers(pod, [container])[0]
    diag = PodDiagnosis(pod, [ctx])
    raised = {fid: severities.get(fid, Severity.WARNING) for fid in example.findings}
    diagnose(Evaluator([]), (pattern,), diag, raised)
    unknown = next((u.reason for u in diag.unevaluated if u.pattern == pattern.id), None)
    found = next((f for f in diag.findings if f.id == pattern.id), None)
    return ExampleResult(pattern.id, example, found is not None, unknown,
                         found.severity if found is not None else None,
                         evidence=found.evidence if found is not None else ())


def _words(text: str | None) -> str:
    return " ".join((text or "").split())


def run_examples(patterns: tuple[Pattern, ...], causes: tuple[CausePattern, ...] = ()
                 ) -> list[ExampleResult]:
    severities = {p.id: p.severity for p in patterns}
    return [run_example(p, ex, severities) for p in patterns for ex in p.examples] + [
        run_cause_example(c, ex, severities) for c in causes for ex in c.examples]


# --- a cause's examples: several pods, on nodes, with findings already raised ----------


def build_cluster(example: CauseExample) -> Snapshot:
    """The example's nodes, and its pods with the Deployment and ReplicaSet of each named
    workload (a pod without one is a pod of its own)."""
    snap = Snapshot(context="example", namespace=NAMESPACE, collected_at="2026-11-28T03:00:00Z",
                    tool_version="example")
    snap.objects = {kind: [] for kind in ALL_KINDS}
    for node in example.nodes:
        gpus = str(node.get("gpus", 0))
        snap.objects["nodes"].append({
            "metadata": {"name": node["name"], "labels": {}},
            "status": {"capacity": {"nvidia.com/gpu": gpus},
                       "allocatable": {"nvidia.com/gpu": gpus},
                       "conditions": [{"type": "Ready", "status": "True"}]}})
    for name in dict.fromkeys(str(p["workload"]) for p in example.pods if p.get("workload")):
        snap.objects["deployments"].append({"metadata": {
            "name": name, "namespace": NAMESPACE, "uid": f"deployment-{name}",
            "annotations": {"deployment.kubernetes.io/revision": "1"}}})
        snap.objects["replicasets"].append({"metadata": {
            "name": f"{name}-1", "namespace": NAMESPACE, "uid": f"replicaset-{name}",
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name,
                                 "uid": f"deployment-{name}", "controller": True}]}})
    for spec in example.pods:
        snap.objects["pods"].append(_cluster_pod(spec))
    return snap


def _cluster_pod(spec: dict[str, Any]) -> Obj:
    node, gpus = spec.get("node"), int(spec.get("gpus", 1))
    state = str(spec.get("state", "running"))
    status: Obj = {"name": CONTAINER, "image": "vllm/vllm-openai:v0.10.1.1",
                   "restartCount": int(spec.get("restarts", 0)), "ready": state == "running",
                   "state": {"running": {"startedAt": "2026-11-28T02:00:05Z"}}
                   if state == "running" else {"waiting": {"reason": state}}}
    meta: Obj = {"name": spec["name"], "namespace": NAMESPACE, "uid": f"pod-{spec['name']}"}
    if spec.get("workload"):
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                    "name": f"{spec['workload']}-1", "controller": True,
                                    "uid": f"replicaset-{spec['workload']}"}]
    limits = {"nvidia.com/gpu": str(gpus)} if gpus else {}
    return {
        "metadata": meta,
        "spec": {**({"nodeName": node} if node else {}), "containers": [{
            "name": CONTAINER, "image": "vllm/vllm-openai:v0.10.1.1",
            "args": ["--model", "Qwen/Qwen3-8B"],
            "resources": {"limits": limits, "requests": limits}}]},
        "status": {"phase": spec.get("phase", "Running" if node else "Pending"),
                   **({"containerStatuses": [status]} if node else {})},
    }


def run_cause_example(cause: CausePattern, example: CauseExample,
                      severities: dict[str, Severity]) -> ExampleResult:
    snap = build_cluster(example)
    scopes = Scopes(snap, settings=shipped_checklist().settings)
    diagnoses: list[PodDiagnosis] = []
    for pod, spec in zip(snap.pods(), example.pods, strict=True):
        diag = PodDiagnosis(pod, scopes.containers(pod, pod["spec"]["containers"]))
        diag.contexts[0].pod_context.given = dict(spec.get("facts") or {})
        for fid in spec.get("findings") or []:
            diag.findings.append(Finding(
                id=fid, severity=severities.get(fid, Severity.WARNING), title=fid, step=1,
                container=CONTAINER, evidence=(), remediation=""))
            diag.states[fid] = Truth.TRUE
        diagnoses.append(diag)
    links = join((cause,), scopes, diagnoses, [])
    said = links[0].text if links else None
    return ExampleResult(cause.id, example, bool(links), None, said=said)
