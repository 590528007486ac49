"""One cluster's triage loop: a scan every interval, sooner when a vLLM pod changes.

A cycle is exactly a ``scan``: the same reads through the same collector,
the same pipeline. It ends one of three ways:

- complete: every read answered. Its report becomes the served one
  (/report, /report.json), and the last-complete-scan time moves.
- partial: it ran to its end but some reads failed (403, a timeout, a dead
  pod's proxy). The served report stays the last complete one, saying first
  that a later cycle was partial and what it could not read. The findings in
  /metrics move only where the partial cycle decided them: a finding it
  raised is exported, one whose rule it could not evaluate on that pod (its
  input was not read) is kept as the last cycle had it, never cleared by a
  read that failed.
- failed: nothing could be triaged (the API server unreachable, the
  credentials refused, the pod list unreadable). Everything stays as it was;
  the failure is said in the report's warnings, in /metrics and on /readyz.

Nothing grows with the number of cycles: each keeps one report, a few
counters, the open findings (one entry per pod and finding) and the watch's
pod states.
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

import regex

from triage.results import Finding, PodResult, Report, Severity
from triage.safety import codespans
from triage.safety.redact import redact_text
from triage.safety.sanitize import sanitize

if TYPE_CHECKING:
    from triage.collect.live import LiveCollector
    from triage.collect.live.podwatch import PodWatcher

# Readiness: the last complete cycle ended at most this many intervals ago.
READY_INTERVALS = 3
# The proving line and the fix text as label values: one line, at most this many
# characters, the cut said by a trailing ellipsis.
TEXT_LIMIT = 240
CUT = "…"
_NAME = regex.compile(r"[^a-zA-Z0-9_]")
_SPACE = regex.compile(r"\s+")


def bounded_text(text: str, limit: int = TEXT_LIMIT) -> str:
    """Cluster text made safe to show (sanitised, masked), one line, at most ``limit``
    characters; a cut ends in ``CUT``. A cut never falls inside a `code span`: a command
    is given whole or not at all (half a command, pasted, is another command)."""
    one: str = _SPACE.sub(" ", redact_text(sanitize(text))).strip()
    if len(one) <= limit:
        return one
    room = limit - len(CUT)
    out = ""
    for is_code, part in codespans.split(one):
        piece = codespans.code(part) if is_code else part
        if len(out) + len(piece) <= room:
            out += piece
            continue
        if not is_code:
            out += piece[:room - len(out)]
        break
    return out.rstrip() + CUT


@dataclass(frozen=True)
class OpenFinding:
    """One finding of one pod, as /metrics exports it."""

    namespace: str
    workload: str  # Deployment/vllm-qwen, or Pod/NAME for a bare pod
    pod: str
    id: str
    severity: str
    step: int
    title: str
    fix_values: tuple[tuple[str, float], ...] = ()
    fallback: bool = False
    # Kept from an earlier cycle: the last (partial) cycle could not evaluate its rule.
    carried: bool = False

    @property
    def card_key(self) -> tuple[str, str, str]:
        return self.namespace, self.workload, self.id


@dataclass(frozen=True)
class FindingText:
    """The proving line and the fix of an open finding of a workload, bounded."""

    proof: str
    fix: str


def _fix_values(f: Finding) -> tuple[tuple[str, float], ...]:
    """The numbers of a finding's computed fix (``fix.values``), e.g. the --max-model-len
    that fits, under label-safe names; non-numeric values are not series."""
    if f.fix is None:
        return ()
    return tuple((_NAME.sub("_", str(name))[:64], float(value)) for name, value in f.fix.values
                 if isinstance(value, (int, float)) and not isinstance(value, bool))


def _open(pod: PodResult, f: Finding) -> OpenFinding:
    return OpenFinding(pod.namespace, pod.owner or f"Pod/{pod.name}", pod.name, f.id,
                       f.severity.value, f.step, f.title, _fix_values(f), f.fallback)


def open_findings(report: Report) -> tuple[OpenFinding, ...]:
    """Every finding of a complete cycle."""
    return tuple(_open(p, f) for p in report.pods for f in p.findings)


def merge_partial(before: tuple[OpenFinding, ...], report: Report) -> tuple[OpenFinding, ...]:
    """The open findings after a partial cycle: what it found, and, on each pod it
    triaged, what was open before and it could not evaluate (never a false resolve).

    A pod the partial cycle did not list is gone (the pod list itself was read: a
    cycle without it fails). A fallback finding ("a crash with no known signature",
    raised because the log that names it was not read) stands back on a pod that
    keeps a critical finding from before, as it does in a complete cycle."""
    prior: dict[tuple[str, str], list[OpenFinding]] = {}
    for o in before:
        prior.setdefault((o.namespace, o.pod), []).append(o)
    out: list[OpenFinding] = []
    for pod in report.pods:
        undecided = {u.pattern for u in pod.unevaluated}
        kept = [dataclasses.replace(o, carried=True)
                for o in prior.get((pod.namespace, pod.name), [])
                if o.id in undecided and not pod.has(o.id)]
        explained = any(o.severity == Severity.CRITICAL.value and not o.fallback for o in kept)
        out += [_open(pod, f) for f in pod.findings if not (f.fallback and explained)]
        out += kept
    return tuple(out)


@dataclass(frozen=True)
class CycleResult:
    """A cycle that ran to its end: the report, its JSON document and what the metrics
    need. Complete when no read failed."""

    report: Report
    document: dict[str, Any]
    failed_reads: dict[str, int]  # read kind -> failures in this cycle
    pods: int
    duration: float  # seconds
    finished_at: float  # unix time
    first_failure: str = ""  # the first read that failed, in words (bounded)

    @property
    def complete(self) -> bool:
        return not self.failed_reads


@dataclass
class ClusterStatus:
    """Everything /metrics and /readyz say about one cluster, replaced per cycle."""

    name: str
    last_complete: CycleResult | None = None
    last_partial: CycleResult | None = None  # the last cycle, when it was partial
    last_cycle: str = ""  # complete | partial | failed ("" before the first)
    last_cycle_at: float = 0.0  # unix time the last cycle ended
    last_error: str = ""
    last_error_at: float = 0.0
    read_failures: dict[str, int] = field(default_factory=dict)  # the last cycle's, by kind
    reads_failed: Counter[str] = field(default_factory=Counter)  # every cycle's, by kind
    cycles: Counter[str] = field(default_factory=Counter)  # ok / partial / failed
    reasons: Counter[str] = field(default_factory=Counter)  # why cycles ran
    findings: tuple[OpenFinding, ...] = ()
    texts: dict[tuple[str, str, str], FindingText] = field(default_factory=dict)

    @property
    def last_cycle_ok(self) -> bool:
        """The last cycle was complete: what is served is current."""
        return self.last_cycle == "complete"

    def record(self, result: CycleResult) -> None:
        """A cycle that ran to its end, complete or partial."""
        self.last_cycle_at = result.finished_at
        self.read_failures = dict(result.failed_reads)
        self.reads_failed.update(result.failed_reads)
        if result.complete:
            self.last_complete, self.last_partial = result, None
            self.last_cycle = "complete"
            self.cycles["ok"] += 1
            self.findings = open_findings(result.report)
        else:
            self.last_partial = result
            self.last_cycle = "partial"
            self.cycles["partial"] += 1
            self.findings = merge_partial(self.findings, result.report)
        self._pin_texts(result.report)

    def record_failure(self, error: str, at: float) -> None:
        self.last_cycle = "failed"
        self.last_cycle_at = at
        self.last_error, self.last_error_at = error, at
        self.read_failures = {}  # no read was made to count: the cycle could not start
        self.cycles["failed"] += 1

    def _pin_texts(self, report: Report) -> None:
        """Each open (workload, finding) keeps the proving line and fix it opened with
        while it stays open: one series per finding, not one per restart's new line."""
        cards = {(c.namespace, c.workload, c.finding): c for c in reversed(report.cards)}
        if self.last_complete is not None:
            for c in self.last_complete.report.cards:
                cards.setdefault((c.namespace, c.workload, c.finding), c)
        keys = {o.card_key for o in self.findings}
        texts = {k: v for k, v in self.texts.items() if k in keys}
        for key in keys - texts.keys():
            card = cards.get(key)
            if card is not None:
                texts[key] = FindingText(bounded_text(card.proof),
                                         bounded_text(card.fix.text if card.fix else ""))
        self.texts = texts


