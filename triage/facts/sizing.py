"""Facts a fix is computed from: sizes, limits, progress and places, in base units.

They measure and never decide: the margins and rules that turn them into a
``--max-model-len`` or a memory limit live in the patterns' ``fix`` sections.
"""

from __future__ import annotations

import math
from typing import Any

from triage.facts import (
    LOG_QUERIES,
    ContainerContext,
    Measured,
    NodeContext,
    PodContext,
    Unmeasurable,
    fact,
    stream_label,
)
from triage.facts.contexts import OfPod
from triage.facts.kubernetes import quantity_mib
from triage.kube import workload
from triage.logs import LogIndex, LogLine, Query, bars
from triage.snapshot import PREVIOUS, Obj, dig, meta
from triage.vllm import wordings
from triage.vllm.milestones import _stamp

MIB = 2**20
GIB = 2**30


def quantity_bytes(text: Any) -> int | None:
    mib = quantity_mib(str(text)) if text is not None else None
    return None if mib is None else round(mib * MIB)


def _where(ctx: ContainerContext, stream: str, number: int, text: str) -> str:
    return f"{stream_label(stream)} ({ctx.name}) line {number}: {text.strip()[:200]}"


def _last(ctx: ContainerContext, query: Query) -> tuple[str, Any] | None:
    """The last hit of a query, previous log first (where a crash is), then the current."""
    for stream in (PREVIOUS, "current"):
        index = ctx.log(stream)
        if index is None:
            continue
        result = index.result(query)
        if result.count:
            return stream, result.last[-1]
    return None


def _logs_read(ctx: ContainerContext) -> None:
    unread = ctx.logs_unread()
    if unread:
        raise Unmeasurable(unread[0])


# --- KV cache ----------------------------------------------------------------------

# V1 check_enough_kv_cache_memory: "the estimated maximum model length is 94176";
# V0 raise_if_cache_size_invalid: "... that can be stored in KV cache (62320)".
_ESTIMATE = LOG_QUERIES.add(Query(wordings.regex("vllm_max_model_len_estimate")))


@fact("estimated_max_model_len", unit="tokens", scope="container",
      doc="the longest --max-model-len the KV cache holds, as vLLM computed it when it refused "
          "to start (V1 'the estimated maximum model length is N', V0 'can be stored in KV "
          "cache (N)'); None when it did not say")
def estimated_max_model_len(ctx: ContainerContext) -> Measured:
    found = _last(ctx, _ESTIMATE)
    if found is None:
        _logs_read(ctx)
        return Measured(None, "vLLM logged no estimate of the longest model length that fits")
    stream, hit = found
    number = int(str(hit.groups[1] or hit.groups[2]).replace(",", ""))
    where = _where(ctx, stream, hit.line.number, hit.groups[0])
    return Measured(number, f"{number:,} tokens fit ({where})")


_AVAILABLE_KV = LOG_QUERIES.add(Query(wordings.regex("vllm_kv_cache_needed")))


@fact("kv_cache_needed_gib", unit="GiB", scope="container",
      doc="KV cache one request at --max-model-len needs, as vLLM V1 logged when it refused "
          "to start ('N GiB KV cache is needed'); None when it did not say")
def kv_cache_needed_gib(ctx: ContainerContext) -> Measured:
    found = _last(ctx, _AVAILABLE_KV)
    if found is None:
        _logs_read(ctx)
        return Measured(None, "vLLM logged no KV cache need")
    stream, hit = found
    return Measured(float(str(hit.groups[1])), _where(ctx, stream, hit.line.number,
                                                      hit.groups[0]))


@fact("kv_cache_available_gib", unit="GiB", scope="container",
      doc="KV cache memory vLLM had after weights and activations ('Available KV cache "
          "memory: N GiB' or the V1 refusal's 'available KV cache memory (N GiB)')")
def kv_cache_available_gib(ctx: ContainerContext) -> Measured:
    found = _last(ctx, _AVAILABLE_KV)
    if found is not None:
        stream, hit = found
        return Measured(float(str(hit.groups[2])), _where(ctx, stream, hit.line.number,
                                                          hit.groups[0]))
    for stream, rep in ctx.startup.items():
        if rep.kv_cache_memory_gib is not None:
            line = rep.evidence.get("kv_cache_memory_gib")
            return Measured(rep.kv_cache_memory_gib, _where(ctx, stream, line.number,
                                                            line.message) if line else
                            f"{stream_label(stream)}: Available KV cache memory")
    _logs_read(ctx)
    return Measured(None, "vLLM logged no available KV cache memory")


