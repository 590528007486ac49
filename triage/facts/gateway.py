"""Facts about how traffic reaches the pod: the Service endpoints it is in (EndpointSlices)
and the Gateway API Inference Extension's InferencePools that select it.

An InferencePool (``inference.networking.k8s.io/v1``: ``spec.selector.matchLabels``,
``spec.targetPorts``, ``spec.endpointPickerRef``; ``inference.networking.x-k8s.io/
v1alpha2``: ``spec.selector`` as a label map, ``spec.targetPortNumber``,
``spec.extensionRef``) routes to its Ready pods only, through its endpoint picker (EPP):
a pool whose pods are all out answers every request with 503 ``no healthy upstream``
(gateway-api-inference-extension site-src/guides/troubleshooting.md).

An EndpointSlice (``discovery.k8s.io/v1``) lists each of a Service's pods with
``conditions.ready`` (and ``serving``, ``terminating``): a pod whose readiness probe
fails leaves the Service's endpoints until it passes again.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from triage.facts import Measured, PodContext, Unmeasurable, fact
from triage.kube import workload
from triage.logs import LogSource, decode, linetime
from triage.snapshot import PICKER_PODS, Obj, meta
from triage.vllm import wordings

# What of an endpoint picker's log line is searched (its JSON line with a stack trace can
# run to kilobytes; the error comes before the trace).
_PICKER_LINE_CHARS = 4000
# Distinct error messages of the picker shown, the most recent ones.
_PICKER_ERRORS_SHOWN = 3


def _pool_selector(pool: Obj) -> Any:
    return (pool.get("spec") or {}).get("selector")


def _pool_label(pool: Obj) -> str:
    return f"InferencePool {meta(pool).get('namespace')}/{meta(pool).get('name')}"


def _pool_text(pool: Obj) -> str:
    spec = pool.get("spec") or {}
    selector = _pool_selector(pool) or {}
    labels = selector.get("matchLabels", selector) if isinstance(selector, dict) else {}
    shown = ",".join(f"{k}={v}" for k, v in sorted(labels.items())) \
        if isinstance(labels, dict) else "?"
    ports = [str(p.get("number")) for p in spec.get("targetPorts") or [] if isinstance(p, dict)]
    port = ",".join(ports) or str(spec.get("targetPortNumber") or "?")
    picker = (spec.get("endpointPickerRef") or spec.get("extensionRef") or {}).get("name")
    version = pool.get("apiVersion") or "inference.networking.k8s.io/v1"
    return (f"{_pool_label(pool)} ({version}: selector {shown}, target port {port}"
            + (f", endpoint picker {picker}" if picker else "") + ")")


def _pools(ctx: PodContext) -> list[Obj] | None:
    """The InferencePools that select the pod; None when the cluster serves none."""
    unread = ctx.unread("inferencepools")
    if unread:
        raise Unmeasurable(unread[0])
    if "inferencepools" in ctx.snapshot.absent_kinds:
        return None
    labels = meta(ctx.pod).get("labels") or {}
    return [p for p in ctx.snapshot.items("inferencepools")
            if (meta(p).get("namespace") or "") == ctx.namespace
            and workload.selector_matches(_pool_selector(p), labels)]


def _state(pod: Obj) -> str:
    """A pod as a pool's member: Ready, or why not (its state and Ready condition)."""
    if workload.pod_ready(pod):
        return "Ready"
    ready = next((c for c in (pod.get("status") or {}).get("conditions") or []
                  if isinstance(c, dict) and c.get("type") == "Ready"), None)
    why = (f"; Ready={ready.get('status')} {ready.get('reason') or ''}".rstrip()
           + (f": {ready['message']}" if ready.get("message") else "")) if ready else ""
    return f"not Ready ({workload.pod_state(pod)}{why})"


def _pool_of(ctx: PodContext) -> tuple[Obj, list[Obj]] | str | None:
    """The pool of the pod with the fewest Ready members, and its members among the pods
    read; None when no pool selects it; a reason when the cluster serves none."""
    # Which pods a pool holds and which are Ready exist only in a running cluster: a
    # manifest cannot tell (lint says unknown, never that the pool is fine).
    ctx.runtime("the pods of the InferencePool and their readiness")
    if "pool" in ctx.memo:
        found: tuple[Obj, list[Obj]] | str | None = ctx.memo["pool"]
        return found
    pools = _pools(ctx)
    result: tuple[Obj, list[Obj]] | str | None
    if pools is None:
        result = "the cluster serves no InferencePool API (the Gateway API Inference " \
                 "Extension is not installed)"
    elif not pools:
        result = None
    else:
        chosen = []
        for pool in pools:
            members = [p for p in ctx.snapshot.pods()
                       if (meta(p).get("namespace") or "") == ctx.namespace
                       and workload.selector_matches(_pool_selector(pool),
                                                     meta(p).get("labels") or {})]
            chosen.append((sum(1 for p in members if workload.pod_ready(p)), pool, members))
        _ready, pool, members = min(chosen, key=lambda c: c[0])
        result = (pool, members)
    ctx.memo["pool"] = result
    return result


