"""Which pods and containers are triaged: decided here, and only here.

Every collector (live cluster, bundle, fixture directory) and the classifier
ask this module, so a pod is either in the report everywhere or nowhere.

A container is a vLLM server when its image, command or args name vLLM
(``vllm/vllm-openai``, ``rocm/vllm``, a Neuron build ``...-vllm0.5.0-neuron``,
``vllm serve``, ``vllm.entrypoints.openai.api_server``,
KServe's Hugging Face runtime unless told to use another backend), or when
its args carry vLLM's own engine flags (a company build or a fork of
``vllm/vllm-openai`` whose entrypoint is ``vllm serve`` and whose args are
only ``--model ... --gpu-memory-utilization 0.9``). A pod is a vLLM server
when its labels say so (``app.kubernetes.io/name: vllm``; the release or group
labels ``app.kubernetes.io/instance``, ``part-of`` and ``app`` only with a request
for an accelerator (GPU, TPU, Neuron), since a Helm release named vllm labels its
redis too; KServe's LLMInferenceService workload, llm-d's roles, the production-stack's engine,
a LeaderWorkerSet named for vLLM), or when the first lines of a container's
log are vLLM's own (``is_vllm_log_head``; the collector reads them, see
``worth_reading_head``). With a user's label selector (``-l``), every pod it
selects is triaged, and a pod with no container that looks like vLLM is
triaged whole.

A pod left out that is crash-looping is named (``passed_over``): a namespace
whose only failing pods were not recognised must never read as an all-clear.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

import regex

from triage.kube.workload import (
    accelerator_request,
    command_line,
    container_status,
    containers,
    init_containers,
    init_failed,
    is_sidecar,
)
from triage.snapshot import Obj, meta
from triage.speed import lazyregex
from triage.vllm import images, wordings

_VLLM_COMMAND = lazyregex.compile(
    r"(?i)(^|[\s/])vllm\s+serve\b|vllm\.entrypoints\.openai\.api_server|"
    r"vllm\.entrypoints\.api_server|(^|\s)vllm$|huggingfaceserver.*--backend[= ]vllm"
)
# KServe's Hugging Face runtime serves with vLLM unless told otherwise.
_KSERVE_HF_IMAGE = lazyregex.compile(r"(?i)(^|/)huggingfaceserver(:|@|$)")
_KSERVE_NOT_VLLM = lazyregex.compile(r"--backend[= ](?:huggingface|hf)\b")
# Routers and gateways in front of vLLM carry its name but serve no model; nor
# does vllm-triage itself (its watch runs in the cluster, image vllm-triage).
_NOT_A_SERVER = lazyregex.compile(r"(?i)router|gateway|proxy|exporter|triage")
# Containers next to the model server in its pod (a mesh proxy, llm-d's routing
# sidecar, a log shipper).
_SIDECAR = lazyregex.compile(r"(?i)router|gateway|proxy|exporter|sidecar|fluent|shipper|agent\b")

# Engine flags only vLLM (and its forks) take: one of them in a container's args
# makes it a vLLM server whatever its image is called. Flags other servers share
# (--model, --port, --tensor-parallel-size, --served-model-name, --kv-cache-dtype)
# are not enough on their own.
VLLM_FLAGS = frozenset({
    "--gpu-memory-utilization", "--max-model-len", "--max-num-seqs",
    "--max-num-batched-tokens", "--enforce-eager", "--enable-prefix-caching",
    "--no-enable-prefix-caching", "--enable-chunked-prefill", "--no-enable-chunked-prefill",
    "--swap-space", "--distributed-executor-backend", "--num-gpu-blocks-override",
    "--speculative-config", "--limit-mm-per-prompt", "--max-num-partial-prefills",
    "--disable-log-requests", "--enable-log-requests", "--disable-log-stats",
    "--guided-decoding-backend", "--kv-transfer-config", "--compilation-config",
    "--max-seq-len-to-capture",
})

# Labels whose value names what the pod runs; "vllm" as a word in it selects the pod.
_NAMING_LABELS = (
    "app.kubernetes.io/name", "app.kubernetes.io/component", "component",
    "llm-d.ai/engine-type", "serving.kserve.io/servingruntime",
    "leaderworkerset.sigs.k8s.io/name",
)
# Labels that name a group rather than the program: the Helm release
# (app.kubernetes.io/instance), the application it belongs to (part-of), and the loose
# `app`. A release named "vllm" labels its redis and open-webui pods too, so these
# select a pod only when it asks for a GPU; a vLLM pod without one is still found by
# its log's first lines (it fails, so its head is read).
_GROUP_LABELS = ("app.kubernetes.io/instance", "app.kubernetes.io/part-of", "app")
_NAMES_VLLM = lazyregex.compile(r"(?i)(?:^|[-_./])vllm(?:$|[-_./])")
# ... unless the value says it is what sits around a server (a router, a load generator,
# this tool's own watch).
_NOT_A_SERVER_LABEL = lazyregex.compile(
    r"(?i)router|gateway|proxy|exporter|bench|loadgen|client|triage")
# Labels that mark a model server of a stack whose servers are vLLM.
_SERVER_LABELS: tuple[tuple[str, regex.Pattern[str]], ...] = (
    # KServe's LLMInferenceService runs vLLM (app.kubernetes.io/component
    # llminferenceservice-workload, -workload-prefill, -workload-worker).
    ("app.kubernetes.io/component", lazyregex.compile(r"^llminferenceservice-workload")),
    # llm-d's model servers (llm-d.ai/role: prefill, decode, both).
    ("llm-d.ai/role", lazyregex.compile(r"^(?:prefill|decode|both|prefill-decode)$")),
    ("llm-d.ai/inferenceServing", lazyregex.compile(r"^true$")),
    ("llm-d.ai/inference-serving", lazyregex.compile(r"^true$")),
)
# The production-stack Helm chart labels each engine Deployment's pods with
# the model's name and the release (helm/templates/deployment-vllm-multi.yaml).
_PRODUCTION_STACK = ("model", "helm-release-name")

# The first lines vLLM prints, in every version (patterns/wordings.yaml; shared reference
# sections 0 and 3); argparse's usage line of `vllm` counts too: a pod that dies of its own
# flags.
_VLLM_HEAD = wordings.either("vllm_api_server_version", "vllm_platform_detected",
                             "vllm_engine_init", "vllm_cli_usage", "vllm_cli_error")
# ... and the names vLLM gives its processes in front of their lines (its log format's
# structure, not a message).
_VLLM_PROCESS = lazyregex.compile(
    r"\(APIServer pid=\d+\)|\((?:EngineCore|VllmWorker|VllmWorkerProcess|Worker_TP)\w*"
    r"(?:[ \t]+(?:rank=\d+|TP\d+(?:[_ \t]EP\d+)?))?[ \t]+pid=\d+")
LOG_HEAD_BYTES = 4096  # of a log read to recognise vLLM's first lines
MAX_HEAD_READS = 32  # pods whose log heads a scan reads, at most
MAX_OTHER_PODS = 256  # unselected pods a scan keeps to read heads from and name if failing


# What selection reads of a pod (here and in triage/workload.py's helpers it calls): a
# listed pod is normalized only this far before it is selected, and whole only once it is
# (or is kept to read its log's head); the rest of a 7 KB pod is most of the work.
_VIEW_METADATA = ("name", "namespace", "labels")
_VIEW_CONTAINER = ("name", "image", "command", "args", "resources", "restartPolicy")
_VIEW_STATUS = ("containerStatuses", "initContainerStatuses")


def view(pod: object) -> object:
    """The part of a listed pod (as read, before normalizing) that deciding whether it
    is triaged (``triaged_containers``, ``worth_reading_head``) reads; what is not a
    mapping is kept as it is, for the normalizer to drop as it would in the whole pod."""
    if not isinstance(pod, dict):
        return pod
    out: dict[str, object] = {}
    for part, keys in (("metadata", _VIEW_METADATA), ("status", _VIEW_STATUS)):
        value = pod.get(part)
        if part in pod:
            out[part] = {k: value[k] for k in keys if k in value} \
                if isinstance(value, dict) else value
    if "spec" in pod:
        spec = pod["spec"]
        if isinstance(spec, dict):
            out["spec"] = {k: [{f: c[f] for f in _VIEW_CONTAINER if f in c}
                               if isinstance(c, dict) else c for c in spec[k]]
                           if isinstance(spec[k], list) else spec[k]
                           for k in ("containers", "initContainers") if k in spec}
        else:
            out["spec"] = spec
    return out


def is_vllm_container(container: Obj) -> bool:
    image = str(container.get("image") or "")
    line = command_line(container)
    joined = " ".join(line)
    if _KSERVE_HF_IMAGE.search(image):
        return not _KSERVE_NOT_VLLM.search(joined)
    # vLLM anywhere in the image's name or tag: vllm/vllm-openai, rocm/vllm, vllm/vllm-tpu,
    # a Neuron build named ...-vllm0.5.0-neuron (triage.vllm.images).
    if images.carries_vllm(image) and not _NOT_A_SERVER.search(image.rsplit("/", 1)[-1]):
        return True
    if _VLLM_COMMAND.search(joined):
        return True
    return bool(vllm_flags(line)) and not _NOT_A_SERVER.search(image.rsplit("/", 1)[-1])


def why_not_vllm(container: Obj) -> str:
    """Why ``is_vllm_container`` says no, in the container's own terms: its image names
    vLLM but serves no model (a router, a gateway), KServe's Hugging Face server told to
    use another backend, or neither its image nor its command and args name vLLM."""
    image = str(container.get("image") or "")
    name = str(container.get("name") or "?")
    joined = " ".join(command_line(container))
    if _KSERVE_HF_IMAGE.search(image) and _KSERVE_NOT_VLLM.search(joined):
        return f"container {name} runs KServe's Hugging Face server with a backend other " \
               "than vLLM (--backend)"
    last = image.rsplit("/", 1)[-1]
    if (images.carries_vllm(image) or vllm_flags(command_line(container))) \
            and _NOT_A_SERVER.search(last):
        return f"container {name} image {image} names vLLM but is what sits in front of " \
               "or beside a server (a router, gateway, proxy or exporter), not a server"
    return f"container {name}: neither image {image or '(none)'} nor its command and " \
           "args name vLLM or vLLM's engine flags"


def vllm_flags(line: Iterable[str]) -> list[str]:
    """vLLM's own engine flags in a command line (``--gpu_memory_utilization=0.9`` counts)."""
    found = []
    for word in line:
        flag = word.split("=", 1)[0]
        if flag.startswith("--"):
            flag = "--" + flag[2:].replace("_", "-")
            if flag in VLLM_FLAGS and flag not in found:
                found.append(flag)
    return found


