"""What /metrics says, from the last complete cycle alone: names, labels, cardinality.

Unit tests of triage.watch.exposition on report documents (the recorded
fixtures analysed offline, and documents carrying a computed fix as
``fix.values``), parsed back with prometheus_client's own text parser.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import FIXTURES
from triage import pipeline
from triage.collect import bundle
from triage.results import Finding, Fix, Report, Severity, Unevaluated
from triage.watch.cycle import CUT, TEXT_LIMIT, ClusterWatch, CycleResult
from triage.watch.exposition import ReportCollector, registry

FINDING_LABELS = {"cluster", "namespace", "workload", "pod", "finding", "severity", "step"}


def _report(fixture: str) -> Report:
    return pipeline.analyze(bundle.load(FIXTURES / fixture))


def _cycle(report: Report, failed: dict[str, int] | None = None,
           at: float = 1795834800.0) -> CycleResult:
    return CycleResult(report, report.to_document(), failed or {}, len(report.pods), 1.25, at,
                       "events (/api/v1/namespaces/llm/events): 403 Forbidden" if failed else "")


def _watch(name: str, report: Report | None, failed: dict[str, int] | None = None
           ) -> ClusterWatch:
    """A watch whose one cycle produced ``report`` (partial when ``failed`` is given)."""
    watch = ClusterWatch(name, lambda: None, [], 60.0)  # type: ignore[arg-type,return-value]
    if report is not None:
        watch.status.record(_cycle(report, failed))
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
    # Nothing of a log line in any label but the text series' proof and fix.
    every_label = {v for name, ss in samples.items() if name != "vllm_triage_finding_text"
                   for s in ss for v in s.labels.values()}
    assert not any("Tried to allocate" in v or "\n" in v for v in every_label)


def test_a_step_verdict_gauge_per_step_and_verdict() -> None:
    samples = _samples(_watch("gpu-east", _report("cuda-oom")))
    verdicts = {(s.labels["step"], s.labels["verdict"]): s.value
                for s in samples["vllm_triage_step_verdict"]}
    assert verdicts[("2", "fail")] == 1 and verdicts[("2", "pass")] == 0
    assert verdicts[("1", "pass")] == 1
    assert len(verdicts) == 10 * 5
    assert {s.labels["scope"] for s in samples["vllm_triage_step_verdict"]} == {"llm"}


def test_scan_duration_and_last_scan_time() -> None:
    samples = _samples(_watch("gpu-east", _report("well-sized-healthy")))
    assert samples["vllm_triage_scan_duration_seconds"][0].value == 1.25
    assert "vllm_triage_read_failures" not in samples
    assert samples["vllm_triage_last_complete_scan_timestamp_seconds"][0].value == 1795834800.0
    assert samples["vllm_triage_last_cycle_success"][0].value == 1
    assert samples["vllm_triage_interval_seconds"][0].value == 60
    assert "vllm_triage_finding" not in samples  # healthy: no series, not zeros
    assert samples["process_resident_memory_bytes"][0].value > 0


def test_a_cleared_finding_is_gone_from_the_next_scrape() -> None:
    watch = _watch("gpu-east", _report("cuda-oom"))
    assert "vllm_triage_finding" in _samples(watch)
    watch.status.record(_cycle(_report("well-sized-healthy")))
    assert "vllm_triage_finding" not in _samples(watch)
    assert "vllm_triage_finding_text" not in _samples(watch)


def test_fix_values_are_their_own_series() -> None:
    report = _report("cuda-oom")
    pod = report.pods[0]
    finding = dataclasses.replace(pod.findings[0], fix=Fix(
        "Lower --gpu-memory-utilization to 0.88 (fits 19.6 GiB)",
        (("gpu_memory_utilization", 0.88), ("flag", "--gpu-memory"), ("max-model-len", 12288),
         ("ok", True))))
    report = dataclasses.replace(report, pods=(dataclasses.replace(
        pod, findings=(finding, *pod.findings[1:])),))
    samples = _samples(_watch("gpu-east", report))
    fixes = {s.labels["name"]: s.value for s in samples["vllm_triage_fix_value"]
             if s.labels["finding"] == finding.id}
    # Numbers only, names made label-safe; text never a label.
    assert fixes == {"gpu_memory_utilization": 0.88, "max_model_len": 12288}
    one = samples["vllm_triage_fix_value"][0]
    assert one.labels["finding"] == finding.id and one.labels["cluster"] == "gpu-east"


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
    # And each workload's finding has one text series (the 30 pods share a workload).
    texts = len(report.pods[0].findings)
    shown = (len(families["vllm_triage_finding"].samples)
             + len(families["vllm_triage_fix_value"].samples)
             + len(families["vllm_triage_finding_text"].samples))
    assert shown == 25 and len(families["vllm_triage_finding_text"].samples) == texts
    assert families["vllm_triage_series_dropped"].samples[0].value == 30 * per_pod + texts - 25


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
    watch.status.record_failure("cannot reach the Kubernetes API at https://10.0.0.1: timed out",
                                1795834900.0)
    served = watch.served_report()
    assert served is not None
    assert served.warnings[0] == (
        "watch: the cycle at 2026-11-28T03:01:40Z failed (cannot reach the Kubernetes API at "
        "https://10.0.0.1: timed out); this is the report of the last complete cycle, at "
        "2026-11-28T03:00:00Z")


def test_the_proving_line_and_fix_are_one_bounded_text_series_per_workload_finding() -> None:
    report = _report("cuda-oom")
    samples = _samples(_watch("gpu-east", report))
    texts = {s.labels["finding"]: s.labels for s in samples["vllm_triage_finding_text"]}
    assert set(texts) == {"cuda-oom", "gpu-memory-utilization"}
    cuda = texts["cuda-oom"]
    assert set(cuda) == {"cluster", "namespace", "workload", "finding", "proof", "fix"}
    card = next(c for c in report.cards if c.finding == "cuda-oom")
    assert len(card.proof) > TEXT_LIMIT  # the fixture's line is long: cut, and said so
    assert TEXT_LIMIT - 2 <= len(cuda["proof"]) <= TEXT_LIMIT and cuda["proof"].endswith(CUT)
    assert "torch.OutOfMemoryError: CUDA out of memory" in cuda["proof"]
    assert cuda["proof"].startswith(card.proof[:TEXT_LIMIT - 1].rstrip())
    assert "--gpu-memory-utilization=0.9" in cuda["fix"] and len(cuda["fix"]) <= TEXT_LIMIT
    gmu = texts["gpu-memory-utilization"]
    assert gmu["proof"] == "container vllm: --gpu-memory-utilization=0.98 (set in args)"
    for labels in texts.values():
        assert "\n" not in labels["proof"] + labels["fix"]


def test_a_text_stays_as_it_opened_while_the_finding_is_open() -> None:
    """A restart's new line (its pid, time, line number) is not a new series."""
    report = _report("cuda-oom")
    watch = _watch("gpu-east", report)
    first = {s.labels["finding"]: s.labels["proof"]
             for s in _samples(watch)["vllm_triage_finding_text"]}
    moved = dataclasses.replace(report, cards=tuple(
        dataclasses.replace(c, proof="previous log (vllm) line 52> a later line")
        for c in report.cards))
    watch.status.record(_cycle(moved))
    again = {s.labels["finding"]: s.labels["proof"]
             for s in _samples(watch)["vllm_triage_finding_text"]}
    assert again == first
    # Cleared, then open again: the text it opens with now.
    watch.status.record(_cycle(_report("well-sized-healthy")))
    watch.status.record(_cycle(moved))
    reopened = {s.labels["finding"]: s.labels["proof"]
                for s in _samples(watch)["vllm_triage_finding_text"]}
    assert set(reopened.values()) == {"previous log (vllm) line 52> a later line"}


