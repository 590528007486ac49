"""Which pods are vLLM servers (triage/selection.py): by image and command, by vLLM's own
flags, by labels, by the first lines of the log; and a namespace whose crash-looping
pods were not selected never reads as an all-clear."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, replay, run_cli
from tests.support.fixturekit import copy_fixture, load_list, save_list
from triage.vllm import selection

FIXTURE = "vllm-pods-by-flags-labels-logs"


def _pod(containers: list[dict[str, Any]], labels: dict[str, str] | None = None
         ) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "llm", "labels": labels or {}},
            "spec": {"containers": containers}}


FORK = "registry.acme.internal/ml/llm-serve:2026.11.3"


@pytest.mark.parametrize(("container", "expected"), [
    # a company build of vllm/vllm-openai, flags only (the entrypoint is `vllm serve`)
    ({"image": FORK, "args": ["--model", "Qwen/Qwen3-8B", "--gpu-memory-utilization", "0.9",
                              "--max-model-len", "8192"]}, True),
    # the production-stack chart writes --gpu_memory_utilization with underscores
    ({"image": FORK, "args": ["--gpu_memory_utilization=0.85"]}, True),
    # flags other servers take too are not enough (sglang, TGI)
    ({"image": "lmsysorg/sglang:v0.4.6", "args": ["--model-path", "Qwen/Qwen3-8B",
                                                  "--tensor-parallel-size", "2", "--port",
                                                  "8000"]}, False),
    ({"image": "ghcr.io/huggingface/text-generation-inference:3.0",
      "args": ["--model-id", "Qwen/Qwen3-8B", "--max-input-length", "4096"]}, False),
    # a router in front of vLLM is not a server, whatever flags it carries
    ({"image": "lmcache/lmstack-router:0.1.6", "args": ["--max-model-len", "8192"]}, False),
])
def test_vllm_flags_select_a_container_whatever_its_image(container: dict[str, Any],
                                                          expected: bool) -> None:
    assert selection.is_vllm_container({"name": "c", **container}) is expected


@pytest.mark.parametrize(("labels", "expected"), [
    ({"app.kubernetes.io/name": "vllm"}, "app.kubernetes.io/name=vllm"),
    ({"app.kubernetes.io/component": "vllm-engine"}, "app.kubernetes.io/component=vllm-engine"),
    ({"app.kubernetes.io/component": "llminferenceservice-workload-prefill"},
     "app.kubernetes.io/component=llminferenceservice-workload-prefill"),
    ({"llm-d.ai/role": "decode"}, "llm-d.ai/role=decode"),
    ({"leaderworkerset.sigs.k8s.io/name": "vllm-llama70b"},
     "leaderworkerset.sigs.k8s.io/name=vllm-llama70b"),
    ({"model": "llama3", "helm-release-name": "vllm"}, "model=llama3, helm-release-name=vllm"),
    ({"app.kubernetes.io/name": "vllm-router"}, None),
    ({"app.kubernetes.io/component": "llminferenceservice-router-scheduler"}, None),
    ({"app": "llama-chat"}, None),
    # a Helm release named vllm labels every pod of its chart: its redis, the open-webui
    # in front of it; group labels select only a pod that asks for a GPU
    ({"app.kubernetes.io/instance": "vllm", "app.kubernetes.io/name": "redis"}, None),
    ({"app.kubernetes.io/name": "open-webui", "app.kubernetes.io/part-of": "vllm"}, None),
    ({"app": "vllm"}, None),
])
def test_labels_that_name_vllm(labels: dict[str, str], expected: str | None) -> None:
    assert selection.labels_name_vllm(_pod([], labels)) == expected


@pytest.mark.parametrize("key", ["app.kubernetes.io/instance", "app.kubernetes.io/part-of",
                                 "app"])
def test_group_labels_name_vllm_on_a_pod_that_asks_for_a_gpu(key: str) -> None:
    gpu = {"name": "server", "image": FORK, "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    assert selection.labels_name_vllm(_pod([gpu], {key: "vllm"})) == \
        f"{key}=vllm (and the pod asks for a GPU)"
    cpu = {"name": "redis", "image": "docker.io/bitnami/redis:7.4.1"}
    assert selection.labels_name_vllm(_pod([cpu], {key: "vllm"})) is None


def test_a_label_selects_the_server_container_not_the_sidecar() -> None:
    pod = _pod([{"name": "istio-proxy", "image": "docker.io/istio/proxyv2:1.24.2"},
                {"name": "server", "image": FORK,
                 "resources": {"limits": {"nvidia.com/gpu": "1"}}},
                {"name": "routing-proxy", "image": "ghcr.io/llm-d/llm-d-routing-sidecar:0.2"}],
               {"llm-d.ai/role": "decode"})
    assert [c["name"] for c in selection.triaged_containers(pod, None)] == ["server"]


@pytest.mark.parametrize(("head", "expected"), [
    ("INFO 11-28 03:08:17 [__init__.py:216] Automatically detected platform cuda.\n", True),
    ("(APIServer pid=7) INFO 11-28 03:08:21 [api_server.py:1839] vLLM API server version "
     "0.11.0\n", True),
    ("INFO 01-11 15:51:18 llm_engine.py:275] Initializing an LLM engine (v0.6.6) with "
     "config: model='x'\n", True),
    ("usage: vllm [-h] [-v] {chat,complete,serve,bench,collect-env,run-batch} ...\n"
     "vllm: error: unrecognized arguments: --enable-metrics\n", True),
    ("2026-11-28 03:06:41,902 INFO embed_indexer.main: connecting to redis\n", False),
    ("INFO:     Started server process [1]\nINFO:     Uvicorn running on http://0.0.0.0:80\n",
     False),
])
def test_vllm_log_head(head: str, expected: bool) -> None:
    assert selection.is_vllm_log_head(head) is expected


def test_fork_flags_label_and_log_head_are_triaged_live(tmp_path: Path) -> None:
    """The issue's case: a non-vLLM image name, flags-only args and a vLLM label; and a
    pod recognised only by its log's first lines, read through the API (limitBytes)."""
    with replay(FIXTURE, tmp_path) as (server, kubeconfig):
        run = run_cli("scan", "--kubeconfig", str(kubeconfig), "-o", "json")
        requests = list(server.requests)
    assert run.code == 1, run.stderr
    report = run.json()
    found = {p["name"]: (p["containers"], [f["id"] for f in p["findings"]])
             for p in report["pods"]}
    assert found["qwen-7d8c9b0a1e-h5n2p"][1][0] == "cuda-oom"
    assert found["mistral-3c4d5e6f7a-w2x8k"] == (["vllm"], [])
    assert found["llama-chat-9a8b7c6d5e-p7r4t"][1] == ["model-download-failed"]
    assert "embed-indexer-5b6c7d8e9f-q3z9m" not in found
    # the release "vllm"'s redis and the open-webui part of it are not vLLM servers
    assert "vllm-redis-master-0" not in found and "open-webui-6c7d8e9f0a-b2c3d" not in found
    assert any("embed-indexer-5b6c7d8e9f-q3z9m" in w and "crash-looping" in w
               for w in report["warnings"]), report["warnings"]
    # the head of llama-chat's log was read with limitBytes and no tailLines
    heads = [r for r in requests if "llama-chat" in r and "/log" in r and "tailLines" not in r]
    assert heads and all("limitBytes=4096" in r for r in heads), requests