def _utc(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).replace(microsecond=0).isoformat().replace(
        "+00:00", "Z")


def _failures(result: CycleResult) -> str:
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(result.failed_reads.items()))
    total = sum(result.failed_reads.values())
    return f"{total} read(s) failed: {kinds}; first: {result.first_failure}"


class ClusterWatch:
    """Re-triage one cluster every ``interval`` seconds, and at most ``min_gap``
    seconds after a vLLM pod's restart count or readiness changed."""

    def __init__(self, name: str, make_collector: Callable[[], LiveCollector],
                 patterns: list[Path], interval: float, min_gap: float = 5.0,
                 watcher_factory: Callable[[LiveCollector, Callable[[str], None]],
                                           PodWatcher | None] | None = None,
                 on_stop: Callable[[], None] | None = None) -> None:
        self.status = ClusterStatus(name)
        self.make_collector = make_collector
        self.patterns = patterns
        self.interval = interval
        self.min_gap = min(min_gap, interval)
        self.watcher_factory = watcher_factory
        self.on_stop = on_stop
        self.watcher: PodWatcher | None = None
        self.stopping = threading.Event()
        self._wake = threading.Event()
        self._reason = "interval"
        self._lock = threading.Lock()

    def poke(self, why: str) -> None:
        """Ask for a cycle now (the pod watch saw a restart or a readiness change)."""
        with self._lock:
            self._reason = "pod-change"
        self._wake.set()

    def stop(self) -> None:
        """End the cycle in flight now: its reads fail at once and it is not recorded."""
        self.stopping.set()
        if self.on_stop is not None:
            self.on_stop()

    def run_once(self) -> None:
        """One cycle; never raises (short of an interrupt): a failure is recorded."""
        from triage import pipeline

        started, wall = time.monotonic(), time.time()
        try:
            collector = self.make_collector()
            snap = collector.begin()
            with collector.reading(snap) as arrivals:
                report = pipeline.analyze(snap, self.patterns, arrivals)
            if self.stopping.is_set():
                return  # its reads were cut short by the stop: not a cycle to keep
            failed = Counter(f.kind or "other" for f in snap.failures)
            first = bounded_text(str(snap.failures[0]), 300) if snap.failures else ""
            pods = snap.pods()
            if self.watcher is None and self.watcher_factory is not None:
                self.watcher = self.watcher_factory(collector, self.poke)
                if self.watcher is not None:
                    self.watcher.start()
            if self.watcher is not None:
                self.watcher.rebase(collector.pods_version, pods)
            self.status.record(CycleResult(report, report.to_document(), dict(failed),
                                           len(pods), time.monotonic() - started, time.time(),
                                           first))
        except Exception as exc:
            if self.stopping.is_set():
                return
            # A server's words: made safe and masked before any report or page shows them.
            text = " ".join(str(exc).split())[:500] or exc.__class__.__name__
            self.status.record_failure(redact_text(sanitize(text)), wall)

    def readiness(self, now: float | None = None) -> tuple[bool, str]:
        """Ready when a complete cycle ended at most ``READY_INTERVALS`` intervals ago
        (of the interval, or of the last complete cycle's length when that is longer)."""
        now = time.time() if now is None else now
        good = self.status.last_complete
        if good is None:
            return False, f"no complete triage cycle yet{self._last_said()}"
        bound = READY_INTERVALS * max(self.interval, good.duration)
        age = now - good.finished_at
        if age > bound:
            return False, (f"the last complete cycle ended {age:.0f}s ago, more than "
                           f"{READY_INTERVALS} intervals ({bound:.0f}s){self._last_said()}")
        return True, "ok"

    def _last_said(self) -> str:
        s = self.status
        if s.last_cycle == "failed":
            return f"; the last cycle, at {_utc(s.last_error_at)}, failed: {s.last_error}"
        if s.last_cycle == "partial" and s.last_partial is not None:
            return (f"; the last cycle, at {_utc(s.last_partial.finished_at)}, was partial: "
                    f"{_failures(s.last_partial)}")
        return ""

    def served_report(self) -> Report | None:
        """The last complete report; after a partial or failed cycle, saying so first
        in its warnings."""
        s = self.status
        good = s.last_complete
        if good is None:
            return None
        if s.last_cycle_ok:
            return good.report
        if s.last_cycle == "partial" and s.last_partial is not None:
            note = (f"watch: the cycle at {_utc(s.last_partial.finished_at)} was partial "
                    f"({_failures(s.last_partial)}); this is the report of the last complete "
                    f"cycle, at {_utc(good.finished_at)}")
        else:
            note = (f"watch: the cycle at {_utc(s.last_error_at)} failed ({s.last_error}); "
                    f"this is the report of the last complete cycle, at "
                    f"{_utc(good.finished_at)}")
        return dataclasses.replace(good.report, warnings=(note, *good.report.warnings))

    def unserved_reason(self) -> str:
        """Why there is no report to serve yet (before the first complete cycle)."""
        return f"no complete triage cycle yet{self._last_said()}"

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
