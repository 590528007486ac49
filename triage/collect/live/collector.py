"""The live collector: the pods listed, then everything their triage reads (lists, nodes,
ConfigMaps, logs, /metrics, Prometheus) read concurrently in a bounded pool, each pod
handed on as soon as its own reads are in."""

from __future__ import annotations

import difflib
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from triage import __version__
from triage.collect import ClusterUnreachable, NamespaceNotFound
from triage.collect.live import transport
from triage.collect.live.errors import ReadError
from triage.collect.live.kubeconfig import (
    Connection,
    _client_cert,
    _client_cert_problem,
    cluster_access,
)
from triage.collect.live.reader import MAX_JSON_BYTES, Reader
from triage.collect.logtail import keep_end
from triage.collect.shape import Shaped, normalize, normalize_items
from triage.kube import autoscaling, workload
from triage.logs import LogSource, decode
from triage.safety.redact import redact_object
from triage.safety.shell import unnamed_cluster
from triage.snapshot import NODE_EVENTS, PICKER_PODS, Obj, ReadFailure, Snapshot, meta
from triage.vllm import selection

if TYPE_CHECKING:  # httpx and the Prometheus client load only when --prometheus is given
    from triage.collect.prometheus import PrometheusOptions


# kind -> (API path prefix, plural) for namespaced lists
_NAMESPACED_PATHS = {
    "events": ("/api/v1", "events"),
    "replicasets": ("/apis/apps/v1", "replicasets"),
    "deployments": ("/apis/apps/v1", "deployments"),
    "statefulsets": ("/apis/apps/v1", "statefulsets"),
    "horizontalpodautoscalers": ("/apis/autoscaling/v2", "horizontalpodautoscalers"),
    "persistentvolumeclaims": ("/api/v1", "persistentvolumeclaims"),
    "services": ("/api/v1", "services"),
    "inferenceservices": ("/apis/serving.kserve.io/v1beta1", "inferenceservices"),
    # read-only, for the owner a fix's patch is against (its StatefulSets are the LWS's)
    "leaderworkersets": ("/apis/leaderworkerset.x-k8s.io/v1", "leaderworkersets"),
}
# Kinds whose absence (404 on the list) means "not installed", not "failed".
_OPTIONAL_KINDS = {"inferenceservices", "leaderworkersets"}
# The layers beside the pods (snapshot.OPTIONAL_KINDS), by plural: every API group and
# version that may serve it, preferred first. Each is listed only where discovery says the
# cluster serves it (GET /apis, then the group version's resource list, as kubectl
# discovers), so a cluster without KEDA or the Inference Extension gets no request for
# them; an item read from a version other than the first keeps its apiVersion.
OPTIONAL_APIS: dict[str, tuple[tuple[str, str], ...]] = {
    "endpointslices": (("discovery.k8s.io", "v1"),),
    "scaledobjects": (("keda.sh", "v1alpha1"),),
    "inferencepools": (("inference.networking.k8s.io", "v1"),
                       ("inference.networking.x-k8s.io", "v1alpha2")),
    "llminferenceservices": (("serving.kserve.io", "v1alpha1"),),
}
# The events about nodes: GPU health monitors (the EKS node monitoring agent, NVSentinel)
# record their warnings there, in namespace default.
_NODE_EVENTS_SELECTOR = "involvedObject.kind=Node"
# -A lists events per namespace with a triaged pod, up to this many namespaces.
EVENT_NAMESPACES_MAX = 32
_MAX_LOG_PROBES = 12  # bisection over --tail-lines (up to 200,000 lines: 18 would be exact)


@dataclass
class Options:
    namespace: str | None  # None with all_namespaces
    all_namespaces: bool = False
    selector: str | None = None
    tail_lines: int = 3000
    limit_bytes: int = 4 * 1024 * 1024  # of a log's end kept (and limitBytes asked for)
    request_timeout: float = 15.0  # wall time of one request, headers and body
    workers: int = 8
    # Pods whose reads may run ahead of their analysis: enough to keep every worker
    # busy while the analysis loads, few enough that the logs read and not yet
    # analysed stay bounded (typically a few MiB; at most read_ahead_pods x 2 x
    # limit_bytes per container).
    read_ahead_pods: int = 32
    metrics: bool = True
    max_json_bytes: int = MAX_JSON_BYTES  # one API answer (a list)
    max_metrics_bytes: int = 16 * 1024 * 1024  # one /metrics page (vLLM's is ~100 KiB)
    # Bytes streamed to reach the end of a log line longer than limit_bytes.
    max_log_transfer: int = 256 * 1024 * 1024
    prometheus: PrometheusOptions | None = None  # --prometheus: ask it about the window


def _relevant(kind: str, pods: list[Obj]) -> Callable[[Obj], bool]:
    """Which listed objects of ``kind`` the triage of ``pods`` can use: those in the pods'
    namespaces; of events, those about something other than a pod or about one of
    these pods (by uid, by name where the event gives no uid)."""
    namespaces = {str(meta(p).get("namespace")) for p in pods}
    if kind != "events":
        return lambda obj: str(meta(obj).get("namespace")) in namespaces
    uids = {str(meta(p).get("uid")) for p in pods if meta(p).get("uid")}
    names = {(str(meta(p).get("namespace")), str(meta(p).get("name"))) for p in pods}

    def about_triaged(ev: Obj) -> bool:
        ns = str(meta(ev).get("namespace"))
        if ns not in namespaces:
            return False
        inv = ev.get("involvedObject") or ev.get("regarding") or {}
        if not isinstance(inv, dict) or inv.get("kind") != "Pod":
            return True  # owners, nodes, claims: kept for the namespace's pods
        if inv.get("uid"):
            return str(inv.get("uid")) in uids
        return (str(inv.get("namespace") or ns), str(inv.get("name"))) in names
    return about_triaged


