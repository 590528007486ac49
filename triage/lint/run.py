"""The patterns over the pods the manifests' templates make: what a spec alone shows."""

from __future__ import annotations

from pathlib import Path

from triage import __version__
from triage.facts import ContainerContext, Scopes
from triage.lint import report as lint_report
from triage.lint.report import LintReport
from triage.lint.sourcemap import Manifests
from triage.rules.evaluate import classify
from triage.rules.loader import load_patterns
from triage.snapshot import Obj
from triage.vllm.selection import triaged_containers


def lint(manifests: Manifests, pattern_dirs: list[Path] | None = None,
         ignore: set[str] | None = None) -> LintReport:
    """The same patterns over the pods the manifests' templates make: what a spec alone
    shows. A rule that needs a running pod (logs, events, metrics, status) ends unknown
    and is not a finding; the report says which patterns applied."""
    loaded = load_patterns(pattern_dirs or [])
    snapshot = manifests.snapshot
    scopes = Scopes(snapshot, settings=loaded.checklist.settings)

    def contexts(pod: Obj) -> list[ContainerContext]:
        return scopes.containers(pod, triaged_containers(pod, None))

    pods, warnings = classify(snapshot, loaded.patterns, contexts)
    return lint_report.build(manifests, pods, loaded.patterns, ignore or set(),
                             list(snapshot.notes) + [f"pattern skipped: {e}" for e in
                                                     loaded.errors] + warnings,
                             __version__)
