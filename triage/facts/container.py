"""Facts about the container, its pod and its node, read from their API objects."""

from __future__ import annotations

from triage.facts import (
    ContainerContext,
    Measured,
    NodeContext,
    PodContext,
    Unmeasurable,
    fact,
    stream_label,
)
from triage.kube import workload
from triage.results import Location
from triage.snapshot import LOG_STREAMS, Obj
from triage.vllm import images


@fact("gpu_request", unit="GPUs", scope="container",
      doc="GPUs the container asks for in resources.limits (nvidia.com/gpu, amd.com/gpu, "
          "...); None for an init container, which runs before vLLM")
def gpu_request(ctx: ContainerContext) -> Measured:
    if ctx.kind == "init container":  # it runs before vLLM does; the GPUs are the containers'
        return Measured(None, f"init container {ctx.name} runs to completion before the "
                              "containers start: the GPUs it asks for are not vLLM's")
    n = workload.gpu_request(ctx.container)
    res = ctx.container.get("resources") or {}
    named = next((name for section in ("limits", "requests")
                  for name in workload.GPU_RESOURCES if name in (res.get(section) or {})),
                 "nvidia.com/gpu")
    section = "requests" if named not in (res.get("limits") or {}) and \
        named in (res.get("requests") or {}) else "limits"
    at = (ctx.field("resources", section, named),)
    if n:
        return Measured(n, f"container {ctx.name} requests {n} GPU(s) "
                           f"(resources.limits: {_gpu_limits(ctx.container)})", at)
    return Measured(0, f"container {ctx.name} requests no GPU: resources.limits has no "
                       "nvidia.com/gpu, so the device plugin gives it no device", at)


@fact("accelerator_request", unit="devices", scope="container",
      doc="accelerator devices the container asks for in resources.limits: GPUs "
          "(nvidia.com/gpu, amd.com/gpu, ...), TPU chips (google.com/tpu), AWS Neuron devices "
          "or cores (aws.amazon.com/neuron, neurondevice, neuroncore); None for an init "
          "container")
def accelerator_request(ctx: ContainerContext) -> Measured:
    if ctx.kind == "init container":
        return Measured(None, f"init container {ctx.name} runs to completion before the "
                              "containers start: the devices it asks for are not vLLM's")
    n, named = workload.accelerator_request(ctx.container)
    res = ctx.container.get("resources") or {}
    section = "limits" if named is None or named in (res.get("limits") or {}) else "requests"
    at = (ctx.field("resources", section, named) if named else ctx.field("resources"),)
    if n and named:
        return Measured(n, f"container {ctx.name} requests {n} {named}", at)
    return Measured(0, f"container {ctx.name} requests no accelerator: resources.limits has "
                       "no GPU, TPU or Neuron device", at)


@fact("image_platform", unit="text", scope="container",
      doc="the hardware the image's vLLM build is for, by its name or tag (cuda, rocm, cpu, "
          "tpu, neuron, hpu, xpu); None when the name does not say")
def image_platform(ctx: ContainerContext) -> Measured:
    image = str(ctx.container.get("image") or "")
    found = images.platform(image)
    if found is None:
        return Measured(None, f"container {ctx.name} image {image or '(none)'} does not say "
                              "which hardware its vLLM build is for", (ctx.field("image"),))
    return Measured(found[0], f"container {ctx.name} image {image}: {found[1]}",
                    (ctx.field("image"),))


@fact("cpu_serving_signal", unit="text", scope="container",
      doc="what says the container serves on CPU: vLLM's CPU image, a VLLM_CPU_* variable "
          "(VLLM_CPU_KVCACHE_SPACE, ...) or --device cpu; None when nothing does")
def cpu_serving_signal(ctx: ContainerContext) -> Measured:
    image = str(ctx.container.get("image") or "")
    found = images.platform(image)
    if found is not None and found[0] == "cpu":
        return Measured(f"image {image}", f"container {ctx.name} image {image}: {found[1]}",
                        (ctx.field("image"),))
    for name, var in ctx.env.vars.items():
        if name.startswith("VLLM_CPU_"):  # read by vLLM's CPU backend only (vllm/envs.py)
            return Measured(f"env {name}", f"container {ctx.name} sets {name} "
                                           f"({var.described}), a variable only vLLM's CPU "
                                           "backend reads", (ctx.field(*var.path),))
    device = ctx.engine.raw("device")
    if device is not None and device.lower() == "cpu":
        return Measured("--device cpu", f"container {ctx.name} runs vLLM with --device cpu",
                        (ctx.field("args"),))
    return Measured(None, f"container {ctx.name}: no CPU image, VLLM_CPU_* variable or "
                          "--device cpu", (ctx.field("image"),))


