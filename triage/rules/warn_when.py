"""The milder form of a critical finding: ``warn_when`` raises the same id as a warning.

A finding id is a public contract, so a critical finding cannot spawn a
second id for its early sign. ``disk-full`` is critical when a write failed,
a pod was evicted or the node reports DiskPressure; Ray's "is over 95% full"
on its own is the same finding as a warning. This pass runs after all the
patterns (``triage.rules.evaluate.diagnose``): for a pattern whose ``when``
did not hold, ``warn_when`` is evaluated, and if it holds the finding is
raised with severity warning, its ``show`` evidence included, so its step
says ``warn``. Patterns that refer to the finding with a ``finding`` leaf
see only its critical form, and ``escalate`` does not apply to the warning.
"""

from __future__ import annotations

from triage.results import Finding, Severity, Unevaluated
from triage.rules.evaluate import Evaluator, PodDiagnosis, Truth
from triage.rules.language import Pattern


def apply_warn_when(evaluator: Evaluator, patterns: tuple[Pattern, ...],
                    diag: PodDiagnosis) -> None:
    """Raise the warning form of each critical pattern that did not fire on this pod."""
    raised = {f.id for f in diag.findings}
    changed = False
    for pattern in patterns:
        if pattern.warn_when is None or diag.states.get(pattern.id) is Truth.TRUE:
            continue
        if pattern.id in raised or set(pattern.yields_to) & raised:
            continue
        for ctx in diag.contexts:
            outcome = evaluator.evaluate(pattern.warn_when, ctx, diag, pattern.id)
            if outcome.truth is Truth.UNKNOWN:
                if diag.states.get(pattern.id, Truth.FALSE) is Truth.FALSE:
                    diag.unevaluated.append(Unevaluated(pattern.id, pattern.step, ctx.name,
                                                        outcome.reason))
                    diag.states[pattern.id] = Truth.UNKNOWN
                continue
            if not outcome.true:
                continue
            evidence = list(outcome.evidence)
            for extra in pattern.show:
                shown = evaluator.evaluate(extra, ctx, diag, pattern.id)
                if shown.true:
                    evidence += [e for e in shown.evidence if e not in evidence]
            diag.findings.append(Finding(
                id=pattern.id, severity=Severity.WARNING, title=pattern.title,
                step=pattern.step, container=ctx.name, evidence=tuple(evidence),
                remediation=pattern.remediation))
            diag.states[pattern.id] = Truth.TRUE
            raised.add(pattern.id)
            changed = True
            break  # one finding per pod, as for the critical form's first container
    if changed:
        diag.findings.sort(key=lambda f: (f.severity.rank, f.step))