def _absent(ctx: PodContext, found: tuple[Obj, list[Obj]] | str | None) -> Measured:
    if isinstance(found, str):
        return Measured(None, found)
    return Measured(None, f"no InferencePool selects pod {ctx.pod_name}")


@fact("inference_pools", unit="list", scope="pod",
      doc="the Gateway API Inference Extension InferencePools whose selector matches the "
          "pod (v1 and v1alpha2); [] when none does, None when the cluster serves neither API")
def inference_pools(ctx: PodContext) -> Measured:
    pools = _pools(ctx)
    if pools is None:
        return Measured(None, "the cluster serves no InferencePool API (the Gateway API "
                              "Inference Extension is not installed)")
    if not pools:
        return Measured([], f"no InferencePool selects pod {ctx.pod_name}")
    return Measured([_pool_label(p) for p in pools],
                    f"pod {ctx.pod_name} is in " + "; ".join(_pool_text(p) for p in pools))


@fact("inference_pool_pods", unit="pods", scope="pod",
      doc="the pods read that the pod's InferencePool selects (the pool with the fewest Ready "
          "pods, when several select it); None without a pool")
def inference_pool_pods(ctx: PodContext) -> Measured:
    found = _pool_of(ctx)
    if not isinstance(found, tuple):
        return _absent(ctx, found)
    pool, members = found
    return Measured(len(members), f"{_pool_label(pool)} selects {len(members)} of the pods "
                                  f"read: {', '.join(meta(p).get('name', '') for p in members)}")


@fact("inference_pool_ready_pods", unit="pods", scope="pod",
      doc="of inference_pool_pods, those Ready (condition Ready=True): the endpoints the "
          "pool's endpoint picker can route to; None without a pool")
def inference_pool_ready_pods(ctx: PodContext) -> Measured:
    found = _pool_of(ctx)
    if not isinstance(found, tuple):
        return _absent(ctx, found)
    pool, members = found
    ready = [meta(p).get("name", "") for p in members if workload.pod_ready(p)]
    return Measured(len(ready), f"{_pool_label(pool)}: {len(ready)} of {len(members)} pod(s) "
                                f"Ready" + (f" ({', '.join(ready)})" if ready else ""))


@fact("inference_pool_members", unit="list", scope="pod",
      doc="each pod of the pod's InferencePool as 'pod: Ready' or 'pod: not Ready (state; "
          "the Ready condition's reason)': why each is out of the pool; None without a pool")
def inference_pool_members(ctx: PodContext) -> Measured:
    found = _pool_of(ctx)
    if not isinstance(found, tuple):
        return _absent(ctx, found)
    pool, members = found
    states = [f"{meta(p).get('name')}: {_state(p)}" for p in members]
    return Measured(states, f"{_pool_label(pool)} pods: " + "; ".join(states))


def _lines(source: LogSource) -> Iterator[str]:
    """A log's lines, each cut to ``_PICKER_LINE_CHARS``, read block by block."""
    rest = b""
    for block in source.blocks():
        parts = (rest + block).split(b"\n")
        rest = parts.pop()[-(4 * _PICKER_LINE_CHARS):]  # a line longer than that: its end
        for raw in parts:
            yield decode(raw[:4 * _PICKER_LINE_CHARS])[:_PICKER_LINE_CHARS]
    if rest:
        yield decode(rest)[:_PICKER_LINE_CHARS]


@fact("inference_pool_picker_errors", unit="list", scope="pod",
      doc="the errors the endpoint picker (EPP) of the pod's InferencePool logged placing "
          "requests ('inference gateway: ServiceUnavailable - failed to find candidate pods "
          "for serving the request', 'InferencePoolResourceExhausted - system saturated, "
          "sheddable request dropped'), each distinct one with how often and when last, "
          "read from its pods' current logs; [] when it logged none, None when no picker "
          "pod was read")
