"""vllm-triage lint: the same patterns on manifests, each finding at its field.

The seed article 002's starting manifest gets every trap that applies to it,
each on its line, and its fixed manifest none; every fixture's workload
objects, linted from YAML, agree with what ``analyze`` finds on the same
fixture; SARIF validates against the SARIF 2.1.0 schema as a published
package ships it; inputs are read the way kubectl reads them, and hostile
ones end in one line and exit 2.
"""

from __future__ import annotations

import copy
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT, run_cli
from tests.lint.test_lint import _valid
from triage.lint.manifests import Input, collect
from triage.lint.run import lint as lint_manifests

DATA = ROOT / "tests" / "support" / "data" / "lint"
SEED_START = DATA / "seed-002-start.yaml"
SEED_FIXED = DATA / "seed-002-fixed.yaml"


def lint_json(*args: str, code: int | None = None) -> dict[str, Any]:
    run = run_cli("lint", *args, "-o", "json")
    if code is not None:
        assert run.code == code, run.stderr + run.stdout
    assert "Traceback" not in run.stderr
    doc: dict[str, Any] = json.loads(run.stdout)
    return doc


def found(doc: dict[str, Any]) -> set[tuple[str, int]]:
    return {(f["id"], f["line"]) for f in doc["findings"]}


# --- the seed article's traps ----------------------------------------------------


def test_seed_starting_manifest_gets_each_trap_that_applies_at_its_line() -> None:
    doc = lint_json("-f", str(SEED_START.relative_to(ROOT)), code=1)
    # Trap 1 (no GPU requested): the container (line 14), where resources goes.
    # Trap 5 (model cache): the container's volumeMounts, also on line 14.
    # The image tag the article's own comment says to pin (line 15).
    # Trap 4 (--max-model-len unset): the args (line 16).
    # Seed 000 1-2 (no memory limit): the container (line 14), where resources goes.
    # Not applicable to this manifest as written: no probes (trap 2 is a liveness
    # probe that kills the load), tensor parallel 1 (trap 3), no autoscaler (trap 6);
    # trap 7 is a surge onto a GPU, and this pod asks for none (trap 1).
    assert found(doc) == {("no-gpu", 14), ("model-cache-missing", 14),
                          ("image-tag-latest", 15), ("max-model-len-unset", 16),
                          ("memory-limit-unset", 14)}
    by_id = {f["id"]: f for f in doc["findings"]}
    assert by_id["no-gpu"]["path"] == \
        'spec.template.spec.containers[0].resources.limits["nvidia.com/gpu"]'
    assert by_id["no-gpu"]["severity"] == "critical"
    assert by_id["image-tag-latest"]["path"] == "spec.template.spec.containers[0].image"
    assert by_id["image-tag-latest"]["column"] == 9
    assert by_id["max-model-len-unset"]["path"].startswith("spec.template.spec.containers[0]"
                                                           ".args")
    assert "estimate" in by_id["max-model-len-unset"]["message"]
    for f in doc["findings"]:
        assert f["object"] == "Deployment/vllm-qwen"
        assert f["file"] == "tests/support/data/lint/seed-002-start.yaml"
        assert f["fix"]


def test_seed_fixed_manifest_gets_none() -> None:
    doc = lint_json("-f", str(SEED_FIXED), "--fail-on", "info", code=0)
    assert doc["findings"] == []
    assert doc["skipped"] == []


@pytest.mark.parametrize(("change", "finding", "line_text"), [
    # Trap 2: liveness after 30 s and no startupProbe, for an 8B model.
    ({"livenessProbe": {"httpGet": {"path": "/health", "port": 8000},
                        "initialDelaySeconds": 30, "periodSeconds": 10, "timeoutSeconds": 5}},
     "probe-timing", "livenessProbe:"),
    # Trap 3: tensor parallel 2 without a memory-backed /dev/shm.
    ({"args": ["--model=Qwen/Qwen3-8B", "--max-model-len=16384",
               "--tensor-parallel-size=2"]}, "shm-too-small", None),
    # Trap 7: the default strategy (maxSurge 25% = one pod) of a GPU Deployment; the
    # finding is on spec.replicas when no strategy is written.
    ({}, "rollout-gpu-surge", "replicas:"),
])
def test_each_trap_on_its_own(tmp_path: Path, change: dict[str, Any], finding: str,
                              line_text: str | None) -> None:
    docs = list(yaml.safe_load_all(SEED_FIXED.read_text()))
    container = docs[0]["spec"]["template"]["spec"]["containers"][0]
    container.update(change)
    if finding == "shm-too-small":
        container["volumeMounts"] = [m for m in container["volumeMounts"]
                                     if m["name"] != "dshm"]
        container["resources"]["limits"]["nvidia.com/gpu"] = 2
    if finding == "probe-timing":
        del container["startupProbe"]
    if finding == "rollout-gpu-surge":
        del docs[0]["spec"]["strategy"]
    path = tmp_path / "vllm.yaml"
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    doc = lint_json("-f", str(path), "--fail-on", "never", code=0)
    ids = {f["id"] for f in doc["findings"]}
    assert ids == {finding}, doc
    if line_text:
        f = next(f for f in doc["findings"] if f["id"] == finding)
        assert path.read_text().splitlines()[f["line"] - 1].strip().startswith(line_text)