@fact("weights_gib", unit="GiB", scope="container",
      doc="GPU memory the model weights took on each GPU, as vLLM logged ('Model loading "
          "took N GiB')")
def weights_gib(ctx: ContainerContext) -> Measured:
    for stream, rep in ctx.startup.items():
        if rep.weights_gib is not None:
            line = rep.evidence.get("model_load") or rep.evidence.get("model_load_v0")
            return Measured(rep.weights_gib, _where(ctx, stream, line.number, line.message)
                            if line else f"{stream_label(stream)}: Model loading took")
    _logs_read(ctx)
    return Measured(None, "vLLM logged no weights size (it did not finish loading)")


# --- GPU memory at the OOM ------------------------------------------------------------

_TORCH_OOM = LOG_QUERIES.add(Query(wordings.regex("torch_cuda_oom_sizes")))
_UNIT = {"GiB": 1.0, "MiB": 1 / 1024, "KiB": 1 / 1024**2, "B": 1 / 1024**3}


@fact("gpu_total_gib", unit="GiB", scope="container",
      doc="the GPU's memory: PyTorch's 'total capacity' in its CUDA OOM message, else the "
          "node's nvidia.com/gpu.memory label")
def gpu_total_gib(ctx: ContainerContext) -> Measured:
    found = _last(ctx, _TORCH_OOM)
    if found is not None:
        stream, hit = found
        total = float(str(hit.groups[3])) * _UNIT[str(hit.groups[4])]
        return Measured(round(total, 2), _where(ctx, stream, hit.line.number, hit.groups[0]))
    label = ctx.fact("gpu_memory_mib")
    if label.value is not None:
        return Measured(round(float(label.value) / 1024, 2), label.evidence)
    if label.unknown:
        raise Unmeasurable(label.unknown)
    return Measured(None, "neither a CUDA OOM message nor a node label gave the GPU's memory")


@fact("cuda_oom_tried_gib", unit="GiB", scope="container",
      doc="what the failing allocation asked for in PyTorch's CUDA OOM message ('Tried to "
          "allocate N MiB')")
def cuda_oom_tried_gib(ctx: ContainerContext) -> Measured:
    found = _last(ctx, _TORCH_OOM)
    if found is None:
        _logs_read(ctx)
        return Measured(None, "no PyTorch CUDA OOM message with sizes in the logs read")
    stream, hit = found
    tried = float(str(hit.groups[1])) * _UNIT[str(hit.groups[2])]
    return Measured(round(tried, 3), _where(ctx, stream, hit.line.number, hit.groups[0]))


# Where in start-up a CUDA OOM happened: the traceback's frames and vLLM's own words.
_PHASES = (("sampler_warmup", "frames_sampler_warmup"),
           ("cuda_graph_capture", "frames_cuda_graph_capture"),
           ("kv_cache_allocation", "frames_kv_cache_allocation"),
           ("profiling", "frames_profiling"),
           ("weights_loading", "frames_weights_loading"),
           ("runtime", "frames_runtime"))
_PHASE_QUERIES = tuple((name, LOG_QUERIES.add(Query(wordings.regex(frames)), keep_last=4))
                       for name, frames in _PHASES)
_OOM_ANY = LOG_QUERIES.add(Query(wordings.regex("cuda_oom")))
# A start's last progress line (one of milestones.LOADING) says the phase when no frame did.
_PROGRESS_PHASES = (
    ("cuda_graph_capture", wordings.regex("vllm_cuda_graph_capture")),
    ("weights_loading", wordings.either("vllm_shard_progress", "vllm_runai_loading",
                                        "hub_downloading", "vllm_weights_load_time")),
    ("profiling", wordings.either("vllm_memory_profiling", "vllm_torch_compile")),
)


# vLLM's capture line (V1's progress bar, V0's advisory) printed close to the OOM, by the
# rank that failed or by another (rank 0 draws the bar while rank 1 runs out), and no
# "Graph capturing finished" between them: the OOM is in the capture, whatever frames the
# traceback kept (_dummy_run serves the profiling run and the capture alike).
_CAPTURE = LOG_QUERIES.add(Query(wordings.regex("vllm_cuda_graph_capture")), keep_last=8)
_CAPTURE_DONE = LOG_QUERIES.add(Query(wordings.regex("vllm_cuda_graph_done")), keep_last=4)
NEAR_SETTING = "oom_capture_line_within"