def inference_pool_picker_errors(ctx: PodContext) -> Measured:
    ctx.runtime("the endpoint picker's log")
    found = _pool_of(ctx)
    if not isinstance(found, tuple):
        return _absent(ctx, found)
    pool = found[0]
    ns, service = ctx.namespace, workload.endpoint_picker_service(pool)
    if service is None:
        return Measured(None, f"{_pool_label(pool)} names no endpoint picker Service")
    failed = ctx.snapshot.failure(PICKER_PODS, ns, service)
    if failed is not None:  # its pods could not be listed
        raise Unmeasurable(str(failed))
    pods = workload.endpoint_picker_pods(pool, ctx.snapshot.items("services"),
                                         ctx.snapshot.items(PICKER_PODS))
    logs = [(str(meta(p).get("name")), str(c.get("name")), log)
            for p in pods for c in workload.pod_spec(p).get("containers") or []
            if (log := ctx.snapshot.log(ns, str(meta(p).get("name")), str(c.get("name")),
                                        "current")) is not None]
    if not logs:
        # A picker pod whose log was refused: what it logged is unknown, not absent.
        refused = next((f for f in ctx.snapshot.failures if f.kind == PICKER_PODS
                        and f.subject[:2] == (ns, service)), None)
        if refused is not None:
            raise Unmeasurable(str(refused))
        return Measured(None, f"no log of the endpoint picker of {_pool_label(pool)} (Service "
                              f"{service}) was read")
    rx, echo = wordings.regex("endpoint_picker_error"), wordings.regex("endpoint_picker_error_echo")
    seen: dict[str, list[Any]] = {}  # message -> [count, last time, pod, order]
    order = 0
    for pod, container, log in logs:
        for line in _lines(log):
            m = rx.search(line)
            if m is None or echo.search(line):  # each refused request once
                continue
            text = m.group(0).replace('\\"', '"')
            when = linetime.kubelet_time(line)
            entry = seen.setdefault(text, [0, None, f"{pod} ({container})", 0])
            order += 1
            entry[0] += 1
            entry[1], entry[3] = (when or entry[1]), order
    where = ", ".join(sorted({f"{pod} ({container})" for pod, container, _ in logs}))
    if not seen:
        return Measured([], f"endpoint picker {where} of {_pool_label(pool)}: no error "
                            f"placing requests in its log")
    recent = sorted(seen.items(), key=lambda kv: kv[1][3])[-_PICKER_ERRORS_SHOWN:]
    shown = [f"{text} ({count} time{'s' if count != 1 else ''}"
             + (f", last at {when.strftime('%Y-%m-%dT%H:%M:%SZ')}" if when else "") + ")"
             for text, (count, when, _pod, _order) in recent]
    return Measured(shown, f"endpoint picker {where} of {_pool_label(pool)} logged: "
                           + "; ".join(shown))


@fact("service_endpoints", unit="list", scope="pod",
      doc="the pod's endpoints in its Services' EndpointSlices, each 'Service NAME: "
          "ready=... serving=...': a pod whose readiness fails is out of the Service; [] "
          "when no EndpointSlice lists the pod, None when the cluster serves none")
def service_endpoints(ctx: PodContext) -> Measured:
    ctx.runtime("the cluster's EndpointSlices")
    unread = ctx.unread("endpointslices")
    if unread:
        raise Unmeasurable(unread[0])
    if "endpointslices" in ctx.snapshot.absent_kinds:
        return Measured(None, "the cluster serves no EndpointSlice API")
    uid = str(meta(ctx.pod).get("uid") or "")
    out: list[str] = []
    for eps in ctx.snapshot.items("endpointslices"):
        if (meta(eps).get("namespace") or "") != ctx.namespace:
            continue
        service = (meta(eps).get("labels") or {}).get("kubernetes.io/service-name") or \
            meta(eps).get("name")
        for endpoint in eps.get("endpoints") or []:
            ref = endpoint.get("targetRef") or {} if isinstance(endpoint, dict) else {}
            if ref.get("kind") != "Pod" or ref.get("name") != ctx.pod_name or (
                    uid and ref.get("uid") and str(ref.get("uid")) != uid):
                continue
            cond = endpoint.get("conditions") or {}
            out.append(f"Service {service}: ready={cond.get('ready')} "
                       f"serving={cond.get('serving')} terminating={cond.get('terminating')} "
                       f"(EndpointSlice {meta(eps).get('name')})")
    if not out:
        return Measured([], f"no EndpointSlice lists pod {ctx.pod_name}")
    return Measured(out, f"pod {ctx.pod_name}: " + "; ".join(out))
