"""Facts about the vLLM engine: its effective flags and what it logged about itself."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from triage.facts import (
    LOG_QUERIES,
    ContainerContext,
    Measured,
    Unmeasurable,
    fact,
    stream_label,
)
from triage.kube import workload
from triage.logs import Hit, LogLine, Query, linetime
from triage.results import Location
from triage.snapshot import CURRENT, PREVIOUS, meta
from triage.vllm import wordings

_MAX_MODEL_LEN_LOG = LOG_QUERIES.add(Query(wordings.either("vllm_max_model_len_used",
                                                            "vllm_config_max_seq_len")))
_BATCHED_TOKENS_LOG = LOG_QUERIES.add(Query(wordings.regex("vllm_chunked_prefill_budget")))


def where(ctx: ContainerContext, stream: str, line: LogLine) -> str:
    return f"{stream_label(stream)} ({ctx.name}) line {line.number}: {line.message.strip()}"


def _last_log_match(ctx: ContainerContext, query: Query) -> tuple[Hit, str] | None:
    """The last line matching ``query``, from the current log first, then the previous one."""
    for stream in (CURRENT, PREVIOUS):
        index = ctx.log(stream)
        if index is not None:
            result = index.result(query)
            if result.count:
                return result.last[-1], stream
    return None


# The spellings a flag may have on a command line (KServe's runtime has its own).
_SPELLINGS = {"model": ("model", "model-id", "model-dir"), "max-model-len": ("max-model-len",
                                                                          "max-length")}


def flag_at(ctx: ContainerContext, flag: str) -> tuple[Location, ...]:
    """Where a flag is set: its token in args or command, its key in the --config
    ConfigMap; unset, the args it would be added to."""
    source = ctx.engine.sources.get(flag, "")
    if source.startswith("config") and ctx.engine.config_source is not None:
        cm, key = ctx.engine.config_source
        return (Location(cm, ("data", key)),)
    names = _SPELLINGS.get(flag, (flag,))
    words = [f"--{n}" for n in names] + [f"--{n.replace('-', '_')}" for n in names]
    for part in ("args", "command"):
        for j, token in enumerate(ctx.container.get(part) or []):
            text = str(token)
            if any(text == w or text.startswith(w + "=") or f"{w} " in text or f"{w}=" in text
                   for w in words):
                return (ctx.field(part, j),)
    if flag == "model" and ctx.engine.model:
        for part in ("args", "command"):
            for j, token in enumerate(ctx.container.get(part) or []):
                if ctx.engine.model in str(token):
                    return (ctx.field(part, j),)
    part = "args" if ctx.container.get("args") or not ctx.container.get("command") else "command"
    return (ctx.field(part),)


def _flag_known(ctx: ContainerContext, flag: str) -> None:
    why = ctx.engine.unknown(flag)
    if why:
        raise Unmeasurable(why)


def _logs_complete(ctx: ContainerContext) -> None:
    """A value searched for in the logs is absent only if every log could be read."""
    unread = ctx.logs_unread()
    if unread:
        raise Unmeasurable(unread[0])


def _parallel(name: str, flag: str, doc: str) -> None:
    @fact(name, unit="ranks", scope="container", doc=doc)
    def compute(ctx: ContainerContext) -> Measured:
        _flag_known(ctx, flag)
        return Measured(ctx.engine.integer(flag) or 1, ctx.engine.describe(flag),
                        flag_at(ctx, flag))


_parallel("tensor_parallel_size", "tensor-parallel-size",
          "--tensor-parallel-size (GPUs one model replica is split over; default 1)")
_parallel("pipeline_parallel_size", "pipeline-parallel-size",
          "--pipeline-parallel-size (pipeline stages; default 1)")


@fact("gpu_memory_utilization", unit="fraction", scope="container",
      doc="effective --gpu-memory-utilization (args, --config file, or vLLM's default 0.9)")
def gpu_memory_utilization(ctx: ContainerContext) -> Measured:
    _flag_known(ctx, "gpu-memory-utilization")
    value = ctx.engine.number("gpu-memory-utilization")
    desc = ctx.engine.describe("gpu-memory-utilization")
    if value is None:
        raise Unmeasurable(f"container {ctx.name}: {desc} is not a number vLLM would accept")
    return Measured(value, f"container {ctx.name}: {desc}",
                    flag_at(ctx, "gpu-memory-utilization"))


@fact("max_model_len_set", unit="bool", scope="container",
      doc="--max-model-len is set (args or --config file)")
def max_model_len_set(ctx: ContainerContext) -> Measured:
    _flag_known(ctx, "max-model-len")
    return Measured(ctx.engine.is_set("max-model-len"),
                    f"container {ctx.name}: {ctx.engine.describe('max-model-len')}",
                    flag_at(ctx, "max-model-len"))


@fact("max_model_len", unit="tokens", scope="container",
      doc="the context length served: --max-model-len, or the model's own as vLLM logged it")
def max_model_len(ctx: ContainerContext) -> Measured:
    _flag_known(ctx, "max-model-len")
    if ctx.engine.is_set("max-model-len"):
        return Measured(ctx.engine.integer("max-model-len"),
                        f"container {ctx.name}: {ctx.engine.describe('max-model-len')}",
                        flag_at(ctx, "max-model-len"))
    if ctx.snapshot.static is not None:
        # That the flag is unset is max_model_len_set's to say: said once in a finding.
        return Measured(None, "the context vLLM takes from the model's config.json is known "
                              f"only once it starts ({ctx.snapshot.static})",
                        flag_at(ctx, "max-model-len"))
    found = _last_log_match(ctx, _MAX_MODEL_LEN_LOG)
    if found is None:
        _logs_complete(ctx)
        return Measured(None, f"container {ctx.name}: --max-model-len unset and no log line says "
                              "which context length vLLM took from the model's config")
    hit, stream = found
    line = hit.line
    n = int(hit.groups[1] or hit.groups[2] or 0)
    snippet = line.message[max(0, hit.span[0] - 40):hit.span[1]].strip()
    return Measured(n, f"container {ctx.name}: --max-model-len unset, so vLLM serves the "
                       f"model's full context of {n:,} tokens ({stream_label(stream)} "
                       f"({ctx.name}) line {line.number}: ...{snippet})",
                    flag_at(ctx, "max-model-len"))


@fact("kv_cache_tokens", unit="tokens", scope="container",
      doc="tokens the KV cache holds, as vLLM logged at start-up (or GPU blocks x block size)")
def kv_cache_tokens(ctx: ContainerContext) -> Measured:
    for stream in (CURRENT, PREVIOUS):
        rep = ctx.startup.get(stream)
        if rep is None:
            continue
        label = stream_label(stream)
        if rep.kv_cache_tokens:
            line = rep.evidence.get("kv_cache_tokens")
            return Measured(rep.kv_cache_tokens,
                            f"vLLM's KV cache holds {rep.kv_cache_tokens:,} tokens ({label} "
                            f"({ctx.name}) line {line.number if line else '?'}: "
                            f"{line.message.strip() if line else ''})")
        if rep.gpu_blocks:
            block = ctx.engine.integer("block-size") or 16
            tokens = rep.gpu_blocks * block
            line = rep.evidence.get("gpu_blocks")
            return Measured(tokens, f"vLLM's KV cache holds {tokens:,} tokens: "
                                    f"{rep.gpu_blocks:,} GPU blocks x block size {block} ({label} "
                                    f"({ctx.name}) line {line.number if line else '?'}: "
                                    f"{line.message.strip() if line else ''})")
    config = ctx.metrics.cache_config if ctx.metrics is not None else {}
    blocks, size = _int(config.get("num_gpu_blocks")), _int(config.get("block_size"))
    if blocks and size:
        # vllm:cache_config_info on /metrics says the same when the logs do not reach back
        # to the start-up lines (a long-running server, a tail of the log).
        return Measured(blocks * size, f"vLLM's KV cache holds {blocks * size:,} tokens: "
                                       f"num_gpu_blocks {blocks:,} x block_size {size} "
                                       "(vllm:cache_config_info on /metrics)")
    _logs_complete(ctx)
    return Measured(None, f"container {ctx.name}: no KV cache size line in the logs read")


def _int(text: str | None) -> int | None:
    try:
        return int(float(text)) if text not in (None, "", "None") else None
    except (TypeError, ValueError):
        return None


# vLLM's periodic stats line, every 10 s while it serves (patterns/wordings.yaml's
# vllm_stats_line: V1 "Engine 000: Avg prompt throughput: ..., Running: 118 reqs, Waiting:
# 23 reqs, GPU KV cache usage: 99.8%, ...", V0 "... Running: 6 reqs, Swapped: 0 reqs,
# Pending: 0 reqs, GPU KV cache usage: 7.2%, ..."). The same query as the progress facts':
# those keep more of its lines (a line cut after "Running: N reqs" too), the series here
# reads the last STATS_LINES_KEPT whole ones.
STATS_LINES_KEPT = 12  # two minutes of them
_STATS_LOG = LOG_QUERIES.add(Query(wordings.regex("vllm_stats_line")), STATS_LINES_KEPT)
_STATS_QUEUE = wordings.regex("vllm_stats_queue")  # what follows "Running: N reqs"


# How old the last stats line may be to say what the server does now is the setting
# stats_fresh_seconds of patterns/checklist.yaml: vLLM prints one every 10 s while it
# serves, and V1 prints none while it is idle (loggers.py logs an idle tick at DEBUG), so
# a last line older than that says what it did then, not now.
FRESH_SETTING = "stats_fresh_seconds"


@dataclass(frozen=True)
class StatsSeries:
    """vLLM's last periodic stats lines: (running, waiting, KV usage) per tick, engines of
    one tick summed, with their times and how old the last one is at the collection."""

    ticks: list[tuple[float, float, float]]
    times: list[datetime | None]
    first: int  # line numbers in the current log
    last: int
    age_s: float | None  # the last tick to the collection time; None when not known
    time_source: str | None
    fresh_s: float  # how old the last tick may be to say what the server does now

    @property
    def fresh(self) -> bool:
        return self.age_s is not None and self.age_s <= self.fresh_s

    def span(self) -> str:
        """'22:50:09-22:50:29 UTC' (the date too when the last is over a day old)."""
        known = [t for t in self.times if t is not None]
        if not known:
            return "no time on the lines"
        a, b = known[0], known[-1]
        span = _clock(a) if a == b else f"{_clock(a)}-{_clock(b)}"
        day = b.strftime("%Y-%m-%d ") if self.age_s is None or self.age_s > 86400 else ""
        return f"{day}{span} UTC"

    def age(self) -> str:
        """'the last one 40 s before the collection'."""
        if self.age_s is None:
            return "their age at the collection not known"
        return f"the last one {age_text(self.age_s)} before the collection"


def _clock(when: datetime) -> str:
    return when.strftime("%H:%M:%S")


def age_text(secs: float) -> str:
    """40 -> '40 s', 2520 -> '42m', 15700 -> '4h21m'."""
    whole = round(secs)
    if whole < 120:
        return f"{whole} s"
    hours, minutes = divmod(whole // 60, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m"


def recent_stats(ctx: ContainerContext) -> StatsSeries | None:
    """The last two minutes of the running server's stats lines (at most 12 ticks)."""
    if "recent_stats" not in ctx.memo:  # the checklist asks again once the pod is settled
        ctx.memo["recent_stats"] = _recent_stats(ctx)
    found: StatsSeries | None = ctx.memo["recent_stats"]
    return found


