"""Pods selected by vLLM's flags, labels and log head are triaged live and kept in
bundles; a namespace whose crash-looping pods were not selected never reads as an
all-clear."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import FIXTURES, replay, run_cli
from tests.support.fixturekit import copy_fixture, load_list, save_list

FIXTURE = "vllm-pods-by-flags-labels-logs"


def test_fork_flags_label_and_log_head_are_triaged_live(tmp_path: Path) -> None:
    """The issue's case: a non-vLLM image name, flags-only args and a vLLM label; and a
    pod recognised only by its log's first lines, read through the API (limitBytes)."""
    with replay(FIXTURE, tmp_path) as (server, kubeconfig):
        run = run_cli("scan", "--kubeconfig", str(kubeconfig), "-o", "json")
        requests = list(server.requests)
    assert run.code == 1, run.stderr
    report = run.json()
    found = {p["name"]: (p["containers"], [f["id"] for f in p["findings"]])
             for p in report["pods"]}
    assert found["qwen-7d8c9b0a1e-h5n2p"][1][0] == "cuda-oom"
    assert found["mistral-3c4d5e6f7a-w2x8k"] == (["vllm"], [])
    assert found["llama-chat-9a8b7c6d5e-p7r4t"][1] == ["model-download-failed"]
    assert "embed-indexer-5b6c7d8e9f-q3z9m" not in found
    # the release "vllm"'s redis and the open-webui part of it are not vLLM servers
    assert "vllm-redis-master-0" not in found and "open-webui-6c7d8e9f0a-b2c3d" not in found
    assert any("embed-indexer-5b6c7d8e9f-q3z9m" in w and "crash-looping" in w
               for w in report["warnings"]), report["warnings"]
    # the head of llama-chat's log was read with limitBytes and no tailLines
    heads = [r for r in requests if "llama-chat" in r and "/log" in r and "tailLines" not in r]
    assert heads and all("limitBytes=4096" in r for r in heads), requests


def test_crash_looping_pods_none_selected_is_never_an_all_clear(tmp_path: Path) -> None:
    root = copy_fixture(tmp_path / "only-other", FIXTURE, expected={})
    pods = load_list(root, "pods")
    pods["items"] = [p for p in pods["items"] if p["metadata"]["name"].startswith("embed")]
    save_list(root, "pods", pods)
    run = run_cli("analyze", str(root), "-o", "json")
    assert run.code == 0, run.stderr
    report = run.json()
    assert report["pods"] == []
    assert report["verdict"] == "unknown"
    assert "embed-indexer-5b6c7d8e9f-q3z9m" in report["summary"]
    assert "crash-looping" in report["summary"]
    step = report["checklist"][0]
    assert step["verdict"] == "unknown"
    assert any("embed-indexer" in e for e in step["evidence"]), step
    table = run_cli("analyze", str(root))
    assert "embed-indexer-5b6c7d8e9f-q3z9m" in table.stdout


def test_bundle_keeps_the_pods_selected_by_their_log(tmp_path: Path) -> None:
    with replay(FIXTURE, tmp_path) as (_server, kubeconfig):
        out = tmp_path / "b.tar.gz"
        run = run_cli("collect", "--kubeconfig", str(kubeconfig), "-o", str(out))
        assert run.code == 0, run.stderr
    report = run_cli("analyze", str(out), "-o", "json").json()
    names = {p["name"] for p in report["pods"]}
    assert "llama-chat-9a8b7c6d5e-p7r4t" in names
    assert any("embed-indexer" in w for w in report["warnings"])
    assert (FIXTURES / FIXTURE).is_dir()
