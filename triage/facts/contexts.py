"""What a fact is computed from: one context per scope, each holding its own facts.

``Scopes`` is one analysis's set of contexts: the cluster's, a node's, a workload's, a
pod's (made once and shared by the pod's containers) and a triaged container's. A fact
is measured on the context of its scope and kept there, so a node fact is measured once
per node and a workload fact once per workload, whichever pod asks first. A context
answers the facts of its own scope and of every scope around it (a container's context
reads its pod's, node's, workload's and the cluster's facts), never a narrower one.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cached_property
from typing import Any

from triage.facts.registry import LOG_QUERIES, REGISTRY, Fact, Unmeasurable, given, measure
from triage.kube import workload
from triage.kube.env import Environment, container_env
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
from triage.vllm.engine_config import EngineConfig
from triage.vllm.metrics import MetricsView, parse_metrics
from triage.vllm.milestones import StartupReport, read_startup


class LogsSettled(RuntimeError):
    """A settled container's logs were asked for: a programming error (what the checklist
    reads after a pod is settled is computed by ``ContainerContext.settle``)."""


def stream_label(stream: str) -> str:
    return "previous log" if stream == PREVIOUS else "log"


class Scopes:
    """The contexts of one analysis: a snapshot's cluster, its nodes and workloads (made
    when first asked for) and the settings the patterns give the facts.

    ``given`` and ``given_metrics`` replace measured facts and metrics (whole-rule examples
    and tests); ``queries`` are every regex a scan of a log answers in its one pass;
    ``settings`` are the values of ``patterns/checklist.yaml``'s settings."""

    def __init__(self, snapshot: Snapshot, *, queries: QuerySet | None = None,
                 settings: dict[str, Any] | None = None, given: dict[str, Any] | None = None,
                 given_metrics: dict[str, float] | None = None) -> None:
        self.snapshot = snapshot
        self.queries = queries if queries is not None else LOG_QUERIES
        self.settings = dict(settings or {})
        self.given = dict(given or {})
        self.given_metrics = given_metrics
        self.cluster = ClusterContext(self)
        self._nodes: dict[str, NodeContext] = {}
        self._workloads: dict[tuple[str, ...], WorkloadContext] = {}

    def node(self, name: str | None, pod: Obj) -> NodeContext:
        """The node a pod runs on; an unscheduled pod has a node context of its own (its
        node facts say it is on none)."""
        if name is None:
            return NodeContext(self, None, f"(unscheduled {_pod_id(pod)})")
        found = self._nodes.get(name)
        if found is None:
            found = self._nodes[name] = NodeContext(self, name, name)
        return found

    def workload(self, key: tuple[str, ...], pod: Obj) -> WorkloadContext:
        """The workload a pod belongs to; its facts are measured from the first pod asking."""
        found = self._workloads.get(key)
        if found is None:
            found = self._workloads[key] = WorkloadContext(self, key, pod)
        return found

    def pod(self, pod: Obj) -> PodContext:
        """A context for one pod (its containers' contexts share it)."""
        return PodContext(self, pod)

    def containers(self, pod: Obj, containers: Iterable[Obj]) -> list[ContainerContext]:
        """The contexts of a pod's triaged containers, sharing one pod context."""
        pod_context = self.pod(pod)
        made = [ContainerContext(self.snapshot, pod, c, self, pod_context=pod_context)
                for c in containers]
        pod_context.containers = made
        return made

    def setting(self, name: str) -> Any:
        """A setting of patterns/checklist.yaml; a name it lacks is a programming error."""
        return self.settings[name]


