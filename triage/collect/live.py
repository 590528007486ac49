"""Read a live cluster through the Kubernetes API, GET requests only.

Uses the official ``kubernetes`` client for configuration (kubeconfig,
``KUBECONFIG``, in-cluster service account), authentication and TLS, and its
ApiClient for the requests, asking for raw JSON so the snapshot keeps the
API's own shape. Objects get the structural redaction pass as they are read;
log and metrics text is redacted where it leaves the tool (report, bundle).
One list call per kind and namespace, never per pod; everything after the
first pod list runs concurrently in a bounded pool. A read that fails is
recorded and the scan goes on.
"""

from __future__ import annotations

import json
import os
import socket
import ssl
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import quote

import urllib3
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.config.config_exception import ConfigException

from triage import __version__, selection, workload
from triage.collect import ClusterUnreachable, InputError
from triage.logs import decode
from triage.redact import redact_object
from triage.snapshot import Obj, ReadFailure, Snapshot, meta

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
}
# Kinds whose absence (404 on the list) means "not installed", not "failed".
_OPTIONAL_KINDS = {"inferenceservices"}

_IN_CLUSTER_NS = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


@dataclass
class Options:
    namespace: str | None  # None with all_namespaces
    all_namespaces: bool = False
    selector: str | None = None
    tail_lines: int = 3000
    limit_bytes: int = 4 * 1024 * 1024
    request_timeout: float = 15.0
    workers: int = 8
    metrics: bool = True


class ReadError(Exception):
    def __init__(self, status: int | None, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass
class Connection:
    api: Any  # kubernetes.client.ApiClient
    context: str | None
    default_namespace: str


def connect(kubeconfig: str | None, context: str | None, timeout: float) -> Connection:
    """Load credentials the way kubectl does: --kubeconfig, $KUBECONFIG, in-cluster."""
    cfg = k8s.Configuration()
    ctx_name: str | None = context
    namespace = "default"
    env_config = os.environ.get("KUBECONFIG")
    in_cluster = (
        kubeconfig is None
        and not env_config
        and not Path(os.path.expanduser("~/.kube/config")).exists()
        and "KUBERNETES_SERVICE_HOST" in os.environ
    )
    path = kubeconfig or env_config or os.path.expanduser("~/.kube/config")
    source = "--kubeconfig" if kubeconfig else "$KUBECONFIG" if env_config else "default"
    try:
        if in_cluster:
            k8s_config.load_incluster_config(client_configuration=cfg)
            ctx_name = "in-cluster"
            if _IN_CLUSTER_NS.exists():
                namespace = _IN_CLUSTER_NS.read_text().strip() or namespace
        else:
            files = [p for p in path.split(os.pathsep) if p]
            missing = [p for p in files if not Path(p).exists()]
            if (kubeconfig and missing) or len(missing) == len(files):
                raise InputError(f"kubeconfig {', '.join(missing) or path} ({source}) does not "
                                 "exist, and this is not running in a pod")
            contexts, active = k8s_config.list_kube_config_contexts(config_file=path)
            chosen = active
            if context:
                chosen = next((c for c in contexts if c.get("name") == context), None)
                if chosen is None:
                    raise InputError(f"context {context!r} not found in kubeconfig {path}")
            if chosen is None:
                raise InputError(f"kubeconfig {path} has no current context; pass --context")
            ctx_name = chosen.get("name")
            namespace = (chosen.get("context") or {}).get("namespace") or namespace
            k8s_config.load_kube_config(
                config_file=path, context=ctx_name, client_configuration=cfg, persist_config=False
            )
    except InputError:
        raise
    except Exception as exc:  # yaml errors and anything the loader raises on bad input
        what = "" if isinstance(exc, ConfigException) else f"{exc.__class__.__name__}: "
        where = "in-cluster configuration" if in_cluster else f"kubeconfig {path}"
        raise InputError(f"cannot load {where}: {what}{_one_line(str(exc))}") from None
    cfg.retries = False  # a dead API server must fail fast, not retry for minutes
    cfg.connection_pool_maxsize = 16
    api = k8s.ApiClient(cfg)
    api.user_agent = f"vllm-triage/{__version__}"
    return Connection(api, ctx_name, namespace)


def _one_line(text: str) -> str:
    return " ".join(text.split())[:400]


class Reader:
    """GET one API path and return its body; every failure becomes a ReadError."""

    def __init__(self, conn: Connection, timeout: float) -> None:
        self.api = conn.api
        self.timeout = timeout

    def get(self, path: str, query: dict[str, Any] | None = None, accept: str = "application/json",
            ) -> bytes:
        params = [(k, v) for k, v in (query or {}).items() if v is not None]
        try:
            # The client's own serializer adds the credentials (bearer token,
            # exec plugin token refresh) exactly as its typed methods would.
            _, url, headers, _, _ = self.api.param_serialize(
                "GET", path, query_params=params, header_params={"Accept": accept},
                auth_settings=["BearerToken"],
            )
            resp = self.api.call_api("GET", url, header_params=headers,
                                     _request_timeout=self.timeout)
            body: bytes = resp.read()
        except urllib3.exceptions.HTTPError as exc:
            raise ReadError(None, _network_reason(exc, self.timeout)) from None
        except (TimeoutError, OSError, ssl.SSLError) as exc:
            raise ReadError(None, f"{exc.__class__.__name__}: {_one_line(str(exc))}") from None
        if resp.status >= 400:
            raise ReadError(resp.status, _status_reason(resp.status, body))
        return body

    def get_json(self, path: str, query: dict[str, Any] | None = None) -> Obj:
        body = self.get(path, query)
        try:
            data = json.loads(body)
        except ValueError:
            raise ReadError(None, f"the API server returned non-JSON for {path}") from None
        if not isinstance(data, dict):
            raise ReadError(None, f"the API server returned {type(data).__name__} for {path}")
        return data


def _network_reason(exc: Exception, timeout: float | None = None) -> str:
    inner = getattr(exc, "reason", None) or exc
    text = _one_line(str(inner))
    if "timed out" in text.lower() or isinstance(inner, (TimeoutError, socket.timeout)):
        if timeout is not None:
            return f"timed out: no answer within --request-timeout {timeout:g}s"
        return f"timed out ({text})"
    return text


def _status_reason(status: int, body: bytes) -> str:
    names = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
             429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway",
             503: "Service Unavailable", 504: "Gateway Timeout"}
    message = ""
    try:
        data = json.loads(body)
        if isinstance(data, dict):
            message = str(data.get("message") or "")
    except ValueError:
        message = decode(body[:300]).strip()
    label = f"{status} {names.get(status, '')}".strip()
    return f"{label}: {_one_line(message)}" if message else label


