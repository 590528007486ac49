"""Read vLLM, kube-state-metrics and DCGM series from Prometheus, GET only, with httpx.

One scrape of ``/metrics`` holds everything since the server started; the
question during an incident is what latency and the queue did in the last
minutes. This collector asks Prometheus' HTTP API (``/api/v1/query`` and
``/api/v1/query_range``) about the triaged pods over a window (``--since``),
evaluated at the snapshot's collection time, and stores the answers in the
snapshot as numbers under ``triage.vllm.metrics.METRICS`` names, a few series for
charts, and per-GPU DCGM values.

Every request is a GET with a deadline for the whole request (connect,
headers and body together, not per socket read) and a bounded body size.
Prometheus is reached directly (``--prometheus URL``, with a bearer token or
basic auth and a CA file) or through the API server's service proxy
(``--prometheus auto``), with the kubeconfig's own credentials. What fails is
a ``ReadFailure`` of kind ``prometheus`` and the report goes on from the
scrape.

Series are found by the ``namespace`` and ``pod`` labels that
kube-prometheus-stack, Google/Azure/AWS managed Prometheus and the
community chart's annotation scraping all attach. DCGM exporter series
carry the GPU's pod as ``exported_namespace``/``exported_pod`` when
Prometheus scraped the exporter without ``honorLabels`` (the exporter's own
pod takes ``pod``), and as ``namespace``/``pod`` with it; both are asked.
"""

from __future__ import annotations

import json
import math
import ssl
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import quote

import httpx

from triage import __version__
from triage.safety.redact import redact_text
from triage.snapshot import PodTelemetry, PrometheusWindow, ReadFailure, Snapshot, meta
from triage.vllm.metrics import HISTOGRAMS

MAX_BODY_BYTES = 8 * 1024 * 1024
WORKERS = 4
KIND = "prometheus"


@dataclass(frozen=True)
class ClusterAccess:
    """How to reach the API server with the kubeconfig's own credentials (for ``auto``)."""

    host: str
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    headers: dict[str, str] = field(default_factory=dict)  # Authorization
    verify: bool = True


@dataclass(frozen=True)
class PrometheusOptions:
    url: str  # an http(s) URL, or "auto"
    window_seconds: float = 1800.0
    token: str | None = None
    username: str | None = None
    password: str | None = None
    ca_file: str | None = None
    insecure_skip_tls_verify: bool = False
    timeout: float = 30.0  # deadline of one request, seconds
    cluster: ClusterAccess | None = None  # required for "auto"
    namespace_hint: str | None = None  # the scan's namespace, searched for a Prometheus too


