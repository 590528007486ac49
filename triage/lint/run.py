"""The patterns over the pods the manifests' templates make: what a spec alone shows."""

from __future__ import annotations

from pathlib import Path

from triage import __version__
from triage.facts import ContainerContext, Scopes
from triage.lint import report as lint_report
from triage.lint.report import LintReport
from triage.lint.sourcemap import Manifests
from triage.rules.evaluate import (
    FALSE,
    Evaluator,
    Outcome,
    PodDiagnosis,
    Subject,
    Truth,
    classify,
    subjects,
)
from triage.rules.language import AnyOf, Condition, Pattern
from triage.rules.loader import load_patterns
from triage.snapshot import Obj
from triage.vllm.selection import triaged_containers


def lint(manifests: Manifests, pattern_dirs: list[Path] | None = None,
         ignore: set[str] | None = None) -> LintReport:
    """The same patterns over the pods the manifests' templates make: what a spec alone
    shows. A rule that needs a running pod (logs, events, metrics, status) ends unknown
    and is not a finding; the report says which patterns applied, and for one that ran
    on the spec and found nothing, what of it needs a running pod."""
    loaded = load_patterns(pattern_dirs or [])
    snapshot = manifests.snapshot
    scopes = Scopes(snapshot, settings=loaded.checklist.settings)

    def contexts(pod: Obj) -> list[ContainerContext]:
        return scopes.containers(pod, triaged_containers(pod, None))

    pods, warnings = classify(snapshot, loaded.patterns, contexts)
    static = snapshot.static or ""
    spec_decided = {(id(diag.pod), p.id): why for diag in pods for p in loaded.patterns
                    if diag.contexts and diag.states.get(p.id) is Truth.UNKNOWN
                    for why in [_ran_on_spec(p, diag, static)] if why}
    return lint_report.build(manifests, pods, loaded.patterns, ignore or set(),
                             list(snapshot.notes) + [f"pattern skipped: {e}" for e in
                                                     loaded.errors] + warnings,
                             __version__, spec_decided)


class _SpecOnly(Evaluator):
    """A condition as far as the spec decides it: a leaf that needs a running pod (its
    logs, status, events) counts as not holding, and is noted; ``branch`` says whether an
    alternative of the rule that reads the spec alone was decided."""

    def __init__(self, static: str) -> None:
        super().__init__([])
        self.static = static
        self.runtime: list[str] = []
        self.branch = False

    def alternative(self, cond: Condition, ctx: Subject, diag: PodDiagnosis,
                    pid: str) -> Outcome:
        before = len(self.runtime)
        outcome = self.evaluate(cond, ctx, diag, pid)
        if len(self.runtime) == before and outcome.truth is not Truth.UNKNOWN:
            self.branch = True
        return outcome

    def evaluate(self, cond: Condition, ctx: Subject, diag: PodDiagnosis,
                 pid: str) -> Outcome:
        if isinstance(cond, AnyOf):
            outcomes = [self.alternative(c, ctx, diag, pid) for c in cond.children]
            found = next((o for o in outcomes if o.true), None)
            return found or next((o for o in outcomes if o.truth is Truth.UNKNOWN), FALSE)
        outcome = super().evaluate(cond, ctx, diag, pid)
        if outcome.truth is Truth.UNKNOWN and self.static and self.static in outcome.reason:
            self.runtime.append(outcome.reason)
            return FALSE
        return outcome


def _ran_on_spec(pattern: Pattern, diag: PodDiagnosis, static: str) -> str:
    """For a pattern that ended unknown on a manifest's pod: what of it needs a running
    pod, when the part the spec decides ran and found nothing; "" when the spec decides
    none of it (or its spec part could not be decided either)."""
    check = _SpecOnly(static)
    for ctx, _container in subjects(pattern, diag):
        for cond in (pattern.when, pattern.warn_when):
            if cond is not None and check.alternative(cond, ctx, diag, pattern.id).truth \
                    is not Truth.FALSE:
                return ""
    return check.runtime[0] if check.branch and check.runtime else ""