def labels_name_vllm(pod: Obj) -> str | None:
    """The label that says the pod is a vLLM server (``key=value``), None if none does."""
    labels = meta(pod).get("labels")
    if not isinstance(labels, dict):
        return None
    gpu = any(_devices(c) for c in containers(pod))
    for key in _NAMING_LABELS + (_GROUP_LABELS if gpu else ()):
        value = str(labels.get(key) or "")  # "" for most pods: no search
        if value and _NAMES_VLLM.search(value) and not _NOT_A_SERVER_LABEL.search(value):
            return f"{key}={value}" + ("" if key in _NAMING_LABELS else
                                       " (and the pod asks for an accelerator)")
    for key, rx in _SERVER_LABELS:
        value = str(labels.get(key) or "")
        if value and rx.search(value):
            return f"{key}={value}"
    if all(labels.get(k) for k in _PRODUCTION_STACK):
        return f"model={labels['model']}, helm-release-name={labels['helm-release-name']}"
    return None


def is_vllm_log_head(text: str) -> bool:
    """Whether the first lines of a log are vLLM's own."""
    head = text[:LOG_HEAD_BYTES]
    return _VLLM_PROCESS.search(head) is not None or _VLLM_HEAD.search(head) is not None


def _devices(container: Obj) -> int:
    """Accelerator devices the container asks for: GPUs, TPU chips, Neuron devices (a
    vLLM server on TPU or Neuron is recognised as one on GPUs is)."""
    return accelerator_request(container)[0]


