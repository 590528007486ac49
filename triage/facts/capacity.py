"""Facts about who holds the GPUs: what a pod holds, what the nodes read can hand out and
what the pods read hold.

A pod keeps the GPUs it was scheduled with until it finishes: the kubelet restarts a
crash-looping container on the same node, and the device plugin's allocation stays with
the pod, serving nothing. Measured from the Pod and Node objects read; no read of their own.
"""

from __future__ import annotations

from triage.facts import ClusterContext, Measured, PodContext, Unmeasurable, fact
from triage.kube import workload
from triage.snapshot import Obj, meta

_FINISHED = ("Succeeded", "Failed")


def held_gpus(pod: Obj) -> int:
    """GPUs a pod holds: its containers' requests while it is bound to a node and has not
    finished."""
    phase = (pod.get("status") or {}).get("phase")
    if not workload.pod_spec(pod).get("nodeName") or phase in _FINISHED:
        return 0
    return sum(workload.gpu_request(c) for c in workload.containers(pod))


@fact("pod_gpus_held", unit="GPUs", scope="pod",
      doc="GPUs the pod holds: its containers' GPU requests while it is bound to a node and "
          "not finished (Succeeded, Failed); 0 otherwise (a crash-looping pod keeps its GPUs)")
def pod_gpus_held(ctx: PodContext) -> Measured:
    ctx.runtime("the pod's node")
    held = held_gpus(ctx.pod)
    node = ctx.node_name
    if held:
        return Measured(held, f"pod {ctx.pod_name} holds {held} GPU(s) on node {node}")
    phase = (ctx.pod.get("status") or {}).get("phase")
    why = ("is bound to no node" if not node else f"has finished ({phase})"
           if phase in _FINISHED else "requests no GPU")
    return Measured(0, f"pod {ctx.pod_name} {why}: it holds no GPU")


@fact("pod_restarts", unit="restarts", scope="pod",
      doc="restarts of the pod's containers, summed (kubectl's RESTARTS column)")
def pod_restarts(ctx: PodContext) -> Measured:
    ctx.runtime("the pod's status")
    count = workload.restarts(ctx.pod)
    return Measured(count, f"pod {ctx.pod_name}: {count} restart(s)")


@fact("cluster_gpus_allocatable", unit="GPUs", scope="cluster",
      doc="GPUs the nodes read can hand out: status.allocatable of every GPU resource, summed "
          "over them; unknown when the node list could not be read")
def cluster_gpus_allocatable(ctx: ClusterContext) -> Measured:
    ctx.runtime("the cluster's nodes")
    failed = ctx.snapshot.failure("nodes")
    if failed is not None and not ctx.snapshot.items("nodes"):
        raise Unmeasurable(str(failed))
    total = 0
    nodes = 0
    for node in ctx.snapshot.items("nodes"):
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        gpus = [int(str(v)) for v in (allocatable.get(n) for n in workload.GPU_RESOURCES)
                if v is not None and str(v).isdigit()]
        total += sum(gpus)
        nodes += 1 if gpus else 0
    return Measured(total, f"{total} allocatable GPU(s) on {nodes} node(s) of the "
                    f"{len(ctx.snapshot.items('nodes'))} read")


@fact("cluster_gpus_held", unit="GPUs", scope="cluster",
      doc="GPUs held by the pods read: pod_gpus_held summed over every pod of the snapshot")
def cluster_gpus_held(ctx: ClusterContext) -> Measured:
    ctx.runtime("the pods' placement")
    holders = [(pod, held_gpus(pod)) for pod in ctx.snapshot.pods()]
    holders = [(pod, n) for pod, n in holders if n]
    total = sum(n for _, n in holders)
    return Measured(total, f"{total} GPU(s) held by {len(holders)} pod(s) read"
                    + (": " + ", ".join(f"{meta(p).get('name')} ({n})" for p, n in holders[:5])
                       + (f" and {len(holders) - 5} more" if len(holders) > 5 else "")
                       if holders else ""))