def test_crash_looping_pods_none_selected_is_never_an_all_clear(tmp_path: Path) -> None:
    root = copy_fixture(tmp_path / "only-other", FIXTURE, expected={})
    pods = load_list(root, "pods")
    pods["items"] = [p for p in pods["items"] if p["metadata"]["name"].startswith("embed")]
    save_list(root, "pods", pods)
    run = run_cli("analyze", str(root), "-o", "json")
    assert run.code == 0, run.stderr
    report = run.json()
    assert report["pods"] == []
    assert report["verdict"] == "unknown"
    assert "embed-indexer-5b6c7d8e9f-q3z9m" in report["summary"]
    assert "crash-looping" in report["summary"]
    step = report["checklist"][0]
    assert step["verdict"] == "unknown"
    assert any("embed-indexer" in e for e in step["evidence"]), step
    table = run_cli("analyze", str(root))
    assert "embed-indexer-5b6c7d8e9f-q3z9m" in table.stdout


def test_bundle_keeps_the_pods_selected_by_their_log(tmp_path: Path) -> None:
    with replay(FIXTURE, tmp_path) as (_server, kubeconfig):
        out = tmp_path / "b.tar.gz"
        run = run_cli("collect", "--kubeconfig", str(kubeconfig), "-o", str(out))
        assert run.code == 0, run.stderr
    report = run_cli("analyze", str(out), "-o", "json").json()
    names = {p["name"] for p in report["pods"]}
    assert "llama-chat-9a8b7c6d5e-p7r4t" in names
    assert any("embed-indexer" in w for w in report["warnings"])
    assert (FIXTURES / FIXTURE).is_dir()


def _every_fixture_pod() -> list[Any]:
    pods: list[Any] = []
    for root in sorted(FIXTURES.iterdir()):
        if (root / "objects" / "pods.yaml").exists():
            pods += load_list(root, "pods")["items"]
    return pods


def _wrong_typed(pod: Any) -> list[Any]:
    """Variants of a pod with a field selection reads given the wrong type."""
    import copy

    out = []
    for path, bad in ((("metadata",), "x"), (("metadata", "labels"), ["vllm"]),
                      (("spec",), 3), (("spec", "containers"), {"image": "vllm/vllm-openai"}),
                      (("status", "containerStatuses"), "CrashLoopBackOff"),
                      (("spec", "containers", 0, "image"), 7),
                      (("spec", "containers", 0, "args"), "--max-model-len 8"),
                      (("spec", "containers", 0, "resources"), ["nvidia.com/gpu"])):
        changed = copy.deepcopy(pod)
        at = changed
        try:
            for part in path[:-1]:
                at = at[part]
            at[path[-1]] = bad
        except (KeyError, IndexError, TypeError):
            continue
        out.append(changed)
    return out


@pytest.mark.parametrize("selector", [None, "app=x"])
def test_a_pod_is_decided_on_its_view_as_on_the_whole_pod(selector: str | None) -> None:
    """The live collector decides each listed pod on the normalized part selection reads
    (``selection.view``) and normalizes the rest only of the pods kept: every decision
    must be the one the whole normalized pod gives."""
    from triage.collect.shape import normalize

    pods = _every_fixture_pod()
    assert len(pods) > 50
    pods += [v for p in pods for v in _wrong_typed(p)] + ["a string", None, {}]
    chosen_any = others_any = 0
    for pod in pods:
        whole, seen = normalize(pod), normalize(selection.view(pod))
        if not isinstance(whole, dict):
            assert whole == seen
            continue
        chosen = [c.get("name") for c in selection.triaged_containers(whole, selector)]
        assert [c.get("name") for c in selection.triaged_containers(seen, selector)] == chosen
        assert selection.worth_reading_head(seen) == selection.worth_reading_head(whole)
        assert selection.passed_over([seen], []) == selection.passed_over([whole], [])
        chosen_any += bool(chosen)
        others_any += bool(selection.worth_reading_head(whole)) and not chosen
    assert chosen_any and (others_any or selector)  # a selector takes every pod
