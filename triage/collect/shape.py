"""API objects in the shape the API server guarantees, whatever the input was.

A real API server validates every object: ``spec.containers`` is a list of
objects, ``restartCount`` an integer, labels map strings to strings. A bundle
or a fixture directory comes from anywhere, and a proxy or a broken server
can send anything; the analysis reads objects the way the API defines them.
So both collectors pass every object through ``normalize``: a field whose
value has the wrong type for its name is dropped, as if it were not set, and
counted (the report says how many were ignored). Fields the tool does not
know are kept as they are.
"""

from __future__ import annotations

from typing import Any

_OBJECT = "object"
_LIST_OF_OBJECTS = "objects"
_STRINGS = "strings"  # a list of strings
_STRING_MAP = "string map"  # an object whose values are strings
_STR = "str"
_INT = "int"
_BOOL = "bool"
_SCALAR = "scalar"  # a string or a number (quantities, int-or-string)

_FIELDS: dict[str, str] = {
    # objects
    **dict.fromkeys((
        "metadata", "spec", "status", "template", "resources", "state", "lastState",
        "running", "terminated", "waiting", "strategy", "rollingUpdate", "scaleTargetRef",
        "predictor", "involvedObject", "regarding", "series", "target", "metric", "resource",
        "external", "pods", "object", "containerResource", "configMap", "secret",
        "persistentVolumeClaim", "emptyDir", "hostPath", "livenessProbe", "readinessProbe",
        "startupProbe", "httpGet", "tcpSocket", "grpc", "exec", "securityContext",
        "nodeInfo", "model", "source", "current", "behavior", "describedObject", "valueFrom",
        "secretKeyRef", "configMapKeyRef", "fieldRef", "resourceFieldRef", "selector",
        "scaleUp", "scaleDown", "transformer", "explainer", "lifecycle", "postStart",
        "preStop", "affinity", "nodeAffinity", "canary", "storage", "daemonEndpoints",
        "kubeletEndpoint", "updateStrategy", "components"), _OBJECT),
    **dict.fromkeys(("labels", "annotations", "data", "nodeSelector", "matchLabels",
                     "limits", "requests", "capacity", "allocatable"), _STRING_MAP),
    **dict.fromkeys((
        "containers", "initContainers", "ephemeralContainers", "volumes", "volumeMounts",
        "env", "envFrom", "ports", "containerStatuses", "initContainerStatuses",
        "ephemeralContainerStatuses", "conditions", "ownerReferences", "items", "metrics",
        "currentMetrics", "taints", "tolerations", "imagePullSecrets", "addresses", "images",
        "matchExpressions", "podIPs", "hostIPs"), _LIST_OF_OBJECTS),
    **dict.fromkeys(("args", "command", "finalizers", "accessModes", "names"), _STRINGS),
    **dict.fromkeys((
        "name", "namespace", "image", "reason", "message", "phase", "type", "kind",
        "nodeName", "mountPath", "subPath", "claimName", "imagePullPolicy", "imageID",
        "apiVersion", "uid", "medium", "protocol", "lastTimestamp", "firstTimestamp",
        "eventTime", "creationTimestamp", "deletionTimestamp", "note", "clusterIP",
        "containerID", "startedAt", "finishedAt", "storageClassName", "serviceAccountName",
        "restartPolicy", "schedulerName", "hostIP", "podIP", "key", "operator", "effect",
        "resourceVersion", "generateName", "lastTransitionTime", "lastProbeTime",
        "lastHeartbeatTime", "component", "host", "action", "reportingComponent",
        "reportingInstance", "kubeletVersion", "containerRuntimeVersion", "osImage",
        "architecture", "storageUri", "runtime", "protocolVersion", "nominatedNodeName",
        "qosClass", "volumeName", "deploymentMode"), _STR),
    **dict.fromkeys((
        "restartCount", "exitCode", "replicas", "minReplicas", "maxReplicas",
        "containerPort", "hostPort", "initialDelaySeconds", "periodSeconds",
        "failureThreshold", "timeoutSeconds", "successThreshold", "count",
        "readyReplicas", "availableReplicas", "updatedReplicas", "observedGeneration",
        "generation", "targetCPUUtilizationPercentage", "averageUtilization",
        "canaryTrafficPercent", "terminationGracePeriodSeconds", "signal",
        "currentReplicas", "desiredReplicas", "revisionHistoryLimit",
        "progressDeadlineSeconds", "minReadySeconds", "stabilizationWindowSeconds",
        "minScale", "maxScale", "containerConcurrency", "scaleTarget"), _INT),
    **dict.fromkeys(("ready", "started", "hostIPC", "hostNetwork", "hostPID", "controller",
                     "blockOwnerDeletion", "unschedulable", "privileged",
                     "enableServiceLinks", "readOnly", "optional", "paused"), _BOOL),
    **dict.fromkeys(("value", "averageValue", "sizeLimit", "maxSurge", "maxUnavailable",
                     "port", "targetPort", "scaleMetric", "partition"), _SCALAR),
}
# Where the same name has another type: inside these lists' elements.
_IN_LIST: dict[str, dict[str, str]] = {
    "conditions": {"status": _STR, "type": _STR},
    "taints": {"value": _STR},
    "tolerations": {"value": _STR, "tolerationSeconds": _INT},
    "ports": {"port": _SCALAR},
    "env": {"value": _SCALAR},
}


