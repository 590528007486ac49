"""Reviewable patches: the change a fix asks for, against the object that owns the pod.

Pure functions over API dicts. A fix names edits (engine flags, container
fields, pod fields, the owner's own fields); ``build`` applies them to a copy
of the owning object and returns the smallest patch that turns the object as
read into the edited one: a strategic-merge patch for built-in kinds
(containers and volumes merge by name), a JSON merge patch for custom
resources (KServe InferenceService, LeaderWorkerSet), whose lists are given
whole. The tool never applies a patch; it prints the ``kubectl`` command
that would.
"""

from __future__ import annotations

import copy
import shlex
from dataclasses import dataclass, field
from typing import Any

import regex

from triage.snapshot import Obj, meta
from triage.speed import lazyregex

# Where the pod template lives in each kind a patch can target.
_TEMPLATE = {
    "Deployment": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "InferenceService": ("spec", "predictor"),
    "LeaderWorkerSet": ("spec", "leaderWorkerTemplate", "workerTemplate", "spec"),
    # KServe's LLMInferenceService: the main workload's pod spec (the prefill workload's
    # is spec.prefill.template, given as the Edits' template).
    "LLMInferenceService": ("spec", "template"),
}
API_VERSION = {
    "Deployment": "apps/v1", "StatefulSet": "apps/v1", "ReplicaSet": "apps/v1",
    "DaemonSet": "apps/v1", "InferenceService": "serving.kserve.io/v1beta1",
    "LeaderWorkerSet": "leaderworkerset.x-k8s.io/v1",
    "LLMInferenceService": "serving.kserve.io/v1alpha1",
    "HorizontalPodAutoscaler": "autoscaling/v2", "PersistentVolumeClaim": "v1",
}
_CUSTOM = {"InferenceService", "LeaderWorkerSet", "LLMInferenceService"}
# Lists a strategic-merge patch merges by this key (Kubernetes' patchMergeKey).
_MERGE_KEYS = {"containers": "name", "initContainers": "name", "volumes": "name",
               "env": "name", "volumeMounts": "mountPath"}
# What the redaction left where a secret was: a patch never carries one (kubectl would
# write the mask into the object).
_MASKS = ("[REDACTED", "***")
_KSERVE_CONTAINER = "kserve-container"


@dataclass
class Edits:
    """What one fix changes: engine flags, container fields, pod fields, the target's fields.

    Keys of ``container``, ``pod`` and ``spec`` are dotted paths (``resources.limits.memory``);
    a key ending in ``+`` adds the listed items to that list, replacing an item with the
    same ``name`` (or ``key``)."""

    args: dict[str, Any] = field(default_factory=dict)  # "--max-model-len": 8192; None removes
    container: dict[str, Any] = field(default_factory=dict)
    pod: dict[str, Any] = field(default_factory=dict)
    spec: dict[str, Any] = field(default_factory=dict)
    # Where the pod template is, when the kind has more than one (a LeaderWorkerSet's
    # leaderTemplate or workerTemplate); None: the kind's own.
    template: tuple[str, ...] | None = None

    def merged(self, other: Edits) -> Edits:
        """Both fixes' edits, in either order the same: lists added to (``key+``) get both
        fixes' items, and where both set one resource quantity (a memory limit sized for
        the process by one fix and for a bigger /dev/shm by another) the larger holds both."""
        return Edits({**self.args, **other.args},
                     _merge_fields(self.container, other.container),
                     _merge_fields(self.pod, other.pod), _merge_fields(self.spec, other.spec),
                     self.template)

    @property
    def empty(self) -> bool:
        return not (self.args or self.container or self.pod or self.spec)


@dataclass(frozen=True)
class Target:
    """The object a patch is for, as read (with its kind and apiVersion)."""

    kind: str
    obj: Obj
    container: str  # the container the fix is about, as named in the pod

    @property
    def name(self) -> str:
        return str(meta(self.obj).get("name", ""))

    @property
    def namespace(self) -> str:
        return str(meta(self.obj).get("namespace", ""))


