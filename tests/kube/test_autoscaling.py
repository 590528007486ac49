"""autoscaling/v1 HorizontalPodAutoscalers in v2's shape, as the API server converts them
(tests/cli/test_real_apiserver.py checks the same against a real v1.20 server)."""

from __future__ import annotations

import json
from typing import Any

from triage.kube.autoscaling import (
    BEHAVIOR_ANNOTATION,
    CONDITIONS_ANNOTATION,
    CURRENT_METRICS_ANNOTATION,
    METRICS_ANNOTATION,
    from_v1,
)

REF = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "vllm-qwen"}


def hpa(spec: dict[str, Any], status: dict[str, Any] | None = None,
        annotations: dict[str, Any] | None = None) -> dict[str, Any]:
    md: dict[str, Any] = {"name": "vllm-qwen", "namespace": "llm"}
    if annotations is not None:
        md["annotations"] = {k: v if isinstance(v, str) else json.dumps(v)
                             for k, v in annotations.items()}
    return {"metadata": md, "spec": {"scaleTargetRef": REF, "maxReplicas": 4, **spec},
            "status": status or {"currentReplicas": 2, "desiredReplicas": 2}}


def test_cpu_target_becomes_a_resource_metric() -> None:
    got = from_v1(hpa({"minReplicas": 1, "targetCPUUtilizationPercentage": 60},
                      {"currentReplicas": 2, "desiredReplicas": 2,
                       "currentCPUUtilizationPercentage": 75}))
    assert got["spec"] == {"scaleTargetRef": REF, "maxReplicas": 4, "minReplicas": 1,
                           "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                               "type": "Utilization", "averageUtilization": 60}}}]}
    assert got["status"]["currentMetrics"] == [{"type": "Resource", "resource": {
        "name": "cpu", "current": {"averageUtilization": 75}}}]
    assert "currentCPUUtilizationPercentage" not in got["status"]


def test_no_target_is_the_default_cpu_80_percent() -> None:
    metrics = from_v1(hpa({}))["spec"]["metrics"]
    assert metrics == [{"type": "Resource", "resource": {"name": "cpu", "target": {
        "type": "Utilization", "averageUtilization": 80}}}]


def test_other_metrics_come_from_the_annotation_before_cpu() -> None:
    """A custom metric (vLLM's queue) kept in the annotation, in v1's own types."""
    got = from_v1(hpa({"targetCPUUtilizationPercentage": 70}, annotations={
        METRICS_ANNOTATION: [
            {"type": "Pods", "pods": {"metricName": "vllm:num_requests_waiting",
                                      "targetAverageValue": "10"}},
            {"type": "External", "external": {"metricName": "queue_depth",
                                              "metricSelector": {"matchLabels": {"q": "a"}},
                                              "targetAverageValue": "30"}},
            {"type": "Object", "object": {"target": {"kind": "Service", "name": "gw"},
                                          "metricName": "rps", "targetValue": "100"}},
            {"type": "Resource", "resource": {"name": "memory",
                                              "targetAverageValue": "20Gi"}}],
        "team": "ml"}))
    assert got["spec"]["metrics"] == [
        {"type": "Pods", "pods": {"metric": {"name": "vllm:num_requests_waiting"},
                                  "target": {"type": "AverageValue", "averageValue": "10"}}},
        {"type": "External", "external": {
            "metric": {"name": "queue_depth", "selector": {"matchLabels": {"q": "a"}}},
            "target": {"type": "AverageValue", "averageValue": "30"}}},
        {"type": "Object", "object": {"describedObject": {"kind": "Service", "name": "gw"},
                                      "metric": {"name": "rps"},
                                      "target": {"type": "Value", "value": "100"}}},
        {"type": "Resource", "resource": {"name": "memory", "target": {
            "type": "AverageValue", "averageValue": "20Gi"}}},
        {"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": 70}}}]
    # The round-trip annotations are the server's bookkeeping, not the user's: dropped.
    assert got["metadata"]["annotations"] == {"team": "ml"}


def test_current_metrics_conditions_and_behavior_come_from_annotations() -> None:
    conditions = [{"type": "ScalingLimited", "status": "True", "reason": "TooManyReplicas",
                   "message": "the desired replica count is more than the maximum replica "
                              "count", "lastTransitionTime": "2026-11-28T03:00:00Z"}]
    got = from_v1(hpa({}, {"currentReplicas": 4, "desiredReplicas": 4,
                           "currentCPUUtilizationPercentage": 12}, annotations={
        CURRENT_METRICS_ANNOTATION: [
            {"type": "Pods", "pods": {"metricName": "vllm:num_requests_waiting",
                                      "currentAverageValue": "42"}},
            {"type": "Resource", "resource": {"name": "cpu", "currentAverageUtilization": 12,
                                              "currentAverageValue": "300m"}}],
        CONDITIONS_ANNOTATION: conditions,
        BEHAVIOR_ANNOTATION: {"ScaleUp": None, "ScaleDown": {
            "StabilizationWindowSeconds": 600, "SelectPolicy": "Max",
            "Policies": [{"Type": "Pods", "Value": 1, "PeriodSeconds": 60}]}}}))
    assert got["status"]["currentMetrics"] == [
        {"type": "Pods", "pods": {"metric": {"name": "vllm:num_requests_waiting"},
                                  "current": {"averageValue": "42"}}},
        {"type": "Resource", "resource": {"name": "cpu", "current": {
            "averageValue": "300m", "averageUtilization": 12}}}]
    assert got["status"]["conditions"] == conditions
    assert got["spec"]["behavior"] == {"scaleDown": {
        "stabilizationWindowSeconds": 600, "selectPolicy": "Max",
        "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]}}
    assert "annotations" not in got["metadata"]


def test_an_annotation_that_does_not_decode_is_ignored() -> None:
    """As the API server ignores it: the spec's own CPU target stands."""
    got = from_v1(hpa({"targetCPUUtilizationPercentage": 50},
                      annotations={METRICS_ANNOTATION: "{not json"}))
    assert got["spec"]["metrics"] == [{"type": "Resource", "resource": {"name": "cpu", "target": {
        "type": "Utilization", "averageUtilization": 50}}}]
