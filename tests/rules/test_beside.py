"""Which findings stand beside their step rather than answer it is data: ``answers_step``
in the pattern files, a boolean, pinned here for the shipped patterns."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import FIXTURES
from triage.rules.loader import load_patterns


def test_answers_step_must_be_a_boolean(tmp_path: Path) -> None:
    text = (FIXTURES.parent / "patterns" / "port-in-use.yaml").read_text()
    (tmp_path / "port-in-use.yaml").write_text(
        text.replace("answers_step: false", "answers_step: maybe"))
    loaded = load_patterns([tmp_path])
    assert any("answers_step: must be true or false" in str(e) for e in loaded.errors)


def test_every_pattern_beside_its_step_is_not_about_what_the_step_names() -> None:
    """The data, pinned: which findings stand beside their step."""
    beside = {p.id for p in load_patterns([]).patterns if not p.answers_step}
    assert beside == {"shm-too-small", "crashloop-unknown", "cuda-driver-mismatch",
                      "gpu-arch-unsupported", "nccl-failure", "no-gpu", "port-in-use",
                      "gpu-hardware-error", "gpu-unschedulable", "model-arch-unsupported",
                      "vllm-port-env-clash",
                      # a stall, a hang, a dead engine, an unwritable cache and a
                      # rejected flag are none of them what their step names.
                      "startup-stalled", "engine-hung", "engine-died",
                      "cache-dir-not-writable", "engine-args-invalid",
                      # the gateway in front of the pods is not the minScale step 8 asks about
                      "inference-pool-empty",
                      # a GPU count, a credential and a grace period: not what steps 2, 9
                      # and 10 name
                      "gpus-below-parallelism", "secret-in-plain-env", "shutdown-grace-short",
                      # the failure families of the field: a compilation, an image's
                      # extensions, a checkpoint, a tokenizer, a kernel fault, an adapter.
                      "compile-failed", "binary-mismatch", "model-weights-invalid",
                      "processor-incompatible", "cuda-illegal-memory-access",
                      "lora-load-failed"}
