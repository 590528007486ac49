"""Facts about how Kubernetes placed and started the pod: scheduling, image pulls, volumes.

Read from the objects already collected (the pod's status and conditions,
the events about it, the PersistentVolumeClaims of its namespace and the
other pods there): no read of its own.

Kubelet texts, from kubernetes ``pkg/kubelet/images/image_manager.go``:
``Successfully pulled image %q in %v (%v including waiting). Image size: %v
bytes.`` (1.27+; ``in %v`` alone before), ``Container image %q already present
on machine``; Kubernetes 1.33+ prefixes event messages about a container
with ``spec.containers{NAME}: `` as ``kubectl describe`` shows them.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Any

import regex

from triage.facts import ContainerContext, Measured, PodContext, Unmeasurable, fact
from triage.facts.container import shm_location
from triage.facts.contexts import OfPod
from triage.kube import workload
from triage.snapshot import PREVIOUS, Obj, event_times, meta
from triage.speed import lazyregex
from triage.vllm import wordings


def parse_time(text: Any) -> datetime | None:
    """An RFC 3339 timestamp as the API writes it (``2026-11-28T02:31:02Z``), or None."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc)
    except ValueError:
        return None


def describe_seconds(seconds: float) -> str:
    whole = round(seconds)
    if whole < 120:
        return f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 120:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def _condition(pod: Obj, kind: str) -> Obj | None:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == kind:
            return cond
    return None


@fact("pod_created", unit="bool", scope="pod",
      doc="the pod exists in a cluster (read from the API server or a bundle); false for the "
          "pod lint builds from a manifest's template before anything is applied")
def pod_created(ctx: PodContext) -> Measured:
    if ctx.snapshot.static is not None:
        return Measured(False, f"pod {ctx.pod_name} is not created yet: it is built from its "
                               f"manifest's pod template ({ctx.snapshot.static})")
    return Measured(True, f"pod {ctx.pod_name} exists in the cluster")


@fact("pod_scheduled", unit="bool", scope="pod",
      doc="the pod is bound to a node (PodScheduled=True, or spec.nodeName set); the "
          "evidence says since when and how long it waited for a node")
def pod_scheduled(ctx: PodContext) -> Measured:
    ctx.runtime("the pod's status")
    cond = _condition(ctx.pod, "PodScheduled")
    node = ctx.node_name
    scheduled = str(cond.get("status")) == "True" if cond is not None else bool(node)
    if scheduled:
        parts = [f"pod {ctx.pod_name} is scheduled on node {node or '(not named)'}"]
        since = parse_time(cond.get("lastTransitionTime")) if cond is not None else None
        if cond is None:
            parts.append("(spec.nodeName; no PodScheduled condition reported)")
        elif since is not None:
            parts.append(f"PodScheduled=True since {cond.get('lastTransitionTime')}")
            collected = parse_time(ctx.snapshot.collected_at)
            if collected is not None:
                parts.append(f"{describe_seconds((collected - since).total_seconds())} before "
                             "collection")
            created = parse_time(meta(ctx.pod).get("creationTimestamp"))
            if created is not None and since > created:
                parts.append(f"after waiting {describe_seconds((since - created).total_seconds())}"
                             " for a node")
        return Measured(True, ", ".join(parts))
    if cond is not None:
        return Measured(False, f"pod {ctx.pod_name} condition PodScheduled="
                               f"{cond.get('status')} ({cond.get('reason') or 'no reason'})"
                               + (f": {cond.get('message')}" if cond.get("message") else ""))
    return Measured(False, f"pod {ctx.pod_name} is on no node and reports no PodScheduled "
                           "condition")


# --- image pulls ---------------------------------------------------------------

# A container's field path (spec.containers{vllm}) in front of an event's message: the
# event's structure, as its involvedObject.fieldPath is.
_CONTAINER_PREFIX = lazyregex.compile(
    r"^spec\.(?:init|ephemeral)?[cC]ontainers\{(?P<name>[^}]*)\}: ")
# The kubelet's Pulled events (patterns/wordings.yaml).
_PULLED = wordings.regex("kubelet_image_pulled")
_PRESENT = wordings.regex("kubelet_image_present")
_GO_DURATION = lazyregex.compile(r"(\d+(?:\.\d+)?)(h|ms|us|µs|ns|m|s)")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6,
                 "ns": 1e-9}


def go_duration_seconds(text: str) -> float | None:
    """Seconds in a Go ``time.Duration`` string (``3m12.456s``, ``490ms``, ``1h2m``)."""
    parts = _GO_DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(float(n) * _UNIT_SECONDS[u] for n, u in parts)


