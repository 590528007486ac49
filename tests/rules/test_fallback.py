"""Without its pattern, every new crash signature still ends in a fallback
(crashloop-unknown, or engine-died when the log shows vLLM's engine died), and the
fallback's evidence leads with the root-cause line, not a traceback frame.

Each case removes one pattern from the shipped set, analyzes the fixture that
shows it, and checks that the pod's fallback finding opens with the line a person
should read first (its first evidence line, a log line marked '>').
"""

from __future__ import annotations

import dataclasses

import pytest
import regex

from tests.conftest import FIXTURES
from triage import pipeline
from triage.collect.bundle import load
from triage.rules.loader import PatternSet, load_patterns

CASES = [
    # fixture, pattern removed, pod, text of the root-cause line
    ("nccl-failure", "nccl-failure", "vllm-llama8b-tp2-6b5a4c3d2e-f8m2v",
     "NCCL WARN failed to open CUDA IPC handle : 217 peer access is not supported"),
    ("nccl-failure", "nccl-failure", "vllm-ds-0",
     "NCCL WARN Call to ibv_modify_qp failed with error No such device errno 19"),
    ("cuda-driver-mismatch", "cuda-driver-mismatch", "vllm-qwen-5c4d3e2f1a-b7n2x",
     "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda "
     "functions before calling NumCudaDevices() that might have already set an error? "
     "Error 804"),
    ("gpu-arch-unsupported", "gpu-arch-unsupported", "vllm-qwen25-4f3e2d1c0b-c8v3n",
     "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0"),
    ("gpu-arch-unsupported", "gpu-arch-unsupported", "vllm-qwen32b-9d8c7b6a5f-p2x6r",
     "RuntimeError: CUDA error: no kernel image is available for execution on the device"),
    # pydantic's ModelConfig validation is engine-args-invalid's too (a config refused)
    ("model-arch-unsupported", "model-arch-unsupported engine-args-invalid",
     "vllm-qwen3vl-2f1e0d9c8b-n5w8q",
     "Value error, The checkpoint you are trying to load has model type `qwen3_vl` but "
     "Transformers does not recognize this architecture"),
    ("model-arch-unsupported", "model-arch-unsupported", "vllm-phi3-6a5b4c3d2e-r8t1y",
     "ValueError: Loading microsoft/Phi-3-small-8k-instruct requires you to execute the "
     "configuration file"),
    ("gpu-hardware-error", "gpu-hardware-error", "vllm-llama70b-2c1b0a9f8e-d4f6g",
     "RuntimeError: CUDA error: uncorrectable ECC error encountered"),
    ("port-in-use", "port-in-use", "vllm-gemma-6c9f8d7b5a-p4t2x",
     "OSError: [Errno 98] Address already in use"),
]


def _without(pattern_ids: str) -> PatternSet:
    removed = pattern_ids.split()
    shipped = load_patterns()
    kept = tuple(p for p in shipped.patterns if p.id not in removed)
    # Patterns that name the removed one (yields_to) are kept, without that reference.
    kept = tuple(dataclasses.replace(p, yields_to=tuple(y for y in p.yields_to
                                                        if y not in removed)) for p in kept)
    return PatternSet(kept, shipped.errors)


@pytest.mark.parametrize(("fixture", "removed", "pod", "cause"), CASES)
def test_crashloop_unknown_leads_with_the_root_cause(
        fixture: str, removed: str, pod: str, cause: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    patterns = _without(removed)
    monkeypatch.setattr(pipeline, "load_patterns", lambda dirs=(): patterns)
    report = pipeline.analyze(load(FIXTURES / fixture)).to_document()
    findings = {p["name"]: p["findings"] for p in report["pods"]}[pod]
    assert not set(removed.split()) & {f["id"] for f in findings}
    fallback = next(f for f in findings if f["id"] in ("crashloop-unknown", "engine-died"))
    first = fallback["evidence"][0]
    assert regex.search(r"log \(\w[\w-]*\) line \d+> ", first), fallback["evidence"][:3]
    assert cause in first, fallback["evidence"][:3]
