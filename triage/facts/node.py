"""Facts about the GPUs of the pod's node, from the Node object alone (every mode).

NVIDIA GPU feature discovery (GFD, part of the GPU Operator and of
k8s-device-plugin since v0.15) labels each GPU node; the device plugin sets
``nvidia.com/gpu`` in capacity and allocatable, and lowers allocatable when
it marks a GPU unhealthy. Label names from NVIDIA/k8s-device-plugin
``internal/lm/nvml.go`` and ``internal/lm/resource.go``: the
``cuda.driver-version.*`` / ``cuda.runtime-version.*`` names are current
(v0.15.0+), the ``cuda.driver.*`` / ``cuda.runtime.*`` ones older but still
published.
"""

from __future__ import annotations

from triage.facts import Measured, NodeContext, Unmeasurable, fact
from triage.facts.contexts import OnNode
from triage.kube import workload
from triage.snapshot import Obj, meta


def _node(ctx: OnNode) -> Obj | None:
    ctx.runtime("the pod's node")
    if ctx.node is None:
        why = ctx.node_failure()
        if why:
            raise Unmeasurable(why)
    return ctx.node


def _labels(node: Obj) -> dict[str, str]:
    labels = meta(node).get("labels") or {}
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {}


def _label_fact(ctx: OnNode, keys: tuple[str, ...], what: str) -> Measured:
    node = _node(ctx)
    if node is None:
        return Measured(None, "the pod is not on a node that was read")
    labels = _labels(node)
    for key in keys:
        if labels.get(key):
            return Measured(labels[key], f"node {ctx.node_name} label {key}={labels[key]}")
    return Measured(None, f"node {ctx.node_name} has no {what} label ({keys[0]}; GPU feature "
                          "discovery is not running there)")


@fact("gpu_product", unit="text", scope="node",
      doc="the node's GPU model, GFD label nvidia.com/gpu.product (e.g. NVIDIA-L4, Tesla-T4)")
def gpu_product(ctx: NodeContext) -> Measured:
    return _label_fact(ctx, ("nvidia.com/gpu.product",), "GPU product")


@fact("gpu_memory_mib", unit="MiB", scope="node",
      doc="memory of one of the node's GPUs, GFD label nvidia.com/gpu.memory")
def gpu_memory_mib(ctx: NodeContext) -> Measured:
    found = _label_fact(ctx, ("nvidia.com/gpu.memory",), "GPU memory")
    if found.value is None:
        return found
    try:
        return Measured(int(found.value), found.evidence)
    except ValueError:
        return Measured(None, found.evidence + " (not a number)")


@fact("gpu_compute_capability", unit="version", scope="node",
      doc="CUDA compute capability of the node's GPUs, GFD labels nvidia.com/gpu.compute.major "
          "and .minor (7.5 Turing, 8.0 Ampere, 8.9 Ada, 9.0 Hopper)")
def gpu_compute_capability(ctx: NodeContext) -> Measured:
    node = _node(ctx)
    if node is None:
        return Measured(None, "the pod is not on a node that was read")
    labels = _labels(node)
    major, minor = labels.get("nvidia.com/gpu.compute.major"), labels.get(
        "nvidia.com/gpu.compute.minor")
    if not major:
        return Measured(None, f"node {ctx.node_name} has no nvidia.com/gpu.compute.major label")
    try:
        value = float(f"{int(major)}.{int(minor or 0)}")
    except ValueError:
        return Measured(None, f"node {ctx.node_name} compute capability labels {major}.{minor} "
                              "are not numbers")
    return Measured(value, f"node {ctx.node_name} labels nvidia.com/gpu.compute.major={major}, "
                           f".minor={minor or '0'}: compute capability {value:g}")


@fact("cuda_driver_version", unit="version", scope="node",
      doc="the node's NVIDIA driver version, GFD label nvidia.com/cuda.driver-version.full "
          "(or the older cuda.driver.major/minor/rev)")
