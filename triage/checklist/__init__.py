"""The ten-step troubleshooting checklist, each step a verdict with its evidence.

The steps and their order are the field article's ("트러블슈팅 체크리스트").
The verdict of a step comes, in this order, from:

1. no vLLM pod at all: ``unknown``;
2. the findings that feed the step (a pattern names its step): ``fail`` for
   a critical one, ``warn`` for a warning, or what its ``escalate`` rule says;
3. a rule of the step that could not be evaluated: ``unknown``, naming it;
4. the step's own unit (``triage.checklist.steps``): ``pass`` with positive
   evidence, ``n/a`` with the reason it does not apply, or ``unknown``;
5. a ``pass`` whose inputs (the step's ``needs``) could not be read
   becomes ``unknown`` naming the read.

Steps see findings, facts and read failures, never raw API objects.
"""

from __future__ import annotations

import dataclasses

from triage.checklist.base import Inputs, Step
from triage.checklist.steps import SINCE_START, STEPS, since_start
from triage.results import Finding, StepResult, Verdict
from triage.rules.evaluate import PodDiagnosis, verdict_of
from triage.rules.language import Pattern
from triage.snapshot import ReadFailure

__all__ = ["STEPS", "Inputs", "Step", "judge"]

MAX_EVIDENCE_PER_FINDING = 6


def _from_findings(step: Step, inputs: Inputs) -> StepResult | None:
    hits: list[tuple[PodDiagnosis, Finding, Verdict]] = []
    for pod in inputs.pods:
        for f in pod.findings:
            v = verdict_of(f)
            if f.step == step.number and v is not None and f.answers_step:
                hits.append((pod, f, v))
    if not hits:
        return None
    verdict = Verdict.FAIL if any(v is Verdict.FAIL for _, _, v in hits) else Verdict.WARN
    evidence: list[str] = []
    notes: dict[str, list[str]] = {}
    remediation: list[str] = []
    for pod, f, _ in hits:
        evidence.append(f"{pod.namespace}/{pod.name}: {f.id}: {f.title}")
        evidence += [f"  {e}" for e in f.evidence[:MAX_EVIDENCE_PER_FINDING]]
        if f.escalation_note:
            notes.setdefault(f.escalation_note, []).append(f"{pod.namespace}/{pod.name}")
        if f.remediation not in remediation:
            remediation.append(f.remediation)
    lead = [f"{note} on {', '.join(dict.fromkeys(where))}" for note, where in notes.items()]
    # A finding decided from one scrape's counts since the server started: say so, and
    # how to see the last minutes instead (in every format: it is the step's own line).
    tail = [SINCE_START] if any(
        since_start(ctx) and ctx.metrics_source() in " ".join(f.evidence)
        for pod, f, _ in hits for ctx in pod.contexts) else []
    return StepResult(step.number, "", verdict, tuple(lead + evidence + tail),
                      tuple(remediation))


def _unevaluated(step: Step, inputs: Inputs) -> StepResult | None:
    lines = [f"could not evaluate {u.pattern} for {pod.namespace}/{pod.name} ({u.container}): "
             f"{u.reason}"
             for pod in inputs.pods for u in pod.unevaluated if u.step == step.number]
    if not lines:
        return None
    return StepResult(step.number, "", Verdict.UNKNOWN, tuple(dict.fromkeys(lines)))


def _needs_met(step: Step, result: StepResult, inputs: Inputs) -> StepResult:
    if result.verdict is not Verdict.PASS:
        return result
    gaps = inputs.unread(*step.needs)
    if not gaps:
        return result
    return StepResult(result.step, result.title, Verdict.UNKNOWN,
                      tuple(f"could not read {g}" for g in gaps) + result.evidence,
                      result.remediation)


def judge(pods: list[PodDiagnosis], failures: list[ReadFailure],
          patterns: tuple[Pattern, ...], titles: dict[int, str],
          passed_over: list[str] | None = None) -> list[StepResult]:
    """``titles``: each step's, from patterns/checklist.yaml; ``passed_over``: crash-looping
    pods that were not selected (never an all-clear)."""
    inputs = Inputs(pods, failures, patterns)
    results = []
    for step in STEPS:
        if not pods:
            why = inputs.unread("pods") or ["no vLLM server pods were found"]
            why += [f"crash-looping, not triaged: {p}" for p in passed_over or []]
            result = StepResult(step.number, "", Verdict.UNKNOWN, tuple(why))
        else:
            result = _needs_met(step, _from_findings(step, inputs)
                                or _unevaluated(step, inputs) or step.judge(inputs), inputs)
        results.append(dataclasses.replace(result, title=titles[step.number]))
    return results