class _Context:
    """What every scope's context has: its facts, measured once."""

    scope = ""

    def __init__(self, scopes: Scopes) -> None:
        self.scopes = scopes
        self.snapshot = scopes.snapshot
        self._facts: dict[str, Fact] = {}
        # What the rules worked out once for this scope (a node pattern's outcome).
        self.memo: dict[Any, Any] = {}
        # Values given for this instance alone, over measured ones (a cause's example pod).
        self.given: dict[str, Any] = {}

    def wider(self, scope: str) -> _Context:
        """The context of a wider scope around this one."""
        raise KeyError(f"a {self.scope} context has no {scope} around it")

    def fact(self, name: str) -> Fact:
        """The named fact, from this context or the one of its scope around it; a name not
        in the registry, or a narrower scope's fact, is a programming error."""
        spec = REGISTRY[name]
        if name in self.given:
            return given(spec, self.given[name])
        if name in self.scopes.given:
            return given(spec, self.scopes.given[name])
        if spec.scope != self.scope:
            return self.wider(spec.scope).fact(name)
        found = self._facts.get(name)
        if found is None:
            found = self._facts[name] = measure(spec, self)
        return found

    def value(self, name: str) -> Any:
        return self.fact(name).value

    def runtime(self, what: str) -> None:
        """Raise Unmeasurable when the snapshot holds manifests: ``what`` (the pod's
        status, its node, ...) exists only for a pod that runs."""
        if self.snapshot.static is not None:
            raise Unmeasurable(f"needs {what}: {self.snapshot.static}")

    def setting(self, name: str) -> Any:
        return self.scopes.setting(name)


class ClusterContext(_Context):
    """The cluster as the snapshot holds it: its nodes and pods."""

    scope = "cluster"


class NodeContext(_Context):
    """One node, by name (None for an unscheduled pod's: no node is known)."""

    scope = "node"

    def __init__(self, scopes: Scopes, name: str | None, key: str) -> None:
        super().__init__(scopes)
        self.node_name = name
        self.key = key

    def wider(self, scope: str) -> _Context:
        if scope == "cluster":
            return self.scopes.cluster
        return super().wider(scope)

    @cached_property
    def node(self) -> Obj | None:
        return self.snapshot.node(self.node_name)

    def node_failure(self) -> str | None:
        if self.node is not None or self.node_name is None:
            return None
        failed = self.snapshot.failure("nodes", self.node_name)
        return str(failed) if failed else None


class WorkloadContext(_Context):
    """The Deployment or StatefulSet that runs pods (KServe runs one per revision), or a
    pod that nothing owns; measured from the first of its pods asking."""

    scope = "workload"

    def __init__(self, scopes: Scopes, key: tuple[str, ...], pod: Obj) -> None:
        super().__init__(scopes)
        self.key = key
        self.pod = pod
        self.namespace = str(meta(pod).get("namespace", ""))
        self.pod_name = str(meta(pod).get("name", ""))

    def wider(self, scope: str) -> _Context:
        if scope == "cluster":
            return self.scopes.cluster
        return super().wider(scope)

    @cached_property
    def owner(self) -> tuple[str, Obj] | None:
        """The Deployment or StatefulSet that runs the pods."""
        return workload.workload_owner(self.snapshot, self.pod)

    def unread(self, *kinds: str) -> list[str]:
        """Failed reads of these namespaced kinds that cover the workload's namespace."""
        return [str(f) for f in (self.snapshot.failure(k, self.namespace) for k in kinds) if f]


def workload_key(snapshot: Snapshot, pod: Obj) -> tuple[str, ...]:
    """The Deployment or StatefulSet that runs the pod (KServe runs one per revision),
    else the pod itself."""
    owner = workload.workload_owner(snapshot, pod)
    namespace = str(meta(pod).get("namespace", ""))
    if owner is not None:
        return (owner[0], namespace, str(meta(owner[1]).get("name")))
    return ("Pod", namespace, str(meta(pod).get("name", "")))


def _pod_id(pod: Obj) -> str:
    return f"{meta(pod).get('namespace', '')}/{meta(pod).get('name', '')}"