def _now() -> str:
    """The collection time, RFC 3339 UTC. SOURCE_DATE_EPOCH (the reproducible-
    builds convention) pins it, so two runs can produce byte-identical reports."""
    pinned = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    now = datetime.now(timezone.utc)
    if pinned.isdigit():
        now = datetime.fromtimestamp(int(pinned), timezone.utc)
    return now.replace(microsecond=0).isoformat().replace("+00:00", "Z")


class LiveCollector:
    def __init__(self, conn: Connection, opts: Options,
                 progress: Callable[[str], None] | None = None) -> None:
        self.conn = conn
        self.opts = opts
        self.reader = Reader(conn, opts.request_timeout)
        self.progress = progress or (lambda _msg: None)

    def _ns_path(self, prefix: str, plural: str, ns: str | None) -> str:
        if ns is None:
            return f"{prefix}/{plural}"
        return f"{prefix}/namespaces/{quote(ns, safe='')}/{plural}"

    def collect(self) -> Snapshot:
        ns = None if self.opts.all_namespaces else self.opts.namespace
        snap = Snapshot(
            context=self.conn.context,
            namespace=ns,
            collected_at=_now(),
            tool_version=__version__,
            selector=self.opts.selector,
        )
        self.progress(f"listing pods in {ns or 'all namespaces'}")
        pods = self._list_pods(ns)
        chosen = selection.select_pods(pods, self.opts.selector)
        snap.objects["pods"] = [redact_object(p) for p in chosen]

        jobs: list[tuple[str, Callable[[], None]]] = []
        for kind, (prefix, plural) in _NAMESPACED_PATHS.items():
            jobs.append((kind, self._lister(snap, kind, self._ns_path(prefix, plural, ns), ns)))
        jobs += self._node_jobs(snap, chosen)
        jobs += self._configmap_jobs(snap, chosen)
        for pod in chosen:
            jobs += self._log_jobs(snap, pod)
            if self.opts.metrics:
                jobs += self._metrics_jobs(snap, pod)
        done = 0
        with ThreadPoolExecutor(max_workers=self.opts.workers) as pool:
            futures = [pool.submit(fn) for _, fn in jobs]
            for fut in futures:
                fut.result()
                done += 1
                self.progress(f"read {done}/{len(jobs)}")
        # Keep the order of the API's lists stable for reproducible reports.
        snap.failures.sort(key=lambda f: (f.kind, f.what))
        return snap

    def _list_pods(self, ns: str | None) -> list[Obj]:
        path = self._ns_path("/api/v1", "pods", ns)
        try:
            data = self.reader.get_json(path, {"labelSelector": self.opts.selector})
        except ReadError as exc:
            server = self.conn.api.configuration.host
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
        return [p for p in data.get("items") or [] if isinstance(p, dict)]

    def _lister(self, snap: Snapshot, kind: str, path: str,
                ns: str | None) -> Callable[[], None]:
        def run() -> None:
            try:
                data = self.reader.get_json(path)
            except ReadError as exc:
                if exc.status == 404 and kind in _OPTIONAL_KINDS:
                    snap.absent_kinds.add(kind)
                    return
                snap.failures.append(ReadFailure(f"{kind} ({path})", exc.reason, kind,
                                                 (ns,) if ns is not None else ()))
                return
            snap.objects[kind] = [redact_object(o) for o in data.get("items") or []
                                  if isinstance(o, dict)]
        return run

    def _node_jobs(self, snap: Snapshot, pods: list[Obj]) -> list[tuple[str, Callable[[], None]]]:
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
                data = self.reader.get_json("/api/v1/nodes")
            except ReadError as exc:
                snap.failures.append(ReadFailure("nodes (/api/v1/nodes)", exc.reason, "nodes"))
                return
            for node in data.get("items") or []:
                add(node)

        def read_one(name: str) -> Callable[[], None]:
            def run() -> None:
                try:
                    add(self.reader.get_json(f"/api/v1/nodes/{quote(name, safe='')}"))
                except ReadError as exc:
                    snap.failures.append(ReadFailure(f"node {name}", exc.reason, "nodes", (name,)))
            return run

        if pending:
            return [("nodes", list_all)]
        return [("nodes", read_one(n)) for n in names]

    def _configmap_jobs(self, snap: Snapshot,
                        pods: list[Obj]) -> list[tuple[str, Callable[[], None]]]:
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
                    snap.objects["configmaps"].append(redact_object(self.reader.get_json(path)))
                except ReadError as exc:
                    snap.failures.append(ReadFailure(f"configmap {ns}/{name}", exc.reason,
                                                     "configmaps", (ns, name)))
            return run
        return [("configmaps", read(ns, name)) for ns, name in sorted(wanted)]

    def _log_jobs(self, snap: Snapshot, pod: Obj) -> list[tuple[str, Callable[[], None]]]:
        ns, name = str(meta(pod).get("namespace")), str(meta(pod).get("name"))
        jobs: list[tuple[str, Callable[[], None]]] = []
        for container in selection.triaged_containers(pod, self.opts.selector):
            cname = str(container.get("name"))
            status = workload.container_status(pod, cname)
            streams = []
            if status.get("state", {}).get("running") or status.get("state", {}).get("terminated"):
                streams.append("current")
            if status.get("lastState", {}).get("terminated") or status.get("restartCount"):
                streams.append("previous")
            for stream in streams:
                jobs.append(("logs", self._log_reader(snap, ns, name, cname, stream)))
        return jobs

    def _log_reader(self, snap: Snapshot, ns: str, pod: str, container: str,
                    stream: str) -> Callable[[], None]:
        def run() -> None:
            path = f"/api/v1/namespaces/{quote(ns, safe='')}/pods/{quote(pod, safe='')}/log"
            label = "previous log" if stream == "previous" else "log"
            tail = self.opts.tail_lines
            while True:
                query = {"container": container, "tailLines": tail,
                         "limitBytes": self.opts.limit_bytes,
                         "previous": "true" if stream == "previous" else None}
                try:
                    body = self.reader.get(path, query, accept="*/*")
                except ReadError as exc:
                    snap.failures.append(ReadFailure(f"{label} of {ns}/{pod} ({container})",
                                                     exc.reason, "logs",
                                                     (ns, pod, container, stream)))
                    return
                # limitBytes keeps the *first* bytes of the tail, so a few huge lines
                # would push out the end of the log, where a crash is. Ask for fewer
                # lines until the tail fits.
                if len(body) < self.opts.limit_bytes or tail <= 1:
                    break
                # The lines that fit show how long they are: jump, do not creep.
                tail = max(1, min(tail // 10, body.count(b"\n") // 2))
            snap.logs[(ns, pod, container, stream)] = decode(body)
        return run

    def _metrics_jobs(self, snap: Snapshot, pod: Obj) -> list[tuple[str, Callable[[], None]]]:
        ns, name = str(meta(pod).get("namespace")), str(meta(pod).get("name"))
        if (pod.get("status") or {}).get("phase") != "Running":
            return []
        vllm = selection.triaged_containers(pod, self.opts.selector)
        running = [c for c in vllm if workload.container_status(pod, str(c.get("name"))).get(
            "state", {}).get("running")]
        if not running:
            return []
        port = workload.metrics_port(running[0])

        def run() -> None:
            path = (f"/api/v1/namespaces/{quote(ns, safe='')}/pods/"
                    f"{quote(name, safe='')}:{port}/proxy/metrics")
            try:
                body = self.reader.get(path, accept="text/plain;version=0.0.4,*/*")
            except ReadError as exc:
                snap.failures.append(ReadFailure(f"metrics of {ns}/{name} (port {port})",
                                                 exc.reason, "metrics", (ns, name)))
                return
            snap.metrics[(ns, name)] = decode(body)
        return [("metrics", run)]
