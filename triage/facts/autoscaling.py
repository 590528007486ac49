"""Facts about what the workload's autoscalers see: the conditions their controllers write
(a HorizontalPodAutoscaler's ScalingActive, a KEDA ScaledObject's Ready and the health of
its triggers) and the vLLM series they scale on, against the series the pods export.

HPA conditions and reasons: kubernetes pkg/controller/podautoscaler/horizontal.go
(``ScalingActive=False`` with ``FailedGetPodsMetric``, ``FailedGetObjectMetric``,
``FailedGetExternalMetric``, ...: "the HPA was unable to compute the replica count: %v").
KEDA: apis/keda/v1alpha1 (conditions Ready, Active, Fallback, Paused; ``status.health``
per trigger metric, ``Happy`` or ``Failing`` with ``numberOfFailures``).

vLLM renames and removes metrics between versions (``triage.vllm.metrics.SUCCESSORS``);
an autoscaler reading a name the pods no longer export reads an empty series and never
scales, while every controller reports itself healthy (llm-d/llm-d#2310; production-stack
#989).
"""

from __future__ import annotations

import difflib
from typing import Any

from triage.facts import Measured, PodContext, Unmeasurable, WorkloadContext, fact
from triage.facts.contexts import OfWorkload
from triage.facts.rollout import _hpas
from triage.kube import workload
from triage.results import Location
from triage.snapshot import Obj, meta
from triage.speed import lazyregex
from triage.vllm.metrics import SUCCESSORS, series_key

# A vLLM series named in a PromQL query (a KEDA prometheus trigger's), and the model a
# query's model_name equality matcher selects.
_PROMQL_VLLM = lazyregex.compile(r"\bvllm[:_][A-Za-z0-9_:]*")
_PROMQL_MODEL = lazyregex.compile(r'\bmodel_name\s*=\s*"([^"]*)"')


def scaled_objects(ctx: OfWorkload) -> list[Obj]:
    """The KEDA ScaledObjects whose scaleTargetRef is the workload ([] without KEDA)."""
    unread = ctx.unread("scaledobjects")
    if unread:
        raise Unmeasurable(unread[0])
    if ctx.owner is None:
        return []
    kind, obj = ctx.owner
    return workload.scaled_objects_for(ctx.snapshot, kind, str(meta(obj).get("name")),
                                       ctx.namespace)


def _conditions(label: str, obj: Obj, items: list[str], texts: list[str],
                at: list[Location]) -> None:
    for i, cond in enumerate((obj.get("status") or {}).get("conditions") or []):
        if not isinstance(cond, dict):
            continue
        item = (f"{label} {cond.get('type')}={cond.get('status')} "
                f"{cond.get('reason') or ''}").rstrip()
        items.append(item)
        texts.append(f"{item}: {cond['message']}" if cond.get("message") else item)
        at.append(Location(obj, ("status", "conditions", i)))


@fact("autoscaler_conditions", unit="list", scope="workload",
      doc="the conditions the workload's autoscalers report, each 'Kind/name Type=Status "
          "Reason' (HPA AbleToScale, ScalingActive, ScalingLimited; KEDA ScaledObject Ready, "
          "Active, Fallback, Paused, and 'health METRIC=Failing' per trigger); the evidence "
          "quotes their messages")
def autoscaler_conditions(ctx: WorkloadContext) -> Measured:
    items: list[str] = []
    texts: list[str] = []
    at: list[Location] = []
    for hpa in _hpas(ctx):
        _conditions(f"HorizontalPodAutoscaler/{meta(hpa).get('name')}", hpa, items, texts, at)
    for so in scaled_objects(ctx):
        label = f"ScaledObject/{meta(so).get('name')}"
        _conditions(label, so, items, texts, at)
        health = (so.get("status") or {}).get("health") or {}
        for metric, state in sorted(health.items() if isinstance(health, dict) else []):
            if not isinstance(state, dict):
                continue
            item = f"{label} health {metric}={state.get('status')}"
            items.append(item)
            texts.append(f"{item} ({state.get('numberOfFailures', 0)} failure(s) in a row)")
            at.append(Location(so, ("status", "health", str(metric))))
    if not items:
        return Measured([], "no HorizontalPodAutoscaler or ScaledObject acting on the workload "
                            "reports a condition")
    return Measured(items, "; ".join(texts), tuple(at))


