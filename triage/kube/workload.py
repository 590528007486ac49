"""What the Kubernetes objects say about a vLLM workload.

Pure functions over API dicts: what a container requests, how its probes
and volumes are set, who owns a pod and what the owner's rollout looks like.
Facts are computed with them; which pods are triaged is
``triage.vllm.selection``'s business.
"""

from __future__ import annotations

from typing import Any

from triage.snapshot import Obj, Snapshot, dig, meta

GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu", "gpu.intel.com/i915", "habana.ai/gaudi")
# Every device an accelerator's device plugin hands out, GPUs first: Google's TPU chips
# (GKE), AWS Neuron devices and cores (the Neuron device plugin's three resource names).
ACCELERATOR_RESOURCES = (*GPU_RESOURCES, "google.com/tpu", "aws.amazon.com/neuron",
                         "aws.amazon.com/neurondevice", "aws.amazon.com/neuroncore")

KSERVE_ISVC_LABEL = "serving.kserve.io/inferenceservice"


def pod_spec(pod: Obj) -> Obj:
    spec = pod.get("spec")
    return spec if isinstance(spec, dict) else {}


def containers(pod: Obj) -> list[Obj]:
    return [c for c in pod_spec(pod).get("containers") or [] if isinstance(c, dict)]


def init_containers(pod: Obj) -> list[Obj]:
    return [c for c in pod_spec(pod).get("initContainers") or [] if isinstance(c, dict)]


def is_sidecar(container: Obj) -> bool:
    """A native sidecar: an init container with restartPolicy Always (Kubernetes 1.29+),
    started before the containers and running beside them."""
    return container.get("restartPolicy") == "Always"


def container_kind(pod: Obj, name: str) -> str:
    """"container", "init container" or "sidecar container" (a native sidecar)."""
    init = next((c for c in init_containers(pod) if c.get("name") == name), None)
    if init is None:
        return "container"
    return "sidecar container" if is_sidecar(init) else "init container"


def _statuses(pod: Obj) -> list[Obj]:
    status = pod.get("status") or {}
    return [cs for key in ("containerStatuses", "initContainerStatuses")
            for cs in status.get(key) or [] if isinstance(cs, dict)]


def command_line(container: Obj) -> list[str]:
    return [str(x) for x in (container.get("command") or []) + (container.get("args") or [])]


def container_statuses(pod: Obj) -> list[Obj]:
    """Every container status the API reports of a pod (containers, init containers)."""
    return _statuses(pod)


def container_status(pod: Obj, name: str) -> Obj:
    """The status of a container, init container or native sidecar; {} when the API
    reports none (a pod just created, or a status the kubelet has not written)."""
    return next((cs for cs in _statuses(pod) if cs.get("name") == name), {})


def restarts(pod: Obj) -> int:
    return sum(int(cs.get("restartCount") or 0) for cs in _statuses(pod))


def init_failed(pod: Obj, container: Obj) -> bool:
    """An init container (not a sidecar) that failed: it exited non-zero, now or before,
    or waits to be restarted (Init:CrashLoopBackOff, Init:Error, Init:OOMKilled)."""
    if is_sidecar(container):
        return False
    cs = container_status(pod, str(container.get("name")))
    state = cs.get("state") or {}
    for term in (state.get("terminated"), (cs.get("lastState") or {}).get("terminated")):
        if isinstance(term, dict) and (term.get("exitCode") not in (0, None)
                                       or term.get("reason") not in (None, "Completed")):
            return True
    waiting = state.get("waiting") or {}
    return bool(cs.get("restartCount")) or waiting.get("reason") in (
        "CrashLoopBackOff", "Error", "CreateContainerError", "RunContainerError")


def gpu_request(container: Obj) -> int:
    """GPUs the container asks for (limits win, as the device plugin reads them)."""
    return accelerator_request(container, GPU_RESOURCES)[0]


def accelerator_request(container: Obj, names: tuple[str, ...] = ACCELERATOR_RESOURCES
                        ) -> tuple[int, str | None]:
    """Devices the container asks for of the first of ``names`` it names (limits win, as
    the device plugin reads them), and that resource's name."""
    res = container.get("resources") or {}
    for section in ("limits", "requests"):
        values = res.get(section) or {}
        if not isinstance(values, dict):
            continue
        for name in names:
            if name in values:
                try:
                    return int(str(values[name])), name
                except ValueError:
                    return 0, name
    return 0, None


def memory_limit(container: Obj) -> str | None:
    value = dig(container, "resources.limits.memory")
    return str(value) if value is not None else None