def _partial_of(report: Report, undecided: tuple[str, ...], drop: tuple[str, ...],
                add: tuple[Finding, ...] = ()) -> Report:
    """``report`` as a partial cycle saw it: the findings of ``drop`` not raised, the
    rules of ``undecided`` not evaluated (their input was not read), ``add`` raised."""
    pod = report.pods[0]
    return dataclasses.replace(report, pods=(dataclasses.replace(
        pod, findings=tuple(f for f in pod.findings if f.id not in drop) + add,
        unevaluated=tuple(Unevaluated(fid, 2, "vllm", "previous log of llm/x (vllm): 403")
                          for fid in undecided)),))


def test_a_partial_cycle_moves_nothing_it_could_not_decide() -> None:
    complete = _report("cuda-oom")
    watch = _watch("gpu-east", complete)
    before = _samples(watch)
    crash = Finding("crashloop-unknown", Severity.CRITICAL, "Crash-looping, cause unknown", 2,
                    "vllm", ("exit 1",), "read the log", fallback=True)
    # The previous log was forbidden: cuda-oom could not be evaluated (kept), the
    # fallback raised for want of the log stands back, gpu-memory-utilization was
    # decided and is still there.
    watch.status.record(_cycle(_partial_of(complete, ("cuda-oom",), ("cuda-oom",), (crash,)),
                               failed={"logs": 1}, at=1795834900.0))
    after = _samples(watch)
    assert {s.labels["finding"] for s in after["vllm_triage_finding"]} == {
        "cuda-oom", "gpu-memory-utilization"}
    assert after["vllm_triage_findings_carried"][0].value == 1
    assert {s.labels["finding"] for s in after["vllm_triage_finding_text"]} == {
        "cuda-oom", "gpu-memory-utilization"}
    # The last complete scan, the checklist and the report did not move.
    assert after["vllm_triage_last_complete_scan_timestamp_seconds"][0].value == 1795834800.0
    assert [(s.labels, s.value) for s in after["vllm_triage_step_verdict"]] == [
        (s.labels, s.value) for s in before["vllm_triage_step_verdict"]]
    assert watch.status.last_complete is not None
    assert watch.status.last_complete.report is complete
    assert after["vllm_triage_last_cycle_success"][0].value == 0
    # Said as partial, with what failed, by kind.
    cycles = {s.labels["result"]: s.value for s in after["vllm_triage_cycles_total"]}
    assert cycles == {"ok": 1, "partial": 1, "failed": 0}
    assert {s.labels["kind"]: s.value for s in after["vllm_triage_read_failures"]} == {"logs": 1}
    assert {s.labels["kind"]: s.value for s in after["vllm_triage_reads_failed_total"]} == {
        "logs": 1}
    served = watch.served_report()
    assert served is not None and served.pods == complete.pods
    assert served.warnings[0] == (
        "watch: the cycle at 2026-11-28T03:01:40Z was partial (1 read(s) failed: logs 1; "
        "first: events (/api/v1/namespaces/llm/events): 403 Forbidden); this is the report of "
        "the last complete cycle, at 2026-11-28T03:00:00Z")

    # A partial cycle that decided a finding cleared clears it; a second partial one
    # that cannot decide cuda-oom either still keeps it.
    watch.status.record(_cycle(_partial_of(complete, ("cuda-oom",),
                                           ("cuda-oom", "gpu-memory-utilization")),
                               failed={"logs": 1}, at=1795835000.0))
    assert {s.labels["finding"] for s in _samples(watch)["vllm_triage_finding"]} == {"cuda-oom"}
    # A partial cycle that did read the log and found no CUDA OOM clears it: the
    # reads that failed were others (events), its rule was evaluated.
    watch.status.record(_cycle(_partial_of(complete, (), ("cuda-oom",)),
                               failed={"events": 1}, at=1795835100.0))
    assert {s.labels["finding"] for s in _samples(watch)["vllm_triage_finding"]} == {
        "gpu-memory-utilization"}
    # Then a complete healthy cycle: everything moves.
    watch.status.record(_cycle(_report("well-sized-healthy"), at=1795835200.0))
    done = _samples(watch)
    assert "vllm_triage_finding" not in done
    assert done["vllm_triage_last_complete_scan_timestamp_seconds"][0].value == 1795835200.0
    assert done["vllm_triage_last_cycle_success"][0].value == 1
    assert "vllm_triage_read_failures" not in done
    assert {s.labels["kind"]: s.value for s in done["vllm_triage_reads_failed_total"]} == {
        "logs": 2, "events": 1}


