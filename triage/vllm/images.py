"""What a container image's name says about the vLLM in it: that it carries vLLM, which
version, and which hardware its build is for.

Images that carry vLLM name it somewhere in the repository or the tag:
``vllm/vllm-openai:v0.10.1.1``, ``vllm/vllm-tpu:nightly``, ``rocm/vllm:latest``,
``public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.10.1`` (vLLM's CPU build, as its
Kubernetes guide deploys it), AWS's Neuron builds
(``public.ecr.aws/data-on-eks/neuron-sdk2.20-vllm0.5.0-neuron:v8``,
``.../llama3.1_405b_neuron2.19-patch_vllm0.5.0-patch:latest``, data-on-eks'
LeaderWorkerSet samples), a company build tagged ``llm-serve:vllm-0.10``. KServe's
Hugging Face server (``kserve/huggingfaceserver``) runs vLLM too: its release tags map
to the vLLM version its Dockerfile installs, and its ``-gpu`` tag is the CUDA build
(KServe appends it when the predictor requests a GPU; without one it runs the CPU build,
``pkg/controller/v1beta1/inferenceservice/utils/utils.go`` ``UpdateImageTag``).
"""

from __future__ import annotations

from triage.speed import lazyregex

# "vllm" as a word of the image's name or tag: after the start, a slash, a dash, an
# underscore, a dot or a colon; before the end, one of those, or a version.
_CARRIES_VLLM = lazyregex.compile(r"(?i)(?:^|[/_.:@-])vllm(?=$|[/_.:@-]|v?\d)")
# A version written right after "vllm" (vllm0.5.0, vllm-0.10.1, vllm_v0.9.2).
_VERSION_AFTER = lazyregex.compile(r"(?i)vllm[-_]?v?(\d+\.\d+(?:\.\d+){0,2}(?:\.post\d+)?)")
# A release tag (v0.10.1.1, 0.6.6.post1, v0.9.2-cu128).
_RELEASE_TAG = lazyregex.compile(r"^v?(\d+\.\d+(?:\.\d+){0,2}(?:\.post\d+)?)(?:$|[-+])")
# vLLM's own repositories, whose tag is vLLM's version.
_OWN_REPOSITORY = lazyregex.compile(
    r"(?i)(?:^|/)(?:vllm-openai(?:-cpu|-rocm)?|vllm-tpu|vllm-cpu-release-repo|"
    r"vllm-arm64-cpu-release-repo|vllm)$")
_KSERVE_HF = lazyregex.compile(r"(?i)(?:^|/)huggingfaceserver$")
# KServe's Hugging Face server release -> the vLLM its Dockerfiles install
# (python/huggingface_server.Dockerfile and _cpu.Dockerfile, ARG VLLM_VERSION).
KSERVE_HF_VLLM = {
    "0.14.0": "0.6.1.post2", "0.14.1": "0.6.1.post2", "0.15.0": "0.8.1", "0.15.1": "0.8.5",
    "0.15.2": "0.8.5", "0.16.0": "0.9.2", "0.17.0": "0.15.1", "0.18.0": "0.19.0",
    "0.18.1": "0.19.0", "0.19.0": "0.20.0", "0.20.0": "0.24.0",
}
# The hardware a build is for, by a word of its name or tag; the first that matches.
_PLATFORMS = (
    ("cpu", lazyregex.compile(r"(?i)(?:^|[/_.:-])cpu(?:$|[/_.:-])")),
    ("tpu", lazyregex.compile(r"(?i)(?:^|[/_.:-])(?:tpu|libtpu)(?:$|[/_.:-])")),
    ("neuron", lazyregex.compile(r"(?i)neuron")),
    ("rocm", lazyregex.compile(r"(?i)(?:^|[/_.:-])rocm(?:$|[/_.:\d-])")),
    ("hpu", lazyregex.compile(r"(?i)(?:^|[/_.:-])(?:hpu|gaudi|habana)(?:$|[/_.:\d-])")),
    ("xpu", lazyregex.compile(r"(?i)(?:^|[/_.:-])xpu(?:$|[/_.:-])")),
)
# Images known to be a CUDA build when nothing in the name says otherwise.
_CUDA_BUILD = lazyregex.compile(r"(?i)(?:^|/)vllm-openai$")


def _split(image: str) -> tuple[str, str]:
    """(repository, tag) of ``repo[:tag][@digest]``; a registry port is not a tag."""
    rest = image.partition("@")[0]
    slash, colon = rest.rfind("/"), rest.rfind(":")
    return (rest[:colon], rest[colon + 1:]) if colon > slash else (rest, "")


def carries_vllm(image: str) -> bool:
    """The image's name or tag names vLLM (or it is KServe's Hugging Face server)."""
    repo, _ = _split(image)
    return bool(_CARRIES_VLLM.search(image.partition("@")[0])) or bool(_KSERVE_HF.search(repo))


def version(image: str) -> tuple[str, str] | None:
    """The vLLM version the image's name gives, and how it gives it; None when it does not
    (``latest``, ``nightly``, a company tag)."""
    repo, tag = _split(image)
    if _KSERVE_HF.search(repo):
        release = _RELEASE_TAG.match(tag)
        found = KSERVE_HF_VLLM.get(release.group(1)) if release else None
        if found:
            return found, f"KServe's huggingfaceserver {tag} installs vLLM {found}"
        return None
    m = _VERSION_AFTER.search(f"{repo}:{tag}")
    if m:
        return m.group(1), f"the image's name says vllm{m.group(1)}"
    if _OWN_REPOSITORY.search(repo):
        release = _RELEASE_TAG.match(tag)
        if release:
            return release.group(1), f"vLLM's image tag {tag}"
    return None


def platform(image: str) -> tuple[str, str] | None:
    """The hardware the image's vLLM build is for (cuda, rocm, cpu, tpu, neuron, hpu, xpu)
    and why; None when the name does not say."""
    repo, tag = _split(image)
    if _KSERVE_HF.search(repo):
        if tag.endswith("-gpu"):
            return "cuda", "KServe's huggingfaceserver -gpu tag is its CUDA build"
        return "cpu", ("KServe's huggingfaceserver without the -gpu tag is its CPU build "
                       "(KServe adds -gpu when the predictor requests a GPU)")
    if not carries_vllm(image):
        return None
    name = f"{repo}:{tag}"
    for hardware, rx in _PLATFORMS:
        if rx.search(name):
            return hardware, f"the image's name or tag says {hardware}"
    if _CUDA_BUILD.search(repo):
        return "cuda", "vllm/vllm-openai is vLLM's CUDA build"
    return None


def parse_version(text: str) -> tuple[int, ...]:
    """``0.10.1.1`` -> (0, 10, 1, 1); a ``.postN`` is dropped."""
    parts: list[int] = []
    for part in text.split("."):
        if not part.isdigit():
            break
        parts.append(int(part))
    return tuple(parts)
