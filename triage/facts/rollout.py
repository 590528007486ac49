"""Facts about the workload that runs the pod: autoscaling, replicas and rollouts."""

from __future__ import annotations

import heapq
import itertools
from typing import Any

from triage.facts import ContainerContext, Measured, PodContext, Unmeasurable, WorkloadContext, fact
from triage.facts.contexts import OfWorkload
from triage.facts.engine import where
from triage.kube import workload
from triage.results import Location
from triage.snapshot import CURRENT, PREVIOUS, Obj, meta
from triage.speed import lazyregex
from triage.vllm import engine_config

_QUEUE_METRIC = lazyregex.compile(r"num_requests_(running|waiting)")
_KNATIVE = "autoscaling.knative.dev/"


def _hpas(ctx: OfWorkload) -> list[Obj]:
    unread = ctx.unread("horizontalpodautoscalers")
    if unread:
        raise Unmeasurable(unread[0])
    if ctx.owner is None:
        return []
    kind, obj = ctx.owner
    return workload.autoscalers_for(ctx.snapshot, kind, str(meta(obj).get("name")),
                                    ctx.namespace)


def _isvc(ctx: OfWorkload) -> Obj | None:
    isvc = workload.inference_service(ctx.snapshot, ctx.pod)
    if isvc is None and workload.inference_service_name(ctx.pod):
        unread = ctx.unread("inferenceservices")
        if unread:
            raise Unmeasurable(unread[0])
    return isvc


def _isvc_annotations(isvc: Obj) -> dict[str, str]:
    """The InferenceService's annotations, the predictor's own winning (KServe merges them)."""
    ann = {str(k): str(v) for k, v in (meta(isvc).get("annotations") or {}).items()}
    pred = (isvc.get("spec") or {}).get("predictor") or {}
    ann.update({str(k): str(v) for k, v in (pred.get("annotations") or {}).items()})
    return ann


_KSERVE = "serving.kserve.io/"
_KNATIVE_HPA_CLASS = "hpa.autoscaling.knative.dev"
_MODES = {"rawdeployment": "RawDeployment", "standard": "RawDeployment",
          "serverless": "Serverless", "knative": "Serverless", "modelmesh": "ModelMesh"}


def _isvc_mode(isvc: Obj) -> tuple[str, str, Location]:
    """How KServe deploys the InferenceService (RawDeployment, Serverless, ModelMesh): the
    mode its status records, else its serving.kserve.io/deploymentMode annotation, else
    KServe's default configuration (Serverless), said as an assumption."""
    ann = meta(isvc).get("annotations") or {}
    key = _KSERVE + "deploymentMode"
    status = str((isvc.get("status") or {}).get("deploymentMode") or "")
    at = Location(isvc, ("metadata", "annotations", key))
    if status and status.lower() in _MODES:
        return _MODES[status.lower()], f"status.deploymentMode {status}", at
    written = str(ann.get(key) or "")
    if written.lower() in _MODES:
        return _MODES[written.lower()], f"annotation {key} \"{written}\"", at
    return "Serverless", (f"no {key} annotation: KServe's default configuration, "
                          "Serverless, is assumed (a cluster set to RawDeployment or "
                          "Standard scales it with an HPA on CPU instead)"), at


def _raw_hpa(isvc: Obj) -> tuple[str | None, str, Location]:
    """A RawDeployment InferenceService's autoscaler class: hpa (KServe's default: it
    makes an HPA), or external / none / keda (it makes none)."""
    ann = meta(isvc).get("annotations") or {}
    key = _KSERVE + "autoscalerClass"
    value = str(ann.get(key) or "hpa")
    at = Location(isvc, ("metadata", "annotations", key))
    how = f"annotation {key} \"{value}\"" if key in ann else f"{key} unset (KServe's default hpa)"
    return (value if value in ("hpa", "external", "none", "keda") else None), how, at


def _knative_pod(ctx: OfWorkload) -> Obj | None:
    """The autoscaling annotations of a Knative Service's pod (its revision template's),
    when the pod is not an InferenceService's (KServe's own are read from it)."""
    labels = meta(ctx.pod).get("labels") or {}
    if not labels.get("serving.knative.dev/service") or \
            workload.inference_service_name(ctx.pod):
        return None
    ann = meta(ctx.pod).get("annotations") or {}
    return {str(k): str(v) for k, v in ann.items() if str(k).startswith(_KNATIVE)}