def cuda_driver_version(ctx: NodeContext) -> Measured:
    node = _node(ctx)
    if node is None:
        return Measured(None, "the pod is not on a node that was read")
    labels = _labels(node)
    full = labels.get("nvidia.com/cuda.driver-version.full")
    if full:
        return Measured(full, f"node {ctx.node_name} label nvidia.com/cuda.driver-version.full="
                              f"{full}")
    major = labels.get("nvidia.com/cuda.driver.major")
    if major:
        parts = [major, labels.get("nvidia.com/cuda.driver.minor", ""),
                 labels.get("nvidia.com/cuda.driver.rev", "")]
        value = ".".join(p for p in parts if p)
        return Measured(value, f"node {ctx.node_name} labels nvidia.com/cuda.driver.major/"
                               f"minor/rev: {value}")
    return Measured(None, f"node {ctx.node_name} has no NVIDIA driver version label (GPU "
                          "feature discovery is not running there)")


@fact("cuda_runtime_version", unit="version", scope="node",
      doc="the newest CUDA version the node's driver supports, GFD label "
          "nvidia.com/cuda.runtime-version.full (or cuda.runtime.major/minor)")
def cuda_runtime_version(ctx: NodeContext) -> Measured:
    node = _node(ctx)
    if node is None:
        return Measured(None, "the pod is not on a node that was read")
    labels = _labels(node)
    full = labels.get("nvidia.com/cuda.runtime-version.full")
    if full:
        return Measured(full, f"node {ctx.node_name} label nvidia.com/cuda.runtime-version.full="
                              f"{full} (the newest CUDA its driver supports)")
    major = labels.get("nvidia.com/cuda.runtime.major")
    if major:
        value = f"{major}.{labels.get('nvidia.com/cuda.runtime.minor', '0')}"
        return Measured(value, f"node {ctx.node_name} labels nvidia.com/cuda.runtime.major/minor: "
                               f"{value} (the newest CUDA its driver supports)")
    return Measured(None, f"node {ctx.node_name} has no CUDA version label (GPU feature "
                          "discovery is not running there)")


def _gpu_quantity(ctx: OnNode, section: str) -> Measured:
    node = _node(ctx)
    if node is None:
        return Measured(None, "the pod is not on a node that was read")
    values = (node.get("status") or {}).get(section) or {}
    for name in workload.GPU_RESOURCES:
        if name in values:
            try:
                n = int(str(values[name]))
            except ValueError:
                continue
            return Measured(n, f"node {ctx.node_name} status.{section} {name}={n}")
    return Measured(0, f"node {ctx.node_name} status.{section} lists no GPU resource (no GPU "
                       "device plugin there)")


@fact("node_gpu_capacity", unit="GPUs", scope="node",
      doc="GPUs the device plugin registered on the pod's node (status.capacity)")
def node_gpu_capacity(ctx: NodeContext) -> Measured:
    return _gpu_quantity(ctx, "capacity")


@fact("node_gpu_allocatable", unit="GPUs", scope="node",
      doc="GPUs the node can hand out (status.allocatable); below capacity when the device "
          "plugin marked a GPU unhealthy")
def node_gpu_allocatable(ctx: NodeContext) -> Measured:
    return _gpu_quantity(ctx, "allocatable")


@fact("node_taints", unit="list", scope="node",
      doc="the taints of the pod's node (spec.taints), each 'key=value:effect': how a GPU "
          "health monitor quarantines a node (NVSentinel's fault quarantine, e.g. "
          "nvidia.com/gpu-xid-error=true:NoSchedule); None when the pod is on no node read")
def node_taints(ctx: NodeContext) -> Measured:
    node = _node(ctx)
    if node is None:
        return Measured(None, "the pod is not on a node that was read")
    taints = [t for t in (node.get("spec") or {}).get("taints") or [] if isinstance(t, dict)]
    found = [f"{t.get('key')}={t.get('value') or ''}:{t.get('effect') or ''}" for t in taints]
    if not found:
        return Measured([], f"node {ctx.node_name} has no taints")
    return Measured(found, f"node {ctx.node_name} spec.taints: {', '.join(found)}")
