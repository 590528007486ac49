"""Facts about progress: how long a log has been silent, how far a start got, and whether
a serving engine still generates.

They measure; ``startup-stalled`` and ``engine-hung`` hold the thresholds.
Times are the kubelet's when the log was read with ``timestamps=true`` and
vLLM's own stamps otherwise (``triage.logs.linetime``); the evidence says which.

Texts (``patterns/wordings.yaml``, each with its source; vLLM 0.6.6, 0.10.1.1, 0.33.0):
the start-up milestones vLLM prints ("Initializing a V1 LLM engine", "rank 0 in world size
2 is assigned as ...", NCCL INFO lines, "Loading safetensors checkpoint
shards: 62% Completed | 5/8", "Memory profiling", "Available KV cache
memory", "Capturing CUDA graphs", "Starting vLLM API server"); the periodic
stats line ("Engine 000: Avg prompt throughput: X tokens/s, Avg generation
throughput: Y tokens/s, Running: N reqs, ...", v1/metrics/loggers.py, V0
engine/metrics.py) and the shared-memory broadcast queue's wait ("No
available shared memory broadcast block found in 60 second(s).",
distributed/device_communicators/shm_broadcast.py). A weights download prints
nothing of vLLM's own (model_loader/weight_utils.py download_weights_from_hf:
"Using model weights format [...]" at INFO up to 0.11, DEBUG later, then
snapshot_download with tqdm_class=DisabledTqdm, then "Time spent downloading
weights for ..."). huggingface_hub 0.x still prints its per-file bars
("model-00003-of-00004.safetensors:  43%|..."); from 1.2 its one bar for the
snapshot ("Downloading (incomplete total...)") takes vLLM's disabled class, so
nothing is printed (the bar shows in an init container's `hf download`).
"""

from __future__ import annotations

from datetime import datetime

import regex

from triage.facts import LOG_QUERIES, ContainerContext, Measured, Unmeasurable, fact
from triage.logs import Hit, LogIndex, LogLine, Query, bars, linetime
from triage.snapshot import CURRENT, PREVIOUS
from triage.vllm import wordings

DOWNLOAD_SILENT = "download (no progress printed)"
# Start-up milestones, in the order a start reaches them; the last one seen is where
# the start is. Each is answered by the scan's one pass (its last match kept). The texts
# are patterns/wordings.yaml's.
_MILESTONES: tuple[tuple[str, regex.Pattern[str]], ...] = (
    ("CUDA init (engine starting)", wordings.either(
        "vllm_platform_detected", "vllm_engine_init", "vllm_waiting_for_front_end",
        "vllm_api_server_version")),
    ("NCCL / distributed init", wordings.regex("vllm_distributed_init")),
    # The hub's own progress bars: per file (huggingface_hub 0.x), or one bar for the
    # whole snapshot (>= 1.2).
    ("download", wordings.either("hub_download_progress", "hub_file_progress",
                                 "hub_snapshot_progress")),
    # weight_utils.download_weights_from_hf logs the format, then downloads with its
    # progress bars disabled (DisabledTqdm) and says nothing until "Time spent
    # downloading weights for ...".
    (DOWNLOAD_SILENT, wordings.regex("vllm_weights_format")),
    ("weights load", wordings.either(
        "vllm_load_start", "vllm_load_from_scratch", "vllm_download_time",
        "vllm_shard_progress", "vllm_runai_loading", "vllm_weights_load_time",
        "vllm_model_loading_took", "vllm_v0_model_weights_took")),
    ("torch.compile", wordings.either("vllm_torch_compile", "vllm_compiling_graph")),
    ("KV cache sizing", wordings.either(
        "vllm_memory_profiling", "vllm_available_kv_cache_memory", "vllm_kv_cache_size",
        "vllm_gpu_blocks", "vllm_max_concurrency")),
    ("CUDA graph capture", wordings.either("vllm_cuda_graph_capture", "vllm_cuda_graph_done")),
    # Serving: the server's start lines, and what only a serving server prints (the
    # periodic stats line, an HTTP access line: the port opens when the engine is
    # ready), for a log read whose start scrolled out of the tail.
    ("ready", wordings.either("vllm_server_ready", "vllm_stats_line", "http_access_line")),
)
_MILESTONE_QUERIES = tuple((name, LOG_QUERIES.add(Query(rx, None)))
                           for name, rx in _MILESTONES)
