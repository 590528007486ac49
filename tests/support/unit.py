"""Small in-memory subjects for unit tests of facts, rules and steps.

They reuse the whole-rule example builder, so a unit test and a pattern
example describe a pod the same way: the default vLLM pod with what the
case lays over it.
"""

from __future__ import annotations

from typing import Any

from triage.facts import ContainerContext, Scopes
from triage.logs import LogSource
from triage.rules.examples import build, given_metrics
from triage.rules.language import Example
from triage.rules.loader import shipped_checklist
from triage.snapshot import PodTelemetry, PrometheusWindow, ReadFailure


def example(**kw: Any) -> Example:
    for key in ("events", "findings", "unread"):
        if key in kw:
            kw[key] = tuple(kw[key])
    return Example(name=kw.pop("name", "unit"), reports=kw.pop("reports", True), **kw)


def context(**kw: Any) -> ContainerContext:
    """The container under test of an example pod built from ``kw`` (Example's keys).

    ``telemetry``: what Prometheus measured about the pod (a PodTelemetry), or
    "failed" for a Prometheus that could not be read; ``static``: the snapshot is a
    manifest's, as lint makes it; ``metrics_text``: the pod's /metrics page;
    ``other_logs``: other pods' current logs, by (pod, container).
    """
    facts = kw.pop("given_facts", None)
    telemetry = kw.pop("telemetry", None)
    static = kw.pop("static", False)
    metrics_text = kw.pop("metrics_text", None)
    other_logs = kw.pop("other_logs", {})
    ex = example(**kw)
    snap, pod, container = build(ex)
    for (pod_name, container_name), text in other_logs.items():  # other pods' current logs
        snap.logs[(pod["metadata"]["namespace"], pod_name, container_name, "current")] = \
            LogSource.of(text)
    if metrics_text is not None:  # the pod's /metrics page, as a scan reads it
        snap.metrics[(pod["metadata"]["namespace"], pod["metadata"]["name"])] = metrics_text
    if static:  # the pod lint builds from a manifest
        snap.static = "a manifest has no running pod"
    if telemetry == "failed":
        snap.failures.append(ReadFailure("Prometheus http://prometheus:9090",
                                         "ConnectError: [Errno 111] Connection refused",
                                         "prometheus"))
    elif telemetry is not None:
        snap.prometheus = PrometheusWindow(
            source="http://prometheus:9090", window_seconds=1800.0, end=snap.collected_at,
            pods={(pod["metadata"]["namespace"], pod["metadata"]["name"]): telemetry})
    scopes = Scopes(snap, settings=shipped_checklist().settings, given=facts,
                    given_metrics=given_metrics(ex))
    return scopes.containers(pod, [container])[0]


GPU = {"uuid": "GPU-5c1e2f3a-8b7d-4e6f-9a0b-1c2d3e4f5a6b", "gpu": "0", "model": "NVIDIA L4",
       "hostname": "gpu-node-1", "container": "vllm", "fb_used_mib_max": 22600.0,
       "fb_used_mib": 22400.0, "fb_free_mib_min": 71.0, "fb_free_mib": 271.0,
       "fb_reserved_mib": 363.0, "util_percent_mean": 97.5, "xid_last": 0.0,
       "xid_changes": 0.0, "shared_with": []}


def telemetry(gpus: list[dict[str, Any]] | None = None, restarts: dict[str, float] | None = None,
              values: dict[str, float] | None = None) -> PodTelemetry:
    return PodTelemetry(values=values or {}, gpus=gpus if gpus is not None else [dict(GPU)],
                        restarts=restarts or {})


OWNED_POD = {"metadata": {"ownerReferences": [
    {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "vllm-qwen-2", "controller": True}]}}


def deployment_objects(replicas: int = 1, strategy: dict[str, Any] | None = None,
                       revision: int = 2) -> dict[str, list[dict[str, Any]]]:
    """A Deployment vllm-qwen with ReplicaSets vllm-qwen-1 (revision 1) and -2 (revision 2)."""
    spec: dict[str, Any] = {"replicas": replicas}
    if strategy is not None:
        spec["strategy"] = strategy

    def rs(n: int, image: str, args: list[str]) -> dict[str, Any]:
        return {"metadata": {
            "name": f"vllm-qwen-{n}", "namespace": "llm",
            "annotations": {"deployment.kubernetes.io/revision": str(n)},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                 "name": "vllm-qwen", "controller": True}]},
            "spec": {"template": {"spec": {"containers": [
                {"name": "vllm", "image": image, "args": args}]}}}}
    return {
        "deployments": [{"metadata": {"name": "vllm-qwen", "namespace": "llm", "annotations": {
            "deployment.kubernetes.io/revision": str(revision)}}, "spec": spec}],
        "replicasets": [rs(1, "vllm/vllm-openai:v0.9.2", ["--model", "Qwen/Qwen3-8B"]),
                        rs(2, "vllm/vllm-openai:v0.10.1.1", ["--model", "Qwen/Qwen3-8B"])],
    }


def hpa(metrics: list[dict[str, Any]] | None = None, min_replicas: int | None = 1,
        ) -> dict[str, Any]:
    spec: dict[str, Any] = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                               "name": "vllm-qwen"}, "maxReplicas": 4}
    if min_replicas is not None:
        spec["minReplicas"] = min_replicas
    if metrics is not None:
        spec["metrics"] = metrics
    return {"metadata": {"name": "vllm-qwen", "namespace": "llm"}, "spec": spec}