def _series_read(ctx: OfWorkload) -> list[tuple[str, str]]:
    """(the vLLM series or model_name="..." selector an autoscaler reads, where it is set)."""
    out: list[tuple[str, str]] = []
    for hpa in _hpas(ctx):
        name = meta(hpa).get("name")
        for i, metric in enumerate((hpa.get("spec") or {}).get("metrics") or []):
            kind = str(metric.get("type") or "")
            body = metric.get(kind[:1].lower() + kind[1:]) or {}
            ident = body.get("metric") or {}
            series = str(ident.get("name") or "")
            where = f"HorizontalPodAutoscaler {name} spec.metrics[{i}] ({kind} {series})"
            if series_key(series).startswith("vllm_"):
                out.append((series, where))
            labels = (ident.get("selector") or {}).get("matchLabels") or {}
            if isinstance(labels, dict) and labels.get("model_name"):
                out.append((f'model_name="{labels["model_name"]}"', where))
    for so in scaled_objects(ctx):
        name = meta(so).get("name")
        for i, trigger in enumerate((so.get("spec") or {}).get("triggers") or []):
            if not isinstance(trigger, dict) or trigger.get("type") != "prometheus":
                continue
            query = str((trigger.get("metadata") or {}).get("query") or "")
            where = f"ScaledObject {name} spec.triggers[{i}] (prometheus query '{query}')"
            for series in dict.fromkeys(_PROMQL_VLLM.findall(query)):
                out.append((series, where))
            for model in dict.fromkeys(_PROMQL_MODEL.findall(query)):
                out.append((f'model_name="{model}"', where))
    return out


def _exported(ctx: PodContext) -> tuple[set[str], list[str]] | None:
    """The comparable names of the vLLM series on the pod's /metrics and its model names;
    None when no page was read (the pod does not run); Unmeasurable when it failed."""
    failed = ctx.metrics_failure()
    if failed:
        raise Unmeasurable(failed)
    view = ctx.metrics
    if view is None:
        return None
    return {series_key(n) for n in view.names}, list(view.models)


def _missing(ctx: PodContext) -> tuple[list[tuple[str, str]], set[str], list[str]] | str:
    read = _series_read(ctx)
    if not read:
        return "the workload's autoscalers read no vLLM series"
    exported = _exported(ctx)
    if exported is None:
        return f"no /metrics was read for pod {ctx.pod_name} (it does not run)"
    names, models = exported
    missing: list[tuple[str, str]] = []
    for series, where in read:
        if series.startswith("model_name="):
            if series.split("=", 1)[1].strip('"') not in models:
                missing.append((series, where))
        elif series_key(series) not in names:
            missing.append((series, where))
    return missing, names, models


@fact("autoscaler_series_missing", unit="list", scope="pod",
      doc="the vLLM series (and model_name selectors) the workload's HPAs and KEDA "
          "prometheus triggers read that the pod's /metrics does not have: what they scale "
          "on is empty; None when no /metrics was read (the pod does not run)")
def autoscaler_series_missing(ctx: PodContext) -> Measured:
    found = _missing(ctx)
    if isinstance(found, str):
        return Measured(None if "no /metrics" in found else [], found)
    missing, names, models = found
    if not missing:
        return Measured([], f"every vLLM series the autoscalers read is on pod "
                            f"{ctx.pod_name}'s /metrics")
    texts = []
    for series, where in missing:
        if series.startswith("model_name="):
            texts.append(f"{where} selects {series}; pod {ctx.pod_name}'s series carry "
                         f"model_name {', '.join(models) or '(none)'}")
        else:
            texts.append(f"{where} reads {series}; pod {ctx.pod_name}'s /metrics has no such "
                         f"series ({len(names)} vLLM series there)")
    return Measured(list(dict.fromkeys(s for s, _ in missing)), "; ".join(texts))


def _replacement(series: str, names: set[str], models: list[str],
                 exposed: dict[str, str]) -> str:
    if series.startswith("model_name="):
        return f'model_name="{models[0]}"' if models else "(the pod reports no model_name)"
    colon = series.replace("_", ":", 1) if series.startswith("vllm_") else series
    successor = SUCCESSORS.get(colon)
    if successor is not None and series_key(successor) in names:
        return exposed.get(series_key(successor), successor)
    if colon in SUCCESSORS:
        return "(removed from vLLM, no successor)"
    close = difflib.get_close_matches(series_key(series), sorted(names), n=1, cutoff=0.6)
    return exposed.get(close[0], close[0]) if close else "(no close series)"


@fact("autoscaler_series_replacements", unit="list", scope="pod",
      doc="for each series in autoscaler_series_missing, 'old -> new': what the pod does "
          "export instead (vLLM's renamed metric, the model_name it reports, else the "
          "closest vLLM series name on its /metrics); None when no /metrics was read")
def autoscaler_series_replacements(ctx: PodContext) -> Measured:
    found = _missing(ctx)
    if isinstance(found, str):
        return Measured(None if "no /metrics" in found else [], found)
    missing, names, models = found
    view: Any = ctx.metrics
    exposed: dict[str, str] = {}
    for name in sorted(view.names if view is not None else ()):
        family = name
        for suffix in ("_bucket", "_sum", "_count", "_created"):
            family = family.removesuffix(suffix)
        exposed.setdefault(series_key(name), family)
    pairs = [f"{series} -> {_replacement(series, names, models, exposed)}"
             for series in dict.fromkeys(s for s, _ in missing)]
    if not pairs:
        return Measured([], "nothing the autoscalers read is missing")
    return Measured(pairs, f"pod {ctx.pod_name} exports: " + "; ".join(pairs))