def shm_volume(pod: Obj, container: Obj) -> Obj | None:
    """The volume mounted at /dev/shm in this container, if any."""
    for mount in container.get("volumeMounts") or []:
        if str(mount.get("mountPath", "")).rstrip("/") == "/dev/shm":
            for vol in pod_spec(pod).get("volumes") or []:
                if vol.get("name") == mount.get("name"):
                    return dict(vol)
    return None


def shm_is_memory_backed(pod: Obj, container: Obj) -> bool:
    if pod_spec(pod).get("hostIPC"):
        return True
    vol = shm_volume(pod, container)
    return bool(vol and dig(vol, "emptyDir.medium") == "Memory")


_OWNER_PLURAL = {"ReplicaSet": "replicasets", "Deployment": "deployments",
                 "StatefulSet": "statefulsets", "LeaderWorkerSet": "leaderworkersets",
                 "LLMInferenceService": "llminferenceservices"}
LWS_WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"


def leader_worker_set(snapshot: Snapshot, pod: Obj) -> tuple[Obj, tuple[str, ...]] | None:
    """The LeaderWorkerSet that owns the pod (Pod -> StatefulSet -> LeaderWorkerSet), with
    where its pod's template is: the leader's (worker index 0, when the LWS has a
    leaderTemplate) or the workers'."""
    chain = owner_chain(snapshot, pod)
    top = chain[-1] if chain else None
    if top is None or top.get("kind") != "LeaderWorkerSet":
        return None
    lwt = dig(top, "spec.leaderWorkerTemplate") or {}
    leader = str((meta(pod).get("labels") or {}).get(LWS_WORKER_INDEX_LABEL)) == "0"
    if leader and isinstance(lwt.get("leaderTemplate"), dict):
        return top, ("spec", "leaderWorkerTemplate", "leaderTemplate", "spec")
    return top, ("spec", "leaderWorkerTemplate", "workerTemplate", "spec")


def owner_chain(snapshot: Snapshot, pod: Obj) -> list[Obj]:
    """Pod -> ReplicaSet -> Deployment (or StatefulSet), as far as was read.

    List items come without ``kind``; the owners returned carry the kind and
    apiVersion from the owner reference, so callers can name them.
    """
    chain: list[Obj] = []
    ns = meta(pod).get("namespace", "")
    current = pod
    for _ in range(4):  # owners never nest deeper than this for workloads
        ref = controller_ref(current)
        plural = _OWNER_PLURAL.get(str(ref.get("kind"))) if ref else None
        if ref is None or plural is None:
            break
        owner = snapshot.find(plural, ns, str(ref.get("name")))
        if owner is None:
            break
        current = {"apiVersion": ref.get("apiVersion"), "kind": ref.get("kind"), **owner}
        chain.append(current)
    return chain


def inference_service_name(pod: Obj) -> str | None:
    labels = meta(pod).get("labels") or {}
    name = labels.get(KSERVE_ISVC_LABEL)
    return str(name) if name else None


def owner_label(snapshot: Snapshot, pod: Obj) -> str | None:
    """A short "Kind/name" of the workload a person thinks of as the owner."""
    isvc = inference_service_name(pod)
    if isvc:
        return f"InferenceService/{isvc}"
    chain = owner_chain(snapshot, pod)
    if chain:
        top = chain[-1]
        return f"{top.get('kind')}/{meta(top).get('name')}"
    refs = meta(pod).get("ownerReferences") or []
    if refs:
        return f"{refs[0].get('kind')}/{refs[0].get('name')}"
    return None


def metrics_port(container: Obj) -> int:
    """The port vLLM serves /metrics on: --port, a named http port, or 8000."""
    args = command_line(container)
    for i, arg in enumerate(args):
        if arg == "--port" and i + 1 < len(args) and args[i + 1].isdigit():
            return int(args[i + 1])
        if arg.startswith("--port=") and arg[7:].isdigit():
            return int(arg[7:])
    ports = [p for p in container.get("ports") or [] if isinstance(p, dict)]
    for p in ports:
        if str(p.get("name", "")).lower() in ("http", "http1", "metrics", "h2c"):
            return int(p.get("containerPort", 8000))
    if ports:
        return int(ports[0].get("containerPort", 8000))
    return 8000


# --- Workload-level lookups used by facts (owners, autoscalers, rollouts) ---

REVISION_ANNOTATION = "deployment.kubernetes.io/revision"


