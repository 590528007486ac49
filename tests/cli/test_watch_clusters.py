"""`watch` over several contexts: one bad context is one failing cluster, never the end
of the watch.

Three contexts: one served by the replaying test API server (a CUDA OOM), one whose
API server is not there, one whose client certificate file is gone (the credentials
cannot even be loaded). The watch keeps triaging the good one and says, per
``cluster`` label, that the others fail and why; each is tried again every interval.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.cli.test_clusters import clusters
from tests.cli.test_watch import wait_for, watching
from tests.conftest import run_cli
from tests.support.promserver import free_port


def _with_bad_contexts(kc: Path, tmp_path: Path) -> None:
    config = yaml.safe_load(kc.read_text())
    ca = config["clusters"][0]["cluster"]["certificate-authority-data"]
    config["clusters"].append({"name": "gpu-gone", "cluster": {
        "server": f"https://127.0.0.1:{free_port()}", "certificate-authority-data": ca}})
    config["clusters"].append({"name": "gpu-badcert", "cluster": {
        "server": config["clusters"][0]["cluster"]["server"],
        "certificate-authority-data": ca}})
    config["users"].append({"name": "cert-user", "user": {
        "client-certificate": str(tmp_path / "gone" / "client.crt"),
        "client-key": str(tmp_path / "gone" / "client.key")}})
    config["contexts"].append({"name": "gpu-gone", "context": {
        "cluster": "gpu-gone", "user": "triage", "namespace": "llm"}})
    config["contexts"].append({"name": "gpu-badcert", "context": {
        "cluster": "gpu-badcert", "user": "cert-user", "namespace": "llm"}})
    kc.write_text(yaml.safe_dump(config))


def test_one_bad_context_does_not_stop_the_others(tmp_path: Path) -> None:
    with clusters(tmp_path, {"gpu-east": "cuda-oom"}) as kc:
        _with_bad_contexts(kc, tmp_path)
        with watching(kc, tmp_path, "--all-contexts", "--interval", "2s",
                      "--request-timeout", "5s", ready=False) as watch:
            def failed_twice(m: str) -> bool:
                return all(f'vllm_triage_cycles_total{{cluster="{c}",result="failed"}} {n}' in m
                           for c in ("gpu-gone", "gpu-badcert") for n in ("2.0",))
            metrics = wait_for("the bad clusters tried twice", lambda: (
                m := watch.metrics()) and failed_twice(m) and m, timeout=90, proc=watch.proc)
            assert watch.proc.poll() is None  # still watching
            findings = [line for line in metrics.splitlines()
                        if line.startswith("vllm_triage_finding{")]
            assert findings and all('cluster="gpu-east"' in line for line in findings)
            assert any('finding="cuda-oom"' in line for line in findings)
            assert 'vllm_triage_last_cycle_success{cluster="gpu-east"} 1.0' in metrics
            for bad in ("gpu-gone", "gpu-badcert"):
                assert f'vllm_triage_last_cycle_success{{cluster="{bad}"}} 0.0' in metrics
                assert f'vllm_triage_watch_info{{cluster="{bad}",' in metrics
            # Not ready while a cluster has no complete cycle; alive all the same.
            readyz = watch.get("/readyz")
            assert readyz.status_code == 503
            lines = readyz.text.splitlines()
            assert [line.split(":")[0] for line in lines] == ["gpu-gone", "gpu-badcert"]
            assert "cannot reach the Kubernetes API" in lines[0]
            assert "client.crt" in lines[1] or "certificate" in lines[1], lines[1]
            assert watch.get("/healthz").status_code == 200
            # One report with a section per cluster: the good one's report, the bad
            # ones' errors.
            doc = watch.get("/report.json").json()
            assert doc["schema"] == "vllm-triage/report-set/v1"
            sections = {c["context"]: c for c in doc["clusters"]}
            assert list(sections) == ["gpu-east", "gpu-gone", "gpu-badcert"]
            assert sections["gpu-east"]["report"]["verdict"] == "fail"
            gone = sections["gpu-gone"]
            assert gone["report"] is None and gone["verdict"] == "unknown"
            assert gone["error"].startswith("no complete triage cycle yet; the last cycle, at ")
            assert "cannot reach the Kubernetes API" in gone["error"]
        assert "Traceback" not in watch.stderr()


def test_a_context_not_in_the_kubeconfig_is_a_usage_error(tmp_path: Path) -> None:
    with clusters(tmp_path, {"gpu-east": "well-sized-healthy"}) as kc:
        run = run_cli("watch", "--kubeconfig", str(kc), "--context", "gpu-east", "--context",
                      "gpu-wset", "--listen", f"127.0.0.1:{free_port()}")
    assert run.code == 2
    assert "context 'gpu-wset' not found in the kubeconfig; contexts: gpu-east" in run.stderr
