"""A generic finding (engine-died) stands back only for a more specific finding severe
enough to explain it, and generic findings never explain each other."""

from __future__ import annotations

import dataclasses

from triage.facts import ContainerContext, Scopes
from triage.results import Severity
from triage.rules.evaluate import Evaluator, PodDiagnosis, diagnose
from triage.rules.examples import build
from triage.rules.language import Example
from triage.rules.loader import load_patterns, shipped_checklist
from triage.snapshot import Obj, Snapshot


def _context(snap: Snapshot, pod: Obj, container: Obj) -> ContainerContext:
    return Scopes(snap, settings=shipped_checklist().settings).containers(pod, [container])[0]


def _diagnose(findings_raised: dict[str, Severity], example: Example) -> list[str]:
    patterns = load_patterns().patterns
    snap, pod, container = build(example)
    ctx = _context(snap, pod, container)
    diag = PodDiagnosis(pod, [ctx])
    generic = next(p for p in patterns if p.id == "engine-died")
    diagnose(Evaluator([]), (generic,), diag, findings_raised)
    return [f.id for f in diag.findings]


EXITED_0 = Example(
    name="engine died, exit 0", reports=True,
    status={"state": {"running": {"startedAt": "2026-11-28T02:40:00Z"}},
            "lastState": {"terminated": {"reason": "Completed", "exitCode": 0}},
            "restartCount": 1},
    previous_log="(APIServer pid=1) ERROR 11-28 02:39:51 [async_llm.py:430] vllm.v1.engine."
                 "exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace "
                 "(above) for the root cause.\n")


def test_a_generic_finding_stands_back_only_for_a_specific_one_severe_enough() -> None:
    assert _diagnose({}, EXITED_0) == ["engine-died"]
    assert _diagnose({"gpu-hardware-error": Severity.CRITICAL}, EXITED_0) == []
    # a warning explains nothing: the node losing GPUs does not hide a dead engine
    assert _diagnose({"gpu-hardware-error": Severity.WARNING}, EXITED_0) == ["engine-died"]


def test_generic_findings_never_explain_each_other() -> None:
    patterns = {p.id: p for p in load_patterns().patterns}
    # a second generic critical finding raised by the same lines
    other = dataclasses.replace(patterns["engine-died"], id="other-generic")
    snap, pod, container = build(EXITED_0)
    diag = PodDiagnosis(pod, [_context(snap, pod, container)])
    diag_patterns = (patterns["engine-died"], other)
    diagnose(Evaluator([]), diag_patterns, diag, {})
    assert sorted(f.id for f in diag.findings) == ["engine-died", "other-generic"]