def server_containers(pod: Obj) -> list[Obj]:
    """The containers of a pod that may serve a model: not a known sidecar; those that
    ask for a GPU (or another accelerator) first, when any does."""
    serving = [c for c in containers(pod)
               if not _SIDECAR.search(str(c.get("name") or ""))
               and not _SIDECAR.search(str(c.get("image") or "").rsplit("/", 1)[-1])]
    with_gpu = [c for c in serving if _devices(c)]
    return with_gpu or serving[:1]


def triaged_containers(pod: Obj, selector: str | None,
                       by_log: Collection[tuple[str, str, str]] = ()) -> list[Obj]:
    """The containers to triage: the vLLM ones (a native sidecar too: an init container
    with restartPolicy Always), else the server container of a pod whose labels name
    vLLM, else those whose log's first lines are vLLM's (``by_log``: namespace, pod,
    container), else all of a pod the user selected; and of such a pod, every init
    container that failed (a model download OOMKilled keeps vLLM from starting),
    triaged like any container."""
    serving = containers(pod) + [c for c in init_containers(pod) if is_sidecar(c)]
    chosen = [c for c in serving if is_vllm_container(c)]
    if not chosen and labels_name_vllm(pod):
        chosen = server_containers(pod)
    if not chosen and by_log:
        ns, name = str(meta(pod).get("namespace") or ""), str(meta(pod).get("name") or "")
        chosen = [c for c in serving if (ns, name, str(c.get("name"))) in by_log]
    if not chosen and selector:
        chosen = serving
    if not chosen:
        return []
    failed = [c for c in init_containers(pod) if c not in chosen and init_failed(pod, c)]
    return failed + chosen


