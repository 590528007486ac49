"""Facts about where a container may write: its user, its root filesystem, its caches.

vLLM, Hugging Face, Triton, torch.compile and pip write caches under the
home directory (``~/.cache``, ``~/.triton``, ``~/.config``) unless an
environment variable points them elsewhere. A container run under a random
or non-root UID (OpenShift's restricted SCC, ``runAsUser``) often has ``/``
as its home, and ``readOnlyRootFilesystem`` makes every path outside a
volume read-only: these facts say which of those applies, for the evidence.
"""

from __future__ import annotations

import posixpath

from triage.facts import (
    LOG_QUERIES,
    ContainerContext,
    Measured,
    PodContext,
    Unmeasurable,
    fact,
    stream_label,
)
from triage.kube import workload
from triage.logs import Hit, Query
from triage.snapshot import CURRENT, PREVIOUS
from triage.vllm import wordings

# Environment variables that move a cache of vLLM, Hugging Face, torch, Triton or XDG.
CACHE_ENV = (
    "HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "HF_HOME", "HF_HUB_CACHE",
    "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE", "HF_DATASETS_CACHE", "VLLM_CACHE_ROOT",
    "VLLM_CONFIG_ROOT", "VLLM_ASSETS_CACHE", "TRITON_CACHE_DIR", "TRITON_HOME",
    "TORCHINDUCTOR_CACHE_DIR", "TORCH_HOME", "TORCH_EXTENSIONS_DIR", "CUDA_CACHE_PATH",
    "OUTLINES_CACHE_DIR", "NUMBA_CACHE_DIR", "TMPDIR",
)


def _security(ctx: ContainerContext, key: str) -> tuple[object, str]:
    """A securityContext setting: the container's, else the pod's; and where it was set."""
    own = ctx.container.get("securityContext") or {}
    if isinstance(own, dict) and own.get(key) is not None:
        return own[key], f"containers[{ctx.name}].securityContext.{key}"
    pod = workload.pod_spec(ctx.pod).get("securityContext") or {}
    if isinstance(pod, dict) and pod.get(key) is not None:
        return pod[key], f"spec.securityContext.{key}"
    return None, ""


@fact("run_as_user", unit="uid", scope="container",
      doc="the UID the container runs as: securityContext.runAsUser of the container, else "
          "of the pod; None when neither sets one (the image's USER, or one the platform "
          "assigns, e.g. OpenShift's restricted SCC)")
def run_as_user(ctx: ContainerContext) -> Measured:
    uid, where = _security(ctx, "runAsUser")
    if uid is None:
        non_root, where = _security(ctx, "runAsNonRoot")
        return Measured(None, f"container {ctx.name} sets no runAsUser: it runs as the image's "
                              "user or one the platform assigns"
                        + (f" ({where}: {non_root})" if non_root is not None else ""))
    return Measured(uid, f"container {ctx.name} runs as UID {uid} ({where})")


@fact("fs_group", unit="gid", scope="pod",
      doc="spec.securityContext.fsGroup: the group volumes are made writable for; None "
          "when unset")
def fs_group(ctx: PodContext) -> Measured:
    pod = workload.pod_spec(ctx.pod).get("securityContext") or {}
    gid = pod.get("fsGroup") if isinstance(pod, dict) else None
    if gid is None:
        return Measured(None, f"pod {ctx.pod_name} sets no fsGroup")
    return Measured(gid, f"pod {ctx.pod_name} spec.securityContext.fsGroup = {gid}")


@fact("read_only_root_filesystem", unit="bool", scope="container",
      doc="securityContext.readOnlyRootFilesystem of the container: only its volumes are "
          "writable")
def read_only_root_filesystem(ctx: ContainerContext) -> Measured:
    own = ctx.container.get("securityContext") or {}
    value = bool(isinstance(own, dict) and own.get("readOnlyRootFilesystem"))
    if value:
        return Measured(True, f"container {ctx.name} has readOnlyRootFilesystem: true: only "
                              "its volumes are writable")
    return Measured(False, f"container {ctx.name} has a writable root filesystem")


@fact("cache_env", unit="list", scope="container",
      doc="the environment variables of the container that place a cache (HOME, HF_HOME, "
          "XDG_CACHE_HOME, VLLM_CACHE_ROOT, TRITON_CACHE_DIR, ...), as NAME=value, and the "
          "writable volumes mounted in the container")
def cache_env(ctx: ContainerContext) -> Measured:
    found = [f"{name}={var.value}" + ("" if var.origin == "literal" else
                                      f" ({var.described})")
             for name, var in ctx.env.vars.items()
             if name in CACHE_ENV and var.value is not None]
    mounts = [str(m.get("mountPath")) for m in ctx.container.get("volumeMounts") or []
              if isinstance(m, dict) and m.get("mountPath") and not m.get("readOnly")]
    where = f"writable volumes at {', '.join(mounts)}" if mounts else "no writable volume"
    if not found:
        return Measured([], f"container {ctx.name} sets none of HOME, HF_HOME, XDG_CACHE_HOME, "
                            f"VLLM_CACHE_ROOT, TRITON_CACHE_DIR, ...: the caches go under "
                            f"the home directory; {where}")
    return Measured(found, f"container {ctx.name} sets {', '.join(found)}; {where}")


