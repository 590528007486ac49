"""The endpoint picker's own errors are the InferencePool's evidence.

inference-pool-empty records the pickers of both pools: qwen-pool's logs, for each
request it could not place, 'failed to find candidate pods' (twice a request, counted
once) and 'no pods available in datastore'; llama-pool's logged nothing but its start.
"""

from __future__ import annotations

from tests.conftest import FIXTURES, run_cli


def test_the_pickers_errors_are_the_pools_evidence_counted_once_a_request() -> None:
    report = run_cli("analyze", str(FIXTURES / "inference-pool-empty"), "-o", "json").json()
    evidence = {p["name"]: [e for f in p["findings"] if f["id"] == "inference-pool-empty"
                            for e in f["evidence"]] for p in report["pods"]}
    said = " ".join(evidence["vllm-qwen-7d4f8b9c6a-b2c4d"])
    assert ("endpoint picker qwen-pool-epp-5c8f7d9b6d-x4k9m (epp) of InferencePool "
            "llm/qwen-pool logged:") in said
    assert ("inference gateway: ServiceUnavailable - failed to find candidate pods for "
            "serving the request (44 times, last at 2026-11-28T03:11:57Z)") in said
    assert "inference gateway: Internal - no pods available in datastore (5 times" in said
    # The picker pods are evidence, never triaged as vLLM pods.
    assert not any("epp" in p["name"] for p in report["pods"])
    assert evidence["vllm-llama-58b7c6d9f4-r2v6c"] == []