def _recent_stats(ctx: ContainerContext) -> StatsSeries | None:
    index = ctx.log(CURRENT)
    if index is None:
        return None
    hits = [(h, queue) for h in index.result(_STATS_LOG, STATS_LINES_KEPT).last
            for queue in [_STATS_QUEUE.match(h.line.message, h.span[1])]
            if queue is not None][-STATS_LINES_KEPT:]  # whole lines, with the queue
    if not hits:
        return None
    state = ctx.status.get("state") or {}
    run = state.get("running") or state.get("terminated") or {}
    now = linetime.parse_time(ctx.snapshot.collected_at)
    anchor = linetime.parse_time(run.get("startedAt")) or now
    ticks: dict[str, list[float]] = {}
    times: dict[str, datetime | None] = {}
    source: str | None = None
    for hit, queue in hits:
        stamp = _stamp_of(hit.line.raw)
        running, waiting, usage = (float(str(g)) for g in (hit.groups[3], *queue.groups()))
        key = stamp or str(hit.line.number)
        tick = ticks.setdefault(key, [0.0, 0.0, 0.0])
        tick[0] += running
        tick[1] += waiting
        tick[2] = max(tick[2], usage / 100)
        found = linetime.line_time(hit.line.raw, anchor)
        if found is not None:
            times[key] = found[0]
            source = found[1]
        else:
            times.setdefault(key, None)
    last_time = times[list(ticks)[-1]]
    age = max(0.0, (now - last_time).total_seconds()) if now and last_time else None
    return StatsSeries([(t[0], t[1], t[2]) for t in ticks.values()], list(times.values()),
                       hits[0][0].line.number, hits[-1][0].line.number, age, source,
                       float(ctx.setting(FRESH_SETTING)))


