"""Which pods are vLLM servers (triage/vllm/selection.py): by image and command, by vLLM's
own flags, by labels, by the first lines of the log; a pod is decided on its own view as
on the whole pod."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import FIXTURES
from tests.support.fixturekit import load_list
from triage.vllm import selection


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
        f"{key}=vllm (and the pod asks for an accelerator)"
    cpu = {"name": "redis", "image": "docker.io/bitnami/redis:7.4.1"}
    assert selection.labels_name_vllm(_pod([cpu], {key: "vllm"})) is None
    # TPU chips and Neuron devices are accelerators as GPUs are
    for resource in ("google.com/tpu", "aws.amazon.com/neuron"):
        other = {"name": "server", "image": FORK, "resources": {"limits": {resource: "4"}}}
        assert selection.labels_name_vllm(_pod([other], {key: "vllm"})) == \
            f"{key}=vllm (and the pod asks for an accelerator)"
        assert selection.worth_reading_head(_pod([other], {})) == ["server"]


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