def _capture_near(ctx: ContainerContext, index: LogIndex, oom_line: int) -> LogLine | None:
    reach = int(ctx.setting(NEAR_SETTING))
    near = [h.line for h in index.result(_CAPTURE, 8).last
            if abs(h.line.number - oom_line) <= reach]
    if not near:
        return None
    closest = min(near, key=lambda ln: abs(ln.number - oom_line))
    done = [h.line.number for h in index.result(_CAPTURE_DONE, 4).last]
    low, high = sorted((closest.number, oom_line))
    return None if any(low < n < high for n in done) else closest


@fact("cuda_oom_phase", unit="text", scope="container",
      doc="where the CUDA OOM happened: weights_loading, profiling, kv_cache_allocation, "
          "cuda_graph_capture, sampler_warmup or runtime (the traceback's frames, vLLM's "
          "words); None without a CUDA OOM")
def cuda_oom_phase(ctx: ContainerContext) -> Measured:
    oom = _last(ctx, _OOM_ANY)
    if oom is None:
        _logs_read(ctx)
        return Measured(None, "no CUDA OOM in the logs read")
    stream, hit = oom
    index = ctx.log(stream)
    assert index is not None
    capture = _capture_near(ctx, index, hit.line.number)
    sampler = index.result(_PHASE_QUERIES[0][1], 4)
    if capture is not None and not sampler.count:
        where = _where(ctx, stream, capture.number, capture.message)
        return Measured("cuda_graph_capture",
                        f"cuda graph capture: {where} (the capture's line, "
                        f"{abs(capture.number - hit.line.number)} line(s) from the OOM on line "
                        f"{hit.line.number})")
    for name, query in _PHASE_QUERIES:
        found = index.result(query, 4)
        if found.count:
            line = found.last[-1].line
            return Measured(name, f"{name.replace('_', ' ')}: "
                                  f"{_where(ctx, stream, line.number, line.message)}")
    rep = ctx.startup.get(stream)
    if rep is not None and rep.ready:
        return Measured("runtime", f"after start-up: {stream_label(stream)} shows the server "
                                   "ready before the OOM")
    if rep is not None and rep.last_progress is not None:
        progress = rep.last_progress.message
        for name, words in _PROGRESS_PHASES:
            if words.search(progress):
                return Measured(name, f"{name.replace('_', ' ')}: last progress line "
                                      f"{rep.last_progress.number}: {progress.strip()[:120]}")
    return Measured(None, f"{stream_label(stream)} does not say where in start-up the OOM was")


# --- memory, /dev/shm ------------------------------------------------------------------


@fact("memory_limit_bytes", unit="bytes", scope="container",
      doc="resources.limits.memory of the container in bytes; None without a limit")
def memory_limit_bytes(ctx: ContainerContext) -> Measured:
    limit = workload.memory_limit(ctx.container)
    number = quantity_bytes(limit)
    at = (ctx.field("resources", "limits", "memory"),)
    if number is None:
        return Measured(None, f"container {ctx.name} has no memory limit" if limit is None
                        else f"memory limit {limit} is not a quantity", at)
    return Measured(number, f"container {ctx.name} resources.limits.memory {limit}", at)


@fact("shm_memory_bytes", unit="bytes", scope="container",
      doc="the sizeLimit of a memory-backed /dev/shm (emptyDir medium Memory), which counts "
          "against the memory limit when filled; 0 when /dev/shm is not memory-backed; None "
          "when memory-backed without a sizeLimit")
def shm_memory_bytes(ctx: ContainerContext) -> Measured:
    vol = workload.shm_volume(ctx.pod, ctx.container)
    if vol is None or dig(vol, "emptyDir.medium") != "Memory":
        return Measured(0, f"/dev/shm of container {ctx.name} is not memory-backed")
    limit = dig(vol, "emptyDir.sizeLimit")
    number = quantity_bytes(limit)
    if number is None:
        return Measured(None, f"/dev/shm is emptyDir {vol.get('name')} medium Memory with no "
                              "sizeLimit: it may grow up to the memory limit")
    return Measured(number, f"/dev/shm is emptyDir {vol.get('name')} medium Memory, "
                            f"sizeLimit {limit}")


@fact("shm_volume_name", unit="text", scope="container",
      doc="the name of the volume mounted at /dev/shm; None without one")
def shm_volume_name(ctx: ContainerContext) -> Measured:
    vol = workload.shm_volume(ctx.pod, ctx.container)
    if vol is None:
        return Measured(None, f"no volume at /dev/shm in container {ctx.name}")
    return Measured(str(vol.get("name")), f"volume {vol.get('name')} is mounted at /dev/shm")