def stats_source(ctx: ContainerContext, series: StatsSeries) -> str:
    """Where the series comes from, said once: lines, times and their age."""
    lines = (f"line {series.first}" if series.first == series.last
             else f"lines {series.first}-{series.last}")
    return (f"vLLM's last {len(series.ticks)} stats line(s), log ({ctx.name}) {lines}, "
            f"{series.span()}, {series.age()}")


def _series_text(values: list[float], as_percent: bool) -> str:
    return ", ".join(f"{100 * v:.1f}%" if as_percent else f"{v:g}" for v in values)


def _stale(series: StatsSeries) -> str:
    if series.age_s is None:
        return "the time of vLLM's last stats line is not known"
    return (f"vLLM's last stats line is {age_text(series.age_s)} before the collection "
            f"(over {age_text(series.fresh_s)})")


def stats_summary(ctx: ContainerContext) -> str | None:
    """One line: the queue and the KV cache of the last stats lines as a short series, its
    source and age once; a stale last line is said as such, never as "now"."""
    if "stats_summary" not in ctx.memo:
        ctx.memo["stats_summary"] = _stats_summary(ctx)
    found: str | None = ctx.memo["stats_summary"]
    return found


def _stats_summary(ctx: ContainerContext) -> str | None:
    series = recent_stats(ctx)
    if series is None:
        return None
    body = (f"running {_series_text([t[0] for t in series.ticks], False)}; waiting "
            f"{_series_text([t[1] for t in series.ticks], False)}; KV cache usage "
            f"{_series_text([t[2] for t in series.ticks], True)}")
    if series.fresh:
        return f"now ({stats_source(ctx, series)}): {body}"
    lines = (f"line {series.first}" if series.first == series.last
             else f"lines {series.first}-{series.last}")
    return (f"vLLM's stats lines do not say the queue now: {_stale(series)}; then (log "
            f"({ctx.name}) {lines}, "
            f"{series.span()}): {body}")