def test_a_memory_limit_below_the_estimate() -> None:
    path = DATA / "seed-002-fixed-memlimit.yaml"
    doc = lint_json("-f", str(path), "--fail-on", "never", code=0)
    (f,) = doc["findings"]
    assert (f["id"], f["severity"], f["path"]) == (
        "container-oomkilled", "warning",
        "spec.template.spec.containers[0].resources.limits.memory")
    assert path.read_text().splitlines()[f["line"] - 1].strip() == "memory: 4Gi"
    assert "estimate: shm_memory_bytes + 8 GiB = 16 GiB" in f["message"]
    assert "at least 16Gi" in f["fix"]


def test_autoscaling_on_cpu_points_at_the_hpa_metric(tmp_path: Path) -> None:
    text = SEED_FIXED.read_text().replace(
        """  - type: Pods
    pods:
      metric:
        name: vllm_num_requests_waiting
      target:
        type: AverageValue
        averageValue: "5"     # Pod당 대기 요청 5개를 넘으면 증설""",
        """  - type: Resource
    resource:
      name: cpu
      target: {type: Utilization, averageUtilization: 70}""")
    path = tmp_path / "vllm.yaml"
    path.write_text(text)
    doc = lint_json("-f", str(path), "--fail-on", "never", code=0)
    (f,) = doc["findings"]
    assert f["id"] == "autoscaling-on-cpu"
    assert f["object"] == "HorizontalPodAutoscaler/vllm-qwen"
    assert f["path"] == "spec.metrics[0]"
    assert text.splitlines()[f["line"] - 1].strip() == "- type: Resource"


# --- output formats ----------------------------------------------------------------


def test_json_contract() -> None:
    doc = lint_json("-f", str(SEED_START), code=1)
    assert list(doc) == ["schema", "findings", "skipped"]
    assert doc["schema"] == "vllm-triage/lint/v1"
    for f in doc["findings"]:
        assert list(f) == ["id", "severity", "file", "line", "column", "object", "path",
                           "message", "fix"]






def test_sarif_validates_against_the_published_schema() -> None:
    run = run_cli("lint", "-f", str(SEED_START.relative_to(ROOT)), "-o", "sarif")
    assert run.code == 1, run.stderr
    log = json.loads(run.stdout)
    _valid(log)
    (run_,) = log["runs"]
    rule_ids = {r["id"] for r in run_["tool"]["driver"]["rules"]}
    results = run_["results"]
    assert {r["ruleId"] for r in results} == {"no-gpu", "model-cache-missing",
                                              "image-tag-latest", "max-model-len-unset",
                                              "memory-limit-unset"}
    assert {r["ruleId"] for r in results} <= rule_ids
    for r in results:
        loc = r["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"] == {"uri": "tests/support/data/lint/seed-002-start.yaml",
                                           "uriBaseId": "%SRCROOT%"}
        assert loc["region"]["startLine"] >= 14 and loc["region"]["startColumn"] == 9
        assert run_["tool"]["driver"]["rules"][r["ruleIndex"]]["id"] == r["ruleId"]
    gpu = next(r for r in run_["tool"]["driver"]["rules"] if r["id"] == "no-gpu")
    assert gpu["defaultConfiguration"]["level"] == "error"
    assert gpu["help"]["text"]


