"""What an image's name says of the vLLM in it: vLLM named anywhere in the repository or
the tag (Neuron, TPU, ROCm and CPU builds included), its version, and its hardware."""

from __future__ import annotations

import pytest

from triage.vllm import images, selection

CARRY_VLLM = [
    "vllm/vllm-openai:v0.10.1.1",
    "vllm/vllm-tpu:nightly",
    "rocm/vllm:rocm6.3.1_vllm_0.8.5_20250521",
    "rocm/vllm-dev:main",
    "public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.10.1",
    # AWS's Neuron builds name vLLM only in a word of the repository (data-on-eks samples)
    "public.ecr.aws/data-on-eks/neuron-sdk2.20-vllm0.5.0-neuron:v8",
    "public.ecr.aws/data-on-eks/llama3.1_405b_neuron2.19-patch_vllm0.5.0-patch:latest",
    # ... or only in the tag
    "registry.example.com/llm-serve:vllm-0.10",
    "kserve/huggingfaceserver:v0.15.2-gpu",
    "registry.example.com:5000/vllm:0.9.2",
]
# "vllm" inside another word is not vLLM; nor is a name without it.
NOT_VLLM = ["registry.example.com/myvllmx:1", "nginx:1.27", "redis:7",
            "registry.example.com:5000/serve:vllmish"]


@pytest.mark.parametrize("image", CARRY_VLLM)
def test_an_image_naming_vllm_in_its_name_or_tag_carries_vllm(image: str) -> None:
    assert images.carries_vllm(image)
    assert selection.is_vllm_container({"name": "c", "image": image})


@pytest.mark.parametrize("image", NOT_VLLM)
def test_vllm_inside_another_word_is_not_vllm(image: str) -> None:
    assert not images.carries_vllm(image)
    assert not selection.is_vllm_container({"name": "c", "image": image})


def test_a_router_named_for_vllm_is_still_not_a_server() -> None:
    assert not selection.is_vllm_container(
        {"name": "router", "image": "lmcache/lmstack-router:vllm-0.10"})


@pytest.mark.parametrize(("image", "hardware"), [
    ("vllm/vllm-openai:v0.10.1.1", "cuda"),
    ("vllm/vllm-tpu:nightly", "tpu"),
    ("rocm/vllm:latest", "rocm"),
    ("public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.10.1", "cpu"),
    ("public.ecr.aws/data-on-eks/llama3.1_405b_neuron2.19-patch_vllm0.5.0-patch:latest",
     "neuron"),
    ("kserve/huggingfaceserver:v0.15.2", "cpu"),
    ("kserve/huggingfaceserver:v0.15.2-gpu", "cuda"),
    ("registry.example.com/llm-serve:vllm-0.10", None),
    ("nginx:1.27", None),
])
def test_the_hardware_a_build_is_for(image: str, hardware: str | None) -> None:
    found = images.platform(image)
    assert (found[0] if found else None) == hardware


@pytest.mark.parametrize(("image", "version"), [
    ("vllm/vllm-openai:v0.10.1.1", "0.10.1.1"),
    ("vllm/vllm-openai:latest", None),
    ("public.ecr.aws/data-on-eks/neuron-sdk2.20-vllm0.5.0-neuron:v8", "0.5.0"),
    ("rocm/vllm:rocm6.3.1_vllm_0.8.5_20250521", "0.8.5"),
    ("kserve/huggingfaceserver:v0.15.2-gpu", "0.8.5"),
    ("kserve/huggingfaceserver:v0.99.0", None),
    ("registry.example.com/llm-serve:vllm-0.10", "0.10"),
])
def test_the_vllm_version_a_name_gives(image: str, version: str | None) -> None:
    found = images.version(image)
    assert (found[0] if found else None) == version