def _knative_at(ctx: OfWorkload, key: str) -> Location:
    return Location(ctx.pod, ("metadata", "annotations", key))


def _hpa_label(hpa: Obj) -> str:
    ref = (hpa.get("spec") or {}).get("scaleTargetRef") or {}
    return f"HorizontalPodAutoscaler {meta(hpa).get('name')} (scaleTargetRef " \
           f"{ref.get('kind')}/{ref.get('name')})"


def _quantity(value: Any) -> float | None:
    text = str(value).strip()
    try:
        if text.endswith("m"):
            return float(text[:-1]) / 1000
        return float(text)
    except ValueError:
        return None


@fact("autoscalers", unit="list", scope="workload",
      doc="the HorizontalPodAutoscalers and InferenceService autoscaling acting on the workload, "
          "described")
def autoscalers(ctx: WorkloadContext) -> Measured:
    out: list[str] = []
    for hpa in _hpas(ctx):
        spec = hpa.get("spec") or {}
        ref = spec.get("scaleTargetRef") or {}
        metrics = []
        for m in spec.get("metrics") or []:
            kind = m.get("type", "")
            body = m.get(kind[:1].lower() + kind[1:]) or {}
            name = body.get("name") or (body.get("metric") or {}).get("name")
            target = body.get("target") or {}
            value = target.get("averageUtilization") or target.get("averageValue") or \
                target.get("value")
            metrics.append(f"{kind} {name} target {value}")
        out.append(f"HPA {meta(hpa).get('name')} -> {ref.get('kind')}/{ref.get('name')}: "
                   f"replicas {spec.get('minReplicas', 1)}-{spec.get('maxReplicas')}, "
                   f"{'; '.join(metrics) or 'default CPU 80%'}")
    isvc = _isvc(ctx)
    if isvc is not None:
        keys = {k.removeprefix(_KNATIVE): v for k, v in _isvc_annotations(isvc).items()
                if k.startswith(_KNATIVE)}
        pred = (isvc.get("spec") or {}).get("predictor") or {}
        extra = {k: pred[k] for k in ("minReplicas", "maxReplicas", "scaleTarget", "scaleMetric")
                 if k in pred}
        shown = ", ".join(f"{k}={v}" for k, v in (keys | extra).items()) or \
            "KServe defaults (concurrency target 100 per pod)"
        out.append(f"InferenceService {meta(isvc).get('name')}: {shown}")
    knative = _knative_pod(ctx)
    if knative is not None:
        shown = ", ".join(f"{k.removeprefix(_KNATIVE)}={v}" for k, v in knative.items())
        service = (meta(ctx.pod).get("labels") or {}).get("serving.knative.dev/service")
        out.append(f"Knative Service {service}: "
                   f"{shown or 'Knative defaults (KPA on concurrency, min-scale 0)'}")
    if not out:
        return Measured([], "no HorizontalPodAutoscaler or InferenceService autoscaling acts on "
                            "the workload")
    return Measured(out, "; ".join(out))


@fact("autoscaler_metrics", unit="list", scope="workload",
      doc="what the workload's autoscalers scale on: cpu, memory, a custom metric's name, "
          "or concurrency / rps (Knative)")