def test_a_partial_first_cycle_serves_no_report_and_is_not_ready() -> None:
    watch = _watch("gpu-east", _report("cuda-oom"), failed={"events": 1})
    assert watch.served_report() is None
    ready, why = watch.readiness()
    assert not ready
    assert why.startswith("no complete triage cycle yet; the last cycle, at "
                          "2026-11-28T03:00:00Z, was partial: 1 read(s) failed: events 1")
    samples = _samples(watch)
    assert "vllm_triage_last_complete_scan_timestamp_seconds" not in samples
    # What it found is exported: an alert need not wait for every read.
    assert {s.labels["finding"] for s in samples["vllm_triage_finding"]} == {
        "cuda-oom", "gpu-memory-utilization"}


def test_ready_only_with_a_recent_complete_cycle() -> None:
    watch = _watch("gpu-east", None)
    assert watch.readiness(1795834800.0) == (False, "no complete triage cycle yet")
    watch.status.record_failure("cannot reach the Kubernetes API at https://10.0.0.1: refused",
                                1795834790.0)
    assert watch.readiness(1795834800.0)[1] == (
        "no complete triage cycle yet; the last cycle, at 2026-11-28T02:59:50Z, failed: cannot "
        "reach the Kubernetes API at https://10.0.0.1: refused")
    watch.status.record(_cycle(_report("well-sized-healthy")))  # ended 1795834800, interval 60
    assert watch.readiness(1795834800.0 + 179) == (True, "ok")
    # Every cycle after it fails: ready for three intervals, then not.
    watch.status.record_failure("401 Unauthorized", 1795834860.0)
    assert watch.readiness(1795834800.0 + 180)[0]
    ready, why = watch.readiness(1795834800.0 + 181)
    assert not ready
    assert why == ("the last complete cycle ended 181s ago, more than 3 intervals (180s); "
                   "the last cycle, at 2026-11-28T03:01:00Z, failed: 401 Unauthorized")


