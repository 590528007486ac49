"""The API fields a ``container`` / ``pod`` / ``node`` leaf may name, so a typo is an error.

Paths are dotted (``lastState.terminated.reason``); a key that holds dots
(a label such as ``nvidia.com/gpu.product``) is written in brackets:
``metadata.labels["nvidia.com/gpu.product"]``. The schema lists the fields
of the Kubernetes core/v1 types that triage reads; ``ANY`` marks a map whose
keys are free (labels, annotations, resource lists) or a subtree not worth
spelling out (``spec`` of a pod).
"""

from __future__ import annotations

from typing import Any

from triage.speed import lazyregex

ANY: dict[str, Any] = {}  # a map with free keys: anything below is accepted

_STATE = {
    "waiting": {"reason": None, "message": None},
    "running": {"startedAt": None},
    "terminated": {"exitCode": None, "signal": None, "reason": None, "message": None,
                   "startedAt": None, "finishedAt": None, "containerID": None},
}
_META = {"name": None, "namespace": None, "uid": None, "labels": ANY, "annotations": ANY,
         "ownerReferences": None, "creationTimestamp": None, "deletionTimestamp": None,
         "generation": None, "resourceVersion": None}

SCHEMA: dict[str, dict[str, Any]] = {
    # core/v1 ContainerStatus
    "container": {
        "name": None, "state": _STATE, "lastState": _STATE, "ready": None,
        "restartCount": None, "image": None, "imageID": None, "containerID": None,
        "started": None, "allocatedResources": ANY, "resources": ANY, "user": ANY,
        "volumeMounts": None, "allocatedResourcesStatus": None, "stopSignal": None,
    },
    # core/v1 Pod
    "pod": {
        "metadata": _META,
        "spec": ANY,
        "status": {
            "phase": None, "reason": None, "message": None, "conditions": None,
            "hostIP": None, "hostIPs": None, "podIP": None, "podIPs": None, "startTime": None,
            "qosClass": None, "nominatedNodeName": None, "containerStatuses": None,
            "initContainerStatuses": None, "ephemeralContainerStatuses": None,
            "resize": None, "resourceClaimStatuses": None, "observedGeneration": None,
        },
    },
    # core/v1 Node
    "node": {
        "metadata": _META,
        "spec": {"taints": None, "unschedulable": None, "providerID": None, "podCIDR": None,
                 "podCIDRs": None},
        "status": {
            "capacity": ANY, "allocatable": ANY, "conditions": None, "addresses": None,
            "images": None, "volumesInUse": None, "volumesAttached": None,
            "daemonEndpoints": ANY, "features": ANY, "runtimeHandlers": None,
            "nodeInfo": {"kubeletVersion": None, "containerRuntimeVersion": None,
                         "kernelVersion": None, "osImage": None, "architecture": None,
                         "operatingSystem": None, "machineID": None, "systemUUID": None,
                         "bootID": None, "kubeProxyVersion": None, "swap": ANY},
        },
    },
}

_SEGMENT = lazyregex.compile(
    r'''\G(?:(?P<plain>[A-Za-z_][\w-]*)|\[(?P<q>["'])(?P<key>[^"']+)(?P=q)\])''')


def parse_path(text: str) -> tuple[str, ...] | None:
    """``a.b["c.d"].e`` -> ("a", "b", "c.d", "e"); None when it is not a path."""
    parts: list[str] = []
    pos = 0
    while pos < len(text):
        if parts and text[pos] == ".":
            pos += 1
        m = _SEGMENT.match(text, pos)
        if m is None:
            return None
        parts.append(m.group("plain") or m.group("key"))
        pos = m.end()
    return tuple(parts) if parts else None


def check_path(scope: str, path: tuple[str, ...]) -> str | None:
    """None when the path names known fields, else what is wrong."""
    node: Any = SCHEMA[scope]
    for depth, key in enumerate(path):
        if node is ANY:
            return None
        if not isinstance(node, dict):
            return (f"{'.'.join(path[:depth])} has no fields below it "
                    f"(a leaf value or a list)")
        if key not in node:
            known = ", ".join(sorted(node))
            where = ".".join(path[:depth]) or scope
            return f"unknown field {key!r} in {where} (known: {known})"
        node = node[key]
    return None


def dig_path(obj: Any, path: tuple[str, ...]) -> Any:
    cur = obj
    for key in path:
        if not isinstance(cur, dict):
            return None
        cur = cur.get(key)
    return cur
