"""vLLM's Prometheus ``/metrics``, parsed with prometheus_client's own parser.

Both namings are read: V1 (``vllm:kv_cache_usage_perc``,
``vllm:inter_token_latency_seconds``) and V0 (``vllm:gpu_cache_usage_perc``,
``vllm:time_per_output_token_seconds``). Quantiles come from histogram
buckets the way Prometheus' ``histogram_quantile`` computes them. One scrape
holds the distribution since the process started; the report says so.

``METRICS`` names what a ``metric:`` leaf may use. The names are
source-aware: with ``--prometheus`` each is measured over the window
(quantiles over ``rate()``, gauges as their mean, counters as their increase
in the window), else from the one scrape (since the server started).
``*_max`` names are the highest gauge value in the window (the scrape's own
value without one), ``*_per_s`` names are counter rates and exist only with
the window.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

# Logical name -> exposed names, newest first.
GAUGES = {
    "requests_running": ("vllm:num_requests_running",),
    "requests_waiting": ("vllm:num_requests_waiting",),
    "kv_cache_usage": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
}
COUNTERS = {
    "preemptions": ("vllm:num_preemptions",),
    "requests_finished": ("vllm:request_success",),
    "prompt_tokens": ("vllm:prompt_tokens",),
    "generation_tokens": ("vllm:generation_tokens",),
}
HISTOGRAMS = {
    "e2e_latency": ("vllm:e2e_request_latency_seconds",),
    "ttft": ("vllm:time_to_first_token_seconds",),
    "itl": ("vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds",
            "vllm:request_time_per_output_token_seconds"),
    "queue_time": ("vllm:request_queue_time_seconds",),
    "prompt_len": ("vllm:request_prompt_tokens",),
}

# vLLM metrics renamed or removed between versions (shared reference section 9: 0.6.6 V0,
# 0.10.1.1 and 0.33.0 V1): old exposed name -> what replaced it, None when nothing did. An
# autoscaler or dashboard still reading the old name reads an empty series.
SUCCESSORS: dict[str, str | None] = {
    "vllm:gpu_cache_usage_perc": "vllm:kv_cache_usage_perc",
    "vllm:time_per_output_token_seconds": "vllm:inter_token_latency_seconds",
    "vllm:time_in_queue_requests": "vllm:request_queue_time_seconds",
    "vllm:gpu_prefix_cache_queries": "vllm:prefix_cache_queries",
    "vllm:gpu_prefix_cache_hits": "vllm:prefix_cache_hits",
    "vllm:num_requests_swapped": None,
    "vllm:cpu_cache_usage_perc": None,
    "vllm:gpu_prefix_cache_hit_rate": None,
    "vllm:avg_prompt_throughput_toks_per_s": "vllm:prompt_tokens_total",
    "vllm:avg_generation_throughput_toks_per_s": "vllm:generation_tokens_total",
}


def series_key(name: str) -> str:
    """A series name as Prometheus adapters and PromQL may spell it, made comparable:
    ':' as '_' (prometheus-adapter's default rename), without the suffixes a counter or
    histogram adds (_total, _bucket, _sum, _count, _created)."""
    key = name.replace(":", "_")
    for suffix in ("_total", "_bucket", "_sum", "_count", "_created"):
        if key.endswith(suffix):
            return key[:-len(suffix)]
    return key


# What each logical name measures, for `metric:` leaves and `vllm-triage patterns --facts`.
_GAUGE = "gauge: the mean over the window, or the scrape's value"
_COUNTER = "counter: in the window, or since the server started"
_MEANING = {
    "requests_running": ("requests", f"requests in the running batch ({_GAUGE}; summed over "
                                     "engines)"),
    "requests_waiting": ("requests", f"requests waiting for a slot ({_GAUGE}; summed over "
                                     "engines)"),
    "kv_cache_usage": ("fraction", f"fraction of the KV cache in use, 1 = full ({_GAUGE}; max "
                                   "over engines)"),
    "preemptions": ("requests", f"preemptions ({_COUNTER})"),
    "requests_finished": ("requests", f"requests finished ({_COUNTER})"),
    "prompt_tokens": ("tokens", f"prompt tokens processed ({_COUNTER})"),
    "generation_tokens": ("tokens", f"tokens generated ({_COUNTER})"),
    "e2e_latency": ("seconds", "end-to-end request latency"),
    "ttft": ("seconds", "time to first token"),
    "itl": ("seconds", "inter-token latency (time per output token)"),
    "queue_time": ("seconds", "time a request waited in the queue"),
    "prompt_len": ("tokens", "prompt length"),
}


def _registry() -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    for name in (*GAUGES, *COUNTERS):
        unit, doc = _MEANING[name]
        exposed = (GAUGES | COUNTERS)[name]
        out[name] = (unit, f"{doc}; {' or '.join(exposed)}")
    for name, exposed in HISTOGRAMS.items():
        unit, doc = _MEANING[name]
        for label, q in (("p50", "median"), ("p90", "90th percentile"),
                         ("p99", "99th percentile")):
            out[f"{name}_{label}"] = (unit, f"{doc}, {q} (histogram_quantile over "
                                            f"{' or '.join(exposed)})")
        out[f"{name}_count"] = ("observations", f"{doc}: observations in the histogram")
        out[f"{name}_mean"] = (unit, f"{doc}, mean (sum / count)")
    out["e2e_latency_p99_over_p50"] = ("ratio", "e2e latency P99 / P50: how long the tail is")
    out["ttft_p99_over_p50"] = ("ratio", "time to first token P99 / P50")
    for name in GAUGES:
        unit, _ = _MEANING[name]
        out[f"{name}_max"] = (unit, f"{name}: the highest value in the window (the scrape's "
                                    "value without one)")
    for name, (unit, doc) in WINDOW_RATES.items():
        out[name] = (unit, f"{doc}, over the window (Prometheus only)")
    return out


# Counter rates, measured only over a Prometheus window: name -> (unit, meaning).
WINDOW_RATES = {
    "preemptions_per_s": ("per second", "preemptions per second (vllm:num_preemptions_total)"),
    "requests_per_s": ("per second", "requests finished per second "
                                     "(vllm:request_success_total)"),
    "requests_aborted_per_s": ("per second", "requests aborted per second (finished_reason "
                                             "abort: the client gave up or timed out)"),
    "request_errors_per_s": ("per second", "HTTP 5xx answers per second (http_requests_total)"),
    "prompt_tokens_per_s": ("per second", "prompt tokens per second"),
    "generation_tokens_per_s": ("per second", "generated tokens per second"),
}


# Every name a `metric:` leaf may use: name -> (unit, what it measures).
METRICS: dict[str, tuple[str, str]] = _registry()

# How people call them in evidence.
_HUMAN = {"e2e_latency": "e2e latency", "ttft": "time to first token",
          "itl": "inter-token latency", "queue_time": "queue time",
          "prompt_len": "prompt length", "requests_running": "requests running",
          "requests_waiting": "requests waiting", "kv_cache_usage": "KV cache usage",
          "preemptions": "preemptions", "requests_finished": "requests finished",
          "prompt_tokens": "prompt tokens", "generation_tokens": "generated tokens"}
_SUFFIX = {"p50": "P50", "p90": "P90", "p99": "P99", "mean": "mean", "max": "max"}


def human_name(name: str) -> str:
    """'e2e_latency_p99' -> 'e2e latency P99', 'requests_waiting_max' -> 'requests
    waiting max', 'e2e_latency_p99_over_p50' -> 'e2e latency P99/P50'."""
    if name.endswith("_p99_over_p50"):
        return f"{_HUMAN.get(name.removesuffix('_p99_over_p50'), name)} P99/P50"
    if name in WINDOW_RATES:
        return WINDOW_RATES[name][1].split(" (", 1)[0]
    base, _, suffix = name.rpartition("_")
    if base in _HUMAN and suffix == "count":
        return f"requests in the {_HUMAN[base]} histogram"
    if base in _HUMAN and suffix in _SUFFIX:
        return f"{_HUMAN[base]} {_SUFFIX[suffix]}"
    return _HUMAN.get(name, name.replace("_", " "))


def with_unit(name: str, value: float) -> str:
    """A metric's value the way people write it: 45.8 s, 230 ms, 99.8%, 2.3/s, 22.9x."""
    unit = METRICS.get(name, ("", ""))[0]
    if unit == "seconds":
        return f"{value * 1000:.3g} ms" if 0 < value < 1 else f"{value:.3g} s"
    if unit == "fraction":
        return f"{100 * value:.1f}%"
    if unit == "per second":
        return f"{value:.3g}/s"
    if unit == "ratio":
        return f"{value:.3g}x"
    if unit == "tokens":
        return f"{value:,.0f} tokens"
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:.4g}"


