"""What vLLM reports about itself while starting: capacity, load time, readiness.

These lines are measurements, not failures, so they are parsed into numbers
here rather than matched by finding patterns. The texts, V0 and V1 wordings
both, are ``patterns/wordings.yaml``'s, with their sources.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import regex

from triage.logs import LogIndex, LogLine, Query, linetime, queries_of
from triage.vllm import wordings

# The wordings of a start-up's progress, in the order a start prints them (the last one
# seen is where it got to; the cuda_oom_phase fact reads which one it was).
LOADING = ("vllm_shard_progress", "vllm_runai_loading", "vllm_load_start", "hub_downloading",
           "vllm_weights_load_time", "vllm_cuda_graph_capture", "vllm_torch_compile",
           "vllm_memory_profiling")


def _n(text: str) -> float:
    return float(text.replace(",", ""))


# What each number is read from: the wordings of patterns/wordings.yaml, by name.
_RULES: list[tuple[str, regex.Pattern[str]]] = [
    ("kv_cache_tokens", wordings.regex("vllm_kv_cache_size")),
    ("max_concurrency", wordings.regex("vllm_max_concurrency")),
    ("gpu_blocks", wordings.regex("vllm_gpu_blocks")),
    ("kv_cache_memory_gib", wordings.regex("vllm_available_kv_cache_memory")),
    ("weights_seconds", wordings.regex("vllm_weights_load_time")),
    ("model_load", wordings.regex("vllm_model_loading_took")),
    ("model_load_v0", wordings.regex("vllm_v0_model_weights_took")),
    ("init_engine_seconds", wordings.regex("vllm_init_engine_took")),
    ("ready", wordings.regex("vllm_server_ready")),
    # The last of these is where a start that never became ready got to.
    ("loading", wordings.either(*LOADING)),
    ("download", wordings.either("hub_download_progress", "hub_file_progress")),
]


@dataclass
class StartupReport:
    """Numbers vLLM printed in one log stream; None where it did not say."""

    kv_cache_tokens: int | None = None
    max_concurrency: float | None = None
    concurrency_tokens: int | None = None
    gpu_blocks: int | None = None
    kv_cache_memory_gib: float | None = None
    weights_gib: float | None = None
    load_seconds: float | None = None  # weights loading
    init_engine_seconds: float | None = None
    ready: bool = False
    ready_line: LogLine | None = None
    last_progress: LogLine | None = None  # last loading/progress line seen
    downloaded: bool = False  # the weights were fetched during this start
    evidence: dict[str, LogLine] = field(default_factory=dict)
    # The nearest line that says when, at or before each evidence line.
    stamped: dict[str, LogLine | None] = field(default_factory=dict)

    first_stamp: float | None = None  # seconds into the year of the first stamped line
    first_line: LogLine | None = None
    ready_stamp: float | None = None

    def _stamped_span(self) -> float | None:
        if self.ready and self.first_stamp is not None and self.ready_stamp is not None:
            span = self.ready_stamp - self.first_stamp
            return span if span >= 0 else None
        return None

    @property
    def startup_basis(self) -> str:
        """How startup_seconds was measured, in words a person can check."""
        if self._stamped_span() is not None and self.first_line and self.ready_line:
            return (f"first line {self.first_line.number} to ready line "
                    f"{self.ready_line.number} ({self.ready_line.message.strip()[:80]})")
        return "weights load + engine init as vLLM logged them"

    @property
    def startup_seconds(self) -> float | None:
        """How long the server took from its first log line to ready; None if it never was."""
        if not self.ready:
            return None  # a load cut short says nothing about how long a start takes
        span = self._stamped_span()
        if span is not None:
            return span
        if self.init_engine_seconds is not None and self.load_seconds is not None:
            return self.init_engine_seconds + self.load_seconds
        return self.init_engine_seconds or self.load_seconds


# The queries a scan must answer for read_startup: every rule's first and last line.
QUERIES = queries_of((rx, None, 1) for _, rx in _RULES)


def read_startup(index: LogIndex) -> StartupReport:
    """The numbers vLLM printed in one log; the last value of each wins, as vLLM's own
    later lines supersede its earlier ones within a start."""
    rep = StartupReport()
    found = {name: index.result(Query(rx)) for name, rx in _RULES}
    rep.first_line = next((ln for ln in index.head if _stamp(ln.raw) is not None), None)
    rep.first_stamp = _stamp(rep.first_line.raw) if rep.first_line else None
    for name, result in found.items():
        if not result.count:
            continue
        last = result.last[-1]
        g = last.groups
        if name == "kv_cache_tokens":
            rep.kv_cache_tokens = int(_n(str(g[1])))
        elif name == "max_concurrency":
            rep.concurrency_tokens = int(_n(str(g[1])))
            rep.max_concurrency = _n(str(g[2]))
        elif name == "gpu_blocks":
            rep.gpu_blocks = int(_n(str(g[1])))
        elif name == "kv_cache_memory_gib":
            rep.kv_cache_memory_gib = float(str(g[1]))
        elif name == "weights_seconds":
            rep.load_seconds = max(rep.load_seconds or 0.0, float(str(g[1])))
        elif name == "model_load":
            rep.weights_gib = float(str(g[1]))
            rep.load_seconds = max(rep.load_seconds or 0.0, float(str(g[2])))
        elif name == "model_load_v0":
            rep.weights_gib = float(str(g[1]))
        elif name == "init_engine_seconds":
            rep.init_engine_seconds = float(str(g[1]))
        elif name == "ready":
            first = result.first[0]
            rep.ready, rep.ready_line = True, first.line
            # the ready line, or the first stamped line after it (uvicorn's have none)
            rep.ready_stamp = next((s for s in (_stamp(ln.raw) for ln in
                                                [first.line, *first.after]) if s is not None),
                                   None)
        elif name == "loading":
            rep.last_progress = last.line
        elif name == "download":
            rep.downloaded = True
        hit = result.first[0] if name in ("ready", "download") else last
        rep.evidence[name] = hit.line
        rep.stamped[name] = hit.stamped
    return rep


def _stamp(raw: str) -> float | None:
    """Seconds of a line's time: the kubelet's (epoch seconds) when the log was read with
    timestamps=true, else vLLM's own stamp (seconds into the year); a log has one or the
    other on every stamped line, so differences are taken within one kind."""
    kubelet = linetime.kubelet_time(raw)
    if kubelet is not None:
        return kubelet.timestamp()
    m = linetime.VLLM_STAMP.search(raw[:120])
    if not m:
        return None
    month, day, hour, minute, second = (int(g) for g in m.groups())
    if not (1 <= month <= 12 and 1 <= day <= 31 and hour < 24 and minute < 60 and second < 61):
        return None
    # Month lengths do not matter for a start-up that spans minutes; 31-day
    # months keep the arithmetic monotonic across a month boundary.
    return ((((month - 1) * 31 + day - 1) * 24 + hour) * 60 + minute) * 60.0 + second