def test_sarif_uris_of_stdin_spaces_and_absolute_paths(tmp_path: Path) -> None:
    import subprocess
    import sys

    spaced = tmp_path / "my deploy" / "vllm #1.yaml"
    spaced.parent.mkdir()
    spaced.write_text(SEED_START.read_text())
    log = json.loads(run_cli("lint", "-f", str(spaced), "-o", "sarif").stdout)
    _valid(log)
    (where,) = {json.dumps(r["locations"][0]["physicalLocation"]["artifactLocation"])
                for r in log["runs"][0]["results"]}
    assert json.loads(where) == {"uri": "file://" + str(spaced).replace(" ", "%20")
                                 .replace("#", "%23")}  # absolute: no uriBaseId
    proc = subprocess.run([sys.executable, "-m", "triage.cli", "lint", "-f", "-", "-o",
                           "sarif"], input=SEED_START.read_text(), capture_output=True,
                          text=True, cwd=str(ROOT), timeout=60)
    log = json.loads(proc.stdout)
    _valid(log)
    for r in log["runs"][0]["results"]:
        loc = r["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uri"] == "stdin" and "region" not in loc
        assert "uriBaseId" not in loc["artifactLocation"]


def test_github_annotations() -> None:
    run = run_cli("lint", "-f", str(SEED_START.relative_to(ROOT)), "-o", "github")
    lines = run.stdout.splitlines()
    assert any(line.startswith("::error file=tests/support/data/lint/seed-002-start.yaml,line=14,"
                               "col=9,title=no-gpu (critical)::") for line in lines), lines
    assert all("\n" not in line for line in lines)
    assert any(line.startswith("::warning ") for line in lines)


def test_terminal_output_is_file_line_col() -> None:
    run = run_cli("lint", "-f", str(SEED_START.relative_to(ROOT)))
    assert run.code == 1
    first = run.stdout.splitlines()[0]
    assert first.startswith("tests/support/data/lint/seed-002-start.yaml:14:9: critical no-gpu ")
    assert run.stdout.splitlines()[1] == ('    Deployment/vllm-qwen spec.template.spec.'
                                          'containers[0].resources.limits["nvidia.com/gpu"]'
                                          '  (step 2)')
    # The fixes lint computes from the spec's estimates, not "could not compute".
    assert "Could not compute" not in run.stdout
    assert "Set `--max-model-len=32768`" in run.stdout
    assert "fix:" in run.stdout


# --- exit codes and suppression ------------------------------------------------------


def test_fail_on(tmp_path: Path) -> None:
    path = tmp_path / "v.yaml"
    path.write_text(SEED_FIXED.read_text().replace("v0.10.1.1", "latest"))
    assert run_cli("lint", "-f", str(path)).code == 0  # a warning, default --fail-on critical
    assert run_cli("lint", "-f", str(path), "--fail-on", "warning").code == 1
    assert run_cli("lint", "-f", str(SEED_START), "--fail-on", "never").code == 0


def test_suppression_by_annotation_and_flag(tmp_path: Path) -> None:
    text = SEED_START.read_text().replace(
        "  name: vllm-qwen\n",
        "  name: vllm-qwen\n  annotations:\n"
        "    vllm-triage.io/ignore: \"image-tag-latest, model-cache-missing, "
        "memory-limit-unset\"\n", 1)
    path = tmp_path / "v.yaml"
    path.write_text(text)
    doc = lint_json("-f", str(path), "--ignore", "no-gpu", "--explain", code=0)
    assert {f["id"] for f in doc["findings"]} == {"max-model-len-unset"}
    by = {s["id"]: s["by"] for s in doc["explain"]["suppressed"]}
    assert by == {"no-gpu": "--ignore",
                  "image-tag-latest": "annotation vllm-triage.io/ignore on Deployment/vllm-qwen",
                  "model-cache-missing":
                      "annotation vllm-triage.io/ignore on Deployment/vllm-qwen",
                  "memory-limit-unset":
                      "annotation vllm-triage.io/ignore on Deployment/vllm-qwen"}
    applied = {p["id"] for p in doc["explain"]["applied"]}
    assert {"image-tag-latest", "no-gpu", "probe-timing"} <= applied
    not_applicable = {p["id"]: p["reason"] for p in doc["explain"]["not_applicable"]}
    assert "cuda-oom" in not_applicable and "logs" in not_applicable["cuda-oom"]
    run = run_cli("lint", "-f", str(path), "--explain")
    assert "Suppressed:" in run.stdout and "cuda-oom" in run.stdout