# --- start-up time ----------------------------------------------------------------------

# tqdm's line while vLLM reads shards: "Loading safetensors checkpoint shards:  63% Completed
# | 19/30 [01:25<00:49,  4.49s/it]" (vllm_shard_bar's groups: percent, shards done, in
# all, then the time spent: hours, minutes, seconds).
_SHARDS = LOG_QUERIES.add(Query(wordings.regex("vllm_shard_progress")), keep_last=1)
_SHARD_BAR = wordings.regex("vllm_shard_bar")
@fact("load_estimate_seconds", unit="seconds", scope="container",
      doc="the weights load extrapolated from the last shard progress line: from the log's "
          "first line to the shards' start, plus the shards' elapsed time x total / done; "
          "None without shard progress")
def load_estimate_seconds(ctx: ContainerContext) -> Measured:
    found = _last(ctx, _SHARDS)
    if found is None:
        _logs_read(ctx)
        return Measured(None, "no shard progress line in the logs read")
    stream, hit = found
    bar = _SHARD_BAR.match(hit.line.message, hit.span[1])
    if bar is None or bar.group(6) is None:
        return Measured(None, "the last shard progress line shows no count and time: "
                              f"{_where(ctx, stream, hit.line.number, hit.line.message)}")
    g = (bar.group(0), *bar.groups())
    done, total = int(str(g[2])), int(str(g[3]))
    elapsed = int(g[4] or 0) * 3600 + int(str(g[5])) * 60 + int(str(g[6]))
    if done <= 0 or total <= 0:
        return Measured(None, "shard progress at 0: nothing to extrapolate from")
    index = ctx.log(stream)
    first = next((s for s in (_stamp(ln.raw) for ln in index.head) if s is not None),
                 None) if index else None
    started = _stamp(hit.stamped.raw) if hit.stamped is not None else None
    before = max(0.0, started - first) if first is not None and started is not None else 0.0
    shards = elapsed * total / done
    estimate = math.ceil(before + shards)
    return Measured(estimate, f"{done} of {total} shards in {elapsed}s "
                              f"({_where(ctx, stream, hit.line.number, hit.line.message)}): "
                              f"{shards:.0f}s for all {total}, after {before:.0f}s from the "
                              f"log's first line to the first shard")


@fact("probe_port", unit="port", scope="container",
      doc="the port a probe on vLLM's /health should use: the liveness or readiness probe's "
          "httpGet port, else vLLM's --port or the container's port, else 8000")
def probe_port(ctx: ContainerContext) -> Measured:
    for name in ("startupProbe", "livenessProbe", "readinessProbe"):
        port = dig(ctx.container, f"{name}.httpGet.port")
        if port is not None:
            return Measured(port, f"{name} httpGet port {port}")
    port = workload.metrics_port(ctx.container)
    return Measured(port, f"vLLM serves on port {port}")


@fact("probe_scheme", unit="text", scope="container",
      doc="the scheme of the existing probes' httpGet (HTTP or HTTPS); HTTP without one")
def probe_scheme(ctx: ContainerContext) -> Measured:
    for name in ("startupProbe", "livenessProbe", "readinessProbe"):
        scheme = dig(ctx.container, f"{name}.httpGet.scheme")
        if scheme:
            return Measured(str(scheme), f"{name} httpGet scheme {scheme}")
    return Measured("HTTP", "no probe sets a scheme: HTTP")


# --- image -------------------------------------------------------------------------------


@fact("image_digest_ref", unit="text", scope="container",
      doc="the container's image pinned to the digest it is running "
          "(status.containerStatuses[].imageID): repo@sha256:...; None before a pull")
def image_digest_ref(ctx: ContainerContext) -> Measured:
    image_id = str(ctx.status.get("imageID") or "")
    digest = image_id.rpartition("@")[2] if "@" in image_id else ""
    if not digest.startswith("sha256:"):
        return Measured(None, f"container {ctx.name} has no imageID with a digest yet "
                              f"({image_id or 'not pulled'})")
    repo, _, _ = workload.split_image(str(ctx.container.get("image") or ""))
    return Measured(f"{repo}@{digest}", f"container {ctx.name} runs imageID {image_id}")


# --- disk, model cache ---------------------------------------------------------------------


@fact("model_cache_claim", unit="text", scope="container",
      doc="the PersistentVolumeClaim that holds the Hugging Face cache (HF_HOME / "
          "HF_HUB_CACHE / ~/.cache/huggingface); None when the cache is not on a claim")