def _normal_image(image: str) -> str:
    """docker.io/library/x:tag and x:tag are the same image."""
    image = image.removeprefix("docker.io/").removeprefix("library/")
    last = image.rsplit("/", 1)[-1]
    if ":" not in last and "@" not in last:
        image += ":latest"
    return image


def _event_message(ev: Obj) -> tuple[str | None, str]:
    """(the container the kubelet's event is about, its message without that prefix)."""
    message = str(ev.get("message") or ev.get("note") or "")
    m = _CONTAINER_PREFIX.match(message)
    if m:
        return m.group("name"), message[m.end():]
    field_path = str((ev.get("involvedObject") or ev.get("regarding") or {}).get("fieldPath")
                     or "")
    fp = regex.match(r"spec\.(?:init|ephemeral)?[cC]ontainers\{(?P<name>[^}]*)\}", field_path)
    return (fp.group("name") if fp else None), message


def _pod_events(ctx: ContainerContext) -> list[Obj]:
    why = ctx.events_failure()
    if why:
        raise Unmeasurable(why)
    return list(ctx.snapshot.events_about("Pod", ctx.namespace, ctx.pod_name,
                                          str(meta(ctx.pod).get("uid") or "")))


@fact("image_pull_seconds", unit="seconds", scope="container",
      doc="the longest image pull of this container the kubelet reported (Pulled event "
          "'Successfully pulled image ... in 3m12.456s'); 0 when the image was already on the "
          "node; None without a Pulled event. Probes start only after the pull")
def image_pull_seconds(ctx: ContainerContext) -> Measured:
    image = _normal_image(str(ctx.container.get("image") or ""))
    longest: tuple[float, str] | None = None
    present: str | None = None
    for ev in _pod_events(ctx):
        if ev.get("reason") != "Pulled":
            continue
        about, message = _event_message(ev)
        if about is not None and about != ctx.name:
            continue
        pulled = _PULLED.search(message)
        if pulled and (about == ctx.name or _normal_image(pulled.group("image")) == image):
            took = go_duration_seconds(pulled.group("took"))
            if took is None:
                continue
            when = event_times(ev).last or ""
            # The kubelet's whole sentence (sizes, "including waiting") is noise per pod.
            detail = f"kubelet Pulled event {when}{ctx.snapshot.clock_skew(when)}".rstrip()
            if longest is None or took > longest[0]:
                longest = (took, detail)
            continue
        already = _PRESENT.search(message)
        if already and (about == ctx.name or _normal_image(already.group("image")) == image):
            present = f"kubelet event Pulled: {message}"
    if longest is not None:
        return Measured(longest[0], f"image pulled in {describe_seconds(longest[0])} "
                                    f"({longest[1]})")
    if present is not None:
        return Measured(0.0, f"no pull: {present}")
    return Measured(None, f"no Pulled event about container {ctx.name} in the events read "
                          "(events expire after an hour by default)")


# --- volumes -------------------------------------------------------------------


def _claim_names(pod: Obj) -> list[str]:
    names = []
    for vol in workload.pod_spec(pod).get("volumes") or []:
        claim = (vol.get("persistentVolumeClaim") or {}).get("claimName") \
            if isinstance(vol, dict) else None
        if claim:
            names.append(str(claim))
        ephemeral = (vol.get("ephemeral") or {}) if isinstance(vol, dict) else {}
        if ephemeral:  # generic ephemeral volumes: the claim is named <pod>-<volume>
            names.append(f"{meta(pod).get('name')}-{vol.get('name')}")
    return names


def _claims(ctx: OfPod) -> list[tuple[str, Obj | None]]:
    names = _claim_names(ctx.pod)
    if names:
        unread = ctx.unread("persistentvolumeclaims")
        if unread:
            raise Unmeasurable(unread[0])
    return [(n, ctx.snapshot.find("persistentvolumeclaims", ctx.namespace, n)) for n in names]


def describe_claim(name: str, pvc: Obj | None) -> str:
    if pvc is None:
        return f"claim {name}: no such PersistentVolumeClaim in the namespace"
    spec, status = pvc.get("spec") or {}, pvc.get("status") or {}
    modes = ", ".join(status.get("accessModes") or spec.get("accessModes") or []) or \
        "no access mode"
    size = (status.get("capacity") or {}).get("storage") or \
        ((spec.get("resources") or {}).get("requests") or {}).get("storage") or "?"
    sc = spec.get("storageClassName") or "the default class"
    return f"claim {name}: {status.get('phase') or 'no phase'}, {modes}, {size}, {sc}"


