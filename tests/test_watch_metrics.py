"""What /metrics says, from the last complete cycle alone: names, labels, cardinality.

Unit tests of triage.watch.exposition on report documents (the recorded
fixtures analysed offline, and documents carrying a computed fix as
``fix.values``), parsed back with prometheus_client's own text parser.
"""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import FIXTURES
from triage import pipeline
from triage.collect import bundle
from triage.results import Report
from triage.watch.cycle import ClusterWatch, CycleResult
from triage.watch.exposition import ReportCollector, registry

FINDING_LABELS = {"cluster", "namespace", "workload", "pod", "finding", "severity", "step"}


def _report(fixture: str) -> Report:
    return pipeline.analyze(bundle.load(FIXTURES / fixture))


def _watch(name: str, report: Report | None, document: dict[str, Any] | None = None,
           failed: dict[str, int] | None = None) -> ClusterWatch:
    watch = ClusterWatch(name, lambda: None, [], 60.0)  # type: ignore[arg-type,return-value]
    if report is not None:
        watch.status.last_good = CycleResult(report, document or report.to_document(),
                                             failed or {}, len(report.pods), 1.25, 1795834800.0)
        watch.status.last_cycle_ok = True
        watch.status.cycles["ok"] += 1
    return watch


def _samples(*watches: ClusterWatch, **kw: Any) -> dict[str, list[Any]]:
    text = generate_latest(registry(list(watches), **kw)).decode()
    out: dict[str, list[Any]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append(sample)
    return out


def test_one_series_per_open_finding_with_bounded_labels() -> None:
    samples = _samples(_watch("gpu-east", _report("cuda-oom")))
    findings = samples["vllm_triage_finding"]
    assert {(s.labels["pod"], s.labels["finding"]) for s in findings} == {
        ("vllm-qwen-5b7d9c8f6d-7xk2p", "cuda-oom"),
        ("vllm-qwen-5b7d9c8f6d-7xk2p", "gpu-memory-utilization")}
    for s in findings:
        assert set(s.labels) == FINDING_LABELS and s.value == 1
        assert s.labels["workload"] == "Deployment/vllm-qwen"
    cuda = next(s for s in findings if s.labels["finding"] == "cuda-oom")
    assert (cuda.labels["severity"], cuda.labels["step"]) == ("critical", "2")
    info = {s.labels["finding"]: s.labels["title"] for s in samples["vllm_triage_finding_info"]}
    assert info["cuda-oom"] == "GPU out of memory inside vLLM (CUDA OOM)"
    # Nothing of a log line anywhere in a label.
    every_label = {v for ss in samples.values() for s in ss for v in s.labels.values()}
    assert not any("Tried to allocate" in v or "\n" in v for v in every_label)


def test_a_step_verdict_gauge_per_step_and_verdict() -> None:
    samples = _samples(_watch("gpu-east", _report("cuda-oom")))
    verdicts = {(s.labels["step"], s.labels["verdict"]): s.value
                for s in samples["vllm_triage_step_verdict"]}
    assert verdicts[("2", "fail")] == 1 and verdicts[("2", "pass")] == 0
    assert verdicts[("1", "pass")] == 1
    assert len(verdicts) == 10 * 5
    assert {s.labels["scope"] for s in samples["vllm_triage_step_verdict"]} == {"llm"}


def test_scan_duration_failed_reads_and_last_scan_time() -> None:
    samples = _samples(_watch("gpu-east", _report("well-sized-healthy"),
                              failed={"events": 1, "metrics": 2}))
    assert samples["vllm_triage_scan_duration_seconds"][0].value == 1.25
    assert {s.labels["kind"]: s.value for s in samples["vllm_triage_read_failures"]} == {
        "events": 1, "metrics": 2}
    assert samples["vllm_triage_last_complete_scan_timestamp_seconds"][0].value == 1795834800.0
    assert samples["vllm_triage_last_cycle_success"][0].value == 1
    assert "vllm_triage_finding" not in samples  # healthy: no series, not zeros
    assert samples["process_resident_memory_bytes"][0].value > 0


def test_a_cleared_finding_is_gone_from_the_next_scrape() -> None:
    watch = _watch("gpu-east", _report("cuda-oom"))
    assert "vllm_triage_finding" in _samples(watch)
    healthy = _report("well-sized-healthy")
    watch.status.last_good = CycleResult(healthy, healthy.to_document(), {}, 2, 1.0, 1.0)
    assert "vllm_triage_finding" not in _samples(watch)


def test_fix_values_are_their_own_series() -> None:
    report = _report("cuda-oom")
    doc = copy.deepcopy(report.to_document())
    finding = doc["pods"][0]["findings"][0]
    finding["fix"] = {"text": "Lower --gpu-memory-utilization to 0.88 (fits 19.6 GiB)",
                      "values": {"gpu_memory_utilization": 0.88, "flag": "--gpu-memory",
                                 "max-model-len": 12288, "ok": True},
                      "patch": "..."}
    samples = _samples(_watch("gpu-east", report, doc))
    fixes = {s.labels["name"]: s.value for s in samples["vllm_triage_fix_value"]
             if s.labels["finding"] == finding["id"]}
    # Numbers only, names made label-safe; text never a label.
    assert fixes == {"gpu_memory_utilization": 0.88, "max_model_len": 12288}
    one = samples["vllm_triage_fix_value"][0]
    assert one.labels["finding"] == finding["id"] and one.labels["cluster"] == "gpu-east"


def test_series_are_capped_and_the_rest_counted() -> None:
    report = _report("cuda-oom")
    many = dataclasses.replace(report, pods=tuple(
        dataclasses.replace(report.pods[0], name=f"vllm-{i}") for i in range(30)))
    watch = _watch("gpu-east", many)
    text = generate_latest(_capped(watch, 25)).decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    # Each finding is a series, and so is each number of its computed fix.
    per_pod = sum(1 + sum(1 for v in ((f.fix.value_map() if f.fix else {}).values())
                          if isinstance(v, (int, float)) and not isinstance(v, bool))
                  for f in report.pods[0].findings)
    shown = (len(families["vllm_triage_finding"].samples)
             + len(families["vllm_triage_fix_value"].samples))
    assert shown == 25
    assert families["vllm_triage_series_dropped"].samples[0].value == 30 * per_pod - 25


def _capped(watch: ClusterWatch, cap: int) -> Any:
    from prometheus_client import CollectorRegistry

    reg = CollectorRegistry(auto_describe=False)
    reg.register(ReportCollector([watch], max_series=cap))
    return reg


def test_before_the_first_cycle_and_several_clusters() -> None:
    samples = _samples(_watch("gpu-east", _report("cuda-oom")), _watch("gpu-west", None),
                       report_url="https://triage.example/report")
    assert {s.labels["cluster"] for s in samples["vllm_triage_finding"]} == {"gpu-east"}
    success = {s.labels["cluster"]: s.value for s in samples["vllm_triage_last_cycle_success"]}
    assert success == {"gpu-east": 1, "gpu-west": 0}
    info = samples["vllm_triage_watch_info"]
    assert {s.labels["report_url"] for s in info} == {"https://triage.example/report"}


def test_served_report_after_a_failed_cycle_says_so(tmp_path: Path) -> None:
    watch = _watch("gpu-east", _report("cuda-oom"))
    watch.status.last_cycle_ok = False
    watch.status.last_error = "cannot reach the Kubernetes API at https://10.0.0.1: timed out"
    watch.status.last_error_at = 1795834900.0
    served = watch.served_report()
    assert served is not None
    assert served.warnings[0] == (
        "watch: the cycle at 2026-11-28T03:01:40Z failed (cannot reach the Kubernetes API at "
        "https://10.0.0.1: timed out); this is the report of the last complete cycle, at "
        "2026-11-28T03:00:00Z")
