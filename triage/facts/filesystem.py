"""Facts about where a container may write: its user, its root filesystem, its caches.

vLLM, Hugging Face, Triton, torch.compile and pip write caches under the
home directory (``~/.cache``, ``~/.triton``, ``~/.config``) unless an
environment variable points them elsewhere. A container run under a random
or non-root UID (OpenShift's restricted SCC, ``runAsUser``) often has ``/``
as its home, and ``readOnlyRootFilesystem`` makes every path outside a
volume read-only: these facts say which of those applies, for the evidence.
"""

from __future__ import annotations

from triage import workload
from triage.facts import ContainerContext, Measured, fact

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
def fs_group(ctx: ContainerContext) -> Measured:
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
    env = ctx.container.get("env") or []
    found = [f"{e.get('name')}={e.get('value')}" for e in env
             if isinstance(e, dict) and e.get("name") in CACHE_ENV and "value" in e]
    mounts = [str(m.get("mountPath")) for m in ctx.container.get("volumeMounts") or []
              if isinstance(m, dict) and m.get("mountPath") and not m.get("readOnly")]
    where = f"writable volumes at {', '.join(mounts)}" if mounts else "no writable volume"
    if not found:
        return Measured([], f"container {ctx.name} sets none of HOME, HF_HOME, XDG_CACHE_HOME, "
                            f"VLLM_CACHE_ROOT, TRITON_CACHE_DIR, ...: the caches go under "
                            f"the home directory; {where}")
    return Measured(found, f"container {ctx.name} sets {', '.join(found)}; {where}")