def _stamp_of(raw: str) -> str | None:
    """vLLM's 'MM-DD hh:mm:ss' on a log line."""
    m = linetime.VLLM_STAMP.search(raw)
    return m.group(0) if m else None


def _recent(ctx: ContainerContext, i: int, what: str, as_percent: bool = False) -> Measured:
    series = recent_stats(ctx)
    if series is None:
        if ctx.log(CURRENT) is None and ctx.logs_unread():
            raise Unmeasurable(ctx.logs_unread()[0])
        return Measured(None, f"container {ctx.name}: no vLLM stats line in the current log "
                              "(vLLM prints one every 10 s only while it serves)")
    values = [t[i] for t in series.ticks]
    text = f"{what} {_series_text(values, as_percent)} ({stats_source(ctx, series)})"
    if not series.fresh:  # what it did then is not what it does now
        return Measured(None, f"not known now: {_stale(series)}; {text}")
    return Measured(max(values), text)


@fact("recent_requests_waiting", unit="requests", scope="container",
      doc="requests waiting for a slot, the most in vLLM's last two minutes of periodic stats "
          "lines ('Waiting: N reqs', V0 'Pending: N reqs'); the queue now, without Prometheus; "
          "None when the last one is more than 5 minutes before the collection (the "
          "evidence gives the series and its age)")
