"""KServe's own merge of a ServingRuntime with an InferenceService, for manifests.

The pod KServe runs for ``spec.predictor.model`` is the runtime's container
with the model's fields merged over it, as KServe's controller merges them
(``pkg/controller/v1beta1/inferenceservice/utils/utils.go``:
``MergeServingRuntimeAndInferenceServiceSpecs``, ``MergeRuntimeContainers``,
``MergePodSpec``; ``GetServingRuntime``):

- the runtime is a ServingRuntime of the InferenceService's namespace by
  ``model.runtime``, else a ClusterServingRuntime of that name; without one,
  the first runtime (namespaced ones first, then by ``priority``) whose
  ``supportedModelFormats`` has the model's format with ``autoSelect``;
- the container is the runtime's ``kserve-container`` (its first container
  in older runtimes) with the model's fields as a strategic merge patch over
  it: scalars replaced, ``env`` merged by name, ``volumeMounts`` by mount
  path, ``ports`` by container port, ``resources`` and other maps merged key
  by key, and ``args`` concatenated, the runtime's first;
- the pod keeps the runtime's volumes, node selector, affinity, tolerations,
  image pull secrets and scheduler, with the predictor's pod fields merged
  over them the same way (volumes by name);
- ``{{.Name}}`` and ``{{.Namespace}}`` in the runtime's container are the
  InferenceService's.

Every merged mapping and list resolves each key to where it was written
(``SourceMap.compose``), so a finding on a flag the runtime sets points at
the runtime's line.
"""

from __future__ import annotations

import contextlib
import copy
from typing import Any

from triage.lint.sourcemap import RUNTIME_KINDS, PathPart, SourceMap
from triage.snapshot import Obj, meta

CONTAINER_NAME = "kserve-container"
TRANSFORMER_NAME = "transformer-container"
__all__ = ["BUILTIN_RELEASE", "RUNTIME_KINDS", "builtin_runtime_for", "merge_container",
           "merge_pod_spec", "runtime_container", "runtime_for", "runtime_image"]

# corev1.Container's lists that a strategic merge merges, by their merge key; every
# other list (command) is replaced, and args are concatenated by KServe itself.
_CONTAINER_LISTS: dict[str, str | None] = {
    "env": "name", "volumeMounts": "mountPath", "ports": "containerPort", "envFrom": None,
    "volumeDevices": "devicePath", "resizePolicy": "resourceName"}
# The ServingRuntimePodSpec fields MergePodSpec takes from the runtime.
_RUNTIME_POD_FIELDS = ("nodeSelector", "affinity", "tolerations", "volumes",
                       "imagePullSecrets", "schedulerName", "resourceClaims")
_POD_LISTS: dict[str, str | None] = {
    "volumes": "name", "imagePullSecrets": "name", "containers": "name",
    "initContainers": "name", "resourceClaims": "name"}
# model fields that are KServe's, not the container's.
MODEL_ONLY = ("modelFormat", "runtime", "storageUri", "protocolVersion", "storage",
              "runtimeVersion")


# The runtime KServe installs itself for Hugging Face models (vLLM backend), as release
# v0.20.0 installs it: kserve/kserve config/runtimes/kserve-huggingfaceserver.yaml and
# charts/kserve-runtime-configs/files/runtimes/resources.yaml at that release (python/VERSION
# 0.20.0), its image kserve/huggingfaceserver tagged with the release. A repository that
# deploys an InferenceService of format huggingface usually holds only that: the container
# it runs in is this one.
BUILTIN_RELEASE = "v0.20.0"
_BUILTIN_HF_RUNTIME: Obj = {
    "apiVersion": "serving.kserve.io/v1alpha1", "kind": "ClusterServingRuntime",
    "metadata": {"name": "kserve-huggingfaceserver",
                 "annotations": {"serving.kserve.io/server-type": "huggingfaceserver"}},
    "spec": {
        "annotations": {"prometheus.kserve.io/port": "8080",
                        "prometheus.kserve.io/path": "/metrics"},
        "supportedModelFormats": [{"name": "huggingface", "version": "1",
                                   "autoSelect": True, "priority": 1}],
        "protocolVersions": ["v2", "v1"],
        "containers": [{
            "name": CONTAINER_NAME,
            "image": f"kserve/huggingfaceserver:{BUILTIN_RELEASE}",
            "args": ["--model_name={{.Name}}"],
            "env": [{"name": "LMCACHE_USE_EXPERIMENTAL", "value": "True"}],
            "securityContext": {"allowPrivilegeEscalation": False, "privileged": False,
                                "runAsNonRoot": True, "capabilities": {"drop": ["ALL"]}},
            "resources": {"requests": {"cpu": "1", "memory": "2Gi"},
                          "limits": {"cpu": "1", "memory": "2Gi"}},
            "volumeMounts": [{"name": "devshm", "mountPath": "/dev/shm"}],
        }],
        "volumes": [{"name": "devshm", "emptyDir": {"medium": "Memory"}}],
        "hostIPC": False,
    },
}


