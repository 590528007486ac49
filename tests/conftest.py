"""The test run's set-up, and shared helpers: replay a fixture over HTTP and run the real
CLI against it.

Two runs of one suite. The quick run, a plain ``python -m pytest`` (or
``./scripts/test --quick``), leaves out the tests marked ``slow``: everything under
tests/cli/ and tests/bench/ (they start the CLI as a subprocess, the replaying test API
server, Prometheus, Chromium, kubectl, promtool or grep) and the few unit tests that
spend seconds of CPU on purpose (fuzzing, cost and memory bounds, sweeps of every
fixture through two ways that must agree). ``--full`` (what ``./scripts/test`` and CI
run), a ``-m`` expression, or naming files, folders or tests on the command line runs
them too.

Every run has one temporary HOME, shared by the xdist workers and removed at the end:
the tool's caches ($HOME/.cache/vllm-triage: parsed patterns, compiled regexes,
Hyperscan databases) are built once per run, never in the developer's home or the
work tree.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
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
TESTS = ROOT / "tests"

# Every test in these folders starts a process or a server (see the module docstring).
SLOW_FOLDERS = (TESTS / "cli", TESTS / "bench")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--full", action="store_true",
                     help="also run the slow tests (the CLI, servers, Prometheus, Chromium, "
                          "kubectl): the whole suite, as ./scripts/test and CI run it")


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return  # an xdist worker: it inherited the controller's environment, HOME included
    home = tempfile.mkdtemp(prefix="vllm-triage-tests-")
    # Removed at exit, after the tool's own exit handlers have written their code caches
    # there: they register later (on first use), so they run first.
    atexit.register(shutil.rmtree, home, ignore_errors=True)
    # Workers start after this and inherit it; so does every CLI a test runs.
    os.environ["HOME"] = home
    os.environ.pop("XDG_CACHE_HOME", None)
    os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = os.path.join(home, ".hypothesis")


def _quick(config: pytest.Config) -> bool:
    """A plain run: nothing named on the command line, no --full and no -m."""
    return not (config.getoption("full") or config.getoption("markexpr")
                or config.args_source == pytest.Config.ArgsSource.ARGS)


def pytest_report_header(config: pytest.Config) -> str | None:
    if _quick(config):
        return "quick run: the slow tests are left out (--full or ./scripts/test runs them)"
    return None


@pytest.hookimpl(tryfirst=True)  # before -m reads the marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if any(item.path.is_relative_to(folder) for folder in SLOW_FOLDERS):
            item.add_marker(pytest.mark.slow)
    if _quick(config):
        slow = [item for item in items if item.get_closest_marker("slow")]
        if slow:
            config.hook.pytest_deselected(items=slow)
            items[:] = [item for item in items if not item.get_closest_marker("slow")]


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
    full_env["NO_COLOR"] = "1"  # HOME is the run's own (pytest_configure)
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


@pytest.fixture(scope="session")
def real_apiserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A real kube-apiserver with etcd, one per test worker, started on first use
    (tests/support/realapi.py): skipped where its parts are missing, failed in CI."""
    from tests.support.realapi import missing_parts, real_cluster

    missing = missing_parts()
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"a real API server needs {', '.join(missing)}; .ci/run provides them")
        pytest.skip(f"a real API server needs {', '.join(missing)}")
    with real_cluster(tmp_path_factory.mktemp("real-apiserver")) as cluster:
        yield cluster


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
