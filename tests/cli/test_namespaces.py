"""A wrong namespace or context is never "all clear".

A real API server lists the pods of a namespace that does not exist as an
empty list (200); only GET /api/v1/namespaces/NAME says 404. The scan asks
that when it found no vLLM pod, so a typo is exit 2 naming the closest
namespaces, and a namespace without vLLM pods says so as its headline and
where vLLM pods run instead.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.conftest import ROOT, replay, run_cli
from tests.support.fixturekit import copy_fixture, load_list, save_list
from tests.support.kubeapi import RBAC, write_kubeconfig

CLUSTER = ROOT / "deploy" / "rbac-clusterrole.yaml"
NAMESPACED = ROOT / "deploy" / "rbac-namespaced.yaml"


def scan(kubeconfig: Path, *args: str) -> tuple[int, str, str]:
    run = run_cli("scan", "--kubeconfig", str(kubeconfig), *args)
    assert "Traceback" not in run.stderr, run.stderr
    return run.code, run.stdout, run.stderr


def test_typo_namespace_is_exit_2_with_the_closest_names(tmp_path: Path) -> None:
    with replay("cuda-oom", tmp_path) as (_server, kc):
        code, out, err = scan(kc, "-n", "llm-prd")
    assert code == 2, err
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("vllm-triage: error: namespace 'llm-prd' not found")
    assert "did you mean llm?" in lines[0]


def test_typo_namespace_with_nothing_close_lists_the_namespaces(tmp_path: Path) -> None:
    with replay("cuda-oom", tmp_path) as (_server, kc):
        code, _out, err = scan(kc, "-n", "zzzzqqq")
    assert code == 2
    assert "namespace 'zzzzqqq' not found" in err and "namespaces: default," in err


def test_empty_namespace_says_so_and_where_vllm_runs(tmp_path: Path) -> None:
    with replay("cuda-oom", tmp_path) as (_server, kc):
        code, out, err = scan(kc, "-n", "default")
        jcode, jout, _ = scan(kc, "-n", "default", "-o", "json")
    assert code == 0 and jcode == 0, err
    headline = out.splitlines()[1]
    assert headline.startswith("no vLLM server pods in namespace default"), out
    assert "vLLM pods run in: llm (1)" in headline
    report = yaml.safe_load(jout)
    assert report["summary"] == "no vLLM server pods in namespace default; vLLM pods run in: llm (1)"
    assert report["verdict"] == "unknown" and report["pods"] == []
    assert [s["step"] for s in report["checklist"]] == list(range(1, 11))


def test_empty_namespace_when_other_namespaces_cannot_be_read(tmp_path: Path) -> None:
    """The namespaced Role (deploy/): no namespace GET, no cluster-wide pod list. The
    headline still says there is no vLLM pod here, and why it cannot say where they are."""
    with replay("cuda-oom", tmp_path, rbac=RBAC.from_files(NAMESPACED)) as (_server, kc):
        code, out, err = scan(kc, "-n", "llm", "-l", "app=nothing", "-o", "json")
    assert code == 0, err
    summary = yaml.safe_load(out)["summary"]
    assert summary.startswith("no vLLM server pods in namespace llm; could not look in "
                              "other namespaces (listing pods in all namespaces: 403"), summary


def test_cluster_role_allows_the_namespace_reads(tmp_path: Path) -> None:
    with replay("cuda-oom", tmp_path, rbac=RBAC.from_files(CLUSTER)) as (server, kc):
        typo, _, _ = scan(kc, "-n", "llm-prd")
        empty, out, _ = scan(kc, "-n", "default", "-o", "json")
        denied = list(server.denied)
    assert denied == [] and typo == 2 and empty == 0
    assert "vLLM pods run in: llm (1)" in yaml.safe_load(out)["summary"]


def test_namespace_with_pods_but_no_vllm_pod(tmp_path: Path) -> None:
    root = copy_fixture(tmp_path / "fx")
    pods = load_list(root, "pods")
    redis = next(p for p in pods["items"] if "redis" in p["metadata"]["name"])
    moved = yaml.safe_load(yaml.safe_dump(redis))
    moved["metadata"]["namespace"] = "cache"
    pods["items"].append(moved)
    save_list(root, "pods", pods)
    with replay(root, tmp_path) as (_server, kc):
        code, out, _err = scan(kc, "-n", "cache", "-o", "json")
    assert code == 0
    assert yaml.safe_load(out)["summary"] == ("no vLLM server pods in namespace cache; "
                                              "vLLM pods run in: llm (1)")


def test_unknown_context_lists_the_contexts(tmp_path: Path) -> None:
    kc = write_kubeconfig(tmp_path / "kubeconfig", "https://127.0.0.1:1")
    run = run_cli("scan", "--kubeconfig", str(kc), "--context", "incident-replai")
    assert run.code == 2 and "Traceback" not in run.stderr
    line = run.stderr.strip()
    assert "context 'incident-replai' not found" in line
    assert "did you mean incident-replay?" in line and "contexts: incident-replay" in line


def test_namespace_check_reads_only_when_no_vllm_pod(tmp_path: Path) -> None:
    """A namespace with vLLM pods costs no extra read."""
    with replay("cuda-oom", tmp_path) as (server, kc):
        code, _out, _err = scan(kc, "-o", "json")
        requests = list(server.requests)
    assert code == 1
    assert not any("/namespaces/llm " in r or r.startswith("GET /api/v1/pods")
                   for r in requests), requests