class PodContext(_Context):
    """One pod: its status, events, node, owner and the /metrics read from it."""

    scope = "pod"

    def __init__(self, scopes: Scopes, pod: Obj) -> None:
        super().__init__(scopes)
        self.pod = pod
        self.namespace = str(meta(pod).get("namespace", ""))
        self.pod_name = str(meta(pod).get("name", ""))
        # The contexts of its triaged containers (none for a pod that is not triaged): a
        # pod fact may sum up what its containers' logs say (the CUDA error they ended on).
        self.containers: list[ContainerContext] = []
        # memo: values derived from /metrics that are not facts, kept so that a settled
        # pod still answers them (the one scrape's numbers: "scrape").
        self._settled = False

    # --- around it --------------------------------------------------------

    @cached_property
    def node_name(self) -> str | None:
        name = workload.pod_spec(self.pod).get("nodeName")
        return str(name) if name else None

    @cached_property
    def node_context(self) -> NodeContext:
        return self.scopes.node(self.node_name, self.pod)

    @property
    def node(self) -> Obj | None:
        return self.node_context.node

    def node_failure(self) -> str | None:
        return self.node_context.node_failure()

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

    @cached_property
    def workload_context(self) -> WorkloadContext:
        return self.scopes.workload(self.workload_key, self.pod)

    def wider(self, scope: str) -> _Context:
        if scope == "node":
            return self.node_context
        if scope == "workload":
            return self.workload_context
        if scope == "cluster":
            return self.scopes.cluster
        return super().wider(scope)

    # --- reads about the pod ------------------------------------------------

    def events_failure(self) -> str | None:
        failed = self.snapshot.failure("events", self.namespace)
        return str(failed) if failed else None

    def unread(self, *kinds: str) -> list[str]:
        """Failed reads of these namespaced kinds that cover this pod's namespace."""
        return [str(f) for f in (self.snapshot.failure(k, self.namespace) for k in kinds) if f]

    def pod_field(self, *path: str | int) -> Location:
        return Location(self.pod, path)

    # --- /metrics and Prometheus ----------------------------------------------

    @cached_property
    def metrics(self) -> MetricsView | None:
        if self._settled:  # what the steps read of it is in memo["scrape"]
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
        if self.scopes.given_metrics is None and self.telemetry is not None \
                and self.telemetry.values:
            return self.snapshot.prometheus
        return None

    def metric_values(self) -> dict[str, float] | None:
        """The pod's derived metrics (``triage.vllm.metrics.METRICS``), None when none were
        read.

        Over the Prometheus window when it has the pod's vLLM series, else from
        the one scrape: never a mix, so a counter is never a total since start
        while the window is there.
        """
        if self.scopes.given_metrics is not None:
            return dict(self.scopes.given_metrics)
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
        if self.scopes.given_metrics is None and tele is not None and tele.not_numbers:
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
        if self.window is None and self.scopes.given_metrics is None and self.metrics_read() \
                and not self._scrape_error():
            problems: dict[str, str] = self.memo["scrape"][3] if "scrape" in self.memo \
                else self.metrics.problems()  # type: ignore[union-attr]
            for name, why in problems.items():
                out.setdefault(name, f"one scrape of /metrics: {why}")
        return out

    def metrics_source(self) -> str:
        """Where metric_values come from, the way evidence names it."""
        if self.scopes.given_metrics is not None:
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
        if self.scopes.given_metrics is not None or self.window is not None:
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

    # --- settling ---------------------------------------------------------------

    def settle(self, keep: set[str]) -> None:
        """Keep what the steps read of the one scrape (read or not, its error, the derived
        values and problems) and the facts in ``keep``; drop the parsed page and the rest."""
        if self._settled:
            return
        view = self.metrics
        self.memo["scrape"] = (
            (False, None, None, {}) if view is None else
            (True, view.error, None, {}) if view.error else
            (True, None, view.derived(), view.problems()))
        self.__dict__.pop("metrics", None)
        self._settled = True
        self._facts = {k: f for k, f in self._facts.items() if k in keep}


