"""The rule engine itself: comparisons, three-valued evaluation, finding order, escalation."""

from __future__ import annotations

from typing import Any

import pytest
import regex

from tests.support.unit import context
from triage.results import Severity, Verdict
from triage.rules.evaluate import Evaluator, PodDiagnosis, Truth, compare, diagnose
from triage.rules.language import Comparison
from triage.rules.loader import PatternError, load_patterns, parse_pattern, resolve


def cmp(op: str, value: Any) -> Comparison:
    return Comparison(op, tuple(value) if isinstance(value, list) else value)


@pytest.mark.parametrize(("value", "op", "want", "expected"), [
    (0.93, "gt", 0.92, True), (0.92, "gt", 0.92, False), (0.92, "gte", 0.92, True),
    (0.84, "lt", 0.85, True), (0.85, "lt", 0.85, False), (0.85, "lte", 0.85, True),
    (0.9, "between", (0.85, 0.92), True), (0.92, "between", (0.85, 0.92), True),
    (0.93, "between", (0.85, 0.92), False),
    ("OOMKilled", "equals", "OOMKilled", True), (True, "equals", True, True),
    ("true", "equals", True, True), (1, "equals", "1", True),
    ("Error", "in", ["Error", "StartError"], True), ("x", "not_in", ["a"], True),
    (None, "gt", 1, False), (None, "exists", False, True), (0, "exists", True, True),
    ([], "exists", True, False), (None, "not_equals", "x", True),
    (float("nan"), "gt", 0, False), ("not a number", "lt", 5, False),
    (["cpu", "vllm:num_requests_waiting"], "in", ["cpu", "memory"], True),
    (["vllm:num_requests_waiting"], "in", ["cpu", "memory"], False),
    (["cpu"], "not_in", ["cpu"], False), (["gpu"], "not_in", ["cpu"], True),
])
def test_comparisons(value: Any, op: str, want: Any, expected: bool) -> None:
    assert compare(value, cmp(op, want)) is expected


def test_compare_against_another_fact() -> None:
    assert compare(60, Comparison("lt", None, fact_ref="x"), 95.0)
    assert not compare(600, Comparison("lt", None, fact_ref="x"), 95.0)
    assert not compare(60, Comparison("lt", None, fact_ref="x"), None)


def pattern(when: str, **extra: str) -> Any:
    text = ("id: under-test\nseverity: critical\ntitle: t\nstep: 2\nremediation: r\n"
            f"summary: s\nwhen:\n{when}\n")
    for key, value in extra.items():
        text += f"{key}:\n{value}\n"
    return parse_pattern(text, "under-test.yaml")


def run(p: Any, raised: dict[str, Severity] | None = None, **kw: Any) -> PodDiagnosis:
    ctx = context(**kw)
    diag = PodDiagnosis(ctx.pod, [ctx])
    diagnose(Evaluator([]), (p,), diag, raised)
    return diag


NOT_CUDA = "  not: {log: {regex: 'CUDA out of memory'}}"
ANY_LOG_OR_STATUS = """\
  any:
    - log: {regex: 'CUDA out of memory'}
    - container: {field: lastState.terminated.reason, equals: OOMKilled}"""
ALL_LOG_AND_STATUS = """\
  all:
    - log: {regex: 'CUDA out of memory'}
    - container: {field: lastState.terminated.reason, equals: Error}"""


def test_unread_log_makes_a_log_rule_unknown_not_silent() -> None:
    diag = run(pattern("  log: {regex: 'CUDA out of memory'}"), unread=["logs"],
               status={"lastState": {"terminated": {"reason": "Error", "exitCode": 1}}})
    assert diag.states["under-test"] is Truth.UNKNOWN
    assert not diag.findings
    assert diag.unevaluated and "403" in diag.unevaluated[0].reason


def test_not_keeps_unknown() -> None:
    assert run(pattern(NOT_CUDA), unread=["logs"]).states["under-test"] is Truth.UNKNOWN
    assert run(pattern(NOT_CUDA), log="all good").states["under-test"] is Truth.TRUE


def test_any_with_a_true_child_is_true_even_if_another_is_unknown() -> None:
    diag = run(pattern(ANY_LOG_OR_STATUS), unread=["logs"],
               status={"lastState": {"terminated": {"reason": "OOMKilled", "exitCode": 137}}})
    assert diag.states["under-test"] is Truth.TRUE and diag.findings


def test_all_with_a_false_child_is_false_even_if_another_is_unknown() -> None:
    diag = run(pattern(ALL_LOG_AND_STATUS), unread=["logs"])
    assert diag.states["under-test"] is Truth.FALSE and not diag.unevaluated


