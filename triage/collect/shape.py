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
        "nodeInfo", "source", "current", "behavior", "describedObject", "valueFrom",
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


# Where a name has its type only inside one parent: KServe's predictor.model is an
# object, but "model" is a plain label elsewhere (a Service selector's model: llama3).
_UNDER: dict[str, dict[str, str]] = {
    "predictor": {"model": _OBJECT},
    # An RBAC rule's resources are names (pods, pods/log), not a container's resources.
    "rules": {"resources": _STRINGS},
    # An EndpointSlice's endpoint: its conditions are one object (ready, serving,
    # terminating) and its addresses plain IPs, not a node's list of objects.
    "endpoints": {"conditions": _OBJECT, "addresses": _STRINGS},
    # An InferencePool's endpoint picker port (v1 before portNumber): an object.
    "endpointPickerRef": {"port": _OBJECT},
}
# A Service's spec.selector is a string map, a workload's a LabelSelector: under
# "selector", only a LabelSelector's own keys keep their types, any other is a label.
_LABEL_SELECTOR_KEYS = {"matchLabels", "matchExpressions"}
_MAX_PATHS = 5


class Shaped:
    """How many wrong-typed fields were dropped while normalizing, and the first paths."""

    def __init__(self) -> None:
        self.dropped = 0
        self.paths: list[str] = []

    def drop(self, path: tuple[str | int, ...], count: int = 1) -> None:
        self.dropped += count
        if count and len(self.paths) < _MAX_PATHS:
            self.paths.append(_dotted(path))


def _dotted(path: tuple[str | int, ...]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(the object)"


def normalize(obj: Any, shaped: Shaped | None = None, depth: int = 0) -> Any:
    """``obj`` with every field of the wrong type for its name dropped."""
    shaped = shaped if shaped is not None else Shaped()
    if not isinstance(obj, dict):
        return obj
    return _object(obj, shaped, {}, depth, ())


def _object(obj: dict[str, Any], shaped: Shaped, overrides: dict[str, str],
            depth: int, path: tuple[str | int, ...], parent: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    under = _UNDER.get(parent, {})
    selector = parent == "selector"
    for key, value in obj.items():
        if not isinstance(key, str):
            shaped.drop((*path, str(key)))
            continue
        if selector and key not in _LABEL_SELECTOR_KEYS:
            want: str | None = _SCALAR
        else:
            want = overrides.get(key) or under.get(key) or _FIELDS.get(key)
        kind = type(value)
        if (kind is str or kind is int or kind is bool) and depth <= 40:  # most leaves
            if want in _KEEPS[kind]:
                out[key] = value
            else:
                shaped.drop((*path, key))
            continue
        if key == "managedFields" and parent == "metadata":
            continue  # never read, and dropped from all the tool keeps (redact_object)
        fixed = _value(key, value, want, shaped, depth, (*path, key))
        if fixed is _DROP:
            shaped.drop((*path, key))
            continue
        out[key] = fixed
    return out


_DROP = object()
# What a field of each kind may hold as a plain string, integer or boolean (as _value says).
_KEEPS: dict[type, frozenset[str | None]] = {
    str: frozenset({None, _STR, _SCALAR}),
    int: frozenset({None, _INT, _SCALAR}),
    bool: frozenset({None, _BOOL}),
}


def _value(key: str, value: Any, want: str | None, shaped: Shaped, depth: int,
           path: tuple[str | int, ...]) -> Any:
    if value is None:
        return None  # "not set", which every reader handles
    if depth > 40:
        return _DROP  # no API object nests this deep
    if want is None:
        if isinstance(value, dict):
            return _object(value, shaped, {}, depth + 1, path, key)
        if isinstance(value, list):
            return [_object(v, shaped, {}, depth + 1, (*path, i), key)
                    if isinstance(v, dict) else v for i, v in enumerate(value)]
        return value
    if want == _OBJECT:
        return _object(value, shaped, {}, depth + 1, path, key) if isinstance(value, dict) \
            else _DROP
    if want == _STRING_MAP:
        if not isinstance(value, dict):
            return _DROP
        kept = {k: v for k, v in value.items()
                if isinstance(k, str) and (isinstance(v, str) or _is_number(v))}
        for k in value:
            if k not in kept:
                shaped.drop((*path, str(k)))
        return kept
    if want == _LIST_OF_OBJECTS:
        if not isinstance(value, list):
            return _DROP
        overrides = _IN_LIST.get(key, {})
        items = []
        for i, v in enumerate(value):
            if isinstance(v, dict):
                items.append(_object(v, shaped, overrides, depth + 1, (*path, i), key))
            else:
                shaped.drop((*path, i))
        return items
    if want == _STRINGS:
        if not isinstance(value, list):
            return _DROP
        words = []
        for i, v in enumerate(value):
            if isinstance(v, str) or _is_number(v):
                words.append(v if isinstance(v, str) else str(v))
            else:
                shaped.drop((*path, i))
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
    out = [_object(o, shaped, {}, 0, ()) for o in items if isinstance(o, dict)]
    dropped = shaped.dropped + sum(1 for o in items if not isinstance(o, dict))
    if dropped:
        more = ", ..." if shaped.dropped > len(shaped.paths) else ""
        where = f" ({', '.join(shaped.paths)}{more})" if shaped.paths else ""
        notes.append(f"{kind}: {dropped} field(s) or item(s) of the wrong type for the "
                     f"Kubernetes API were ignored{where}")
    return out