def controller_ref(obj: Obj) -> Obj | None:
    refs = [r for r in meta(obj).get("ownerReferences") or [] if isinstance(r, dict)]
    return next((r for r in refs if r.get("controller")), refs[0] if refs else None)


def workload_owner(snapshot: Snapshot, pod: Obj) -> tuple[str, Obj] | None:
    """The Deployment or StatefulSet that runs this pod, as (kind, object)."""
    for owner in reversed(owner_chain(snapshot, pod)):
        if owner.get("kind") in ("Deployment", "StatefulSet"):
            return str(owner["kind"]), owner
    return None


# snapshot id -> (its pod list, that list's length, running pods per (namespace, ReplicaSet)).
# Kept for the last few snapshots only; the list identity check makes a reused id harmless.
_RUNNING_BY_RS: dict[int, tuple[list[Obj], int,
                              dict[tuple[str, str], list[tuple[int, str]]]]] = {}


def running_pods_by_replicaset(snapshot: Snapshot
                               ) -> dict[tuple[str, str], list[tuple[int, str]]]:
    """(position in the pod list, name) of the Running pods of each ReplicaSet, built
    once per snapshot: a rollout check per pod then costs the number of ReplicaSets,
    not the number of pods."""
    pods = snapshot.pods()
    cached = _RUNNING_BY_RS.get(id(snapshot))
    if cached is None or cached[0] is not pods or cached[1] != len(pods):
        index: dict[tuple[str, str], list[tuple[int, str]]] = {}
        for position, pod in enumerate(pods):
            ref = controller_ref(pod)
            if ref is None or ref.get("kind") != "ReplicaSet":
                continue
            if (pod.get("status") or {}).get("phase") == "Running":
                key = (str(meta(pod).get("namespace", "")), str(ref.get("name")))
                index.setdefault(key, []).append((position, str(meta(pod).get("name"))))
        while len(_RUNNING_BY_RS) >= 8:
            _RUNNING_BY_RS.pop(next(iter(_RUNNING_BY_RS)))
        cached = (pods, len(pods), index)
        _RUNNING_BY_RS[id(snapshot)] = cached
    return cached[2]


def pod_replicaset(snapshot: Snapshot, pod: Obj) -> Obj | None:
    ref = controller_ref(pod)
    if ref is None or ref.get("kind") != "ReplicaSet":
        return None
    return snapshot.find("replicasets", str(meta(pod).get("namespace", "")),
                         str(ref.get("name")))


def revision(obj: Obj) -> int:
    try:
        return int(str((meta(obj).get("annotations") or {}).get(REVISION_ANNOTATION, "0")))
    except ValueError:
        return 0


_RS_BY_DEPLOYMENT: dict[int, tuple[list[Obj], int, dict[tuple[Any, Any], list[Obj]]]] = {}


def replicasets_of(snapshot: Snapshot, deployment: Obj) -> list[Obj]:
    """The Deployment's ReplicaSets, newest revision first (grouped once per snapshot)."""
    sets = snapshot.items("replicasets")
    cached = _RS_BY_DEPLOYMENT.get(id(snapshot))
    if cached is None or cached[0] is not sets or cached[1] != len(sets):
        groups: dict[tuple[Any, Any], list[Obj]] = {}
        for rs in sets:
            ref = controller_ref(rs)
            if ref is not None and ref.get("kind") == "Deployment":
                groups.setdefault((meta(rs).get("namespace"), ref.get("name")), []).append(rs)
        for members in groups.values():
            members.sort(key=revision, reverse=True)
        while len(_RS_BY_DEPLOYMENT) >= 8:
            _RS_BY_DEPLOYMENT.pop(next(iter(_RS_BY_DEPLOYMENT)))
        cached = (sets, len(sets), groups)
        _RS_BY_DEPLOYMENT[id(snapshot)] = cached
    key = (meta(deployment).get("namespace"), meta(deployment).get("name"))
    return list(cached[2].get(key, []))


def autoscalers_for(snapshot: Snapshot, kind: str, name: str, namespace: str) -> list[Obj]:
    """HorizontalPodAutoscalers whose scaleTargetRef is this workload."""
    out = []
    for hpa in snapshot.items("horizontalpodautoscalers"):
        ref = (hpa.get("spec") or {}).get("scaleTargetRef") or {}
        if ((meta(hpa).get("namespace") or "") == namespace and ref.get("kind") == kind
                and ref.get("name") == name):
            out.append(hpa)
    return out


