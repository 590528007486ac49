"""Facts about the container's probes: how long the kubelet waits, and how it acts."""

from __future__ import annotations

from datetime import datetime, timedelta

from triage.facts import ContainerContext, Measured, Unmeasurable, fact
from triage.facts.engine import _STATS_LOG, STATS_LINES_KEPT
from triage.facts.kubernetes import _CONTAINER_PREFIX
from triage.facts.progress import linetime_iso, ready_at
from triage.kube import workload
from triage.logs import linetime
from triage.snapshot import CURRENT, PREVIOUS, Obj, event_times, meta
from triage.vllm import wordings


@fact("has_startup_probe", unit="bool", scope="container",
      doc="the container has a startupProbe (liveness and readiness wait until it succeeds)")
def has_startup_probe(ctx: ContainerContext) -> Measured:
    probe = ctx.container.get("startupProbe")
    at = (ctx.field("startupProbe"),)
    if not probe:
        return Measured(False, f"container {ctx.name} has no startupProbe", at)
    budget = workload.probe_budget(probe)
    return Measured(True, f"startupProbe allows about {budget}s "
                          f"({workload.describe_probe(probe)})", at)


_ACTION = {"startupProbe": "restarts the container",
           "livenessProbe": "restarts the container"}


def _load_probe(ctx: ContainerContext) -> str | None:
    """The probe that kills a load that takes too long. A readinessProbe never does: a
    container that fails it only stays unready (no traffic) and keeps loading."""
    for kind in ("startupProbe", "livenessProbe"):
        if ctx.container.get(kind):
            return kind
    return None


def _no_load_probe(ctx: ContainerContext) -> str:
    if ctx.container.get("readinessProbe"):
        return (f"container {ctx.name} has no startup or liveness probe: its readinessProbe "
                "only keeps the pod unready while the model loads, it restarts nothing")
    return f"container {ctx.name} has no startup, liveness or readiness probe"


@fact("load_probe", unit="text", scope="container",
      doc="the probe that restarts a container still loading its model: startupProbe if set, "
          "else livenessProbe; None without either (a readinessProbe only keeps the pod "
          "unready)")
def load_probe(ctx: ContainerContext) -> Measured:
    kind = _load_probe(ctx)
    if kind is None:
        return Measured(None, _no_load_probe(ctx))
    return Measured(kind, f"container {ctx.name}: the {kind} acts first while the model loads "
                          f"(it {_ACTION[kind]})", (ctx.field(kind),))


@fact("load_probe_budget_seconds", unit="seconds", scope="container",
      doc="seconds the load_probe lets a starting container go unanswered before it restarts "
          "it (initialDelaySeconds + periodSeconds x failureThreshold, with Kubernetes' "
          "defaults); None without a startup or liveness probe")
def load_probe_budget_seconds(ctx: ContainerContext) -> Measured:
    kind = _load_probe(ctx)
    if kind is None:
        return Measured(None, _no_load_probe(ctx))
    probe = ctx.container[kind]
    budget = workload.probe_budget(probe)
    # That there is no startupProbe is has_startup_probe's to say: said once in a finding.
    return Measured(budget, f"container {ctx.name}: its {kind} {_ACTION[kind]} after "
                            f"about {budget}s ({workload.describe_probe(probe)})",
                    (ctx.field(kind),))


@fact("liveness_probe", unit="text", scope="container",
      doc="the livenessProbe's timing as set, with Kubernetes' defaults; None without one")
def liveness_probe(ctx: ContainerContext) -> Measured:
    probe = ctx.container.get("livenessProbe")
    if not probe:
        return Measured(None, "no livenessProbe")
    text = workload.describe_probe(probe)
    return Measured(text, f"livenessProbe {text}", (ctx.field("livenessProbe"),))


@fact("liveness_timeout_seconds", unit="seconds", scope="container",
      doc="livenessProbe.timeoutSeconds (Kubernetes' default 1); None without a livenessProbe")
def liveness_timeout_seconds(ctx: ContainerContext) -> Measured:
    probe = ctx.container.get("livenessProbe")
    if not probe:
        return Measured(None, f"container {ctx.name} has no livenessProbe")
    t = int(probe.get("timeoutSeconds", 1))
    at = (ctx.field("livenessProbe", "timeoutSeconds"),)
    return Measured(t, f"container {ctx.name} livenessProbe timeoutSeconds {t}"
                       + (" (unset: Kubernetes default 1)" if "timeoutSeconds" not in probe
                          else "")
                       + f", failureThreshold {probe.get('failureThreshold', 3)}", at)


@fact("readiness_timeout_seconds", unit="seconds", scope="container",
      doc="readinessProbe.timeoutSeconds (Kubernetes' default 1); None without a "
          "readinessProbe")
def readiness_timeout_seconds(ctx: ContainerContext) -> Measured:
    probe = ctx.container.get("readinessProbe")
    if not probe:
        return Measured(None, f"container {ctx.name} has no readinessProbe")
    t = int(probe.get("timeoutSeconds", 1))
    path = (probe.get("httpGet") or {}).get("path")
    return Measured(t, f"container {ctx.name} readinessProbe "
                       + (f"GET {path} " if path else "") + f"timeoutSeconds {t}"
                       + (" (unset: Kubernetes default 1)" if "timeoutSeconds" not in probe
                          else "")
                       + f", periodSeconds {probe.get('periodSeconds', 10)}, failureThreshold "
                       f"{probe.get('failureThreshold', 3)}",
                    (ctx.field("readinessProbe", "timeoutSeconds"),))