@pytest.mark.parametrize("engine", ["hyperscan", "python"])
def test_regex_timeout_is_unknown_and_named(monkeypatch: pytest.MonkeyPatch, engine: str) -> None:
    """A rule whose regex times out is never a silent 'no match' (issue 9), with the
    Hyperscan prefilter (the exact check times out on a candidate line) and without it
    (the regex times out on a block)."""
    if engine == "python":
        monkeypatch.setenv("VLLM_TRIAGE_NO_HYPERSCAN", "1")
    monkeypatch.setattr("triage.logs.scanning.LINE_TIMEOUT_S", 1e-6)
    monkeypatch.setattr("triage.logs.scanning.BLOCK_TIMEOUT_S", 1e-6)
    warnings: list[str] = []
    ctx = context(log=("x" * 3000 + "\n") * 50)
    diag = PodDiagnosis(ctx.pod, [ctx])
    diagnose(Evaluator(warnings), (pattern("  log: {regex: 'xxxx(?=(x+x+)+y)'}"),), diag)
    assert diag.states["under-test"] is Truth.UNKNOWN
    assert "timed out" in diag.unevaluated[0].reason
    assert "under-test" in diag.unevaluated[0].reason and "under-test" in warnings[0]


def test_display_leaves_show_values_and_never_decide() -> None:
    p = pattern("  log: {regex: 'CUDA out of memory'}",
                show="  - fact: gpu_request\n  - metric: requests_running\n"
                     "  - container: {field: restartCount}")
    diag = run(p, log="RuntimeError: CUDA out of memory. Tried to allocate 2.00 MiB",
               metrics={"requests_running": 3})
    evidence = diag.findings[0].evidence
    assert any("requests 1 GPU" in e for e in evidence)
    assert any(e.startswith("requests running 3 (") for e in evidence)  # human words
    assert any("restartCount = 0" in e for e in evidence)


def test_a_comparison_is_needed_outside_show() -> None:
    with pytest.raises(PatternError, match=r"when.fact: needs one of"):
        pattern("  fact: gpu_request")


def test_finding_leaf_and_escalation() -> None:
    p = pattern("  fact: {name: gpu_memory_utilization, gt: 0.92}",
                escalate="  when: {finding: cuda-oom}\n  verdict: fail\n  note: explains it")
    args = {"container": {"args": ["--gpu-memory-utilization", "0.98"]}}
    alone = run(p, **args).findings[0]
    assert alone.escalated is None
    with_oom = run(p, {"cuda-oom": Severity.CRITICAL}, **args).findings[0]
    assert with_oom.escalated is Verdict.FAIL and with_oom.escalation_note == "explains it"


def test_yields_to_and_fallback() -> None:
    p = pattern("  container: {field: lastState.terminated.exitCode, equals: 137}",
                yields_to="  [container-oomkilled]")
    status = {"lastState": {"terminated": {"reason": "OOMKilled", "exitCode": 137}}}
    assert run(p, status=status).findings
    assert not run(p, {"container-oomkilled": Severity.CRITICAL}, status=status).findings
    fb = pattern("  container: {field: lastState.terminated.exitCode, exists: true}",
                 fallback="  true")
    assert run(fb, status=status).findings
    assert not run(fb, {"cuda-oom": Severity.CRITICAL}, status=status).findings
    assert run(fb, {"image-tag-latest": Severity.WARNING}, status=status).findings


def test_patterns_are_ordered_after_the_findings_they_read() -> None:
    reader = parse_pattern("id: a-reader\nseverity: warning\ntitle: t\nstep: 1\n"
                           "remediation: r\nwhen: {finding: z-raised}\n", "a.yaml")
    raised = parse_pattern("id: z-raised\nseverity: warning\ntitle: t\nstep: 9\n"
                           "remediation: r\nwhen: {fact: {name: gpu_request, gte: 1}}\n", "z.yaml")
    ordered = resolve({"a-reader": reader, "z-raised": raised}).patterns
    assert [p.id for p in ordered] == ["z-raised", "a-reader"]


def test_a_cycle_of_finding_references_is_an_error() -> None:
    a = parse_pattern("id: a\nseverity: warning\ntitle: t\nstep: 1\nremediation: r\n"
                      "when: {finding: b}\n", "a.yaml")
    b = parse_pattern("id: b\nseverity: warning\ntitle: t\nstep: 1\nremediation: r\n"
                      "when: {finding: a}\n", "b.yaml")
    loaded = resolve({"a": a, "b": b})
    assert not loaded.patterns
    assert any("cycle" in str(e) for e in loaded.errors)


