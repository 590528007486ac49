"""Facts measure: named, typed values about a vLLM container, its pod, node or workload.

A fact has a unit, a one-line doc and, once computed, the evidence it came
from. It never holds a threshold and never answers "nothing" because some
finding's condition is not met: deciding is what ``patterns/`` do. A fact
that could not be measured (its input was not read) is ``unknown`` with the
reason, which is not the same as a measured absence (``value`` None: no
memory limit, no startupProbe, no KV cache line in the logs read).

Every fact is registered once, with ``@fact``, in one of the modules of this
package; ``REGISTRY`` is what pattern files are checked against and what
``vllm-triage patterns --facts`` lists.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from triage.kube import workload
from triage.logs import LogIndex, QuerySet, scan
from triage.results import Location
from triage.snapshot import (
    CURRENT,
    LOG_STREAMS,
    PREVIOUS,
    Obj,
    PodTelemetry,
    PrometheusWindow,
    Snapshot,
    meta,
)
from triage.vllm import engine_config
from triage.vllm import milestones as startup_lines
from triage.vllm.engine_config import EngineConfig
from triage.vllm.metrics import MetricsView, parse_metrics
from triage.vllm.milestones import StartupReport, read_startup

SCOPES = ("container", "pod", "node", "workload")


@dataclass(frozen=True, slots=True)  # slots: thousands of pods hold their facts
class Measured:
    """What a fact function returns: the value and the sentence saying where it came from."""

    value: Any
    evidence: str
    # The fields the value was read from (or where it would be set): what a
    # finding resting on this fact points at in a manifest.
    at: tuple[Location, ...] = ()


class Unmeasurable(Exception):
    """Raised by a fact function whose input could not be read."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Fact:
    """One measured fact about a pod or container."""

    name: str
    value: Any
    unit: str
    evidence: str
    unknown: str | None = None  # why it could not be measured
    at: tuple[Location, ...] = ()

    @property
    def known(self) -> bool:
        return self.unknown is None


@dataclass(frozen=True)
class FactSpec:
    """What a fact is: its unit, scope and meaning."""

    name: str
    unit: str
    scope: str
    doc: str
    compute: Callable[[ContainerContext], Measured]


REGISTRY: dict[str, FactSpec] = {}
# The regexes facts read from logs, answered by every scan's one pass.
LOG_QUERIES = QuerySet().merged(startup_lines.QUERIES)


def fact(name: str, *, unit: str, scope: str, doc: str
         ) -> Callable[[Callable[[ContainerContext], Measured]],
                       Callable[[ContainerContext], Measured]]:
    """Register a fact function under ``name``."""
    if scope not in SCOPES:
        raise ValueError(f"fact {name}: scope must be one of {SCOPES}")

    def register(fn: Callable[[ContainerContext], Measured]
                 ) -> Callable[[ContainerContext], Measured]:
        if name in REGISTRY:
            raise ValueError(f"fact {name} is registered twice")
        REGISTRY[name] = FactSpec(name, unit, scope, doc, fn)
        return fn
    return register


class LogsSettled(RuntimeError):
    """A settled container's logs were asked for: a programming error (what the checklist
    reads after a pod is settled is computed by ``ContainerContext.settle``)."""


def stream_label(stream: str) -> str:
    return "previous log" if stream == PREVIOUS else "log"