# --- probes failing while the server serves ---------------------------------------------

# The kubelet's Unhealthy and Killing texts and a probe's timeout (patterns/wordings.yaml).
_PROBE_FAILED = wordings.regex("kubelet_probe_failed")
_PROBE_TIMED_OUT = wordings.regex("probe_timed_out")
_LIVENESS_KILL = wordings.regex("kubelet_liveness_kill")


def _about_container(ctx: ContainerContext, event: Obj) -> bool:
    """An event about this container (its involvedObject.fieldPath or, Kubernetes 1.33+,
    its message's prefix names it), or about the pod without naming one."""
    inv = event.get("involvedObject") or event.get("regarding") or {}
    field = str(inv.get("fieldPath") or "")
    if field.startswith("spec.") and "{" in field:
        return field.split("{", 1)[1].rstrip("}") == ctx.name
    m = _CONTAINER_PREFIX.match(str(event.get("message") or ""))
    return m is None or m.group("name") == ctx.name


def _serving_windows(ctx: ContainerContext) -> list[tuple[datetime, datetime | None, str]]:
    """(from, to, which run) of each run read that was serving: from its ready line to its
    end (None: still running)."""
    out: list[tuple[datetime, datetime | None, str]] = []
    current = ready_at(ctx, CURRENT)
    if current is not None:
        out.append((current, None, "the current run"))
    previous = ready_at(ctx, PREVIOUS)
    if previous is not None:
        ended = linetime.parse_time(((ctx.status.get("lastState") or {}).get("terminated")
                                     or {}).get("finishedAt"))
        out.append((previous, ended + timedelta(seconds=60) if ended else None,
                    "the previous run"))
    return out


def _events(ctx: ContainerContext, reason: str) -> list[Obj]:
    ctx.runtime("the pod's events")
    failed = ctx.events_failure()
    if failed:
        raise Unmeasurable(failed)
    return [ev for ev in ctx.snapshot.events_about("Pod", ctx.namespace, ctx.pod_name,
                                                   str(meta(ctx.pod).get("uid") or ""))
            if ev.get("reason") == reason and _about_container(ctx, ev)]


def _logs_known(ctx: ContainerContext) -> None:
    if not ctx.logs and ctx.logs_unread():
        raise Unmeasurable(ctx.logs_unread()[0])


@fact("probe_timeouts_while_serving", unit="failures", scope="container",
      doc="readiness and liveness probe failures that timed out (the server answered too "
          "late, not 'connection refused') after the run had logged that it serves: the "
          "kubelet's Unhealthy events last seen then, their counts summed; 0 when none")
def probe_timeouts_while_serving(ctx: ContainerContext) -> Measured:
    events = _events(ctx, "Unhealthy")
    _logs_known(ctx)
    windows = _serving_windows(ctx)
    total = 0
    texts: list[str] = []
    for ev in events:
        message = str(ev.get("message") or ev.get("note") or "")
        m = _PROBE_FAILED.search(message)
        if m is None or m.group(1) == "Startup" or not _PROBE_TIMED_OUT.search(m.group(2)):
            continue
        seen = event_times(ev)
        last = linetime.parse_time(seen.last)
        window = next((w for w in windows if last is not None and last >= w[0]
                       and (w[1] is None or last <= w[1])), None)
        if window is None:
            continue
        total += seen.count
        texts.append(f"event Unhealthy (x{seen.count}, last {seen.last}): {message[:200]} "
                     f"- {window[2]} was serving since {linetime_iso(window[0])}")
    if not windows:
        return Measured(0, f"container {ctx.name}: no run read logged that it serves (no "
                           "ready line), so no probe failure happened while serving")
    if not total:
        return Measured(0, f"container {ctx.name}: no probe timed out while it served "
                           f"({len(events)} Unhealthy event(s) about it)")
    return Measured(total, "; ".join(texts))


@fact("killed_while_generating", unit="bool", scope="container",
      doc="the kubelet restarted the container for its liveness probe (event Killing 'failed "
          "liveness probe') after the run had logged that it serves, and the run's last stats "
          "line showed requests running: an engine busy generating, not a hung one; None "
          "without such a kill")
def killed_while_generating(ctx: ContainerContext) -> Measured:
    kills = [ev for ev in _events(ctx, "Killing")
             if _LIVENESS_KILL.search(str(ev.get("message") or ev.get("note") or ""))]
    _logs_known(ctx)
    if not kills:
        return Measured(None, f"container {ctx.name}: no liveness kill in its events")
    seen = event_times(kills[-1])
    said = f"event Killing (x{seen.count}, last {seen.last}): {kills[-1].get('message')}"
    ready = ready_at(ctx, PREVIOUS)
    index = ctx.log(PREVIOUS)
    if ready is None or index is None:
        return Measured(False, f"{said}; the previous run had not logged that it serves")
    hits = index.result(_STATS_LOG, STATS_LINES_KEPT).last
    if not hits:
        return Measured(False, f"{said}; the previous run printed no stats line")
    last = hits[-1]
    running = int(last.groups[3] or 0)
    line = f"previous log ({ctx.name}) line {last.line.number}: {last.line.message.strip()[:160]}"
    return Measured(running > 0, f"{said}; the previous run served since "
                                 f"{linetime_iso(ready)} and its last stats line said Running: "
                                 f"{running} reqs ({line})")