def recent_requests_waiting(ctx: ContainerContext) -> Measured:
    return _recent(ctx, 1, "requests waiting")


@fact("recent_requests_running", unit="requests", scope="container",
      doc="requests in the running batch, the most in vLLM's last two minutes of periodic "
          "stats lines ('Running: N reqs'); None when the last one is more than 5 minutes "
          "before the collection")
def recent_requests_running(ctx: ContainerContext) -> Measured:
    return _recent(ctx, 0, "requests running")


@fact("recent_kv_cache_usage", unit="fraction", scope="container",
      doc="GPU KV cache usage (1 = full), the highest in vLLM's last two minutes of periodic "
          "stats lines ('GPU KV cache usage: 99.8%'); None when the last one is more than 5 "
          "minutes before the collection")
def recent_kv_cache_usage(ctx: ContainerContext) -> Measured:
    return _recent(ctx, 2, "KV cache usage", as_percent=True)


@fact("max_concurrency", unit="x", scope="container",
      doc="requests of the logged length that fit in the KV cache at once "
          "(vLLM's 'Maximum concurrency for N tokens per request')")
def max_concurrency(ctx: ContainerContext) -> Measured:
    for stream in (CURRENT, PREVIOUS):
        rep = ctx.startup.get(stream)
        if rep is not None and rep.max_concurrency is not None:
            line = rep.evidence.get("max_concurrency")
            at = where(ctx, stream, line) if line else f"{stream_label(stream)}"
            return Measured(rep.max_concurrency,
                            f"max concurrency {rep.max_concurrency:g}x at "
                            f"{rep.concurrency_tokens:,} tokens per request ({at})")
    _logs_complete(ctx)
    return Measured(None, f"container {ctx.name}: no 'Maximum concurrency' line in the logs read")


@fact("max_model_len_over_kv_cache", unit="ratio", scope="container",
      doc="max_model_len / kv_cache_tokens: how many KV caches one longest request needs")
def max_model_len_over_kv_cache(ctx: ContainerContext) -> Measured:
    mml, kv = ctx.fact("max_model_len"), ctx.fact("kv_cache_tokens")
    for f in (mml, kv):
        if f.unknown:
            raise Unmeasurable(f.unknown)
    if not mml.value or not kv.value:
        return Measured(None, "max model length or KV cache size not known")
    ratio = float(mml.value) / float(kv.value)
    return Measured(ratio, f"max model length {mml.value:,} tokens is {ratio:.2f}x the KV cache "
                           f"({kv.value:,} tokens)")


@fact("max_num_batched_tokens", unit="tokens", scope="container",
      doc="tokens one engine step may batch: --max-num-batched-tokens, or the chunked-prefill "
          "budget vLLM logged; None when neither")
