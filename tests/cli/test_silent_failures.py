"""Failures that could pass silently (a dead GPU that exits 0, a dead engine, a stalled
start, a hung engine) are named, by their most specific finding, and the healthy
look-alikes stay silent."""

from __future__ import annotations

from tests.conftest import FIXTURES, run_cli

GPU_LOST = "vllm-llama8b-6d5c4b3a2f-k7p2x"


def test_gpu_lost_under_a_serving_pod_is_critical_and_leads() -> None:
    run = run_cli("analyze", str(FIXTURES / "gpu-lost-exit-0"), "-o", "json")
    assert run.code == 1, run.stderr
    report = run.json()
    pod = next(p for p in report["pods"] if p["name"] == GPU_LOST)
    assert [(f["id"], f["severity"]) for f in pod["findings"]] == [
        ("gpu-hardware-error", "critical")]
    evidence = "\n".join(pod["findings"][0]["evidence"])
    assert "torch.AcceleratorError: CUDA error: unknown error" in evidence
    assert "allocatable nvidia.com/gpu=3" in evidence and "capacity nvidia.com/gpu=4" in evidence
    # The engine death is what the GPU explains: said once, inside the leading finding, by
    # the line that states its cause (the CUDA error), not the wrapper after it.
    explained = next(e for e in pod["findings"][0]["evidence"]
                     if e.startswith("explains engine-died"))
    assert "CUDA error: unknown error" in explained, explained
    assert "failing: gpu-hardware-error" in report["summary"]


def test_a_stalled_start_is_named_and_slow_or_idle_servers_are_not() -> None:
    """A TP=2 start silent at NCCL set-up for 24 minutes is startup-stalled (its probe still
    has budget); a start loading shards slowly for 20 minutes and a ready server whose log
    has been quiet for three hours get no stall or hang finding."""
    report = run_cli("analyze", str(FIXTURES / "startup-stalled-nccl"), "-o", "json").json()
    by_pod = {p["name"]: p["findings"] for p in report["pods"]}
    found = by_pod["vllm-llama70b-6c5d4e3f2a-n4k8s"]
    # the 64 MiB /dev/shm of a TP=2 pod stuck at NCCL set-up is the cause (critical, it
    # leads), the stall beside it; one /dev/shm size in both fixes
    assert [(f["id"], f["severity"]) for f in found] == [
        ("shm-too-small", "critical"), ("startup-stalled", "critical")]
    assert [f["fix"]["values"]["shm_size_bytes"] for f in found] == [4 * 2**30] * 2
    stalled = [f for f in found if f["id"] == "startup-stalled"]
    evidence = "\n".join(stalled[0]["evidence"])
    assert "NCCL / distributed init" in evidence and "24m29s (1469 s)" in evidence
    assert "the kubelet's time of each line" in evidence
    assert "64 MiB" in evidence
    for idle in ("vllm-llama405b-2f3e4d5c6b-t8v2c", "vllm-qwen-internal-8e9f0a1b2c-d6w3m"):
        assert by_pod[idle] == [], (idle, by_pod[idle])


def test_a_hung_engine_is_named_and_its_busy_twin_is_not() -> None:
    report = run_cli("analyze", str(FIXTURES / "engine-hung-shm-broadcast"), "-o", "json").json()
    by_pod = {p["name"]: p["findings"] for p in report["pods"]}
    hung = by_pod["vllm-qwen32b-4b5c6d7e8f-x2m7q"]
    assert [f["id"] for f in hung] == ["engine-hung"]
    evidence = "\n".join(hung[0]["evidence"])
    assert "shared-memory broadcast wait(s)" in evidence and "0.0 tokens/s" in evidence
    assert by_pod["vllm-qwen32b-4b5c6d7e8f-f5j9w"] == []


def test_a_silent_weights_download_is_not_a_stall_until_it_outlasts_the_model() -> None:
    """vLLM prints nothing while it downloads the weights: a 70B first download 21 minutes
    in (vLLM 0.10, after 'Using model weights format') and a 30B one 26 minutes in (vLLM
    0.13, after 'Starting to load model') are downloads; an 8B one silent for 3 hours is
    stalled, with the threshold the model's size gives. A start without readiness or
    startup probe is Ready to Kubernetes, and still stalled at NCCL set-up."""
    run = run_cli("analyze", str(FIXTURES / "startup-silent-download"), "-o", "json")
    assert run.code == 1, run.stderr
    by_pod = {p["name"]: p["findings"] for p in run.json()["pods"]}
    for downloading in ("vllm-llama70b-dl-7b8c9d0e1f-h3k5m", "vllm-qwen3-30b-4d5e6f7a8b-p9r2t"):
        assert by_pod[downloading] == [], (downloading, by_pod[downloading])
    stuck = next(f for f in by_pod["vllm-llama8b-shared-9c0d1e2f3a-w4x6z"]
                 if f["id"] == "startup-stalled")
    evidence = "\n".join(stuck["evidence"])
    assert stuck["severity"] == "critical"
    assert "download (no progress printed)" in evidence and "3h06m28s" in evidence
    assert "40 x model_weights_gib + 1800 seconds = 2396 seconds" in evidence
    no_probe = by_pod["vllm-mixtral-5a6b7c8d9e-k2m4n"]
    assert [(f["id"], f["severity"]) for f in no_probe] == [("startup-stalled", "critical")]
    evidence = "\n".join(no_probe[0]["evidence"])
    assert "NCCL / distributed init" in evidence and "no readinessProbe and no startupProbe" in evidence