class Shaped:
    """How many wrong-typed fields were dropped while normalizing."""

    def __init__(self) -> None:
        self.dropped = 0


def normalize(obj: Any, shaped: Shaped | None = None, depth: int = 0) -> Any:
    """``obj`` with every field of the wrong type for its name dropped."""
    shaped = shaped if shaped is not None else Shaped()
    if not isinstance(obj, dict):
        return obj
    return _object(obj, shaped, {}, depth)


def _object(obj: dict[str, Any], shaped: Shaped, overrides: dict[str, str],
            depth: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in obj.items():
        if not isinstance(key, str):
            shaped.dropped += 1
            continue
        want = overrides.get(key) or _FIELDS.get(key)
        fixed = _value(key, value, want, shaped, depth)
        if fixed is _DROP:
            shaped.dropped += 1
            continue
        out[key] = fixed
    return out


_DROP = object()


def _value(key: str, value: Any, want: str | None, shaped: Shaped, depth: int) -> Any:
    if value is None:
        return None  # "not set", which every reader handles
    if depth > 40:
        return _DROP  # no API object nests this deep
    if want is None:
        if isinstance(value, dict):
            return _object(value, shaped, {}, depth + 1)
        if isinstance(value, list):
            return [_object(v, shaped, {}, depth + 1) if isinstance(v, dict) else v
                    for v in value]
        return value
    if want == _OBJECT:
        return _object(value, shaped, {}, depth + 1) if isinstance(value, dict) else _DROP
    if want == _STRING_MAP:
        if not isinstance(value, dict):
            return _DROP
        kept = {k: v for k, v in value.items()
                if isinstance(k, str) and (isinstance(v, str) or _is_number(v))}
        shaped.dropped += len(value) - len(kept)
        return kept
    if want == _LIST_OF_OBJECTS:
        if not isinstance(value, list):
            return _DROP
        overrides = _IN_LIST.get(key, {})
        items = [_object(v, shaped, overrides, depth + 1) for v in value if isinstance(v, dict)]
        shaped.dropped += len(value) - len(items)
        return items
    if want == _STRINGS:
        if not isinstance(value, list):
            return _DROP
        words = [v if isinstance(v, str) else str(v) for v in value
                 if isinstance(v, str) or _is_number(v)]
        shaped.dropped += len(value) - len(words)
        return words
    if want == _STR:
        return value if isinstance(value, str) else _DROP
    if want == _INT:
        return value if isinstance(value, int) and not isinstance(value, bool) else _DROP
    if want == _BOOL:
        return value if isinstance(value, bool) else _DROP
    if want == _SCALAR:
        return value if isinstance(value, str) or _is_number(value) else _DROP
    return value


def _is_number(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and value == value and value not in (float("inf"), float("-inf")))


def normalize_items(kind: str, items: list[Any], notes: list[str]) -> list[dict[str, Any]]:
    """The objects of a list, normalized; a note says how many fields were dropped."""
    shaped = Shaped()
    out = [_object(o, shaped, {}, 0) for o in items if isinstance(o, dict)]
    dropped = shaped.dropped + sum(1 for o in items if not isinstance(o, dict))
    if dropped:
        notes.append(f"{kind}: {dropped} field(s) or item(s) of the wrong type for the "
                     "Kubernetes API were ignored")
    return out