_SHARDS = wordings.regex("vllm_shard_progress")
_SHARD_BAR = wordings.regex("vllm_shard_bar")
_DOWNLOAD = wordings.regex("hub_file_progress")
_DOWNLOAD_ALL = wordings.regex("hub_snapshot_progress")
# V1's model runner (V0's too) says it starts loading. Up to 0.11 weight_utils then logs
# "Using model weights format" at INFO before it downloads; later versions log it at
# DEBUG, so after "Starting to load model" of a hub model the download prints nothing
# (vLLM 0.13: "Starting to load model Qwen/Qwen3-30B-A3B-FP8...", 14 minutes of nothing,
# "Time spent downloading weights for ...: 826.33 seconds").
_LOAD_START = wordings.either("vllm_load_start", "vllm_load_from_scratch")
_FORMAT_AT_DEBUG_FROM = (0, 12)
VERSION = LOG_QUERIES.add(Query(wordings.either("vllm_api_server_version", "vllm_engine_init"),
                                None))

# Hang signals while serving, and what shows progress.
# uvicorn's access line ("POST /v1/chat/completions HTTP/1.1" 200 OK) is not progress: it
# is written when the response starts, so a streaming request to a hung engine logs 200,
# and so does a router's GET /v1/models poll. Only a stats line that shows tokens
# generated (or nothing left running) ends a stall.
_KEPT = 64
SHM_WAITS = LOG_QUERIES.add(Query(wordings.regex("vllm_shm_broadcast_wait"), None),
                            keep_last=_KEPT)
# vllm_stats_line's groups: engine, generation tokens/s, running, waiting, KV cache usage.
STATS = LOG_QUERIES.add(Query(wordings.regex("vllm_stats_line"), None), keep_last=_KEPT)
STATS_GENERATION, STATS_RUNNING = 2, 3


def _anchor(ctx: ContainerContext) -> datetime | None:
    """When the current container run started (the year of vLLM's stamps)."""
    state = ctx.status.get("state") or {}
    run = state.get("running") or state.get("terminated") or {}
    return linetime.parse_time(run.get("startedAt")) or \
        linetime.parse_time(ctx.snapshot.collected_at)


def _when(line: LogLine, anchor: datetime | None) -> str:
    found = linetime.line_time(line.raw, anchor)
    if found is None:
        return "no time"
    when, source = found
    how = "kubelet time" if source == linetime.KUBELET else "vLLM's stamp"
    return f"{linetime_iso(when)} ({how})"