def describe(name: str, value: float) -> str:
    """'e2e latency P99 45.8 s'."""
    return f"{human_name(name)} {with_unit(name, value)}"


@dataclass
class Histogram:
    """A Prometheus histogram: cumulative buckets, sum and count."""

    buckets: dict[float, float] = field(default_factory=dict)  # le -> cumulative count
    total: float = 0.0
    count: float = 0.0

    @property
    def observed(self) -> float:
        """Observations, from _count or else the largest cumulative bucket."""
        finite = [v for v in self.buckets.values() if math.isfinite(v)]
        return self.count if self.count else max(finite, default=0.0)

    def quantile(self, q: float) -> float | None:
        return histogram_quantile(q, sorted(self.buckets.items()))

    @property
    def mean(self) -> float | None:
        return self.total / self.count if self.count else None


def histogram_quantile(q: float, buckets: list[tuple[float, float]]) -> float | None:
    """Prometheus' histogram_quantile over (upper bound, cumulative count) pairs."""
    if not buckets or not 0 <= q <= 1 or buckets[-1][0] != math.inf:
        return None
    total = buckets[-1][1]
    if total <= 0:
        return None
    rank = q * total
    prev_bound, prev_count = 0.0, 0.0
    for i, (bound, count) in enumerate(buckets):
        if count >= rank:
            if bound == math.inf:
                # Prometheus returns the highest finite bound for the +Inf bucket.
                return buckets[i - 1][0] if i > 0 else None
            if i == 0 and bound <= 0:
                return bound
            in_bucket = count - prev_count
            if in_bucket <= 0:
                return bound
            return prev_bound + (bound - prev_bound) * (rank - prev_count) / in_bucket
        prev_bound, prev_count = bound, count
    return None


