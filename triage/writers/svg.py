"""Inline SVG pictures for the HTML report: no script, no external asset, printable.

Per pod: the incident timeline (one row per entry on one UTC time axis,
spans for repeated events), the GPU memory budget bar, and, with a
Prometheus window, small charts of P99 latency and the queue. Every string
passes ``html.escape``; sizes come from a viewBox so the pictures scale to
the page and to paper.
"""

from __future__ import annotations

from datetime import datetime, timezone
from html import escape

from triage.results import TIMELINE_KINDS, GpuBudget, TimelineEvent, WindowSeries

COLORS = {"neutral": "#667085", "progress": "#1570ef", "good": "#067647", "warn": "#b54708",
          "fail": "#b42318"}
BUDGET_COLORS = {"weights": "#1570ef", "kv": "#12b76a", "other": "#f79009", "free": "#d0d5dd",
                 "unknown": "#eaecf0"}
WIDTH = 1000


def e(value: object) -> str:
    return escape(str(value), quote=True)


def _ts(stamp: str) -> float | None:
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _clock(t: float, with_date: bool) -> str:
    when = datetime.fromtimestamp(t, timezone.utc)
    return when.strftime("%m-%d %H:%M" if with_date else "%H:%M:%S")


def _ticks(lo: float, hi: float, count: int = 6) -> list[float]:
    span = max(hi - lo, 1.0)
    steps = (1, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200,
             86400, 172800)
    step = next((s for s in steps if span / s <= count), 604800)
    first = (lo // step + 1) * step
    out = []
    t = first
    while t < hi:
        out.append(t)
        t += step
    return out


def timeline(events: tuple[TimelineEvent, ...], title: str) -> str:
    """One row per entry: a dot (or a bar from first to last) at its time, its label beside."""
    points = [(ev, _ts(ev.at), _ts(ev.until) if ev.until else None) for ev in events]
    points = [(ev, a, b) for ev, a, b in points if a is not None]
    if not points:
        return ""
    lo = min(a for _, a, _ in points if a is not None)
    hi = max(max(a, b or a) for _, a, b in points if a is not None)
    if hi - lo < 60:
        lo, hi = lo - 30, hi + 30
    pad = (hi - lo) * 0.02
    lo, hi = lo - pad, hi + pad
    left, right, top, row = 10, WIDTH - 10, 36, 24
    height = top + row * len(points) + 14
    with_date = hi - lo > 86400

    def x(t: float) -> float:
        return left + (t - lo) / (hi - lo) * (right - left)

    days = sorted({datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%d")
                   for t in (lo + pad, hi - pad)})
    parts = [f'<svg class="timeline" viewBox="0 0 {WIDTH} {height}" width="100%" '
             f'role="img" aria-label="{e(title)}" xmlns="http://www.w3.org/2000/svg">',
             f"<title>{e(title)}</title>",
             f'<text x="{left}" y="12" class="axis-title">time (UTC) {e(" to ".join(days))}'
             "</text>"]
    for t in _ticks(lo, hi):
        xt = x(t)
        if not left + 30 <= xt <= right - 30:
            continue  # a tick label at the very edge would be cut
        parts.append(f'<line x1="{xt:.1f}" y1="18" x2="{xt:.1f}" y2="{height - 8}" '
                     'class="grid"/>')
        parts.append(f'<text x="{xt:.1f}" y="28" class="tick" text-anchor="middle">'
                     f"{e(_clock(t, with_date))}</text>")
    for i, (ev, a, b) in enumerate(points):
        y = top + row * i + row / 2
        color = COLORS[TIMELINE_KINDS.get(ev.kind, "neutral")]
        xa = x(a) if a is not None else left
        if i % 2 == 0:
            parts.append(f'<rect x="0" y="{y - row / 2:.1f}" width="{WIDTH}" height="{row}" '
                         'class="band"/>')
        if b is not None and b > (a or 0):
            xb = x(b)
            parts.append(f'<rect x="{xa:.1f}" y="{y - 4:.1f}" width="{max(xb - xa, 2):.1f}" '
                         f'height="8" rx="3" fill="{color}" opacity="0.35"/>')
            parts.append(f'<circle cx="{xb:.1f}" cy="{y:.1f}" r="4" fill="{color}"/>')
        shape = (f'<rect x="{xa - 5:.1f}" y="{y - 5:.1f}" width="10" height="10" '
                 f'transform="rotate(45 {xa:.1f} {y:.1f})" fill="{color}"/>'
                 if TIMELINE_KINDS.get(ev.kind) == "fail" else
                 f'<circle cx="{xa:.1f}" cy="{y:.1f}" r="5" fill="{color}"/>')
        parts.append(shape)
        clock = datetime.fromtimestamp(a or lo, timezone.utc).strftime(
            "%m-%d %H:%M:%S" if with_date else "%H:%M:%S")
        text = f"{clock} {ev.label}"
        end = x(b) if b is not None else xa
        # A label sits right of the mark (or of the span), else left of it, else on the bar.
        width = 7.2 * len(text)
        if end + 10 + width <= right:
            tx, anchor = end + 10, "start"
        elif xa - 10 - width >= left:
            tx, anchor = xa - 10, "end"
        else:
            tx, anchor = max(left, min(xa + 10, right - width)), "start"
        parts.append(f'<text x="{tx:.1f}" y="{y + 4:.1f}" text-anchor="{anchor}" '
                     f'class="label" fill="{color}">{e(text)}<title>{e(ev.detail)}</title>'
                     "</text>")
    parts.append("</svg>")
    return "".join(parts)


def budget(b: GpuBudget, title: str) -> str:
    """The card as one bar: weights, KV cache, the rest of vLLM's share, and outside it."""
    total = b.total_gib
    segments: list[tuple[str, str, float]] = []
    known = 0.0
    for key, name, value in (("weights", "weights", b.weights_gib),
                             ("kv", "KV cache", b.kv_cache_gib),
                             ("other", "activations, CUDA graphs, other", b.other_gib)):
        if value is not None and value > 0:
            segments.append((key, name, value))
            known += value
    share = total * b.utilization if b.utilization is not None else None
    if share is not None and known < share - 0.01 and b.other_gib is None:
        segments.append(("unknown", "vLLM's share, not logged", share - known))
        known = share
    if b.free_gib is not None and b.free_gib > 0:
        segments.append(("free", "outside vLLM's share", b.free_gib))
    elif share is None:
        segments.append(("unknown", "not known", max(total - known, 0.0)))
    left, right, bar_y, bar_h = 10, WIDTH - 10, 26, 34
    height = 118
    scale = (right - left) / max(total, known, 0.001)
    parts = [f'<svg class="budget" viewBox="0 0 {WIDTH} {height}" width="100%" role="img" '
             f'aria-label="{e(title)}" xmlns="http://www.w3.org/2000/svg">',
             f"<title>{e(title)}</title>",
             f'<text x="{left}" y="14" class="axis-title">GPU memory: {total:.1f} GiB per GPU'
             + (f", vLLM's share {b.utilization:g} = {share:.1f} GiB" if share is not None
                else "") + "</text>"]
    x = float(left)
    legend_x = float(left)
    for key, name, value in segments:
        w = value * scale
        parts.append(f'<rect x="{x:.1f}" y="{bar_y}" width="{max(w, 1):.1f}" height="{bar_h}" '
                     f'fill="{BUDGET_COLORS[key]}" class="seg"><title>{e(name)}: '
                     f"{value:.2f} GiB</title></rect>")
        if w > 54:
            fill = "#101828" if key in ("free", "unknown") else "#fff"
            parts.append(f'<text x="{x + w / 2:.1f}" y="{bar_y + bar_h / 2 + 5:.1f}" '
                         f'text-anchor="middle" class="seg-label" fill="{fill}">'
                         f"{value:.1f} GiB</text>")
        parts.append(f'<rect x="{legend_x:.1f}" y="{bar_y + bar_h + 14}" width="12" height="12" '
                     f'fill="{BUDGET_COLORS[key]}"/>')
        label = f"{name} {value:.2f} GiB"
        parts.append(f'<text x="{legend_x + 16:.1f}" y="{bar_y + bar_h + 24}" class="tick">'
                     f"{e(label)}</text>")
        legend_x += 26 + 6.8 * len(label)
        x += w
    if share is not None:
        xs = left + share * scale
        parts.append(f'<line x1="{xs:.1f}" y1="{bar_y - 6}" x2="{xs:.1f}" '
                     f'y2="{bar_y + bar_h + 6}" class="share"/>')
    if b.dcgm_used_gib is not None:
        xd = left + b.dcgm_used_gib * scale
        parts.append(f'<line x1="{xd:.1f}" y1="{bar_y - 8}" x2="{xd:.1f}" y2="{bar_y + bar_h}" '
                     'class="dcgm"/>')
        parts.append(f'<text x="{min(xd, right - 4):.1f}" y="{bar_y - 10}" '
                     f'text-anchor="end" class="tick">DCGM used {b.dcgm_used_gib:.1f} GiB</text>')
    caption = ""
    if b.sequences_fit is not None and b.max_model_len and b.kv_cache_tokens:
        caption = (f"{b.sequences_fit:.2f} sequences of --max-model-len {b.max_model_len:,} fit "
                   f"in the KV cache ({b.kv_cache_tokens:,} tokens)")
    elif b.weights_gib is None and b.kv_cache_gib is None:
        caption = "vLLM did not log its weights or KV cache size in the logs read"
    if caption:
        parts.append(f'<text x="{left}" y="{height - 8}" class="caption">{e(caption)}</text>')
    parts.append("</svg>")
    return "".join(parts)


_SERIES_TITLES = {"e2e_latency_p99": "e2e latency P99", "queue_time_p99": "queue time P99",
                  "requests_waiting": "requests waiting", "requests_running": "requests running"}


def chart(series: WindowSeries) -> str:
    """A small line chart of one value over the window."""
    pts = list(series.points)
    if len(pts) < 2:
        return ""
    w, h, left, right, top, bottom = 480, 150, 44, 470, 22, 124
    t0, t1 = pts[0][0], pts[-1][0]
    vmax = max(v for _, v in pts)
    vmax = vmax * 1.1 if vmax > 0 else 1.0

    def xy(t: float, v: float) -> tuple[float, float]:
        return (left + (t - t0) / max(t1 - t0, 1) * (right - left),
                bottom - v / vmax * (bottom - top))

    path = " ".join(f"{'M' if i == 0 else 'L'}{x:.1f},{y:.1f}"
                    for i, (x, y) in enumerate(xy(t, v) for t, v in pts))
    title = _SERIES_TITLES.get(series.name, series.name)
    unit = "s" if series.unit == "seconds" else ""
    parts = [f'<svg class="chart" viewBox="0 0 {w} {h}" width="100%" role="img" '
             f'aria-label="{e(title)}" xmlns="http://www.w3.org/2000/svg">',
             f"<title>{e(title)} over the window</title>",
             f'<text x="{left}" y="14" class="axis-title">{e(title)} '
             f"(max {max(v for _, v in pts):.3g}{unit})</text>",
             f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" class="axis"/>',
             f'<line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" class="axis"/>',
             f'<text x="{left - 4}" y="{top + 4}" text-anchor="end" class="tick">'
             f"{vmax:.3g}{unit}</text>",
             f'<text x="{left - 4}" y="{bottom}" text-anchor="end" class="tick">0</text>',
             f'<text x="{left}" y="{h - 6}" class="tick">{e(_clock(t0, False))}</text>',
             f'<text x="{right}" y="{h - 6}" text-anchor="end" class="tick">'
             f"{e(_clock(t1, False))} UTC</text>",
             f'<path d="{path}" class="line"/>', "</svg>"]
    return "".join(parts)


CSS = """
.visual { margin: 10px 0 18px; break-inside: avoid; }
.visual h3 { margin-bottom: 4px; }
svg.timeline, svg.budget, svg.chart { display: block; max-width: 100%; height: auto;
  background: #fff; border: 1px solid var(--line); border-radius: 4px; margin: 6px 0; }
svg .band { fill: #f9fafb; }
svg .grid { stroke: #eaecf0; stroke-width: 1; }
svg .axis { stroke: #98a2b3; stroke-width: 1; }
svg .tick { font: 12px system-ui, sans-serif; fill: #475467; }
svg .axis-title { font: 600 13px system-ui, sans-serif; fill: #344054; }
svg .label { font: 13.5px system-ui, sans-serif; }
svg .seg-label { font: 600 13px system-ui, sans-serif; }
svg .caption { font: 13.5px system-ui, sans-serif; fill: #344054; }
svg .share { stroke: #101828; stroke-width: 2; stroke-dasharray: 4 3; }
svg .dcgm { stroke: #b42318; stroke-width: 2; }
svg .line { fill: none; stroke: #1570ef; stroke-width: 2; }
.charts { display: grid; grid-template-columns: repeat(2, minmax(0, 1fr)); gap: 8px; }
.budget-notes { font-size: .85em; color: var(--na); margin: 0 0 6px; padding-left: 18px; }
.history { font-size: .85em; color: var(--na); margin: 0 0 6px; }
@media print {
  svg.timeline, svg.budget, svg.chart { -webkit-print-color-adjust: exact;
    print-color-adjust: exact; }
}
"""