def _merge_fields(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for key, value in b.items():
        if key not in out or out[key] == value:
            out[key] = value
        elif key.endswith("+"):
            items = list(out[key]) if isinstance(out[key], list) else [out[key]]
            for item in value if isinstance(value, list) else [value]:
                ident = _identity(item)
                items = [i for i in items if ident is None or _identity(i) != ident]
                items.append(item)
            out[key] = items
        elif "resources." in key and None not in (_bytes(out[key]), _bytes(value)):
            out[key] = max(out[key], value, key=lambda q: _bytes(q) or 0)
        else:
            out[key] = value
    return out


_QUANTITY = lazyregex.compile(r"^([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|k|M|G|T|P|)$")
_UNITS = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15,
          "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50}


def _bytes(value: Any) -> float | None:
    """A Kubernetes quantity (``24Gi``, ``512M``, a number) as a number; None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    m = _QUANTITY.match(str(value).strip())
    return float(m.group(1)) * _UNITS[m.group(2)] if m else None


def patch_type(kind: str) -> str:
    return "merge" if kind in _CUSTOM else "strategic"


def build(target: Target, edits: Edits) -> dict[str, Any] | None:
    """``{"apiVersion", "kind", "namespace", "name", "type", "patch"}``, or None when the
    edits change nothing in this object (or cannot be placed in it)."""
    return build_all(target, [(target.container, edits)])


def build_all(target: Target, parts: list[tuple[str, Edits]]) -> dict[str, Any] | None:
    """One patch for several fixes of one object, each on its own container.

    A patch names only what the fixes change. When that would carry what the redaction
    left of a secret (a list given whole, such as ``args`` holding ``--api-key [REDACTED]``,
    or a custom resource's containers with their env), it becomes a JSON patch of the
    changed places alone, each guarded by a ``test`` of what was read; when even that
    would carry a mask there is no patch (the fix's text still says the change)."""
    new: Obj | None = target.obj
    for container, edits in parts:
        new = apply(Target(target.kind, new, container), edits) if new is not None else None
    if new is None:
        return None
    kind = target.kind
    ptype = patch_type(kind)
    old = _strip(target.obj)
    body: Any = _diff(old, _strip(new), strategic=ptype == "strategic")
    if not body:
        return None
    if _masked(body):
        ptype, body = "json", _json_ops(old, _strip(new), "")
        if not body or _masked(body):
            return None
    return {"apiVersion": str(target.obj.get("apiVersion") or API_VERSION.get(kind, "v1")),
            "kind": kind, "namespace": target.namespace, "name": target.name,
            "type": ptype, "patch": body}


def _masked(value: Any) -> bool:
    if isinstance(value, str):
        return any(m in value for m in _MASKS)
    if isinstance(value, dict):
        return any(_masked(k) or _masked(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_masked(v) for v in value)
    return False


def _pointer(path: str, key: Any) -> str:
    return f"{path}/{str(key).replace('~', '~0').replace('/', '~1')}"


def _json_ops(old: Any, new: Any, path: str) -> list[dict[str, Any]]:
    """RFC 6902 operations that turn ``old`` into ``new``, place by place: list items by
    index, each index guarded by a test of the item's name (or of the value replaced)."""
    if isinstance(old, dict) and isinstance(new, dict):
        ops: list[dict[str, Any]] = []
        for k in new:
            if k not in old:
                ops.append({"op": "add", "path": _pointer(path, k), "value": new[k]})
            elif old[k] != new[k]:
                ops += _json_ops(old[k], new[k], _pointer(path, k))
        ops += [{"op": "remove", "path": _pointer(path, k)} for k in old if k not in new]
        return ops
    if isinstance(old, list) and isinstance(new, list):
        ops = []
        for i in range(min(len(old), len(new))):
            if old[i] == new[i]:
                continue
            here = _pointer(path, i)
            if isinstance(old[i], dict) and isinstance(new[i], dict) and "name" in old[i]:
                ops.append({"op": "test", "path": _pointer(here, "name"),
                            "value": old[i]["name"]})
            ops += _json_ops(old[i], new[i], here)
        ops += [{"op": "add", "path": _pointer(path, "-"), "value": v}
                for v in new[len(old):]]
        for i in reversed(range(len(new), len(old))):
            ops += [{"op": "test", "path": _pointer(path, i), "value": old[i]},
                    {"op": "remove", "path": _pointer(path, i)}]
        return ops
    return [{"op": "test", "path": path, "value": old},
            {"op": "replace", "path": path, "value": new}]


def apply(target: Target, edits: Edits) -> Obj | None:
    """A copy of the object with the edits made; None when a needed part is missing."""
    new = copy.deepcopy(target.obj)
    for path, value in edits.spec.items():
        if not _set(new, _split(path), value):
            return None
    if not (edits.args or edits.container or edits.pod):
        return new
    where = edits.template or _TEMPLATE.get(target.kind)
    if where is None:
        return None
    pod = _descend(new, where)
    if pod is None:
        return None
    for path, value in edits.pod.items():
        if not _set(pod, _split(path), value):
            return None
    container = _find_container(target.kind, pod, target.container)
    if container is None:
        return None
    before = copy.deepcopy(container.get("resources"))
    for path, value in edits.container.items():
        if not _set(container, _split(path), value):
            return None
    if edits.args:
        set_flags(container, edits.args)
    keep_qos(before, container)
    return new


def requests_moved(target: Target, edits: Edits) -> list[str]:
    """The requests the patch moves with their limits (``keep_qos``), not named by the fix
    itself, as ``requests.memory=24Gi``."""
    new = apply(target, edits)
    where = edits.template or _TEMPLATE.get(target.kind)
    if new is None or where is None:
        return []
    old_pod, new_pod = _descend(target.obj, where), _descend(new, where)
    if old_pod is None or new_pod is None:
        return []
    old_c = _find_container(target.kind, old_pod, target.container) or {}
    new_c = _find_container(target.kind, new_pod, target.container) or {}
    old_req = (old_c.get("resources") or {}).get("requests") or {}
    new_req = (new_c.get("resources") or {}).get("requests") or {}
    named = {_split(k)[-1] for k in edits.container if k.startswith("resources.requests")}
    return [f"requests.{k}={v}" for k, v in new_req.items()
            if old_req.get(k) != v and k not in named]


def keep_qos(before: Any, container: Obj) -> list[str]:
    """Requests kept with the limits a fix moved, so the pod keeps its QoS class: a
    request that was equal to its limit moves with it (a Guaranteed pod stays
    Guaranteed, and an extended resource's request must equal its limit), and none is
    left above its limit. The requests moved, as ``requests.memory=24Gi``."""
    old = before if isinstance(before, dict) else {}
    resources = container.get("resources")
    if not isinstance(resources, dict) or not isinstance(resources.get("limits"), dict):
        return []
    limits = resources["limits"]
    old_limits: Obj = old["limits"] if isinstance(old.get("limits"), dict) else {}
    old_requests: Obj = old["requests"] if isinstance(old.get("requests"), dict) else {}
    requests = resources.get("requests")
    moved: list[str] = []
    for name, limit in limits.items():
        if not isinstance(requests, dict) or name not in requests:
            continue  # no request: the API server sets it to the limit, whatever it is
        request = requests[name]
        was, asked = old_limits.get(name), old_requests.get(name)
        same = was is not None and asked is not None and _bytes(was) == _bytes(asked) \
            and _bytes(was) is not None
        over = None not in (_bytes(request), _bytes(limit)) \
            and (_bytes(request) or 0) > (_bytes(limit) or 0)
        if ((same and limit != was and request == asked) or over) and request != limit:
            requests[name] = limit
            moved.append(f"requests.{name}={limit}")
    return moved


def _strip(obj: Obj) -> Obj:
    return {k: v for k, v in obj.items() if k not in ("status",)}


def _descend(obj: Obj, path: tuple[str, ...]) -> Obj | None:
    cur: Any = obj
    for key in path:
        if not isinstance(cur, dict) or not isinstance(cur.get(key), dict):
            return None
        cur = cur[key]
    return cur if isinstance(cur, dict) else None


def _find_container(kind: str, pod: Obj, name: str) -> Obj | None:
    # An init container's fix (a model download's) edits it where the template has it; one
    # a controller injects (KServe's storage-initializer) is not there, and gets no patch.
    for c in [*(pod.get("containers") or []), *(pod.get("initContainers") or [])]:
        if isinstance(c, dict) and c.get("name") == name:
            return c
    if kind == "InferenceService" and isinstance(pod.get("model"), dict) \
            and name == _KSERVE_CONTAINER:
        return dict.__getitem__(pod, "model")  # type: ignore[no-any-return]
    containers = [c for c in pod.get("containers") or [] if isinstance(c, dict)]
    if kind == "InferenceService" and len(containers) == 1:
        return containers[0]
    return None


_KEY = lazyregex.compile(r'([^.\[\]]+)|\["([^"]+)"\]')


def _split(path: str) -> list[str]:
    return [m.group(1) or m.group(2) for m in _KEY.finditer(path)]


def _set(obj: Obj, keys: list[str], value: Any) -> bool:
    """Set the field at ``keys``, making the mappings on the way; a number is an index
    into a list that is there (``spec.metrics[1]``: a list without a merge key, such as an
    HPA's metrics, is changed in place). False when an index is not in the object as read."""
    cur: Any = obj
    *parents, last = keys
    for at, key in enumerate(parents):
        if isinstance(cur, list):
            if not key.isdigit() or int(key) >= len(cur) or not isinstance(cur[int(key)], dict):
                return False
            cur = cur[int(key)]
            continue
        nxt = cur.get(key)
        wanted = list if keys[at + 1].isdigit() else dict
        if not isinstance(nxt, wanted):
            if wanted is list:
                return False
            nxt = {}
            cur[key] = nxt
        cur = nxt
    if isinstance(cur, list):
        return False
    if last.endswith("+"):
        last = last[:-1]
        items = list(cur.get(last) or [])
        for item in value if isinstance(value, list) else [value]:
            ident = _identity(item)
            items = [i for i in items if ident is None or _identity(i) != ident]
            items.append(item)
        cur[last] = items
    elif value is None:
        cur.pop(last, None)
    else:
        cur[last] = copy.deepcopy(value)
    return True


def _identity(item: Any) -> Any:
    if isinstance(item, dict):
        for key in ("name", "key", "mountPath"):
            if key in item:
                return (key, item[key])
    return None


# --- engine flags in command / args ------------------------------------------------


def _flag_form(flag: str, value: Any) -> list[str]:
    if value is True:
        return [flag]
    return [f"{flag}={_scalar(value)}"]


def _scalar(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _names(flag: str) -> set[str]:
    bare = flag.lstrip("-")
    return {"--" + bare, "--" + bare.replace("-", "_"), "--" + bare.replace("_", "-")}


def set_flags(container: Obj, flags: dict[str, Any]) -> None:
    """Set (or remove, value None) vLLM flags where the container gives its flags: in
    ``args``, else in ``command``; inside a ``sh -c "vllm serve ..."`` script when that
    is where they are."""
    for key in ("args", "command"):
        words = container.get(key)
        if not isinstance(words, list):
            continue
        for i, word in enumerate(words):
            if isinstance(word, str) and " " in word and ("vllm" in word or "--" in word):
                container[key][i] = _set_in_script(word, flags)
                return
    field_name = "args" if container.get("args") or not container.get("command") else "command"
    words = [str(w) for w in container.get(field_name) or []]
    container[field_name] = _set_in_words(words, flags)


def _set_in_words(words: list[str], flags: dict[str, Any]) -> list[str]:
    out = list(words)
    for flag, value in flags.items():
        names = _names(flag)
        found = False
        i = 0
        while i < len(out):
            word = out[i]
            name, eq, _ = word.partition("=")
            if name in names:
                takes_next = not eq and i + 1 < len(out) and not out[i + 1].startswith("-")
                span = 2 if takes_next else 1
                if value is None:
                    del out[i:i + span]
                    continue
                if not found:
                    if takes_next and value is not True:
                        out[i + 1] = _scalar(value)
                    else:
                        out[i:i + span] = _flag_form(flag, value)
                    found = True
                    i += 1
                    continue
                del out[i:i + span]  # a flag given twice: the fix keeps one
                continue
            i += 1
        if not found and value is not None:
            out += _flag_form(flag, value)
    return out


def _set_in_script(script: str, flags: dict[str, Any]) -> str:
    for flag, value in flags.items():
        alternatives = "|".join(regex.escape(n) for n in sorted(_names(flag)))
        rx = regex.compile(rf"(?<=\s|^)(?:{alternatives})(?:[= ](?!-)\S+)?(?=\s|$)")
        new = "" if value is None else " ".join(shlex.quote(w) for w in
                                                  _flag_form(flag, value))
        if rx.search(script):
            script = rx.sub(new, script, count=1)
        elif value is not None:
            script = script.rstrip() + " " + new
    return script


# --- the patch body ---------------------------------------------------------------


def _diff(old: Any, new: Any, strategic: bool, key: str = "") -> Any:
    """The patch that turns ``old`` into ``new`` (None in a dict removes a key)."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: dict[str, Any] = {}
        for k in new:
            if k not in old:
                out[k] = new[k]
            elif old[k] != new[k]:
                out[k] = _diff(old[k], new[k], strategic, k)
        for k in old:
            if k not in new:
                out[k] = None
        return out
    if strategic and key in _MERGE_KEYS and isinstance(old, list) and isinstance(new, list):
        merge_key = _MERGE_KEYS[key]
        before = {i.get(merge_key): i for i in old if isinstance(i, dict)}
        items = []
        for item in new:
            if not isinstance(item, dict):
                return new
            prior = before.get(item.get(merge_key))
            if prior is None:
                items.append(item)
            elif prior != item:
                items.append({merge_key: item.get(merge_key),
                              **_diff(prior, item, strategic)})
        return items
    return new
