"""Several clusters in one run: ``scan --context A --context B``, ``--all-contexts``, and
``watch`` over several contexts with a ``cluster`` label on every series.

Each context points at its own replaying test API server; the clusters are
read in parallel and reported in one document with a section per cluster.
A cluster that cannot be reached is a section saying so, never left out.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import yaml

from tests.cli.test_watch import wait_for, watching
from tests.conftest import FIXTURES, run_cli
from tests.support.kubeapi import TOKEN, KubeAPIServer, TLSFiles
from tests.support.promserver import free_port

PINNED = {"SOURCE_DATE_EPOCH": "1795834800"}


def kubeconfig(path: Path, servers: dict[str, str]) -> Path:
    """One context per cluster (name -> server URL), all in namespace llm."""
    ca = base64.b64encode(TLSFiles.get().ca_pem).decode()
    names = list(servers)
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": names[0],
        "clusters": [{"name": n, "cluster": {"server": u, "certificate-authority-data": ca}}
                     for n, u in servers.items()],
        "users": [{"name": "triage", "user": {"token": TOKEN}}],
        "contexts": [{"name": n, "context": {"cluster": n, "user": "triage",
                                             "namespace": "llm"}} for n in names],
    }))
    return path


@contextmanager
def clusters(tmp_path: Path, fixtures: dict[str, str]) -> Iterator[Path]:
    with ExitStack() as stack:
        urls = {}
        for name, fixture in fixtures.items():
            server = KubeAPIServer(FIXTURES / fixture).start()
            stack.callback(server.stop)
            urls[name] = server.url
        yield kubeconfig(tmp_path / "kubeconfig", urls)


def test_scan_two_contexts_one_report(tmp_path: Path) -> None:
    with clusters(tmp_path, {"gpu-east": "cuda-oom", "gpu-west": "well-sized-healthy"}) as kc:
        run = run_cli("scan", "--kubeconfig", str(kc), "--context", "gpu-east", "--context",
                      "gpu-west", "-o", "json", env=PINNED)
        every = run_cli("scan", "--kubeconfig", str(kc), "--all-contexts", "-o", "json",
                        env=PINNED)
        table = run_cli("scan", "--kubeconfig", str(kc), "--all-contexts", env=PINNED)
        markdown = run_cli("scan", "--kubeconfig", str(kc), "--all-contexts", "-o", "markdown",
                           env=PINNED)
        html = run_cli("scan", "--kubeconfig", str(kc), "--all-contexts", "-o", "html",
                       env=PINNED)
        east = run_cli("scan", "--kubeconfig", str(kc), "--context", "gpu-east", "-o", "json",
                       env=PINNED)
    assert run.code == 1, run.stderr
    doc = run.json()
    assert doc["schema"] == "vllm-triage/report-set/v1" and doc["verdict"] == "fail"
    assert [(c["context"], c["verdict"], c["error"]) for c in doc["clusters"]] == [
        ("gpu-east", "fail", None), ("gpu-west", "pass", None)]
    # Each section is exactly that cluster's own report, its patch files named with
    # the cluster's context first (as --fix-dir writes them over several clusters).
    alone = east.json()
    for patch in alone["patches"]:
        patch["file"] = f"gpu-east.{patch['file']}"
    assert alone["patches"] and doc["clusters"][0]["report"] == alone
    assert doc["clusters"][1]["report"]["schema"] == "vllm-triage/report/v1"
    assert every.json() == doc
    assert table.code == 1
    assert "gpu-east: fail" in table.stdout and "==== cluster gpu-west" in table.stdout
    assert "## Cluster `gpu-east`" in markdown.stdout
    assert html.stdout.count("<section id=\"cluster-") == 2
    assert html.stdout.count("<html") == 1


def test_an_unreachable_cluster_is_a_section_not_a_silence(tmp_path: Path) -> None:
    dead = f"https://127.0.0.1:{free_port()}"
    with clusters(tmp_path, {"gpu-west": "well-sized-healthy"}) as kc:
        config = yaml.safe_load(kc.read_text())
        config["clusters"].append({"name": "gpu-gone", "cluster": {
            "server": dead, "certificate-authority-data":
            config["clusters"][0]["cluster"]["certificate-authority-data"]}})
        config["contexts"].append({"name": "gpu-gone", "context": {
            "cluster": "gpu-gone", "user": "triage", "namespace": "llm"}})
        kc.write_text(yaml.safe_dump(config))
        run = run_cli("scan", "--kubeconfig", str(kc), "--all-contexts", "-o", "json",
                      "--request-timeout", "5s", env=PINNED)
        missing = run_cli("scan", "--kubeconfig", str(kc), "--context", "gpu-west",
                          "--context", "nope", "-o", "json", env=PINNED)
    # Healthy where it could look, but one cluster unread: never exit 0.
    assert run.code == 3, run.stderr
    doc = run.json()
    gone = next(c for c in doc["clusters"] if c["context"] == "gpu-gone")
    assert gone["verdict"] == "unknown" and gone["report"] is None
    assert "cannot reach the Kubernetes API" in gone["error"]
    assert doc["verdict"] == "unknown"
    assert "cluster gpu-gone" in run.stderr
    assert missing.code == 3
    nope = next(c for c in missing.json()["clusters"] if c["context"] == "nope")
    assert "context 'nope' not found" in nope["error"]


def test_watch_runs_one_loop_per_cluster_with_a_cluster_label(tmp_path: Path) -> None:
    with clusters(tmp_path, {"gpu-east": "cuda-oom", "gpu-west": "well-sized-healthy"}) as kc, \
            watching(kc, tmp_path, "--context", "gpu-east", "--context", "gpu-west") as watch:
        metrics = wait_for("both clusters", lambda: (m := watch.metrics()) and
                           'vllm_triage_pods{cluster="gpu-west"}' in m and
                           'vllm_triage_pods{cluster="gpu-east"}' in m and m)
        findings = [line for line in metrics.splitlines()
                    if line.startswith("vllm_triage_finding{")]
        assert findings and all('cluster="gpu-east"' in line for line in findings)
        report = watch.get("/report.json").json()
        assert report["schema"] == "vllm-triage/report-set/v1"
        assert [c["context"] for c in report["clusters"]] == ["gpu-east", "gpu-west"]
    bad = run_cli("watch", "--kubeconfig", str(tmp_path / "kubeconfig"), "--context", "a",
                  "--context", "b", "--cluster-name", "x")
    assert bad.code == 2 and "--cluster-name" in bad.stderr


def test_fail_on_quiet_and_fix_dir_apply_to_the_whole_run(tmp_path: Path) -> None:
    """Issue 17: --fail-on, -q and --fix-dir over several contexts behave as for one: exit 1
    when any cluster has a finding at the level, nothing printed with -q, and one patch
    file per cluster and workload, named by context so two clusters never collide."""
    with clusters(tmp_path, {"gpu-east": "request-queueing",
                             "gpu-west": "well-sized-healthy"}) as kc:
        both = ("scan", "--kubeconfig", str(kc), "--context", "gpu-east", "--context",
                "gpu-west")
        default = run_cli(*both, "-o", "json", env=PINNED)
        warning = run_cli(*both, "-o", "json", "--fail-on", "warning", env=PINNED)
        quiet = run_cli(*both, "--output-file", str(tmp_path / "r.json"), "-o", "json", "-q",
                        "--fail-on", "warning", env=PINNED)
    assert default.code == 0, default.stderr  # warnings only: not a failure by default
    assert warning.code == 1, warning.stderr
    assert quiet.code == 1 and quiet.stdout == "" and quiet.stderr == "", quiet.stderr
    assert (tmp_path / "r.json").exists()
    with clusters(tmp_path, {"gpu-east": "cuda-oom", "gpu-west": "cuda-oom"}) as kc:
        fixes = run_cli("scan", "--kubeconfig", str(kc), "--context", "gpu-east", "--context",
                        "gpu-west", "-o", "json", "--fix-dir", str(tmp_path / "fixes"),
                        env=PINNED)
    assert fixes.code == 1, fixes.stderr
    names = sorted(p.name for p in (tmp_path / "fixes").iterdir())
    assert names == ["gpu-east.llm.deployment.vllm-qwen.patch.yaml",
                     "gpu-west.llm.deployment.vllm-qwen.patch.yaml"], names
    assert "2 patch file(s) written" in fixes.stderr
    body = (tmp_path / "fixes" / names[0]).read_text()
    assert "--patch-file " + str(tmp_path / "fixes" / names[0]) in body