class QueryError(Exception):
    def __init__(self, reason: str, unreachable: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        # Connection-level, a timeout or an answer over the size bound: stop asking (the
        # next queries of the same kind would cost as much and end the same way).
        self.unreachable = unreachable


def _one_line(text: str) -> str:
    return redact_text(" ".join(str(text).split()))[:400]


class Client:
    """GET requests to one base URL, each with a deadline and a size bound."""

    def __init__(self, http: httpx.Client, base: str, timeout: float) -> None:
        self.http = http
        self.base = base.rstrip("/")
        self.timeout = timeout

    def fetch(self, path: str, params: dict[str, str] | None = None) -> tuple[int, bytes]:
        """(status, body) of one GET; the deadline covers the whole request."""
        outcome: dict[str, Any] = {}

        def run() -> None:
            try:
                outcome["value"] = self._fetch(path, params)
            except QueryError as exc:  # handed to the waiting thread
                outcome["error"] = exc

        # The request runs on a daemon thread and the caller waits at most the
        # deadline: a server that trickles bytes cannot hold the scan, and a
        # request left behind cannot hold the process's exit.
        worker = threading.Thread(target=run, name="prometheus-get", daemon=True)
        worker.start()
        worker.join(self.timeout)
        if worker.is_alive():
            raise QueryError(f"timed out: no complete answer within {self.timeout:g}s",
                             unreachable=True)
        if "error" in outcome:
            raise outcome["error"]
        status, body = outcome["value"]
        return int(status), bytes(body)

    def _fetch(self, path: str, params: dict[str, str] | None) -> tuple[int, bytes]:
        try:
            with self.http.stream("GET", f"{self.base}{path}", params=params) as resp:
                body = bytearray()
                for chunk in resp.iter_bytes():
                    body += chunk
                    if len(body) > MAX_BODY_BYTES:
                        raise QueryError(f"answer larger than {MAX_BODY_BYTES // 2**20} MiB; "
                                         "not read", unreachable=True)
                return resp.status_code, bytes(body)
        except httpx.TimeoutException:
            raise QueryError(f"timed out: no answer within {self.timeout:g}s",
                             unreachable=True) from None
        except (httpx.HTTPError, ssl.SSLError, OSError) as exc:
            raise QueryError(f"{exc.__class__.__name__}: {_one_line(str(exc))}",
                             unreachable=True) from None

    def get_json(self, path: str, params: dict[str, str]) -> Any:
        """A Prometheus API GET: the ``data`` of a success, else a QueryError."""
        status, body = self.fetch(path, params)
        try:
            data = json.loads(body)
        except ValueError:
            snippet = _one_line(body[:200].decode("utf-8", "replace"))
            raise QueryError(f"HTTP {status}: not a Prometheus API answer: {snippet}",
                             unreachable=True) from None
        if not isinstance(data, dict):
            raise QueryError(f"HTTP {status}: not a Prometheus API answer", unreachable=True)
        if data.get("status") != "success":
            if "errorType" in data:  # Prometheus refused this query; others may work
                raise QueryError(f"HTTP {status} {data.get('errorType')}: "
                                 f"{_one_line(data.get('error') or 'no reason given')}")
            # A Status from the API server's proxy, or something else entirely.
            why = data.get("message") or data.get("error") or "no reason given"
            raise QueryError(f"HTTP {status}: {_one_line(why)}", unreachable=True)
        return data.get("data")

    def get_object(self, path: str) -> dict[str, Any]:
        """A Kubernetes API GET (for discovery)."""
        status, body = self.fetch(path)
        try:
            data = json.loads(body)
        except ValueError:
            data = {}
        if status >= 400:
            message = data.get("message") if isinstance(data, dict) else None
            raise QueryError(f"HTTP {status}" + (f": {_one_line(message)}" if message else ""),
                             unreachable=True)
        return data if isinstance(data, dict) else {}


def _tls_context(ca_file: str | None, verify: bool) -> ssl.SSLContext | bool:
    if not verify:
        return False
    if ca_file:
        return ssl.create_default_context(cafile=ca_file)
    return True


def _direct_client(opts: PrometheusOptions) -> tuple[Client, str]:
    auth: httpx.Auth | None = None
    headers = {"User-Agent": f"vllm-triage/{__version__}", "Accept": "application/json"}
    if opts.token:
        headers["Authorization"] = f"Bearer {opts.token}"
    elif opts.username:
        auth = httpx.BasicAuth(opts.username, opts.password or "")
    verify = _tls_context(opts.ca_file, not opts.insecure_skip_tls_verify)
    http = httpx.Client(headers=headers, auth=auth, verify=verify, timeout=opts.timeout,
                        follow_redirects=False, trust_env=False)
    return Client(http, opts.url, opts.timeout), redact_text(opts.url.rstrip("/"))


def _cluster_http(access: ClusterAccess, timeout: float) -> httpx.Client:
    headers = {"User-Agent": f"vllm-triage/{__version__}", "Accept": "application/json",
               **access.headers}
    cert = (access.cert_file, access.key_file) if access.cert_file and access.key_file else None
    return httpx.Client(headers=headers, verify=_tls_context(access.ca_file, access.verify),
                        cert=cert, timeout=timeout, follow_redirects=False, trust_env=False)


# --- finding a Prometheus in the cluster (auto) -------------------------------

_NOT_PROMETHEUS = ("alertmanager", "operator", "node-exporter", "pushgateway", "adapter",
                   "blackbox", "kube-state-metrics", "grafana", "exporter", "thanos-sidecar",
                   "config-reloader")
_SEARCHED_NAMESPACES = ("monitoring", "prometheus", "kube-prometheus-stack", "observability",
                        "gmp-public", "default")


def _service_port(svc: dict[str, Any]) -> str | None:
    ports = (svc.get("spec") or {}).get("ports") or []
    for want in ("web", "http-web", "http"):
        for p in ports:
            if p.get("name") == want:
                return str(p.get("port"))
    for p in ports:
        if p.get("port") in (9090, 80):
            return str(p.get("port"))
    return None


def _candidate(svc: dict[str, Any]) -> tuple[int, str, str, str] | None:
    """(rank, namespace, name, port) for a Service that serves Prometheus' API, else None."""
    md = meta(svc)
    name = str(md.get("name") or "")
    labels = md.get("labels") or {}
    app = " ".join(str(labels.get(k, "")) for k in ("app.kubernetes.io/name", "app",
                                                     "app.kubernetes.io/component"))
    if "prometheus" not in name and "prometheus" not in app:
        return None
    if any(word in name for word in _NOT_PROMETHEUS):
        return None
    port = _service_port(svc)
    if port is None:
        return None
    rank = 0 if port == "9090" else 1
    if name == "prometheus-operated":  # headless: fine, but the named Service is better
        rank += 2
    return rank, str(md.get("namespace") or ""), name, port


def discover(http: httpx.Client, access: ClusterAccess, timeout: float,
             namespace_hint: str | None) -> tuple[str, str]:
    """(service proxy base path, how it was found); QueryError when none is found."""
    api = Client(http, access.host, timeout)
    services: list[dict[str, Any]] = []
    refused: list[str] = []
    try:
        listed = api.get_object("/api/v1/services")
        services = [s for s in listed.get("items") or [] if isinstance(s, dict)]
    except QueryError as exc:
        if exc.unreachable and "HTTP 403" not in exc.reason:
            raise
        refused.append(f"services in all namespaces: {exc.reason}")
        for ns in dict.fromkeys((*_SEARCHED_NAMESPACES, *([namespace_hint]
                                                          if namespace_hint else []))):
            try:
                listed = api.get_object(f"/api/v1/namespaces/{quote(ns, safe='')}/services")
            except QueryError as inner:
                refused.append(f"services in {ns}: {inner.reason}")
                continue
            services += [s for s in listed.get("items") or [] if isinstance(s, dict)]
    found = sorted(c for c in (_candidate(s) for s in services) if c is not None)
    if not found:
        why = f" ({'; '.join(refused[:2])})" if refused else ""
        raise QueryError("--prometheus auto found no Prometheus Service (a Service named or "
                         "labelled prometheus with a port 9090, web or http)" + why)
    _, ns, name, port = found[0]
    path = (f"/api/v1/namespaces/{quote(ns, safe='')}/services/"
            f"{quote(name, safe='')}:{quote(port, safe='')}/proxy")
    others = len(found) - 1
    how = (f"service {ns}/{name}:{port} through the API server's service proxy (found by "
           f"--prometheus auto{f'; {others} other candidate(s)' if others else ''})")
    return path, how


# --- the queries ----------------------------------------------------------------

def _regex_alternatives(values: Iterable[str]) -> str:
    specials = set(r"\.^$|?*+()[]{}")
    escaped = ["".join("\\" + ch if ch in specials else ch for ch in v) for v in values]
    return "|".join(sorted(set(escaped)))


@dataclass(frozen=True)
class Query:
    name: str  # a METRICS name, or a "gpu:" / "restarts" key
    promql: str
    combine: str = "max"  # how models add up to the pod: max (levels) or sum (rates, counts)


def _or(template: str, names: Iterable[str]) -> str:
    """``template`` over each exposed name (``METRIC``), joined by ``or``: the newest wins."""
    return " or ".join(template.replace("METRIC", n) for n in names)


def vllm_queries(sel: str, window: str, resolution: str) -> list[Query]:
    by = "namespace, pod, model_name"
    out: list[Query] = []
    for logical, names in HISTOGRAMS.items():
        buckets = _or(f"rate(METRIC_bucket{{{sel}}}[{window}])", names)
        for label, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99)):
            out.append(Query(f"{logical}_{label}",
                             f"histogram_quantile({q}, sum by ({by}, le) ({buckets}))"))
        count = _or(f"increase(METRIC_count{{{sel}}}[{window}])", names)
        out.append(Query(f"{logical}_count", f"sum by ({by}) ({count})", "sum"))
        total = _or(f"rate(METRIC_sum{{{sel}}}[{window}])", names)
        per_s = _or(f"rate(METRIC_count{{{sel}}}[{window}])", names)
        out.append(Query(f"{logical}_mean", f"sum by ({by}) ({total}) / sum by ({by}) ({per_s})"))
    gauges = (("requests_waiting", "sum", ("vllm:num_requests_waiting",)),
              ("requests_running", "sum", ("vllm:num_requests_running",)),
              ("kv_cache_usage", "max", ("vllm:kv_cache_usage_perc",
                                         "vllm:gpu_cache_usage_perc")))
    for logical, engines, names in gauges:
        # Engines (data parallel) add up for requests; the fullest KV cache counts.
        level = f"{engines} by ({by}) ({_or(f'METRIC{{{sel}}}', names)})"
        combine = "sum" if engines == "sum" else "max"
        out.append(Query(logical, f"avg_over_time(({level})[{window}:{resolution}])", combine))
        out.append(Query(f"{logical}_max", f"max_over_time(({level})[{window}:{resolution}])",
                         combine))
    for logical, exposed, rate_name in (
            ("preemptions", "vllm:num_preemptions_total", "preemptions_per_s"),
            ("requests_finished", "vllm:request_success_total", "requests_per_s"),
            ("prompt_tokens", "vllm:prompt_tokens_total", "prompt_tokens_per_s"),
            ("generation_tokens", "vllm:generation_tokens_total", "generation_tokens_per_s")):
        # Counters over the window: how many in it, and how fast.
        out.append(Query(logical, f"sum by ({by}) (increase({exposed}{{{sel}}}[{window}]))",
                         "sum"))
        out.append(Query(rate_name, f"sum by ({by}) (rate({exposed}{{{sel}}}[{window}]))",
                         "sum"))
    out.append(Query("requests_aborted_per_s",
                     f'sum by ({by}) (rate(vllm:request_success_total{{{sel},'
                     f'finished_reason="abort"}}[{window}]))', "sum"))
    out.append(Query("request_errors_per_s",
                     f'sum by (namespace, pod) (rate(http_requests_total{{{sel},'
                     f'status=~"5.."}}[{window}]))', "sum"))
    return out