def autoscaler_metrics(ctx: WorkloadContext) -> Measured:
    found: list[str] = []
    texts: list[str] = []
    at: list[Location] = []
    for hpa in _hpas(ctx):
        spec = hpa.get("spec") or {}
        if spec.get("targetCPUUtilizationPercentage") is not None:  # autoscaling/v1
            found.append("cpu")
            at.append(Location(hpa, ("spec", "targetCPUUtilizationPercentage")))
            texts.append(f"{_hpa_label(hpa)} spec.targetCPUUtilizationPercentage "
                         f"{spec['targetCPUUtilizationPercentage']}")
        for i, metric in enumerate(spec.get("metrics") or []):
            kind = metric.get("type")
            if kind in ("Resource", "ContainerResource"):
                body = metric.get("resource") or metric.get("containerResource") or {}
                name = str(body.get("name"))
            else:
                body = metric.get(str(kind or "")[:1].lower() + str(kind or "")[1:]) or {}
                name = str((body.get("metric") or {}).get("name", kind))
            target = body.get("target") or {}
            goal = target.get("averageUtilization", target.get("averageValue",
                                                               target.get("value")))
            found.append(name)
            at.append(Location(hpa, ("spec", "metrics", i)))
            texts.append(f"{_hpa_label(hpa)} spec.metrics[{i}]: {kind} {name} target "
                         f"{target.get('type', '')} {goal}")
        if not spec.get("metrics") and spec.get("targetCPUUtilizationPercentage") is None:
            found.append("cpu")
            at.append(Location(hpa, ("spec", "metrics")))
            texts.append(f"{_hpa_label(hpa)} has no metrics: the default is CPU 80%")
        for cur in (hpa.get("status") or {}).get("currentMetrics") or []:
            body = cur.get("resource") or {}
            if cur.get("type") == "Resource" and body.get("name") in found:
                now = body.get("current") or {}
                texts.append(f"{_hpa_label(hpa)} status.currentMetrics: {body.get('name')} "
                             f"{now.get('averageUtilization', now.get('averageValue'))}"
                             f"{'%' if 'averageUtilization' in now else ''} now")
    isvc = _isvc(ctx)
    mode = _isvc_mode(isvc) if isvc is not None else None
    if isvc is not None and mode is not None and mode[0] == "RawDeployment":
        _raw_metrics(isvc, mode, found, texts, at)
    elif isvc is not None:
        isvc_name = meta(isvc).get("name")
        pred = (isvc.get("spec") or {}).get("predictor") or {}
        ann = _isvc_annotations(isvc)
        knative_hpa = ann.get(_KNATIVE + "class") == _KNATIVE_HPA_CLASS
        if pred.get("scaleMetric"):
            found.append(str(pred["scaleMetric"]).lower())
            at.append(Location(isvc, ("spec", "predictor", "scaleMetric")))
            texts.append(f"InferenceService {isvc_name} spec.predictor.scaleMetric "
                         f"{pred['scaleMetric']} (scaleTarget {pred.get('scaleTarget')})")
        elif ann.get(_KNATIVE + "metric"):
            found.append(ann[_KNATIVE + "metric"].lower())
            at.append(_annotation_at(isvc, _KNATIVE + "metric"))
            texts.append(f"InferenceService {isvc_name} annotation {_KNATIVE}metric "
                         f"\"{ann[_KNATIVE + 'metric']}\"")
        elif knative_hpa:
            found.append("cpu")
            at.append(_annotation_at(isvc, _KNATIVE + "class"))
            texts.append(f"InferenceService {isvc_name} annotation {_KNATIVE}class "
                         f"\"{_KNATIVE_HPA_CLASS}\" without a metric: Knative's HPA class "
                         "scales on cpu")
        else:
            found.append("concurrency")
            at.append(Location(isvc, ("spec", "predictor")))
            texts.append(f"InferenceService {isvc_name}: Knative concurrency (KServe's default; "
                         f"{mode[1] if mode else ''})")
    knative = _knative_pod(ctx)
    if knative is not None:
        service = (meta(ctx.pod).get("labels") or {}).get("serving.knative.dev/service")
        cls = knative.get(_KNATIVE + "class", "kpa.autoscaling.knative.dev")
        metric = knative.get(_KNATIVE + "metric")
        if metric:
            found.append(metric.lower())
            at.append(_knative_at(ctx, _KNATIVE + "metric"))
            texts.append(f"Knative Service {service} annotation {_KNATIVE}metric \"{metric}\"")
        elif cls == _KNATIVE_HPA_CLASS:
            found.append("cpu")
            at.append(_knative_at(ctx, _KNATIVE + "class"))
            texts.append(f"Knative Service {service} annotation {_KNATIVE}class \"{cls}\" "
                         "without a metric: Knative's HPA class scales on cpu")
        else:
            found.append("concurrency")
            at.append(_knative_at(ctx, _KNATIVE + "metric"))
            texts.append(f"Knative Service {service}: Knative's default, KPA on concurrency")
    names = list(dict.fromkeys(found))
    if not names:
        return Measured([], "no autoscaler acts on the workload")
    return Measured(names, "; ".join(texts), tuple(at))