def scaled_objects_for(snapshot: Snapshot, kind: str, name: str, namespace: str) -> list[Obj]:
    """KEDA ScaledObjects whose scaleTargetRef is this workload (kind Deployment when the
    reference names none, as KEDA defaults it)."""
    out = []
    for so in snapshot.items("scaledobjects"):
        ref = (so.get("spec") or {}).get("scaleTargetRef") or {}
        if ((meta(so).get("namespace") or "") == namespace and ref.get("name") == name
                and (ref.get("kind") or "Deployment") == kind):
            out.append(so)
    return out


def selector_matches(selector: Any, labels: dict[str, Any]) -> bool:
    """Whether labels satisfy a LabelSelector (matchLabels and matchExpressions) or a plain
    label map (a Service's selector, an InferencePool v1alpha2's); an empty selector matches
    nothing here (no object of interest selects every pod)."""
    if not isinstance(selector, dict) or not selector:
        return False
    if "matchLabels" in selector or "matchExpressions" in selector:
        wanted = selector.get("matchLabels") or {}
        expressions = selector.get("matchExpressions") or []
    else:
        wanted, expressions = selector, []
    if not isinstance(wanted, dict) or not isinstance(expressions, list):
        return False
    if not wanted and not expressions:
        return False
    if any(str(labels.get(k)) != str(v) or k not in labels for k, v in wanted.items()):
        return False
    for expr in expressions:
        if not isinstance(expr, dict):
            return False
        key, op = str(expr.get("key")), str(expr.get("operator"))
        values = [str(v) for v in expr.get("values") or []]
        has = key in labels
        if (op == "In" and (not has or str(labels[key]) not in values)) or \
                (op == "NotIn" and has and str(labels[key]) in values) or \
                (op == "Exists" and not has) or (op == "DoesNotExist" and has):
            return False
    return True


def endpoint_picker_service(pool: Obj) -> str | None:
    """The name of the Service of an InferencePool's endpoint picker (EPP), in the pool's
    namespace: v1 ``spec.endpointPickerRef``, v1alpha2 ``spec.extensionRef`` (kind Service
    unless it names another, as the CRDs default it)."""
    spec = pool.get("spec") or {}
    ref = spec.get("endpointPickerRef") or spec.get("extensionRef") or {}
    if not isinstance(ref, dict) or (ref.get("kind") or "Service") != "Service" \
            or (ref.get("group") or "") != "":
        return None
    return str(ref["name"]) if ref.get("name") else None


# The endpoint picker pods of one InferencePool whose logs are read (one is active; a
# second may stand by for leader election).
MAX_PICKER_PODS = 2


def picker_pods_to_read(pods: list[Obj]) -> list[Obj]:
    """Of an endpoint picker's pods, those whose logs are read: the running ones first, at
    most ``MAX_PICKER_PODS``."""
    running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
    return (running or pods)[:MAX_PICKER_PODS]


def endpoint_picker_pods(pool: Obj, services: list[Obj], pods: list[Obj]) -> list[Obj]:
    """The pods of the pool's endpoint picker: those its Service selects, in its namespace."""
    name, namespace = endpoint_picker_service(pool), meta(pool).get("namespace") or ""
    service = next((s for s in services if meta(s).get("name") == name
                    and (meta(s).get("namespace") or "") == namespace), None) if name else None
    if service is None:
        return []
    selector = (service.get("spec") or {}).get("selector")
    return [p for p in pods if (meta(p).get("namespace") or "") == namespace
            and selector_matches(selector, meta(p).get("labels") or {})]


def pod_ready(pod: Obj) -> bool:
    """The pod's Ready condition is True (what a Service's endpoints and a gateway's pool
    count)."""
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == "Ready":
            return str(cond.get("status")) == "True"
    return False


def llm_inference_service(snapshot: Snapshot, pod: Obj) -> Obj | None:
    """The KServe LLMInferenceService that owns the pod's Deployment, as read."""
    chain = owner_chain(snapshot, pod)
    return next((o for o in chain if o.get("kind") == "LLMInferenceService"), None)


def llm_template_path(pod: Obj) -> tuple[str, ...]:
    """Where an LLMInferenceService holds the pod's template: spec.prefill.template for its
    prefill workload (app.kubernetes.io/component llminferenceservice-workload-prefill),
    else spec.template."""
    component = str((meta(pod).get("labels") or {}).get("app.kubernetes.io/component") or "")
    if component.endswith("-prefill"):
        return ("spec", "prefill", "template")
    return ("spec", "template")


