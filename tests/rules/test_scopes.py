"""Patterns about a pod, a workload, a node or the cluster: each evaluated once on its
scope's context, checked when loaded, and a cluster cause joining pods' findings."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from triage.facts import REGISTRY, Scopes
from triage.results import Finding
from triage.rules.causes import join
from triage.rules.evaluate import Evaluator, PodDiagnosis, Truth, diagnose
from triage.rules.examples import build_cluster, run_cause_example
from triage.rules.language import CauseExample, Pattern
from triage.rules.loader import PatternError, load_patterns, parse_document, parse_pattern

LOADED = load_patterns()
CAUSES = {c.id: c for c in LOADED.causes}
SEVERITIES = {p.id: p.severity for p in LOADED.patterns}


def scoped(scope: str, when: str) -> Pattern:
    return parse_pattern(f"id: scoped\nseverity: warning\ntitle: t\nstep: 9\nremediation: r\n"
                         f"scope: {scope}\nwhen:\n{when}\n", "scoped.yaml")


def two_pods_on_one_node() -> tuple[Scopes, list[PodDiagnosis]]:
    snap = build_cluster(CauseExample("two pods", True, nodes=({"name": "gpu-a", "gpus": 4},),
                                      pods=({"name": "a", "workload": "w", "node": "gpu-a"},
                                            {"name": "b", "workload": "w", "node": "gpu-a"})))
    scopes = Scopes(snap, settings=LOADED.checklist.settings)
    return scopes, [PodDiagnosis(p, scopes.containers(p, p["spec"]["containers"]))
                    for p in snap.pods()]


@pytest.mark.parametrize("scope", ["node", "workload"])
def test_a_node_or_workload_pattern_is_evaluated_once_and_raised_on_each_pod(
        scope: str, monkeypatch: pytest.MonkeyPatch) -> None:
    fact = "node_gpu_allocatable" if scope == "node" else "rollout_revision"
    when = f"  fact: {{name: {fact}, gte: 1}}"
    pattern = scoped(scope, when)
    _, diags = two_pods_on_one_node()
    calls: list[Any] = []
    real = Evaluator.evaluate

    def counted(self: Evaluator, cond: Any, ctx: Any, diag: Any, pid: str) -> Any:
        if pid == "scoped" and cond is pattern.when:
            calls.append(type(ctx).__name__)
        return real(self, cond, ctx, diag, pid)

    monkeypatch.setattr(Evaluator, "evaluate", counted)
    for diag in diags:
        diagnose(Evaluator([]), (pattern,), diag)
    assert calls == [f"{scope.capitalize()}Context"]  # once, for both pods
    assert [[f.id for f in d.findings] for d in diags] == [["scoped"], ["scoped"]]
    assert all(d.findings[0].container == "vllm" for d in diags)


def test_a_pod_pattern_is_evaluated_once_per_pod_not_per_container() -> None:
    pattern = scoped("pod", "  pod: {field: status.phase, equals: Running}")
    scopes, diags = two_pods_on_one_node()
    pod = diags[0].pod
    pod["spec"]["containers"].append({"name": "vllm-2", "image": "vllm/vllm-openai:v0.10.1.1"})
    diag = PodDiagnosis(pod, scopes.containers(pod, pod["spec"]["containers"]))
    diagnose(Evaluator([]), (pattern,), diag)
    assert [(f.id, f.container) for f in diag.findings] == [("scoped", "vllm")]
    assert diag.findings[0].evidence == ("pod a.status.phase = 'Running'",)


@pytest.mark.parametrize(("scope", "when", "problem"), [
    ("node", "  log: {regex: 'Xid'}", "a node pattern cannot use a log leaf"),
    ("node", "  fact: {name: pod_state, equals: Pending}",
     "fact pod_state is about a pod: a node pattern reads facts about a node or cluster"),
    ("workload", "  node: {condition: DiskPressure}", "a workload pattern cannot use a node"),
    ("pod", "  container: {field: restartCount, gt: 1}", "a pod pattern cannot use a container"),
    ("pod", "  fact: {name: gpu_request, gt: 0}", "fact gpu_request is about a container"),
    ("cluster", "  fact: {name: cluster_gpus_held, gt: 0}", "a cluster pattern is a cause"),
    ("rack", "  fact: {name: gpu_request, gt: 0}", "must be one of container, pod"),
])
def test_a_scope_may_use_only_what_its_context_answers(scope: str, when: str,
                                                       problem: str) -> None:
    with pytest.raises(PatternError, match=problem):
        scoped(scope, when)


def test_a_container_pattern_reads_facts_of_every_scope_around_it() -> None:
    pattern = scoped("container", "  all:\n    - fact: {name: cluster_gpus_held, gt: 0}\n"
                     "    - fact: {name: node_gpu_allocatable, gt: 0}")
    _, diags = two_pods_on_one_node()
    diagnose(Evaluator([]), (pattern,), diags[0])
    assert [f.id for f in diags[0].findings] == ["scoped"]


# --- causes -----------------------------------------------------------------------------


@pytest.mark.parametrize("cid", sorted(CAUSES))
def test_every_cause_proves_itself_with_its_examples(cid: str) -> None:
    cause = CAUSES[cid]
    assert cause.title and cause.summary and cause.references, cid
    assert {True, False} <= {ex.reports for ex in cause.examples}, cid
    failed = [r.describe() for r in (run_cause_example(cause, ex, SEVERITIES)
                                     for ex in cause.examples) if not r.ok]
    assert not failed, "\n".join(failed)


def test_a_cause_example_that_says_the_wrong_sentence_fails() -> None:
    cause = CAUSES["gpus-held-by-crash-loops"]
    right = next(ex for ex in cause.examples if ex.says)
    wrong = CauseExample(right.name, True, right.pods, right.nodes, says="something else")
    result = run_cause_example(cause, wrong, SEVERITIES)
    assert not result.ok and "something else" in result.describe()


def test_a_cause_is_said_on_both_sides_cards_only() -> None:
    """The holders' critical findings and the waiters' wait findings carry the sentence;
    a warning of the holders, and the holders' own waiting pod, do not."""
    cause = CAUSES["gpus-held-by-crash-loops"]
    example = CauseExample("sides", True, nodes=({"name": "gpu-a", "gpus": 2},), pods=(
        {"name": "llama-1", "workload": "vllm-llama", "node": "gpu-a", "gpus": 2,
         "state": "CrashLoopBackOff", "restarts": 5},
        {"name": "qwen-1", "workload": "vllm-qwen", "gpus": 1}))
    snap = build_cluster(example)
    scopes = Scopes(snap, settings=LOADED.checklist.settings)
    llama, qwen = (PodDiagnosis(p, scopes.containers(p, p["spec"]["containers"]))
                   for p in snap.pods())

    def raise_(diag: PodDiagnosis, fid: str) -> None:
        diag.findings.append(Finding(id=fid, severity=SEVERITIES[fid], title=fid, step=1,
                                     container="vllm", evidence=(), remediation=""))
        diag.states[fid] = Truth.TRUE

    raise_(llama, "container-oomkilled")
    raise_(llama, "image-tag-latest")
    raise_(qwen, "gpu-unschedulable")
    links = join((cause,), scopes, [llama, qwen], [])
    assert [(c.workload, c.finding) for c in links] == [
        ("Deployment/vllm-llama", "container-oomkilled"),
        ("Deployment/vllm-qwen", "gpu-unschedulable")]
    assert links[0].text == links[1].text and "of Deployment/vllm-llama" in links[0].text