def _raw_metrics(isvc: Obj, mode: tuple[str, str, Location], found: list[str],
                 texts: list[str], at: list[Location]) -> None:
    """What KServe's HPA for a RawDeployment InferenceService scales on (its HPA
    reconciler: spec.predictor.autoScaling.metrics, else scaleMetric, else cpu at 80%)."""
    name = meta(isvc).get("name")
    pred = (isvc.get("spec") or {}).get("predictor") or {}
    cls, how, cls_at = _raw_hpa(isvc)
    if cls != "hpa":
        texts.append(f"InferenceService {name} ({mode[1]}): {how}, KServe makes no HPA")
        return
    metrics = (pred.get("autoScaling") or {}).get("metrics") if isinstance(
        pred.get("autoScaling"), dict) else None
    if isinstance(metrics, list) and metrics:
        for i, m in enumerate(metrics):
            body = m.get("resource") if isinstance(m, dict) else None
            if isinstance(body, dict) and body.get("name"):
                found.append(str(body["name"]).lower())
                at.append(Location(isvc, ("spec", "predictor", "autoScaling", "metrics", i)))
                texts.append(f"InferenceService {name} ({mode[1]}, {how}): "
                             f"spec.predictor.autoScaling.metrics[{i}] Resource {body['name']}")
        return
    ann = meta(isvc).get("annotations") or {}
    target = pred.get("scaleTarget") or ann.get(_KSERVE + "targetUtilizationPercentage") or 80
    if pred.get("scaleMetric"):
        metric, where = str(pred["scaleMetric"]), Location(isvc, ("spec", "predictor",
                                                                  "scaleMetric"))
        said = f"spec.predictor.scaleMetric {metric}"
    else:
        # The annotation KServe's docs write (metric) and its validator reads (metrics).
        key = next((_KSERVE + k for k in ("metric", "metrics") if ann.get(_KSERVE + k)), None)
        metric = str(ann[key]) if key else "cpu"
        where = Location(isvc, ("metadata", "annotations", key)) if key else (
            cls_at if _KSERVE + "autoscalerClass" in ann else mode[2])
        said = (f"annotation {key} \"{metric}\"" if key
                else "spec.predictor.scaleMetric unset (KServe's HPA default: cpu)")
    found.append(metric.lower())
    at.append(where)
    texts.append(f"InferenceService {name} ({mode[1]}, {how}): KServe's HPA scales on {said}, "
                 f"target {target}% utilization")


def _annotation_at(isvc: Obj, key: str) -> Location:
    """An InferenceService annotation: on the predictor when set there (it wins)."""
    pred = (isvc.get("spec") or {}).get("predictor") or {}
    if key in (pred.get("annotations") or {}):
        return Location(isvc, ("spec", "predictor", "annotations", key))
    return Location(isvc, ("metadata", "annotations", key))


def _concurrency_targets(ctx: ContainerContext) -> list[tuple[float, str, str, str]]:
    """(target per pod, what it counts: running|waiting, where it is set, the field that
    holds it in the first autoscaler of the workload, or "" when it is set elsewhere)."""
    out: list[tuple[float, str, str, str]] = []
    isvc = _isvc(ctx)
    if isvc is not None:
        name = meta(isvc).get("name")
        ann = _isvc_annotations(isvc)
        pred = (isvc.get("spec") or {}).get("predictor") or {}
        metric = ann.get(_KNATIVE + "metric", "concurrency").lower()
        raw = ann.get(_KNATIVE + "target")
        scale_metric = str(pred.get("scaleMetric", "concurrency")).lower()
        if metric == "concurrency" and raw is not None and _quantity(raw) is not None:
            out.append((float(_quantity(raw) or 0), "running",
                        f"InferenceService {name} annotation {_KNATIVE}target "
                        f"\"{raw}\" (concurrent requests per pod)", ""))
        elif scale_metric == "concurrency" and pred.get("scaleTarget") is not None:
            out.append((float(pred["scaleTarget"]), "running",
                        f"InferenceService {name} spec.predictor.scaleTarget "
                        f"{pred['scaleTarget']} (scaleMetric concurrency)", ""))
    for h, hpa in enumerate(_hpas(ctx)):
        for i, metric in enumerate((hpa.get("spec") or {}).get("metrics") or []):
            kind = metric.get("type")
            body = metric.get("pods") if kind == "Pods" else \
                metric.get("external") if kind == "External" else None
            if not body:
                continue
            mname = str((body.get("metric") or {}).get("name", ""))
            m = _QUEUE_METRIC.search(mname)
            target = body.get("target") or {}
            held_in = "averageValue" if "averageValue" in target else "value"
            goal = target.get(held_in)
            if m and goal is not None and _quantity(goal) is not None:
                # A patch of the autoscaler changes the workload's first one (fixes.target_of).
                where = f"spec.metrics[{i}].{str(kind).lower()}.target.{held_in}" \
                    if h == 0 else ""
                out.append((float(_quantity(goal) or 0), m.group(1),
                            f"{_hpa_label(hpa)} spec.metrics[{i}]: {kind} {mname} "
                            f"{held_in} {goal}", where))
    return out


