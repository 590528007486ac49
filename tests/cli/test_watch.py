"""`vllm-triage watch` against the replaying test API server, scraped by a real Prometheus.

The replayed cluster changes under the running watch (``server.switch``):
well-sized-healthy, then the same pods with one crash-looping on a CUDA OOM,
then healthy again. The pod watch sees the restart count and readiness move
and starts a cycle long before the 60 s interval; Prometheus, scraping the
watch as a ServiceMonitor with honorLabels does, shows the finding series
appear and go. Also: a cycle costs exactly a scan's requests, a failed cycle
keeps serving the last good report and says so, SIGTERM stops it cleanly.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import FIXTURES, ROOT, replay, run_cli
from tests.support.fixturekit import HEALTHY_POD, crashlooping
from tests.support.promserver import free_port, prometheus

HEALTHY = FIXTURES / "well-sized-healthy"


class Watch:
    def __init__(self, proc: subprocess.Popen[str], url: str, log: Path) -> None:
        self.proc, self.url, self.log = proc, url, log

    def get(self, path: str) -> httpx.Response:
        return httpx.get(self.url + path, timeout=10)

    def metrics(self) -> str:
        return self.get("/metrics").text

    def stderr(self) -> str:
        return self.log.read_text(errors="replace")


def wait_for(what: str, check: Callable[[], Any], timeout: float = 45.0,
             proc: subprocess.Popen[str] | None = None) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"watch exited with {proc.returncode} waiting for {what}")
        try:
            last = check()
            if last:
                return last
        except (httpx.HTTPError, KeyError, ValueError):
            pass
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


@contextmanager
def watching(kubeconfig: Path, tmp_path: Path, *args: str,
             env: dict[str, str] | None = None, ready: bool = True) -> Iterator[Watch]:
    """Run the installed CLI's watch as a subprocess until the block ends (SIGTERM); with
    ``ready``, from its first complete cycle on, else from when it serves."""
    port = free_port()
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    full_env.update({"NO_COLOR": "1"}, **(env or {}))  # HOME is the run's own (conftest)
    log = tmp_path / f"watch-{port}.log"
    with open(log, "w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "triage.cli", "watch", "--kubeconfig", str(kubeconfig),
             "--listen", f"127.0.0.1:{port}", *args],
            stdout=subprocess.DEVNULL, stderr=err, text=True, env=full_env, cwd=str(ROOT))
    watch = Watch(proc, f"http://127.0.0.1:{port}", log)
    try:
        if ready:
            wait_for("the first complete cycle",
                     lambda: watch.get("/readyz").status_code == 200, proc=proc)
        else:
            wait_for("the server", lambda: watch.get("/healthz").status_code == 200, proc=proc)
        yield watch
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def promql(url: str, query: str) -> list[dict[str, Any]]:
    answer = httpx.get(f"{url}/api/v1/query", params={"query": query}, timeout=10).json()
    assert answer["status"] == "success", answer
    result: list[dict[str, Any]] = answer["data"]["result"]
    return result


def scrape_config(target: str) -> str:
    # What a ServiceMonitor with honorLabels: true makes of the watch's Service:
    # target labels namespace/pod of the watch pod itself, which the series'
    # own namespace/pod labels must win over.
    return f"""\
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
- job_name: vllm-triage-watch
  honor_labels: true
  scrape_interval: 1s
  scrape_timeout: 1s
  static_configs:
  - targets: ['{target}']
    labels: {{namespace: vllm-triage, pod: vllm-triage-watch-7d9f8-x2x4p}}
