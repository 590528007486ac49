"""The table without noise: a fact shown once per pod, the proving line always shown
however late it comes, a timeline that keeps vLLM's milestones, folds and cuts at words,
and time ranges within a day that say the date once."""

from __future__ import annotations

from triage.results import (
    Finding,
    PodResult,
    Report,
    Severity,
    StepResult,
    TimelineEvent,
    Verdict,
)
from triage.writers import table


def _report(findings: tuple[Finding, ...], timeline: tuple[TimelineEvent, ...] = ()
            ) -> Report:
    pod = PodResult(name="vllm-0", namespace="llm", phase="Running", state="CrashLoopBackOff",
                    restarts=3, node="n1", owner="Deployment/vllm", containers=("vllm",),
                    findings=findings, timeline=timeline)
    steps = tuple(StepResult(i, f"step {i}", Verdict.PASS, ("fine",)) for i in range(1, 11))
    return Report(tool_version="t", generated_at="2026-11-28T03:12:09Z", context="c",
                  namespace="llm", selector=None, verdict=Verdict.FAIL, summary="s",
                  pods=(pod,), checklist=steps)


def test_the_proving_line_is_shown_however_late_it_comes() -> None:
    lines = tuple(f"previous log (vllm) line {n}  context {n}" for n in range(1, 15))
    proving = "previous log (vllm) line 15> RuntimeError: the real cause"
    f = Finding("x-failed", Severity.CRITICAL, "X failed", 2, "vllm", (*lines, proving), "fix")
    text = table.render(_report((f,)), width=120)
    assert "15> RuntimeError: the real cause" in text
    more = [line for line in text.splitlines() if "more" in line]
    assert more and all("-o json" in line for line in more), more


def test_a_fact_shown_once_per_pod() -> None:
    shared = "container vllm: --gpu-memory-utilization=0.98 (set in args)"
    top = Finding("cuda-oom", Severity.CRITICAL, "OOM", 2, "vllm",
                  ("previous log (vllm) line 9> torch.OutOfMemoryError: CUDA out of memory",
                   shared), "fix")
    also = Finding("gpu-memory-utilization", Severity.WARNING, "GMU", 4, "vllm", (shared,), "f")
    text = table.render(_report((top, also)), width=120)
    assert text.count("--gpu-memory-utilization=0.98") == 1


def test_timeline_keeps_milestones_folds_and_cuts_at_words() -> None:
    events = [TimelineEvent("2026-11-28T02:31:44Z", "pod", "pod created"),
              TimelineEvent("2026-11-28T02:31:44Z", "pod", "scheduled"),
              TimelineEvent("2026-11-28T02:31:44Z", "rollout", "revision 3 (this pod's)")]
    events += [TimelineEvent(f"2026-11-28T02:{40 + i}:00Z", "image", "image pulled")
               for i in range(6)]
    events += [TimelineEvent("2026-11-28T02:31:45Z", "image", "image pulled (x7)",
                             until="2026-11-28T03:05:11Z", count=7)]
    milestones = ["vLLM log starts", "weights loaded (15.3 GiB)", "KV cache sized: 35,456 tokens",
                  "still loading: Capturing CUDA graph shapes", "ready: serving"]
    events += [TimelineEvent(f"2026-11-28T03:0{i}:00Z", "milestone", label)
               for i, label in enumerate(milestones)]
    long = ("error: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 160.00 MiB "
            "while capturing graphs for the decoder layers of the model")
    events += [TimelineEvent("2026-11-28T03:06:57Z", "error", long),
               TimelineEvent("2026-11-28T03:06:58Z", "crash", "terminated: Error (exit 1)")]
    f = Finding("cuda-oom", Severity.CRITICAL, "OOM", 2, "vllm", ("x",), "fix")
    text = table.render(_report((f,), tuple(sorted(events, key=lambda e: e.at))), width=80)
    for label in milestones:
        assert label in text
    assert "terminated: Error (exit 1)" in text
    assert "earlier or routine row(s): -o html or -o markdown" in text
    row = next(line for line in text.splitlines() if "torch.OutOfMemoryError" in line)
    shown = row.strip("│ ").split(" ", 1)[1].strip()
    assert shown.endswith("…")
    assert long.startswith(shown[:-1]) and long[len(shown) - 1] == " "  # cut at a word


def test_ranges_within_a_day_say_the_date_once() -> None:
    events = (TimelineEvent("2026-11-27T21:40:00Z", "pod", "pod created"),
              TimelineEvent("2026-11-28T02:31:45Z", "backoff", "back-off restarting (x7)",
                            until="2026-11-28T03:05:11Z", count=7))
    f = Finding("cuda-oom", Severity.CRITICAL, "OOM", 2, "vllm", ("x",), "fix")
    text = table.render(_report((f,), events), width=100)
    assert "11-28 02:31:45-03:05:11 back-off restarting (x7)" in text