def inference_service(snapshot: Snapshot, pod: Obj) -> Obj | None:
    name = inference_service_name(pod)
    if not name:
        return None
    return snapshot.find("inferenceservices", str(meta(pod).get("namespace", "")), name)


def template_containers(obj: Obj) -> list[Obj]:
    """Containers of a Deployment / ReplicaSet / StatefulSet pod template."""
    spec = dig(obj, "spec.template.spec") or {}
    return [c for c in spec.get("containers") or [] if isinstance(c, dict)]


def split_image(image: str) -> tuple[str, str | None, str | None]:
    """``repo[:tag][@digest]`` -> (repo, tag, digest); a registry port is not a tag."""
    rest, _, digest = image.partition("@")
    slash = rest.rfind("/")
    colon = rest.rfind(":")
    if colon > slash:
        return rest[:colon], rest[colon + 1:], digest or None
    return rest, None, digest or None


def scaled_count(value: object, replicas: int, round_up: bool) -> int:
    """An int-or-percent rollout field (maxSurge "25%") as a pod count, as the controller does."""
    text = str(value).strip()
    if text.endswith("%"):
        try:
            pct = float(text[:-1])
        except ValueError:
            return 0
        exact = pct * replicas / 100
        whole = int(exact)
        return whole + 1 if round_up and exact > whole else whole
    try:
        return int(text)
    except ValueError:
        return 0


def volume_for_path(pod: Obj, container: Obj, path: str) -> tuple[Obj, Obj] | None:
    """The (volumeMount, volume) holding ``path`` in this container: the longest mountPath."""
    best: tuple[Obj, Obj] | None = None
    best_len = -1
    volumes = {v.get("name"): v for v in pod_spec(pod).get("volumes") or [] if isinstance(v, dict)}
    for mount in container.get("volumeMounts") or []:
        mp = str(mount.get("mountPath", "")).rstrip("/") or "/"
        if (path == mp or path.startswith(mp + "/") or mp == "/") and len(mp) > best_len:
            vol = volumes.get(mount.get("name"))
            if vol is not None:
                best, best_len = (dict(mount), dict(vol)), len(mp)
    return best


def probe_budget(probe: Obj) -> int:
    """Seconds a probe lets a container go unanswered before it acts, with K8s defaults."""
    return int(probe.get("initialDelaySeconds", 0)) + int(probe.get("periodSeconds", 10)) * int(
        probe.get("failureThreshold", 3))


def describe_probe(probe: Obj) -> str:
    """A probe's timing fields as set, with Kubernetes' defaults where unset."""
    return (f"initialDelaySeconds {probe.get('initialDelaySeconds', 0)}, periodSeconds "
            f"{probe.get('periodSeconds', 10)}, timeoutSeconds {probe.get('timeoutSeconds', 1)}, "
            f"failureThreshold {probe.get('failureThreshold', 3)}")


def pod_state(pod: Obj) -> str:
    """A kubectl-like one-word state: CrashLoopBackOff, OOMKilled, Pending, Running..."""
    status = pod.get("status") or {}
    if meta(pod).get("deletionTimestamp"):
        return "Terminating"
    init = _init_state(pod)
    if init is not None:
        return init
    for cs in status.get("containerStatuses") or []:
        state = cs.get("state") or {}
        if state.get("waiting", {}).get("reason"):
            return str(state["waiting"]["reason"])
        if state.get("terminated", {}).get("reason"):
            return str(state["terminated"]["reason"])
    if status.get("reason"):
        return str(status["reason"])
    phase = str(status.get("phase") or "Unknown")
    if phase == "Running":
        ready = all(cs.get("ready") for cs in status.get("containerStatuses") or [])
        return "Running" if ready else "Running (not ready)"
    return phase


def _init_state(pod: Obj) -> str | None:
    """kubectl's Init:... state while init containers have not all completed."""
    inits = [c for c in init_containers(pod) if not is_sidecar(c)]
    for i, c in enumerate(inits):
        cs = container_status(pod, str(c.get("name")))
        state = cs.get("state") or {}
        term = state.get("terminated") or {}
        if term and term.get("exitCode") == 0:
            continue
        if term:
            return f"Init:{term.get('reason') or 'ExitCode:' + str(term.get('exitCode'))}"
        reason = (state.get("waiting") or {}).get("reason")
        if reason and reason != "PodInitializing":
            return f"Init:{reason}"
        if cs or (pod.get("status") or {}).get("phase") == "Pending":
            return f"Init:{i}/{len(inits)}"
    return None
