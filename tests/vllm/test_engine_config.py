"""vLLM engine settings read from container specs the way vLLM reads them."""

from __future__ import annotations

from typing import Any

import pytest

from triage.snapshot import Snapshot
from triage.vllm import engine_config, selection


def container(args: list[str] | None = None, command: list[str] | None = None,
              env: list[dict[str, Any]] | None = None, image: str = "vllm/vllm-openai:v0.10.1.1",
              mounts: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"name": "vllm", "image": image, "args": args or [], "command": command or [],
            "env": env or [], "volumeMounts": mounts or []}


def test_vllm_serve_positional_model_and_both_flag_spellings() -> None:
    cfg = engine_config.parse(container(
        command=["vllm", "serve"],
        args=["Qwen/Qwen3-8B", "--max-model-len=16384", "--gpu-memory-utilization", "0.88",
              "--enforce-eager", "--tensor-parallel-size", "2"]))
    assert cfg.model == "Qwen/Qwen3-8B"
    assert cfg.integer("max-model-len") == 16384
    assert cfg.number("gpu-memory-utilization") == pytest.approx(0.88)
    assert cfg.raw("enforce-eager") == "true"
    assert cfg.integer("tensor-parallel-size") == 2


def test_model_as_first_arg_to_the_images_own_vllm_serve_entrypoint() -> None:
    """vllm/vllm-openai's ENTRYPOINT is `vllm serve`: args alone name the model first."""
    cfg = engine_config.parse(container(args=["Qwen/Qwen3-8B", "--port", "8000",
                                              "--max-model-len", "16384"]))
    assert cfg.model == "Qwen/Qwen3-8B"
    assert cfg.integer("max-model-len") == 16384
    # A command of its own replaces the entrypoint: a bare word is then not the model.
    other = engine_config.parse(container(command=["python3", "serve.py"],
                                          args=["Qwen/Qwen3-8B"]))
    assert other.model is None
    # Another image's entrypoint is not known to be `vllm serve`.
    custom = engine_config.parse(container(image="ghcr.io/acme/llm-server:1.2",
                                           args=["Qwen/Qwen3-8B"]))
    assert custom.model is None


def test_api_server_module_with_model_flag_and_underscores() -> None:
    cfg = engine_config.parse(container(
        command=["python3", "-m", "vllm.entrypoints.openai.api_server"],
        args=["--model", "meta-llama/Llama-3.1-8B-Instruct", "--max_num_batched_tokens", "8192",
              "--kv-cache-dtype", "fp8"]))
    assert cfg.model == "meta-llama/Llama-3.1-8B-Instruct"
    assert cfg.integer("max-num-batched-tokens") == 8192
    assert cfg.value("kv-cache-dtype") == "fp8"


def test_unset_flags_report_vllm_defaults() -> None:
    cfg = engine_config.parse(container(args=["--model", "m"]))
    assert cfg.number("gpu-memory-utilization") == pytest.approx(0.9)
    assert not cfg.is_set("gpu-memory-utilization")
    assert "default 0.9" in cfg.describe("gpu-memory-utilization")
    assert "unset" in cfg.describe("max-model-len")
    assert cfg.integer("max-model-len") is None
    assert cfg.integer("tensor-parallel-size") == 1


def test_shell_wrapper_and_kubernetes_variable_expansion() -> None:
    cfg = engine_config.parse(container(
        command=["/bin/sh", "-c"],
        args=["exec vllm serve $(MODEL) --max-model-len 32k --port 8000 "
              "--served-model-name 'chat model'"],
        env=[{"name": "MODEL", "value": "Qwen/Qwen2.5-7B-Instruct"}]))
    assert cfg.model == "Qwen/Qwen2.5-7B-Instruct"
    assert cfg.integer("max-model-len") == 32000
    assert cfg.raw("served-model-name") == "chat model"


def test_kserve_huggingface_runtime_spellings() -> None:
    c = container(image="kserve/huggingfaceserver:v0.15.0",
                  command=["python", "-m", "huggingfaceserver"],
                  args=["--model_name=llama", "--model_id=meta-llama/Llama-3.1-8B-Instruct",
                        "--backend=vllm", "--max_model_len=8192"])
    assert selection.is_vllm_container(c)
    cfg = engine_config.parse(c)
    assert cfg.model == "meta-llama/Llama-3.1-8B-Instruct"
    assert cfg.integer("max-model-len") == 8192
    hf = container(image="kserve/huggingfaceserver:v0.15.0", args=["--backend=huggingface"])
    assert not selection.is_vllm_container(hf)


