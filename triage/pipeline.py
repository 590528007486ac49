"""collect -> classify -> judge -> render, in one place the commands share."""

from __future__ import annotations

from pathlib import Path

from triage import checklist
from triage.classify import classify
from triage.collect import InputError
from triage.patterns import builtin_dir, load_patterns
from triage.report import Report, build
from triage.snapshot import Snapshot


def analyze(snapshot: Snapshot, pattern_dirs: list[Path] | None = None) -> Report:
    if not any(builtin_dir().glob("*.yaml")):
        # Without its patterns the tool would call every crash healthy.
        raise InputError(f"no built-in finding patterns found at {builtin_dir()}: "
                         "the installation is incomplete; reinstall vllm-triage")
    loaded = load_patterns(pattern_dirs or [])
    warnings = [f"pattern skipped: {e}" for e in loaded.errors]
    classification = classify(snapshot, loaded.patterns)
    steps = checklist.judge(snapshot, classification)
    return build(snapshot, classification, steps, warnings)


def exit_code(report: Report) -> int:
    return 1 if report["verdict"] == "fail" else 0