def _gpu_limits(container: Obj) -> str:
    limits = (container.get("resources") or {}).get("limits") or {}
    return ", ".join(f"{k}={v}" for k, v in limits.items() if k in workload.GPU_RESOURCES)


@fact("shm_memory_backed", unit="bool", scope="container",
      doc="/dev/shm is memory-backed (emptyDir medium Memory, or the node's with hostIPC)")
def shm_memory_backed(ctx: ContainerContext) -> Measured:
    if workload.pod_spec(ctx.pod).get("hostIPC"):
        return Measured(True, "pod uses hostIPC, /dev/shm is the node's",
                        (ctx.pod_field("spec", "hostIPC"),))
    vol = workload.shm_volume(ctx.pod, ctx.container)
    at = shm_location(ctx)
    if vol is None:
        return Measured(False, f"no volume is mounted at /dev/shm in container {ctx.name}",
                        at)
    medium = (vol.get("emptyDir") or {}).get("medium")
    if medium == "Memory":
        limit = (vol.get("emptyDir") or {}).get("sizeLimit", "no sizeLimit")
        return Measured(True, f"/dev/shm is emptyDir medium Memory ({limit}), volume "
                              f"{vol.get('name')}", at)
    return Measured(False, f"/dev/shm is volume {vol.get('name')} but not memory-backed", at)


def shm_location(ctx: ContainerContext) -> tuple[Location, ...]:
    """The /dev/shm volume (or, without one, the container's volumeMounts where it goes)."""
    mounts = ctx.container.get("volumeMounts") or []
    for i, mount in enumerate(mounts):
        if isinstance(mount, dict) and str(mount.get("mountPath", "")).rstrip("/") == "/dev/shm":
            for j, vol in enumerate(workload.pod_spec(ctx.pod).get("volumes") or []):
                if isinstance(vol, dict) and vol.get("name") == mount.get("name"):
                    return (ctx.pod_field("spec", "volumes", j), ctx.field("volumeMounts", i))
            return (ctx.field("volumeMounts", i),)
    return (ctx.field("volumeMounts"),)


@fact("memory_limit", unit="quantity", scope="container",
      doc="resources.limits.memory of the container as written (e.g. 32Gi); None without a limit")
def memory_limit(ctx: ContainerContext) -> Measured:
    limit = workload.memory_limit(ctx.container)
    req = ((ctx.container.get("resources") or {}).get("requests") or {}).get("memory")
    at = (ctx.field("resources", "limits", "memory"),)
    if limit:
        return Measured(limit, f"container {ctx.name} memory limit {limit}"
                               + (f", request {req}" if req else ""), at)
    return Measured(None, f"container {ctx.name} has no memory limit", at)


@fact("restart_count", unit="restarts", scope="container",
      doc="status.containerStatuses[].restartCount")
def restart_count(ctx: ContainerContext) -> Measured:
    ctx.runtime("the container's status")
    n = int(ctx.status.get("restartCount") or 0)
    return Measured(n, f"container {ctx.name} restarted {n} time(s)")


def _last_termination(ctx: ContainerContext) -> Obj:
    term = (ctx.status.get("lastState") or {}).get("terminated")
    return term if isinstance(term, dict) else {}


@fact("last_exit_code", unit="exit code", scope="container",
      doc="exit code of the previous termination (lastState.terminated); None if none")
def last_exit_code(ctx: ContainerContext) -> Measured:
    ctx.runtime("the container's status")
    term = _last_termination(ctx)
    if not term:
        return Measured(None, f"container {ctx.name} has no previous termination")
    return Measured(term.get("exitCode"), f"container {ctx.name} last terminated: reason "
                    f"{term.get('reason')}, exit code {term.get('exitCode')}, "
                    f"finished {term.get('finishedAt')}")


@fact("last_termination_reason", unit="text", scope="container",
      doc="reason of the previous termination (OOMKilled, Error, Completed); None if none")