def max_num_batched_tokens(ctx: ContainerContext) -> Measured:
    _flag_known(ctx, "max-num-batched-tokens")
    if ctx.engine.is_set("max-num-batched-tokens"):
        return Measured(ctx.engine.integer("max-num-batched-tokens"),
                        f"container {ctx.name}: {ctx.engine.describe('max-num-batched-tokens')}",
                        flag_at(ctx, "max-num-batched-tokens"))
    found = _last_log_match(ctx, _BATCHED_TOKENS_LOG)
    if found is not None:
        hit, stream = found
        value = int(hit.groups[1] or 0)
        return Measured(value, f"container {ctx.name}: --max-num-batched-tokens "
                               f"unset; vLLM chose {value:,} ({where(ctx, stream, hit.line)})")
    _logs_complete(ctx)
    return Measured(None, f"container {ctx.name}: --max-num-batched-tokens unset and vLLM "
                          "logged no chunked-prefill token budget (without chunked prefill a "
                          "step batches up to max(--max-model-len, 2048) prompt tokens)")


@fact("batched_tokens_over_prompt_p99", unit="ratio", scope="container",
      doc="max_num_batched_tokens / the P99 prompt length from /metrics")
def batched_tokens_over_prompt_p99(ctx: ContainerContext) -> Measured:
    budget = ctx.fact("max_num_batched_tokens")
    if budget.unknown:
        raise Unmeasurable(budget.unknown)
    failed = ctx.metrics_failure()
    if failed:
        raise Unmeasurable(failed)
    p99 = (ctx.metric_values() or {}).get("prompt_len_p99")
    if budget.value is None or not p99:
        return Measured(None, "token budget per step or prompt length P99 not known")
    ratio = float(budget.value) / p99
    return Measured(ratio, f"token budget per step {budget.value:,} is {ratio:.1f}x the P99 "
                           f"prompt length ({p99:,.0f} tokens, /metrics "
                           "vllm:request_prompt_tokens)")


@fact("observed_startup_seconds", unit="seconds", scope="container",
      doc="the longest start-up to ready that vLLM logged in the logs read")
def observed_startup_seconds(ctx: ContainerContext) -> Measured:
    if ctx.snapshot.static is not None:
        # Before a pod runs, as for a pod that never started: no start-up to measure.
        return Measured(None, f"no start-up observed: {ctx.snapshot.static}")
    best: tuple[float, str] | None = None
    for stream, rep in ctx.startup.items():
        seconds = rep.startup_seconds
        if seconds is None:
            continue
        if best is None or seconds > best[0]:
            best = (seconds, f"{stream_label(stream)} ({ctx.name}): {rep.startup_basis}")
    if best is None:
        _logs_complete(ctx)
        return Measured(None, "no completed start-up in the logs read")
    return Measured(best[0], f"vLLM started in {best[0]:.0f}s ({best[1]})")


@fact("weights_downloaded", unit="bool", scope="container",
      doc="the logs read show the weights being downloaded from the hub during this start")
def weights_downloaded(ctx: ContainerContext) -> Measured:
    for stream in (CURRENT, PREVIOUS):
        rep = ctx.startup.get(stream)
        if rep is not None and rep.downloaded:
            line = rep.evidence.get("download")
            at = where(ctx, stream, line) if line else f"{stream} log"
            restarts = int(ctx.status.get("restartCount") or 0)
            return Measured(True, f"the weights were downloaded from the hub during this start "
                                  f"({at}); pod created {meta(ctx.pod).get('creationTimestamp')}"
                                  f", container restarts {restarts}")
    _logs_complete(ctx)
    return Measured(False, f"container {ctx.name}: no weight download in the logs read")