# CPython's OSError text for EACCES and EROFS, with the path it names; not huggingface_hub's
# "Could not cache non-existence of file. Will ignore error and continue. Error: [Errno 13]",
# which does not fail.
_UNWRITABLE = LOG_QUERIES.add(Query(wordings.regex("python_unwritable_path")))


def _unwritable(ctx: ContainerContext) -> tuple[str, str, Hit] | None:
    """The path of the last EACCES/EROFS line: the previous log first (where the crash is)."""
    for stream in (PREVIOUS, CURRENT):
        index = ctx.log(stream)
        if index is not None:
            result = index.result(_UNWRITABLE)
            if result.count:
                hit = result.last[-1]
                return str(hit.groups[1]), stream, hit
    return None


def _unwritable_path(ctx: ContainerContext) -> tuple[str, str]:
    """The unwritable path (normalized) and where it was read; Unmeasurable when no log
    read names one, or when it is relative (the directory it is relative to is unknown)."""
    found = _unwritable(ctx)
    if found is None:
        unread = ctx.logs_unread()
        raise Unmeasurable(unread[0] if unread else
                           f"no log of container {ctx.name} names a path it could not write")
    path, stream, hit = found
    where = f"{stream_label(stream)} ({ctx.name}) line {hit.line.number}"
    if not path.startswith("/"):
        raise Unmeasurable(f"the path '{path}' ({where}) is relative: the directory it is "
                           "relative to is not known")
    return posixpath.normpath(path), where


def _under(path: str, root: str) -> bool:
    root = posixpath.normpath(root)
    return root == "/" or path == root or path.startswith(root + "/")


@fact("unwritable_path", unit="path", scope="container",
      doc="the absolute path the container could not write, from the last 'PermissionError: "
          "[Errno 13] Permission denied: PATH' or 'OSError: [Errno 30] Read-only file system: "
          "PATH' of its previous log, else its current log")
def unwritable_path(ctx: ContainerContext) -> Measured:
    path, where = _unwritable_path(ctx)
    return Measured(path, f"container {ctx.name} could not write {path} ({where})")


@fact("unwritable_path_mount", unit="path", scope="container",
      doc="the mountPath of the container's volume that holds unwritable_path (the longest "
          "that does); None when the path is on the container's own filesystem")
def unwritable_path_mount(ctx: ContainerContext) -> Measured:
    path, where = _unwritable_path(ctx)
    mounts = [m for m in ctx.container.get("volumeMounts") or []
              if isinstance(m, dict) and isinstance(m.get("mountPath"), str)
              and m["mountPath"].startswith("/") and _under(path, m["mountPath"])]
    if not mounts:
        return Measured(None, f"{path} ({where}) is on container {ctx.name}'s own filesystem: "
                              "no volume is mounted above it")
    mount = max(mounts, key=lambda m: len(posixpath.normpath(m["mountPath"])))
    read_only = " (readOnly)" if mount.get("readOnly") else ""
    return Measured(mount["mountPath"], f"{path} ({where}) is on volume {mount.get('name')} "
                                        f"mounted at {mount['mountPath']}{read_only}")


# The variables that place a cache somewhere other than the home directory. HOME is left
# out: a fix sets it; TMPDIR too: /tmp is what a read-only root's fix mounts.
_PLACING_ENV = tuple(n for n in CACHE_ENV if n not in ("HOME", "TMPDIR"))


@fact("unwritable_path_env", unit="text", scope="container",
      doc="the container's environment variable (HF_HOME, XDG_CACHE_HOME, VLLM_CACHE_ROOT, "
          "TRITON_CACHE_DIR, ...; not HOME or TMPDIR) whose directory holds unwritable_path, "
          "the longest that does; None when no such variable places it")
def unwritable_path_env(ctx: ContainerContext) -> Measured:
    path, where = _unwritable_path(ctx)
    placing = [(name, str(var.value)) for name, var in ctx.env.vars.items()
               if name in _PLACING_ENV and var.value is not None
               and var.value.startswith("/") and _under(path, var.value)]
    if not placing:
        return Measured(None, f"{path} ({where}) is placed by none of container {ctx.name}'s "
                              "cache variables (HF_HOME, XDG_CACHE_HOME, ...): under the home "
                              "directory or a fixed path")
    name, value = max(placing, key=lambda p: len(posixpath.normpath(p[1])))
    return Measured(name, f"{path} ({where}) is under {name}={value}")