def last_termination_reason(ctx: ContainerContext) -> Measured:
    ctx.runtime("the container's status")
    term = _last_termination(ctx)
    if not term:
        return Measured(None, "no previous termination")
    return Measured(term.get("reason"), f"last termination {term.get('reason')} "
                                        f"(exit {term.get('exitCode')})")


@fact("container_started", unit="bool", scope="container",
      doc="the container has run at least once (running, terminated or a previous termination)")
def container_started(ctx: ContainerContext) -> Measured:
    ctx.runtime("the container's status")
    state = ctx.status.get("state") or {}
    ran = bool(state.get("running") or state.get("terminated") or _last_termination(ctx))
    if ran:
        return Measured(True, f"{ctx.kind} {ctx.name} has run")
    why = ctx.no_status()
    if why:
        return Measured(False, f"{why}; no log is read")
    return Measured(False, f"{workload.pod_state(ctx.pod)}, the {ctx.kind} has not started, "
                           "so there is no log")


@fact("logs_read", unit="list", scope="container",
      doc="the log streams that were read for the container (current, previous)")
def logs_read(ctx: ContainerContext) -> Measured:
    ctx.runtime("the pod's logs")
    read = [s for s in LOG_STREAMS if ctx.log(s) is not None]
    return Measured(read, " and ".join(f"{stream_label(s)}" for s in read) or "no log read")


@fact("log_lines_read", unit="lines", scope="container",
      doc="lines in the log streams that were read")
def log_lines_read(ctx: ContainerContext) -> Measured:
    ctx.runtime("the pod's logs")
    n = sum(index.lines for index in ctx.logs.values())
    return Measured(n, f"{n} lines")


@fact("unschedulable_message", unit="text", scope="pod",
      doc="the scheduler's message while the pod's PodScheduled condition is False")
def unschedulable_message(ctx: PodContext) -> Measured:
    ctx.runtime("the pod's status")
    for cond in (ctx.pod.get("status") or {}).get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == "PodScheduled" and \
                str(cond.get("status")) == "False":
            msg = str(cond.get("message") or cond.get("reason") or "Unschedulable")
            return Measured(msg, f"pod {ctx.pod_name} condition PodScheduled=False, reason "
                                 f"{cond.get('reason')}: {msg}")
    return Measured(None, f"pod {ctx.pod_name} is not reported unschedulable")


@fact("node_disk_pressure", unit="text", scope="node",
      doc="status of the DiskPressure condition of the pod's node (True, False, Unknown, "
          "'not reported'); None when the pod is on no node that was read")
def node_disk_pressure(ctx: NodeContext) -> Measured:
    ctx.runtime("the pod's node")
    if ctx.node is None:
        why = ctx.node_failure()
        if why:
            raise Unmeasurable(why)
        return Measured(None, "the pod is not on a node that was read")
    conds = {c.get("type"): c.get("status") for c in
             (ctx.node.get("status") or {}).get("conditions") or [] if isinstance(c, dict)}
    status = str(conds.get("DiskPressure", "not reported"))
    return Measured(status, f"node {ctx.node_name}: DiskPressure={status}")


@fact("image_tag", unit="text", scope="container",
      doc="the tag of the container image (None when the image names no tag)")
def image_tag(ctx: ContainerContext) -> Measured:
    image = str(ctx.container.get("image") or "")
    _repo, tag, _digest = workload.split_image(image)
    resolved = ctx.status.get("imageID")
    seen = f"; the node ran {resolved}" if resolved else ""
    policy = ctx.container.get("imagePullPolicy")
    what = "has no tag (Kubernetes pulls :latest)" if tag is None else f"uses tag {tag}"
    return Measured(tag, f"container {ctx.name} image {image} {what}, imagePullPolicy "
                         f"{policy or 'unset (Always for latest or no tag, else IfNotPresent)'}"
                         f"{seen}", (ctx.field("image"),))


@fact("image", unit="text", scope="container",
      doc="the container image as written in the spec (repository, tag and digest)")
def image(ctx: ContainerContext) -> Measured:
    value = str(ctx.container.get("image") or "")
    return Measured(value or None, f"container {ctx.name} image {value or '(none)'}",
                    (ctx.field("image"),))