def chart_queries(sel: str, rate_window: str) -> list[Query]:
    by = "namespace, pod"
    e2e = _or(f"rate(METRIC_bucket{{{sel}}}[{rate_window}])", HISTOGRAMS["e2e_latency"])
    queue = _or(f"rate(METRIC_bucket{{{sel}}}[{rate_window}])", HISTOGRAMS["queue_time"])
    return [
        Query("e2e_latency_p99", f"histogram_quantile(0.99, sum by ({by}, le) ({e2e}))"),
        Query("queue_time_p99", f"histogram_quantile(0.99, sum by ({by}, le) ({queue}))"),
        Query("requests_waiting", f"sum by ({by}) (vllm:num_requests_waiting{{{sel}}})"),
        Query("requests_running", f"sum by ({by}) (vllm:num_requests_running{{{sel}}})"),
    ]


def memory_query(sel: str) -> str:
    """The containers' working set (cAdvisor; what the kernel OOM-kills at the limit), one
    series per container: not the pod's cgroup (container="") nor the pause container."""
    return (f'max by (namespace, pod, container) (container_memory_working_set_bytes'
            f'{{{sel},container!="",container!="POD"}})')


# DCGM field -> (key in a GPU's mapping, range function over the window)
DCGM_FIELDS = (
    ("DCGM_FI_DEV_FB_USED", "fb_used_mib_max", "max_over_time"),
    ("DCGM_FI_DEV_FB_USED", "fb_used_mib", "last_over_time"),
    ("DCGM_FI_DEV_FB_FREE", "fb_free_mib_min", "min_over_time"),
    ("DCGM_FI_DEV_FB_FREE", "fb_free_mib", "last_over_time"),
    ("DCGM_FI_DEV_FB_RESERVED", "fb_reserved_mib", "last_over_time"),
    ("DCGM_FI_DEV_GPU_UTIL", "util_percent_mean", "avg_over_time"),
    ("DCGM_FI_DEV_XID_ERRORS", "xid_last", "last_over_time"),
    ("DCGM_FI_DEV_XID_ERRORS", "xid_changes", "changes"),
)


