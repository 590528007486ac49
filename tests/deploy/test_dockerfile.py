"""The watch's image runs as a non-root user."""

from __future__ import annotations

from tests.conftest import ROOT


def test_dockerfile_runs_non_root() -> None:
    text = (ROOT / "Dockerfile").read_text()
    users = [line.split()[1] for line in text.splitlines() if line.startswith("USER ")]
    assert users and users[-1].split(":")[0].isdigit() and int(users[-1].split(":")[0]) > 0
    assert 'ENTRYPOINT ["vllm-triage"]' in text
    assert "PYTHONDONTWRITEBYTECODE=1" in text  # the root filesystem is read-only