def _pod_capacity(ctx: ContainerContext) -> tuple[float, str] | None:
    for stream in (CURRENT, PREVIOUS):
        rep = ctx.startup.get(stream)
        if rep is not None and rep.max_concurrency:
            line = rep.evidence.get("max_concurrency")
            at = where(ctx, stream, line) if line else f"{stream} log"
            return rep.max_concurrency, f"one pod serves about {rep.max_concurrency:g} " \
                                        f"requests at once ({at})"
    values = ctx.metric_values()
    seqs = ctx.engine.integer("max-num-seqs")
    if values is not None and seqs:
        running = values.get("requests_running")
        if running is not None and running >= seqs:
            return float(seqs), (f"one pod serves at most {seqs} requests at once: /metrics "
                                 f"requests_running {running:g} = --max-num-seqs {seqs}")
    return None


@fact("autoscale_target_over_capacity", unit="ratio", scope="container",
      doc="the autoscaler's per-pod concurrency or queue target divided by the requests one "
          "pod serves at once (vLLM's maximum concurrency, or --max-num-seqs when saturated)")
def autoscale_target_over_capacity(ctx: ContainerContext) -> Measured:
    targets = _concurrency_targets(ctx)
    if not targets:
        return Measured(None, "no concurrency or queue-length autoscaling target for this "
                              "workload")
    cap = _pod_capacity(ctx)
    if cap is None:
        if ctx.logs_unread():
            raise Unmeasurable(ctx.logs_unread()[0])
        return Measured(None, f"{targets[0][2]}; what one pod can serve is not known (no "
                              "'Maximum concurrency' line in the logs read)")
    capacity, cap_text = cap
    ratio, text = 0.0, ""
    for target, counts, at, _ in targets:
        r = target / capacity if capacity else 0.0
        if r >= ratio:
            noun = "concurrent requests" if counts == "running" else "waiting requests"
            ratio, text = r, (f"{at}: the autoscaler adds pods only above {target:g} "
                              f"{noun} per pod, {r:.1f}x the per-pod capacity; {cap_text}")
    return Measured(ratio, text)


@fact("hpa_max_replicas", unit="replicas", scope="workload",
      doc="spec.maxReplicas of the HorizontalPodAutoscaler whose scaleTargetRef is the pod's "
          "Deployment or StatefulSet; None without one")
def hpa_max_replicas(ctx: WorkloadContext) -> Measured:
    for hpa in _hpas(ctx):
        value = (hpa.get("spec") or {}).get("maxReplicas")
        if isinstance(value, int):
            return Measured(value, f"HPA {meta(hpa).get('name')} spec.maxReplicas {value}",
                            (Location(hpa, ("spec", "maxReplicas")),))
    return Measured(None, "no HorizontalPodAutoscaler with maxReplicas scales the workload")


@fact("min_replicas", unit="replicas", scope="workload",
      doc="the fewest replicas the autoscalers may leave (HPA minReplicas, InferenceService "
          "minReplicas / min-scale); None without an autoscaler")
