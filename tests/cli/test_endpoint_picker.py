"""The endpoint picker's own errors are the InferencePool's evidence.

inference-pool-empty records the pickers of both pools: qwen-pool's logs, for each
request it could not place, 'failed to find candidate pods' (twice a request, counted
once) and 'no pods available in datastore'; llama-pool's logged nothing but its start.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.cli.test_bad_input import step
from tests.conftest import FIXTURES, replay, run_cli
from tests.support.fixturekit import copy_fixture

QWEN_PICKER, LLAMA_PICKER = "qwen-pool-epp-5c8f7d9b6d-x4k9m", "llama-pool-epp-7b9d6c8f5a-p2w6n"


def test_the_pickers_errors_are_the_pools_evidence_counted_once_a_request() -> None:
    report = run_cli("analyze", str(FIXTURES / "inference-pool-empty"), "-o", "json").json()
    evidence = {p["name"]: [e for f in p["findings"] if f["id"] == "inference-pool-empty"
                            for e in f["evidence"]] for p in report["pods"]}
    said = " ".join(evidence["vllm-qwen-7d4f8b9c6a-b2c4d"])
    assert f"endpoint picker {QWEN_PICKER} (epp) of InferencePool llm/qwen-pool logged:" in said
    assert ("inference gateway: ServiceUnavailable - failed to find candidate pods for "
            "serving the request (44 times, last at 2026-11-28T03:11:57Z)") in said
    assert "inference gateway: Internal - no pods available in datastore (5 times" in said
    # The picker pods are evidence, never triaged as vLLM pods.
    assert not any("epp" in p["name"] for p in report["pods"])
    assert evidence["vllm-llama-58b7c6d9f4-r2v6c"] == []


def test_a_refused_picker_log_leaves_the_pools_warning_unknown_never_a_pass(
        tmp_path: Path) -> None:
    """The pickers' logs refused (403): the pool with no Ready pod is still reported from
    its pods; the one with one Ready pod of three cannot tell whether its picker sheds."""
    root = copy_fixture(tmp_path / "fx", "inference-pool-empty")
    incident = yaml.safe_load((root / "incident.yaml").read_text())
    incident["faults"] = {"forbidden_logs_of": [QWEN_PICKER, LLAMA_PICKER]}
    (root / "incident.yaml").write_text(yaml.safe_dump(incident, sort_keys=False))
    with replay(root, tmp_path) as (_server, kc):
        report = run_cli("scan", "--kubeconfig", str(kc), "-o", "json").json()
    unread = " ".join(u["what"] for u in report["unreadable"])
    assert f"log of llm/{QWEN_PICKER} (epp), an endpoint picker" in unread, unread
    found = {p["name"]: [f["id"] for f in p["findings"]] for p in report["pods"]}
    assert "inference-pool-empty" in found["vllm-qwen-7d4f8b9c6a-b2c4d"]
    assert found["vllm-llama-58b7c6d9f4-r2v6c"] == []
    s8 = step(report, 8)
    assert any("could not evaluate inference-pool-empty for llm/vllm-llama-58b7c6d9f4-r2v6c" in e
               and "forbidden" in e for e in s8["evidence"]), s8
