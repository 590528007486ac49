"""``kubectl vllm-triage`` through the real kubectl's plugin mechanism.

A directory on PATH holds ``kubectl-vllm_triage`` (the console script pip
installed next to this interpreter, or else a shim that runs the same entry
point);
kubectl must find it, list it, and pass every flag through so the report is
the one ``vllm-triage scan`` prints. Skipped only where kubectl is absent.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT, need, replay, run_cli

KUBECTL = shutil.which("kubectl")


@pytest.fixture(autouse=True)
def _kubectl() -> None:
    need("kubectl")  # skipped without it, except in CI, where it fails

PINNED = {"SOURCE_DATE_EPOCH": "1795834800"}


@pytest.fixture
def plugin_path(tmp_path: Path) -> Path:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    shim = bindir / "kubectl-vllm_triage"
    installed = Path(sys.executable).parent / "kubectl-vllm_triage"
    if installed.exists():  # the console script pip installed: what users run
        shim.symlink_to(installed)
        return bindir
    shim.write_text(f"#!/bin/sh\nexec {sys.executable} -c 'import sys; sys.argv[0] = "
                    f"\"kubectl-vllm_triage\"; from triage.cli import main; main()' \"$@\"\n")
    shim.chmod(0o755)
    return bindir


def kubectl(bindir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env.update({"PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}", "NO_COLOR": "1",
                **PINNED})  # HOME is the run's own (tests/conftest.py)
    assert KUBECTL is not None
    return subprocess.run([KUBECTL, *args], capture_output=True, text=True, env=env,
                          timeout=120, cwd=str(ROOT))


def test_kubectl_finds_and_lists_the_plugin(plugin_path: Path) -> None:
    proc = kubectl(plugin_path, "plugin", "list")
    assert str(plugin_path / "kubectl-vllm_triage") in proc.stdout, proc.stdout + proc.stderr


def test_kubectl_vllm_triage_scan_equals_vllm_triage_scan(plugin_path: Path,
                                                          tmp_path: Path) -> None:
    with replay("cuda-oom", tmp_path) as (_server, kubeconfig):
        via_kubectl = kubectl(plugin_path, "vllm-triage", "scan", "--kubeconfig",
                              str(kubeconfig), "-o", "json")
        direct = run_cli("scan", "--kubeconfig", str(kubeconfig), "-o", "json", env=PINNED)
        # kubectl-style flags, long and short, pass through unchanged
        long_form = kubectl(plugin_path, "vllm-triage", "scan", "--kubeconfig",
                            str(kubeconfig), "--context", "incident-replay", "--namespace",
                            "llm", "--selector", "app=vllm-qwen", "--output", "json",
                            "--request-timeout", "20s")
        all_ns = kubectl(plugin_path, "vllm-triage", "scan", "--kubeconfig", str(kubeconfig),
                         "-A", "-o", "json")
        other_ns = kubectl(plugin_path, "vllm-triage", "scan", "--kubeconfig", str(kubeconfig),
                           "-n", "default", "-o", "json")
        missing_ns = kubectl(plugin_path, "vllm-triage", "scan", "--kubeconfig",
                             str(kubeconfig), "-n", "nothing-here", "-o", "json")
    assert direct.code == 1, direct.stderr
    assert via_kubectl.returncode == 1, via_kubectl.stderr
    assert via_kubectl.stdout == direct.stdout
    assert long_form.returncode == 1, long_form.stderr
    report = yaml.safe_load(long_form.stdout)
    assert report["selector"] == "app=vllm-qwen" and report["namespace"] == "llm"
    assert [p["name"] for p in report["pods"]] == [p["name"] for p in direct.json()["pods"]]
    assert all_ns.returncode == 1 and yaml.safe_load(all_ns.stdout)["namespace"] is None
    assert other_ns.returncode == 0, other_ns.stderr
    assert yaml.safe_load(other_ns.stdout)["pods"] == []
    # Issue 17: a namespace that does not exist is exit 2, never an empty all clear.
    assert missing_ns.returncode == 2 and "namespace 'nothing-here' not found" in \
        missing_ns.stderr


def test_plugin_help_shows_flags_and_examples(plugin_path: Path) -> None:
    proc = kubectl(plugin_path, "vllm-triage", "scan", "--help")
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert "Usage: kubectl vllm-triage scan" in text
    for flag in ("-n, --namespace", "-A, --all-namespaces", "--context", "--kubeconfig",
                 "-l, --selector", "-o, --output", "--request-timeout", "--output-file"):
        assert flag in text, flag
    # Issue 17: the examples are said once, under the top-level help.
    assert "Examples:" not in text
    top = kubectl(plugin_path, "vllm-triage", "--help")
    assert top.returncode == 0 and "collect" in top.stdout and "analyze" in top.stdout
    assert "Examples:" in top.stdout and "kubectl vllm-triage scan -n llm" in top.stdout


def test_plugin_errors_are_kubectl_like(plugin_path: Path, tmp_path: Path) -> None:
    """A missing kubeconfig is a one-line error with exit 2, not a traceback."""
    proc = kubectl(plugin_path, "vllm-triage", "scan", "--kubeconfig",
                   str(tmp_path / "missing"))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "does not exist" in proc.stderr