@pytest.mark.parametrize(("when", "where"), [
    ("  fact: {name: no_such_fact, gt: 1}", "when.fact.name"),
    ("  metric: {name: requests_waitng, gt: 1}", "when.metric.name"),
    ("  pod: {field: status.phaze, equals: Pending}", "when.pod.field"),
    ("  node: {field: 'metadata.labels[\"nvidia.com/gpu.product\"', equals: x}",
     "when.node.field"),
    ("  fact: {name: gpu_request, between: [2, 1]}", "when.fact.between"),
    ("  fact: {name: gpu_request, lt: {fact: nope}}", "when.fact.lt.fact"),
    ("  root_cause: {}", "when.root_cause"),
])
def test_names_are_checked_when_loading(when: str, where: str) -> None:
    with pytest.raises(PatternError) as err:
        pattern(when)
    assert err.value.where == where, str(err.value)


def test_bracketed_label_paths_are_read() -> None:
    p = pattern("  node: {field: 'metadata.labels[\"nvidia.com/gpu.product\"]', "
                "equals: NVIDIA-L4}")
    assert run(p).findings
    assert not run(p, node={"metadata": {"labels": {"nvidia.com/gpu.product": "Tesla-T4"}}}
                   ).findings


WARN_WHEN = """\
  any:
    - log: {regex: 'No space left on device'}
    - node: {condition: DiskPressure}"""
NEARLY_FULL = "  log: {regex: 'is over \\d+% full', levels: any}"


def test_warn_when_raises_the_same_id_as_a_warning() -> None:
    p = pattern(WARN_WHEN, warn_when=NEARLY_FULL)

    def diagnosed(**kw: Any) -> PodDiagnosis:
        ctx = context(**kw)
        diag = PodDiagnosis(ctx.pod, [ctx])
        diagnose(Evaluator([]), (p,), diag)
        return diag

    ray = "(raylet) file_system_monitor.cc:116: /tmp/ray is over 95% full, available space: 4 GB"
    mild = diagnosed(log=ray).findings
    assert [(f.id, f.severity) for f in mild] == [("under-test", Severity.WARNING)]
    assert any("over 95% full" in e for e in mild[0].evidence)
    # The critical form wins, once, with the warning's line only if show asks for it.
    both = diagnosed(log=ray + "\nOSError: [Errno 28] No space left on device").findings
    assert [(f.id, f.severity) for f in both] == [("under-test", Severity.CRITICAL)]
    assert not diagnosed(log="all good").findings
    # The critical rule unknown (node unread) does not hide the warning sign ...
    unread = diagnosed(log=ray, unread=["nodes"], pod={"spec": {"nodeName": "gone"}})
    assert [f.severity for f in unread.findings] == [Severity.WARNING]
    # ... and with neither known nor raised, the rule is unknown, not silent.
    blind = diagnosed(unread=["logs"])
    assert blind.states["under-test"] is Truth.UNKNOWN and not blind.findings


@pytest.mark.parametrize("extra", [{"severity_word": "warning"}])
def test_warn_when_only_on_a_critical_pattern(extra: dict[str, str]) -> None:
    text = ("id: under-test\nseverity: SEV\ntitle: t\nstep: 9\nremediation: r\n"
            "when: {log: {regex: x}}\nwarn_when: {log: {regex: y}}\n")
    text = text.replace("SEV", extra.get("severity_word", "critical"))
    if "fallback" in extra:
        text += "fallback: true\n"
    with pytest.raises(PatternError) as err:
        parse_pattern(text, "under-test.yaml")
    assert err.value.where == "warn_when"


def test_a_fallbacks_warning_form_comes_with_the_fallbacks() -> None:
    """crashloop-unknown (a fallback) crashed once and is Running and Ready again: its
    warning form; with a critical finding on the pod, neither form (as for the critical)."""
    text = ("id: under-test\nseverity: critical\ntitle: t\nstep: 2\nremediation: r\n"
            "fallback: true\nwhen: {log: {regex: x}}\nwarn_when: {log: {regex: y}}\n")
    assert parse_pattern(text, "under-test.yaml").warn_when is not None


CRASHED = {"state": {"waiting": {"reason": "CrashLoopBackOff"}},
           "lastState": {"terminated": {"reason": "Error", "exitCode": 1}}, "restartCount": 4}


def _root_cause_of(previous_log: str) -> tuple[str, ...]:
    crashloop = next(p for p in load_patterns().patterns if p.id == "crashloop-unknown")
    diag = run(crashloop, status=CRASHED, previous_log=previous_log)
    return diag.findings[0].evidence


