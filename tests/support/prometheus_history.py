"""Recorded metric history for fixtures that are scanned with a real Prometheus.

A fixture's ``incident.yaml`` names a scenario here (``prometheus.history``).
The scenario is a deterministic model of the server's traffic over days; it
gives both the OpenMetrics history that ``promtool tsdb create-blocks-from
openmetrics`` backfills into a real Prometheus, and the one ``/metrics``
scrape taken at the collection time (the fixture's ``metrics/`` file, which
a test keeps equal to this). Series carry the labels a kube-prometheus-stack
PodMonitor attaches (namespace, pod, container, instance, job); DCGM exporter
series are scraped without honorLabels (exported_namespace, exported_pod),
kube-state-metrics series with them, as those charts do by default.

Latencies follow log-normal distributions per phase; bucket counts are the
expected counts, rounded, so Prometheus' histogram_quantile sees real
vLLM bucket boundaries (vllm/v1/metrics/loggers.py).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime

E2E_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0,
               60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0)
TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0,
                7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)
ITL_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0,
               7.5, 10.0, 20.0, 40.0, 80.0)
PROMPT_BUCKETS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000)


def _lognormal_cdf(x: float, median: float, sigma: float) -> float:
    if x <= 0:
        return 0.0
    return 0.5 * (1 + math.erf(math.log(x / median) / (sigma * math.sqrt(2))))


@dataclass(frozen=True)
class Phase:
    """What one stretch of time looks like: traffic, latencies and gauges."""

    requests_per_s: float
    e2e: tuple[float, float]  # log-normal (median seconds, sigma)
    ttft: tuple[float, float]
    queue: tuple[float, float]
    itl: tuple[float, float]
    waiting: Callable[[float], float]  # seconds into the phase -> requests waiting
    running: float
    kv_cache: float
    gpu_util: float
    aborted_per_s: float = 0.0


PROMPT = (400.0, 0.6)
TOKENS_PER_REQUEST = 180.0


@dataclass(frozen=True)
class Scenario:
    namespace: str
    pod: str
    model: str
    end: float  # the collection time, unix seconds
    days: float
    phases: tuple[tuple[float, Phase], ...]  # (seconds before end the phase starts, phase)
    coarse_step: float = 600.0
    fine_step: float = 15.0
    fine_hours: float = 3.0
    gpu_uuid: str = "GPU-5c1e2f3a-8b7d-4e6f-9a0b-1c2d3e4f5a6b"
    node: str = "gke-inference-l4-pool-6f1d2a9c-q8wz"
    fb_total_mib: float = 23034.0
    fb_used_mib: float = 21360.0
    # The vllm container's working set (cAdvisor) at a time, in bytes; None: no series.
    memory: Callable[[float], float] | None = None
    container_started: float | None = None  # no series before the container's start
    instance: str = "10.48.3.57:8000"
    job: str = "llm/vllm-qwen"

    def grid(self) -> list[float]:
        start = self.end - self.days * 86400
        fine_from = self.end - self.fine_hours * 3600
        times = []
        t = start
        while t < fine_from:
            times.append(t)
            t += self.coarse_step
        t = fine_from
        while t <= self.end + 1e-6:
            times.append(t)
            t += self.fine_step
        if times[-1] != self.end:
            times.append(self.end)
        return times

    def phase_at(self, t: float) -> tuple[Phase, float]:
        """The phase in force at ``t`` and how long it has been in force."""
        chosen = self.phases[0]
        for before, phase in self.phases:
            if t >= self.end - before:
                chosen = (before, phase)
        return chosen[1], t - (self.end - chosen[0])


def _healthy_waiting(_: float) -> float:
    return 0.0


HEALTHY = Phase(requests_per_s=2.0, e2e=(2.0, 0.55), ttft=(0.12, 0.5), queue=(0.004, 0.9),
                itl=(0.026, 0.2), waiting=_healthy_waiting, running=4.0, kv_cache=0.31,
                gpu_util=61.0)


def _queue_builds(seconds: float) -> float:
    # Arrivals outrun completions: the queue builds for ten minutes and stays long.
    return float(min(42, int(seconds / 14)))


QUEUEING = Phase(requests_per_s=2.6, e2e=(31.0, 0.35), ttft=(26.0, 0.4), queue=(24.0, 0.4),
                 itl=(0.034, 0.2), waiting=_queue_builds, running=24.0, kv_cache=0.84,
                 gpu_util=98.0, aborted_per_s=0.15)


def _unix(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _working_set(started: float, load_s: float, loaded_gib: float, leak_mib_per_h: float,
                 ripple_mib: float = 0.0) -> Callable[[float], float]:
    """A container's working set: from 1.5 GiB at its start to ``loaded_gib`` once the model
    is loaded (weights staged through host RAM), then ``leak_mib_per_h`` more every hour
    it serves, with a small deterministic ripple (allocator noise)."""
    def at(t: float) -> float:
        since = t - started
        if since < load_s:
            return (1.5 + (loaded_gib - 1.5) * max(0.0, since) / load_s) * 2**30
        ripple = ripple_mib * math.sin(since / 600.0) * 2**20
        return loaded_gib * 2**30 + leak_mib_per_h * (since - load_s) / 3600 * 2**20 + ripple
    return at


_MEMORY_END = _unix("2026-11-28T03:12:09Z")
_LEAKING_START = _unix("2026-11-27T19:05:10Z")
_FLAT_START = _unix("2026-11-27T22:40:05Z")

SCENARIOS: dict[str, Scenario | tuple[Scenario, ...]] = {
    # vLLM 0.25.0 on the eager path leaks host memory (vllm#50150): 600 MiB/h while it
    # serves, 17.6 GiB after the load; a neighbour's working set grew during its load and
    # has stayed flat since.
    "host-memory-growth": (
        Scenario(namespace="llm", pod="vllm-qwen32b-6d5c4b3a2f-xt4qp",
                 model="Qwen/Qwen3-32B-FP8", end=_MEMORY_END, days=0.3,
                 phases=((10**9, HEALTHY),), fine_hours=6.5, fine_step=120.0,
                 gpu_uuid="GPU-8a1b2c3d-4e5f-4a6b-9c7d-0e1f2a3b4c5d",
                 node="gke-inference-a100-pool-3b2c1d0e-f5g6", fb_total_mib=81920.0,
                 fb_used_mib=73728.0,
                 memory=_working_set(_LEAKING_START, 600, 17.6, 600.0, ripple_mib=24.0),
                 container_started=_LEAKING_START, instance="10.48.9.12:8000",
                 job="llm/vllm-qwen32b"),
        Scenario(namespace="llm", pod="vllm-llama-58b7c6d9f4-p3q7r",
                 model="meta-llama/Llama-3.1-8B-Instruct", end=_MEMORY_END, days=0.3,
                 phases=((10**9, HEALTHY),), fine_hours=6.5, fine_step=120.0,
                 gpu_uuid="GPU-1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f",
                 node="gke-inference-l4-pool-6f1d2a9c-w3rt",
                 memory=_working_set(_FLAT_START, 600, 15.2, 0.0, ripple_mib=30.0),
                 container_started=_FLAT_START, instance="10.48.7.31:8000",
                 job="llm/vllm-llama"),
    ),
    # Healthy for three days; queueing from 16 to 1 minute before the scan; the
    # queue has just drained when the one scrape is taken.
    "queueing-last-15m": Scenario(
        namespace="llm", pod="vllm-qwen-6c9f7d8b5d-m4n8q", model="Qwen/Qwen3-8B",
        end=_unix("2026-11-28T03:12:09Z"), days=3.0,
        phases=((10**9, HEALTHY), (16 * 60, QUEUEING), (60, HEALTHY))),
}


class _Accumulator:
    """Cumulative counters and histograms, advanced interval by interval."""

    def __init__(self) -> None:
        self.values: dict[str, float] = {}

    def add(self, key: str, amount: float) -> None:
        self.values[key] = self.values.get(key, 0.0) + amount


def _histograms() -> dict[str, tuple[tuple[float, ...], Callable[[Phase], tuple[float, float]],
                                     Callable[[Phase], float]]]:
    """name -> (buckets, the phase's distribution, observations per request)."""
    return {
        "vllm:e2e_request_latency_seconds": (E2E_BUCKETS, lambda p: p.e2e, lambda p: 1.0),
        "vllm:time_to_first_token_seconds": (TTFT_BUCKETS, lambda p: p.ttft, lambda p: 1.0),
        "vllm:request_queue_time_seconds": (E2E_BUCKETS, lambda p: p.queue, lambda p: 1.0),
        "vllm:inter_token_latency_seconds": (ITL_BUCKETS, lambda p: p.itl,
                                             lambda p: TOKENS_PER_REQUEST - 1),
        "vllm:request_prompt_tokens": (PROMPT_BUCKETS, lambda p: PROMPT, lambda p: 1.0),
    }


def _advance(acc: _Accumulator, phase: Phase, dt: float) -> None:
    done = phase.requests_per_s * dt
    acc.add("success_stop", done * 0.9)
    acc.add("success_length", done * 0.1)
    acc.add("success_abort", phase.aborted_per_s * dt)
    acc.add("http_2xx", done)
    acc.add("prompt_tokens", done * PROMPT[0] * math.exp(PROMPT[1] ** 2 / 2))
    acc.add("generation_tokens", done * TOKENS_PER_REQUEST)
    for name, (buckets, dist, per_request) in _histograms().items():
        median, sigma = dist(phase)
        n = done * per_request(phase)
        for le in buckets:
            acc.add(f"{name}|{le}", n * _lognormal_cdf(le, median, sigma))
        acc.add(f"{name}|+Inf", n)
        acc.add(f"{name}|sum", n * median * math.exp(sigma ** 2 / 2))


def _fmt(value: float) -> str:
    return repr(float(value))


def _le(bound: float) -> str:
    return "+Inf" if bound == math.inf else repr(float(bound))


@dataclass(frozen=True)
class Sample:
    family: str
    type: str
    help: str
    name: str
    labels: tuple[tuple[str, str], ...]
    value: float


def _samples(sc: Scenario, acc: _Accumulator, phase: Phase, since: float) -> Iterator[Sample]:
    """What vLLM exposes at one instant, in its own order (labels engine, model_name)."""
    m = (("engine", "0"), ("model_name", sc.model))
    yield Sample("vllm:num_requests_running", "gauge",
                 "Number of requests in model execution batches.",
                 "vllm:num_requests_running", m, phase.running)
    yield Sample("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.",
                 "vllm:num_requests_waiting", m, phase.waiting(since))
    yield Sample("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.",
                 "vllm:kv_cache_usage_perc", m, phase.kv_cache)
    yield Sample("vllm:num_preemptions", "counter", "Cumulative number of preemption from the engine.",
                 "vllm:num_preemptions_total", m, 0.0)
    yield Sample("vllm:prompt_tokens", "counter", "Number of prefill tokens processed.",
                 "vllm:prompt_tokens_total", m, round(acc.values.get("prompt_tokens", 0.0)))
    yield Sample("vllm:generation_tokens", "counter", "Number of generation tokens processed.",
                 "vllm:generation_tokens_total", m,
                 round(acc.values.get("generation_tokens", 0.0)))
    for reason in ("stop", "length", "abort"):
        yield Sample("vllm:request_success", "counter", "Count of successfully processed requests.",
                     "vllm:request_success_total",
                     (("engine", "0"), ("finished_reason", reason), ("model_name", sc.model)),
                     round(acc.values.get(f"success_{reason}", 0.0)))
    helps = {
        "vllm:e2e_request_latency_seconds": "Histogram of e2e request latency in seconds.",
        "vllm:time_to_first_token_seconds": "Histogram of time to first token in seconds.",
        "vllm:request_queue_time_seconds": "Histogram of time spent in WAITING phase for request.",
        "vllm:inter_token_latency_seconds": "Histogram of inter-token latency in seconds.",
        "vllm:request_prompt_tokens": "Number of prefill tokens processed.",
    }
    for name, (buckets, _, _) in _histograms().items():
        for le in (*buckets, math.inf):
            key = f"{name}|{'+Inf' if le == math.inf else le}"
            yield Sample(name, "histogram", helps[name], f"{name}_bucket",
                         (("engine", "0"), ("le", _le(le)), ("model_name", sc.model)),
                         round(acc.values.get(key, 0.0)))
        yield Sample(name, "histogram", helps[name], f"{name}_sum", m,
                     round(acc.values.get(f"{name}|sum", 0.0), 3))
        yield Sample(name, "histogram", helps[name], f"{name}_count", m,
                     round(acc.values.get(f"{name}|+Inf", 0.0)))
    yield Sample("http_requests", "counter", "Total number of requests by method, status and handler.",
                 "http_requests_total",
                 (("handler", "/v1/chat/completions"), ("method", "POST"), ("status", "2xx")),
                 round(acc.values.get("http_2xx", 0.0)))


def _label_text(labels: tuple[tuple[str, str], ...]) -> str:
    return ",".join(f'{k}="{v}"' for k, v in labels)


def scrape(sc: Scenario) -> str:
    """The pod's /metrics at the collection time, as prometheus_client prints it."""
    acc, phase, since = _run(sc, sc.end)
    out: list[str] = []
    seen: set[str] = set()
    for s in _samples(sc, acc, phase, since):
        if s.family not in seen:
            seen.add(s.family)
            out.append(f"# HELP {s.family} {s.help}")
            out.append(f"# TYPE {s.family} {s.type}")
        out.append(f"{s.name}{{{_label_text(s.labels)}}} {_fmt(s.value)}")
    return "\n".join(out) + "\n"


def _run(sc: Scenario, until: float) -> tuple[_Accumulator, Phase, float]:
    acc = _Accumulator()
    times = [t for t in sc.grid() if t <= until]
    for prev, t in itertools.pairwise(times):
        phase, _ = sc.phase_at(prev)
        _advance(acc, phase, t - prev)
    phase, since = sc.phase_at(until)
    return acc, phase, since


def openmetrics(scenario: Scenario | tuple[Scenario, ...]) -> str:
    """Every series over the scenario's days (of each pod's, for a tuple of them), in
    OpenMetrics for promtool's backfill."""
    series: dict[tuple[str, str, str, str], list[tuple[float, float]]] = {}
    families: dict[str, tuple[str, str]] = {}
    for sc in scenario if isinstance(scenario, tuple) else (scenario,):
        _history(sc, series, families)
    out: list[str] = []
    for family, (kind, help_text) in families.items():
        out.append(f"# HELP {family} {help_text}")
        out.append(f"# TYPE {family} {kind}")
        for (fam, name, labels, _), points in series.items():
            if fam != family:
                continue
            for t, v in points:
                out.append(f"{name}{{{labels}}} {_fmt(v)} {t:.3f}")
    out.append("# EOF")
    return "\n".join(out) + "\n"


def _history(sc: Scenario, series: dict[tuple[str, str, str, str], list[tuple[float, float]]],
             families: dict[str, tuple[str, str]]) -> None:
    target = (("container", "vllm"), ("instance", sc.instance), ("job", sc.job),
              ("namespace", sc.namespace), ("pod", sc.pod))
    acc = _Accumulator()
    times = sc.grid()
    for i, t in enumerate(times):
        if i:
            phase_prev, _ = sc.phase_at(times[i - 1])
            _advance(acc, phase_prev, t - times[i - 1])
        phase, since = sc.phase_at(t)
        for s in _samples(sc, acc, phase, since):
            families.setdefault(s.family, (s.type, s.help))
            labels = _label_text(tuple(sorted(s.labels + target)))
            series.setdefault((s.family, s.name, labels, ""), []).append((t, s.value))
        gpu = (("DCGM_FI_DRIVER_VERSION", "550.90.07"), ("Hostname", sc.node),
               ("UUID", sc.gpu_uuid), ("container", "nvidia-dcgm-exporter"),
               ("device", "nvidia0"), ("exported_container", "vllm"),
               ("exported_namespace", sc.namespace), ("exported_pod", sc.pod), ("gpu", "0"),
               ("instance", "10.48.3.12:9400"), ("job", "nvidia-dcgm-exporter"),
               ("modelName", "NVIDIA L4"), ("namespace", "gpu-operator"),
               ("pod", "nvidia-dcgm-exporter-7xq2d"))
        reserved = 363.0
        for name, value, help_text in (
                ("DCGM_FI_DEV_FB_USED", sc.fb_used_mib, "Framebuffer memory used (in MiB)."),
                ("DCGM_FI_DEV_FB_FREE", sc.fb_total_mib - sc.fb_used_mib - reserved,
                 "Framebuffer memory free (in MiB)."),
                ("DCGM_FI_DEV_FB_RESERVED", reserved, "Framebuffer memory reserved (in MiB)."),
                ("DCGM_FI_DEV_GPU_UTIL", phase.gpu_util, "GPU utilization (in %)."),
                ("DCGM_FI_DEV_XID_ERRORS", 0.0, "Value of the last XID error encountered.")):
            families.setdefault(name, ("gauge", help_text))
            series.setdefault((name, name, _label_text(gpu), ""), []).append((t, value))
        ksm = (("container", "vllm"), ("instance", "10.48.1.7:8080"), ("job", "kube-state-metrics"),
               ("namespace", sc.namespace), ("pod", sc.pod),
               ("uid", "7d3f0c2a-5b1e-4a9d-8c6f-2e1b0a9d8c7f"))
        families.setdefault("kube_pod_container_status_restarts", (
            "counter", "The number of container restarts per container."))
        series.setdefault(("kube_pod_container_status_restarts",
                           "kube_pod_container_status_restarts_total", _label_text(ksm), ""),
                          []).append((t, 0.0))
        if sc.memory is not None and (sc.container_started is None or t >= sc.container_started):
            # cAdvisor through the kubelet, as kube-prometheus-stack's ServiceMonitor scrapes it
            cadvisor = (("container", "vllm"), ("endpoint", "https-metrics"),
                        ("id", f"/kubepods.slice/kubepods-burstable.slice/{sc.pod}/vllm"),
                        ("image", "docker.io/vllm/vllm-openai"), ("instance", "10.128.0.41:10250"),
                        ("job", "kubelet"), ("metrics_path", "/metrics/cadvisor"),
                        ("name", f"vllm_{sc.pod}"), ("namespace", sc.namespace),
                        ("node", sc.node), ("pod", sc.pod), ("service", "kubelet"))
            families.setdefault("container_memory_working_set_bytes", (
                "gauge", "Current working set of the container in bytes"))
            series.setdefault(("container_memory_working_set_bytes",
                               "container_memory_working_set_bytes", _label_text(cadvisor), ""),
                              []).append((t, round(sc.memory(t))))