def test_explain_says_what_ran_what_could_not_be_decided_and_why(tmp_path: Path) -> None:
    # The seed's fixed Deployment, and a copy whose image is a chart's placeholder.
    templated = SEED_FIXED.read_text().split("---\n")[0].replace(
        "name: vllm-qwen", "name: templated", 1).replace(
        "image: vllm/vllm-openai:v0.10.1.1", 'image: "{{ .Values.image }}"')
    path = tmp_path / "vllm.yaml"
    path.write_text(SEED_FIXED.read_text() + "---\n" + templated)
    doc = lint_json("-f", str(path), "--fail-on", "never", "--explain", code=0)
    applied = {p["id"]: p for p in doc["explain"]["applied"]}
    not_applicable = {p["id"]: p["reason"] for p in doc["explain"]["not_applicable"]}
    # They ran on the spec and found nothing; what only a running pod shows is said.
    for pid, needs in (("no-gpu", "the pod's logs"), ("max-model-len-unset", "the pod's logs"),
                       ("shm-too-small", "the pod's logs"),
                       ("container-oomkilled", "the container's status")):
        assert applied[pid]["findings"] == 0 and pid not in not_applicable, pid
        assert needs in applied[pid]["needs_running_pod"], applied[pid]
    assert "logs" in not_applicable["cuda-oom"]
    # Per workload, where a pattern went undecided on one of them, and why.
    (undecided,) = applied["image-tag-latest"]["undecided"]
    assert undecided["object"] == "Deployment/templated"
    assert "is the template placeholder {{ .Values.image }}" in undecided["reason"]
    run = run_cli("lint", "-f", str(path), "--explain")
    assert "Patterns that ran on the manifests:" in run.stdout
    assert "not decided without a running pod: the pod's logs" in run.stdout
    assert "undecided on Deployment/templated: " in run.stdout


def test_ignore_of_an_unknown_id_is_a_usage_error() -> None:
    run = run_cli("lint", "-f", str(SEED_START), "--ignore", "no-such-thing")
    assert run.code == 2 and "no-such-thing" in run.stderr
    assert "Traceback" not in run.stderr


# --- inputs, the kubectl way -----------------------------------------------------------


def test_stdin_multi_document_and_lists(tmp_path: Path) -> None:
    import subprocess
    import sys

    start = yaml.safe_load(SEED_START.read_text())
    listed = {"apiVersion": "v1", "kind": "List", "items": [
        {**copy.deepcopy(start), "metadata": {"name": "a", "namespace": "llm"}},
        {**copy.deepcopy(start), "metadata": {"name": "b"}}]}
    text = "---\n" + yaml.safe_dump(listed) + "---\n" + SEED_FIXED.read_text()
    proc = subprocess.run([sys.executable, "-m", "triage.cli", "lint", "-f", "-", "-o", "json"],
                          input=text, capture_output=True, text=True, cwd=str(ROOT),
                          timeout=60)
    doc = json.loads(proc.stdout)
    objects = {f["object"] for f in doc["findings"]}
    assert objects == {"Deployment/llm/a", "Deployment/b"}
    assert all(f["file"] == "<stdin>" for f in doc["findings"])
    b_gpu = next(f for f in doc["findings"] if f["object"] == "Deployment/b"
                 and f["id"] == "no-gpu")
    assert b_gpu["path"] == 'spec.template.spec.containers[0].resources.limits["nvidia.com/gpu"]'


def test_directory_recursive_and_json(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "vllm.json").write_text(json.dumps(yaml.safe_load(SEED_START.read_text()),
                                                           indent=2))
    (tmp_path / "README.md").write_text("not a manifest")
    assert lint_json("-f", str(tmp_path), code=0)["findings"] == []
    doc = lint_json("-f", str(tmp_path), "-R", code=1)
    assert {f["file"] for f in doc["findings"]} == {str(tmp_path / "sub" / "vllm.json")}
    gpu = next(f for f in doc["findings"] if f["id"] == "no-gpu")
    assert (tmp_path / "sub" / "vllm.json").read_text().splitlines()[gpu["line"] - 1].strip() \
        == "{"


@pytest.mark.skipif(shutil.which("kubectl") is None and not __import__("os").environ.get("CI"),
                    reason="kubectl not installed")
def test_kustomize_through_kubectl(tmp_path: Path) -> None:
    shutil.copy(SEED_START, tmp_path / "deployment.yaml")
    (tmp_path / "kustomization.yaml").write_text(
        "namespace: llm\nresources: [deployment.yaml]\n")
    doc = lint_json("-k", str(tmp_path), code=1)
    assert {f["object"] for f in doc["findings"]} == {"Deployment/llm/vllm-qwen"}
    assert "no-gpu" in {f["id"] for f in doc["findings"]}


@pytest.mark.skipif(shutil.which("kubectl") is None and not __import__("os").environ.get("CI"),
                    reason="kubectl not installed")
