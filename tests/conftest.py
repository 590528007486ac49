"""Shared test helpers: replay a fixture over HTTP and run the real CLI against it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from tests.support.kubeapi import KubeAPIServer, write_kubeconfig

# Property and fuzz tests (hypothesis): a modest number of examples in the
# default run so the suite stays quick on two cores; HYPOTHESIS_PROFILE=deep
# runs many more. No deadline per example: the tests bound time themselves.
settings.register_profile("default", max_examples=25, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow,
                                                 HealthCheck.data_too_large])
settings.register_profile("deep", max_examples=1000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow,
                                                 HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


def fixture_names() -> list[str]:
    return sorted(p.name for p in FIXTURES.iterdir() if (p / "incident.yaml").exists())


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> Run:
    """Run the installed CLI as a subprocess, the way a user does."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    full_env.update({"NO_COLOR": "1", "HOME": str(ROOT / ".pytest-home")})
    full_env.update(env or {})
    proc = subprocess.run([sys.executable, "-m", "triage.cli", *args], capture_output=True,
                          text=True, env=full_env, timeout=timeout, cwd=str(ROOT))
    return Run(proc.returncode, proc.stdout, proc.stderr)


@contextmanager
def replay(fixture: str | Path, tmp_path: Path, token: str | None = None, **server_kw: Any
           ) -> Iterator[tuple[KubeAPIServer, Path]]:
    """Serve a fixture and write a kubeconfig pointing at it."""
    root = fixture if isinstance(fixture, Path) else FIXTURES / fixture
    server = KubeAPIServer(root, request_log=tmp_path / "requests.log", **server_kw).start()
    try:
        ns = server.fixture.incident.get("namespace") or "default"
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", server.url,
                                      token=token or server.token, namespace=ns)
        yield server, kubeconfig
    finally:
        server.stop()


def need(binary: str) -> str:
    """The path of a binary the test needs: skip without it, unless in CI, where it fails."""
    path = shutil.which(binary)
    if path is None:
        if os.environ.get("CI"):
            pytest.fail(f"{binary} is not installed; .ci/run installs it")
        pytest.skip(f"{binary} is not installed")
    return path


@pytest.fixture
def replayer(tmp_path: Path) -> Any:
    return lambda fixture, **kw: replay(fixture, tmp_path, **kw)


@pytest.fixture(scope="session")
def backfilled(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """scenario -> a directory of TSDB blocks holding its history (made once per session)."""
    from tests.support.promserver import backfill

    made: dict[str, Path] = {}

    def get(scenario: str) -> Path:
        if scenario not in made:
            data = tmp_path_factory.mktemp(f"prom-{scenario}") / "data"
            backfill(scenario, data)
            made[scenario] = data
        return made[scenario]
    return get


@contextmanager
def replay_with_prometheus(fixture: str, tmp_path: Path, blocks: Path | None,
                           token: str | None = None
                           ) -> Iterator[tuple[KubeAPIServer, Path, str | None]]:
    """Replay a fixture and, when ``blocks`` is given, serve a real Prometheus on a copy of
    them behind the fixture's Prometheus Service (incident.yaml ``prometheus.service``)."""
    import shutil

    from tests.support.promserver import prometheus

    with replay(fixture, tmp_path, token=token) as (server, kubeconfig):
        if blocks is None:
            yield server, kubeconfig, None
            return
        data = tmp_path / "prometheus" / "data"
        shutil.copytree(blocks, data)
        with prometheus(data) as url:
            service = (server.fixture.incident.get("prometheus") or {}).get("service", "")
            if service:
                ns, name = service.split("/", 1)
                server.service_upstreams[(ns, name)] = url
            yield server, kubeconfig, url
