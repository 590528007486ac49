"""What a checklist step is, and what it may look at."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from triage.facts import ContainerContext, Fact
from triage.results import StepResult, Verdict
from triage.rules.evaluate import PodDiagnosis
from triage.rules.language import Pattern
from triage.snapshot import ReadFailure


@dataclass(frozen=True)
class Inputs:
    """Findings, facts (through the containers' contexts) and the reads that failed."""

    pods: list[PodDiagnosis]
    failures: list[ReadFailure]
    patterns: tuple[Pattern, ...]

    def containers(self) -> Iterator[tuple[PodDiagnosis, ContainerContext]]:
        for pod in self.pods:
            for ctx in pod.contexts:
                yield pod, ctx

    def unread(self, *kinds: str) -> list[str]:
        return [str(f) for f in self.failures if f.kind in kinds]

    def fed_by(self, step: int) -> list[str]:
        """The ids of the patterns that decide a step (not those shown beside it)."""
        return [p.id for p in self.patterns if p.step == step and p.answers_step]

    def workload_facts(self, name: str) -> list[Fact]:
        """A workload-scoped fact once per workload that runs a triaged pod."""
        seen: dict[tuple[str, ...], Fact] = {}
        for _, ctx in self.containers():
            seen.setdefault(ctx.workload_key, ctx.fact(name))
        return list(seen.values())


def label(pod: PodDiagnosis, ctx: ContainerContext | None = None) -> str:
    return f"{pod.namespace}/{pod.name}" + (f" ({ctx.label})" if ctx is not None else "")


class Step:
    """One checklist step: its number, what it must read, how it passes. What it is called
    is data (patterns/checklist.yaml): ``judge`` in triage.checklist gives the title."""

    number: int
    # Read kinds without which a pass is not a pass (logs, events, nodes, ...).
    needs: tuple[str, ...] = ()

    def judge(self, inputs: Inputs) -> StepResult:
        """The verdict when no finding fed the step: pass, n/a or unknown, with evidence."""
        raise NotImplementedError

    def result(self, verdict: Verdict, evidence: list[str]) -> StepResult:
        return StepResult(self.number, "", verdict, tuple(evidence))