def min_replicas(ctx: WorkloadContext) -> Measured:
    sources: list[tuple[int, str, Location]] = []
    isvc = _isvc(ctx)
    mode = _isvc_mode(isvc) if isvc is not None else None
    if isvc is not None and mode is not None and mode[0] == "RawDeployment" and \
            _raw_hpa(isvc)[0] == "hpa":
        name = meta(isvc).get("name")
        pred = (isvc.get("spec") or {}).get("predictor") or {}
        asked = pred.get("minReplicas")
        n = max(int(asked), 1) if isinstance(asked, int) else 1
        sources.append((n, f"InferenceService {name} ({mode[1]}): KServe's HPA minReplicas {n} "
                           f"(spec.predictor.minReplicas {asked if asked is not None else 'unset'};"
                           " KServe raises it to at least 1)",
                        Location(isvc, ("spec", "predictor", "minReplicas"))))
    elif isvc is not None:
        name = meta(isvc).get("name")
        pred = (isvc.get("spec") or {}).get("predictor") or {}
        if pred.get("minReplicas") is not None:
            sources.append((int(pred["minReplicas"]),
                            f"InferenceService {name} spec.predictor.minReplicas "
                            f"{pred['minReplicas']}",
                            Location(isvc, ("spec", "predictor", "minReplicas"))))
        for key in (_KNATIVE + "min-scale", _KNATIVE + "minScale"):
            raw = _isvc_annotations(isvc).get(key)
            if raw is not None and raw.strip().isdigit():
                sources.append((int(raw), f"InferenceService {name} annotation {key} \"{raw}\"",
                                _annotation_at(isvc, key)))
        if not sources:
            sources.append((1, f"InferenceService {name}: minReplicas unset (KServe default 1)",
                            Location(isvc, ("spec", "predictor", "minReplicas"))))
    knative = _knative_pod(ctx)
    if knative is not None:
        service = (meta(ctx.pod).get("labels") or {}).get("serving.knative.dev/service")
        scale_key = next((k for k in (_KNATIVE + "min-scale", _KNATIVE + "minScale")
                          if k in knative), None)
        hpa_class = knative.get(_KNATIVE + "class") == _KNATIVE_HPA_CLASS
        if scale_key is not None and knative[scale_key].strip().isdigit():
            n = int(knative[scale_key])
            if hpa_class:
                n = max(n, 1)
            sources.append((n, f"Knative Service {service} annotation {scale_key} "
                               f"\"{knative[scale_key]}\""
                               + (" (Knative's HPA class keeps at least 1)" if hpa_class else ""),
                            _knative_at(ctx, scale_key)))
        elif hpa_class:
            sources.append((1, f"Knative Service {service}: min-scale unset, Knative's HPA class "
                               "keeps at least 1", _knative_at(ctx, _KNATIVE + "class")))
        else:
            sources.append((0, f"Knative Service {service}: {_KNATIVE}min-scale unset: Knative's "
                               "default 0 lets the revision scale to zero when idle (unless the "
                               "cluster's config-autoscaler sets min-scale or "
                               "enable-scale-to-zero: false)",
                            _knative_at(ctx, _KNATIVE + "min-scale")))
    for hpa in _hpas(ctx):
        spec = hpa.get("spec") or {}
        n = int(spec.get("minReplicas", 1))
        sources.append((n, f"{_hpa_label(hpa)} spec.minReplicas {n}"
                           + (" (unset: default 1)" if "minReplicas" not in spec else ""),
                        Location(hpa, ("spec", "minReplicas"))))
    if not sources:
        return Measured(None, "no autoscaler acts on the workload")
    low = min(n for n, _, _ in sources)
    return Measured(low, "; ".join(t for _, t, _ in sources),
                    tuple(loc for n, _, loc in sources if n == low))


@fact("workload_replicas", unit="replicas", scope="workload",
      doc="spec.replicas of the Deployment or StatefulSet that runs the pod")
def workload_replicas(ctx: WorkloadContext) -> Measured:
    if ctx.owner is None:
        unread = ctx.unread("replicasets", "deployments", "statefulsets")
        if unread:
            raise Unmeasurable(unread[0])
        return Measured(None, "no owning Deployment or StatefulSet was read for this pod")
    kind, obj = ctx.owner
    replicas = (obj.get("spec") or {}).get("replicas", 1)
    return Measured(replicas, f"{kind} {meta(obj).get('name')}: replicas {replicas}",
                    (Location(obj, ("spec", "replicas")),))