def _event_key(event: Obj) -> tuple[str, str]:
    return (str(meta(event).get("namespace") or ""), str(meta(event).get("name") or ""))


def _attempt(read: Callable[[], set[str]]) -> set[str] | ReadError:
    """A discovery read's answer, or the ReadError it ended with (a 404: not served)."""
    try:
        return read()
    except ReadError as exc:
        return set() if exc.status == 404 else exc


def _now() -> str:
    """The collection time, RFC 3339 UTC. SOURCE_DATE_EPOCH (the reproducible-
    builds convention) pins it, so two runs can produce byte-identical reports."""
    pinned = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    now = datetime.now(timezone.utc)
    if pinned.isdigit():
        now = datetime.fromtimestamp(int(pinned), timezone.utc)
    return now.replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _log_failure(snap: Snapshot, ns: str, pod: str, exc: ReadError) -> str:
    """Why a log could not be read, in words. A pod whose Node object is gone has its log
    read refused with the API server's lookup of that Node, ``pods "NODE" not found``
    (404): it names the node, not the pod."""
    node = next((str(workload.pod_spec(p).get("nodeName") or "") for p in snap.pods()
                 if meta(p).get("namespace") == ns and meta(p).get("name") == pod), "")
    if exc.status == 404 and node and f'"{node}" not found' in exc.reason:
        return (f"its node {node} is not in the cluster any more, and the API server reads "
                f"logs from the node's kubelet ({exc.reason})")
    return exc.reason


def _choose_pods(items: list[Any], selector: str | None, notes: list[str], room: int
                 ) -> tuple[list[Obj], list[Obj]]:
    """The pods of a listed page that are triaged, normalized, and at most ``room`` others
    worth reading a log's head of (``selection.worth_reading_head``), in the list's order.

    Each pod is decided on the normalized part of it that selection reads
    (``selection.view``): normalizing the whole of every listed pod was most of a
    20,000-pod ``scan -A``'s time, and all but a few are dropped. The fields of the wrong
    type are counted (``notes``) in the pods kept, the ones the report is made of."""
    scratch = Shaped()  # a pod's view is normalized again whole if kept: counted then
    taken: list[Any] = []
    chosen_at: list[bool] = []
    for raw in items:
        if not isinstance(raw, dict):
            taken.append(raw)  # counted as ignored, as normalize_items counts it
            continue
        seen = normalize(selection.view(raw), scratch)
        if selection.triaged_containers(seen, selector):
            chosen_at.append(True)
        elif room > 0 and selection.worth_reading_head(seen):
            chosen_at.append(False)
            room -= 1
        else:
            continue
        taken.append(raw)
    if not taken:
        return [], []
    page = normalize_items("pods", taken, notes)
    return ([p for p, c in zip(page, chosen_at, strict=True) if c],
            [p for p, c in zip(page, chosen_at, strict=True) if not c])