def model_cache_claim(ctx: ContainerContext) -> Measured:
    from triage.facts.engine import _hf_cache_dir  # the one place the cache dir is found

    path, why = _hf_cache_dir(ctx)
    found = workload.volume_for_path(ctx.pod, ctx.container, path)
    if found is None:
        return Measured(None, f"the model cache {path} ({why}) is not on a volume")
    mount, vol = found
    claim = dig(vol, "persistentVolumeClaim.claimName")
    if not claim:
        return Measured(None, f"the model cache {path} is on volume {vol.get('name')}, "
                              "not a PersistentVolumeClaim")
    return Measured(str(claim), f"the model cache {path} ({why}) is on volume "
                                f"{vol.get('name')} mounted at {mount.get('mountPath')}, "
                                f"claim {claim}")


@fact("model_cache_claim_bytes", unit="bytes", scope="container",
      doc="the capacity of the model cache's PersistentVolumeClaim (status.capacity, else "
          "spec.resources.requests.storage)")
def model_cache_claim_bytes(ctx: ContainerContext) -> Measured:
    claim = ctx.fact("model_cache_claim")
    if claim.unknown:
        raise Unmeasurable(claim.unknown)
    if claim.value is None:
        return Measured(None, claim.evidence)
    unread = ctx.unread("persistentvolumeclaims")
    pvc = ctx.snapshot.find("persistentvolumeclaims", ctx.namespace, str(claim.value))
    if pvc is None:
        if unread:
            raise Unmeasurable(unread[0])
        return Measured(None, f"claim {claim.value} was not found")
    size = dig(pvc, "status.capacity.storage") or dig(pvc, "spec.resources.requests.storage")
    number = quantity_bytes(size)
    return Measured(number, f"claim {claim.value}: {size}")


# huggingface_hub's tqdm per file: "model-00012-of-00017.safetensors:  43%|...| 2.13G/4.95G"
# (hub_file_progress: the file and percent; tqdm's sizes follow), the file named as a
# sharded checkpoint's shard (hub_shard_file_name: this shard, the count).
_FILE_PROGRESS = LOG_QUERIES.add(Query(wordings.regex("hub_file_progress")), keep_last=64)
_SHARD_FILE = wordings.regex("hub_shard_file_name")
_SI = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


@fact("model_size_bytes", unit="bytes", scope="container",
      doc="the model's size on disk from the download progress lines: the mean size of the "
          "shards logged x the shard count in their names (model-00012-of-00017); None "
          "without such lines")
def model_size_bytes(ctx: ContainerContext) -> Measured:
    for stream in (PREVIOUS, "current"):
        index = ctx.log(stream)
        if index is None:
            continue
        sizes: dict[int, float] = {}
        count = 0
        for hit in index.result(_FILE_PROGRESS, 64).last:
            shard = _SHARD_FILE.search(str(hit.groups[1]))
            size = bars.SIZES.match(hit.line.message, hit.span[1])
            if shard is None or size is None:
                continue
            sizes[int(shard.group(1))] = float(size.group(1)) * _SI[size.group(2)]
            count = int(shard.group(2))
        if not sizes:
            continue
        mean = sum(sizes.values()) / len(sizes)
        total = int(mean * max(count, len(sizes)))
        return Measured(total, f"{len(sizes)} of {count} shards logged by huggingface_hub, "
                               f"{mean / 1e9:.2f} GB each on average "
                               f"({stream_label(stream)} ({ctx.name}))")
    _logs_read(ctx)
    return Measured(None, "no shard download line with sizes in the logs read")


# --- scheduling ---------------------------------------------------------------------------

_TAINT = wordings.regex("scheduler_untolerated_taint")


def _taint(ctx: OfPod) -> tuple[str, str, str] | None:
    message = ctx.fact("unschedulable_message").value
    m = _TAINT.search(str(message or ""))
    if not m:
        return None
    key, value = m.group(1).strip(), m.group(2).strip()
    nodes = ctx.snapshot.items("nodes")
    if not nodes:
        return key, value, "NoSchedule"  # the nodes were not read: as the scheduler said
    for node in nodes:
        taint = next((t for t in dig(node, "spec.taints") or []
                      if isinstance(t, dict) and t.get("key") == key), None)
        # Only a taint of a node with GPUs matters: tolerating a CPU node's taint
        # does not give the pod a GPU.
        if taint is not None and _node_gpus(node):
            return key, value, str(taint.get("effect") or "NoSchedule")
    return None