def test_a_cause_names_only_known_values(tmp_path: Path) -> None:
    text = (ROOT / "patterns" / "gpus-held-by-crash-loops.yaml").read_text()
    broken = text.replace("{by_workload} frees them.", "{by_owner} frees them.", 1)
    with pytest.raises(PatternError, match="unknown name 'by_owner'"):
        parse_document(broken, "x.yaml")
    with pytest.raises(PatternError, match=r"cause\.of\.pods: a pod pattern cannot use a log"):
        parse_document(text.replace("pods: {finding: [gpu-unschedulable, rollout-gpu-surge]}",
                                    "pods: {log: {regex: x}}"), "x.yaml")


def test_no_finding_id_is_written_in_the_report_model() -> None:
    """The report computes presentation; which finding is what is the patterns'."""
    ids = {p.id for p in LOADED.patterns} | set(CAUSES)
    for path in sorted((ROOT / "triage" / "report").glob("*.py")):
        literals = {n.value for n in ast.walk(ast.parse(path.read_text()))
                    if isinstance(n, ast.Constant) and isinstance(n.value, str)}
        assert not literals & ids, (path.name, sorted(literals & ids))


# --- patterns/checklist.yaml ----------------------------------------------------------


def test_the_checklist_file_titles_the_ten_steps_and_holds_the_settings() -> None:
    assert sorted(LOADED.checklist.titles) == list(range(1, 11))
    assert "0.85-0.92" in LOADED.checklist.titles[4]
    assert LOADED.checklist.settings["stats_fresh_seconds"] == 300



def test_the_stats_freshness_setting_decides_what_is_now() -> None:
    """The recent_* facts read stats_fresh_seconds: the same lines are the queue now under
    one setting and not now under a shorter one."""
    from tests.support.unit import example
    from triage.rules.examples import build

    log = ("INFO 11-28 02:57:10 [loggers.py:123] Engine 000: Avg prompt throughput: 1.0 "
           "tokens/s, Avg generation throughput: 30.0 tokens/s, Running: 4 reqs, Waiting: "
           "7 reqs, GPU KV cache usage: 91.0%, Prefix cache hit rate: 0.0%\n")
    snap, pod, container = build(example(log=log))
    for fresh, expected in ((600, 7.0), (60, None)):
        ctx, = Scopes(snap, settings={"stats_fresh_seconds": fresh}).containers(pod,
                                                                               [container])
        fact = ctx.fact("recent_requests_waiting")
        assert fact.value == expected, (fresh, fact)
    assert REGISTRY["recent_requests_waiting"].scope == "container"
