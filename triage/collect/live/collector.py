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
from triage.kube import workload
from triage.logs import LogSource, decode
from triage.safety.redact import redact_object
from triage.safety.shell import unnamed_cluster
from triage.snapshot import Obj, ReadFailure, Snapshot, meta
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


def _now() -> str:
    """The collection time, RFC 3339 UTC. SOURCE_DATE_EPOCH (the reproducible-
    builds convention) pins it, so two runs can produce byte-identical reports."""
    pinned = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    now = datetime.now(timezone.utc)
    if pinned.isdigit():
        now = datetime.fromtimestamp(int(pinned), timezone.utc)
    return now.replace(microsecond=0).isoformat().replace("+00:00", "Z")


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
        shared += self._node_jobs(snap, chosen)
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
            try:
                snap.objects[kind] = self.reader.list_items(path, keep=keep)
            except ReadError as exc:
                if exc.status == 404 and kind in _OPTIONAL_KINDS:
                    snap.absent_kinds.add(kind)
                    return
                snap.failures.append(ReadFailure(f"{kind} ({path})", exc.reason, kind,
                                                 (ns,) if ns is not None else ()))
        return run

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
        """Only ConfigMaps a vLLM container mounts (a --config file may live there)."""
        wanted: set[tuple[str, str]] = set()
        for pod in pods:
            ns = str(meta(pod).get("namespace"))
            for vol in workload.pod_spec(pod).get("volumes") or []:
                name = (vol.get("configMap") or {}).get("name")
                if name:
                    wanted.add((ns, str(name)))
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
                snap.failures.append(ReadFailure(what, exc.reason, "logs",
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
                snap.failures.append(ReadFailure(f"metrics of {ns}/{name} (port {port})",
                                                 exc.reason, "metrics", (ns, name)))
                return
            snap.metrics[(ns, name)] = decode(body)
        return [run]