def dcgm_query(field_name: str, fn: str, namespaces: str, pods: str, window: str) -> str:
    exported = f'{field_name}{{exported_namespace=~"{namespaces}",exported_pod=~"{pods}"}}'
    honored = f'{field_name}{{namespace=~"{namespaces}",pod=~"{pods}"}}'
    return f"{fn}({exported}[{window}]) or {fn}({honored}[{window}])"


def _pod_of(labels: dict[str, str]) -> tuple[str, str] | None:
    if labels.get("exported_pod"):
        return labels.get("exported_namespace", ""), labels["exported_pod"]
    if labels.get("pod"):
        return labels.get("namespace", ""), labels["pod"]
    return None


def _number(raw: Any) -> float | None:
    try:
        value = float(raw)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) or math.isinf(value) else value


def _promql_duration(seconds: float) -> str:
    return f"{max(1, round(seconds))}s"


def _rfc3339_to_unix(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


class PrometheusCollector:
    def __init__(self, opts: PrometheusOptions,
                 progress: Callable[[str], None] | None = None) -> None:
        self.opts = opts
        self.progress = progress or (lambda _msg: None)

    def _connect(self) -> tuple[Client, str]:
        if self.opts.url != "auto":
            return _direct_client(self.opts)
        access = self.opts.cluster
        if access is None:
            raise QueryError("--prometheus auto needs a cluster connection")
        http = _cluster_http(access, self.opts.timeout)
        path, how = discover(http, access, self.opts.timeout, self.opts.namespace_hint)
        return Client(http, access.host.rstrip("/") + path, self.opts.timeout), how

    def collect(self, snap: Snapshot) -> None:
        """Add what Prometheus says about the snapshot's pods; failures become ReadFailures."""
        pods = [(str(meta(p).get("namespace") or ""), str(meta(p).get("name") or ""))
                for p in snap.pods()]
        what = f"Prometheus {redact_text(self.opts.url)}"
        try:
            client, source = self._connect()
        except QueryError as exc:
            snap.failures.append(ReadFailure(what, exc.reason, KIND))
            return
        self.progress(f"asking {source}")
        window = PrometheusWindow(source=source, window_seconds=self.opts.window_seconds,
                                  end=snap.collected_at,
                                  step_seconds=max(15.0, self.opts.window_seconds / 60))
        if not pods:
            snap.prometheus = window
            return
        end = _rfc3339_to_unix(snap.collected_at)
        ns_re = _regex_alternatives(ns for ns, _ in pods)
        pod_re = _regex_alternatives(name for _, name in pods)
        sel = f'namespace=~"{ns_re}",pod=~"{pod_re}"'
        w = _promql_duration(self.opts.window_seconds)
        resolution = _promql_duration(window.step_seconds / 4)
        wanted = set(pods)
        telemetry: dict[tuple[str, str], PodTelemetry] = {}

        def tele(key: tuple[str, str]) -> PodTelemetry:
            return telemetry.setdefault(key, PodTelemetry())

        instant = vllm_queries(sel, w, resolution)
        charts = chart_queries(sel, _promql_duration(max(4 * window.step_seconds, 60.0)))
        ksm = Query("restarts", "sum by (namespace, pod, container) (increase("
                    f"kube_pod_container_status_restarts_total{{{sel}}}[{w}]))")
        dcgm = [(key, dcgm_query(f, fn, ns_re, pod_re, w)) for f, key, fn in DCGM_FIELDS]

        at = f"{end:.3f}"
        jobs: list[tuple[str, str, dict[str, str]]] = []
        for q in [*instant, ksm]:
            jobs.append((q.name, "/api/v1/query", {"query": q.promql, "time": at}))
        for gpu_key, promql in dcgm:
            jobs.append((f"gpu:{gpu_key}", "/api/v1/query", {"query": promql, "time": at}))
        for q in charts:
            jobs.append((f"chart:{q.name}", "/api/v1/query_range", {
                "query": q.promql, "start": f"{end - self.opts.window_seconds:.3f}",
                "end": f"{end:.3f}", "step": f"{window.step_seconds:g}"}))
        # Each container's working set over the window (cAdvisor, by pod and container, as
        # the latency series are read): a leak is a trend, not one value.
        jobs.append(("memory", "/api/v1/query_range", {
            "query": memory_query(sel), "start": f"{end - self.opts.window_seconds:.3f}",
            "end": f"{end:.3f}", "step": f"{window.step_seconds:g}"}))

        # The first query says whether Prometheus is there at all.
        results: dict[str, Any] = {}
        first_name, first_path, first_params = jobs[0]
        try:
            results[first_name] = client.get_json(first_path, first_params)
        except QueryError as exc:
            if exc.unreachable:
                snap.failures.append(ReadFailure(f"Prometheus {source}", exc.reason, KIND))
                return
            window.errors[first_name] = exc.reason
        stop = threading.Event()
        not_sent: list[str] = []

        def run(job: tuple[str, str, dict[str, str]]) -> None:
            name, path, params = job
            if stop.is_set():
                not_sent.append(name)
                return
            try:
                results[name] = client.get_json(path, params)
            except QueryError as exc:
                window.errors[name] = exc.reason
                if exc.unreachable:
                    stop.set()

        with ThreadPoolExecutor(max_workers=WORKERS) as pool:
            list(pool.map(run, jobs[1:]))
        if stop.is_set() or not results:
            reason = next(iter(window.errors.values()), "stopped answering")
            what = "every query" if not results else "stopped answering"
            if not_sent:
                reason += f"; the other {len(not_sent)} queries were not sent"
            snap.failures.append(ReadFailure(f"Prometheus {source} ({what})", reason, KIND))
            if not results:
                return
            # The answers that came in before it stopped are kept (a timeout on the
            # charts discarded the latency numbers already read); what was not answered
            # is unknown for every pod, named, never read as absent.
            for name in [*window.errors, *not_sent]:
                if name in {q.name for q in instant}:
                    for key in wanted:
                        tele(key).not_numbers.setdefault(name, "not answered (Prometheus "
                                                               "stopped answering)")
            window.errors.clear()  # said once, in the failure above

        combine = {q.name: q.combine for q in instant}
        for q in instant:
            for labels, raw in _samples(results.get(q.name)):
                key = (labels.get("namespace", ""), labels.get("pod", ""))
                value = _number(raw)
                if key in wanted and value is None and _non_number(raw):
                    tele(key).not_numbers[q.name] = str(_non_number(raw))
                if key not in wanted or value is None:
                    continue
                model = labels.get("model_name", "")
                tele(key).by_model.setdefault(model, {})[q.name] = value
        for sample in _vector(results.get("restarts")):
            labels, value = sample
            key = (labels.get("namespace", ""), labels.get("pod", ""))
            if key in wanted and value is not None:
                tele(key).restarts[labels.get("container", "")] = value
        self._gpus(client, results, dcgm, wanted, tele, w, end)
        for q in charts:
            for labels, points in _matrix(results.get(f"chart:{q.name}")):
                key = (labels.get("namespace", ""), labels.get("pod", ""))
                if key in wanted and points:
                    tele(key).series[q.name] = points
        for labels, points in _matrix(results.get("memory")):
            key = (labels.get("namespace", ""), labels.get("pod", ""))
            if key in wanted and points and labels.get("container"):
                tele(key).memory[labels["container"]] = points
        for t in telemetry.values():
            t.values = _pod_values(t.by_model, combine)
        window.pods = dict(sorted(telemetry.items()))
        if window.errors:
            # Some queries failed, others answered: one line naming them all.
            names = sorted(window.errors)
            first = window.errors[names[0]]
            snap.failures.append(ReadFailure(
                f"Prometheus query {', '.join(names)} ({source})", first, KIND))
        snap.prometheus = window

    def _gpus(self, client: Client, results: dict[str, Any], dcgm: list[tuple[str, str]],
              wanted: set[tuple[str, str]],
              tele: Callable[[tuple[str, str]], PodTelemetry], w: str, end: float) -> None:
        gpus: dict[tuple[tuple[str, str], str], dict[str, Any]] = {}
        for key, _ in dcgm:
            for labels, value in _vector(results.get(f"gpu:{key}")):
                pod = _pod_of(labels)
                if pod is None or pod not in wanted or value is None:
                    continue
                uuid = labels.get("UUID") or labels.get("uuid") or labels.get("gpu", "")
                gpu = gpus.setdefault((pod, uuid), {
                    "uuid": uuid, "gpu": labels.get("gpu", ""),
                    "model": labels.get("modelName", ""),
                    "hostname": labels.get("hostname") or labels.get("Hostname", ""),
                    "container": labels.get("exported_container") or labels.get("container", "")})
                gpu[key] = value
        uuids = sorted({uuid for (_, uuid) in gpus if uuid.startswith("GPU-")})
        if uuids:
            # Who else DCGM attributes the same GPUs to, over the window.
            u_re = _regex_alternatives(uuids)
            promql = (f'last_over_time(DCGM_FI_DEV_FB_USED{{UUID=~"{u_re}"}}[{w}]) or '
                      f'last_over_time(DCGM_FI_DEV_FB_USED{{uuid=~"{u_re}"}}[{w}])')
            try:
                shared = client.get_json("/api/v1/query", {"query": promql, "time": f"{end:.3f}"})
            except QueryError:
                shared = None
            holders: dict[str, set[tuple[str, str]]] = {}
            for labels, _ in _vector(shared):
                uuid = labels.get("UUID") or labels.get("uuid") or ""
                pod = _pod_of(labels)
                if pod and pod[1]:
                    holders.setdefault(uuid, set()).add(pod)
            for (pod, uuid), gpu in gpus.items():
                others = sorted(f"{ns}/{name}" for ns, name in holders.get(uuid, set())
                                if (ns, name) != pod)
                gpu["shared_with"] = others
        for (pod, _), gpu in sorted(gpus.items(), key=lambda kv: (kv[0][0], kv[1].get("gpu"),
                                                                   kv[0][1])):
            tele(pod).gpus.append(gpu)


def _pod_values(by_model: dict[str, dict[str, float]],
                combine: dict[str, str]) -> dict[str, float]:
    """The pod's numbers from its models': rates and counts add up, levels take the worst."""
    out: dict[str, float] = {}
    for values in by_model.values():
        for name, value in values.items():
            if name not in out:
                out[name] = value
            elif combine.get(name) == "sum":
                out[name] += value
            else:
                out[name] = max(out[name], value)
    for ratio, top, bottom in (("e2e_latency_p99_over_p50", "e2e_latency_p99",
                                "e2e_latency_p50"),
                               ("ttft_p99_over_p50", "ttft_p99", "ttft_p50")):
        ratios = [v[top] / v[bottom] for v in by_model.values()
                  if v.get(bottom) and v.get(top) is not None]
        if ratios:
            out[ratio] = max(ratios)
    return dict(sorted(out.items()))


def _results(data: Any, kind: str) -> Iterator[tuple[dict[str, str], dict[str, Any]]]:
    """(labels, item) of each series of a query answer of this resultType; others none."""
    if not isinstance(data, dict) or data.get("resultType") != kind:
        return
    for item in data.get("result") or []:
        if isinstance(item, dict):
            yield {str(k): str(v) for k, v in (item.get("metric") or {}).items()}, item


def _samples(data: Any) -> list[tuple[dict[str, str], Any]]:
    """(labels, the value as Prometheus wrote it) of each series of a vector answer."""
    out = []
    for labels, item in _results(data, "vector"):
        value = item.get("value") or [None, None]
        out.append((labels, value[1] if isinstance(value, list) and len(value) > 1 else None))
    return out


def _vector(data: Any) -> list[tuple[dict[str, str], float | None]]:
    return [(labels, _number(raw)) for labels, raw in _samples(data)]


def _non_number(raw: Any) -> str | None:
    """"NaN", "+Inf" or "-Inf" for a value Prometheus answered as one, else None."""
    try:
        value = float(raw)
    except (TypeError, ValueError):
        return None
    if math.isnan(value):
        return "NaN"
    return ("+Inf" if value > 0 else "-Inf") if math.isinf(value) else None


def _matrix(data: Any) -> list[tuple[dict[str, str], list[tuple[float, float]]]]:
    out = []
    for labels, item in _results(data, "matrix"):
        points = []
        for pair in item.get("values") or []:
            t, v = _number(pair[0]), _number(pair[1])
            if t is not None and v is not None:
                points.append((t, v))
        out.append((labels, points))
    return out