@fact("volume_claims", unit="list", scope="pod",
      doc="the PersistentVolumeClaims the pod mounts; the evidence gives each one's phase, "
          "access modes, size and storage class")
def volume_claims(ctx: PodContext) -> Measured:
    claims = _claims(ctx)
    if not claims:
        return Measured([], f"pod {ctx.pod_name} mounts no PersistentVolumeClaim")
    return Measured([n for n, _ in claims], "; ".join(describe_claim(n, p) for n, p in claims))


@fact("container_kind", unit="text", scope="container",
      doc="container (spec.containers), init container (spec.initContainers, run to "
          "completion before the containers start) or sidecar container (an init container "
          "with restartPolicy Always, running beside them)")
def container_kind(ctx: ContainerContext) -> Measured:
    where = "spec.initContainers" if ctx.kind != "container" else "spec.containers"
    return Measured(ctx.kind, f"{ctx.name} is a{'n' if ctx.kind[0] in 'ai' else ''} "
                              f"{ctx.kind} ({where})")


@fact("init_containers_ran", unit="bool", scope="pod",
      doc="an init container of the pod has run (it runs, has terminated or has restarted): "
          "the kubelet mounts every volume of the pod before the first init container starts")
def init_containers_ran(ctx: PodContext) -> Measured:
    ctx.runtime("the pod's status")
    names = [str(c.get("name")) for c in workload.init_containers(ctx.pod)]
    for name in names:
        cs = workload.container_status(ctx.pod, name)
        state = cs.get("state") or {}
        last = (cs.get("lastState") or {}).get("terminated")
        if state.get("running") or state.get("terminated") or last or \
                int(cs.get("restartCount") or 0) > 0:
            return Measured(True, f"init container {name} has run, so the pod's volumes "
                                  "were mounted")
    if not names:
        return Measured(False, f"pod {ctx.pod_name} has no init containers")
    return Measured(False, f"no init container of pod {ctx.pod_name} has run yet")


@fact("unbound_claims", unit="list", scope="pod",
      doc="the pod's PersistentVolumeClaims that are not Bound (Pending, Lost) or do not exist")
def unbound_claims(ctx: PodContext) -> Measured:
    ctx.runtime("the claims' status")
    claims = _claims(ctx)
    unbound = [(n, p) for n, p in claims
               if p is None or (p.get("status") or {}).get("phase") != "Bound"]
    if not unbound:
        return Measured([], f"every claim of pod {ctx.pod_name} is Bound" if claims else
                        f"pod {ctx.pod_name} mounts no PersistentVolumeClaim")
    return Measured([n for n, _ in unbound], "; ".join(describe_claim(n, p) for n, p in unbound))


_SINGLE_NODE_MODES = {"ReadWriteOnce", "ReadWriteOncePod"}


@fact("claim_holders", unit="list", scope="pod",
      doc="other Running pods that mount one of this pod's ReadWriteOnce / ReadWriteOncePod "
          "claims from another node (or, for ReadWriteOncePod, at all): who still holds the "
          "volume")
def claim_holders(ctx: PodContext) -> Measured:
    ctx.runtime("the pods running in the namespace")
    claims = dict(_claims(ctx))
    single = {n: p for n, p in claims.items() if p is not None and _SINGLE_NODE_MODES & set(
        (p.get("status") or {}).get("accessModes") or (p.get("spec") or {}).get("accessModes")
        or [])}
    holders: list[str] = []
    lines: list[str] = []
    for other in ctx.snapshot.pods():
        name = str(meta(other).get("name"))
        if name == ctx.pod_name or meta(other).get("namespace") != ctx.namespace:
            continue
        other_node = workload.pod_spec(other).get("nodeName")
        # A Running pod on a node holds its volumes; a Pending one only waits for them.
        if (other.get("status") or {}).get("phase") != "Running" or not other_node:
            continue
        for claim in set(_claim_names(other)) & set(single):
            modes = set((single[claim].get("status") or {}).get("accessModes") or
                        (single[claim].get("spec") or {}).get("accessModes") or [])
            if "ReadWriteOncePod" not in modes and other_node == ctx.node_name and other_node:
                continue  # ReadWriteOnce is per node: the same node may share it
            holders.append(name)
            lines.append(f"pod {name} ({workload.pod_state(other)}, node "
                         f"{other_node or 'none'}) mounts claim {claim} "
                         f"({', '.join(sorted(modes))})")
    if not holders:
        return Measured([], "no other pod mounts a single-node claim of this pod"
                        if single else "the pod mounts no ReadWriteOnce claim")
    return Measured(sorted(set(holders)), "; ".join(lines))