def _deployment(ctx: OfWorkload) -> Obj | None:
    if ctx.owner is None or ctx.owner[0] != "Deployment":
        unread = ctx.unread("replicasets", "deployments")
        if unread and workload.controller_ref(ctx.pod):
            raise Unmeasurable(unread[0])
        return None
    return ctx.owner[1]


@fact("rollout_max_surge_pods", unit="pods", scope="workload",
      doc="extra pods a rolling update of the Deployment starts before stopping old ones "
          "(maxSurge, 25% by default, rounded up); 0 for Recreate")
def rollout_max_surge_pods(ctx: WorkloadContext) -> Measured:
    dep = _deployment(ctx)
    if dep is None:
        return Measured(None, "the pod is not run by a Deployment that was read")
    name = meta(dep).get("name")
    spec = dep.get("spec") or {}
    strategy = spec.get("strategy") or {}
    # maxSurge where it is written; else the strategy, else the replicas it scales (a
    # manifest's finding points at the first of these that is written).
    at = (Location(dep, ("spec", "strategy", "rollingUpdate", "maxSurge")),
          Location(dep, ("spec", "strategy")), Location(dep, ("spec", "replicas")))
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return Measured(0, f"Deployment {name} spec.strategy.type {strategy.get('type')}",
                        (Location(dep, ("spec", "strategy", "type")),))
    rolling = strategy.get("rollingUpdate") or {}
    raw = rolling.get("maxSurge", "25%")
    replicas = int(spec.get("replicas", 1))
    surge = workload.scaled_count(raw, replicas, round_up=True)
    return Measured(surge, f"Deployment {name} spec.strategy RollingUpdate maxSurge {raw}"
                           + (" (unset: default 25%)" if "maxSurge" not in rolling else "")
                           + f" = {surge} extra pod(s) over spec.replicas {replicas}", at)


@fact("other_revision_pods_running", unit="pods", scope="pod",
      doc="Running pods of the Deployment's other ReplicaSets (revisions) than this pod's")
def other_revision_pods_running(ctx: PodContext) -> Measured:
    ctx.runtime("the pods of the Deployment's other revisions")
    dep = _deployment(ctx)
    if dep is None:
        return Measured(None, "the pod is not run by a Deployment that was read")
    own_rs = workload.pod_replicaset(ctx.snapshot, ctx.pod)
    own_name = meta(own_rs).get("name") if own_rs else None
    others = {str(meta(rs).get("name")): rs for rs in workload.replicasets_of(ctx.snapshot, dep)
              if meta(rs).get("name") != own_name}
    # Running pods per ReplicaSet come from one index per snapshot: this fact is
    # asked for every pod, and walking every pod each time was quadratic.
    by_rs = workload.running_pods_by_replicaset(ctx.snapshot)
    found = {rs_name: by_rs.get((ctx.namespace, rs_name), []) for rs_name in others}
    count = sum(len(pods) for pods in found.values())
    if not count:
        return Measured(0, "no pod of another revision is running")
    # The first three in the pod list's order, without walking them all.
    first = list(itertools.islice(heapq.merge(*(
        ((pos, name, rs_name) for pos, name in pods) for rs_name, pods in found.items())), 3))
    shown = [f"pod {name} of ReplicaSet {rs_name} (revision "
             f"{workload.revision(others[rs_name])}) still runs" for _, name, rs_name in first]
    return Measured(count, "; ".join(shown) + (f" and {count - 3} more" if count > 3 else ""))