def builtin_runtime_for(model: Obj) -> Obj | None:
    """KServe's own Hugging Face runtime when it serves the model (its format is
    huggingface, or it names kserve-huggingfaceserver), a fresh copy; else None."""
    return runtime_for(model, "", [copy.deepcopy(_BUILTIN_HF_RUNTIME)])


def runtime_image(container: Obj, model: Obj, runtime: Obj) -> str | None:
    """The image KServe runs the merged container with (UpdateImageTag): the model's
    runtimeVersion as the tag, else, for a Hugging Face server, its ``-gpu`` build when the
    container asks for a GPU; None when KServe keeps the image as written."""
    image = str(container.get("image") or "")
    if not image or "@sha256:" in image:
        return None
    repo, colon, tag = image.rpartition(":")
    if not colon or "/" in tag:
        return None
    version = model.get("runtimeVersion")
    if version:
        return f"{repo}:{version}"
    server = str(_mapping(meta(runtime).get("annotations")).get(
        "serving.kserve.io/server-type") or "")
    if server != "huggingfaceserver" and "huggingfaceserver" not in str(
            meta(runtime).get("name") or ""):
        return None
    # pkg/utils/utils.go IsGPUEnabled: limits name nvidia.com/gpu or a MIG slice.
    limits = _mapping(_mapping(container.get("resources")).get("limits"))
    wants_gpu = any(str(name) == "nvidia.com/gpu" or str(name).startswith("nvidia.com/mig")
                    for name in limits)
    return f"{image}-gpu" if wants_gpu and not image.endswith("-gpu") else None