def _marked(evidence: tuple[str, ...]) -> str:
    """The root-cause line: the first log line marked '>'."""
    return next(e for e in evidence if regex.search(r" line \d+> ", e))


@pytest.mark.parametrize(("log", "cause"), [
    # NCCL WARN, then the exception that only points to it (llm-d#352).
    ("[2025-10-13 09:06:25] vllm-0:3663:4044 [0] misc/ibvwrap.cc:206 NCCL WARN Call to "
     "ibv_modify_qp failed with error No such device errno 19\n"
     "vllm-0:3663:4044 [0] NCCL INFO proxy.cc:1336 -> 2\n"
     "ERROR 10-13 09:06:25 [v1/executor/multiproc_executor.py:597] RuntimeError: NCCL error: "
     "unhandled system error (run with NCCL_DEBUG=INFO for details)\n"
     "ERROR 10-13 09:06:25 [v1/executor/multiproc_executor.py:597] WorkerProc failed to start.\n",
     "NCCL WARN Call to ibv_modify_qp failed"),
    # A prefix cut in copying (vllm#20305), an hour after an older, unrelated error.
    ("ERROR 06-30 12:50:02 [utils.py:12] OSError: [Errno 2] No such file or directory: '/tmp/x'\n"
     "INFO 06-30 13:53:18 [gpu_worker.py:77] Starting to load model Qwen/Qwen3-8B...\n"
     "[multiproc_executor.py:492] ValueError: Free memory on device (31.44/47.38 GiB) on startup "
     "is less than desired GPU memory utilization (0.95, 45.01 GiB). Decrease GPU memory "
     "utilization or reduce GPU memory used by other processes.\n"
     "ERROR 06-30 13:53:19 [core.py:515] EngineCore failed to start.\n",
     "ValueError: Free memory on device"),
    # A mangled Ray prefix (ray#59778 shape).
    ("orkerWrapper pid=581, ip=10.0.0.3) RuntimeError: CUDA error: an illegal memory access "
     "was encountered\n", "RuntimeError: CUDA error: an illegal memory access"),
    # INFO lines quoting an exception name are not the cause; the wrapper is better than
    # the bare tail.
    ("(APIServer pid=1) INFO 11-28 03:05:19 [utils.py:326] non-default args: {'x': "
     "'ValueError: y'}\n(APIServer pid=1) RuntimeError: Engine core initialization failed. See "
     "root cause above. Failed core proc(s): {'EngineCore_0': 1}\n",
     "Engine core initialization failed"),
    # Without NCCL_DEBUG there is no WARN: the pointer itself is the best line.
    ("(VllmWorker rank=1 pid=412) ERROR 06-04 10:01:11 [multiproc_executor.py:470] RuntimeError: "
     "NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)\n"
     "(EngineCore_0 pid=270) ERROR 06-04 10:01:12 [core.py:700] EngineCore failed to start.\n",
     "NCCL error: unhandled cuda error"),
    # A warning only when nothing else is an error.
    ("/usr/local/lib/python3.12/dist-packages/torch/cuda/__init__.py:287: UserWarning: \n"
     "exit\n", "UserWarning:"),
])
def test_root_cause_line(log: str, cause: str) -> None:
    assert cause in _marked(_root_cause_of(log))


def test_an_owner_event_leaf_reads_the_llm_inference_services_events() -> None:
    """KServe records LLMInferenceServiceNotReady on the LLMInferenceService itself, two
    owners above the pod: `about: owner` reaches it through the Deployment."""
    from tests.facts.test_facts import LLMISVC_OBJECTS, LLMISVC_POD

    p = pattern("  log: {regex: 'GatedRepoError'}",
                show="  - event: {about: owner, type: Warning, "
                     "reason: '^LLMInferenceServiceNotReady$'}")
    event = {"reason": "LLMInferenceServiceNotReady", "type": "Warning",
             "message": "LLMInferenceService [qwen] is no longer Ready because of: "
                        "WorkloadsReady, MainWorkloadReady",
             "involvedObject": {"kind": "LLMInferenceService", "name": "qwen",
                                "namespace": "llm", "uid": "llmisvc-qwen"}}
    diag = run(p, pod=LLMISVC_POD, objects=LLMISVC_OBJECTS, events=[event],
               log="huggingface_hub.errors.GatedRepoError: 401 Client Error.")
    assert any("LLMInferenceServiceNotReady on LLMInferenceService/qwen" in e
               and "because of: WorkloadsReady" in e for e in diag.findings[0].evidence)
