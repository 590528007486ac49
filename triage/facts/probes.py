"""Facts about the container's probes: how long the kubelet waits, and how it acts."""

from __future__ import annotations

from triage import workload
from triage.facts import ContainerContext, Measured, fact


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
           "livenessProbe": "restarts the container",
           "readinessProbe": "keeps the pod unready"}


def _load_probe(ctx: ContainerContext) -> str | None:
    for kind in ("startupProbe", "livenessProbe", "readinessProbe"):
        if ctx.container.get(kind):
            return kind
    return None


@fact("load_probe", unit="text", scope="container",
      doc="the probe that acts on a container still loading its model: startupProbe if set, "
          "else livenessProbe, else readinessProbe; None without probes")
def load_probe(ctx: ContainerContext) -> Measured:
    kind = _load_probe(ctx)
    if kind is None:
        return Measured(None, f"container {ctx.name} has no startup, liveness or readiness probe")
    return Measured(kind, f"container {ctx.name}: the {kind} acts first while the model loads "
                          f"(it {_ACTION[kind]})", (ctx.field(kind),))


@fact("load_probe_budget_seconds", unit="seconds", scope="container",
      doc="seconds the load_probe lets a starting container go unanswered before it acts "
          "(initialDelaySeconds + periodSeconds x failureThreshold, with Kubernetes' defaults)")
def load_probe_budget_seconds(ctx: ContainerContext) -> Measured:
    kind = _load_probe(ctx)
    if kind is None:
        return Measured(None, f"container {ctx.name} has no startup, liveness or readiness probe")
    probe = ctx.container[kind]
    budget = workload.probe_budget(probe)
    missing = "" if kind == "startupProbe" else "no startupProbe and its "
    return Measured(budget, f"container {ctx.name} has {missing}{kind} {_ACTION[kind]} after "
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