def _mapping(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def runtime_for(model: Obj, namespace: str, runtimes: list[Obj]) -> Obj | None:
    """The runtime KServe picks for a predictor's model."""
    def usable(r: Obj) -> bool:
        return not (r.get("spec") or {}).get("disabled")

    spaced = [r for r in runtimes if r.get("kind") == "ServingRuntime" and usable(r)]
    # A ServingRuntime written without a namespace is applied with the others.
    local = [r for r in spaced if str(meta(r).get("namespace") or "") == namespace] + \
        [r for r in spaced if not meta(r).get("namespace") and namespace]
    cluster = [r for r in runtimes if r.get("kind") == "ClusterServingRuntime" and usable(r)]
    wanted = model.get("runtime")
    if wanted:
        return next((r for r in [*local, *cluster] if meta(r).get("name") == str(wanted)),
                    None)
    fmt = model.get("modelFormat")
    name = str(fmt.get("name", "") if isinstance(fmt, dict) else "").lower()

    def priority(r: Obj) -> int:
        best = 0
        for f in (r.get("spec") or {}).get("supportedModelFormats") or []:
            if isinstance(f, dict) and str(f.get("name", "")).lower() == name:
                with contextlib.suppress(TypeError, ValueError):
                    best = max(best, int(f.get("priority") or 0))
        return best

    def supports(r: Obj) -> bool:
        return any(isinstance(f, dict) and str(f.get("name", "")).lower() == name
                   and f.get("autoSelect", False) is not False
                   for f in (r.get("spec") or {}).get("supportedModelFormats") or [])

    for group in (local, cluster):
        found = sorted((r for r in group if supports(r)), key=priority, reverse=True)
        if found:
            return found[0]
    return None


def runtime_container(runtime: Obj) -> Obj | None:
    containers = [c for c in (runtime.get("spec") or {}).get("containers") or []
                  if isinstance(c, dict)]
    named = next((c for c in containers if c.get("name") == CONTAINER_NAME), None)
    return named if named is not None else (containers[0] if containers else None)


def _placeholders(value: Any, isvc: Obj) -> Any:
    """KServe fills the runtime container's Go-template placeholders from the
    InferenceService's metadata (ReplacePlaceholders)."""
    if isinstance(value, str) and "{{" in value:
        m = meta(isvc)
        return (value.replace("{{.Name}}", str(m.get("name") or ""))
                .replace("{{.Namespace}}", str(m.get("namespace") or "")))
    return value


def merge_container(base: Obj, overlay: Obj, isvc: Obj, sources: SourceMap) -> Obj:
    """The runtime container with the model's fields over it."""
    fields = {k: v for k, v in overlay.items() if k not in MODEL_ONLY}
    sources.adopt(fields, overlay)
    out = _merge_map(base, fields, sources, _CONTAINER_LISTS, top=True)
    if isinstance(out.get("args"), list):
        args = [_placeholders(a, isvc) for a in out["args"]]
        node = sources.node(out["args"])
        out["args"] = args
        if node is not None:
            sources.add(args, node)
    if not out.get("name"):
        out["name"] = base.get("name")
    return out


def merge_pod_spec(runtime_spec: Obj, predictor_spec: Obj, sources: SourceMap) -> Obj:
    """MergePodSpec: the runtime's pod fields, the predictor's pod spec over them."""
    base = {k: runtime_spec[k] for k in _RUNTIME_POD_FIELDS if k in runtime_spec}
    sources.compose(base, runtime_spec, {k: (runtime_spec, k) for k in base})
    return _merge_map(base, predictor_spec, sources, _POD_LISTS, top=False)


def _merge_map(base: Obj, overlay: Obj, sources: SourceMap, lists: dict[str, str | None],
               top: bool) -> Obj:
    out: Obj = {}
    origins: dict[PathPart, tuple[Any, PathPart]] = {}
    for key, value in base.items():
        out[key] = value
        origins[key] = (base, key)
    for key, value in overlay.items():
        if value is None:
            continue
        old = out.get(key)
        if key == "args" and top and isinstance(old, list) and isinstance(value, list):
            out[key] = _concat(old, value, sources)
        elif key in lists and isinstance(old, list) and isinstance(value, list) \
                and lists[key] is not None:
            out[key] = _merge_list(old, value, str(lists[key]), sources)
        elif isinstance(old, dict) and isinstance(value, dict):
            out[key] = _merge_map(old, value, sources, {}, top=False)
        else:
            out[key] = value
        origins[key] = (overlay, key)
    sources.compose(out, overlay if sources.node(overlay) is not None else base, origins)
    return out


def _concat(first: list[Any], second: list[Any], sources: SourceMap) -> list[Any]:
    out = [*first, *second]
    origins: dict[PathPart, tuple[Any, PathPart]] = {i: (first, i) for i in range(len(first))}
    origins.update({len(first) + i: (second, i) for i in range(len(second))})
    sources.compose(out, second, origins)
    return out


def _merge_list(old: list[Any], new: list[Any], key: str, sources: SourceMap) -> list[Any]:
    """A strategic merge of two lists of objects by their merge key: an item of the
    patch merges into the original's item with the same key, the others follow."""
    out: list[Any] = []
    origins: dict[PathPart, tuple[Any, PathPart]] = {}
    patch = {str(item.get(key)): (i, item) for i, item in enumerate(new)
             if isinstance(item, dict) and item.get(key) is not None}
    used: set[str] = set()
    for i, item in enumerate(old):
        ident = str(item.get(key)) if isinstance(item, dict) else None
        if ident is not None and ident in patch:
            j, other = patch[ident]
            used.add(ident)
            merged = _merge_map(item, other, sources, {}, top=False)
            if key == "name" and "valueFrom" in other:  # env: the patch's intent wins
                merged.pop("value", None)
            elif key == "name" and "value" in other:
                merged.pop("valueFrom", None)
            origins[len(out)] = (new, j)
            out.append(merged)
        else:
            origins[len(out)] = (old, i)
            out.append(item)
    for j, item in enumerate(new):
        ident = str(item.get(key)) if isinstance(item, dict) else None
        if ident is None or ident not in used:
            origins[len(out)] = (new, j)
            out.append(item)
    sources.compose(out, new, origins)
    return out
