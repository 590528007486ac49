"""What every writer shows the same way, computed once from the report: the
findings beside each checklist step and the remedies in the order to read them."""

from __future__ import annotations

from dataclasses import dataclass

from triage.results import BesideFinding, Report, Verdict


@dataclass(frozen=True)
class Remedy:
    heading: str  # "Step 2. CUDA out of memory in vLLM logs (GPU)" or "port-in-use: ..."
    verdict: Verdict
    texts: tuple[str, ...]


def beside_of(report: Report, step: int) -> list[BesideFinding]:
    """The rows shown beside a step: findings that are not what it asks about."""
    return [b for b in report.beside if b.step == step]


def pods_label(pods: tuple[str, ...], limit: int = 3) -> str:
    """'llm/a, llm/b and 4 more pods'."""
    shown = ", ".join(pods[:limit])
    return shown + (f" and {len(pods) - limit} more pods" if len(pods) > limit else "")


def remedies(report: Report) -> list[Remedy]:
    """Failing and warning steps, each followed by the findings beside it, in step order."""
    out: list[Remedy] = []
    for s in report.checklist:
        if s.verdict in (Verdict.FAIL, Verdict.WARN) and s.remediation:
            out.append(Remedy(f"Step {s.step}. {s.title}", s.verdict, s.remediation))
        for b in beside_of(report, s.step):
            if b.remediation and b.verdict in (Verdict.FAIL, Verdict.WARN):
                out.append(Remedy(f"{b.id}: {b.title}", b.verdict, (b.remediation,)))
    return out