def _hf_cache_dir(ctx: ContainerContext) -> tuple[str, str]:
    """Where huggingface_hub keeps the model: --download-dir, else the cache variables in
    the order huggingface_hub reads them, else its default under HOME. Unmeasurable when
    a variable that decides it comes from what was not read (an unread ConfigMap)."""
    if ctx.engine.is_set("download-dir"):
        return str(ctx.engine.raw("download-dir")), ctx.engine.describe("download-dir")

    def value(var: str) -> str | None:
        why = ctx.env.unknown(var)
        if why:
            raise Unmeasurable(f"where the model cache is depends on {var}: {why}")
        found = ctx.env.get(var)
        return found.value if found is not None and found.value else None

    def said(var: str, text: str) -> str:
        found = ctx.env.get(var)
        origin = f", {found.described}" if found is not None and found.origin != "literal" \
            else ""
        return f"env {var}={text}{origin}"

    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE"):
        found = value(var)
        if found:
            return found, said(var, found)
    home = value("HF_HOME")
    if home:
        return home.rstrip("/") + "/hub", said("HF_HOME", home)
    xdg = value("XDG_CACHE_HOME")
    if xdg:
        return xdg.rstrip("/") + "/huggingface/hub", said("XDG_CACHE_HOME", xdg)
    user_home = (value("HOME") or "/root").rstrip("/")
    return f"{user_home}/.cache/huggingface/hub", (
        "HF_HOME, HF_HUB_CACHE, TRANSFORMERS_CACHE and --download-dir unset: the Hugging Face "
        "default")


@fact("model_cache_volume", unit="text", scope="container",
      doc="what holds the Hugging Face cache of a hub model: pvc, emptyDir, ephemeral, "
          "hostPath, ..., container (its writable layer), or local (not a hub model)")
def model_cache_volume(ctx: ContainerContext) -> Measured:
    model = ctx.engine.model or ""
    if not model:
        _flag_known(ctx, "model")
        return Measured(None, f"container {ctx.name}: the served model is not known from its "
                              "args")
    if model.startswith(("/", "./", "file:")) or "://" in model:
        return Measured("local", f"container {ctx.name} serves {model} from a path or object "
                                 "store, not from the Hugging Face cache")
    path, why = _hf_cache_dir(ctx)
    found = workload.volume_for_path(ctx.pod, ctx.container, path)
    if found is None:
        return Measured("container", f"container {ctx.name} downloads {model} into {path} "
                                     f"({why}) and no volume is mounted there: the weights live "
                                     "in the container's writable layer",
                        (ctx.field("volumeMounts"),))
    mount, vol = found
    at = _volume_at(ctx, str(vol.get("name")))
    if vol.get("persistentVolumeClaim"):
        claim = vol["persistentVolumeClaim"].get("claimName")
        return Measured("pvc", f"container {ctx.name} caches {model} in {path} ({why}), on "
                               f"volume {vol.get('name')} = PersistentVolumeClaim {claim} "
                               f"mounted at {mount.get('mountPath')}", at)
    kind = next((k for k in vol if k != "name"), "unknown")
    return Measured(kind, f"container {ctx.name} caches {model} in {path} ({why}), on volume "
                          f"{vol.get('name')} ({kind}) mounted at {mount.get('mountPath')}", at)


def _volume_at(ctx: ContainerContext, name: str) -> tuple[Location, ...]:
    for j, vol in enumerate(workload.pod_spec(ctx.pod).get("volumes") or []):
        if isinstance(vol, dict) and vol.get("name") == name:
            return (ctx.pod_field("spec", "volumes", j),)
    return (ctx.field("volumeMounts"),)


@fact("served_model", unit="text", scope="container",
      doc="the model the engine loads: --model, the first arg of `vllm serve` (or of the "
          "vllm/vllm-openai image's own entrypoint), or the --config file; None when not found")
def served_model(ctx: ContainerContext) -> Measured:
    model = ctx.engine.model
    if not model:
        _flag_known(ctx, "model")
        return Measured(None, f"container {ctx.name}: the served model is not known from its "
                              "args")
    where = ctx.engine.sources.get("model", "args")
    revision = ctx.engine.raw("revision")
    return Measured(model, f"container {ctx.name} serves {model} (from {where})"
                           + (f", revision {revision}" if revision else "")
                           + f", image {ctx.container.get('image')}", flag_at(ctx, "model"))


# --- the vLLM release and LoRA adapters ---------------------------------------------------

_VERSION_LOG = LOG_QUERIES.add(Query(wordings.either("vllm_api_server_version",
                                                     "vllm_engine_init")))