def _changes(old: Obj, new: Obj, container_name: str) -> list[tuple[str, str]]:
    def pick(rs: Obj) -> Obj:
        cs = workload.template_containers(rs)
        return next((c for c in cs if c.get("name") == container_name), cs[0] if cs else {})
    a, b = pick(old), pick(new)
    out: list[tuple[str, str]] = []
    if a.get("image") != b.get("image"):
        out.append(("image", f"image {a.get('image')} -> {b.get('image')}"))
    ea, eb = engine_config.parse(a), engine_config.parse(b)
    if ea.model != eb.model:
        out.append(("model", f"model {ea.model} -> {eb.model}"))
    skip = {"model", "port", "host"}
    flags = sorted((set(ea.flags) | set(eb.flags)) - skip)
    diffs = [f"--{f} {ea.flags.get(f, 'unset')} -> {eb.flags.get(f, 'unset')}" for f in flags
             if ea.flags.get(f) != eb.flags.get(f)]
    if diffs:
        out.append(("flags", "engine flags " + ", ".join(diffs)))
    ra, rb = a.get("resources") or {}, b.get("resources") or {}
    if ra != rb:
        parts = []
        for section in ("requests", "limits"):
            sa, sb = ra.get(section) or {}, rb.get(section) or {}
            for key in sorted(set(sa) | set(sb)):
                if str(sa.get(key)) != str(sb.get(key)):
                    parts.append(f"{section}.{key} {sa.get(key, 'unset')} -> "
                                 f"{sb.get(key, 'unset')}")
        out.append(("resources", "resources " + ", ".join(parts)))
    return out


@fact("rollout_changes", unit="count", scope="container",
      doc="how many of image, model, engine flags and resources of this container the "
          "Deployment's newest revision changed against the one before")
def rollout_changes(ctx: ContainerContext) -> Measured:
    ctx.runtime("the Deployment's ReplicaSet history")
    dep = _deployment(ctx)
    if dep is None:
        return Measured(None, "the pod is not run by a Deployment that was read")
    sets = [rs for rs in workload.replicasets_of(ctx.snapshot, dep) if workload.revision(rs)]
    if len(sets) < 2:
        return Measured(None, f"Deployment {meta(dep).get('name')}: fewer than two ReplicaSet "
                              "revisions were read")
    new, old = sets[0], sets[1]
    changes = _changes(old, new, ctx.name)
    head = (f"Deployment {meta(dep).get('name')} revision {workload.revision(old)} "
            f"(ReplicaSet {meta(old).get('name')}) -> revision {workload.revision(new)} "
            f"(ReplicaSet {meta(new).get('name')})")
    if not changes:
        return Measured(0, f"{head}: no change to image, model, engine flags or resources")
    return Measured(len(changes), f"{head} changed {len(changes)} thing(s): "
                    + "; ".join(text for _, text in changes))


@fact("rollout_revision", unit="revision", scope="workload",
      doc="the Deployment's current revision (deployment.kubernetes.io/revision, 0 if "
          "unset); None when no Deployment runs the pod")
def rollout_revision(ctx: WorkloadContext) -> Measured:
    ctx.runtime("the Deployment's ReplicaSet history")
    dep = _deployment(ctx)
    if dep is None:
        return Measured(None, "the pod is not run by a Deployment that was read")
    revs = workload.replicasets_of(ctx.snapshot, dep)
    rev = workload.revision(dep)
    return Measured(rev, f"Deployment {meta(dep).get('name')}: revision "
                         f"{rev or '?'}, {len(revs)} ReplicaSet(s) read")


@fact("inference_service", unit="text", scope="workload",
      doc="the name of the KServe InferenceService that runs the pod; None if none")
def inference_service(ctx: WorkloadContext) -> Measured:
    isvc = _isvc(ctx)
    if isvc is None:
        return Measured(None, "the pod is not part of an InferenceService that was read")
    return Measured(str(meta(isvc).get("name")), f"InferenceService {meta(isvc).get('name')}")


@fact("canary_traffic_percent", unit="percent", scope="workload",
      doc="the InferenceService predictor's canaryTrafficPercent; None when unset or no "
          "InferenceService")
def canary_traffic_percent(ctx: WorkloadContext) -> Measured:
    isvc = _isvc(ctx)
    if isvc is None:
        return Measured(None, "the pod is not part of an InferenceService that was read")
    pct = ((isvc.get("spec") or {}).get("predictor") or {}).get("canaryTrafficPercent")
    return Measured(pct, f"InferenceService {meta(isvc).get('name')}: "
                         + (f"canary rollout, canaryTrafficPercent {pct}" if pct is not None
                            else "no canary traffic split (canaryTrafficPercent unset)"))
