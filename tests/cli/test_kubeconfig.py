"""Credentials and namespace come from the kubeconfig the way kubectl takes them."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.conftest import replay, run_cli


def test_kubeconfig_environment_variable_and_context_namespace(tmp_path: Path) -> None:
    with replay("cuda-oom", tmp_path) as (_server, kubeconfig):
        run = run_cli("scan", "-o", "json", env={"KUBECONFIG": str(kubeconfig)})
    assert run.code == 1, run.stderr
    report = run.json()
    assert report["namespace"] == "llm"  # from the current context, no -n given
    assert report["context"] == "incident-replay"
    assert [p["name"] for p in report["pods"]] == ["vllm-qwen-5b7d9c8f6d-7xk2p"]


def test_kubeconfig_list_in_environment_variable(tmp_path: Path) -> None:
    """KUBECONFIG may list several files; they are merged as kubectl merges them."""
    with replay("cuda-oom", tmp_path) as (_server, kubeconfig):
        empty = tmp_path / "other-config"
        empty.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "clusters": [],
                                         "users": [], "contexts": []}))
        run = run_cli("scan", "-o", "json", env={"KUBECONFIG": f"{empty}:{kubeconfig}"})
    assert run.code == 1, run.stderr
    assert run.json()["pods"][0]["findings"][0]["id"] == "cuda-oom"


def test_context_flag_picks_another_context_and_its_namespace(tmp_path: Path) -> None:
    with replay("cuda-oom", tmp_path) as (_server, kubeconfig):
        config = yaml.safe_load(kubeconfig.read_text())
        config["contexts"].append({"name": "staging", "context": {
            "cluster": "replay", "user": "triage", "namespace": "staging"}})
        kubeconfig.write_text(yaml.safe_dump(config))
        run = run_cli("scan", "--kubeconfig", str(kubeconfig), "--context", "staging",
                      "-o", "json")
        explicit = run_cli("scan", "--kubeconfig", str(kubeconfig), "--context", "staging",
                           "-n", "llm", "-o", "json")
    # The context's namespace is the one scanned; it does not exist in this cluster, which
    # is exit 2 naming it (issue 17), never an empty "all clear".
    assert run.code == 2, run.stderr
    assert "namespace 'staging' not found in context 'staging'" in run.stderr
    assert explicit.code == 1
    assert explicit.json()["namespace"] == "llm"


def test_no_kubeconfig_anywhere_is_a_clear_error(tmp_path: Path) -> None:
    run = run_cli("scan", env={"KUBECONFIG": str(tmp_path / "missing")})
    assert run.code == 2
    assert "Traceback" not in run.stderr
    assert run.stderr.startswith("vllm-triage: error:")
    assert str(tmp_path / "missing") in run.stderr and "$KUBECONFIG" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1