@fact("image_pinned_by_digest", unit="bool", scope="container",
      doc="the container image is given by digest (@sha256:...)")
def image_pinned_by_digest(ctx: ContainerContext) -> Measured:
    image = str(ctx.container.get("image") or "")
    digest = workload.split_image(image)[2]
    return Measured(bool(digest), f"container {ctx.name} image {image} "
                                  + ("is pinned by digest" if digest else "names no digest"),
                    (ctx.field("image"),))


@fact("service_link_vllm_port", unit="text", scope="container",
      doc="VLLM_PORT as the kubelet injects it from a Service named vllm (service links); "
          "None when nothing is injected")
def service_link_vllm_port(ctx: ContainerContext) -> Measured:
    svc = ctx.snapshot.find("services", ctx.namespace, "vllm")
    if svc is None:
        unread = ctx.unread("services")
        if unread:
            raise Unmeasurable(unread[0])
        return Measured(None, f"no Service named vllm in namespace {ctx.namespace}")
    links = workload.pod_spec(ctx.pod).get("enableServiceLinks")
    spec = svc.get("spec") or {}
    ip = spec.get("clusterIP")
    ports = spec.get("ports") or [{}]
    if links is False:
        return Measured(None, f"Service vllm exists but pod {ctx.pod_name} sets "
                              "spec.enableServiceLinks: false, so no VLLM_* variables are "
                              "injected")
    # The kubelet injects variables only for a Service with a cluster IP (not headless,
    # not ExternalName: pkg/kubelet/kubelet_pods.go getServiceEnvVarMap, IsServiceIPSet).
    if ip == "None":
        return Measured(None, "Service vllm is headless (clusterIP: None): Kubernetes "
                              "injects no variables for it")
    if spec.get("type") == "ExternalName":
        return Measured(None, "Service vllm is of type ExternalName: Kubernetes injects no "
                              "variables for it")
    if not ip:
        if ctx.snapshot.static is None:
            return Measured(None, "Service vllm has no cluster IP: Kubernetes injects no "
                                  "variables for it")
        # A manifest's Service gets its address when it is created.
        ip = "CLUSTER-IP"
    explicit = ctx.env.get("VLLM_PORT")
    if explicit is not None:
        return Measured(None, f"container {ctx.name} sets VLLM_PORT itself, which wins over "
                              "the Service variable")
    proto = str(ports[0].get("protocol", "TCP")).lower()
    value = f"{proto}://{ip}:{ports[0].get('port')}"
    where = f"clusterIP {ip}" if ip != "CLUSTER-IP" else "a cluster IP once created"
    return Measured(value, f"Service vllm ({where}, port {ports[0].get('port')}) in "
                           f"namespace {ctx.namespace or '(the one applied to)'} and pod "
                           "spec.enableServiceLinks "
                           f"{'unset (default true)' if links is None else links}: the kubelet "
                           f"sets VLLM_PORT={value} in the container",
                    (Location(svc, ("metadata", "name")),))



@fact("pod_state", unit="text", scope="pod",
      doc="a kubectl-like one-word state of the pod: CrashLoopBackOff, OOMKilled, Pending, "
          "Running, Running (not ready), ...")
def pod_state(ctx: PodContext) -> Measured:
    ctx.runtime("the pod's status")
    state = workload.pod_state(ctx.pod)
    return Measured(state, f"pod {ctx.pod_name} is {state}")


@fact("container_state", unit="text", scope="container",
      doc="the container's current state: running, waiting or terminated")
def container_state(ctx: ContainerContext) -> Measured:
    ctx.runtime("the container's status")
    state = ctx.status.get("state") or {}
    for name in ("running", "waiting", "terminated"):
        if isinstance(state.get(name), dict):
            reason = state[name].get("reason")
            return Measured(name, f"container {ctx.name} is {name}"
                                  + (f" ({reason})" if reason else ""))
    return Measured(None, f"container {ctx.name} has no state reported")


@fact("metrics_models", unit="list", scope="pod",
      doc="the model names vLLM's /metrics reports (model_name label)")
def metrics_models(ctx: PodContext) -> Measured:
    failed = ctx.metrics_failure()
    if failed:
        raise Unmeasurable(failed)
    view = ctx.metrics
    models = view.models if view is not None else []
    return Measured(models, "models on /metrics: " + (", ".join(models) or "none"))