def test_kustomize_origin_annotations_map_findings_to_their_file(tmp_path: Path) -> None:
    base, overlay = tmp_path / "base", tmp_path / "overlay"
    base.mkdir()
    overlay.mkdir()
    shutil.copy(SEED_START, base / "deployment.yaml")
    (base / "kustomization.yaml").write_text("resources: [deployment.yaml]\n")
    (overlay / "kustomization.yaml").write_text(
        "namespace: llm\nnamePrefix: prod-\nresources: [../base]\n"
        "buildMetadata: [originAnnotations]\n"
        "patches:\n- target: {kind: Deployment}\n  patch: |-\n"
        "    - {op: replace, path: /spec/template/spec/containers/0/args,"
        " value: [--model, Qwen/Qwen3-8B, --tensor-parallel-size, '2']}\n")
    doc = lint_json("-k", str(overlay), "--fail-on", "never", code=0)
    by_id = {f["id"]: f for f in doc["findings"]}
    lines = SEED_START.read_text().splitlines()
    for f in doc["findings"]:
        assert f["file"] == str(base / "deployment.yaml"), f
        assert f["object"] == "Deployment/llm/prod-vllm-qwen"
    assert (by_id["image-tag-latest"]["line"], by_id["image-tag-latest"]["column"]) == (15, 9)
    # The patched args are not the base's: the finding is on the base's args field.
    shm = by_id["shm-too-small"]
    assert shm["path"] == "spec.template.spec.containers[0].args"
    assert lines[shm["line"] - 1].strip().startswith("args:")
    log = json.loads(run_cli("lint", "-k", str(overlay), "-o", "sarif").stdout)
    assert all("region" in r["locations"][0]["physicalLocation"]
               for r in log["runs"][0]["results"])
    # Without the annotation (no buildMetadata), the rendered output's place, as before.
    (overlay / "kustomization.yaml").write_text("resources: [../base]\n")
    doc = lint_json("-k", str(overlay), "--fail-on", "never", code=0)
    assert {f["file"] for f in doc["findings"]} == {f"{overlay} (kubectl kustomize)"}


# --- the other objects ---------------------------------------------------------------

KSERVE = """\
apiVersion: serving.kserve.io/v1alpha1
kind: ServingRuntime
metadata: {name: vllm-runtime}
spec:
  supportedModelFormats: [{name: huggingface, autoSelect: true}]
  containers:
  - name: kserve-container
    image: vllm/vllm-openai:v0.10.1.1
    args: [--port=8080, --model=/mnt/models]
    resources: {limits: {nvidia.com/gpu: "1"}}
---
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata:
  name: qwen
  namespace: llm
spec:
  predictor:
    minReplicas: 0
    model:
      modelFormat: {name: huggingface}
      storageUri: hf://Qwen/Qwen3-8B
      args: [--max-model-len=16384]
"""


def test_inference_service_with_a_serving_runtime(tmp_path: Path) -> None:
    path = tmp_path / "isvc.yaml"
    path.write_text(KSERVE)
    doc = lint_json("-f", str(path), "--fail-on", "never", code=0)
    zero = next(f for f in doc["findings"] if f["id"] == "scale-to-zero")
    assert zero["object"] == "InferenceService/llm/qwen"
    assert zero["path"] == "spec.predictor.minReplicas"
    assert KSERVE.splitlines()[zero["line"] - 1].strip() == "minReplicas: 0"


UNSEEN = DATA / "unseen"


def _facts(manifests: Any, *names: str) -> dict[str, Any]:
    from triage.facts import ContainerContext
    from triage.vllm.selection import triaged_containers

    (w,) = manifests.workloads
    (container,) = triaged_containers(w.pod, None)
    ctx = ContainerContext(manifests.snapshot, w.pod, container)
    return {n: ctx.fact(n).value for n in names}


def test_kserve_merges_the_model_onto_the_runtime_container() -> None:
    # KServe's MergeRuntimeContainers: args runtime-then-model, env and volumeMounts by
    # key, resources key by key; the runtime's pod volumes stay.
    tp2 = collect([Input(str(UNSEEN / "02-kserve-hf.yaml"))])
    got = _facts(tp2, "tensor_parallel_size", "served_model", "gpu_request",
                 "memory_limit_bytes", "shm_memory_backed", "cache_env")
    assert got["tensor_parallel_size"] == 2  # the runtime's flag, kept beside the model's
    assert got["served_model"] == "meta-llama/meta-llama-3-8b-instruct"
    assert got["gpu_request"] == 2 and got["memory_limit_bytes"] == 24 * 2**30
    assert got["shm_memory_backed"] is True  # the runtime's /dev/shm and its volume
    assert "HF_HOME=/hf-cache" in got["cache_env"]
    container = tp2.workloads[0].pod["spec"]["containers"][0]
    assert container["args"][0] == "--model_name=huggingface-llama3"  # {{.Name}}
    assert [m["mountPath"] for m in container["volumeMounts"]] == ["/dev/shm", "/hf-cache"]
    # The model's own volumeMounts do not drop the runtime's memory-backed /dev/shm.
    doc = lint_json("-f", str(UNSEEN / "02b-kserve-hf-tp2.yaml"), "--fail-on", "never",
                    code=0)
    assert "shm-too-small" not in {f["id"] for f in doc["findings"]}, doc


