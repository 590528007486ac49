"""HorizontalPodAutoscalers read through ``autoscaling/v1``, in ``autoscaling/v2``'s shape.

A cluster before Kubernetes 1.23 does not serve ``autoscaling/v2``; its preferred
version, what kubectl reads, is ``autoscaling/v1``. A v1 object holds only a CPU
utilization target in its spec; the API server keeps everything else its stored object
has (other metrics, their current values, the conditions, the scaling behavior) as JSON
in annotations, in v1's own types. This turns such an object back into the v2 shape the
rest of the tool reads, as the API server's own conversion does
(pkg/apis/autoscaling/v1/conversion.go, Convert_v1_HorizontalPodAutoscaler_To_autoscaling_
HorizontalPodAutoscaler), and drops those annotations as it does.
"""

from __future__ import annotations

import json
from typing import Any

METRICS_ANNOTATION = "autoscaling.alpha.kubernetes.io/metrics"
CURRENT_METRICS_ANNOTATION = "autoscaling.alpha.kubernetes.io/current-metrics"
CONDITIONS_ANNOTATION = "autoscaling.alpha.kubernetes.io/conditions"
BEHAVIOR_ANNOTATION = "autoscaling.alpha.kubernetes.io/behavior"
_ROUND_TRIP = (METRICS_ANNOTATION, CURRENT_METRICS_ANNOTATION, CONDITIONS_ANNOTATION,
               BEHAVIOR_ANNOTATION)
DEFAULT_CPU_UTILIZATION = 80  # autoscaling/v1's implicit target, made explicit in v2

Obj = dict[str, Any]