class ContainerContext(_Context):
    """Everything known about one triaged container of one pod, parsed once.

    Its own facts stay with it; its pod's, node's, workload's and the cluster's are its
    pod context's (``pod_context``), shared with the pod's other containers.
    """

    scope = "container"

    def __init__(self, snapshot: Snapshot, pod: Obj, container: Obj,
                 scopes: Scopes | None = None, *, pod_context: PodContext | None = None,
                 given: dict[str, Any] | None = None,
                 given_metrics: dict[str, float] | None = None,
                 queries: QuerySet | None = None) -> None:
        if scopes is None:
            scopes = Scopes(snapshot, queries=queries, given=given,
                            given_metrics=given_metrics)
        super().__init__(scopes)
        self.pod_context = pod_context if pod_context is not None else scopes.pod(pod)
        self.container = container
        # A container without a name (a manifest that leaves it to a controller's
        # defaults) is named by its index, so no evidence says "container  has".
        self.name = str(container.get("name") or "") or self._index_name()
        # Every regex a scan of this container's logs answers in its one pass; one not
        # in here is searched on its own when asked for.
        self.queries = scopes.queries
        # memo: values derived from the logs that are not facts (the stats lines' series),
        # kept so that a settled container still answers them.
        # Once settled: per log stream read, why it was unreadable (None: it was read).
        self._settled: dict[str, str | None] | None = None

    def wider(self, scope: str) -> _Context:
        if scope == "pod":
            return self.pod_context
        return self.pod_context.wider(scope)

    def _index_name(self) -> str:
        for i, c in enumerate(workload.containers(self.pod)):
            if c is self.container:
                return f"#{i}"
        return "#0"

    # --- the pod around it (its pod context's) ------------------------------

    @property
    def pod(self) -> Obj:
        return self.pod_context.pod

    @property
    def namespace(self) -> str:
        return self.pod_context.namespace

    @property
    def pod_name(self) -> str:
        return self.pod_context.pod_name

    @property
    def node_name(self) -> str | None:
        return self.pod_context.node_name

    @property
    def node(self) -> Obj | None:
        return self.pod_context.node

    def node_failure(self) -> str | None:
        return self.pod_context.node_failure()

    def events_failure(self) -> str | None:
        return self.pod_context.events_failure()

    def unread(self, *kinds: str) -> list[str]:
        return self.pod_context.unread(*kinds)

    def pod_field(self, *path: str | int) -> Location:
        return self.pod_context.pod_field(*path)

    @property
    def owner(self) -> tuple[str, Obj] | None:
        return self.pod_context.owner

    @property
    def workload_key(self) -> tuple[str, ...]:
        return self.pod_context.workload_key

    @property
    def metrics(self) -> MetricsView | None:
        return self.pod_context.metrics

    @property
    def telemetry(self) -> PodTelemetry | None:
        return self.pod_context.telemetry

    @property
    def window(self) -> PrometheusWindow | None:
        return self.pod_context.window

    def metric_values(self) -> dict[str, float] | None:
        return self.pod_context.metric_values()

    def metric_problems(self) -> dict[str, str]:
        return self.pod_context.metric_problems()

    def metrics_source(self) -> str:
        return self.pod_context.metrics_source()

    def prometheus_failure(self) -> str | None:
        return self.pod_context.prometheus_failure()

    def metrics_failure(self) -> str | None:
        return self.pod_context.metrics_failure()

    def metrics_read(self) -> bool:
        return self.pod_context.metrics_read()

    # --- the container --------------------------------------------------------

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

    @cached_property
    def engine(self) -> EngineConfig:
        return engine_config.parse(self.container, self.snapshot, self.pod)

    @cached_property
    def env(self) -> Environment:
        """The container's environment as the kubelet builds it (``envFrom``, then ``env``;
        a ConfigMap's values where the ConfigMap was read)."""
        return container_env(self.snapshot, self.pod, self.container)

    # --- its logs ---------------------------------------------------------------

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
        self.pod_context.settle(kept)
        self._settled = {s: index.unreadable for s, index in self._logs.items()}
        for attr in ("_logs", "startup"):
            self.__dict__.pop(attr, None)
        self._facts = {k: f for k, f in self._facts.items() if k in kept}

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
    def startup(self) -> dict[str, StartupReport]:
        return {stream: read_startup(index) for stream, index in self._logs.items()}


# The contexts a helper shared by facts of several scopes may be given: every context
# around a pod has its pod, one around a workload a pod of it, one on a node that node.
OfPod = ContainerContext | PodContext
OfWorkload = ContainerContext | PodContext | WorkloadContext
OnNode = ContainerContext | PodContext | NodeContext
