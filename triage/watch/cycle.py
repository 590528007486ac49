"""One cluster's triage loop: a scan every interval, sooner when a vLLM pod changes.

A cycle is exactly a ``scan``: the same reads through the same collector,
the same pipeline. Its result replaces the previous one only when it is
complete; a cycle that fails (the API server unreachable, the credentials
refused) keeps the last good report, and the failure is said in the report's
warnings, in /metrics and on /readyz. Nothing grows with the number of
cycles: each keeps one report, a few counters and the watch's pod states.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from triage.redact import redact_text
from triage.results import Report
from triage.sanitize import sanitize

if TYPE_CHECKING:
    from triage.collect.live import LiveCollector
    from triage.collect.podwatch import PodWatcher


@dataclass(frozen=True)
class CycleResult:
    """A complete cycle: the report, its JSON document and what the metrics need."""

    report: Report
    document: dict[str, Any]
    failed_reads: dict[str, int]  # read kind -> failures in this cycle
    pods: int
    duration: float  # seconds
    finished_at: float  # unix time


@dataclass
class ClusterStatus:
    """Everything /metrics and /readyz say about one cluster, replaced whole per cycle."""

    name: str
    last_good: CycleResult | None = None
    last_error: str = ""
    last_error_at: float = 0.0
    last_cycle_ok: bool = False
    cycles: Counter[str] = field(default_factory=Counter)  # "ok" / "failed"
    reasons: Counter[str] = field(default_factory=Counter)  # why cycles ran


def _utc(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).replace(microsecond=0).isoformat().replace(
        "+00:00", "Z")


class ClusterWatch:
    """Re-triage one cluster every ``interval`` seconds, and at most ``min_gap``
    seconds after a vLLM pod's restart count or readiness changed."""

    def __init__(self, name: str, make_collector: Callable[[], LiveCollector],
                 patterns: list[Path], interval: float, min_gap: float = 5.0,
                 watcher_factory: Callable[[LiveCollector, Callable[[str], None]],
                                           PodWatcher | None] | None = None) -> None:
        self.status = ClusterStatus(name)
        self.make_collector = make_collector
        self.patterns = patterns
        self.interval = interval
        self.min_gap = min(min_gap, interval)
        self.watcher_factory = watcher_factory
        self.watcher: PodWatcher | None = None
        self._wake = threading.Event()
        self._reason = "interval"
        self._lock = threading.Lock()

    def poke(self, why: str) -> None:
        """Ask for a cycle now (the pod watch saw a restart or a readiness change)."""
        with self._lock:
            self._reason = "pod-change"
        self._wake.set()

    def run_once(self) -> None:
        """One cycle; never raises (short of an interrupt): a failure is recorded."""
        from triage import pipeline

        started, wall = time.monotonic(), time.time()
        try:
            collector = self.make_collector()
            snap = collector.begin()
            with collector.reading(snap) as arrivals:
                report = pipeline.analyze(snap, self.patterns, arrivals)
            failed = Counter(f.kind for f in snap.failures)
            pods = snap.pods()
            if self.watcher is None and self.watcher_factory is not None:
                self.watcher = self.watcher_factory(collector, self.poke)
                if self.watcher is not None:
                    self.watcher.start()
            if self.watcher is not None:
                self.watcher.rebase(collector.pods_version, pods)
            result = CycleResult(report, report.to_document(), dict(failed), len(pods),
                                 time.monotonic() - started, time.time())
            self.status.last_good = result
            self.status.last_cycle_ok = True
            self.status.cycles["ok"] += 1
        except Exception as exc:
            self.status.last_cycle_ok = False
            # A server's words: made safe and masked before any report or page shows them.
            text = " ".join(str(exc).split())[:500] or exc.__class__.__name__
            self.status.last_error = redact_text(sanitize(text))
            self.status.last_error_at = wall
            self.status.cycles["failed"] += 1

    def served_report(self) -> Report | None:
        """The last good report; after a failed cycle, saying so first in its warnings."""
        good = self.status.last_good
        if good is None:
            return None
        if self.status.last_cycle_ok:
            return good.report
        note = (f"watch: the cycle at {_utc(self.status.last_error_at)} failed "
                f"({self.status.last_error}); this is the report of the last complete cycle, "
                f"at {_utc(good.finished_at)}")
        return dataclasses.replace(good.report, warnings=(note, *good.report.warnings))

    def loop(self, stop: threading.Event) -> None:
        last_start = 0.0
        while not stop.is_set():
            with self._lock:
                reason, self._reason = self._reason, "interval"
            self.status.reasons[reason] += 1
            last_start = time.monotonic()
            self._wake.clear()
            self.run_once()
            # Sleep to the next interval, or until a pod changes (but not sooner
            # than min_gap after this cycle began: a crash loop is not a busy loop).
            deadline = last_start + self.interval
            while not stop.is_set():
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                if self._wake.wait(min(left, 1.0)) and not stop.is_set():
                    gap = last_start + self.min_gap - time.monotonic()
                    if gap > 0:
                        stop.wait(gap)
                    break
        if self.watcher is not None:
            self.watcher.stop()
