"""Derived per-pod data for the pictures: the incident timeline and the GPU memory budget.

The timeline puts on one UTC axis what an engineer reconstructs by hand:
the pod's creation and scheduling, each container start (from the status
and the events), vLLM's own start-up milestones (from its log, the lines
``triage.vllm.milestones`` reads), probe failures, kills, OOMs and crashes, back-off
restarts, and the rollout around it (ReplicaSets and the Deployment's
events). vLLM stamps its lines ``MM-DD hh:mm:ss`` without a year; the year
comes from the container run the log belongs to.

The budget is one GPU as vLLM divided it: the card (GFD's
``nvidia.com/gpu.memory`` label, DCGM's framebuffer, or the size PyTorch or
vLLM printed), vLLM's share (``--gpu-memory-utilization``), the weights and
the KV cache it logged, the rest of its share (activations, CUDA graphs,
non-torch memory) and what is left outside it; and how many sequences of
``--max-model-len`` the KV cache holds.

Like facts, these measure: no thresholds, no verdicts.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from triage.facts import LOG_QUERIES, ContainerContext
from triage.kube import workload
from triage.logs import LogLine, Query, bars, linetime
from triage.results import GpuBudget, TimelineEvent, WindowSeries
from triage.snapshot import CURRENT, PREVIOUS, event_times, meta, parse_rfc3339
from triage.speed import lazyregex
from triage.vllm import rootcause, wordings
from triage.vllm.milestones import StartupReport

parse_time = parse_rfc3339  # an RFC 3339 time of the API (UTC when it names no zone)

_MAX_EVENTS = 60
# What the timeline reads from every log, answered by the scan's one pass: the crash's
# error-shaped lines (its root cause, as the findings' evidence names it) and the last
# line that said the server was serving.
LOG_QUERIES.add(rootcause.ERROR_LINES, keep_last=rootcause.ERROR_LINES_KEPT)
LOG_QUERIES.add(rootcause.SERVING)
# Every line logged at ERROR or CRITICAL: its level decides, whatever it says.
ERROR_LINES = LOG_QUERIES.add(Query(lazyregex.compile("."), frozenset({"ERROR", "CRITICAL"})))
CAPACITY = LOG_QUERIES.add(Query(wordings.regex("gpu_total_capacity")))


def iso(when: datetime) -> str:
    return when.astimezone(timezone.utc).replace(microsecond=0).isoformat().replace(
        "+00:00", "Z")


def line_time(line: LogLine, anchor: datetime | None) -> datetime | None:
    """The UTC time a log line was printed, if it says (``triage.logs.linetime``): the
    kubelet's, else vLLM's own stamp with the year from ``anchor``."""
    found = linetime.line_time(line.raw, anchor)
    return found[0] if found else None



def _short(text: str, limit: int = 140) -> str:
    """One line of at most ``limit`` characters, cut at a word with an ellipsis."""
    flat = " ".join(bars.DRAWING.sub("|", text).split())
    if len(flat) <= limit:
        return flat
    head = flat[:limit - 1]
    space = head.rfind(" ")
    return (head[:space] if space >= limit // 2 else head).rstrip(" ,;:") + "…"


def _run_starts(ctx: ContainerContext) -> dict[str, datetime | None]:
    """When the container run each log stream belongs to started."""
    state = ctx.status.get("state") or {}
    current = (state.get("running") or state.get("terminated") or {}).get("startedAt")
    last = ((ctx.status.get("lastState") or {}).get("terminated") or {}).get("startedAt")
    fallback = parse_time(ctx.snapshot.collected_at)
    return {CURRENT: parse_time(current) or fallback,
            PREVIOUS: parse_time(last) or parse_time(current) or fallback}


def _log_events(ctx: ContainerContext, stream: str, rep: StartupReport,
                anchor: datetime | None) -> list[TimelineEvent]:
    index = ctx.log(stream)
    if index is None or index.empty:
        return []
    where = "previous log" if stream == PREVIOUS else "log"
    out: list[TimelineEvent] = []

    def add(line: LogLine | None, stamped: LogLine | None, kind: str, label: str) -> None:
        if line is None or stamped is None:
            return
        found = linetime.line_time(stamped.raw, anchor)
        if found is None:
            return
        when, source = found
        # where the time came from: the kubelet's, or vLLM's own stamp (no year, UTC assumed)
        basis = "" if source == linetime.KUBELET else " [time: vLLM's stamp]"
        out.append(TimelineEvent(iso(when), kind, label,
                                 f"{where} ({ctx.name}) line {line.number}: "
                                 f"{_short(line.message)}{basis}", container=ctx.name))

    def milestone(name: str, kind: str, label: str) -> None:
        add(rep.evidence.get(name), rep.stamped.get(name), kind, label)

    first = next((ln for ln in index.head if line_time(ln, anchor) is not None), None)
    add(first, first, "milestone", "vLLM log starts")
    milestone("download", "milestone", "downloading weights")
    size = f" ({rep.weights_gib:.1f} GiB)" if rep.weights_gib else ""
    loaded = next((n for n in ("model_load", "model_load_v0", "weights_seconds")
                   if n in rep.evidence), "")
    milestone(loaded, "milestone", f"weights loaded{size}")
    tokens = f": {rep.kv_cache_tokens:,} tokens" if rep.kv_cache_tokens else ""
    sized = next((n for n in ("kv_cache_tokens", "gpu_blocks", "kv_cache_memory_gib")
                  if n in rep.evidence), "")
    milestone(sized, "milestone", f"KV cache sized{tokens}")
    if rep.ready:
        milestone("ready", "ready", "ready: serving")
    elif rep.last_progress is not None:
        progress = _short(rep.last_progress.message, 60)
        milestone("loading", "milestone", f"still loading: {progress}")
    # The root cause (the line the findings' evidence leads with), else the last line
    # logged at ERROR.
    cause = rootcause.root_line(index, stream, (), float(ctx.setting("crash_window_seconds")),
                                anchor)
    error: LogLine | None = None
    if cause is not None:
        error = cause.line
        hit = next((h for h in index.result(rootcause.ERROR_LINES,
                                            rootcause.ERROR_LINES_KEPT).last
                    if h.line.number == error.number), None)
        stamped = hit.stamped if hit is not None else error
    elif index.result(ERROR_LINES).last:
        last_error = index.result(ERROR_LINES).last[-1]
        error, stamped = last_error.line, last_error.stamped
    if error is not None:
        add(error, stamped, "error", f"error: {_short(error.message.strip(), 70)}")
    last = next((ln for ln in reversed(index.tail) if line_time(ln, anchor) is not None), None)
    if stream == PREVIOUS and last is not None and (rep.ready or rep.last_progress is None) \
            and (error is None or last.number != error.number):
        add(last, last, "milestone", "previous log ends")
    return out


_EVENT_KINDS = {
    "Scheduled": ("pod", "scheduled"), "FailedScheduling": ("schedule", "cannot be scheduled"),
    "Pulling": ("image", "pulling image"), "Pulled": ("image", "image pulled"),
    "Created": ("pod", "container created"), "Started": ("start", "container started"),
    "Unhealthy": ("probe", "probe failed"), "Killing": ("kill", "killed"),
    "BackOff": ("backoff", "back-off restarting"), "OOMKilling": ("oom", "OOM kill on node"),
    "Evicted": ("kill", "evicted"), "Preempted": ("kill", "preempted"),
    "FailedMount": ("schedule", "volume mount failed"),
    "FailedAttachVolume": ("schedule", "volume attach failed"),
    "ScalingReplicaSet": ("rollout", "rollout"), "SuccessfulCreate": ("rollout", "pod created"),
    "SuccessfulDelete": ("rollout", "pod deleted"),
    "SuccessfulRescale": ("rollout", "autoscaler rescaled"),
}


def _event_label(reason: str, message: str, default: str) -> str:
    if reason == "Unhealthy":
        probe = message.split(" probe failed", 1)[0].strip().lower()
        return f"{probe} probe failed" if probe in ("liveness", "readiness", "startup") \
            else default
    if reason == "Killing":
        if "liveness" in message:
            return "killed: failed liveness probe"
        if "startup" in message:
            return "killed: failed startup probe"
        return "killed"
    if reason == "ScalingReplicaSet":
        return _short(message, 60)
    return default


def _events(ctx: ContainerContext) -> list[TimelineEvent]:
    out: list[TimelineEvent] = []
    subjects: list[tuple[str, str, str]] = [("Pod", ctx.pod_name,
                                             str(meta(ctx.pod).get("uid") or ""))]
    subjects += [(str(o.get("kind")), str(meta(o).get("name")), str(meta(o).get("uid") or ""))
                 for o in workload.owner_chain(ctx.snapshot, ctx.pod)]
    for kind, name, uid in subjects:
        for ev in ctx.snapshot.events_about(kind, ctx.namespace, name, uid):
            reason = str(ev.get("reason") or "")
            mapped = _EVENT_KINDS.get(reason)
            if mapped is None:
                continue
            message = str(ev.get("message") or ev.get("note") or "")
            seen = event_times(ev)
            first, last = parse_time(seen.first), parse_time(seen.last)
            if first is None:
                continue
            last = last or first
            count = seen.count
            label = _event_label(reason, message, mapped[1])
            if count > 1:
                label += f" (x{count})"
            skew = ctx.snapshot.clock_skew(seen.last)
            out.append(TimelineEvent(
                iso(first), mapped[0], label, f"event {reason} on {kind}/{name}{skew}: "
                f"{_short(message)}", until=iso(last) if last != first else None,
                count=count))
    return out


def _status_events(ctx: ContainerContext) -> list[TimelineEvent]:
    out: list[TimelineEvent] = []
    restarts = int(ctx.status.get("restartCount") or 0)
    state = ctx.status.get("state") or {}
    last = (ctx.status.get("lastState") or {}).get("terminated") or {}
    if last:
        started = parse_time(last.get("startedAt"))
        if started is not None:
            out.append(TimelineEvent(iso(started), "start", "previous run started",
                                     f"container {ctx.name} lastState.terminated.startedAt",
                                     container=ctx.name))
        finished = parse_time(last.get("finishedAt"))
        if finished is not None:
            reason, code = str(last.get("reason") or ""), last.get("exitCode")
            kind = "oom" if reason == "OOMKilled" else "kill" if code == 137 else "crash"
            out.append(TimelineEvent(iso(finished), kind,
                                     f"terminated: {reason or 'exit'} (exit {code})",
                                     f"container {ctx.name} lastState.terminated: reason "
                                     f"{reason}, exit code {code}", container=ctx.name))
    running = state.get("running") or state.get("terminated") or {}
    started = parse_time(running.get("startedAt"))
    if started is not None:
        what = "restarted" if restarts else "started"
        out.append(TimelineEvent(iso(started), "start", f"container {what}"
                                 + (f" (restart {restarts})" if restarts else ""),
                                 f"container {ctx.name} state startedAt", container=ctx.name))
    if state.get("terminated"):
        term = state["terminated"]
        finished = parse_time(term.get("finishedAt"))
        if finished is not None:
            reason, code = str(term.get("reason") or ""), term.get("exitCode")
            kind = "oom" if reason == "OOMKilled" else "crash"
            out.append(TimelineEvent(iso(finished), kind, f"terminated: {reason} (exit {code})",
                                     f"container {ctx.name} state.terminated", container=ctx.name))
    waiting = state.get("waiting") or {}
    if waiting.get("reason") == "CrashLoopBackOff":
        at = parse_time(ctx.snapshot.collected_at)
        if at is not None:
            why = _short(str(waiting.get("message") or ""))
            out.append(TimelineEvent(iso(at), "backoff", "waiting: CrashLoopBackOff",
                                     f"container {ctx.name}: {why}", container=ctx.name))
    return out


def _rollout(ctx: ContainerContext) -> list[TimelineEvent]:
    rs = workload.pod_replicaset(ctx.snapshot, ctx.pod)
    if rs is None or ctx.owner is None or ctx.owner[0] != "Deployment":
        return []
    out = []
    for other in workload.replicasets_of(ctx.snapshot, ctx.owner[1]):
        created = parse_time(meta(other).get("creationTimestamp"))
        if created is None:
            continue
        this = " (this pod's)" if meta(other).get("name") == meta(rs).get("name") else ""
        out.append(TimelineEvent(iso(created), "rollout",
                                 f"revision {workload.revision(other)}{this}",
                                 f"ReplicaSet {meta(other).get('name')} created"))
    return out


def _window_events(ctx: ContainerContext) -> list[TimelineEvent]:
    """From the Prometheus window: when requests waited, as one span."""
    telemetry, prom = ctx.telemetry, ctx.snapshot.prometheus
    if telemetry is None or prom is None:
        return []
    waiting = [(t, v) for t, v in telemetry.series.get("requests_waiting", []) if v >= 1]
    if not waiting:
        return []
    first, last = waiting[0][0], waiting[-1][0]
    peak = max(v for _, v in waiting)
    start = datetime.fromtimestamp(first, timezone.utc)
    end = datetime.fromtimestamp(last, timezone.utc)
    return [TimelineEvent(iso(start), "queue", f"requests waiting (up to {peak:g})",
                          f"{prom.label}: vllm:num_requests_waiting >= 1 from {iso(start)} "
                          f"to {iso(end)}", until=iso(end) if last > first else None)]


def pod_timeline(contexts: list[ContainerContext]) -> tuple[TimelineEvent, ...]:
    """Everything that happened to the pod, oldest first."""
    if not contexts:
        return ()
    ctx = contexts[0]
    out: list[TimelineEvent] = []
    created = parse_time(meta(ctx.pod).get("creationTimestamp"))
    if created is not None:
        out.append(TimelineEvent(iso(created), "pod", "pod created",
                                 f"pod {ctx.pod_name} creationTimestamp"))
    for cond in (ctx.pod.get("status") or {}).get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == "PodScheduled":
            when = parse_time(cond.get("lastTransitionTime"))
            if when is not None and str(cond.get("status")) == "True":
                out.append(TimelineEvent(iso(when), "pod", "scheduled",
                                         f"node {workload.pod_spec(ctx.pod).get('nodeName')}"))
    out += _events(ctx)
    out += _rollout(ctx)
    out += _window_events(ctx)
    for c in contexts:
        out += _status_events(c)
        anchors = _run_starts(c)
        for stream, rep in c.startup.items():
            out += _log_events(c, stream, rep, anchors[stream])
    # One entry per moment and label: events and the status often say the same thing.
    unique: dict[tuple[str, str], TimelineEvent] = {}
    for ev in out:
        unique.setdefault((ev.at, ev.label), ev)
    ordered = sorted(unique.values(), key=lambda e: (e.at, e.kind != "pod", e.label))
    return tuple(ordered[-_MAX_EVENTS:])


# --- the GPU memory budget --------------------------------------------------------

# Memory of the cards GKE names in its accelerator label, in MiB as nvidia-smi reports it:
# used when GPU feature discovery, DCGM and the log do not say (a nominal size).
_GKE_ACCELERATOR_MIB = {
    "nvidia-tesla-t4": 15360, "nvidia-l4": 23034, "nvidia-l40s": 46068,
    "nvidia-tesla-a100": 40960, "nvidia-a100-80gb": 81920, "nvidia-h100-80gb": 81559,
    "nvidia-h100-mega-80gb": 81559, "nvidia-h200-141gb": 143771,
}


def _card(ctx: ContainerContext) -> tuple[float, str] | None:
    mib = ctx.fact("gpu_memory_mib")
    if mib.value:
        return float(mib.value) / 1024, mib.evidence
    dcgm = ctx.fact("gpu_fb_total_mib")
    if dcgm.value:
        return float(dcgm.value) / 1024, dcgm.evidence
    for stream in (CURRENT, PREVIOUS):
        index = ctx.log(stream)
        result = index.result(CAPACITY) if index is not None else None
        if result is not None and result.first:
            hit = result.first[0]
            gib = float(next(g for g in hit.groups[1:] if g))
            return gib, (f"{'previous log' if stream == PREVIOUS else 'log'} ({ctx.name}) "
                         f"line {hit.line.number}: ...{hit.groups[0]}")
    labels = meta(ctx.node).get("labels") or {} if ctx.node is not None else {}
    accel = str(labels.get("cloud.google.com/gke-accelerator") or "")
    if accel in _GKE_ACCELERATOR_MIB:
        return _GKE_ACCELERATOR_MIB[accel] / 1024, (
            f"node {ctx.node_name} label cloud.google.com/gke-accelerator={accel}: the card's "
            f"nominal {_GKE_ACCELERATOR_MIB[accel]:,} MiB")
    return None


def _startup_value(ctx: ContainerContext, attr: str) -> tuple[Any, str]:
    for stream in (CURRENT, PREVIOUS):
        rep = ctx.startup.get(stream)
        value = getattr(rep, attr, None) if rep is not None else None
        if value is not None:
            return value, "previous log" if stream == PREVIOUS else "log"
    return None, ""


def gpu_budget(ctx: ContainerContext) -> GpuBudget | None:
    """One GPU of the container as vLLM divided it; None when the card's size is not known."""
    if not ctx.value("gpu_request"):
        return None
    card = _card(ctx)
    if card is None:
        return None
    total, total_source = card
    notes = [f"card {total:.2f} GiB: {total_source}"]
    gmu_fact = ctx.fact("gpu_memory_utilization")
    gmu = float(gmu_fact.value) if gmu_fact.known and gmu_fact.value is not None else None
    if gmu is not None:
        notes.append(f"vLLM's share {gmu:g}: {gmu_fact.evidence}")
    weights, where_w = _startup_value(ctx, "weights_gib")
    if weights is not None:
        notes.append(f"weights {weights:.2f} GiB ({where_w}: Model loading took ...)")
    kv, where_kv = _startup_value(ctx, "kv_cache_memory_gib")
    if kv is not None:
        notes.append(f"KV cache {kv:.2f} GiB ({where_kv}: Available KV cache memory)")
    share = total * gmu if gmu is not None else None
    other = None
    if share is not None and weights is not None and kv is not None:
        other = max(0.0, share - weights - max(kv, 0.0))
        notes.append(f"the rest of vLLM's share {other:.2f} GiB: activations, CUDA graphs and "
                     "non-torch memory")
    free = max(0.0, total - share) if share is not None else None
    tokens = ctx.fact("kv_cache_tokens").value
    mml = ctx.fact("max_model_len").value
    fit = float(tokens) / float(mml) if tokens and mml else None
    if fit is not None:
        notes.append(f"{tokens:,} KV cache tokens / --max-model-len {mml:,} = {fit:.2f} sequences")
    used = ctx.fact("gpu_fb_used_mib").value
    return GpuBudget(
        total_gib=round(total, 3), total_source=total_source, utilization=gmu,
        weights_gib=weights, kv_cache_gib=kv, other_gib=round(other, 3) if other is not None
        else None, free_gib=round(free, 3) if free is not None else None,
        kv_cache_tokens=int(tokens) if tokens else None,
        max_model_len=int(mml) if mml else None,
        sequences_fit=round(fit, 3) if fit is not None else None,
        dcgm_used_gib=round(float(used) / 1024, 3) if used else None, notes=tuple(notes))


_SERIES_UNITS = {"e2e_latency_p99": "seconds", "queue_time_p99": "seconds",
                 "requests_waiting": "requests", "requests_running": "requests"}


def window_series(ctx: ContainerContext) -> tuple[WindowSeries, ...]:
    telemetry = ctx.telemetry
    if telemetry is None:
        return ()
    return tuple(WindowSeries(name, _SERIES_UNITS.get(name, ""), tuple(points))
                 for name, points in sorted(telemetry.series.items()) if points)
