"""Facts about the container's probes: how long the kubelet waits, and how it acts."""

from __future__ import annotations

from triage.facts import ContainerContext, Measured, fact
from triage.kube import workload


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
