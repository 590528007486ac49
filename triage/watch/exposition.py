"""The triage of every cluster as Prometheus metric families.

A custom collector, not gauges set and left behind: each scrape is built
from the cycles' state alone, so a finding that cleared is gone from the
next scrape (no stale series to reset). The findings are those of the last
cycle that decided them (``cycle``: a partial cycle never clears what it
could not evaluate); the checklist, pods and scan duration are those of the
last complete cycle. Label values are bounded: names of Kubernetes objects
that exist, finding ids and titles from the pattern files, enums (severity,
verdict, read kind). The one exception, ``vllm_triage_finding_text``,
carries the proving line and the fix of each open workload finding for the
alerts' annotations: one series per open (workload, finding), each text one
line of at most 240 characters, fixed while the finding stays open. Series
per finding, fix and text are capped; what is dropped is counted.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from prometheus_client import ProcessCollector
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector, CollectorRegistry

from triage import __version__
from triage.results import Verdict
from triage.watch.cycle import ClusterStatus, ClusterWatch

VERDICTS = tuple(v.value for v in Verdict)
MAX_SERIES = 20_000  # finding, fix-value and text series together, per scrape


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
            "vllm_triage_finding", "An open finding (1 per finding per pod): the last complete "
            "triage's, moved by a partial one only where it decided.",
            labels=[*place, "severity", "step"])
        info = GaugeMetricFamily(
            "vllm_triage_finding_info", "Title of each finding id that is open in a cluster "
            "(from its pattern file; constant per id).",
            labels=[*cl, "finding", "severity", "step", "title"])
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
            "vllm_triage_read_failures", "API reads that failed in the last cycle, by kind (a "
            "cycle with any is partial; none after a cycle that could not start).",
            labels=[*cl, "kind"])
        failed_total = CounterMetricFamily(
            "vllm_triage_reads_failed", "API reads that failed, by kind, over every cycle.",
            labels=[*cl, "kind"])
        last = GaugeMetricFamily(
            "vllm_triage_last_complete_scan_timestamp_seconds", "Unix time the last complete "
            "triage cycle (every read answered) ended.", labels=cl)
        ok = GaugeMetricFamily(
            "vllm_triage_last_cycle_success", "1 when the last cycle was complete; 0 when it was "
            "partial (reads failed) or failed (the last complete report is served meanwhile).",
            labels=cl)
        cycles = CounterMetricFamily(
            "vllm_triage_cycles", "Triage cycles run, by result: ok (complete), partial (reads "
            "failed), failed.", labels=[*cl, "result"])
        interval = GaugeMetricFamily(
            "vllm_triage_interval_seconds", "The watch's --interval (the alerts' staleness "
            "bound is a few of them).", labels=cl)
        pods = GaugeMetricFamily(
            "vllm_triage_pods", "vLLM pods triaged in the last complete cycle.", labels=cl)
        carried = GaugeMetricFamily(
            "vllm_triage_findings_carried", "Open findings kept from an earlier cycle because "
            "the last (partial) cycle could not evaluate them.", labels=cl)
        text = GaugeMetricFamily(
            "vllm_triage_finding_text", "The proving line and the fix of an open finding of a "
            "workload, for the alerts' annotations (one line each, at most 240 characters, "
            "fixed while the finding stays open).",
            labels=[*cl, "namespace", "workload", "finding", "proof", "fix"])
        watch_up = GaugeMetricFamily(
            "vllm_triage_pod_watch_up", "1 while the pod watch that triggers early cycles is "
            "open; 0 when it failed and the interval alone paces the cycles.", labels=cl)
        dropped = GaugeMetricFamily(
            "vllm_triage_series_dropped", "Finding, fix and text series left out of this scrape "
            f"over the cap of {self.max_series}.", labels=cl)
        watch_info = GaugeMetricFamily(
            "vllm_triage_watch_info", "The watch: its version and where its report is served.",
            labels=[*cl, "version", "report_url"])
        titles: dict[tuple[str, str], tuple[str, str, str]] = {}
        budget = self.max_series
        for watch in self.clusters:
            status: ClusterStatus = watch.status
            name = status.name
            watch_info.add_metric([name, __version__, self.report_url], 1)
            for result in ("ok", "partial", "failed"):
                cycles.add_metric([name, result], status.cycles[result])
            ok.add_metric([name], 1 if status.last_cycle_ok else 0)
            interval.add_metric([name], watch.interval)
            watcher = watch.watcher
            watch_up.add_metric([name], 1 if watcher is not None and watcher.status.up else 0)
            for kind, count in sorted(status.read_failures.items()):
                failed.add_metric([name, kind], count)
            for kind, count in sorted(status.reads_failed.items()):
                failed_total.add_metric([name, kind], count)
            good = status.last_complete
            if good is not None:
                duration.add_metric([name], good.duration)
                last.add_metric([name], good.finished_at)
                pods.add_metric([name], good.pods)
                doc = good.document
                scope = doc.get("namespace") or "all-namespaces"
                for s in doc.get("checklist") or []:
                    for verdict in VERDICTS:
                        step.add_metric([name, scope, str(s["step"]), verdict],
                                        1 if s["verdict"] == verdict else 0)
            if status.last_cycle == "":
                continue
            lost = 0
            texts_shown: set[tuple[str, str, str]] = set()
            carried.add_metric([name], sum(1 for o in status.findings if o.carried))
            for o in status.findings:
                where = [name, o.namespace, o.workload, o.pod, o.id]
                said = status.texts.get(o.card_key)
                wanted: list[tuple[GaugeMetricFamily, list[str], float]] = [
                    (finding, [*where, o.severity, str(o.step)], 1)]
                wanted += [(fix, [*where, value_name], value)
                           for value_name, value in o.fix_values]
                if said is not None and o.card_key not in texts_shown:
                    texts_shown.add(o.card_key)  # one per workload and finding
                    wanted.append((text, [name, o.namespace, o.workload, o.id, said.proof,
                                          said.fix], 1))
                for family, labels, value in wanted:
                    if budget <= 0:
                        lost += 1
                        continue
                    budget -= 1
                    family.add_metric(labels, value)
                    if family is finding:
                        titles[(name, o.id)] = (o.severity, str(o.step), o.title)
            dropped.add_metric([name], lost)
        for (cluster, fid), (severity, step_no, title) in sorted(titles.items()):
            info.add_metric([cluster, fid, severity, step_no, title], 1)
        yield from (finding, info, fix, text, step, duration, failed, failed_total, last, ok,
                    cycles, interval, pods, carried, watch_up, dropped, watch_info)


def registry(clusters: Iterable[ClusterWatch], report_url: str = "") -> CollectorRegistry:
    """The triage's metrics and the process's own (resident memory, CPU, open files: a
    long-running watch's memory is something to alert on too)."""
    reg = CollectorRegistry(auto_describe=False)
    reg.register(ReportCollector(clusters, report_url))
    ProcessCollector(registry=reg)
    return reg
