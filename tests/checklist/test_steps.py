"""Each checklist step on its own: pass with evidence, n/a with a reason, unknown naming
what is missing, and fail / warn from the findings that feed it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.unit import OWNED_POD, deployment_objects, example, hpa
from triage import checklist
from triage.checklist import STEPS
from triage.facts import Scopes
from triage.results import Finding, Severity, StepResult, Unevaluated, Verdict
from triage.rules.evaluate import PodDiagnosis
from triage.rules.examples import build, given_metrics
from triage.rules.loader import load_patterns
from triage.snapshot import ReadFailure

LOADED = load_patterns()
PATTERNS, TITLES = LOADED.patterns, LOADED.checklist.titles


def judge(findings: tuple[Finding, ...] = (), unevaluated: tuple[Unevaluated, ...] = (),
          failures: tuple[ReadFailure, ...] = (), **kw: Any) -> dict[int, StepResult]:
    ex = example(**kw)
    snap, pod, container = build(ex)
    scopes = Scopes(snap, settings=LOADED.checklist.settings, given_metrics=given_metrics(ex))
    diag = PodDiagnosis(pod, scopes.containers(pod, [container]), list(findings), {},
                        list(unevaluated))
    results = checklist.judge([diag], [*snap.failures, *failures], PATTERNS, TITLES)
    return {r.step: r for r in results}


def finding(step: int, severity: Severity = Severity.CRITICAL, **kw: Any) -> Finding:
    return Finding(**{"id": "x-finding", "severity": severity, "title": "a finding",
                      "step": step, "container": "vllm", "evidence": ("line 1",),
                      "remediation": "do this", **kw})


V1_LOG = """\
(APIServer pid=1) INFO 11-28 02:40:01 [api_server.py:1805] vLLM API server version 0.10.1.1
(EngineCore_0 pid=270) INFO 11-28 02:40:31 [kv_cache_utils.py:849] GPU KV cache size: 44,416 tokens
(EngineCore_0 pid=270) INFO 11-28 02:40:31 [kv_cache_utils.py:853] Maximum concurrency for 8,192 tokens per request: 5.42x
(APIServer pid=1) INFO 11-28 02:41:36 [api_server.py:1880] Starting vLLM API server 0 on http://0.0.0.0:8000
"""
METRICS = {"requests_running": 3, "requests_waiting": 0, "kv_cache_usage": 0.41,
           "e2e_latency_p50": 1.9, "e2e_latency_p99": 4.2, "e2e_latency_count": 500}


def test_the_steps_are_the_articles_ten_in_order() -> None:
    assert [s.number for s in STEPS] == list(range(1, 11))
    assert sorted(TITLES) == list(range(1, 11)) and all(TITLES.values())
    assert [r.title for r in judge().values()] == [TITLES[n] for n in range(1, 11)]


@pytest.mark.parametrize("step", range(1, 11))
def test_a_critical_finding_fails_its_step_with_its_evidence_and_remedy(step: int) -> None:
    result = judge((finding(step),), log=V1_LOG)[step]
    assert result.verdict is Verdict.FAIL
    assert "llm/vllm-0: x-finding: a finding" in result.evidence
    assert "  line 1" in result.evidence and result.remediation == ("do this",)


@pytest.mark.parametrize("step", range(1, 11))
def test_a_warning_warns_and_a_fallback_decides_nothing(step: int) -> None:
    assert judge((finding(step, Severity.WARNING),), log=V1_LOG)[step].verdict is Verdict.WARN
    result = judge((finding(step, fallback=True),), log=V1_LOG)[step]
    assert result.verdict not in (Verdict.FAIL, Verdict.WARN)


def test_escalation_fails_the_step_and_says_why_first() -> None:
    f = finding(4, Severity.WARNING, escalated=Verdict.FAIL, escalation_note="it explains it")
    result = judge((f,))[4]
    assert result.verdict is Verdict.FAIL
    assert result.evidence[0] == "it explains it on llm/vllm-0"


@pytest.mark.parametrize("step", range(1, 11))
def test_a_rule_that_could_not_be_evaluated_makes_its_step_unknown(step: int) -> None:
    u = Unevaluated("some-rule", step, "vllm", "403 Forbidden")
    result = judge(unevaluated=(u,), log=V1_LOG, metrics=METRICS)[step]
    assert result.verdict is Verdict.UNKNOWN
    assert "could not evaluate some-rule for llm/vllm-0 (vllm): 403 Forbidden" in result.evidence


def test_no_pod_means_unknown_everywhere() -> None:
    for r in checklist.judge([], [], PATTERNS, TITLES):
        assert r.verdict is Verdict.UNKNOWN and r.evidence == ("no vLLM server pods were found",)


def test_step1_passes_naming_the_last_termination_and_limit() -> None:
    result = judge(status={"lastState": {"terminated": {"reason": "Error", "exitCode": 1}}})[1]
    assert result.verdict is Verdict.PASS
    assert "last termination Error (exit 1)" in result.evidence[0]
    assert "memory limit 32Gi" in result.evidence[0]


def test_step2_pass_na_and_unknown() -> None:
    ok = judge(log=V1_LOG)[2]
    assert ok.verdict is Verdict.PASS and "current log (4 lines)" in ok.evidence[0]
    waiting = {"state": {"waiting": {"reason": "ContainerCreating"}}}
    assert judge(status=waiting)[2].verdict is Verdict.NA
    crashed = {"lastState": {"terminated": {"reason": "Error", "exitCode": 1}}}
    unread = judge(status=crashed, unread=["logs"])[2]
    assert unread.verdict is Verdict.UNKNOWN and "previous and current log not read" in \
        unread.evidence[0]


def test_step3_needs_the_capacity_line() -> None:
    assert judge(log=V1_LOG)[3].verdict is Verdict.PASS
    assert judge(log="nothing")[3].verdict is Verdict.UNKNOWN


def test_step4_passes_on_the_value_and_is_unknown_when_the_config_was_not_read() -> None:
    ok = judge(container={"args": ["--gpu-memory-utilization", "0.95"]})[4]
    assert ok.verdict is Verdict.PASS and "--gpu-memory-utilization=0.95" in ok.evidence[0]
    cfg = judge(container={"args": ["--config", "/etc/vllm/c.yaml"],
                           "volumeMounts": [{"name": "cfg", "mountPath": "/etc/vllm"}]},
                pod={"spec": {"volumes": [{"name": "cfg", "configMap": {"name": "c"}}]}},
                unread=["configmaps"])[4]
    assert cfg.verdict is Verdict.UNKNOWN
    assert "--config /etc/vllm/c.yaml was not read" in cfg.evidence[0]


def test_step5_latency_from_metrics_or_why_not() -> None:
    ok = judge(metrics=METRICS)[5]
    assert ok.verdict is Verdict.PASS and "e2e P50 1.9s P99 4.2s" in ok.evidence[0]
    crashed = {"state": {"waiting": {"reason": "CrashLoopBackOff"}}}
    down = judge(status=crashed)[5]
    assert down.verdict is Verdict.UNKNOWN and "not running (CrashLoopBackOff)" in \
        down.evidence[0]
    assert "403" in judge(unread=["metrics"])[5].evidence[0]


def test_step6_evidence_and_needs_events() -> None:
    ok = judge(log=V1_LOG, container={"startupProbe": {"httpGet": {"path": "/health"},
                                                       "failureThreshold": 60}})[6]
    assert ok.verdict is Verdict.PASS
    # One fact per line: the load time, then each probe.
    assert "vLLM started in 95s" in ok.evidence[0] and "startupProbe" not in ok.evidence[0]
    assert "startupProbe allows about 600s" in ok.evidence[1]
    gap = judge(log=V1_LOG, unread=["events"])[6]
    assert gap.verdict is Verdict.UNKNOWN and gap.evidence[0].startswith("could not read events")


def test_step6_shows_the_image_pull_before_the_start() -> None:
    pulled = {"reason": "Pulled", "type": "Normal",
              "message": 'Successfully pulled image "vllm/vllm-openai:v0.10.1.1" in 3m12.456s '
                         '(3m12.456s including waiting). Image size: 10218341220 bytes.'}
    step = judge(log=V1_LOG, events=[pulled])[6]
    pull = next(e for e in step.evidence if "image pulled" in e)
    assert "image pulled in 3m12s" in pull and "pull plus start-up 287s until ready" in pull
    assert "vLLM started in 95s" not in pull  # its own line
    present = dict(pulled, message='Container image "vllm/vllm-openai:v0.10.1.1" already '
                                   'present on machine')
    assert not any("pulled" in e for e in judge(log=V1_LOG, events=[present])[6].evidence)


LOADING_LOG = """(APIServer pid=1) INFO 11-28 02:40:01 [api_server.py:1805] vLLM API server version 0.10.1.1
(EngineCore_0 pid=270) INFO 11-28 02:40:21 [gpu_model_runner.py:1953] Model loading took 15.2 GiB and 18.1 seconds
"""


def test_step6_is_unknown_when_the_load_time_is_not_known_and_a_probe_can_kill_it() -> None:
    """Issue 17: no completed start-up in the logs and a startupProbe or livenessProbe that
    restarts the container: whether the probe waits for the load is not known, not a pass.
    Without such a probe (readiness only restarts nothing) nothing can kill the load."""
    probe = {"startupProbe": {"httpGet": {"path": "/health"}, "failureThreshold": 60}}
    step = judge(log=LOADING_LOG, container=probe)[6]
    assert step.verdict is Verdict.UNKNOWN, step
    assert "the model load time is not known (no completed start-up in the logs read)" in \
        step.evidence[0] and "startupProbe's 600s" in step.evidence[0], step.evidence
    live = judge(log=LOADING_LOG, container={"livenessProbe": {"httpGet": {"path": "/health"},
                                                              "periodSeconds": 10}})[6]
    assert live.verdict is Verdict.UNKNOWN and "livenessProbe's 30s" in live.evidence[0]
    ready = judge(log=LOADING_LOG, container={"readinessProbe": {"httpGet": {"path": "/health"}}})
    assert ready[6].verdict is Verdict.PASS, ready[6]


def test_step3_one_fact_per_line() -> None:
    step = judge(log=V1_LOG, container={"args": ["--model", "Qwen/Qwen3-8B", "--max-model-len",
                                              "8192"]})[3]
    assert step.verdict is Verdict.PASS
    assert len(step.evidence) == 3, step.evidence
    assert "--max-model-len=8192" in step.evidence[0] and ";" not in step.evidence[0]
    assert "44,416 tokens" in step.evidence[1] and "Maximum concurrency" in step.evidence[2]


def test_step7_and_8_without_an_autoscaler() -> None:
    steps = judge(pod=OWNED_POD, objects=deployment_objects(), metrics=METRICS)
    assert steps[7].verdict is Verdict.NA
    assert steps[8].verdict is Verdict.PASS
    assert steps[8].evidence == ("Deployment vllm-qwen: replicas 1, no autoscaler: no scale to "
                                 "zero",)


def test_step7_and_8_with_an_hpa() -> None:
    objects = {**deployment_objects(), "horizontalpodautoscalers": [hpa()]}
    steps = judge(pod=OWNED_POD, objects=objects, metrics=METRICS)
    assert steps[7].verdict is Verdict.PASS
    assert steps[7].evidence[0].startswith("HPA vllm-qwen -> Deployment/vllm-qwen")
    assert "3 running, 0 waiting, KV cache usage 41%" in steps[7].evidence[1]
    assert steps[8].verdict is Verdict.PASS


def test_step7_reads_the_predictor_annotations_of_an_inference_service() -> None:
    isvc = {"metadata": {"name": "qwen-chat", "namespace": "llm"},
            "spec": {"predictor": {"annotations": {"autoscaling.knative.dev/target": "4"}}}}
    steps = judge(pod={"metadata": {"labels": {"serving.kserve.io/inferenceservice":
                                                   "qwen-chat"}}},
                  objects={"inferenceservices": [isvc]}, metrics=METRICS)
    assert "InferenceService qwen-chat: target=4" in steps[7].evidence


def test_step9_names_the_node_condition_and_what_it_checked() -> None:
    result = judge()[9]
    assert result.verdict is Verdict.PASS
    assert result.evidence[0] == "node gpu-node-1: DiskPressure=False"
    assert "disk-full" in result.evidence[-1] and "model-cache-missing" in result.evidence[-1]
    assert judge(unread=["nodes"])[9].verdict is Verdict.UNKNOWN


def test_step10_only_looks_at_the_workloads_of_triaged_pods() -> None:
    objects = deployment_objects()
    objects["deployments"].append({"metadata": {"name": "redis", "namespace": "llm",
                                                "annotations": {
                                                    "deployment.kubernetes.io/revision": "7"}}})
    objects["replicasets"].append({"metadata": {"name": "redis-1", "namespace": "llm",
                                                "ownerReferences": [{"kind": "Deployment",
                                                                     "name": "redis",
                                                                     "controller": True}]}})
    result = judge(pod=OWNED_POD, objects=objects)[10]
    assert result.verdict is Verdict.PASS
    assert "Deployment vllm-qwen: revision 2, 2 ReplicaSet(s) read" in result.evidence
    assert not any("redis" in e for e in result.evidence)
    assert judge()[10].verdict is Verdict.UNKNOWN


BUSY = ("(APIServer pid=1) INFO 11-28 {} [loggers.py:123] Engine 000: Avg prompt throughput: "
        "1840.3 tokens/s, Avg generation throughput: 412.6 tokens/s, Running: 14 reqs, "
        "Waiting: 0 reqs, GPU KV cache usage: 21.4%, Prefix cache hit rate: 38.2%")


def test_step7_without_metrics_is_judged_from_fresh_stats_lines_only() -> None:
    """An HPA, no /metrics read: vLLM's stats lines of the last minutes say whether requests
    queue now (request-queueing reads them), so step 7 passes saying so; lines 40 minutes
    old say nothing of now: unknown, as without any."""
    objects = {**deployment_objects(), "horizontalpodautoscalers": [hpa()]}
    fresh = judge(pod=OWNED_POD, objects=objects,
                  log=BUSY.format("02:58:05") + "\n" + BUSY.format("02:58:15"))
    assert fresh[7].verdict is Verdict.PASS, fresh[7].evidence
    assert any("now (" in e and "waiting 0, 0" in e for e in fresh[7].evidence), fresh[7]
    assert any(e.startswith("judged from vLLM's stats lines: ") for e in fresh[7].evidence)
    stale = judge(pod=OWNED_POD, objects=objects, log=BUSY.format("02:18:05"))
    assert stale[7].verdict is Verdict.UNKNOWN, stale[7].evidence
    none = judge(pod=OWNED_POD, objects=objects)
    assert none[7].verdict is Verdict.UNKNOWN