def linetime_iso(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _span(secs: float) -> str:
    """1469 -> '24m29s (1469 s)': what a person reads, and the number a rule compares."""
    whole = round(secs)
    hours, rest = divmod(whole, 3600)
    minutes, seconds = divmod(rest, 60)
    text = (f"{hours}h" if hours else "") + (f"{minutes:02d}m" if hours else
                                              f"{minutes}m" if minutes else "")
    text += f"{seconds:02d}s" if text else f"{seconds}s"
    return f"{text} ({secs:.0f} s)" if whole >= 60 else f"{secs:.0f} s"


@fact("ready_probe", unit="text", scope="container",
      doc="the probe the kubelet waits on before it marks the container Ready: "
          "readinessProbe, else startupProbe; None without either, when Kubernetes marks "
          "the container Ready as soon as it runs, whatever its start is doing")
def ready_probe(ctx: ContainerContext) -> Measured:
    for kind in ("readinessProbe", "startupProbe"):
        if ctx.container.get(kind):
            return Measured(kind, f"container {ctx.name} is Ready only once its {kind} "
                                  "succeeds", (ctx.field(kind),))
    return Measured(None, f"container {ctx.name} has no readinessProbe and no startupProbe: "
                          "Kubernetes marks it Ready as soon as it runs, so Ready says "
                          "nothing about its start", (ctx.field("readinessProbe"),))


def _current_log(ctx: ContainerContext) -> LogIndex | None:
    """The scanned current log; None when there is none; Unmeasurable when it failed (or
    the snapshot holds manifests, where no container runs)."""
    ctx.runtime("the container's log")
    index = ctx.log(CURRENT)
    if index is None:
        why = ctx.log_failure(CURRENT)
        if why:
            raise Unmeasurable(why)
    return index


@fact("log_silent_seconds", unit="seconds", scope="container",
      doc="seconds from the time of the current log's last line to the collection time "
          "(from the container's start when the log has no line yet): how long the log "
          "has not advanced; the evidence names the line, its time and whether that is "
          "the kubelet's time (timestamps=true) or vLLM's own stamp; None when the "
          "container is not running or its last line has no time of its own")
def log_silent_seconds(ctx: ContainerContext) -> Measured:
    ctx.runtime("the container's status and log")
    state = ctx.status.get("state") or {}
    running = state.get("running")
    if not running:
        return Measured(None, f"container {ctx.name} is not running")
    now = linetime.parse_time(ctx.snapshot.collected_at)
    started = linetime.parse_time(running.get("startedAt"))
    index = _current_log(ctx)
    if now is None:
        return Measured(None, "the collection time is not known")
    if index is None or index.empty:
        if started is None:
            return Measured(None, f"container {ctx.name}'s log is empty and its start time "
                                  "is not known")
        secs = (now - started).total_seconds()
        return Measured(secs, f"container {ctx.name} printed no line since it started at "
                              f"{linetime_iso(started)}, {_span(secs)} before the collection")
    last = index.tail[-1]
    found = linetime.line_time(last.raw, started or now)
    if found is None:
        return Measured(None, f"the current log's last line ({last.number}) has no time of "
                              "its own (read without the kubelet's timestamps): how long the "
                              "log has been silent is not known")
    when, source = found
    secs = max(0.0, (now - when).total_seconds())
    how = linetime.SOURCES[source]
    return Measured(secs, f"the current log of {ctx.name} last advanced at "
                          f"{linetime_iso(when)}, {_span(secs)} before the collection (line "
                          f"{last.number}: {last.message.strip()[:100]}); line times: {how}")


def _silent_download_after_load_start(ctx: ContainerContext, index: LogIndex) -> str | None:
    """Why a hub download may follow "Starting to load model" with nothing printed; None
    when the model is a path or an object store URL (nothing to download) or the log's
    vLLM prints the weights format at INFO before a download (<= 0.11)."""
    model = ctx.engine.model or ""
    if model.startswith(("/", "./", "file:")) or "://" in model:
        return None
    version = None
    for hit in index.result(VERSION).last:
        major, minor = hit.groups[1] or hit.groups[3], hit.groups[2] or hit.groups[4]
        if major is not None and minor is not None:
            version = (int(major), int(minor))
    if version is not None and version < _FORMAT_AT_DEBUG_FROM:
        return None
    what = f"{model} is a hub model" if model else "the model is not known from the args"
    seen = f"vLLM {version[0]}.{version[1]}" if version else "the vLLM version is not in the log"
    return (f" ({what}, {seen}: from 0.12 vLLM logs the weights format at DEBUG, so a "
            "hub download may follow with nothing printed until 'Time spent downloading "
            "weights')")


def _milestone_label(ctx: ContainerContext, index: LogIndex, name: str,
                     hit: Hit) -> tuple[str, str]:
    """The milestone as the fact names it, and what the evidence adds to explain it."""
    line = hit.line.message
    if name == "weights load":
        m = _SHARDS.search(line)
        bar = _SHARD_BAR.match(line, m.end()) if m else None
        if bar:
            return f"weights shard {bar.group(2)}/{bar.group(3)} ({bar.group(1)}%)", ""
        why = _silent_download_after_load_start(ctx, index) \
            if _LOAD_START.search(line) else None
        if why:
            return DOWNLOAD_SILENT, why
    if name == DOWNLOAD_SILENT:
        return DOWNLOAD_SILENT, (" (vLLM downloads the weights from the hub with its "
                                 "progress bar disabled: with huggingface_hub >= 1.2 "
                                 "nothing is printed until 'Time spent downloading "
                                 "weights')")
    if name == "download":
        m = _DOWNLOAD.search(line)
        if m:
            return f"download ({m.group(1)} at {m.group(2)}%)", ""
        m = _DOWNLOAD_ALL.search(line)
        percent = bars.PERCENT.match(line, m.end()) if m else None
        if percent:
            return f"download (all files at {percent.group(1)}%)", ""
    return name, ""


@fact("startup_milestone", unit="text", scope="container",
      doc="the last start-up milestone the current log reached: CUDA init (engine "
          "starting), NCCL / distributed init, download (file and percent), 'download (no "
          "progress printed)' (vLLM's 'Using model weights format' line, or its 'Starting to "
          "load model' of a hub model, with nothing after: vLLM downloads with its progress "
          "bars off), weights load or weights shard N/M, torch.compile, KV cache sizing, "
          "CUDA graph capture, or ready (also a stats or HTTP access line: only a serving "
          "server prints them); None when the log shows none")
def startup_milestone(ctx: ContainerContext) -> Measured:
    index = _current_log(ctx)
    if index is None:
        return Measured(None, f"no current log of {ctx.name} was read")
    best: tuple[int, str, Hit] | None = None
    for name, query in _MILESTONE_QUERIES:
        result = index.result(query)
        if result.count and result.last:
            hit = result.last[-1]
            if best is None or hit.line.number >= best[0]:
                best = (hit.line.number, name, hit)
    if best is None:
        return Measured(None, f"the current log of {ctx.name} shows no start-up milestone")
    number, name, hit = best
    label, why = ("ready", "") if name == "ready" else _milestone_label(ctx, index, name, hit)
    return Measured(label, f"last start-up milestone of {ctx.name}: {label}, log line "
                           f"{number} at {_when(hit.line, _anchor(ctx))}: "
                           f"{hit.line.message.strip()[:100]}{why}")


@fact("engine_stalled_seconds", unit="seconds", scope="container",
      doc="how long a serving engine has had work and made no progress, from vLLM's own "
          "signals at the end of the current log after it became ready: repeated "
          "'No available shared memory broadcast block found in N second(s)' waits and "
          "periodic stats lines with requests running and 0.0 tokens/s generated; the span "
          "from the first to the last of that trailing run (plus the first wait's N s); None "
          "when the log does not end in such a run (progress, idle, or not ready)")
def engine_stalled_seconds(ctx: ContainerContext) -> Measured:
    index = _current_log(ctx)
    if index is None:
        return Measured(None, f"no current log of {ctx.name} was read")
    ready = ctx.startup.get(CURRENT)
    after = ready.ready_line.number if ready is not None and ready.ready_line else None
    if after is None:
        return Measured(None, f"{ctx.name} has not become ready in the current log: a stall "
                              "before that is the start's, not the engine's")
    hits = sorted(
        [(h.line.number, "wait", h) for h in index.result(SHM_WAITS, _KEPT).last] +
        [(h.line.number, "stats", h) for h in index.result(STATS, _KEPT).last],
        key=lambda t: t[0])
    run: list[tuple[str, Hit]] = []
    for number, kind, hit in reversed(hits):
        progress = kind == "stats" and (float(hit.groups[STATS_GENERATION] or 0) > 0
                                        or int(hit.groups[STATS_RUNNING] or 0) == 0)
        if number <= after or progress:
            break
        run.append((kind, hit))
    if not run:
        return Measured(None, f"the end of {ctx.name}'s log shows no stalled engine (no "
                              "broadcast waits, no running requests without generated tokens)")
    run.reverse()
    anchor = _anchor(ctx)
    first, last = run[0][1], run[-1][1]
    t0 = linetime.line_time(first.line.raw, anchor)
    t1 = linetime.line_time(last.line.raw, anchor)
    if t0 is None or t1 is None:
        return Measured(None, f"{len(run)} hang signal(s) at the end of {ctx.name}'s log, but "
                              "their lines have no time")
    waited = float(first.groups[1] or 0) if run[0][0] == "wait" else 0.0
    secs = (t1[0] - t0[0]).total_seconds() + waited
    waits = sum(1 for kind, _ in run if kind == "wait")
    stats = len(run) - waits
    running = next((h.groups[STATS_RUNNING] for kind, h in reversed(run) if kind == "stats"),
                   None)
    what = ", ".join(filter(None, [
        f"{waits} shared-memory broadcast wait(s)" if waits else "",
        f"{stats} stats line(s) with {running} request(s) running and 0.0 tokens/s "
        "generated" if stats else ""]))
    return Measured(secs, f"{ctx.name}'s engine made no progress for {_span(secs)}: {what}, "
                          f"log lines {first.line.number}-{last.line.number} "
                          f"({_when(first.line, anchor)} to {_when(last.line, anchor)}): "
                          f"{last.line.message.strip()[:100]}")


def ready_at(ctx: ContainerContext, stream: str) -> datetime | None:
    """When a run of the container started serving: the time of its log's ready line."""
    report = ctx.startup.get(stream)
    if report is None or report.ready_line is None:
        return None
    status = ctx.status
    run = (status.get("lastState") or {}).get("terminated") if stream == PREVIOUS else (
        (status.get("state") or {}).get("running") or (status.get("state") or {}).get(
            "terminated"))
    anchor = linetime.parse_time((run or {}).get("startedAt"))
    found = linetime.line_time(report.ready_line.raw, anchor)
    return found[0] if found else None


@fact("previous_run_served_seconds", unit="seconds", scope="container",
      doc="how long the container's previous run served before it ended: from its log's "
          "ready line to lastState.terminated.finishedAt; None when it ended without having "
          "served (a crash or a kill during start-up)")
def previous_run_served_seconds(ctx: ContainerContext) -> Measured:
    ctx.runtime("the container's status and logs")
    ended = (ctx.status.get("lastState") or {}).get("terminated")
    if not ended:
        return Measured(None, f"container {ctx.name} has no previous run")
    if ctx.log(PREVIOUS) is None:
        why = ctx.log_failure(PREVIOUS)
        if why:
            raise Unmeasurable(why)
        return Measured(None, f"container {ctx.name}: the previous run's log was not read")
    ready = ready_at(ctx, PREVIOUS)
    finished = linetime.parse_time(ended.get("finishedAt"))
    if ready is None or finished is None:
        return Measured(None, f"container {ctx.name}'s previous run did not log that it serves"
                              if ready is None else "its end time is not known")
    secs = max(0.0, (finished - ready).total_seconds())
    return Measured(secs, f"container {ctx.name}'s previous run served from "
                          f"{linetime_iso(ready)} until it ended at {ended.get('finishedAt')} "
                          f"({ended.get('reason')}, exit {ended.get('exitCode')}): {_span(secs)}")
