"""Which pods and containers are triaged: decided here, and only here.

Every collector (live cluster, bundle, fixture directory) and the classifier
ask this module, so a pod is either in the report everywhere or nowhere.

A container is a vLLM server when its image, command or args name vLLM
(``vllm/vllm-openai``, ``vllm serve``, ``vllm.entrypoints.openai.api_server``,
KServe's Hugging Face runtime unless told to use another backend). With a
user's label selector (``-l``), every pod it selects is triaged, and a pod
with no container that looks like vLLM is triaged whole.
"""

from __future__ import annotations

import regex

from triage.snapshot import Obj
from triage.workload import command_line, containers, init_containers, init_failed, is_sidecar

_VLLM_IMAGE = regex.compile(r"(?i)(^|/)vllm[-_/]|vllm-openai|(^|/)vllm(:|@|$)")
_VLLM_COMMAND = regex.compile(
    r"(?i)(^|[\s/])vllm\s+serve\b|vllm\.entrypoints\.openai\.api_server|"
    r"vllm\.entrypoints\.api_server|(^|\s)vllm$|huggingfaceserver.*--backend[= ]vllm"
)
# KServe's Hugging Face runtime serves with vLLM unless told otherwise.
_KSERVE_HF_IMAGE = regex.compile(r"(?i)(^|/)huggingfaceserver(:|@|$)")
_KSERVE_NOT_VLLM = regex.compile(r"--backend[= ](?:huggingface|hf)\b")
# Routers and gateways in front of vLLM carry its name but serve no model.
_NOT_A_SERVER = regex.compile(r"(?i)router|gateway|proxy|exporter")


def is_vllm_container(container: Obj) -> bool:
    image = str(container.get("image") or "")
    if _VLLM_IMAGE.search(image) and not _NOT_A_SERVER.search(image.rsplit("/", 1)[-1]):
        return True
    joined = " ".join(command_line(container))
    if _KSERVE_HF_IMAGE.search(image):
        return not _KSERVE_NOT_VLLM.search(joined)
    return bool(_VLLM_COMMAND.search(joined))


def triaged_containers(pod: Obj, selector: str | None) -> list[Obj]:
    """The containers to triage: the vLLM ones (a native sidecar too: an init container
    with restartPolicy Always), or all of a pod the user selected; and of such a pod,
    every init container that failed (a model download OOMKilled keeps vLLM from
    starting), triaged like any container."""
    serving = containers(pod) + [c for c in init_containers(pod) if is_sidecar(c)]
    chosen = [c for c in serving if is_vllm_container(c)] or (serving if selector else [])
    if not chosen:
        return []
    failed = [c for c in init_containers(pod) if c not in chosen and init_failed(pod, c)]
    return failed + chosen


def select_pods(pods: list[Obj], selector: str | None) -> list[Obj]:
    """The pods of a listing that are triaged (the listing already applied ``selector``)."""
    return [p for p in pods if isinstance(p, dict) and triaged_containers(p, selector)]
