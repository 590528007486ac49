"""The last complete cycle of every cluster as Prometheus metric families.

A custom collector, not gauges set and left behind: each scrape is built
from the last complete cycle alone, so a finding that cleared is gone from
the next scrape (no stale series to reset). Label values are bounded: names
of Kubernetes objects that exist, finding ids and titles from the pattern
files, enums (severity, verdict, read kind); never log text or another
free-form value from the cluster. Series per finding and fix are capped;
what is dropped is counted.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import regex
from prometheus_client import ProcessCollector
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector, CollectorRegistry

from triage import __version__
from triage.results import Verdict
from triage.watch.cycle import ClusterStatus, ClusterWatch

VERDICTS = tuple(v.value for v in Verdict)
MAX_SERIES = 20_000  # finding and fix-value series together, per scrape
_NAME = regex.compile(r"[^a-zA-Z0-9_]")


def _fix_values(finding: dict[str, Any]) -> Iterator[tuple[str, float]]:
    """The numbers of a finding's computed fix (JSON ``fix.values``), e.g. the
    --max-model-len that fits; non-numeric values are not series."""
    fix = finding.get("fix")
    values = fix.get("values") if isinstance(fix, dict) else None
    if not isinstance(values, dict):
        return
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        yield _NAME.sub("_", str(name))[:64], float(value)


class ReportCollector(Collector):
    def __init__(self, clusters: Iterable[ClusterWatch], report_url: str = "",
                 max_series: int = MAX_SERIES) -> None:
        self.clusters = list(clusters)
        self.report_url = report_url
        self.max_series = max_series

    def collect(self) -> Iterator[Any]:
        cl = ["cluster"]
        place = [*cl, "namespace", "workload", "pod", "finding"]
        finding = GaugeMetricFamily(
            "vllm_triage_finding", "An open finding of the last complete triage (1 per finding "
            "per pod).", labels=[*place, "severity", "step"])
        info = GaugeMetricFamily(
            "vllm_triage_finding_info", "Title of each finding id that is open (from its "
            "pattern file; constant per id).", labels=["finding", "severity", "step", "title"])
        fix = GaugeMetricFamily(
            "vllm_triage_fix_value", "A number of the computed fix of an open finding (for "
            "example the --max-model-len that fits).", labels=[*place, "name"])
        step = GaugeMetricFamily(
            "vllm_triage_step_verdict", "Checklist step verdict of the last complete triage: "
            "1 for the verdict it has, 0 for the others.", labels=[*cl, "scope", "step", "verdict"])
        duration = GaugeMetricFamily(
            "vllm_triage_scan_duration_seconds", "Wall time of the last complete triage cycle.",
            labels=cl)
        failed = GaugeMetricFamily(
            "vllm_triage_read_failures", "API reads that failed in the last complete cycle, by "
            "kind.", labels=[*cl, "kind"])
        last = GaugeMetricFamily(
            "vllm_triage_last_complete_scan_timestamp_seconds", "Unix time the last complete "
            "triage cycle ended.", labels=cl)
        ok = GaugeMetricFamily(
            "vllm_triage_last_cycle_success", "1 when the last cycle completed, 0 when it "
            "failed (the last complete report is served meanwhile).", labels=cl)
        cycles = CounterMetricFamily(
            "vllm_triage_cycles", "Triage cycles run, by result.", labels=[*cl, "result"])
        pods = GaugeMetricFamily(
            "vllm_triage_pods", "vLLM pods triaged in the last complete cycle.", labels=cl)
        watch_up = GaugeMetricFamily(
            "vllm_triage_pod_watch_up", "1 while the pod watch that triggers early cycles is "
            "open; 0 when it failed and the interval alone paces the cycles.", labels=cl)
        dropped = GaugeMetricFamily(
            "vllm_triage_series_dropped", "Finding and fix series left out of this scrape over "
            f"the cap of {self.max_series}.", labels=cl)
        watch_info = GaugeMetricFamily(
            "vllm_triage_watch_info", "The watch: its version and where its report is served.",
            labels=[*cl, "version", "report_url"])
        titles: dict[str, tuple[str, str, str]] = {}
        budget = self.max_series
        for watch in self.clusters:
            status: ClusterStatus = watch.status
            name = status.name
            watch_info.add_metric([name, __version__, self.report_url], 1)
            cycles.add_metric([name, "ok"], status.cycles["ok"])
            cycles.add_metric([name, "failed"], status.cycles["failed"])
            ok.add_metric([name], 1 if status.last_cycle_ok else 0)
            watcher = watch.watcher
            watch_up.add_metric([name], 1 if watcher is not None and watcher.status.up else 0)
            good = status.last_good
            if good is None:
                continue
            duration.add_metric([name], good.duration)
            last.add_metric([name], good.finished_at)
            pods.add_metric([name], good.pods)
            for kind, count in sorted(good.failed_reads.items()):
                failed.add_metric([name, kind], count)
            doc = good.document
            scope = doc.get("namespace") or "all-namespaces"
            for s in doc.get("checklist") or []:
                for verdict in VERDICTS:
                    step.add_metric([name, scope, str(s["step"]), verdict],
                                    1 if s["verdict"] == verdict else 0)
            lost = 0
            for pod in doc.get("pods") or []:
                workload = pod.get("owner") or f"Pod/{pod['name']}"
                for f in pod.get("findings") or []:
                    where = [name, pod["namespace"], workload, pod["name"], f["id"]]
                    if budget <= 0:
                        lost += 1 + sum(1 for _ in _fix_values(f))  # and its fix's series
                        continue
                    budget -= 1
                    finding.add_metric([*where, f["severity"], str(f["step"])], 1)
                    titles[f["id"]] = (f["severity"], str(f["step"]), f["title"])
                    for value_name, value in _fix_values(f):
                        if budget <= 0:
                            lost += 1
                            continue
                        budget -= 1
                        fix.add_metric([*where, value_name], value)
            dropped.add_metric([name], lost)
        for fid, (severity, step_no, title) in sorted(titles.items()):
            info.add_metric([fid, severity, step_no, title], 1)
        yield from (finding, info, fix, step, duration, failed, last, ok, cycles, pods,
                    watch_up, dropped, watch_info)


def registry(clusters: Iterable[ClusterWatch], report_url: str = "") -> CollectorRegistry:
    """The triage's metrics and the process's own (resident memory, CPU, open files: a
    long-running watch's memory is something to alert on too)."""
    reg = CollectorRegistry(auto_describe=False)
    reg.register(ReportCollector(clusters, report_url))
    ProcessCollector(registry=reg)
    return reg
