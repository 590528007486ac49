"""Facts from Prometheus over the window: the DCGM exporter's view of the pod's GPUs, and
kube-state-metrics' restarts.

DCGM exporter fields (NVIDIA/dcgm-exporter ``etc/default-counters.csv``):
``DCGM_FI_DEV_FB_USED`` / ``_FB_FREE`` / ``_FB_RESERVED`` (MiB),
``DCGM_FI_DEV_GPU_UTIL`` (%), ``DCGM_FI_DEV_XID_ERRORS`` (a gauge holding the
*last* Xid seen since the exporter started, 0 for none: not a count; a
change within the window means a new one). The exporter attributes each GPU
to the pod the kubelet gave it to.

These are enhancements over what the cluster objects say. Without
``--prometheus``, or when Prometheus could not be read, they are absent
(value None, the evidence says why) rather than unknown, so a rule that also
looks at logs or events judges as it would without Prometheus; a rule must
never read their absence as "healthy".
"""

from __future__ import annotations

from typing import Any

from triage.facts import ContainerContext, Measured, PodContext, Unmeasurable, fact
from triage.facts.contexts import OfPod


def _gpus(ctx: OfPod) -> tuple[list[dict[str, Any]], str]:
    """The pod's GPUs as DCGM reported them, and the source (or why there are none)."""
    ctx.runtime("Prometheus")
    prom = ctx.snapshot.prometheus
    if prom is None:
        failed = ctx.prometheus_failure()
        why = f"Prometheus could not be read ({failed})" if failed else \
            "no GPU telemetry: --prometheus was not given"
        return [], why
    telemetry = ctx.telemetry
    if telemetry is None or not telemetry.gpus:
        return [], (f"{prom.source} has no DCGM exporter series for pod "
                    f"{ctx.namespace}/{ctx.pod_name} in the last "
                    f"{prom.label.rsplit(' ', 1)[-1]}")
    return telemetry.gpus, prom.label


def _name(gpu: dict[str, Any]) -> str:
    model = f" ({gpu['model']})" if gpu.get("model") else ""
    host = f" on {gpu['hostname']}" if gpu.get("hostname") else ""
    return f"GPU {gpu.get('gpu', '?')} {gpu.get('uuid', '')}{model}{host}".replace("  ", " ")


def _each(gpus: list[dict[str, Any]], key: str) -> list[tuple[dict[str, Any], float]]:
    return [(g, float(g[key])) for g in gpus if isinstance(g.get(key), (int, float))]


@fact("gpu_fb_used_mib", unit="MiB", scope="pod",
      doc="the most framebuffer memory used on one of the pod's GPUs over the window "
          "(DCGM_FI_DEV_FB_USED, every process on the GPU); None without DCGM series")
def gpu_fb_used_mib(ctx: PodContext) -> Measured:
    gpus, source = _gpus(ctx)
    values = _each(gpus, "fb_used_mib_max")
    if not values:
        return Measured(None, source)
    gpu, value = max(values, key=lambda gv: gv[1])
    return Measured(value, f"{source}: {_name(gpu)} framebuffer used up to {value:,.0f} MiB "
                           f"(DCGM_FI_DEV_FB_USED)")


@fact("gpu_fb_free_mib", unit="MiB", scope="pod",
      doc="the least framebuffer memory free on one of the pod's GPUs over the window "
          "(DCGM_FI_DEV_FB_FREE); None without DCGM series")
def gpu_fb_free_mib(ctx: PodContext) -> Measured:
    gpus, source = _gpus(ctx)
    values = _each(gpus, "fb_free_mib_min")
    if not values:
        return Measured(None, source)
    gpu, value = min(values, key=lambda gv: gv[1])
    return Measured(value, f"{source}: {_name(gpu)} framebuffer free down to {value:,.0f} MiB "
                           f"(DCGM_FI_DEV_FB_FREE)")


@fact("gpu_fb_total_mib", unit="MiB", scope="pod",
      doc="framebuffer memory of one of the pod's GPUs: used + free + reserved as DCGM last "
          "reported them; None without DCGM series")
def gpu_fb_total_mib(ctx: PodContext) -> Measured:
    gpus, source = _gpus(ctx)
    for gpu in gpus:
        used, free = gpu.get("fb_used_mib"), gpu.get("fb_free_mib")
        if isinstance(used, (int, float)) and isinstance(free, (int, float)):
            reserved = float(gpu.get("fb_reserved_mib") or 0.0)
            total = float(used) + float(free) + reserved
            return Measured(total, f"{source}: {_name(gpu)} framebuffer {total:,.0f} MiB "
                                   f"(used {used:,.0f} + free {free:,.0f} + reserved "
                                   f"{reserved:,.0f})")
    return Measured(None, source)


@fact("gpu_utilization_percent", unit="percent", scope="pod",
      doc="mean utilisation of the pod's GPUs over the window (DCGM_FI_DEV_GPU_UTIL); None "
          "without DCGM series")