def _dict(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _annotation_list(annotations: Obj, key: str) -> list[Obj] | None:
    """A JSON list of objects from an annotation; None when absent or not such a list
    (the API server ignores an annotation it cannot decode)."""
    text = annotations.get(key)
    if not isinstance(text, str):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if not isinstance(value, list):
        return None
    return [v for v in value if isinstance(v, dict)]


def _identifier(name: Any, selector: Any) -> Obj:
    out: Obj = {"name": name}
    if selector is not None:
        out["selector"] = selector
    return out


def _target(**values: Any) -> Obj:
    return {k: v for k, v in values.items() if v is not None}


def metric_spec(v1: Obj) -> Obj:
    """One v1 (v2beta1-shaped) MetricSpec as a v2 MetricSpec."""
    kind = v1.get("type")
    if kind == "Resource":
        src = _dict(v1.get("resource"))
        util = src.get("targetAverageUtilization")
        return {"type": kind, "resource": {"name": src.get("name"), "target": _target(
            type="AverageValue" if util is None else "Utilization",
            averageValue=src.get("targetAverageValue"), averageUtilization=util)}}
    if kind == "ContainerResource":
        src = _dict(v1.get("containerResource"))
        util = src.get("targetAverageUtilization")
        return {"type": kind, "containerResource": {
            "name": src.get("name"), "container": src.get("container"), "target": _target(
                type="AverageValue" if util is None else "Utilization",
                averageValue=src.get("targetAverageValue"), averageUtilization=util)}}
    if kind == "Pods":
        src = _dict(v1.get("pods"))
        return {"type": kind, "pods": {
            "metric": _identifier(src.get("metricName"), src.get("selector")),
            "target": _target(type="AverageValue",
                              averageValue=src.get("targetAverageValue"))}}
    if kind == "Object":
        src = _dict(v1.get("object"))
        average = src.get("averageValue")
        return {"type": kind, "object": {
            "describedObject": _dict(src.get("target")),
            "metric": _identifier(src.get("metricName"), src.get("selector")),
            "target": _target(type="Value" if average is None else "AverageValue",
                              value=src.get("targetValue"), averageValue=average)}}
    if kind == "External":
        src = _dict(v1.get("external"))
        value = src.get("targetValue")
        return {"type": kind, "external": {
            "metric": _identifier(src.get("metricName"), src.get("metricSelector")),
            "target": _target(type="AverageValue" if value is None else "Value",
                              value=value, averageValue=src.get("targetAverageValue"))}}
    return dict(v1)  # a type this version does not know: as it came


def metric_status(v1: Obj) -> Obj:
    """One v1 MetricStatus as a v2 MetricStatus."""
    kind = v1.get("type")
    if kind in ("Resource", "ContainerResource"):
        key = "resource" if kind == "Resource" else "containerResource"
        src = _dict(v1.get(key))
        body: Obj = {"name": src.get("name"), "current": _target(
            averageValue=src.get("currentAverageValue"),
            averageUtilization=src.get("currentAverageUtilization"))}
        if kind == "ContainerResource":
            body["container"] = src.get("container")
        return {"type": kind, key: body}
    if kind == "Pods":
        src = _dict(v1.get("pods"))
        return {"type": kind, "pods": {
            "metric": _identifier(src.get("metricName"), src.get("selector")),
            "current": _target(averageValue=src.get("currentAverageValue"))}}
    if kind == "Object":
        src = _dict(v1.get("object"))
        return {"type": kind, "object": {
            "describedObject": _dict(src.get("target")),
            "metric": _identifier(src.get("metricName"), src.get("selector")),
            "current": _target(value=src.get("currentValue"),
                               averageValue=src.get("averageValue"))}}
    if kind == "External":
        src = _dict(v1.get("external"))
        return {"type": kind, "external": {
            "metric": _identifier(src.get("metricName"), src.get("metricSelector")),
            "current": _target(value=src.get("currentValue"),
                               averageValue=src.get("currentAverageValue"))}}
    return dict(v1)


def _lower_keys(value: Any) -> Any:
    """The behavior annotation is the API server's internal type marshalled without JSON
    names (``ScaleUp``, ``StabilizationWindowSeconds``) and with its empty fields as null:
    v2's names start lower case, and v2 leaves empty fields out."""
    if isinstance(value, dict):
        return {(k[:1].lower() + k[1:] if isinstance(k, str) else k): _lower_keys(v)
                for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_lower_keys(v) for v in value]
    return value


def _cpu_metric(utilization: Any) -> Obj:
    return {"type": "Resource", "resource": {"name": "cpu", "target": {
        "type": "Utilization", "averageUtilization": utilization}}}


def from_v1(hpa: Obj) -> Obj:
    """An autoscaling/v1 HorizontalPodAutoscaler as autoscaling/v2 shows the same object."""
    out = dict(hpa)
    metadata = dict(_dict(hpa.get("metadata")))
    annotations = dict(_dict(metadata.get("annotations")))
    spec_v1, status_v1 = _dict(hpa.get("spec")), _dict(hpa.get("status"))

    spec: Obj = {k: v for k, v in spec_v1.items() if k != "targetCPUUtilizationPercentage"}
    metrics = [metric_spec(m) for m in _annotation_list(annotations, METRICS_ANNOTATION)
               or []]
    if spec_v1.get("targetCPUUtilizationPercentage") is not None:
        metrics.append(_cpu_metric(spec_v1["targetCPUUtilizationPercentage"]))
    if not metrics:
        metrics = [_cpu_metric(DEFAULT_CPU_UTILIZATION)]
    spec["metrics"] = metrics
    behavior_text = annotations.get(BEHAVIOR_ANNOTATION)
    if isinstance(behavior_text, str):
        try:
            behavior = json.loads(behavior_text)
        except ValueError:
            behavior = None
        if isinstance(behavior, dict) and any(v is not None for v in behavior.values()):
            spec["behavior"] = _lower_keys(behavior)

    status: Obj = {k: v for k, v in status_v1.items()
                   if k != "currentCPUUtilizationPercentage"}
    current = _annotation_list(annotations, CURRENT_METRICS_ANNOTATION)
    if current is not None:
        status["currentMetrics"] = [metric_status(m) for m in current]
    elif status_v1.get("currentCPUUtilizationPercentage") is not None:
        status["currentMetrics"] = [{"type": "Resource", "resource": {"name": "cpu", "current": {
            "averageUtilization": status_v1["currentCPUUtilizationPercentage"]}}}]
    conditions = _annotation_list(annotations, CONDITIONS_ANNOTATION)
    if conditions is not None:
        status["conditions"] = conditions

    for key in _ROUND_TRIP:
        annotations.pop(key, None)
    if annotations:
        metadata["annotations"] = annotations
    else:
        metadata.pop("annotations", None)
    out["metadata"] = metadata
    out["spec"] = spec
    if status or "status" in hpa:
        out["status"] = status
    if "apiVersion" in out:
        out["apiVersion"] = "autoscaling/v2"
    return out
