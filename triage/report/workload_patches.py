"""The patch of each workload: every card's patch of one object, combined into one."""

from __future__ import annotations

from triage.fixes import patches
from triage.results import (
    Card,
    Patch,
    WorkloadPatch,
)
from triage.rules.evaluate import PodDiagnosis
from triage.snapshot import Snapshot


def workload_patches(snapshot: Snapshot, diags: list[PodDiagnosis], cards: tuple[Card, ...]
                      ) -> tuple[WorkloadPatch, ...]:
    """Every card's patch of one object combined into one, applied to the object as read.

    Each container gets its own fixes' edits (merged so that neither fix undoes the
    other: ``patches.Edits.merged``), whatever the order of the cards."""
    combined: dict[tuple[str, str, str], tuple[dict[tuple[str, tuple[str, ...] | None],
                                                   patches.Edits], list[str]]] = {}
    for card in cards:
        fix = card.fix
        if fix is None or fix.patch is None or not isinstance(fix.edits, dict):
            continue
        key = (fix.patch.kind, fix.patch.namespace, fix.patch.name)
        template = tuple(fix.edits["template"]) if fix.edits.get("template") else None
        edits = patches.Edits(args=fix.edits["args"], container=fix.edits["container"],
                              pod=fix.edits["pod"], spec=fix.edits["spec"], template=template)
        container = _container_of(diags, card)
        per_container, ids = combined.setdefault(key, ({}, []))
        before = per_container.get((container, template))
        per_container[(container, template)] = edits if before is None \
            else before.merged(edits)
        ids.append(card.finding)
    out: list[WorkloadPatch] = []
    for (kind, namespace, name), (per_container, ids) in combined.items():
        obj = snapshot.find(_PLURAL.get(kind, kind.lower() + "s"), namespace, name)
        if obj is None:
            continue
        typed = {"apiVersion": obj.get("apiVersion") or patches.API_VERSION.get(kind, "v1"),
                 "kind": kind, **obj}
        doc = patches.build_all(patches.Target(kind, typed, ""),
                                [(c, e) for (c, _), e in per_container.items()])
        if doc is None:
            continue
        out.append(WorkloadPatch(f"{kind}/{name}", Patch(
            doc["apiVersion"], doc["kind"], doc["namespace"], doc["name"], doc["type"],
            doc["patch"]), tuple(dict.fromkeys(ids))))
    return tuple(out)


_PLURAL = {"Deployment": "deployments", "StatefulSet": "statefulsets",
           "InferenceService": "inferenceservices",
           "HorizontalPodAutoscaler": "horizontalpodautoscalers",
           "PersistentVolumeClaim": "persistentvolumeclaims"}


def _container_of(diags: list[PodDiagnosis], card: Card) -> str:
    for diag in diags:
        if diag.name == card.pods[0]:
            for f in diag.findings:
                if f.id == card.finding:
                    return f.container
    return ""