def _node_gpus(node: Obj) -> int:
    allocatable = dig(node, "status.allocatable") or {}
    for name in workload.GPU_RESOURCES:
        value = str(allocatable.get(name, "0"))
        if value.isdigit() and int(value) > 0:
            return int(value)
    return 0


@fact("untolerated_taint_key", unit="text", scope="pod",
      doc="the key of the node taint the scheduler said the pod does not tolerate; None when "
          "it named none")
def untolerated_taint_key(ctx: PodContext) -> Measured:
    taint = _taint(ctx)
    if taint is None:
        return Measured(None, "the scheduler named no untolerated taint")
    return Measured(taint[0], f"scheduler: untolerated taint {{{taint[0]}: {taint[1]}}}")


@fact("untolerated_taint_effect", unit="text", scope="pod",
      doc="the effect of that taint on the nodes that carry it (NoSchedule when no node read "
          "says)")
def untolerated_taint_effect(ctx: PodContext) -> Measured:
    taint = _taint(ctx)
    if taint is None:
        return Measured(None, "the scheduler named no untolerated taint")
    return Measured(taint[2], f"taint {taint[0]} has effect {taint[2]}")


@fact("max_num_seqs", unit="requests", scope="container",
      doc="--max-num-seqs as set (args or --config file); None when unset")
def max_num_seqs(ctx: ContainerContext) -> Measured:
    why = ctx.engine.unknown("max-num-seqs")
    if why:
        raise Unmeasurable(why)
    return Measured(ctx.engine.integer("max-num-seqs"), ctx.engine.describe("max-num-seqs"))


def _held_gpus(pod: Obj) -> int:
    return sum(workload.gpu_request(c) for c in workload.containers(pod))


@fact("node_gpu_holders", unit="list", scope="node",
      doc="the pods on the pod's node that hold GPUs, with their state (who uses the cards)")
def node_gpu_holders(ctx: NodeContext) -> Measured:
    if not ctx.node_name:
        return Measured(None, "the pod is not on a node")
    out = []
    for other in ctx.snapshot.pods():
        if workload.pod_spec(other).get("nodeName") != ctx.node_name:
            continue
        n = _held_gpus(other)
        if n:
            out.append(f"{meta(other).get('name')} ({n} GPU, {workload.pod_state(other)})")
    return Measured(out, f"pods holding GPUs on node {ctx.node_name}: "
                         + (", ".join(out) or "none read"))


# --- autoscaling ------------------------------------------------------------------------


def _largest_target(ctx: ContainerContext) -> tuple[float, str, str, str] | None:
    """The largest per-pod autoscaling target (target, counts, where, field), if any."""
    from triage.facts.rollout import _concurrency_targets

    targets = _concurrency_targets(ctx)
    return max(targets) if targets else None


@fact("autoscale_target", unit="requests", scope="container",
      doc="the autoscaler's per-pod concurrency or queue target (Knative target annotation, "
          "InferenceService scaleTarget, an HPA Pods/External metric on vLLM's queue); the "
          "largest when several")
def autoscale_target(ctx: ContainerContext) -> Measured:
    largest = _largest_target(ctx)
    if largest is None:
        return Measured(None, "no concurrency or queue-length autoscaling target")
    return Measured(largest[0], largest[2])


@fact("autoscale_target_field", unit="path", scope="container",
      doc="where the largest autoscale_target is set in the workload's HorizontalPodAutoscaler, "
          "as a field path (spec.metrics[0].pods.target.averageValue); none when it is set "
          "elsewhere (an InferenceService, a second autoscaler)")
def autoscale_target_field(ctx: ContainerContext) -> Measured:
    largest = _largest_target(ctx)
    if largest is None:
        return Measured(None, "no concurrency or queue-length autoscaling target")
    _, _, at, field = largest
    return Measured(field or None, at if field else
                    f"{at}: not a field of the workload's first autoscaler")


@fact("pod_concurrency", unit="requests", scope="container",
      doc="requests one pod serves at once: vLLM's 'Maximum concurrency for N tokens per "
          "request', or --max-num-seqs when /metrics shows it saturated")
def pod_concurrency(ctx: ContainerContext) -> Measured:
    from triage.facts.rollout import _pod_capacity

    cap = _pod_capacity(ctx)
    if cap is None:
        _logs_read(ctx)
        return Measured(None, "what one pod serves at once is not known (no 'Maximum "
                              "concurrency' line)")
    return Measured(cap[0], cap[1])