def gpu_utilization_percent(ctx: PodContext) -> Measured:
    gpus, source = _gpus(ctx)
    values = _each(gpus, "util_percent_mean")
    if not values:
        return Measured(None, source)
    mean = sum(v for _, v in values) / len(values)
    return Measured(mean, f"{source}: GPU utilisation {mean:.0f}% on average over "
                          f"{len(values)} GPU(s) (DCGM_FI_DEV_GPU_UTIL)")


@fact("gpu_xid_last", unit="list", scope="pod",
      doc="the last Xid error DCGM saw on each of the pod's GPUs (DCGM_FI_DEV_XID_ERRORS, a "
          "gauge of the last Xid since the exporter started, not a count), non-zero only; "
          "None without DCGM series")
def gpu_xid_last(ctx: PodContext) -> Measured:
    gpus, source = _gpus(ctx)
    values = _each(gpus, "xid_last")
    if not values:
        return Measured(None, source)
    seen = [(g, int(v)) for g, v in values if v]
    if not seen:
        return Measured([], f"{source}: DCGM_FI_DEV_XID_ERRORS is 0 (no Xid since the exporter "
                            f"started) on {len(values)} GPU(s)")
    return Measured(sorted({x for _, x in seen}), "; ".join(
        f"{source}: {_name(g)} last Xid {x} (DCGM_FI_DEV_XID_ERRORS)" for g, x in seen))


@fact("gpu_xid_new_in_window", unit="bool", scope="pod",
      doc="DCGM_FI_DEV_XID_ERRORS changed on one of the pod's GPUs within the window: a new "
          "Xid was reported then; None without DCGM series")
def gpu_xid_new_in_window(ctx: PodContext) -> Measured:
    gpus, source = _gpus(ctx)
    values = _each(gpus, "xid_changes")
    if not values:
        return Measured(None, source)
    changed = [(g, v) for g, v in values if v > 0]
    if not changed:
        return Measured(False, f"{source}: no new Xid on the pod's GPU(s)")
    return Measured(True, "; ".join(f"{source}: {_name(g)} reported a new Xid "
                                    f"({v:.0f} change(s) of DCGM_FI_DEV_XID_ERRORS)"
                                    for g, v in changed))


@fact("gpu_shared_with", unit="list", scope="pod",
      doc="other pods the DCGM exporter attributes the pod's GPUs to over the window (a GPU "
          "shared by time-slicing or MPS); None without DCGM series")
def gpu_shared_with(ctx: PodContext) -> Measured:
    gpus, source = _gpus(ctx)
    if not gpus:
        return Measured(None, source)
    shared = [(g, list(g.get("shared_with") or [])) for g in gpus]
    others = sorted({p for _, pods in shared for p in pods})
    if not others:
        return Measured([], f"{source}: no other pod on the pod's GPU(s)")
    return Measured(others, "; ".join(f"{source}: {_name(g)} is also given to "
                                      f"{', '.join(pods)}" for g, pods in shared if pods))


@fact("gpu_fb_used_beyond_vllm_mib", unit="MiB", scope="container",
      doc="framebuffer used on the pod's GPU beyond vLLM's own share (GPU memory x "
          "--gpu-memory-utilization): memory another process holds; negative when below; "
          "None without DCGM series")
def gpu_fb_used_beyond_vllm_mib(ctx: ContainerContext) -> Measured:
    used, total = ctx.fact("gpu_fb_used_mib"), ctx.fact("gpu_fb_total_mib")
    gmu = ctx.fact("gpu_memory_utilization")
    if used.value is None or total.value is None:
        return Measured(None, used.evidence)
    if gmu.value is None:
        return Measured(None, gmu.evidence if gmu.unknown is None else str(gmu.unknown))
    share = float(total.value) * float(gmu.value)
    beyond = float(used.value) - share
    return Measured(beyond, f"{used.evidence}; vLLM's share is {share:,.0f} MiB ({gmu.value:g} "
                            f"x {total.value:,.0f} MiB), so {beyond:,.0f} MiB "
                            f"{'beyond' if beyond >= 0 else 'below'} it")


@fact("restarts_in_window", unit="restarts", scope="container",
      doc="container restarts within the window, from kube-state-metrics "
          "(kube_pod_container_status_restarts_total); None without Prometheus")
def restarts_in_window(ctx: ContainerContext) -> Measured:
    ctx.runtime("Prometheus")
    prom = ctx.snapshot.prometheus
    if prom is None:
        failed = ctx.prometheus_failure()
        return Measured(None, f"Prometheus could not be read ({failed})" if failed else
                        "--prometheus was not given")
    telemetry = ctx.telemetry
    if telemetry is None or ctx.name not in telemetry.restarts:
        return Measured(None, f"{prom.source} has no kube-state-metrics restarts for "
                              f"{ctx.namespace}/{ctx.pod_name} ({ctx.name})")
    n = telemetry.restarts[ctx.name]
    return Measured(n, f"{prom.label}: container {ctx.name} restarted {n:.0f} time(s) "
                       "(kube-state-metrics)")


# --- host memory over the window (cAdvisor's working set) -------------------------------