def test_config_file_from_a_mounted_configmap_and_args_win() -> None:
    pod = {"metadata": {"name": "p", "namespace": "llm"},
           "spec": {"volumes": [{"name": "cfg", "configMap": {"name": "vllm-config"}}]}}
    snap = Snapshot(context=None, namespace="llm", collected_at="", tool_version="t")
    snap.objects["configmaps"] = [{"metadata": {"name": "vllm-config", "namespace": "llm"},
                                   "data": {"config.yaml": "model: Qwen/Qwen3-8B\n"
                                            "max_model_len: 8192\ngpu_memory_utilization: 0.8\n"
                                            "enforce_eager: true\n"}}]
    c = container(command=["vllm", "serve"],
                  args=["--config", "/etc/vllm/config.yaml", "--gpu-memory-utilization", "0.9"],
                  mounts=[{"name": "cfg", "mountPath": "/etc/vllm"}])
    cfg = engine_config.parse(c, snap, pod)
    assert cfg.model == "Qwen/Qwen3-8B"
    assert cfg.integer("max-model-len") == 8192
    assert cfg.number("gpu-memory-utilization") == pytest.approx(0.9)  # args win
    assert cfg.raw("enforce-eager") == "true"
    assert "config /etc/vllm/config.yaml" in cfg.describe("max-model-len")


def test_config_file_that_was_not_collected_is_noted_not_guessed() -> None:
    snap = Snapshot(context=None, namespace="llm", collected_at="", tool_version="t")
    cfg = engine_config.parse(container(args=["--config", "/cfg/c.yaml"]), snap,
                              {"metadata": {"namespace": "llm"}, "spec": {}})
    assert cfg.notes and "not read" in cfg.notes[0]
    assert cfg.integer("max-model-len") is None


@pytest.mark.parametrize("image,command,expected", [
    ("vllm/vllm-openai:v0.6.6.post1", [], True),
    ("registry.example.com/ml/vllm-openai@sha256:abc", [], True),
    ("nvcr.io/nvidia/pytorch:24.05-py3", ["vllm", "serve", "m"], True),
    ("python:3.12", ["python", "-m", "vllm.entrypoints.openai.api_server"], True),
    ("redis:7.2", ["redis-server"], False),
    ("ghcr.io/acme/vllm-router:1.0", [], False),
    ("busybox", ["sh", "-c", "echo vllm is great"], False),
])
def test_vllm_container_detection(image: str, command: list[str], expected: bool) -> None:
    assert selection.is_vllm_container(container(image=image, command=command)) is expected


def test_a_flag_says_the_field_it_is_written_in() -> None:
    cfg = engine_config.parse(container(
        command=["sh", "-c", "vllm serve Qwen/Qwen3-8B --tensor-parallel-size 2"],
        args=["--max-model-len", "16384"]))
    assert cfg.describe("tensor-parallel-size") == "--tensor-parallel-size=2 (set in command)"
    assert cfg.describe("max-model-len") == "--max-model-len=16384 (set in args)"
    assert cfg.sources["model"] == "command"


def test_arguments_expand_variables_from_a_config_map() -> None:
    snap = Snapshot(context=None, namespace="llm", collected_at="", tool_version="t")
    snap.objects = {"configmaps": [{"metadata": {"name": "llm-env", "namespace": "llm"},
                                    "data": {"MODEL": "Qwen/Qwen3-8B", "TP": "2"}}]}
    pod = {"metadata": {"name": "p", "namespace": "llm"}, "spec": {}}
    c = container(args=["--model", "$(MODEL)", "--tensor-parallel-size", "$(TP)"])
    c["envFrom"] = [{"configMapRef": {"name": "llm-env"}}]
    cfg = engine_config.parse(c, snap, pod)
    assert (cfg.model, cfg.integer("tensor-parallel-size")) == ("Qwen/Qwen3-8B", 2)
