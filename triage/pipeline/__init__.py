"""The flow, in one place the commands share: collect -> facts -> rules -> steps -> report.

``analyze`` turns a snapshot (from a live collector or a bundle) into the typed report
the writers render; ``exit_code`` is the exit code a report gives.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from triage import checklist
from triage.checklist.steps import settle as settle_for_steps
from triage.collect import InputError
from triage.facts import LOG_QUERIES, ContainerContext, Scopes
from triage.report import build, pod_result
from triage.results import Report, Severity, Verdict
from triage.rules.causes import facts_read, join
from triage.rules.evaluate import PodDiagnosis, classify, queries_for
from triage.rules.loader import PatternError, builtin_dir, load_patterns, shipped_checklist
from triage.snapshot import Obj, Snapshot
from triage.vllm.selection import triaged_containers


def analyze(snapshot: Snapshot, pattern_dirs: list[Path] | None = None,
            arrivals: Iterable[Obj] | None = None, settle: bool = True) -> Report:
    """The report of a snapshot. ``arrivals``, from a live collector, yields each pod
    as soon as its reads are in; its analysis starts then, while the others are read.
    ``settle``: each pod keeps, once diagnosed, only what the steps and the report read
    (the same report; False keeps everything, for the tests that compare the two)."""
    if not any(builtin_dir().glob("*.yaml")):
        # Without its patterns the tool would call every crash healthy.
        raise InputError(f"no built-in finding patterns found at {builtin_dir()}: "
                         "the installation is incomplete; reinstall vllm-triage")
    try:
        shipped_checklist()  # the step titles and the settings facts read
    except (OSError, PatternError) as exc:
        raise InputError(f"the built-in checklist.yaml cannot be read ({exc}): the "
                         "installation is incomplete; reinstall vllm-triage") from None
    loaded = load_patterns(pattern_dirs or [])
    warnings = [f"pattern skipped: {e}" for e in loaded.errors]
    # Facts of a pod, node, workload or the cluster are computed once, in their scope's
    # context; every regex of the patterns and the facts is answered by one pass over
    # each log.
    scopes = Scopes(snapshot, queries=LOG_QUERIES.merged(queries_for(loaded.patterns)),
                    settings=loaded.checklist.settings)

    def contexts(pod: Obj) -> list[ContainerContext]:
        return scopes.containers(pod, triaged_containers(pod, snapshot.selector,
                                                         snapshot.selected_by_log))

    kept_for_causes = sorted(facts_read(loaded.causes))

    def settled(diag: PodDiagnosis) -> None:
        diag.result = pod_result(snapshot, diag)
        for ctx in diag.contexts:
            settle_for_steps(ctx, kept_for_causes)
        snapshot.release_metrics(diag.namespace, diag.name)

    pods, rule_warnings = classify(snapshot, loaded.patterns, contexts, arrivals,
                                   settled if settle else None)
    causes = join(loaded.causes, scopes, pods, rule_warnings)
    steps = checklist.judge(pods, snapshot.failures, loaded.patterns, loaded.checklist.titles,
                            snapshot.passed_over)
    return build(snapshot, pods, steps, warnings + rule_warnings, causes)


def exit_code(report: Report, fail_on: str = "critical") -> int:
    """1 when something fails (--fail-on critical, the default) or, with --fail-on warning,
    also when a step is to review or a finding is a warning; else 0."""
    if report.failing:
        return 1
    if fail_on == "warning" and (report.verdict is Verdict.WARN or any(
            f.severity is Severity.WARNING for p in report.pods for f in p.findings)):
        return 1
    return 0