def test_statefulset_claim_templates_are_the_pods_volumes() -> None:
    manifests = collect([Input(str(UNSEEN / "05-sts-keda.yaml"))])
    got = _facts(manifests, "model_cache_claim", "model_cache_claim_bytes", "volume_claims")
    assert got == {"model_cache_claim": "hf-cache-qwen-coder-0",
                   "model_cache_claim_bytes": 100 * 2**30,
                   "volume_claims": ["hf-cache-qwen-coder-0"]}
    doc = lint_json("-f", str(UNSEEN / "05-sts-keda.yaml"), "--fail-on", "info", code=0)
    assert doc["findings"] == []
    # Mounted elsewhere than the cache, the claim is no model cache: the finding stays.
    text = (UNSEEN / "05-sts-keda.yaml").read_text().replace(
        "{name: hf-cache, mountPath: /root/.cache/huggingface}",
        "{name: hf-cache, mountPath: /data}")
    manifests = collect([Input("-")], stdin=io.BytesIO(text.encode()))
    report = lint_manifests(manifests)
    assert {f.id for f in report.findings} == {"model-cache-missing"}


RUNTIME_NO_SHM = """\
apiVersion: serving.kserve.io/v1alpha1
kind: ServingRuntime
metadata: {name: vllm-tp2, namespace: llm}
spec:
  supportedModelFormats: [{name: huggingface, autoSelect: true}]
  containers:
  - name: kserve-container
    image: vllm/vllm-openai:v0.10.1.1
    args:
    - --port=8080
    - --tensor-parallel-size=2
"""


def test_a_runtime_field_is_reported_on_the_runtime(tmp_path: Path) -> None:
    (tmp_path / "runtime.yaml").write_text(RUNTIME_NO_SHM)
    (tmp_path / "isvc.yaml").write_text(KSERVE.split("---\n")[1].replace(
        "modelFormat: {name: huggingface}",
        "modelFormat: {name: huggingface}\n      runtime: vllm-tp2").replace(
        "args: [--max-model-len=16384]",
        "args: [--model=Qwen/Qwen3-8B, --max-model-len=16384]\n"
        "      resources: {limits: {nvidia.com/gpu: 2}}"))
    doc = lint_json("-f", str(tmp_path), "--fail-on", "never", code=0)
    shm = next(f for f in doc["findings"] if f["id"] == "shm-too-small")
    assert (shm["file"], shm["object"], shm["path"]) == (
        str(tmp_path / "runtime.yaml"), "ServingRuntime/llm/vllm-tp2",
        "spec.containers[0].args[1]")
    assert RUNTIME_NO_SHM.splitlines()[shm["line"] - 1].strip() == \
        "- --tensor-parallel-size=2"


def test_a_serving_runtime_of_another_namespace_is_not_used(tmp_path: Path) -> None:
    path = tmp_path / "isvc.yaml"
    path.write_text(RUNTIME_NO_SHM.replace("namespace: llm", "namespace: other")
                    + "---\n" + KSERVE.split("---\n")[1])
    doc = lint_json("-f", str(path), code=0)
    reasons = {s["object"]: s["reason"] for s in doc["skipped"]}
    assert "ServingRuntime/other/vllm-tp2" in reasons
    # KServe picks its own Hugging Face runtime then, as lint does, and says so.
    assert "InferenceService/llm/qwen" not in reasons
    assert any("built-in ClusterServingRuntime kserve-huggingfaceserver as KServe v0."
               in w for w in doc["warnings"]), doc["warnings"]


def test_keda_scaled_object_on_cpu(tmp_path: Path) -> None:
    text = SEED_FIXED.read_text().split("---\napiVersion: autoscaling/v2")[0] + """---
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: vllm-qwen}
spec:
  scaleTargetRef: {name: vllm-qwen}
  minReplicaCount: 1
  triggers:
  - type: cpu
    metricType: Utilization
    metadata: {value: "60"}
"""
    path = tmp_path / "keda.yaml"
    path.write_text(text)
    doc = lint_json("-f", str(path), "--fail-on", "never", code=0)
    (f,) = doc["findings"]
    assert (f["id"], f["object"], f["path"]) == ("autoscaling-on-cpu",
                                                 "ScaledObject/vllm-qwen", "spec.triggers[0]")
    assert text.splitlines()[f["line"] - 1].strip() == "- type: cpu"