class LiveCollector:
    def __init__(self, conn: Connection, opts: Options,
                 progress: Callable[[str], None] | None = None) -> None:
        self.conn = conn
        self.opts = opts
        self.reader = Reader(conn, opts.request_timeout, opts.max_json_bytes)
        self.progress = progress or (lambda _msg: None)
        # The resourceVersion of the last pod list: `watch` watches pods from there.
        self.pods_version = ""

    def _ns_path(self, prefix: str, plural: str, ns: str | None) -> str:
        if ns is None:
            return f"{prefix}/{plural}"
        return f"{prefix}/namespaces/{quote(ns, safe='')}/{plural}"

    def collect(self) -> Snapshot:
        """Everything, read to the end (for a bundle)."""
        snap = self.begin()
        with self.reading(snap) as arrivals:
            for _pod in arrivals:
                pass
        return snap

    def begin(self) -> Snapshot:
        """The snapshot with its pods listed; ``reading`` reads the rest into it.

        Raises ClusterUnreachable when the pod list cannot be read: without it
        there is nothing to triage."""
        ns = None if self.opts.all_namespaces else self.opts.namespace
        snap = Snapshot(
            context=self.conn.context,
            namespace=ns,
            collected_at=_now(),
            tool_version=__version__,
            selector=self.opts.selector,
            kubectl=self.conn.kubectl,
        )
        unnamed = unnamed_cluster(self.conn.context, self.conn.kubectl)
        if unnamed:
            snap.notes.append(unnamed)
        self.progress(f"listing pods in {ns or 'all namespaces'}")
        others: list[Obj] = []  # not selected, asking for a GPU or failing (bounded)
        snap.objects["pods"] = self._list_pods(ns, snap.notes, others)
        if not self.opts.selector and others:
            # Pods no spec or label names as vLLM: their logs' first lines may.
            snap.selected_by_log = self._recognise_by_log(others, [], snap.notes)
            found = selection.select_pods(others, None, snap.selected_by_log)
            snap.objects["pods"] += [redact_object(p) for p in found]
            snap.passed_over = selection.passed_over(others, found)
        if ns is not None and not snap.objects["pods"]:
            self._no_vllm_pods(ns, snap)
        return snap

    def _recognise_by_log(self, pods: list[Obj], chosen: list[Obj], notes: list[str]
                          ) -> set[tuple[str, str, str]]:
        """(namespace, pod, container) of the pods not selected whose log starts as vLLM's
        does: the first ``LOG_HEAD_BYTES`` of at most ``MAX_HEAD_READS`` pods that ask for
        a GPU or are failing, read concurrently (``limitBytes`` without ``tailLines`` is
        the log's head)."""
        taken = {id(p) for p in chosen}
        jobs = [(p, names) for p in pods if id(p) not in taken
                for names in [selection.worth_reading_head(p)] if names]
        if len(jobs) > selection.MAX_HEAD_READS:
            notes.append(f"{len(jobs)} pods that are not recognisably vLLM ask for a GPU or "
                         f"are failing; the first lines of the logs of {selection.MAX_HEAD_READS}"
                         f" were read to recognise vLLM, not of the others")
            jobs = jobs[:selection.MAX_HEAD_READS]
        if not jobs:
            return set()
        self.progress(f"reading the first lines of {len(jobs)} other pod log(s)")
        with ThreadPoolExecutor(max_workers=self.opts.workers) as pool:
            found = list(pool.map(lambda job: self._vllm_heads(*job), jobs))
        return set().union(*found)

    def _vllm_heads(self, pod: Obj, names: list[str]) -> set[tuple[str, str, str]]:
        ns, name = str(meta(pod).get("namespace")), str(meta(pod).get("name"))
        path = f"/api/v1/namespaces/{quote(ns, safe='')}/pods/{quote(name, safe='')}/log"
        out: set[tuple[str, str, str]] = set()
        for container in names:
            # A container waiting to restart serves its last run's log.
            try:
                head = self.reader.fetch(path, {"container": container,
                                                "limitBytes": selection.LOG_HEAD_BYTES},
                                         accept="*/*", cap=selection.LOG_HEAD_BYTES,
                                         fail_over_cap=False).data
            except ReadError:
                continue  # not readable: the pod stays unselected, and is named if failing
            if selection.is_vllm_log_head(decode(head)):
                out.add((ns, name, container))
        return out

    def _no_vllm_pods(self, ns: str, snap: Snapshot) -> None:
        """A namespace without a vLLM pod: a typo is an error naming the closest
        namespaces (a real API server lists pods of a namespace that does not
        exist as an empty list); otherwise say where vLLM pods do run."""
        self.progress(f"no vLLM pods in {ns}: looking for them elsewhere")
        try:
            self.reader.get_json(f"/api/v1/namespaces/{quote(ns, safe='')}")
        except ReadError as exc:
            if exc.status == 404:
                raise NamespaceNotFound(self._not_found(ns)) from None
            # 403 (a namespaced Role cannot read namespaces): existence unknown, go on
        counts: dict[str, int] = {}

        def count(items: list[Any]) -> list[Obj]:  # counted page by page, nothing kept
            for pod in _choose_pods(items, self.opts.selector, [], 0)[0]:
                other = str(meta(pod).get("namespace") or "")
                if other and other != ns:
                    counts[other] = counts.get(other, 0) + 1
            return []
        try:
            self.reader.list_items("/api/v1/pods", {"labelSelector": self.opts.selector}, count)
        except ReadError as exc:
            snap.elsewhere_unknown = f"listing pods in all namespaces: {exc.reason}"
            return
        snap.vllm_elsewhere = counts

    def _not_found(self, ns: str) -> str:
        context = f" in context {self.conn.context!r}" if self.conn.context else ""
        message = f"namespace {ns!r} not found{context}"
        try:
            data = self.reader.get_json("/api/v1/namespaces")
        except ReadError:
            return message  # not allowed to list them: no names to offer
        items = data.get("items")
        names = sorted(str(meta(o).get("name")) for o in (items if isinstance(items, list)
                                                          else []) if isinstance(o, dict))
        close = difflib.get_close_matches(ns, names, n=3, cutoff=0.6)
        if close:
            return f"{message}; did you mean {', '.join(close)}?"
        shown = ", ".join(names[:12]) + (f" and {len(names) - 12} more" if len(names) > 12
                                         else "")
        return f"{message}; namespaces: {shown}" if names else message

    @contextmanager
    def reading(self, snap: Snapshot) -> Iterator[Iterator[Obj]]:
        """Start reading everything else into ``snap``; the iterator yields each pod
        once its own reads (logs, /metrics) and every shared read (lists, nodes,
        ConfigMaps, Prometheus) are in, so its analysis can start while other pods
        are read. Once it is exhausted every read has ended and the snapshot is
        complete; leaving early (an error) ends the reads in flight.

        Reads run only ``read_ahead_pods`` ahead of the consumer: a slow consumer
        holds a bounded amount of unanalysed logs in memory.
        """
        ns = snap.namespace
        chosen = snap.pods()
        shared: list[Callable[[], None]] = [
            self._lister(snap, kind, self._ns_path(prefix, plural, ns), ns)
            for kind, (prefix, plural) in _NAMESPACED_PATHS.items()
            if not (kind == "events" and ns is None)]
        if ns is None:
            shared += self._event_listers(snap, chosen)
        shared.append(self._optional_lister(snap, ns))
        node_events: list[Obj] = []
        shared += self._node_jobs(snap, chosen)
        shared += self._node_event_jobs(snap, chosen, node_events)
        shared += self._configmap_jobs(snap, chosen)
        per_pod = [[self._log_reader(snap, *key) for key in self._log_streams(snap, pod)]
                   + (self._metrics_jobs(snap, pod) if self.opts.metrics else [])
                   for pod in chosen]
        total = len(shared) + sum(len(jobs) for jobs in per_pod)
        pool = ThreadPoolExecutor(max_workers=self.opts.workers)
        side = ThreadPoolExecutor(max_workers=1)  # Prometheus: its own queries, in turn
        # pod index -> its reads, submitted at most `ahead` pods before the consumer
        pending: dict[int, list[Future[None]]] = {}
        submitted = 0
        ahead = max(1, self.opts.read_ahead_pods)

        def fill() -> None:
            nonlocal submitted
            while submitted < len(chosen) and len(pending) < ahead:
                pending[submitted] = [pool.submit(fn) for fn in per_pod[submitted]]
                submitted += 1

        def arrive() -> Iterator[Obj]:
            done = 0
            for fut in shared_futures:
                fut.result()
                done += 1
                self.progress(f"read {done}/{total}")
            if node_events:  # beside the namespaces' events, each once
                seen = {_event_key(e) for e in snap.objects.get("events", [])}
                snap.objects["events"] = snap.objects.get("events", []) + [
                    e for e in node_events if _event_key(e) not in seen]
            # The pools and their pickers' Services are in: the pickers' own logs.
            self._picker_reads(snap)
            if prom_future is not None:
                prom_future.result()
            while pending:
                # The first pod whose reads are all in; else wait for any read.
                ready = next((i for i, futs in pending.items() if all(f.done() for f in futs)),
                             None)
                if ready is None:  # wait for a read still under way (not spin on done ones)
                    wait([f for futs in pending.values() for f in futs if not f.done()],
                         return_when=FIRST_COMPLETED)
                    continue
                for fut in pending.pop(ready):
                    fut.result()
                    done += 1
                self.progress(f"read {done}/{total}")
                fill()
                yield chosen[ready]
            pool.shutdown(wait=True)
            side.shutdown(wait=True)
            # Keep the order of the API's lists stable for reproducible reports.
            snap.failures.sort(key=lambda f: (f.kind, f.what))
            snap.notes.sort()

        try:
            shared_futures = [pool.submit(fn) for fn in shared]
            prom_future = side.submit(self._prometheus, snap) \
                if self.opts.prometheus is not None else None
            fill()
            arrivals = arrive()
            yield arrivals
            for _pod in arrivals:
                pass  # a consumer that stopped early still leaves a complete snapshot
        except BaseException:
            # Interrupted (Ctrl-C, SIGTERM) or the analysis failed: drop what has
            # not started and end the requests in flight now, so the process exits
            # promptly.
            pool.shutdown(wait=False, cancel_futures=True)
            side.shutdown(wait=False, cancel_futures=True)
            transport.WATCHDOG.kill_all()
            raise

    def _prometheus(self, snap: Snapshot) -> None:
        from triage.collect.prometheus import PrometheusCollector

        prom = self.opts.prometheus
        assert prom is not None
        if prom.url == "auto":
            prom = replace(prom, cluster=cluster_access(self.conn), namespace_hint=snap.namespace)
        PrometheusCollector(prom, self.progress).collect(snap)

    def _list_pods(self, ns: str | None, notes: list[str], others: list[Obj]) -> list[Obj]:
        """The triaged pods, redacted; the others are dropped page by page, but those
        whose log may show vLLM (asking for a GPU, or failing) go to ``others``, at most
        ``selection.MAX_OTHER_PODS``."""
        path = self._ns_path("/api/v1", "pods", ns)

        def keep(items: list[Any]) -> list[Obj]:
            chosen, other = _choose_pods(items, self.opts.selector, notes,
                                         selection.MAX_OTHER_PODS - len(others))
            others.extend(other)
            return [redact_object(p) for p in chosen]
        try:
            return self.reader.list_items(path, {"labelSelector": self.opts.selector}, keep,
                                          on_version=self._pods_at)
        except ReadError as exc:
            server = self.conn.api.configuration.host
            if exc.kind == "tls" or (exc.kind == "network" and _client_cert(self.conn)):
                # A server that refuses a client certificate may just close the
                # connection; the certificate itself can say why.
                why = _client_cert_problem(self.conn) or exc.reason
                raise ClusterUnreachable(
                    f"cannot connect to the Kubernetes API at {server}: {why}") from None
            if exc.kind == "protocol":
                raise ClusterUnreachable(
                    f"the Kubernetes API at {server} did not answer the pod list as an API "
                    f"server does: {exc.reason}") from None
            if exc.kind == "size":
                raise ClusterUnreachable(f"listing pods in {ns or 'all namespaces'}: "
                                         f"{exc.reason}; narrow it with -l") from None
            if exc.status is None:
                raise ClusterUnreachable(
                    f"cannot reach the Kubernetes API at {server}: {exc.reason}") from None
            if exc.status == 401:
                raise ClusterUnreachable(
                    f"the Kubernetes API at {server} refused the credentials of context "
                    f"{self.conn.context!r} ({exc.reason})") from None
            if exc.status == 403:
                raise ClusterUnreachable(
                    f"not allowed to list pods in {ns or 'any namespace'}: {exc.reason}") from None
            raise ClusterUnreachable(f"listing pods failed: {exc.reason}") from None

    def _pods_at(self, version: str) -> None:
        self.pods_version = version

    def _lister(self, snap: Snapshot, kind: str, path: str,
                ns: str | None) -> Callable[[], None]:
        wanted = _relevant(kind, snap.pods())

        def keep(items: list[Any]) -> list[Obj]:
            return [redact_object(o) for o in normalize_items(kind, items, snap.notes)
                    if wanted(o)]

        def run() -> None:
            at = path
            try:
                try:
                    snap.objects[kind] = self.reader.list_items(at, keep=keep)
                except ReadError as exc:
                    if exc.status != 404 or kind != "horizontalpodautoscalers":
                        raise
                    # Before Kubernetes 1.23 there is no autoscaling/v2: read the version
                    # discovery prefers, as kubectl does.
                    version = self._autoscaling_version()
                    if version is None:
                        raise
                    at = at.replace("/apis/autoscaling/v2/", f"/apis/autoscaling/{version}/", 1)
                    items = self.reader.list_items(at, keep=lambda page: keep(
                        [autoscaling.from_v1(o) if version == "v1" and isinstance(o, dict)
                         else o for o in page]))
                    snap.objects[kind] = items
            except ReadError as exc:
                if exc.status == 404 and kind in _OPTIONAL_KINDS:
                    snap.absent_kinds.add(kind)
                    return
                snap.failures.append(ReadFailure(f"{kind} ({at})", exc.reason, kind,
                                                 (ns,) if ns is not None else ()))
        return run

    def _autoscaling_version(self) -> str | None:
        """The autoscaling version to read HorizontalPodAutoscalers through on a server
        that does not serve v2: the group's preferred version from discovery when it is
        one whose objects this tool reads (v1, converted; v2beta2, v2's shape); None
        when discovery cannot say or offers neither."""
        try:
            group = self.reader.get_json("/apis/autoscaling")
        except ReadError:
            return None
        preferred = group.get("preferredVersion")
        version = preferred.get("version") if isinstance(preferred, dict) else None
        served = {v.get("version") for v in group.get("versions") or []
                  if isinstance(v, dict)}
        if version in ("v1", "v2beta2") and version in served:
            return str(version)
        return "v1" if "v1" in served else None

    def _event_listers(self, snap: Snapshot, pods: list[Obj]) -> list[Callable[[], None]]:
        """-A: the events of each namespace with a triaged pod, not of the whole cluster
        (a busy cluster's events are its largest list, nearly all about other pods);
        one cluster-wide list past ``EVENT_NAMESPACES_MAX`` such namespaces."""
        namespaces = sorted({str(meta(p).get("namespace")) for p in pods
                             if meta(p).get("namespace")})
        snap.objects["events"] = []
        if len(namespaces) > EVENT_NAMESPACES_MAX:
            return [self._lister(snap, "events", "/api/v1/events", None)]
        parts: dict[str, list[Obj]] = {}
        lock = threading.Lock()

        def one(namespace: str) -> Callable[[], None]:
            path = self._ns_path("/api/v1", "events", namespace)
            wanted = _relevant("events", pods)

            def run() -> None:
                try:
                    got = self.reader.list_items(path, keep=lambda items: [
                        redact_object(o) for o in normalize_items("events", items, snap.notes)
                        if wanted(o)])
                except ReadError as exc:
                    snap.failures.append(ReadFailure(f"events ({path})", exc.reason, "events",
                                                     (namespace,)))
                    return
                with lock:  # in namespace order, whichever list comes in first
                    parts[namespace] = got
                    snap.objects["events"] = [e for n in sorted(parts) for e in parts[n]]
            return run
        return [one(n) for n in namespaces]

    def _optional_lister(self, snap: Snapshot, ns: str | None) -> Callable[[], None]:
        """The layers beside the pods (``OPTIONAL_APIS``), each listed where the API serves
        it. What discovery could not tell is a failed read of that kind (its rules are
        unknown, never "none there"); a kind the cluster does not serve is absent."""
        wanted_of = {kind: _relevant(kind, snap.pods()) for kind in OPTIONAL_APIS}

        def resources(group: str, version: str) -> set[str]:
            listed = self.reader.get_json(f"/apis/{quote(group, safe='.')}/{quote(version)}")
            return {str(r.get("name")) for r in listed.get("resources") or []
                    if isinstance(r, dict)}

        def list_kind(kind: str, group: str, version: str, tag: bool) -> list[Obj]:
            path = self._ns_path(f"/apis/{group}/{version}", kind, ns)

            def keep(items: list[Any]) -> list[Obj]:
                kept = [redact_object(o) for o in normalize_items(kind, items, snap.notes)
                        if wanted_of[kind](o)]
                if tag:
                    for obj in kept:
                        obj.setdefault("apiVersion", f"{group}/{version}")
                return kept
            return self.reader.list_items(path, keep=keep)

        def run() -> None:
            subject = (ns,) if ns is not None else ()
            try:
                groups = self.reader.get_json("/apis")
            except ReadError as exc:
                for kind in OPTIONAL_APIS:
                    snap.failures.append(ReadFailure(f"{kind} (discovery: /apis)", exc.reason,
                                                     kind, subject))
                return
            served = {str(v.get("groupVersion")) for g in groups.get("groups") or []
                      if isinstance(g, dict) for v in g.get("versions") or []
                      if isinstance(v, dict)}
            candidates = sorted({(g, v) for apis in OPTIONAL_APIS.values() for g, v in apis
                                 if f"{g}/{v}" in served})
            with ThreadPoolExecutor(max_workers=4) as pool:
                listed = dict(zip(candidates, pool.map(
                    lambda gv: _attempt(lambda: resources(*gv)), candidates), strict=True))
                jobs: dict[str, list[tuple[str, str, Future[Any]]]] = {}
                for kind, apis in OPTIONAL_APIS.items():
                    for rank, (group, version) in enumerate(apis):
                        names = listed.get((group, version))
                        if isinstance(names, ReadError):
                            snap.failures.append(ReadFailure(
                                f"{kind} (discovery: /apis/{group}/{version})", names.reason,
                                kind, subject))
                        elif names is not None and kind in names:
                            jobs.setdefault(kind, []).append((group, version, pool.submit(
                                list_kind, kind, group, version, rank > 0)))
                for kind in OPTIONAL_APIS:
                    if kind not in jobs:
                        if not any(f.kind == kind for f in snap.failures):
                            snap.absent_kinds.add(kind)
                        snap.objects[kind] = []
                        continue
                    items: list[Obj] = []
                    for group, version, fut in jobs[kind]:
                        try:
                            items += fut.result()
                        except ReadError as exc:
                            path = self._ns_path(f"/apis/{group}/{version}", kind, ns)
                            snap.failures.append(ReadFailure(f"{kind} ({path})", exc.reason,
                                                             kind, subject))
                    snap.objects[kind] = items
        return run

    def _picker_reads(self, snap: Snapshot) -> None:
        """The endpoint pickers (EPP) of the InferencePools read: the pods their Service
        selects (a list with its label selector; ``workload.picker_pods_to_read``) and
        the end of each one's current log, for the pool's evidence. A read that fails is
        named, kind ``pickerpods``: only that evidence is missing."""
        if snap.objects.get("inferencepools"):
            snap.objects.setdefault(PICKER_PODS, [])
        # Only the pools that select a pod read: the others judge no pod of this scan.
        pods = snap.pods()
        pools = [pool for pool in snap.objects.get("inferencepools") or []
                 if any((meta(p).get("namespace") or "") == (meta(pool).get("namespace") or "")
                        and workload.selector_matches((pool.get("spec") or {}).get("selector"),
                                                      meta(p).get("labels") or {})
                        for p in pods)]
        if not pools:
            return
        seen: set[tuple[str, str]] = set()
        for pool in pools:
            ns, service_name = str(meta(pool).get("namespace") or ""), \
                workload.endpoint_picker_service(pool)
            service = snap.find("services", ns, service_name) if service_name else None
            selector = (service or {}).get("spec", {}).get("selector")
            if not isinstance(selector, dict) or not selector or (ns, service_name) in seen:
                continue
            seen.add((ns, str(service_name)))
            label = f"endpoint picker pods of InferencePool {ns}/{meta(pool).get('name')}"
            self.progress(f"reading the {label}")
            query = {"labelSelector": ",".join(f"{k}={v}" for k, v in sorted(selector.items()))}
            try:
                found = self.reader.list_items(self._ns_path("/api/v1", "pods", ns), query)
            except ReadError as exc:
                snap.failures.append(ReadFailure(label, exc.reason, PICKER_PODS,
                                                 (ns, str(service_name))))
                continue
            kept = workload.picker_pods_to_read(
                [redact_object(p) for p in normalize_items("pods", found, snap.notes)])
            snap.objects[PICKER_PODS] += kept
            for pod in kept:
                name = str(meta(pod).get("name"))
                for container in workload.pod_spec(pod).get("containers") or []:
                    cname = str(container.get("name"))
                    state = workload.container_status(pod, cname).get("state") or {}
                    if not (state.get("running") or state.get("terminated")):
                        continue
                    try:
                        text, note = self._read_log_end(ns, name, cname, "current")
                    except ReadError as exc:
                        snap.failures.append(ReadFailure(
                            f"log of {ns}/{name} ({cname}), an endpoint picker", exc.reason,
                            PICKER_PODS, (ns, str(service_name), name)))
                        continue
                    snap.logs[(ns, name, cname, "current")] = LogSource(data=text)
                    if note:
                        snap.notes.append(f"log of {ns}/{name} ({cname}): {note}")

    def _node_event_jobs(self, snap: Snapshot, pods: list[Obj],
                         found: list[Obj]) -> list[Callable[[], None]]:
        """The events about the pods' nodes (all nodes' when a pod is Pending), listed
        cluster-wide with a field selector: GPU health monitors record their warnings
        there. Kept in ``found``, merged into the events once every list is in."""
        names = {str(workload.pod_spec(p).get("nodeName")) for p in pods
                 if workload.pod_spec(p).get("nodeName")}
        pending = any(not workload.pod_spec(p).get("nodeName") for p in pods)
        if not names and not pending:
            return []

        def run() -> None:
            def keep(items: list[Any]) -> list[Obj]:
                return [redact_object(e) for e in normalize_items("events", items, snap.notes)
                        if pending or str((e.get("involvedObject") or {}).get("name")) in names]
            try:
                found.extend(self.reader.list_items(
                    "/api/v1/events", {"fieldSelector": _NODE_EVENTS_SELECTOR}, keep=keep))
            except ReadError as exc:
                snap.failures.append(ReadFailure(
                    f"events about nodes (/api/v1/events?fieldSelector={_NODE_EVENTS_SELECTOR})",
                    exc.reason, NODE_EVENTS))
        return [run]

    def _node_jobs(self, snap: Snapshot, pods: list[Obj]) -> list[Callable[[], None]]:
        names = sorted({str(workload.pod_spec(p).get("nodeName")) for p in pods
                        if workload.pod_spec(p).get("nodeName")})
        pending = any(not workload.pod_spec(p).get("nodeName") for p in pods)
        snap.objects.setdefault("nodes", [])
        found: dict[str, Obj] = {}

        def add(node: Obj) -> None:
            found[str(meta(node).get("name"))] = redact_object(node)
            snap.objects["nodes"] = sorted(found.values(), key=lambda n: str(meta(n).get("name")))

        def list_all() -> None:
            # A Pending pod has no node yet; the candidate nodes (GPU
            # capacity, taints) are what explains why.
            try:
                nodes = self.reader.list_items("/api/v1/nodes", keep=lambda items: [
                    redact_object(n) for n in normalize_items("nodes", items, snap.notes)])
            except ReadError as exc:
                snap.failures.append(ReadFailure("nodes (/api/v1/nodes)", exc.reason, "nodes"))
                return
            for node in nodes:
                add(node)

        def read_one(name: str) -> Callable[[], None]:
            def run() -> None:
                try:
                    node = self.reader.get_json(f"/api/v1/nodes/{quote(name, safe='')}")
                    for shaped in normalize_items("nodes", [node], snap.notes):
                        add(shaped)
                except ReadError as exc:
                    snap.failures.append(ReadFailure(f"node {name}", exc.reason, "nodes", (name,)))
            return run

        if pending:
            return [list_all]
        return [read_one(n) for n in names]

    def _configmap_jobs(self, snap: Snapshot,
                        pods: list[Obj]) -> list[Callable[[], None]]:
        """Only ConfigMaps a vLLM pod mounts (a --config file may live there) or sets its
        containers' environment from (envFrom, valueFrom.configMapKeyRef: HF_HOME may be
        set there)."""
        wanted: set[tuple[str, str]] = set()
        for pod in pods:
            ns = str(meta(pod).get("namespace"))
            for vol in workload.pod_spec(pod).get("volumes") or []:
                name = (vol.get("configMap") or {}).get("name")
                if name:
                    wanted.add((ns, str(name)))
            for c in workload.containers(pod) + workload.init_containers(pod):
                for source in c.get("envFrom") or []:
                    name = ((source or {}).get("configMapRef") or {}).get("name")
                    if name:
                        wanted.add((ns, str(name)))
                for entry in c.get("env") or []:
                    ref = ((entry or {}).get("valueFrom") or {}).get("configMapKeyRef") or {}
                    if ref.get("name"):
                        wanted.add((ns, str(ref["name"])))
        snap.objects.setdefault("configmaps", [])

        def read(ns: str, name: str) -> Callable[[], None]:
            def run() -> None:
                path = f"/api/v1/namespaces/{quote(ns, safe='')}/configmaps/{quote(name, safe='')}"
                try:
                    cm = self.reader.get_json(path)
                    snap.objects["configmaps"] += [redact_object(o) for o in normalize_items(
                        "configmaps", [cm], snap.notes)]
                except ReadError as exc:
                    snap.failures.append(ReadFailure(f"configmap {ns}/{name}", exc.reason,
                                                     "configmaps", (ns, name)))
            return run
        return [read(ns, name) for ns, name in sorted(wanted)]

    def _log_streams(self, snap: Snapshot, pod: Obj) -> list[tuple[str, str, str, str]]:
        """(namespace, pod, container, stream) of every log of the pod there is to read."""
        ns, name = str(meta(pod).get("namespace")), str(meta(pod).get("name"))
        keys: list[tuple[str, str, str, str]] = []
        for container in selection.triaged_containers(pod, self.opts.selector,
                                                      snap.selected_by_log):
            cname = str(container.get("name"))
            status = workload.container_status(pod, cname)
            if not status and workload.pod_spec(pod).get("nodeName"):
                # The kubelet reported no status (lost, or not written yet): the log may
                # hold the failure, so both are asked for; one that is not there is no
                # failure to read (``_log_reader``).
                keys += [(ns, name, cname, "current"), (ns, name, cname, "previous")]
                continue
            if status.get("state", {}).get("running") or status.get("state", {}).get("terminated"):
                keys.append((ns, name, cname, "current"))
            if status.get("lastState", {}).get("terminated") or status.get("restartCount"):
                keys.append((ns, name, cname, "previous"))
        return keys

    @staticmethod
    def _no_status(snap: Snapshot, ns: str, name: str, container: str) -> bool:
        """The API holds no status of the pod's container."""
        pod = next((p for p in snap.objects.get("pods") or []
                    if meta(p).get("namespace") == ns and meta(p).get("name") == name), None)
        return pod is not None and not workload.container_status(pod, container)

    def _log_reader(self, snap: Snapshot, ns: str, pod: str, container: str,
                    stream: str) -> Callable[[], None]:
        def run() -> None:
            label = "previous log" if stream == "previous" else "log"
            what = f"{label} of {ns}/{pod} ({container})"
            try:
                text, note = self._read_log_end(ns, pod, container, stream)
            except ReadError as exc:
                if exc.status == 400 and self._no_status(snap, ns, pod, container):
                    # Asked for without a status to say it exists: the kubelet has none.
                    snap.notes.append(f"{what}: none ({exc.reason})")
                    return
                snap.failures.append(ReadFailure(what, _log_failure(snap, ns, pod, exc), "logs",
                                                 (ns, pod, container, stream)))
                return
            snap.logs[(ns, pod, container, stream)] = LogSource(data=text)
            if note:
                snap.notes.append(f"{what}: {note}")
        return run

    def _read_log_end(self, ns: str, pod: str, container: str, stream: str
                      ) -> tuple[bytes, str]:
        """The end of a container log, at most ``limit_bytes``: the last lines whole,
        and the end of a line too long to fit. A crash is at the end of a log.

        Each line comes with the kubelet's time in front (``timestamps=true``), which
        bundles keep. The kubelet applies ``tailLines`` and then keeps the *first*
        ``limitBytes`` of that tail, so one huge line pushes out the end of the
        log. When the tail does not fit, it is streamed (``limitBytes`` raised
        to ``max_log_transfer``) and only its last ``limit_bytes`` are kept.
        When even that is too much to transfer, the largest number of lines
        that fits is found by bisection, in a bounded number of requests.
        Returns the text and a note saying what was cut ("" when nothing was).
        """
        path = f"/api/v1/namespaces/{quote(ns, safe='')}/pods/{quote(pod, safe='')}/log"
        limit, want = self.opts.limit_bytes, self.opts.tail_lines

        def query(lines: int, limit_bytes: int) -> dict[str, Any]:
            # timestamps=true: the kubelet's time in front of every line (triage.logs.linetime),
            # a time with a year and a zone for the timeline and the stall measure.
            return {"container": container, "tailLines": lines, "limitBytes": limit_bytes,
                    "previous": "true" if stream == "previous" else None,
                    "timestamps": "true"}

        def probe(lines: int) -> tuple[bool, bytes]:
            # limitBytes is enforced here too: a server that ignores it sends more.
            got = self.reader.fetch(path, query(lines, limit), accept="*/*", cap=limit,
                                    fail_over_cap=False)
            return got.complete and len(got.data) < limit, got.data

        fits, body = probe(want)
        if fits:
            return body, ""
        # Stream the whole tail, keeping its last `limit` bytes.
        streamed = self.reader.fetch(path, query(want, self.opts.max_log_transfer),
                                     accept="*/*", cap=self.opts.max_log_transfer,
                                     keep="tail", ring=limit)
        if streamed.complete:
            return keep_end(streamed.data, streamed.total, f"the {want}-line tail")
        # More than max_log_transfer in the tail: the largest tail that fits.
        lo, lo_body, hi = 0, b"", want
        for _ in range(_MAX_LOG_PROBES):
            if hi - lo <= 1:
                break
            mid = (lo + hi) // 2
            fits, body = probe(mid)
            if fits:
                lo, lo_body = mid, body
            else:
                hi = mid
        cap_mib = self.opts.max_log_transfer // (1024 * 1024)
        if hi == lo + 1:
            # Line `hi` from the end is what does not fit: stream it and the
            # lines after it, keeping the end.
            streamed = self.reader.fetch(path, query(hi, self.opts.max_log_transfer),
                                         accept="*/*", cap=self.opts.max_log_transfer,
                                         keep="tail", ring=limit)
            if streamed.complete:
                return keep_end(streamed.data, streamed.total, f"the {want}-line tail")
            if lo == 0:
                raise ReadError(None, f"its last line is longer than {cap_mib} MiB: the end "
                                "of the log could not be read", "size")
            return lo_body, (f"read the last {lo} line(s) whole; the line before them is "
                             f"longer than {cap_mib} MiB and was not read")
        if lo == 0:
            raise ReadError(None, f"the end of the log could not be read within "
                            f"{_MAX_LOG_PROBES} requests", "size")
        return lo_body, (f"read the last {lo} line(s); the {want}-line tail is more than "
                         f"{cap_mib} MiB")

    def _metrics_jobs(self, snap: Snapshot, pod: Obj) -> list[Callable[[], None]]:
        ns, name = str(meta(pod).get("namespace")), str(meta(pod).get("name"))
        if (pod.get("status") or {}).get("phase") != "Running":
            return []
        vllm = [c for c in selection.triaged_containers(pod, self.opts.selector,
                                                        snap.selected_by_log)
                if workload.container_kind(pod, str(c.get("name"))) != "init container"]
        running = [c for c in vllm if workload.container_status(pod, str(c.get("name"))).get(
            "state", {}).get("running")]
        if not running:
            return []
        port = workload.metrics_port(running[0])

        def run() -> None:
            path = (f"/api/v1/namespaces/{quote(ns, safe='')}/pods/"
                    f"{quote(name, safe='')}:{port}/proxy/metrics")
            try:
                body = self.reader.get(path, accept="text/plain;version=0.0.4,*/*",
                                       cap=self.opts.max_metrics_bytes)
            except ReadError as exc:
                reason = exc.reason
                if exc.status is not None and exc.status >= 500 and \
                        "error trying to reach service" in reason:
                    # The API server's proxy could not connect to the pod (500 from a
                    # refused dial): the pod's server, not the API server, is down.
                    reason = f"nothing answers on port {port} of the pod ({reason})"
                snap.failures.append(ReadFailure(f"metrics of {ns}/{name} (port {port})",
                                                 reason, "metrics", (ns, name)))
                return
            snap.metrics[(ns, name)] = decode(body)
        return [run]