def test_the_findings_beside_the_pod_are_exported_like_every_other() -> None:
    """The node's GPU health, a blind autoscaler, probes under load, host memory and an
    empty InferencePool: each an open finding series with its title, proof and fix, and the
    LLMInferenceService's pods under their owner."""
    wanted = {"gpu-health-monitor": "gpu-hardware-error",
              "autoscaler-blind-keda": "autoscaler-blind",
              "probe-fails-under-load": "probe-fails-under-load",
              "host-memory-growth": "host-memory-growth",
              "inference-pool-empty": "inference-pool-empty",
              "llmisvc-storage-initializer": "model-download-failed"}
    for fixture, finding in wanted.items():
        samples = _samples(_watch("gpu-east", _report(fixture)))
        open_ = [s for s in samples["vllm_triage_finding"] if s.labels["finding"] == finding]
        assert open_ and all(set(s.labels) == FINDING_LABELS for s in open_), fixture
        assert finding in {s.labels["finding"] for s in samples["vllm_triage_finding_info"]}
        texts = [s for s in samples["vllm_triage_finding_text"]
                 if s.labels["finding"] == finding]
        assert texts and all(s.labels["proof"] and s.labels["fix"] for s in texts), fixture
        if fixture == "llmisvc-storage-initializer":
            assert {s.labels["workload"] for s in open_} == {"LLMInferenceService/llama-8b"}


def test_every_triage_series_carries_its_cluster() -> None:
    """Two clusters with the same finding id: each title series is its cluster's (a
    --patterns file may give the id another title there), and no series lacks cluster."""
    samples = _samples(_watch("gpu-east", _report("cuda-oom")),
                       _watch("gpu-west", _report("cuda-oom")))
    for name, series in samples.items():
        if name.startswith("vllm_triage_"):
            assert all(s.labels.get("cluster") for s in series), name
    info = {(s.labels["cluster"], s.labels["finding"]) for s in samples["vllm_triage_finding_info"]}
    assert ("gpu-east", "cuda-oom") in info and ("gpu-west", "cuda-oom") in info


def test_a_fix_text_is_cut_between_commands_never_inside_one() -> None:
    """A command cut short, pasted from an alert, is another command (an open quote
    swallows what follows): the text label keeps each command whole or leaves it out."""
    from triage.safety import codespans, shell
    from triage.watch.cycle import bounded_text

    command = ("kubectl --context gpu-east delete pod -n llm "
               + shell.quote("vllm-qwen-'$(reboot)'-" + "x" * 60))
    text = "Move the pod off the node " + "so its owner recreates it " * 5 \
        + f"with {codespans.code(command)}, then check the node."
    cut = bounded_text(text)
    assert len(cut) <= TEXT_LIMIT and cut.endswith(CUT)
    spans = [part for is_code, part in codespans.split(cut) if is_code]
    assert all(part == command for part in spans), spans
    assert "kubectl" not in "".join(part for is_code, part in codespans.split(cut)
                                    if not is_code)
