"""Host memory over a window from a real Prometheus (issue 28).

The host-memory-growth fixture's history (tests/support/prometheus_history.py) is
backfilled into a real Prometheus behind ``monitoring/prometheus-k8s``: vllm-qwen32b's
working set grows about 600 MiB an hour while it serves; vllm-llama's grew while it
loaded its model and has been flat since. ``--prometheus`` reads
container_memory_working_set_bytes by pod and container over the window, in one range
query, as it reads the latency series; a bundle keeps the series and analyze reads them
back.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import yaml

from tests.conftest import FIXTURES, replay_with_prometheus, run_cli

NAME = "host-memory-growth"
INCIDENT = yaml.safe_load((FIXTURES / NAME / "incident.yaml").read_text())
AT = {"SOURCE_DATE_EPOCH": str(int(datetime.fromisoformat(
    INCIDENT["collected_at"].replace("Z", "+00:00")).timestamp()))}
LEAKING = "vllm-qwen32b-6d5c4b3a2f-xt4qp"
FLAT = "vllm-llama-58b7c6d9f4-p3q7r"


def _pod(report: dict[str, Any], name: str) -> dict[str, Any]:
    pod: dict[str, Any] = next(p for p in report["pods"] if p["name"] == name)
    return pod


def test_the_window_measures_the_growth_and_the_flat_neighbour_stays_silent(
        tmp_path: Path, backfilled: Any) -> None:
    with replay_with_prometheus(NAME, tmp_path, backfilled(INCIDENT["prometheus"]["history"])
                                ) as (server, kubeconfig, _url):
        run = run_cli("scan", "--kubeconfig", str(kubeconfig), "-o", "json",
                      "--prometheus", "auto", "--since", "6h", env=AT)
        requests = list(server.requests)
    assert run.code == 1, run.stderr
    report = run.json()
    [finding] = _pod(report, LEAKING)["findings"]
    assert finding["id"] == "host-memory-growth" and finding["severity"] == "critical"
    evidence = "\n".join(finding["evidence"])
    assert ("vllm working set 22.23 GiB of its 32.00 GiB limit, growing 595 MiB/h: "
            "the limit in 16.8 h") in evidence
    assert "(container_memory_working_set_bytes)" in evidence
    assert "Prometheus, last 6h" in evidence
    values = finding["fix"]["values"]
    assert 550 < values["rate_mib"] < 650 and 15 < values["hours"] < 19
    # The neighbour grew only while it loaded; flat since: no finding.
    assert _pod(report, FLAT)["findings"] == []

    # One range query, by pod and container, over the window, GET only.
    memory = [r for r in requests if "container_memory_working_set_bytes" in r]
    assert len(memory) == 1 and memory[0].startswith("GET ")
    query = parse_qs(urlsplit(memory[0].split(" ", 1)[1]).query)
    assert "/query_range" in memory[0]
    assert query["query"][0].startswith("max by (namespace, pod, container) (")
    assert float(query["end"][0]) - float(query["start"][0]) == 6 * 3600


def test_without_prometheus_the_kill_after_hours_of_serving_says_the_same(
        tmp_path: Path, backfilled: Any) -> None:
    with replay_with_prometheus(NAME, tmp_path, backfilled(INCIDENT["prometheus"]["history"])
                                ) as (_server, kubeconfig, _url):
        run = run_cli("scan", "--kubeconfig", str(kubeconfig), "-o", "json", env=AT)
    [finding] = _pod(run.json(), LEAKING)["findings"]
    assert finding["id"] == "host-memory-growth"
    assert "no memory series: --prometheus was not given" in finding["evidence"]
    assert "OOMKilled after serving 9.4 h" in finding["fix"]["text"]
    assert "container_memory_working_set_bytes" in finding["fix"]["text"]


def test_collect_keeps_the_memory_series_and_analyze_reads_them_back(
        tmp_path: Path, backfilled: Any) -> None:
    bundle = tmp_path / "bundle.tar.gz"
    with replay_with_prometheus(NAME, tmp_path, backfilled(INCIDENT["prometheus"]["history"])
                                ) as (_server, kubeconfig, _url):
        scan = run_cli("scan", "--kubeconfig", str(kubeconfig), "-o", "json",
                       "--prometheus", "auto", "--since", "6h", env=AT)
        collect = run_cli("collect", "--kubeconfig", str(kubeconfig), "-o", str(bundle),
                          "--prometheus", "auto", "--since", "6h", env=AT)
    assert collect.code == 0, collect.stderr
    analyzed = run_cli("analyze", str(bundle), "-o", "json")
    assert analyzed.code == scan.code
    assert analyzed.stdout == scan.stdout
    assert "growing 595 MiB/h" in analyzed.stdout