@pytest.mark.parametrize(("service_spec", "pod_extra", "clash"), [
    ("{selector: {app: vllm-qwen}, ports: [{port: 8000}]}", "", True),
    ("{type: NodePort, ports: [{port: 8000}]}", "", True),
    ("{clusterIP: None, ports: [{port: 8000}]}", "", False),  # headless: no variables
    ("{type: ExternalName, externalName: llm.example.com}", "", False),
    ("{ports: [{port: 8000}]}", "      enableServiceLinks: false\n", False),
])
def test_a_service_named_vllm(tmp_path: Path, service_spec: str, pod_extra: str,
                              clash: bool) -> None:
    text = SEED_FIXED.read_text().replace("    spec:\n      containers:\n",
                                          f"    spec:\n{pod_extra}      containers:\n", 1)
    text += f"---\napiVersion: v1\nkind: Service\nmetadata:\n  name: vllm\nspec: {service_spec}\n"
    path = tmp_path / "vllm.yaml"
    path.write_text(text)
    doc = lint_json("-f", str(path), "--fail-on", "never", code=0)
    found_ids = [f for f in doc["findings"] if f["id"] == "vllm-port-env-clash"]
    if not clash:
        assert not found_ids, found_ids
        return
    (f,) = found_ids
    assert f["severity"] == "critical" and f["object"] == "Service/vllm"
    assert (f["path"], text.splitlines()[f["line"] - 1].strip()) == ("metadata.name",
                                                                      "name: vllm")
    assert "enableServiceLinks: false" in f["fix"]


def test_a_workload_without_a_pod_spec_is_skipped_and_said(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n---\n"
                    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {}\n")
    doc = lint_json("-f", str(path), code=0)
    assert {s["object"]: s["reason"] for s in doc["skipped"]} == {
        "Pod/p": "no spec: there is no pod to lint",
        "Deployment/d": "no pod template spec: there is no pod to lint"}


def test_a_container_without_a_name_is_named(tmp_path: Path) -> None:
    # Knative names a Service's only container user-container; elsewhere, its index.
    live = (UNSEEN / "04-knative.yaml").read_text().replace("readinessProbe:", "livenessProbe:")
    path = tmp_path / "kn.yaml"
    path.write_text(live)
    doc = lint_json("-f", str(path), "--fail-on", "never", code=0)
    probe = next(f for f in doc["findings"] if f["id"] == "probe-timing")
    assert "container user-container has no startupProbe" in probe["message"]
    path.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
                    "  - image: vllm/vllm-openai:latest\n    args: [--model, /m]\n")
    doc = lint_json("-f", str(path), "--fail-on", "never", code=0)
    assert all("container  " not in f["message"] for f in doc["findings"])
    assert any("container #0 image" in f["message"] for f in doc["findings"]), doc


def test_other_kinds_are_skipped_and_said(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_text("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n---\n"
                    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n"
                    "  template:\n    spec:\n      containers: [{name: web, image: nginx}]\n")
    doc = lint_json("-f", str(path), code=0)
    reasons = {s["object"]: s["reason"] for s in doc["skipped"]}
    assert "Secret/s" in reasons and "Deployment/web" in reasons
    assert "no vLLM container" in reasons["Deployment/web"]


# --- hostile input ----------------------------------------------------------------------


@pytest.mark.parametrize(("content", "needle"), [
    ("apiVersion: v1\nkind: Pod\nspec: [unclosed\n", "not valid YAML"),
    (b"\x00\xff\xfe binary", "not UTF-8"),
    ("a: &a [" + ",".join(["x"] * 100) + "]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 100) + "]\n"
        for i in range(5)), "values once parsed"),
    ("\n".join("  " * i + "a:" for i in range(3000)), "maximum nesting depth"),
    # kubectl and kustomize refuse a key written twice (the last would win silently).
    ("apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  name: b\n",
     "bad.yaml:5:3: duplicate key 'name' (first at line 4)"),
])
def test_hostile_input_is_one_line_and_exit_2(tmp_path: Path, content: str | bytes,
                                              needle: str) -> None:
    path = tmp_path / "bad.yaml"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    run = run_cli("lint", "-f", str(path), "-f", str(SEED_FIXED), timeout=60)
    assert run.code == 2, (run.stdout, run.stderr)
    assert "Traceback" not in run.stderr
    assert needle in run.stderr, run.stderr
    assert "0 finding(s) in 1 vLLM workload(s)" in run.stdout  # the rest was still linted


