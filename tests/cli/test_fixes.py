"""Fixes end to end: the JSON carries each fix and its card, the patches are applied with
the real ``kubectl patch --local`` and must change only the fields the fix names (and,
replayed, make the spec findings go), --fix-dir writes files kubectl accepts, and the
first screen shows the failure, its proof and its fix."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import FIXTURES, need, run_cli
from tests.fixes.test_fixes import _OOM, fix_of, report_of
from tests.support.fixturekit import copy_fixture, load_list, save_list
from triage import pipeline
from triage.collect import bundle
from triage.fixes import patches
from triage.results import Report

GIB = 2**30






# --- the JSON contract ---------------------------------------------------------------------


def test_json_carries_fix_and_cards() -> None:
    run = run_cli("analyze", str(FIXTURES / "busy-namespace"), "-o", "json")
    doc = json.loads(run.stdout)
    for pod in doc["pods"]:
        for f in pod["findings"]:
            assert set(f["fix"]) >= {"text", "values", "patch"}
            patch = f["fix"]["patch"]
            if patch is not None:
                assert set(patch) == {"apiVersion", "kind", "namespace", "name", "type", "patch"}
                assert patch["type"] in ("strategic", "merge", "json")
    cards = doc["cards"]
    assert [(c["finding"], c["workload"], len(c["pods"]), c["pods_total"]) for c in cards] == [
        ("container-oomkilled", "Deployment/vllm-llama", 4, 4),
        ("gpu-unschedulable", "Deployment/vllm-qwen", 2, 2)]
    assert cards[0]["scope"] == "4 of 4 pods of Deployment/vllm-llama"
    assert cards[0]["fix"]["values"]["memory_limit_bytes"] == 16 * GIB
    # the cross-pod cause is said on both cards
    for card in cards:
        assert any("8 of them by 4 crash-looping pod(s) of Deployment/vllm-llama" in c
                   and "Deployment/vllm-qwen" in c for c in card["causes"]), card["causes"]
    yaml_doc = yaml.safe_load(run_cli("analyze", str(FIXTURES / "busy-namespace"),
                                      "-o", "yaml").stdout)
    assert [c["finding"] for c in yaml_doc["cards"]] == [c["finding"] for c in cards]


# --- patches, applied with the real kubectl -----------------------------------------------

PATCHED_FIXTURES = ["cuda-oom", "kv-cache-too-small-v1", "kv-cache-too-small-v0",
                    "probe-kill-vs-crash-while-loading", "probe-timing",
                    "oomkilled-vs-cuda-oom", "busy-namespace", "shm-bus-error-tp2",
                    "image-tag-latest", "gmu-too-high", "gpu-arch-unsupported",
                    "gpu-pending-insufficient", "rollout-gpu-surge", "vllm-port-env-clash",
                    "no-gpu-missing-request", "volume-mount-failed", "kserve-scale-to-zero",
                    "kserve-target-too-high", "max-model-len-unset", "batched-tokens-unbounded",
                    "secrets-planted", "known-failure-variants", "startup-stalled-nccl",
                    "vllm-pods-by-flags-labels-logs", "autoscaling-on-cpu", "request-queueing",
                    "hpa-target-too-high"]
# Findings the pod's spec decides: replayed with the patched object, they must be gone.
SPEC_DECIDED = {"gpu-memory-utilization", "probe-timing", "image-tag-latest",
                "max-model-len-unset", "vllm-port-env-clash", "scale-to-zero",
                "autoscale-target-too-high", "autoscaling-on-cpu"}
# What the recorded log still shows once the finding that claimed it is patched away:
# known-failure-variants, vllm-llama-tp2 vllm.previous.log line 13 "RuntimeError: NCCL
# error: unhandled system error" is what shm-too-small explained (a 64 MiB /dev/shm); with
# /dev/shm at 4Gi, shm-too-small no longer holds and the recorded NCCL line stands alone.
RECORDED_RESIDUE = {"known-failure-variants": {"nccl-failure"}}
_PLURAL = {"Deployment": "deployments", "StatefulSet": "statefulsets",
           "InferenceService": "inferenceservices",
           "PersistentVolumeClaim": "persistentvolumeclaims",
           "HorizontalPodAutoscaler": "horizontalpodautoscalers"}


def _kubectl_patch(obj: dict[str, Any], patch: Any, kind: str, ptype: str,
                   tmp_path: Path) -> dict[str, Any]:
    path = tmp_path / f"{kind}.yaml"
    path.write_text(yaml.safe_dump(obj))
    run = subprocess.run(
        [need("kubectl"), "patch", "--local", "--dry-run=client", "-o", "yaml", "-f", str(path),
         "--type", ptype, "-p", json.dumps(patch)],
        capture_output=True, text=True, timeout=60,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "KUBECONFIG": "/dev/null"})
    assert run.returncode == 0, run.stderr
    out: dict[str, Any] = yaml.safe_load(run.stdout)
    return out


def _leaves(obj: Any, path: str = "") -> dict[str, Any]:
    if isinstance(obj, dict):
        out: dict[str, Any] = {}
        for k, v in obj.items():
            out.update(_leaves(v, f"{path}.{k}" if path else str(k)))
        return out or {path: {}}
    if isinstance(obj, list):
        out = {}
        for i, v in enumerate(obj):
            key = v.get("name", i) if isinstance(v, dict) else i
            out.update(_leaves(v, f"{path}[{key}]"))
        return out or {path: []}
    return {path: obj}


def _allowed(kind: str, edits: dict[str, Any], container: str) -> list[str]:
    """The paths a fix names, as prefixes of the leaves it may change."""
    pod = {"Deployment": "spec.template.spec", "StatefulSet": "spec.template.spec",
           "InferenceService": "spec.predictor"}.get(kind, "")
    c = f"{pod}.containers[{container}]"
    if kind == "InferenceService":
        c = f"{pod}.model"
    out = [f"{c}.args", f"{c}.command"] if edits["args"] else []
    out += [f"{c}.{k.rstrip('+')}" for k in edits["container"]]
    out += [f"{pod}.{k.rstrip('+')}" for k in edits["pod"]]
    out += [k.replace('["', ".").replace('"]', "") for k in edits["spec"]]
    return [p.replace('["', ".").replace('"]', "") for p in out]


@pytest.mark.parametrize("name", PATCHED_FIXTURES)
def test_every_patch_applies_with_kubectl_and_changes_only_named_fields(
        name: str, tmp_path: Path) -> None:
    report = report_of(str(FIXTURES / name))
    checked = 0
    for card in report.cards:
        fix = card.fix
        if fix is None or fix.patch is None:
            continue
        p = fix.patch
        item = next(o for o in load_list(FIXTURES / name, _PLURAL[p.kind])["items"]
                    if o["metadata"]["name"] == p.name)
        obj = {"apiVersion": p.api_version, "kind": p.kind, **item}
        patched = _kubectl_patch(obj, p.body, p.kind, p.type, tmp_path)
        before, after = _leaves(obj), _leaves(patched)
        changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
        container = next(f.container for pod in report.pods for f in pod.findings
                         if f.id == card.finding)
        allowed = _allowed(p.kind, fix.edits, container)
        # A request moved with its limit (the pod keeps its QoS class) is named by the text.
        moved = [a.replace(".limits", ".requests") for a in allowed if ".limits" in a]
        stray = {k for k in changed if not any(k == a or k.startswith(a + ".")
                                               or k.startswith(a + "[")
                                               for a in allowed + moved)}
        assert changed and not stray, (card.finding, stray, allowed)
        for k in changed - {k for k in changed if any(k.startswith(a) for a in allowed)}:
            assert f"`requests.{k.rsplit('.', 1)[1]}=" in fix.text, (card.finding, k)
        # what kubectl made is what the tool computed it would be
        target = patches.Target(p.kind, obj, container)
        expected = patches.apply(target, patches.Edits(**{k: fix.edits[k] for k in
                                                          ("args", "container", "pod", "spec")}))
        assert _leaves(expected) == after
        checked += 1
    assert checked, f"no patch in {name}"


@pytest.mark.parametrize("name", PATCHED_FIXTURES)
def test_replayed_with_the_patched_objects_the_spec_findings_are_gone(
        name: str, tmp_path: Path) -> None:
    """Each workload's combined patch (the --fix-dir file), applied by kubectl to its object;
    the pods get the patched template, as the rollout would give them."""
    report = report_of(str(FIXTURES / name))
    root = copy_fixture(tmp_path / "f", name)
    for wp in report.patches:
        p = wp.patch
        plural = _PLURAL[p.kind]
        objects = load_list(root, plural)
        for i, item in enumerate(objects["items"]):
            if item["metadata"]["name"] != p.name:
                continue
            obj = {"apiVersion": p.api_version, "kind": p.kind, **item}
            patched = _kubectl_patch(obj, p.body, p.kind, p.type, tmp_path)
            patched.pop("apiVersion"), patched.pop("kind")
            objects["items"][i] = patched
            if p.kind in ("Deployment", "StatefulSet"):
                _roll_pods(root, report, f"{p.kind}/{p.name}", p.body, p.type, tmp_path)
        save_list(root, plural, objects)
    before = {(pod.name, f.id) for pod in report.pods for f in pod.findings}
    after = {(pod.name, f.id) for pod in pipeline.analyze(bundle.load(root)).pods
             for f in pod.findings}
    fixed = {(pod, fid) for pod, fid in before if fid in SPEC_DECIDED
             and any(fid in wp.findings for wp in report.patches)}
    assert not fixed & after, fixed & after
    # The recorded logs and metrics still show the old failure; with its cause patched
    # away only the generic findings may take its place (the fallbacks: a crash loop, an
    # engine that died of it), never a new specific one.
    assert {fid for _, fid in after - before} <= {"crashloop-unknown", "engine-died",
                                                  "latency-tail-high",
                                                  *RECORDED_RESIDUE.get(name, ())}


def _roll_pods(root: Path, report: Report, workload: str, body: Any, ptype: str,
               tmp_path: Path) -> None:
    """The pods the rollout would make: each pod patched with the template's part of the
    patch, by kubectl (fixture templates are abridged; the pods are whole)."""
    if ptype == "json":  # the template's operations, at the same places in the pod
        template: Any = [{**op, "path": op["path"].removeprefix("/spec/template")}
                         for op in body if op["path"].startswith("/spec/template/")]
    else:
        template = (body.get("spec") or {}).get("template")
        ptype = "strategic"
    if not template:
        return
    pods = load_list(root, "pods")
    names = {p.name for p in report.pods if p.owner == workload}
    for i, pod in enumerate(pods["items"]):
        if pod["metadata"]["name"] in names:
            patched = _kubectl_patch({"apiVersion": "v1", "kind": "Pod", **pod},
                                     template, "Pod", ptype, tmp_path)
            patched.pop("apiVersion"), patched.pop("kind")
            pods["items"][i] = patched
    save_list(root, "pods", pods)


def test_fix_dir_writes_one_file_per_workload_that_kubectl_accepts(tmp_path: Path) -> None:
    out = tmp_path / "fixes"
    run = run_cli("analyze", str(FIXTURES / "busy-namespace"), "--fix-dir", str(out))
    assert run.code == 1, run.stderr
    files = sorted(p.name for p in out.iterdir())
    assert files == ["llm.deployment.vllm-llama.patch.yaml"]
    text = (out / files[0]).read_text()
    assert "# fixes: container-oomkilled" in text
    assert ("kubectl --context gke_acme-ml_us-central1_inference patch deployment vllm-llama "
            f"-n llm --type strategic --patch-file {out / files[0]}") in text
    assert "| kubectl --context gke_acme-ml_us-central1_inference diff -n llm -f -" in text
    item = next(o for o in load_list(FIXTURES / "busy-namespace", "deployments")["items"]
                if o["metadata"]["name"] == "vllm-llama")
    patched = _kubectl_patch({"apiVersion": "apps/v1", "kind": "Deployment", **item},
                             yaml.safe_load(text), "Deployment", "strategic", tmp_path)
    limits = patched["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert limits["memory"] == "16Gi" and limits["nvidia.com/gpu"] == "2"


# --- the first screen ---------------------------------------------------------------------

FIRST_SCREEN = {
    # fixture: (failure, a piece of the proving line, the fix with its number)
    "cuda-oom": ("cuda-oom", "torch.OutOfMemoryError: CUDA out of memory",
                 "--gpu-memory-utilization=0.9"),
    "kv-cache-too-small-v1": ("kv-cache-insufficient", "max seq len (1010000)",
                              "--max-model-len=94176"),
    "probe-kill-vs-crash-while-loading": ("probe-killed-during-load", "failed liveness probe",
                                          "failureThreshold: 48"),
    "busy-namespace": ("container-oomkilled", "OOMKilled", "16Gi"),
}


@pytest.mark.parametrize("name", sorted(FIRST_SCREEN))
def test_first_screen_shows_failure_proof_and_fix(name: str) -> None:
    failure, proof, fix = FIRST_SCREEN[name]
    table = run_cli("analyze", str(FIXTURES / name), env={"COLUMNS": "120"}).stdout
    screen = "\n".join(table.splitlines()[:40])
    for piece in (failure, proof, fix):
        assert piece in " ".join(screen.split()), (piece, screen)
    md = run_cli("analyze", str(FIXTURES / name), "-o", "markdown").stdout
    screen = "\n".join(md.splitlines()[:30])
    for piece in (failure, proof.replace("(", "").replace(")", ""), fix):
        flat = " ".join(screen.replace("\\", "").replace("(", "").replace(")", "").split())
        assert piece.replace("(", "").replace(")", "") in flat, (piece, screen)


def test_busy_namespace_first_screen_names_the_cross_pod_cause() -> None:
    table = run_cli("analyze", str(FIXTURES / "busy-namespace")).stdout
    screen = " ".join("\n".join(table.splitlines()[:40]).split())
    assert "4 of 4 pods of Deployment/vllm-llama" in screen
    assert "2 of 2 pods of Deployment/vllm-qwen" in screen
    assert "crash-looping pod(s) of Deployment/vllm-llama" in screen
    assert "What to do" not in table


_SHM = patches.Edits(pod={"volumes+": [{"name": "dshm", "emptyDir": {
                         "medium": "Memory", "sizeLimit": "4Gi"}}]},
                     container={"volumeMounts+": [{"name": "dshm", "mountPath": "/dev/shm"}],
                                "resources.limits.memory": "20Gi"})
_PROBE = patches.Edits(container={"startupProbe": {"httpGet": {"path": "/health",
                                                               "port": 8000},
                                                   "periodSeconds": 10,
                                                   "failureThreshold": 48}})
_ARGS = patches.Edits(args={"--max-model-len": 8192})


@pytest.mark.parametrize(("a", "b"), [(_OOM, _SHM), (_PROBE, _ARGS), (_SHM, _PROBE)])
def test_fixes_on_one_workload_commute_and_neither_undoes_the_other(
        a: patches.Edits, b: patches.Edits, tmp_path: Path) -> None:
    """The memory limit one fix sizes and the larger one a /dev/shm fix needs: the combined
    patch keeps the larger (20Gi holds both), whichever card comes first; a probe and an
    engine flag both stay."""
    dep = {"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "v", "namespace": "llm"},
           "spec": {"selector": {"matchLabels": {"app": "v"}}, "template": {
               "metadata": {"labels": {"app": "v"}}, "spec": {"containers": [
                   {"name": "vllm", "image": "vllm/vllm-openai:v0.11.0",
                    "args": ["--model", "m"],
                    "resources": {"limits": {"memory": "12Gi", "nvidia.com/gpu": 1}}}]}}}}
    target = patches.Target("Deployment", dep, "vllm")
    ab, ba = patches.build(target, a.merged(b)), patches.build(target, b.merged(a))
    assert ab is not None and ba is not None
    one = _kubectl_patch(dep, ab["patch"], "Deployment", ab["type"], tmp_path)
    other = _kubectl_patch(dep, ba["patch"], "Deployment", ba["type"], tmp_path)
    assert one == other
    for edits in (a, b):  # each fix's own change is in the result
        alone = _kubectl_patch(dep, patches.build(target, edits)["patch"],  # type: ignore[index]
                               "Deployment", "strategic", tmp_path)
        c_alone = alone["spec"]["template"]["spec"]["containers"][0]
        c_both = one["spec"]["template"]["spec"]["containers"][0]
        for key in ("args", "startupProbe", "volumeMounts"):
            if key in c_alone and c_alone[key] != dep["spec"]["template"]["spec"][
                    "containers"][0].get(key):
                assert c_both[key] == c_alone[key], key
    limits = one["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    if a is _OOM:
        assert limits["memory"] == "20Gi" and limits["nvidia.com/gpu"] == 1


def _lws_fixture(tmp_path: Path) -> Path:
    """nccl-failure's vllm-ds-0 (the leader, worker-index 0, of StatefulSet vllm-ds owned by
    LeaderWorkerSet vllm-ds) with --gpu-memory-utilization 0.98 in its script, and the LWS
    itself: a leaderTemplate and a workerTemplate."""
    root = copy_fixture(tmp_path / "lws", "nccl-failure")
    pods = load_list(root, "pods")
    script = ""
    for pod in pods["items"]:
        if pod["metadata"]["name"] == "vllm-ds-0":
            c = pod["spec"]["containers"][0]
            c["args"][0] = c["args"][0].replace("--port 8000",
                                                "--port 8000 --gpu-memory-utilization 0.98")
            script = c["args"][0]
    save_list(root, "pods", pods)

    def template(args: list[str]) -> dict[str, Any]:
        return {"spec": {"containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.10.1",
                                         "command": ["/bin/sh", "-c"], "args": args}]}}
    save_list(root, "leaderworkersets", {
        "apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSetList",
        "metadata": {"resourceVersion": "1"},
        "items": [{"metadata": {"name": "vllm-ds", "namespace": "llm",
                                "uid": "abea5dc0-8747-5669-873a-4cc36639832d"},
                   "spec": {"replicas": 1, "leaderWorkerTemplate": {
                       "size": 2, "leaderTemplate": template([script]),
                       "workerTemplate": template(["ray start --block --address=$(LWS_LEADER_"
                                                   "ADDRESS):6379"])}}}]})
    return root


def test_a_leaderworkerset_pod_is_patched_through_its_lws(tmp_path: Path) -> None:
    """The StatefulSet vllm-ds is the LWS controller's (it would undo a patch): the fix is
    a merge patch of the LWS's leaderTemplate, the leader's --gpu-memory-utilization 0.98
    -> 0.90 inside its sh -c script; the workerTemplate is left alone."""
    root = _lws_fixture(tmp_path)
    fix = fix_of(root, "vllm-ds-0", "gpu-memory-utilization")
    assert fix.value_map()["gpu_memory_utilization"] == 0.9
    p = fix.patch
    assert p is not None and (p.kind, p.name, p.type, p.api_version) == (
        "LeaderWorkerSet", "vllm-ds", "merge", "leaderworkerset.x-k8s.io/v1")
    lwt = p.body["spec"]["leaderWorkerTemplate"]
    assert set(lwt) == {"leaderTemplate"}
    item = load_list(root, "leaderworkersets")["items"][0]
    obj = {"apiVersion": p.api_version, "kind": p.kind, **item}
    patched = _kubectl_patch(obj, p.body, p.kind, p.type, tmp_path)
    lead = patched["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    assert "--gpu-memory-utilization=0.9 " in lead["args"][0] and "0.98" not in lead["args"][0]
    assert patched["spec"]["leaderWorkerTemplate"]["workerTemplate"] == \
        item["spec"]["leaderWorkerTemplate"]["workerTemplate"]
    (wp,) = [w for w in report_of(str(root)).patches if w.patch.kind == "LeaderWorkerSet"]
    assert wp.patch.body == p.body


# --- every --fix-dir file of every fixture, applied by kubectl: only what the fixes name,
# --- and the pod keeps its QoS class --------------------------------------------------------

_POD_SPEC = {"Deployment": ("spec", "template", "spec"),
             "StatefulSet": ("spec", "template", "spec"),
             "LeaderWorkerSet": ("spec", "leaderWorkerTemplate", "workerTemplate", "spec")}


def _containers(kind: str, obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The containers of the pods the object makes (a KServe predictor's model is one)."""
    if kind == "InferenceService":
        predictor = obj["spec"]["predictor"]
        return [*(predictor.get("containers") or []),
                *([predictor["model"]] if isinstance(predictor.get("model"), dict) else [])]
    spec: Any = obj
    for key in _POD_SPEC.get(kind, ()):
        spec = spec.get(key) or {}
    return [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]