def _release(major: str, minor: str) -> int:
    return int(major) * 100 + int(minor)


@fact("vllm_release", unit="release", scope="container",
      doc="vLLM's release as major x 100 + minor (0.10.1.1 is 10, 0.6.6 is 6, 1.2 is 102), "
          "for comparing versions: the version vLLM logged at start-up, else the image tag's "
          "(vX.Y...); None when neither says")
def vllm_release(ctx: ContainerContext) -> Measured:
    found = _last_log_match(ctx, _VERSION_LOG)
    if found is not None:
        hit, stream = found
        major, minor = next((hit.groups[i], hit.groups[i + 1]) for i in (1, 3)
                            if hit.groups[i] is not None)
        return Measured(_release(str(major), str(minor)),
                        f"vLLM {major}.{minor} ({where(ctx, stream, hit.line)})")
    tag = ctx.fact("image_tag").value
    parts = str(tag or "").lstrip("v").split(".")
    if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit():
        return Measured(_release(parts[0], parts[1]),
                        f"vLLM {parts[0]}.{parts[1]} (container {ctx.name} image tag {tag})",
                        (ctx.field("image"),))
    _logs_complete(ctx)
    return Measured(None, f"container {ctx.name}: no vLLM version in the logs read or the "
                          f"image tag ({tag or 'none'})")


@fact("max_lora_rank", unit="rank", scope="container",
      doc="--max-lora-rank as set (args or --config file), else vLLM's default 16: the "
          "largest LoRA adapter rank the engine loads")
def max_lora_rank(ctx: ContainerContext) -> Measured:
    _flag_known(ctx, "max-lora-rank")
    return Measured(ctx.engine.integer("max-lora-rank"),
                    f"container {ctx.name}: {ctx.engine.describe('max-lora-rank')}",
                    flag_at(ctx, "max-lora-rank"))


_LORA_RANK = LOG_QUERIES.add(Query(wordings.regex("vllm_lora_rank_too_large")))


@fact("lora_rank_needed", unit="rank", scope="container",
      doc="the rank of a LoRA adapter vLLM refused as above --max-lora-rank ('LoRA rank N is "
          "greater than max_lora_rank M'), the largest such in the logs read; None when none "
          "was refused")
def lora_rank_needed(ctx: ContainerContext) -> Measured:
    best: tuple[int, str] | None = None
    for stream in (PREVIOUS, CURRENT):
        index = ctx.log(stream)
        if index is None:
            continue
        result = index.result(_LORA_RANK, 8)
        for hit in result.last:
            rank = int(str(hit.groups[1]))
            if best is None or rank > best[0]:
                best = (rank, where(ctx, stream, hit.line))
    if best is None:
        _logs_complete(ctx)
        return Measured(None, f"container {ctx.name}: no LoRA adapter refused for its rank in "
                              "the logs read")
    return Measured(best[0], f"LoRA rank {best[0]} refused: {best[1]}")


@fact("compilation_config", unit="text", scope="container",
      doc="--compilation-config as set (args or --config file): vLLM's torch.compile settings "
          "(level or mode, backend, passes, CUDA graph sizes); None when unset (vLLM's "
          "default for its version)")
def compilation_config(ctx: ContainerContext) -> Measured:
    _flag_known(ctx, "compilation-config")
    value = ctx.engine.raw("compilation-config")
    return Measured(value, f"container {ctx.name}: {ctx.engine.describe('compilation-config')}",
                    flag_at(ctx, "compilation-config"))


@fact("quantization", unit="text", scope="container",
      doc="--quantization as set (args or --config file); None when unset (vLLM reads the "
          "method from the checkpoint's quantization_config)")
def quantization(ctx: ContainerContext) -> Measured:
    _flag_known(ctx, "quantization")
    return Measured(ctx.engine.raw("quantization"),
                    f"container {ctx.name}: {ctx.engine.describe('quantization')}",
                    flag_at(ctx, "quantization"))
