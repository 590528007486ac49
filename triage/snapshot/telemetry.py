"""What Prometheus measured over the window a scan asked about: the window and its source
(``PrometheusWindow``) and, per pod, its numbers and series (``PodTelemetry``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Point = tuple[float, float]  # (unix seconds, value)


@dataclass
class PodTelemetry:
    """What Prometheus measured about one pod over the window.

    ``values`` holds the pod's windowed numbers under the metric names of
    ``triage.vllm.metrics.METRICS`` (e2e_latency_p99, requests_waiting_max,
    preemptions_per_s, ...); ``by_model`` the same per ``model_name``;
    ``series`` a few of them over time (for charts); ``gpus`` one mapping per
    GPU the DCGM exporter attributes to the pod; ``restarts`` container ->
    restarts in the window (kube-state-metrics); ``memory`` container -> its
    working set (cAdvisor's container_memory_working_set_bytes) over the window.
    """

    values: dict[str, float] = field(default_factory=dict)
    by_model: dict[str, dict[str, float]] = field(default_factory=dict)
    series: dict[str, list[Point]] = field(default_factory=dict)
    gpus: list[dict[str, Any]] = field(default_factory=list)
    restarts: dict[str, float] = field(default_factory=dict)
    memory: dict[str, list[Point]] = field(default_factory=dict)
    # Names Prometheus answered with NaN or +/-Inf for: "NaN", "+Inf" or "-Inf".
    not_numbers: dict[str, str] = field(default_factory=dict)


@dataclass
class PrometheusWindow:
    """The Prometheus a scan read and the window it asked about."""

    source: str  # "http://prometheus:9090" or "service monitoring/prometheus-k8s:9090 (...)"
    window_seconds: float
    end: str  # RFC 3339 UTC: every query is evaluated at this instant
    step_seconds: float = 60.0
    pods: dict[tuple[str, str], PodTelemetry] = field(default_factory=dict)
    # Queries that answered but with an error: metric name -> reason.
    errors: dict[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """How evidence names this source: 'Prometheus, last 30m'."""
        return f"Prometheus, last {format_window(self.window_seconds)}"


def format_window(seconds: float) -> str:
    """30m, 2h, 1h30m, 45s: the way --since was written."""
    total = round(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    out = (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "")
    return out + (f"{secs}s" if secs or not out else "")
