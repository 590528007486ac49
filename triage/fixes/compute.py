"""Fixes computed from facts: a pattern's ``fix`` cases run on the container that raised it.

The first case whose ``when`` holds and whose values can all be computed
wins: its values (each a ``triage.fixes.language`` expression over facts,
metrics, earlier values and where the pod is) fill its text, its commands
and its patch. When a case holds but a fact it needs was not measured, the
fix says which fact and why, then gives the pattern's general advice. The
patch is built against the object that owns the pod (``triage.fixes.patches``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Protocol

from triage.facts import REGISTRY as FACTS
from triage.facts import ContainerContext
from triage.fixes import commands as patch_commands
from triage.fixes import patches
from triage.fixes.language import (
    FixCase,
    FixLanguageError,
    Missing,
    PatchSpec,
    fill,
    render_command,
    render_text,
)
from triage.kube import workload
from triage.results import Fix, Patch
from triage.snapshot import Obj, meta
from triage.vllm.metrics import METRICS


class Fixable(Protocol):
    """What a fix is computed from: a pattern's id, remediation and fix cases."""

    @property
    def id(self) -> str: ...
    @property
    def remediation(self) -> str: ...
    @property
    def fix(self) -> tuple[FixCase, ...]: ...


_SKIPPED = Missing("")  # a case whose ``if`` is false: not a missing fact