def qos_class(containers: list[dict[str, Any]]) -> str:
    """Kubernetes' QoS class of a pod (pkg/apis/core/helper/qos): a request left out is
    its limit; Guaranteed when every container limits cpu and memory at their requests,
    BestEffort when none asks for either, Burstable otherwise."""
    guaranteed, any_set = True, False
    for c in containers:
        res = c.get("resources") or {}
        limits, requests = res.get("limits") or {}, res.get("requests") or {}
        for name in ("cpu", "memory"):
            limit = limits.get(name)
            request = requests.get(name, limit)
            any_set = any_set or limit is not None or request is not None
            if limit is None or patches._bytes(request) != patches._bytes(limit):
                guaranteed = False
    return "Guaranteed" if guaranteed else "Burstable" if any_set else "BestEffort"


def _named_by(kind: str, report: Report, wp: Any) -> list[str]:
    """The fields a workload's fixes name (a limit's request with it: the fix says so)."""
    out: list[str] = []
    for card in report.cards:
        fix = card.fix
        if card.finding in wp.findings and fix and fix.patch and fix.patch.name == wp.patch.name:
            container = next(f.container for pod in report.pods for f in pod.findings
                             if f.id == card.finding)
            out += _allowed(kind, fix.edits, container)
    return out + [a.replace(".limits", ".requests") for a in out if ".limits" in a]