@fact("shm_size_mib", unit="MiB", scope="container",
      doc="the size of /dev/shm: the memory emptyDir's sizeLimit, 64 (the container "
          "runtime's default) without a volume there; None when unbounded (no sizeLimit, "
          "hostIPC)")
def shm_size_mib(ctx: ContainerContext) -> Measured:
    if workload.pod_spec(ctx.pod).get("hostIPC"):
        return Measured(None, "pod uses hostIPC: /dev/shm is the node's",
                        (ctx.pod_field("spec", "hostIPC"),))
    vol = workload.shm_volume(ctx.pod, ctx.container)
    if vol is None:
        # The volume's absence is shm_memory_backed's to say: said once in a finding.
        return Measured(64, "/dev/shm is the container runtime's default of 64 MiB",
                        shm_location(ctx))
    empty = vol.get("emptyDir")
    if not isinstance(empty, dict):
        return Measured(None, f"/dev/shm is volume {vol.get('name')}, not an emptyDir")
    limit = empty.get("sizeLimit")
    if limit is None:
        return Measured(None, f"/dev/shm is emptyDir {vol.get('name')} with no sizeLimit "
                              f"(medium {empty.get('medium') or 'node disk'})")
    mib = quantity_mib(str(limit))
    if mib is None:
        return Measured(None, f"/dev/shm sizeLimit {limit} is not a quantity")
    return Measured(mib, f"/dev/shm is emptyDir {vol.get('name')} medium "
                         f"{empty.get('medium') or 'node disk'}, sizeLimit {limit}",
                    shm_location(ctx))


_QUANTITY = lazyregex.compile(r"^(\d+(?:\.\d+)?)([KMGTPE]i?|[kmgtpe]?)$")
_QUANTITY_BYTES = {"": 1, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15,
                   "E": 1e18, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40,
                   "Pi": 2**50, "Ei": 2**60}


def quantity_mib(text: str) -> float | None:
    """A Kubernetes quantity (8Gi, 512Mi, 1G) in MiB."""
    m = _QUANTITY.match(text.strip())
    if not m or m.group(2) not in _QUANTITY_BYTES:
        return None
    return float(m.group(1)) * _QUANTITY_BYTES[m.group(2)] / 2**20


# --- the previous container's log ------------------------------------------------


@fact("previous_log_lines", unit="lines", scope="container",
      doc="lines in the previous container's log; 0 when it was empty (or blank), None when "
          "it was not read (the evidence says why) or there is none")
def previous_log_lines(ctx: ContainerContext) -> Measured:
    ctx.runtime("the pod's logs")
    index = ctx.log(PREVIOUS)
    if index is not None:
        n = 0 if index.empty else index.lines
        return Measured(n, f"the previous log of container {ctx.name} has {n} line(s)"
                           + (": empty" if n == 0 else ""))
    why = ctx.log_failure(PREVIOUS)
    if why:
        return Measured(None, f"the previous log of container {ctx.name} could not be "
                              f"read: {why}")
    return Measured(None, f"no previous log of container {ctx.name} was read")


# --- multi-node engines ------------------------------------------------------------

LWS_SIZE_LABEL = "leaderworkerset.sigs.k8s.io/size"


@fact("engine_nodes", unit="nodes", scope="container",
      doc="the nodes one vLLM engine spans: the LeaderWorkerSet group size, or tensor x "
          "pipeline parallel ranks over the GPUs the pod requests (1 on a single node)")
def engine_nodes(ctx: ContainerContext) -> Measured:
    tp, pp = ctx.fact("tensor_parallel_size"), ctx.fact("pipeline_parallel_size")
    if not tp.known or not pp.known:
        raise Unmeasurable(str(tp.unknown or pp.unknown))
    ranks = int(tp.value or 1) * int(pp.value or 1)
    gpus = workload.gpu_request(ctx.container)
    layout = f"TP {tp.value} x PP {pp.value} = {ranks} GPU rank(s), {gpus} GPU(s) per pod"
    size = (meta(ctx.pod).get("labels") or {}).get(LWS_SIZE_LABEL)
    if size and str(size).isdigit():
        return Measured(int(size), f"{layout}; LeaderWorkerSet group of {size} pod(s) "
                                   f"(label {LWS_SIZE_LABEL})")
    if gpus and ranks > gpus:
        nodes = math.ceil(ranks / gpus)
        return Measured(nodes, f"{layout}: {nodes} pods on as many nodes (Ray or multi-node)")
    return Measured(1, f"{layout}: one node")