def select_pods(pods: list[Obj], selector: str | None,
                by_log: Collection[tuple[str, str, str]] = ()) -> list[Obj]:
    """The pods of a listing that are triaged (the listing already applied ``selector``)."""
    return [p for p in pods if isinstance(p, dict) and triaged_containers(p, selector, by_log)]


def _failing(pod: Obj) -> list[str]:
    """What is failing in a pod's containers, described (empty when nothing is)."""
    out = []
    for c in containers(pod):
        status = container_status(pod, str(c.get("name")))
        state = status.get("state") or {}
        waiting = (state.get("waiting") or {}).get("reason")
        last = (status.get("lastState") or {}).get("terminated") or {}
        ended = (state.get("terminated") or {})
        restarts = int(status.get("restartCount") or 0)
        bad_end = next((t for t in (ended, last) if t and t.get("reason") not in
                        (None, "Completed")), None)
        if waiting in ("CrashLoopBackOff", "RunContainerError", "CreateContainerError") or \
                (restarts and bad_end):
            what = waiting or "restarting"
            if bad_end:
                what += f", last exit {bad_end.get('exitCode')} ({bad_end.get('reason')})"
            out.append(f"container {c.get('name')}: {what}, {restarts} restart(s), image "
                       f"{c.get('image')}")
    return out


def worth_reading_head(pod: Obj) -> list[str]:
    """The containers of a pod not selected whose log's first lines are worth reading to
    recognise vLLM: the pod asks for a GPU (or another accelerator) or something in it is
    failing."""
    if not isinstance(pod, dict):
        return []
    gpu = any(_devices(c) for c in containers(pod))
    if not gpu and not _failing(pod):
        return []
    return [str(c.get("name")) for c in server_containers(pod) or containers(pod)]


def passed_over(pods: list[Obj], selected: list[Obj]) -> list[str]:
    """The crash-looping pods of a listing that were not selected, each described."""
    chosen = {id(p) for p in selected}
    out = []
    for pod in pods:
        if not isinstance(pod, dict) or id(pod) in chosen:
            continue
        failing = _failing(pod)
        if failing:
            out.append(f"{meta(pod).get('namespace')}/{meta(pod).get('name')} "
                       f"({'; '.join(failing)})")
    return out