def guaranteed(tmp_path: Path, name: str) -> Path:
    """A copy of a fixture whose pods are Guaranteed: every request of cpu and memory
    equal to its limit, in the pod templates and the pods."""
    root = copy_fixture(tmp_path / "guaranteed", name)
    for plural in ("deployments", "pods"):
        objects = load_list(root, plural)
        for obj in objects["items"]:
            spec = obj["spec"]["template"]["spec"] if plural == "deployments" else obj["spec"]
            for c in spec.get("containers") or []:
                res = c.setdefault("resources", {})
                limits = res.setdefault("limits", {})
                limits.setdefault("cpu", "8")
                limits.setdefault("memory", "32Gi")
                res["requests"] = {**res.get("requests", {}), **limits}
            if plural == "pods":
                obj.setdefault("status", {})["qosClass"] = "Guaranteed"
        save_list(root, plural, objects)
    return root


@pytest.mark.parametrize("name", [n for n in sorted(p.name for p in FIXTURES.iterdir())
                                  if (FIXTURES / n / "incident.yaml").exists()]
                         + ["guaranteed:shm-bus-error-tp2", "guaranteed:busy-namespace",
                            "guaranteed:startup-stalled-nccl"])
def test_every_patch_file_applies_with_kubectl_and_keeps_the_qos_class(
        name: str, tmp_path: Path) -> None:
    from triage.fixes import files

    root = guaranteed(tmp_path, name.partition(":")[2]) if ":" in name else FIXTURES / name
    report = files.placed(report_of(str(root)), tmp_path)
    if ":" in name:  # the fix says what the patch does to the requests, and why
        assert any("keeps its QoS class (Guaranteed)" in c.fix.text for c in report.cards
                   if c.fix is not None and c.fix.patch is not None), name
    for wp in report.patches:
        p = wp.patch
        path = Path(wp.file)
        path.write_text(files.render(wp, report.kubectl))
        item = next(o for o in load_list(root, _PLURAL[p.kind])["items"]
                    if o["metadata"]["name"] == p.name)
        obj = {"apiVersion": p.api_version, "kind": p.kind, **item}
        source = tmp_path / "object.yaml"
        source.write_text(yaml.safe_dump(obj))
        run = subprocess.run(
            [need("kubectl"), "patch", "--local", "--dry-run=client", "-o", "yaml", "-f",
             str(source), "--type", p.type, "--patch-file", str(path)],
            capture_output=True, text=True, timeout=60,
            env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "KUBECONFIG": "/dev/null"})
        assert run.returncode == 0, run.stderr
        patched = yaml.safe_load(run.stdout)
        before, after = _leaves(obj), _leaves(patched)
        changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
        allowed = _named_by(p.kind, report, wp)
        stray = {k for k in changed if not any(k == a or k.startswith(a + ".")
                                               or k.startswith(a + "[") for a in allowed)}
        assert changed and not stray, (wp.workload, stray, allowed)
        if p.kind in ("Deployment", "StatefulSet", "LeaderWorkerSet", "InferenceService"):
            assert qos_class(_containers(p.kind, patched)) == qos_class(
                _containers(p.kind, obj)), (wp.workload, name)