@dataclass
class MetricsView:
    """The vLLM metrics of one pod, summed over engines, per model name."""

    models: list[str] = field(default_factory=list)
    gauges: dict[str, float] = field(default_factory=dict)
    counters: dict[str, float] = field(default_factory=dict)
    histograms: dict[str, Histogram] = field(default_factory=dict)
    exposed: dict[str, str] = field(default_factory=dict)  # logical -> exposed name used
    cache_config: dict[str, str] = field(default_factory=dict)
    # Every vLLM sample name on the page (vllm:num_requests_waiting,
    # vllm:prompt_tokens_total, ..._bucket): what an autoscaler's query can find.
    names: set[str] = field(default_factory=set)
    error: str | None = None
    # Derived names that cannot be computed, and why (no +Inf bucket, a NaN or Inf value).
    _problems: dict[str, str] = field(default_factory=dict, repr=False, compare=False)
    _derived: dict[str, float] | None = field(default=None, repr=False, compare=False)

    def quantile(self, name: str, q: float) -> float | None:
        h = self.histograms.get(name)
        return h.quantile(q) if h else None

    def problems(self) -> dict[str, str]:
        """Derived names that could not be computed, and why; never a silent absence."""
        self.derived()
        return dict(self._problems)

    def derived(self) -> dict[str, float]:
        """Flat numbers for ``metric:`` pattern leaves and the checklist (computed once)."""
        if self._derived is None:
            self._derived = self._derive()
        return dict(self._derived)

    def _derive(self) -> dict[str, float]:
        out = dict(self.gauges)
        # One sample is its own maximum: *_max names read the same in both modes.
        out.update({f"{name}_max": value for name, value in self.gauges.items()})
        out.update(self.counters)
        for name, h in self.histograms.items():
            why = None
            bad = next(((le, v) for le, v in h.buckets.items()
                        if math.isnan(le) or not math.isfinite(v)), None)
            if bad is not None:
                # histogram_quantile over a NaN count silently finds no bucket: never read
                # as "no quantile", which the steps would take for no requests.
                le, count = bad
                why = (f"{self.exposed.get(name, name)} has a bucket with no number for its "
                       "bound (le)" if math.isnan(le) else
                       f"{self.exposed.get(name, name)} bucket le=\"{_bound(le)}\" is "
                       f"{_non_number(count)}") + ", so its quantiles cannot be computed"
            elif h.buckets and math.inf not in h.buckets and h.observed > 0:
                why = (f"{self.exposed.get(name, name)} has no +Inf bucket (le=\"+Inf\"), so its "
                       f"quantiles cannot be computed ({h.observed:,.0f} observations)")
            for label, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99)):
                v = h.quantile(q) if bad is None else None
                if v is not None:
                    out[f"{name}_{label}"] = v
                elif why:
                    self._problems.setdefault(f"{name}_{label}", why)
            out[f"{name}_count"] = h.count
            if h.mean is not None:
                out[f"{name}_mean"] = h.mean
        for name, value in list(out.items()):
            if not math.isfinite(value):  # named, never compared as a number
                logical = next((k for k in self.exposed if name == k or name.startswith(
                    k + "_")), name)
                self._problems.setdefault(name, f"{self.exposed.get(logical, name)} ({name}) "
                                                f"is {_non_number(value)}")
                del out[name]
        p50, p99 = out.get("e2e_latency_p50"), out.get("e2e_latency_p99")
        if p50 and p99 is not None:
            out["e2e_latency_p99_over_p50"] = p99 / p50
        t50, t99 = out.get("ttft_p50"), out.get("ttft_p99")
        if t50 and t99 is not None:
            out["ttft_p99_over_p50"] = t99 / t50
        return out


