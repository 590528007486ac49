"""A settled pod: once diagnosed it keeps only what the steps and the report read.

A namespace of thousands of pods holds every pod until the report is written, so
each pod drops its log scans and the facts nobody reads again as soon as its
diagnosis and its part of the report are done. The report must be the same, byte
for byte, as when nothing is dropped.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES
from triage import pipeline
from triage.checklist import steps
from triage.collect import bundle
from triage.facts import LogsSettled
from triage.rules.causes import facts_read
from triage.rules.evaluate import PodDiagnosis
from triage.rules.loader import load_patterns
from triage.writers import table, writers

# Logs with matches and context, /metrics, a Prometheus window, patches, redaction,
# several pods of a workload, a stats-lines step, an unreadable-log case.
SEVERAL = ["cuda-oom", "busy-namespace", "request-queueing", "queueing-last-15m",
           "secrets-planted", "kv-cache-too-small-v1", "probe-kill-vs-crash-while-loading",
           "rollout-gpu-surge", "healthy-noisy-logs", "oomkilled-vs-cuda-oom",
           "hpa-target-too-high", "max-model-len-unset"]


def _rendered(name: str, settle: bool) -> dict[str, str]:
    report = pipeline.analyze(bundle.load(FIXTURES / name), [], settle=settle)
    out = {fmt: render(report, False) for fmt, render in writers().items() if fmt != "table"}
    out["table"] = table.render(report, False, width=140)
    return out


@pytest.mark.parametrize("name", SEVERAL)
def test_settled_report_is_the_unsettled_one(name: str) -> None:
    settled, kept = _rendered(name, True), _rendered(name, False)
    for fmt in kept:
        assert settled[fmt] == kept[fmt], f"{name}: {fmt} differs once pods are settled"


def _diagnoses(name: str, monkeypatch: pytest.MonkeyPatch,
               settle: bool = True) -> list[PodDiagnosis]:
    seen: list[PodDiagnosis] = []
    real = pipeline.build

    def build(snapshot: Any, pods: list[PodDiagnosis], *rest: Any) -> Any:
        seen.extend(pods)
        return real(snapshot, pods, *rest)

    monkeypatch.setattr(pipeline, "build", build)
    pipeline.analyze(bundle.load(FIXTURES / name), [], settle=settle)
    return seen


def test_a_settled_pod_drops_its_log_scans_and_unread_facts(
        monkeypatch: pytest.MonkeyPatch) -> None:
    diags = _diagnoses("cuda-oom", monkeypatch)
    assert diags
    for diag in diags:
        assert diag.result is not None  # its part of the report, built while the logs were there
        assert diag.result.findings and diag.result.timeline
        for ctx in diag.contexts:
            assert ctx.settled
            assert "_logs" not in vars(ctx) and "startup" not in vars(ctx)
            with pytest.raises(LogsSettled):
                ctx.log("current")
            # Only the facts the steps read are kept, and they are all there.
            own = set(vars(ctx)["_facts"])
            assert own <= set(steps.FACTS_READ)
            assert "kv_cache_tokens" in own and "logs_read" in own
            # the pod's: the steps', and what the causes read of every pod after the last
            read_later = facts_read(load_patterns().causes)
            assert set(vars(ctx.pod_context)["_facts"]) <= set(steps.FACTS_READ) | read_later
            # What the steps still ask of a log: read or not, and the stats lines' series.
            assert ctx.logs_unread() == []
            assert "recent_stats" in ctx.memo and "stats_summary" in ctx.memo
            # /metrics: the parsed page is gone, what the steps read of it is kept.
            pod = ctx.pod_context
            assert "metrics" not in vars(pod) and "scrape" in pod.memo
            with pytest.raises(LogsSettled):
                _ = ctx.metrics


def test_a_settled_pod_keeps_what_its_metrics_said(monkeypatch: pytest.MonkeyPatch) -> None:
    diags = _diagnoses("request-queueing", monkeypatch)
    ctxs = [ctx for d in diags for ctx in d.contexts]
    assert ctxs and all(ctx.metrics_read() for ctx in ctxs)
    assert all(ctx.metric_values() for ctx in ctxs)
    # The page's text is released from the snapshot with its pod.
    assert not ctxs[0].snapshot.metrics


def test_an_unsettled_pod_keeps_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _diagnoses("cuda-oom", monkeypatch, settle=False)
    assert seen and all(d.result is None for d in seen)
    assert all(not ctx.settled and ctx.logs
               for d in seen for ctx in d.contexts)


def test_facts_read_names_every_fact_the_steps_read() -> None:
    """A step that reads a fact not in FACTS_READ would find it dropped (or its logs gone)."""
    source = Path(steps.__file__).read_text()
    body = source.split("def settle", 1)[1]
    named = set(re.findall(r"""\.(?:fact|value)\(["']([a-z0-9_]+)["']\)""", body))
    named |= set(re.findall(r"""workload_facts\(["']([a-z0-9_]+)["']\)""", body))
    assert named, "the steps read no fact: the pattern above no longer finds them"
    assert named <= set(steps.FACTS_READ), sorted(named - set(steps.FACTS_READ))


@pytest.mark.parametrize("name", ["cuda-oom", "busy-namespace", "secrets-planted",
                                  "request-queueing"])
def test_json_written_a_pod_at_a_time_is_the_one_document(name: str) -> None:
    import dataclasses
    import json

    from triage.writers import json_report

    report = pipeline.analyze(bundle.load(FIXTURES / name), [])
    for r in (report, dataclasses.replace(report, pods=())):
        whole = json.dumps(r.to_document(), indent=2, ensure_ascii=False) + "\n"
        assert "".join(json_report.chunks(r)) == whole
    assert len(list(json_report.chunks(report))) == len(report.pods) + 3