class ContainerContext:
    """Everything known about one triaged container of one pod, parsed once.

    Facts are computed on demand and cached by their scope: a workload fact
    is computed once for all the pods of that workload (``shared``).
    """

    def __init__(self, snapshot: Snapshot, pod: Obj, container: Obj,
                 shared: dict[tuple[str, ...], Fact] | None = None,
                 given: dict[str, Any] | None = None,
                 given_metrics: dict[str, float] | None = None,
                 queries: QuerySet | None = None) -> None:
        self.snapshot = snapshot
        self.pod = pod
        self.container = container
        self.namespace = str(meta(pod).get("namespace", ""))
        self.pod_name = str(meta(pod).get("name", ""))
        # A container without a name (a manifest that leaves it to a controller's
        # defaults) is named by its index, so no evidence says "container  has".
        self.name = str(container.get("name") or "") or self._index_name()
        self._shared = shared if shared is not None else {}
        self._own: dict[tuple[str, ...], Fact] = {}
        self._given = given or {}
        self._given_metrics = given_metrics
        # Every regex a scan of this container's logs answers in its one pass; one not
        # in here is searched on its own when asked for.
        self.queries = queries if queries is not None else LOG_QUERIES
        # Values derived from the logs that are not facts (the stats lines' series), kept
        # here so that a settled container still answers them.
        self.memo: dict[str, Any] = {}
        # Once settled: per log stream read, why it was unreadable (None: it was read).
        self._settled: dict[str, str | None] | None = None
        # The shared cache's keys of this pod's pod-scoped facts (what settle prunes).
        self._pod_keys: list[tuple[str, ...]] = []

    def _index_name(self) -> str:
        for i, c in enumerate(workload.containers(self.pod)):
            if c is self.container:
                return f"#{i}"
        return "#0"

    # --- inputs -----------------------------------------------------------

    @cached_property
    def status(self) -> Obj:
        return workload.container_status(self.pod, self.name)

    @cached_property
    def kind(self) -> str:
        """"container", "init container" or "sidecar container"."""
        return workload.container_kind(self.pod, self.name)

    @property
    def status_field(self) -> str:
        return "containerStatuses" if self.kind == "container" else "initContainerStatuses"

    @property
    def label(self) -> str:
        """How evidence names it: ``vllm``, ``init container storage-initializer``."""
        return self.name if self.kind == "container" else f"{self.kind} {self.name}"

    def no_status(self) -> str | None:
        """Why nothing is known of the container's state: the API reports no status for it."""
        phase = (self.pod.get("status") or {}).get("phase") or "no phase"
        if self.status or phase == "Pending":  # Pending: it has not run, and that is known
            return None
        return (f"the API reports no status for {self.kind} {self.name} (pod {phase}, no "
                f"{self.status_field} entry), so its state is not known")

    def log_failure(self, stream: str) -> str | None:
        """Why a log stream that exists could not be read; None when read or absent."""
        if self.snapshot.log(self.namespace, self.pod_name, self.name, stream) is not None:
            if self._settled is not None:
                unreadable = self._settled.get(stream)
            else:
                index = self._logs.get(stream)
                unreadable = index.unreadable if index is not None else None
            return (f"{stream_label(stream)} of {self.namespace}/{self.pod_name} ({self.name}): "
                    f"{unreadable}") if unreadable else None
        failed = self.snapshot.failure("logs", self.namespace, self.pod_name, self.name, stream)
        return str(failed) if failed else None

    def logs_unread(self) -> list[str]:
        return [f for f in (self.log_failure(s) for s in LOG_STREAMS) if f]

    @cached_property
    def _logs(self) -> dict[str, LogIndex]:
        """Each log stream read, searched once for every query."""
        if self._settled is not None:
            raise LogsSettled(f"the logs of {self.namespace}/{self.pod_name} ({self.name}) "
                              "were asked for after the pod was settled")
        out: dict[str, LogIndex] = {}
        for stream in (CURRENT, PREVIOUS):
            source = self.snapshot.log(self.namespace, self.pod_name, self.name, stream)
            if source is not None:
                out[stream] = scan(source, self.queries)
        return out

    def release_logs(self) -> None:
        """Scan the logs (if nothing asked yet) and drop their bytes: what the steps
        and the report read from a log is in the scan's results."""
        if self._settled is None:
            _ = self._logs
        for stream in LOG_STREAMS:
            source = self.snapshot.log(self.namespace, self.pod_name, self.name, stream)
            if source is not None:
                source.release()

    def settle(self, keep: Iterable[str]) -> None:
        """Drop what the pod's diagnosis read (the log scans, their startup reports, the
        facts nobody reads again) once the pod is diagnosed and its report part built:
        a namespace of thousands of pods holds each pod's until the report is written.
        ``keep``: the facts read afterwards (the checklist's), computed now if not yet."""
        kept = set(keep)
        for name in kept:
            self.fact(name)
        self._settle_scrape()
        self._settled = {s: index.unreadable for s, index in self._logs.items()}
        for attr in ("_logs", "startup"):
            self.__dict__.pop(attr, None)
        self._own = {k: f for k, f in self._own.items() if k[0] in kept}
        # Pod-scoped facts of this pod sit in the shared cache: the same pruning (by
        # the keys this context computed: the cache holds every pod's).
        for k in self._pod_keys:
            if k[-1] not in kept:
                self._shared.pop(k, None)
        self._pod_keys = []

    @property
    def settled(self) -> bool:
        return self._settled is not None

    def log(self, stream: str) -> LogIndex | None:
        """The scanned log of a stream; None when it was not read."""
        index = self._logs.get(stream)
        return None if index is None or index.unreadable else index

    @property
    def logs(self) -> dict[str, LogIndex]:
        return {s: index for s, index in self._logs.items() if not index.unreadable}

    @cached_property
    def engine(self) -> EngineConfig:
        return engine_config.parse(self.container, self.snapshot, self.pod)

    @cached_property
    def startup(self) -> dict[str, StartupReport]:
        return {stream: read_startup(index) for stream, index in self._logs.items()}

    @cached_property
    def metrics(self) -> MetricsView | None:
        if self._settled is not None:  # what the steps read of it is in memo["scrape"]
            raise LogsSettled(f"the /metrics of {self.namespace}/{self.pod_name} were asked "
                              "for after the pod was settled")
        text = self.snapshot.metrics.get((self.namespace, self.pod_name))
        return parse_metrics(text) if text is not None else None

    @cached_property
    def telemetry(self) -> PodTelemetry | None:
        """What Prometheus measured about this pod over the window; None without it."""
        prom = self.snapshot.prometheus
        return prom.pods.get((self.namespace, self.pod_name)) if prom is not None else None

    @property
    def window(self) -> PrometheusWindow | None:
        """The Prometheus window, when it holds vLLM numbers for this pod."""
        if self._given_metrics is None and self.telemetry is not None and self.telemetry.values:
            return self.snapshot.prometheus
        return None

    def metric_values(self) -> dict[str, float] | None:
        """The pod's derived metrics (``triage.vllm.metrics.METRICS``), None when none were read.

        Over the Prometheus window when it has the pod's vLLM series, else from
        the one scrape: never a mix, so a counter is never a total since start
        while the window is there.
        """
        if self._given_metrics is not None:
            return dict(self._given_metrics)
        if self.window is not None and self.telemetry is not None:
            return dict(self.telemetry.values)
        if "scrape" in self.memo:
            kept: dict[str, float] | None = self.memo["scrape"][2]
            return None if kept is None else dict(kept)
        view = self.metrics
        if view is None or view.error:
            return None
        return view.derived()

    def metric_problems(self) -> dict[str, str]:
        """Metric names that were read but are not numbers, and why: a histogram with no
        +Inf bucket, a NaN or Inf value. They are unknown, never absent (absent reads as
        "nothing happened")."""
        out: dict[str, str] = {}
        tele = self.telemetry
        if self._given_metrics is None and tele is not None and tele.not_numbers:
            source = self.snapshot.prometheus.label if self.snapshot.prometheus else "Prometheus"
            for name, what in tele.not_numbers.items():
                logical = name.rsplit("_", 1)[0]
                if name.endswith(("_p50", "_p90", "_p99")) and \
                        not tele.values.get(f"{logical}_count"):
                    continue  # no requests in the window: histogram_quantile is NaN, rightly
                hint = (" (histogram_quantile answers NaN for a histogram with no +Inf "
                        "bucket)" if what == "NaN" and name.endswith(("_p50", "_p90", "_p99"))
                        else "")
                out[name] = f"{source}: {name} is {what}{hint}"
        if self.window is None and self._given_metrics is None and self.metrics_read() \
                and not self._scrape_error():
            problems: dict[str, str] = self.memo["scrape"][3] if "scrape" in self.memo \
                else self.metrics.problems()  # type: ignore[union-attr]
            for name, why in problems.items():
                out.setdefault(name, f"one scrape of /metrics: {why}")
        return out

    def metrics_source(self) -> str:
        """Where metric_values come from, the way evidence names it."""
        if self._given_metrics is not None:
            return "given"
        if self.window is not None:
            return self.window.label
        return "one scrape of /metrics, since the server started"

    def prometheus_failure(self) -> str | None:
        """Why Prometheus said nothing about this pod, when it was asked and could not answer."""
        failed = self.snapshot.failure("prometheus")
        return str(failed) if failed else None

    def metrics_failure(self) -> str | None:
        """Why /metrics could not be used: a failed read or a malformed page."""
        if self._given_metrics is not None or self.window is not None:
            return None
        if self.metrics_read():
            error = self._scrape_error()
            return f"/metrics is not Prometheus text: {error}" if error else None
        failed = self.snapshot.failure("metrics", self.namespace, self.pod_name)
        return str(failed) if failed else None

    def metrics_read(self) -> bool:
        """Whether a /metrics page was read for the pod (well-formed or not)."""
        if "scrape" in self.memo:
            read: bool = self.memo["scrape"][0]
            return read
        return self.metrics is not None

    def _scrape_error(self) -> str | None:
        if "scrape" in self.memo:
            error: str | None = self.memo["scrape"][1]
            return error
        return self.metrics.error if self.metrics is not None else None

    def _settle_scrape(self) -> None:
        """Keep what the steps read of the one scrape (read or not, its error, the derived
        values and problems) and drop the parsed page."""
        view = self.metrics
        self.memo["scrape"] = (
            (False, None, None, {}) if view is None else
            (True, view.error, None, {}) if view.error else
            (True, None, view.derived(), view.problems()))
        self.__dict__.pop("metrics", None)

    @cached_property
    def node_name(self) -> str | None:
        name = workload.pod_spec(self.pod).get("nodeName")
        return str(name) if name else None

    @cached_property
    def node(self) -> Obj | None:
        return self.snapshot.node(self.node_name)

    def node_failure(self) -> str | None:
        if self.node is not None or self.node_name is None:
            return None
        failed = self.snapshot.failure("nodes", self.node_name)
        return str(failed) if failed else None

    def events_failure(self) -> str | None:
        failed = self.snapshot.failure("events", self.namespace)
        return str(failed) if failed else None

    def runtime(self, what: str) -> None:
        """Raise Unmeasurable when the snapshot holds manifests: ``what`` (the pod's
        status, its node, ...) exists only for a pod that runs."""
        if self.snapshot.static is not None:
            raise Unmeasurable(f"needs {what}: {self.snapshot.static}")

    @cached_property
    def index(self) -> int:
        """The container's position in the pod spec's containers."""
        for i, c in enumerate(workload.containers(self.pod)):
            if c is self.container:
                return i
        return next((i for i, c in enumerate(workload.containers(self.pod))
                     if c.get("name") == self.name), 0)

    def field(self, *path: str | int) -> Location:
        """A field of this container in its pod (``field("resources", "limits")``)."""
        return Location(self.pod, ("spec", "containers", self.index, *path))

    def pod_field(self, *path: str | int) -> Location:
        return Location(self.pod, path)

    def unread(self, *kinds: str) -> list[str]:
        """Failed reads of these namespaced kinds that cover this pod's namespace."""
        return [str(f) for f in (self.snapshot.failure(k, self.namespace) for k in kinds) if f]

    @cached_property
    def owner(self) -> tuple[str, Obj] | None:
        """The Deployment or StatefulSet that runs this pod."""
        return workload.workload_owner(self.snapshot, self.pod)

    @cached_property
    def workload_key(self) -> tuple[str, ...]:
        """The Deployment or StatefulSet (KServe runs one per revision), else the pod."""
        if self.owner is not None:
            return (self.owner[0], self.namespace, str(meta(self.owner[1]).get("name")))
        return ("Pod", self.namespace, self.pod_name)

    # --- facts ------------------------------------------------------------

    def _key(self, scope: str) -> tuple[str, ...]:
        if scope == "container":
            return ("container", self.namespace, self.pod_name, self.name)
        if scope == "pod":
            return ("pod", self.namespace, self.pod_name)
        if scope == "node":
            return ("node", self.node_name or f"(unscheduled {self.namespace}/{self.pod_name})")
        return ("workload", *self.workload_key)

    def fact(self, name: str) -> Fact:
        """The named fact; a name not in the registry is a programming error."""
        spec = REGISTRY[name]
        if name in self._given:
            value = self._given[name]
            return Fact(name, value, spec.unit, f"{name} = {value!r} (given)")
        # Container facts stay with the context; wider scopes are shared.
        cache_key: tuple[str, ...]
        if spec.scope == "container":
            cache, cache_key = self._own, (name,)
        else:
            cache, cache_key = self._shared, (*self._key(spec.scope), name)
        found = cache.get(cache_key)
        if found is None:
            try:
                measured = spec.compute(self)
                found = Fact(name, measured.value, spec.unit, measured.evidence,
                             at=measured.at)
            except Unmeasurable as exc:
                found = Fact(name, None, spec.unit, f"{name} could not be measured: {exc.reason}",
                             unknown=exc.reason)
            cache[cache_key] = found
            if spec.scope == "pod":
                self._pod_keys.append(cache_key)
        return found

    def value(self, name: str) -> Any:
        return self.fact(name).value


def describe_registry() -> list[FactSpec]:
    return sorted(REGISTRY.values(), key=lambda s: (SCOPES.index(s.scope), s.name))


# Register every fact (the modules call @fact at import).
from triage.facts import container as _container  # noqa: E402,F401
from triage.facts import engine as _engine  # noqa: E402,F401
from triage.facts import failures as _failures  # noqa: E402,F401
from triage.facts import filesystem as _filesystem  # noqa: E402,F401
from triage.facts import kubernetes as _kubernetes  # noqa: E402,F401
from triage.facts import model as _model  # noqa: E402,F401
from triage.facts import node as _node  # noqa: E402,F401
from triage.facts import probes as _probes  # noqa: E402,F401
from triage.facts import progress as _progress  # noqa: E402,F401
from triage.facts import rollout as _rollout  # noqa: E402,F401
from triage.facts import sizing as _sizing  # noqa: E402,F401
from triage.facts import telemetry as _telemetry  # noqa: E402,F401
from triage.facts import timeline as _timeline  # noqa: E402,F401  (its log queries)