def _non_number(value: float) -> str:
    return "NaN" if math.isnan(value) else "+Inf" if value > 0 else "-Inf"


def _bound(le: float) -> str:
    return "+Inf" if le == math.inf else f"{le:g}"


def _sample_text(name: str, labels: Mapping[str, str]) -> str:
    inner = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    return f"{name}{{{inner}}}" if inner else name


def _of_sample(name: str) -> str | None:
    """The logical gauge, counter or histogram a sample belongs to."""
    for suffix in ("", "_total", "_created", "_bucket", "_sum", "_count"):
        if suffix and not name.endswith(suffix):
            continue
        base = name.removesuffix(suffix) if suffix else name
        found = _logical(base, GAUGES) or _logical(base, COUNTERS) or \
            _logical(base, HISTOGRAMS)
        if found:
            return found
    return None


def _derived_names(logical: str) -> list[str]:
    """The METRICS names one logical gauge, counter or histogram gives."""
    if logical in HISTOGRAMS:
        return [f"{logical}_{s}" for s in ("p50", "p90", "p99", "count", "mean")]
    if logical in GAUGES:
        return [logical, f"{logical}_max"]
    return [logical]


def _logical(name: str, table: Mapping[str, tuple[str, ...]]) -> str | None:
    for logical, names in table.items():
        if name in names:
            return logical
    return None


def parse_metrics(text: str) -> MetricsView:
    # Imported here: a scan of crash-looping pods often has no /metrics to parse.
    from prometheus_client.parser import text_string_to_metric_families

    view = MetricsView()
    models: set[str] = set()
    try:
        families = list(text_string_to_metric_families(text))
    except (ValueError, TypeError, IndexError) as exc:
        view.error = f"malformed Prometheus text: {exc}"
        return view
    seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    twice: dict[str, str] = {}  # logical name -> a sample that came twice
    for fam in families:
        if not fam.name.startswith("vllm:"):
            continue
        for sample in fam.samples:
            view.names.add(sample.name)
            key = (sample.name, tuple(sorted(sample.labels.items())))
            logical = _of_sample(sample.name)
            if key in seen and logical is not None:
                twice.setdefault(logical, _sample_text(sample.name, sample.labels))
            seen.add(key)
        if fam.name == "vllm:cache_config_info":
            for sample in fam.samples:
                view.cache_config.update({k: str(v) for k, v in sample.labels.items()})
            continue
        for sample in fam.samples:
            if "model_name" in sample.labels:
                models.add(sample.labels["model_name"])
        gauge = _logical(fam.name, GAUGES)
        # A counter's samples end in _total; a page the parser could not group (a sample
        # repeated) gives each its own family, named so.
        counter = _logical(fam.name, COUNTERS) or _logical(fam.name.removesuffix("_total"),
                                                           COUNTERS)
        hist = _logical(fam.name, HISTOGRAMS)
        if gauge and (gauge not in view.exposed or view.exposed[gauge] == fam.name):
            view.exposed[gauge] = fam.name
            values = [s.value for s in fam.samples if s.name == fam.name]
            if values:
                view.gauges[gauge] = max(values) if gauge == "kv_cache_usage" else sum(values)
        elif counter:
            view.exposed[counter] = fam.name
            total = sum(s.value for s in fam.samples if s.name.endswith("_total")
                        or s.name == fam.name)
            view.counters[counter] = view.counters.get(counter, 0.0) + total
        elif hist and (hist not in view.exposed or view.exposed[hist] == fam.name):
            view.exposed[hist] = fam.name
            h = view.histograms.setdefault(hist, Histogram())
            for s in fam.samples:
                if s.name.endswith("_bucket"):
                    try:
                        le = float(s.labels.get("le", "nan"))
                    except ValueError:
                        le = math.nan
                    h.buckets[le] = h.buckets.get(le, 0.0) + s.value
                elif s.name.endswith("_sum"):
                    h.total += s.value
                elif s.name.endswith("_count"):
                    h.count += s.value
    # The same series twice in one page: Prometheus rejects such a scrape ("duplicate
    # sample"); summed as if they were two engines they moved a P99 from 4.98 s to 2.21 s.
    # That metric is unknown, named, never read.
    for logical, repeated in twice.items():
        view.gauges.pop(logical, None)
        view.counters.pop(logical, None)
        view.histograms.pop(logical, None)
        for name in _derived_names(logical):
            view._problems[name] = (f"{view.exposed.get(logical, logical)} has the sample "
                                    f"{repeated} twice in one page (Prometheus rejects such a "
                                    "scrape), so it is not read")
    view.models = sorted(models)
    return view
