"""The HTML timeline's axis covers the incident: history far older than the failure (a
revision made weeks ago) is a note above it, not the start of an axis that squeezes a
45-minute incident into its last pixels."""

from __future__ import annotations

import re

from triage.report.shown import incident_window
from triage.results import PodResult, TimelineEvent
from triage.writers.html import _visuals

INCIDENT = (
    TimelineEvent("2026-11-28T02:27:00Z", "pod", "pod created"),
    TimelineEvent("2026-11-28T02:27:05Z", "start", "container started"),
    TimelineEvent("2026-11-28T02:40:00Z", "crash", "terminated: Error (exit 1)"),
    TimelineEvent("2026-11-28T02:41:00Z", "backoff", "back-off restarting (x9)",
                  until="2026-11-28T03:12:00Z", count=9),
)
REVISION = TimelineEvent("2026-11-02T10:00:00Z", "rollout", "revision 3 (this pod's)")


def _pod(timeline: tuple[TimelineEvent, ...]) -> PodResult:
    return PodResult(name="vllm-0", namespace="llm", phase="Running", state="CrashLoopBackOff",
                     restarts=9, node="gpu-node-1", owner=None, containers=("vllm",),
                     findings=(), timeline=timeline)


def test_a_revision_weeks_before_the_incident_is_history() -> None:
    history, incident = incident_window((REVISION, *INCIDENT))
    assert history == (REVISION,) and incident == INCIDENT


def test_an_incident_of_hours_stays_one_and_a_short_one_has_no_history() -> None:
    assert incident_window(INCIDENT) == ((), INCIDENT)
    slow = (TimelineEvent("2026-11-28T00:00:00Z", "pod", "pod created"),
            TimelineEvent("2026-11-28T03:10:00Z", "crash", "terminated: Error (exit 1)"))
    assert incident_window(slow) == ((), slow)  # 3 h 10 min of start: one incident


def test_the_svg_axis_spans_the_incident_and_the_history_is_a_note() -> None:
    html = "".join(_visuals(_pod((REVISION, *INCIDENT))))
    assert 'class="history">Earlier: 2026-11-02 10:00:00 UTC revision 3' in html
    # the axis is the incident's day only, and the revision is not drawn on it
    title = re.search(r'class="axis-title">time \(UTC\) ([^<]*)<', html)
    assert title is not None and title.group(1) == "2026-11-28", title
    assert "revision 3" not in html.split("<svg", 1)[1]
    # its ticks are minutes of the incident, not days
    ticks = re.findall(r'class="tick"[^>]*>([^<]*)<', html)
    assert ticks and all(re.fullmatch(r"\d\d:\d\d:\d\d", t) for t in ticks), ticks