class _Scope(dict[str, Any]):
    """Names a fix reads, computed when first read: facts, metrics, where the pod is."""

    def __init__(self, ctx: ContainerContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.unknown: dict[str, str] = {}
        self.assigned: set[str] = set()
        kind, name = _workload(ctx)
        self.update({"namespace": ctx.namespace, "pod": ctx.pod_name, "container": ctx.name,
                     "node": ctx.node_name, "workload": f"{kind}/{name}",
                     "workload_kind": kind, "workload_name": name})

    def get(self, key: str, default: Any = None) -> Any:
        if key in self:
            return self[key]
        value: Any = None
        if key in FACTS:
            fact = self.ctx.fact(key)
            value = fact.value
            if fact.unknown:
                self.unknown[key] = fact.unknown
        elif key in METRICS:
            metrics = self.ctx.metric_values()
            value = None if metrics is None else metrics.get(key)
            if metrics is None:
                self.unknown[key] = self.ctx.metrics_failure() or "no /metrics was read"
        self[key] = value
        return value if value is not None else default


def _workload(ctx: ContainerContext) -> tuple[str, str]:
    isvc = workload.inference_service_name(ctx.pod)
    if isvc:
        return "InferenceService", isvc
    if ctx.owner is not None:
        return ctx.owner[0], str(meta(ctx.owner[1]).get("name", ""))
    return "Pod", ctx.pod_name


def compute(pattern: Fixable, ctx: ContainerContext, holds: Any) -> Fix | None:
    """The fix for ``pattern``'s finding on this container: computed by the pattern's
    ``fix`` cases, else its remediation with the pod's real names (every finding has one).

    ``holds(condition)`` evaluates a case's ``when`` on this container."""
    scope = _Scope(ctx)
    if not pattern.fix:
        return Fix(text=general_advice(pattern, scope))
    needed: list[str] = []
    errors: list[str] = []
    for case in pattern.fix:
        if case.when is not None and not holds(case.when):
            continue
        try:
            fix = _case(case, scope, ctx)
        except (FixLanguageError, ValueError, TypeError, ArithmeticError) as exc:
            # A value the pod gave that the computation cannot take (a zero divisor, a
            # text where a number was expected): this case does not apply, never a crash.
            errors.append(f"{pattern.id}: {exc}")
            continue
        if isinstance(fix, Fix):
            return fix
        if fix is not _SKIPPED:
            needed.append(fix.name)
    if not needed:
        if errors:
            return Fix(text=f"Could not compute the fix ({errors[0]}). General advice:\n"
                       f"{general_advice(pattern, scope)}")
        return Fix(text=general_advice(pattern, scope))
    reasons = [f"{n} ({scope.unknown[n]})" if n in scope.unknown else f"{n} (not in the pod's "
               "spec, logs or metrics read)" for n in dict.fromkeys(needed)]
    return Fix(text=f"Could not compute the fix: {', '.join(reasons)} unknown. "
               f"General advice:\n{general_advice(pattern, scope)}",
               missing=tuple(dict.fromkeys(needed)))


def _case(case: FixCase, scope: _Scope, ctx: ContainerContext) -> Fix | Missing:
    for name in scope.assigned:  # an earlier case's values are not this one's
        scope.pop(name, None)
    scope.assigned = {name for name, _ in case.values}
    values: list[tuple[str, Any]] = []
    for name, expr in case.values:
        value = expr.evaluate(scope)
        if isinstance(value, Missing):
            return value
        if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
            value = int(value)
        scope[name] = value
        values.append((name, value))
    if case.check is not None:
        ok = case.check.evaluate(scope)
        if isinstance(ok, Missing):
            return ok
        if not ok:
            return _SKIPPED
    target = ctx.snapshot.kubectl
    text = render_text(case.text, scope, target)
    if isinstance(text, Missing):
        return text
    commands: list[str] = []
    for template in case.commands:
        command = render_command(template, scope, target)
        if isinstance(command, Missing):
            return command
        commands.append(command)
    patch: Patch | None = None
    edits: dict[str, Any] | None = None
    if case.patch is not None:
        filled = _fill_patch(case.patch, scope)
        if isinstance(filled, Missing):
            return filled
        edits = filled
        patch, moved = _build(ctx, filled)
        if patch is not None:
            commands.append(patch_commands.apply(patch, target.flags()))
            if moved:
                text = f"{text.rstrip()} {_kept_qos(ctx, moved)}"
    return Fix(text=" ".join(text.split()) if "\n- " not in text else text.strip(),
               values=tuple(values), patch=patch, commands=tuple(commands), edits=edits)


def _kept_qos(ctx: ContainerContext, moved: list[str]) -> str:
    """What the patch does to the requests besides what the fix says, and why."""
    qos = str((ctx.pod.get("status") or {}).get("qosClass") or "")
    keeps = f"its QoS class ({qos})" if qos else "its QoS class"
    return (f"The patch also sets {' and '.join(f'`{m}`' for m in moved)} with the limit "
            f"(a request equal to its limit moves with it, none is left above it), so the "
            f"pod keeps {keeps}.")


def _fill_patch(spec: PatchSpec, scope: _Scope) -> dict[str, Any] | Missing:
    out: dict[str, Any] = {"target": spec.target}
    for key in ("args", "container", "pod", "spec"):
        part = fill(getattr(spec, key), scope)
        if isinstance(part, Missing):
            return part
        out[key] = part
    return out


def target_of(ctx: ContainerContext, target: str) -> patches.Target | None:
    """The object a patch of this kind changes for this container, as read."""
    if target == "workload":
        isvc = workload.inference_service(ctx.snapshot, ctx.pod)
        if isvc is not None:
            name = ctx.name if ctx.name != "kserve-container" else "kserve-container"
            return patches.Target("InferenceService", _typed(isvc, "InferenceService"), name)
        llm = workload.llm_inference_service(ctx.snapshot, ctx.pod)
        if llm is not None:  # its Deployments are KServe's: the LLMInferenceService is patched
            return patches.Target("LLMInferenceService", _typed(llm, "LLMInferenceService"),
                                  ctx.name)
        lws = workload.leader_worker_set(ctx.snapshot, ctx.pod)
        if lws is not None:  # its StatefulSets are the LWS controller's: the LWS is patched
            return patches.Target("LeaderWorkerSet", _typed(lws[0], "LeaderWorkerSet"),
                                  ctx.name)
        if ctx.owner is not None:
            kind, obj = ctx.owner
            return patches.Target(kind, _typed(obj, kind), ctx.name)
        return None
    if target == "autoscaler":
        kind, name = _workload(ctx)
        # An HPA a KEDA ScaledObject made is KEDA's to write: a patch of it is undone.
        hpas = [h for h in workload.autoscalers_for(ctx.snapshot, kind, name, ctx.namespace)
                if not any(r.get("kind") == "ScaledObject"
                           for r in meta(h).get("ownerReferences") or [])]
        if not hpas:
            return None
        return patches.Target("HorizontalPodAutoscaler",
                              _typed(hpas[0], "HorizontalPodAutoscaler"), ctx.name)
    if target == "claim":
        claim = ctx.value("model_cache_claim") if "model_cache_claim" in FACTS else None
        pvc = ctx.snapshot.find("persistentvolumeclaims", ctx.namespace, str(claim)) \
            if claim else None
        if pvc is None:
            return None
        return patches.Target("PersistentVolumeClaim", _typed(pvc, "PersistentVolumeClaim"),
                              ctx.name)
    return None


def _typed(obj: Obj, kind: str) -> Obj:
    """List items come without kind and apiVersion; a patch names both."""
    return {"apiVersion": obj.get("apiVersion") or patches.API_VERSION.get(kind, "v1"),
            "kind": kind, **{k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}}


def _build(ctx: ContainerContext, filled: dict[str, Any]) -> tuple[Patch | None, list[str]]:
    """The patch, and the requests it moves with their limits (``patches.keep_qos``)."""
    target = target_of(ctx, str(filled["target"]))
    if target is None:
        return None, []
    lws = workload.leader_worker_set(ctx.snapshot, ctx.pod) \
        if target.kind == "LeaderWorkerSet" else None
    if lws is not None:
        filled["template"] = list(lws[1])  # the leader's template or the workers'
    if target.kind == "LLMInferenceService":
        filled["template"] = list(workload.llm_template_path(ctx.pod))
    edits = patches.Edits(args=filled["args"], container=filled["container"],
                          pod=filled["pod"], spec=filled["spec"],
                          template=tuple(filled["template"]) if filled.get("template")
                          else None)
    patch = to_patch(patches.build(target, edits))
    return patch, patches.requests_moved(target, edits) if patch is not None else []


def to_patch(doc: dict[str, Any] | None) -> Patch | None:
    if doc is None:
        return None
    return Patch(doc["apiVersion"], doc["kind"], doc["namespace"], doc["name"], doc["type"],
                 doc["patch"])


def attach(patterns: Mapping[str, Fixable], diag: Any, holds: Any) -> None:
    """Give every finding of the pod its computed fix (while its logs are still read)."""
    for i, finding in enumerate(diag.findings):
        pattern = patterns.get(finding.id)
        ctx = next((c for c in diag.contexts if c.name == finding.container), None)
        if pattern is None or ctx is None:
            continue
        fix = compute(pattern, ctx, lambda cond, ctx=ctx, f=finding: holds(cond, ctx, f))
        diag.findings[i] = dataclasses.replace(
            finding, fix=fix, remediation=general_advice(pattern, _Scope(ctx)))


def general_advice(pattern: Fixable, scope: _Scope) -> str:
    """The pattern's remediation with the pod's real names in its commands."""
    return str(render_text(pattern.remediation, scope, scope.ctx.snapshot.kubectl,
                           say_missing=True))
