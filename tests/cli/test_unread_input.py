"""A step whose input could not be read says unknown, naming the read.

With the --config ConfigMap forbidden, step 4 is unknown naming the read, where the
readable ConfigMap gives fail (0.98 explains the OOM), never a pass on vLLM's default.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.cli.test_bad_input import clean, step
from tests.conftest import replay, run_cli
from tests.support.fixturekit import copy_fixture, load_list, save_list


def config_file_fixture(root: Path, **incident: Any) -> Path:
    """cuda-oom with --gpu-memory-utilization 0.98 moved from args into a --config file."""
    copy_fixture(root, **incident)
    pods = load_list(root, "pods")
    for pod in pods["items"]:
        container = pod["spec"]["containers"][0]
        args = container.get("args") or []
        if "--gpu-memory-utilization" not in args:
            continue  # not the vLLM pod
        i = args.index("--gpu-memory-utilization")
        del args[i:i + 2]
        args += ["--config", "/etc/vllm/config.yaml"]
        container.setdefault("volumeMounts", []).append(
            {"name": "engine-config", "mountPath": "/etc/vllm"})
        pod["spec"].setdefault("volumes", []).append(
            {"name": "engine-config", "configMap": {"name": "vllm-engine-config"}})
    save_list(root, "pods", pods)
    save_list(root, "configmaps", {"apiVersion": "v1", "kind": "ConfigMapList",
                                   "metadata": {"resourceVersion": "1"}, "items": [{
                                       "metadata": {"name": "vllm-engine-config",
                                                    "namespace": "llm"},
                                       "data": {"config.yaml": "gpu-memory-utilization: 0.98\n"
                                                               "max-num-seqs: 64\n"}}]})
    return root


def scan_step_4(root: Path, tmp_path: Path) -> dict[str, Any]:
    with replay(root, tmp_path) as (_server, kc):
        run = run_cli("scan", "--kubeconfig", str(kc), "-o", "json")
    clean(run, 1)
    return step(run.json(), 4)


def test_readable_config_map_gives_fail(tmp_path: Path) -> None:
    s4 = scan_step_4(config_file_fixture(tmp_path / "fx"), tmp_path)
    assert s4["verdict"] == "fail", s4
    assert any("0.98" in e for e in s4["evidence"]), s4


def test_forbidden_config_map_gives_unknown_naming_the_read(tmp_path: Path) -> None:
    root = config_file_fixture(tmp_path / "fx", faults={"forbidden": ["configmaps"]})
    s4 = scan_step_4(root, tmp_path)
    assert s4["verdict"] == "unknown", s4
    text = " ".join(s4["evidence"])
    assert "vllm-engine-config" in text and "403" in text, s4
    assert "default 0.9" not in text


def test_offline_without_the_config_map(tmp_path: Path) -> None:
    root = config_file_fixture(tmp_path / "fx")
    (root / "objects" / "configmaps.yaml").unlink()
    run = run_cli("analyze", str(root), "-o", "json")
    clean(run, 1)
    s4 = step(run.json(), 4)
    assert s4["verdict"] == "unknown", s4
    assert "vllm-engine-config" in " ".join(s4["evidence"])