def test_a_directory_with_a_broken_file_lints_every_other_file_and_exits_2(
        tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(SEED_START.read_text())
    (tmp_path / "b-db-secret.yaml").write_text("apiVersion: v1\nkind: Pod\nspec: [unclosed\n")
    (tmp_path / "c.yaml").write_text(SEED_START.read_text().replace("vllm-qwen", "vllm-c"))
    run = run_cli("lint", "-f", str(tmp_path), "-o", "json")
    assert run.code == 2, run.stderr
    assert {f["object"] for f in json.loads(run.stdout)["findings"]} == {
        "Deployment/vllm-qwen", "Deployment/vllm-c"}
    assert f"vllm-triage: error: {tmp_path / 'b-db-secret.yaml'}:4:1: not valid YAML" \
        in run.stderr


def test_empty_standard_input_exits_2() -> None:
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "triage.cli", "lint", "-f", "-"], input="",
                          capture_output=True, text=True, cwd=str(ROOT), timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "no Kubernetes object on standard input" in proc.stderr


def test_a_key_merged_in_with_an_anchor_may_be_overridden(tmp_path: Path) -> None:
    path = tmp_path / "anchors.yaml"
    path.write_text("""\
apiVersion: apps/v1
kind: Deployment
metadata: {name: a}
spec:
  strategy: {type: Recreate}
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.10.1.1
        args: [--model, /models/m, --max-model-len, "8192"]
        resources: &res {limits: {nvidia.com/gpu: 1, memory: 24Gi}, requests: {cpu: "4"}}
      - name: side
        image: busybox:1.36
        resources:
          <<: *res
          limits: {cpu: "1"}
""")
    doc = lint_json("-f", str(path), "--fail-on", "never", code=0)
    assert doc["findings"] == [], doc


def test_missing_file_and_no_input() -> None:
    run = run_cli("lint", "-f", "does/not/exist.yaml")
    assert run.code == 2 and "does/not/exist.yaml: no such file" in run.stderr
    run = run_cli("lint")
    assert run.code == 2 and "-f" in run.stderr


OTHER_WORKLOADS = """\
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: deepseek, namespace: llm}
spec:
  leaderWorkerTemplate:
    size: 2
    leaderTemplate:
      spec:
        containers:
        - name: vllm-leader
          image: vllm/vllm-openai:v0.10.1.1
          command: [sh, -c, "vllm serve deepseek-ai/DeepSeek-V3 --tensor-parallel-size 8 --pipeline-parallel-size 2 --max-model-len 32768"]
          resources: {limits: {nvidia.com/gpu: "8"}}
    workerTemplate:
      spec:
        containers:
        - name: vllm-worker
          image: vllm/vllm-openai:v0.10.1.1
          command: [sh, -c, "ray start --block"]
          resources: {limits: {nvidia.com/gpu: "8"}}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: qwen, namespace: llm}
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai
        args: [--model, Qwen/Qwen3-8B, --max-model-len, "8192"]
        resources: {limits: {nvidia.com/gpu: 1}}
---
apiVersion: serving.knative.dev/v1
kind: Service
metadata: {name: gemma}
spec:
  template:
    spec:
      containers:
      - image: vllm/vllm-openai:v0.10.1.1
        args: [--model, google/gemma-2-9b-it]
"""


def test_leaderworkerset_statefulset_and_knative(tmp_path: Path) -> None:
    path = tmp_path / "w.yaml"
    path.write_text(OTHER_WORKLOADS)
    doc = lint_json("-f", str(path), "--fail-on", "never", "--explain", code=0)
    got = {(f["object"], f["id"], f["path"]) for f in doc["findings"]}
    lines = OTHER_WORKLOADS.splitlines()
    # The leader's TP 8 x PP 2 across the group with the 64 MiB /dev/shm.
    assert ("LeaderWorkerSet/llm/deepseek", "shm-too-small",
            "spec.leaderWorkerTemplate.leaderTemplate.spec.containers[0].command[2]") in got
    assert ("StatefulSet/llm/qwen", "image-tag-latest",
            "spec.template.spec.containers[0].image") in got
    assert ("Service/gemma", "no-gpu",
            'spec.template.spec.containers[0].resources.limits["nvidia.com/gpu"]') in got
    for f in doc["findings"]:
        assert lines[f["line"] - 1].strip(), f
    assert {p["id"] for p in doc["explain"]["applied"]} >= {"shm-too-small", "no-gpu"}