def _memory(ctx: ContainerContext) -> tuple[list[tuple[float, float]], str]:
    """The container's working set over the window, oldest first, and the source (or why
    there is none)."""
    ctx.runtime("Prometheus")
    prom = ctx.snapshot.prometheus
    if prom is None:
        failed = ctx.prometheus_failure()
        return [], (f"Prometheus could not be read ({failed})" if failed else
                    "no memory series: --prometheus was not given")
    telemetry = ctx.telemetry
    points = sorted(telemetry.memory.get(ctx.name, [])) if telemetry is not None else []
    if len(points) < 2:
        return [], (f"{prom.source} has no container_memory_working_set_bytes series for "
                    f"{ctx.namespace}/{ctx.pod_name} ({ctx.name}) in the last "
                    f"{prom.label.rsplit(' ', 1)[-1]}")
    return points, prom.label


def _slope_per_hour(points: list[tuple[float, float]]) -> float:
    """The least-squares slope of (seconds, bytes) points, in bytes per hour."""
    n = len(points)
    mean_t = sum(t for t, _ in points) / n
    mean_v = sum(v for _, v in points) / n
    var = sum((t - mean_t) ** 2 for t, _ in points)
    if var == 0:
        return 0.0
    return 3600.0 * sum((t - mean_t) * (v - mean_v) for t, v in points) / var


def _gib(value: float) -> str:
    return f"{value / 2**30:,.2f} GiB"


def _span_text(points: list[tuple[float, float]]) -> str:
    hours = (points[-1][0] - points[0][0]) / 3600
    return f"{hours:,.1f} h" if hours >= 1 else f"{hours * 60:,.0f} min"


def _recent(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The last quarter of the window (at least its last two points)."""
    start = points[-1][0] - (points[-1][0] - points[0][0]) / 4
    return [p for p in points if p[0] >= start] if len(
        [p for p in points if p[0] >= start]) >= 2 else points[-2:]


@fact("memory_working_set_bytes", unit="bytes", scope="container",
      doc="the container's memory working set at the end of the window "
          "(container_memory_working_set_bytes, what the kernel OOM-kills at the limit); "
          "None without Prometheus")
def memory_working_set_bytes(ctx: ContainerContext) -> Measured:
    points, source = _memory(ctx)
    if not points:
        return Measured(None, source)
    first, last = points[0][1], points[-1][1]
    return Measured(last, f"{source}: {ctx.name} working set {_gib(last)} now, {_gib(first)} "
                          f"{_span_text(points)} earlier (container_memory_working_set_bytes)")


@fact("memory_growth_bytes_per_hour", unit="bytes/h", scope="container",
      doc="how fast the container's working set grew over the whole window (least-squares "
          "slope of container_memory_working_set_bytes); None without Prometheus")
def memory_growth_bytes_per_hour(ctx: ContainerContext) -> Measured:
    points, source = _memory(ctx)
    if not points:
        return Measured(None, source)
    slope = _slope_per_hour(points)
    return Measured(slope, f"{source}: {ctx.name} working set {_gib(points[0][1])} -> "
                           f"{_gib(points[-1][1])} over {_span_text(points)}, "
                           f"{slope / 2**20:+,.0f} MiB/h on average")


@fact("memory_growth_recent_bytes_per_hour", unit="bytes/h", scope="container",
      doc="how fast the working set grew in the last quarter of the window: still growing, "
          "or flat again after a load; None without Prometheus")
def memory_growth_recent_bytes_per_hour(ctx: ContainerContext) -> Measured:
    points, source = _memory(ctx)
    if not points:
        return Measured(None, source)
    recent = _recent(points)
    slope = _slope_per_hour(recent)
    return Measured(slope, f"{source}: {ctx.name} working set {_gib(recent[0][1])} -> "
                           f"{_gib(recent[-1][1])} in the last {_span_text(recent)}, "
                           f"{slope / 2**20:+,.0f} MiB/h")


@fact("memory_hours_to_limit", unit="hours", scope="container",
      doc="hours until the working set reaches resources.limits.memory at the rate of the "
          "window's last quarter (memory_growth_recent_bytes_per_hour); None when it does not "
          "grow, there is no limit, or no Prometheus")
def memory_hours_to_limit(ctx: ContainerContext) -> Measured:
    points, source = _memory(ctx)
    if not points:
        return Measured(None, source)
    limit = ctx.fact("memory_limit_bytes")
    if limit.unknown:
        raise Unmeasurable(limit.unknown)
    if not limit.value:
        return Measured(None, f"container {ctx.name} has no memory limit")
    slope = _slope_per_hour(_recent(points))
    now = points[-1][1]
    if slope <= 0:
        return Measured(None, f"{source}: {ctx.name} working set {_gib(now)} of "
                              f"{_gib(float(limit.value))} is not growing now")
    hours = max(0.0, (float(limit.value) - now) / slope)
    return Measured(hours, f"{source}: {ctx.name} working set {_gib(now)} of its "
                           f"{_gib(float(limit.value))} limit, growing "
                           f"{slope / 2**20:,.0f} MiB/h: the limit in {hours:,.1f} h")