"""


def test_prometheus_sees_a_finding_come_and_go(tmp_path: Path) -> None:
    crash = crashlooping(tmp_path / "crash")
    (tmp_path / "prom").mkdir()
    with replay(HEALTHY, tmp_path) as (server, kubeconfig), \
            watching(kubeconfig, tmp_path, "--interval", "60s", "--cluster-name", "gpu-east"
                     ) as watch, \
            prometheus(tmp_path / "prom" / "data",
                       config_text=scrape_config(watch.url.removeprefix("http://"))) as prom:
        finding = ('vllm_triage_finding{cluster="gpu-east",namespace="llm",'
                   'workload="Deployment/vllm-qwen",finding="cuda-oom",severity="critical",'
                   'step="2"}')
        # Healthy: scraped, every step judged, no finding series at all.
        wait_for("a scrape of the healthy cycle", lambda: promql(
            prom, 'vllm_triage_step_verdict{cluster="gpu-east",step="2",verdict="pass"} == 1'))
        assert promql(prom, "vllm_triage_finding") == []
        assert promql(prom, 'vllm_triage_pods{cluster="gpu-east"}')[0]["value"][1] == "2"

        # Crash-looping: the pod watch starts a cycle well before the 60 s interval.
        switched = time.monotonic()
        server.switch(crash)
        series = wait_for("the cuda-oom series", lambda: promql(prom, finding), timeout=40)
        assert time.monotonic() - switched < 40
        assert [s["metric"]["pod"] for s in series] == [HEALTHY_POD]
        assert series[0]["value"][1] == "1"
        # The series' own namespace and pod won over the watch pod's target labels.
        assert series[0]["metric"]["namespace"] == "llm"
        assert "exported_namespace" not in series[0]["metric"]
        assert promql(prom, 'vllm_triage_step_verdict{step="2",verdict="fail"} == 1')
        title = promql(prom, 'vllm_triage_finding_info{finding="cuda-oom"}')
        assert title[0]["metric"]["title"] == "GPU out of memory inside vLLM (CUDA OOM)"
        # The proving line reaches Prometheus as the alerts' annotations read it: one
        # line, bounded, the cut marked.
        (text,) = wait_for("the text series", lambda: promql(
            prom, 'vllm_triage_finding_text{cluster="gpu-east",finding="cuda-oom"}'))
        assert "CUDA out of memory" in text["metric"]["proof"]
        assert len(text["metric"]["proof"]) <= 240 and "\n" not in text["metric"]["proof"]
        assert text["metric"]["workload"] == "Deployment/vllm-qwen"
        report = watch.get("/report.json").json()
        assert report["schema"] == "vllm-triage/report/v1" and report["verdict"] == "fail"
        reasons = watch.metrics()

        # Healthy again: the series is gone from the next scrape (a staleness
        # marker, not a value left behind at 1).
        server.switch(HEALTHY)
        wait_for("the cuda-oom series to go", lambda: promql(prom, finding) == [], timeout=40)
        assert promql(prom, "vllm_triage_finding") == []
        assert promql(prom, "vllm_triage_finding_text") == []
        assert watch.get("/report.json").json()["verdict"] == "pass"
        # Over the run the watch was open and only the interval's first cycle
        # plus the two pod changes ran.
        assert 'vllm_triage_pod_watch_up{cluster="gpu-east"} 1.0' in reasons
        requests = list(server.requests)
    assert all(r.startswith("GET ") for r in requests)
    watches = [r for r in requests if "watch=1" in r]
    assert watches and all(r.startswith("GET /api/v1/namespaces/llm/pods?") for r in watches)
    assert all("resourceVersion=" in r for r in watches)


def _cycles(requests: list[str]) -> list[Counter[str]]:
    """The requests of each cycle: a cycle begins with its pod list."""
    cycles: list[Counter[str]] = []
    for r in requests:
        if "watch=1" in r:
            continue
        if r.split("?")[0] == "GET /api/v1/namespaces/llm/pods":
            cycles.append(Counter())
        cycles[-1][r] += 1
    return cycles


def test_each_cycle_costs_exactly_a_scan(tmp_path: Path) -> None:
    with replay(HEALTHY, tmp_path) as (server, kubeconfig):
        scan = run_cli("scan", "--kubeconfig", str(kubeconfig), "-o", "json")
        assert scan.code == 0, scan.stderr
        one_scan = Counter(server.requests)
        server.requests.clear()
        with watching(kubeconfig, tmp_path, "--interval", "1s") as watch:
            wait_for("four cycles", lambda: 'vllm_triage_cycles_total{cluster="incident-replay",'
                     'result="ok"} 4.0' in watch.metrics())
        requests = list(server.requests)
    cycles = _cycles(requests)
    assert len(cycles) >= 4
    for cycle in cycles[:-1]:  # the last may have been cut short by the stop
        assert cycle == one_scan
    watches = [r for r in requests if "watch=1" in r]
    assert 1 <= len(watches) <= len(cycles)


def test_a_failed_cycle_keeps_the_last_report_and_says_so(tmp_path: Path) -> None:
    with replay(FIXTURES / "cuda-oom", tmp_path) as (server, kubeconfig), \
            watching(kubeconfig, tmp_path, "--interval", "1s") as watch:
        good = watch.get("/report.json").json()
        assert good["verdict"] == "fail"
        # The API server stops answering pod lists (and so the pod watch too).
        server.fixture.faults["unavailable"] = ["pods"]
        wait_for("a failed cycle", lambda: 'vllm_triage_last_cycle_success{'
                 'cluster="incident-replay"} 0.0' in watch.metrics())
        stale = watch.get("/report.json")
        assert stale.status_code == 200
        assert stale.headers["X-Vllm-Triage-Stale"] == "incident-replay"
        doc = stale.json()
        assert doc["warnings"][0].startswith("watch: the cycle at ")
        assert "failed (" in doc["warnings"][0] and "503" in doc["warnings"][0]
        assert [p["findings"] for p in doc["pods"]] == [p["findings"] for p in good["pods"]]
        metrics = watch.metrics()
        # The findings of the last complete cycle are still exported.
        assert 'finding="cuda-oom"' in metrics
        assert 'vllm_triage_cycles_total{cluster="incident-replay",result="failed"}' in metrics
        # The page says it first, not only among the warnings at its end.
        page = watch.get("/report").text
        assert page.index("<strong>Stale:</strong> watch: the cycle at") < page.index("<h1>")
        assert watch.get("/report.md").text.startswith("> **Stale:** watch: the cycle at")
        # Alive, but not ready once its last complete cycle is three intervals old.
        unready = wait_for("/readyz to say it", lambda: (r := watch.get("/readyz")).status_code
                           == 503 and r.text)
        assert unready.startswith("incident-replay: the last complete cycle ended ")
        assert "more than 3 intervals (3s); the last cycle, at " in unready
        assert "failed: " in unready and "503" in unready
        assert watch.get("/healthz").status_code == 200
        # It recovers on its own.
        server.fixture.faults["unavailable"] = []
        wait_for("a good cycle again", lambda: 'vllm_triage_last_cycle_success{'
                 'cluster="incident-replay"} 1.0' in watch.metrics())
        assert "X-Vllm-Triage-Stale" not in watch.get("/report.json").headers
        wait_for("ready again", lambda: watch.get("/readyz").status_code == 200)


def test_a_watch_that_never_completes_a_cycle_is_never_ready(tmp_path: Path) -> None:
    root = _with_faults(tmp_path, FIXTURES / "cuda-oom", {"forbidden": ["pods"]})
    with replay(root, tmp_path) as (_server, kubeconfig), \
            watching(kubeconfig, tmp_path, "--interval", "1s", ready=False) as watch:
        wait_for("two failed cycles", lambda: 'vllm_triage_cycles_total{cluster='
                 '"incident-replay",result="failed"} 2.0' in watch.metrics())
        readyz = watch.get("/readyz")
        assert readyz.status_code == 503
        assert readyz.text.startswith("incident-replay: no complete triage cycle yet; the last "
                                      "cycle, at ")
        assert "failed: " in readyz.text and "403" in readyz.text
        assert watch.get("/healthz").status_code == 200  # liveness: the loop runs
        report = watch.get("/report.json")
        assert report.status_code == 503 and "no complete triage cycle yet" in report.text
        assert "vllm_triage_last_complete_scan_timestamp_seconds{" not in watch.metrics()


def test_a_partial_cycle_keeps_the_complete_report_and_what_it_could_not_decide(
        tmp_path: Path) -> None:
    with replay(FIXTURES / "cuda-oom", tmp_path) as (server, kubeconfig), \
            watching(kubeconfig, tmp_path, "--interval", "1s") as watch:
        good = watch.get("/report.json").json()
        assert good["verdict"] == "fail" and good["unreadable"] == []
        # The logs become forbidden: every cycle reads the rest, and is partial.
        server.fixture.faults["forbidden"] = ["log"]

        def partial(n: int) -> str:
            return (f'vllm_triage_cycles_total{{cluster="incident-replay",result="partial"}} '
                    f'{n:.1f}')
        metrics = wait_for("a partial cycle", lambda: (m := watch.metrics()) and
                           partial(1) in m and m)
        last = _sample(metrics, "vllm_triage_last_complete_scan_timestamp_seconds")
        before = watch.get("/report.json").json()
        metrics = wait_for("two more", lambda: (m := watch.metrics()) and partial(3) in m and m)
        # /report.json is still the complete cycle's, saying first that a later one was
        # partial; the last-complete-scan time did not move.
        doc = watch.get("/report.json").json()
        assert doc["generated_at"] == before["generated_at"]
        assert doc["unreadable"] == [] and doc["pods"] == good["pods"]
        assert doc["warnings"][0].startswith("watch: the cycle at ")
        assert " was partial (1 read(s) failed: logs 1; first: previous log of llm/" in doc["warnings"][0]
        assert _sample(metrics, "vllm_triage_last_complete_scan_timestamp_seconds") == last
        assert 'vllm_triage_last_cycle_success{cluster="incident-replay"} 0.0' in metrics
        assert 'vllm_triage_read_failures{cluster="incident-replay",kind="logs"} 1.0' in metrics
        assert 'vllm_triage_reads_failed_total{cluster="incident-replay",kind="logs"}' in metrics
        # The CUDA OOM, which only the log shows, is not resolved by a log it could not
        # read; nor is it called a crash of unknown cause.
        findings = {line.split('finding="')[1].split('"')[0] for line in metrics.splitlines()
                    if line.startswith("vllm_triage_finding{")}
        assert findings == {"cuda-oom", "gpu-memory-utilization"}
        assert 'vllm_triage_findings_carried{cluster="incident-replay"} 1.0' in metrics
        # Readable again: complete, and the time moves.
        server.fixture.faults["forbidden"] = []
        wait_for("a complete cycle", lambda: _sample(
            watch.metrics(), "vllm_triage_last_complete_scan_timestamp_seconds") > last)
        assert watch.get("/report.json").json()["warnings"] == good["warnings"]


def _sample(metrics: str, name: str) -> float:
    line = next(line for line in metrics.splitlines() if line.startswith(name + "{"))
    return float(line.rsplit(" ", 1)[1])


def _with_faults(tmp_path: Path, fixture: Path, faults: dict[str, Any]) -> Path:
    import shutil

    import yaml

    root = tmp_path / f"{fixture.name}-faulty"
    shutil.copytree(fixture, root)
    meta = yaml.safe_load((root / "incident.yaml").read_text())
    meta["faults"] = faults
    (root / "incident.yaml").write_text(yaml.safe_dump(meta))
    return root


def test_sigterm_stops_it_cleanly(tmp_path: Path) -> None:
    with replay(HEALTHY, tmp_path) as (_server, kubeconfig), \
            watching(kubeconfig, tmp_path) as watch:
        assert watch.get("/healthz").text == "ok\n"
        assert watch.get("/nope").status_code == 404
        assert httpx.post(watch.url + "/metrics").status_code == 405
        started = time.monotonic()
        watch.proc.send_signal(signal.SIGTERM)
        code = watch.proc.wait(timeout=15)
        assert code == 0, watch.stderr()
        assert time.monotonic() - started < 10
        assert "vllm-triage watch: stopped" in watch.stderr()
        assert "Traceback" not in watch.stderr()


def test_sigterm_mid_cycle_stops_within_the_grace_period(tmp_path: Path) -> None:
    """A pod gets 30 s from SIGTERM to SIGKILL: a read the API server holds for a
    minute (the request timeout allows 90 s) is cut, not waited for."""
    with replay(HEALTHY, tmp_path) as (server, kubeconfig), \
            watching(kubeconfig, tmp_path, "--interval", "1s", "--request-timeout", "90s"
                     ) as watch:
        server.fixture.faults["slow"] = {"log": 60}
        server.requests.clear()
        wait_for("a log read under way", lambda: any("/log?" in r for r in server.requests))
        time.sleep(0.5)
        started = time.monotonic()
        watch.proc.send_signal(signal.SIGTERM)
        code = watch.proc.wait(timeout=30)  # a hang guard: the read alone takes 60 s
        took = time.monotonic() - started
        assert code == 0, watch.stderr()
        assert took < 15, took
        assert "vllm-triage watch: stopped" in watch.stderr()
        assert "Traceback" not in watch.stderr()


def test_a_watch_the_server_ends_falls_back_to_the_interval(tmp_path: Path) -> None:
    root = _with_faults(tmp_path, HEALTHY, {"watch_gone": True})
    with replay(root, tmp_path) as (_server, kubeconfig), \
            watching(kubeconfig, tmp_path, "--interval", "1s") as watch:
        wait_for("three cycles", lambda: 'vllm_triage_cycles_total{cluster="incident-replay",'
                 'result="ok"} 3.0' in watch.metrics())
        metrics = watch.metrics()
        assert 'vllm_triage_pod_watch_up{cluster="incident-replay"} 0.0' in metrics
        assert 'vllm_triage_last_cycle_success{cluster="incident-replay"} 1.0' in metrics


def test_usage_errors(tmp_path: Path) -> None:
    with replay(HEALTHY, tmp_path) as (_server, kubeconfig):
        bad = run_cli("watch", "--kubeconfig", str(kubeconfig), "--listen", "nowhere")
        assert bad.code == 2 and "HOST:PORT" in bad.stderr
        for bad, said in [("soon", "is not a duration such as 30s, 1m30s or 2m"),
                          ("0", "is zero"), ("0s", "is zero"), ("-30s", "is negative"),
                          ("60", "has no unit: write 60s"), ("0ms", "is zero"),
                          ("1m30", "is not a duration"), ("25h", "is over 24h")]:
            run = run_cli("watch", "--kubeconfig", str(kubeconfig), "--interval", bad)
            assert run.code == 2, (bad, run.stderr)
            assert f"vllm-triage: error: --interval {bad!r} {said}" in run.stderr, run.stderr
            assert "Traceback" not in run.stderr
    help_text = run_cli("watch", "--help", env={"COLUMNS": "200"}).stdout
    for metavar in ("--interval DURATION", "--listen HOST:PORT", "-n, --namespace NAMESPACE",
                    "-l, --selector SELECTOR", "--context CONTEXT", "--cluster-name NAME",
                    "--report-url URL", "--request-timeout DURATION"):
        assert metavar in help_text, metavar
    assert "<" not in help_text and not re.search(r"\bTEXT\b", help_text)
