"""Read a live cluster through the Kubernetes API, GET requests only.

Uses the official ``kubernetes`` client for configuration (kubeconfig,
``KUBECONFIG``, in-cluster service account), authentication and TLS, and its
ApiClient for the requests, asking for raw JSON so the snapshot keeps the
API's own shape. Objects get the structural redaction pass as they are read;
log and metrics text is redacted where it leaves the tool (report, bundle).
Lists are paged as kubectl pages them (``limit`` 500 and the ``continue``
token, one list per kind and namespace, never a read per pod), and each
page is filtered as it arrives: pods that are not triaged, events about
other pods and objects in namespaces with no triaged pod are dropped before
the next page is read, so memory follows the pods analysed, not the
cluster. Everything after the pod list runs concurrently in a bounded pool.
A read that fails is recorded and the scan goes on.
"""

from __future__ import annotations

import binascii
import difflib
import json
import logging
import os
import signal
import socket
import ssl
import sys
import threading
import time
import warnings
import zlib
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager, suppress
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import regex
import urllib3
import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.config.config_exception import ConfigException

from triage import __version__
from triage.collect import ClusterUnreachable, InputError, NamespaceNotFound
from triage.collect.live import proxies, transport
from triage.collect.logtail import keep_end, size_label
from triage.collect.shape import Shaped, normalize, normalize_items
from triage.kube import workload
from triage.logs import LogSource, decode
from triage.safety.redact import redact_object, redact_text
from triage.safety.sanitize import one_line
from triage.snapshot import Obj, ReadFailure, Snapshot, meta
from triage.vllm import selection

if TYPE_CHECKING:  # httpx and the Prometheus client load only when --prometheus is given
    from triage.collect.prometheus import ClusterAccess, PrometheusOptions

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

# kubectl's --chunk-size: the page size a real API server is used to being asked for.
PAGE_SIZE = 500
# -A lists events per namespace with a triaged pod, up to this many namespaces.
EVENT_NAMESPACES_MAX = 32

_IN_CLUSTER_NS = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


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
    max_json_bytes: int = 128 * 1024 * 1024  # one API answer (a list)
    max_metrics_bytes: int = 16 * 1024 * 1024  # one /metrics page (vLLM's is ~100 KiB)
    # Bytes streamed to reach the end of a log line longer than limit_bytes.
    max_log_transfer: int = 256 * 1024 * 1024
    prometheus: PrometheusOptions | None = None  # --prometheus: ask it about the window


class ReadError(Exception):
    """A read that failed; ``kind`` says how: status (an HTTP error answer),
    timeout, tls, network, protocol (an answer that is not what was asked
    for) or size (an answer over its cap)."""

    def __init__(self, status: int | None, reason: str, kind: str = "status") -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.kind = kind


@dataclass
class Connection:
    api: Any  # kubernetes.client.ApiClient
    context: str | None
    default_namespace: str


Say = Callable[[str], None]


def _stderr_line(line: str) -> None:
    sys.stderr.write(redact_text(one_line(line, 600)) + "\n")
    sys.stderr.flush()


class _ClientLog(logging.Handler):
    """The kubernetes client logs through the root logger (an exec credential
    plugin's failure and its stderr, token refresh errors). Nothing of it may
    reach the terminal raw: each record becomes one redacted, sanitised line,
    shown once; an exec plugin failure becomes the error it is."""

    def __init__(self, say: Say) -> None:
        super().__init__(logging.WARNING)
        self.say = say
        self.seen: list[str] = []
        self.exec_reported = False

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = one_line(record.getMessage(), 600)
        except Exception:  # a malformed record must not take the scan down
            text = str(record.msg)[:600]
        if text in self.seen:
            return
        self.seen.append(text)
        if self.exec_reported and text.startswith("exec:"):
            return  # a token refresh that failed: _BoundedRefresh says it as the error
        if not _connecting.is_set():
            self.say(f"vllm-triage: warning: kubernetes client: {text}")


_connecting = threading.Event()
_client_log: _ClientLog | None = None


def _capture_client_log(say: Say) -> _ClientLog:
    global _client_log
    root = logging.getLogger()
    if _client_log is not None:
        root.removeHandler(_client_log)
    _client_log = _ClientLog(say)
    root.addHandler(_client_log)
    logging.getLogger("urllib3").setLevel(logging.ERROR)  # pool-full notes are not news
    return _client_log


def connect(kubeconfig: str | None, context: str | None, timeout: float,
            say: Say = _stderr_line) -> Connection:
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
    log = _capture_client_log(say)
    command = ""  # the kubeconfig's exec credential plugin, if it has one
    _connecting.set()
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
                    raise InputError(_context_not_found(context, path, contexts))
            if chosen is None:
                raise InputError(f"kubeconfig {path} has no current context; pass --context")
            ctx_name = chosen.get("name")
            namespace = (chosen.get("context") or {}).get("namespace") or namespace
            command = _exec_command(path, chosen)
            _bounded(lambda: k8s_config.load_kube_config(
                config_file=path, context=ctx_name, client_configuration=cfg,
                persist_config=False), timeout, ctx_name, command)
    except (InputError, ClusterUnreachable):
        raise
    except Exception as exc:  # yaml errors and anything the loader raises on bad input
        where = "in-cluster configuration" if in_cluster else f"kubeconfig {path}"
        raise InputError(f"cannot load {where}: {_config_problem(exc)}") from None
    finally:
        _connecting.clear()
    exec_failed = next((m for m in log.seen if m.startswith("exec:")), None)
    if exec_failed is not None:
        # The client logs the failure and goes on without credentials, which
        # the API server then refuses (401): name the real cause instead.
        raise ClusterUnreachable(f"the exec credential plugin of context {ctx_name!r} failed: "
                                 f"{exec_failed.removeprefix('exec:').strip()}")
    for note in log.seen:
        say(f"vllm-triage: warning: kubernetes client: {note}")
    _choose_proxy(cfg, say)
    if command and cfg.refresh_api_key_hook is not None:
        cfg.refresh_api_key_hook = _BoundedRefresh(cfg.refresh_api_key_hook, timeout,
                                                   ctx_name, command, log)
    cfg.retries = False  # a dead API server must fail fast, not retry for minutes
    cfg.connection_pool_maxsize = 16
    if not cfg.verify_ssl:
        # One line, not one multi-line warning per request.
        warnings.filterwarnings("ignore", category=urllib3.exceptions.InsecureRequestWarning)
        say(f"vllm-triage: warning: the API server's certificate is not verified "
            f"(insecure-skip-tls-verify in context {ctx_name!r})")
    api = k8s.ApiClient(cfg)
    api.user_agent = f"vllm-triage/{__version__}"
    transport.install(api.rest_client.pool_manager)
    return Connection(api, ctx_name, namespace)


def _context_not_found(context: str, path: str, contexts: list[Any]) -> str:
    """'context "prod" not found in kubeconfig F; contexts: ...', closest first."""
    names = [str(c.get("name")) for c in contexts if isinstance(c, dict) and c.get("name")]
    message = f"context {context!r} not found in kubeconfig {path}"
    if not names:
        return message + " (it has no contexts)"
    close = difflib.get_close_matches(context, names, n=3, cutoff=0.5)
    rest = [n for n in names if n not in close]
    listed = close + rest
    shown = ", ".join(listed[:12]) + (f" and {len(listed) - 12} more" if len(listed) > 12
                                      else "")
    return message + (f"; did you mean {', '.join(close)}?" if close else "") + \
        f"; contexts: {shown}"


def list_contexts(kubeconfig: str | None) -> list[str]:
    """Every context of the kubeconfig (--all-contexts), in the file's order."""
    path = kubeconfig or os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")
    try:
        contexts, _active = k8s_config.list_kube_config_contexts(config_file=path)
    except Exception as exc:
        raise InputError(f"cannot read the contexts of kubeconfig {path}: "
                         f"{_one_line(str(exc))}") from None
    names = [str(c.get("name")) for c in contexts or [] if c.get("name")]
    if not names:
        raise InputError(f"kubeconfig {path} has no contexts")
    return names


def _config_problem(exc: Exception) -> str:
    """What is wrong with a kubeconfig, in words: no library class names (a YAML
    ParserError, binascii's Error, the client's ConfigException wording)."""
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        return f"it is not valid YAML ({exc.problem or exc.context or 'unreadable'}{at})"
    if isinstance(exc, yaml.YAMLError):
        return "it is not valid YAML"
    if isinstance(exc, (TypeError, AttributeError, KeyError, IndexError)):
        return "it is not a kubeconfig (a mapping with clusters, contexts and users)"
    text = _one_line(str(exc))
    if isinstance(exc, binascii.Error) or "base64" in text:
        return f"a base64 value in it does not decode ({_first_lower(text)})"
    if isinstance(exc, ConfigException):
        m = _MISSING_KEY.search(text)
        if m:
            return f"it has no {m.group(1)}"
        m = _MISSING_NAMED.search(text)
        if m:
            kind = m.group(2).rsplit("/", 1)[-1].removesuffix("s")
            return f"it has no {kind} named {m.group(1)!r}"
        text = text.removeprefix("Invalid kube-config file. ")
    text = _CLASS_PREFIX.sub("", text)
    return _first_lower(text) if text else "it could not be read"


_MISSING_KEY = regex.compile(r"Expected key (\S+) in")
_MISSING_NAMED = regex.compile(r"Expected object with name (\S*) in (\S+) list")
_CLASS_PREFIX = regex.compile(r"^(?:[A-Za-z_][\w.]*(?:Error|Exception|Warning)|Error):\s*")


def _first_lower(text: str) -> str:
    return text[:1].lower() + text[1:] if text[1:2].islower() else text


def _one_line(text: str) -> str:
    return " ".join(text.split())[:400]


def _choose_proxy(cfg: Any, say: Say) -> None:
    """The proxy as kubectl picks it (triage.collect.live.proxies), applied to the client; and
    no credential sent to a proxy over plain http."""
    from_kubeconfig = cfg.proxy if not getattr(cfg, "_proxy_from_env", False) else None
    chosen = proxies.proxy_for(str(cfg.host), from_kubeconfig)
    cfg.proxy = chosen
    cfg.no_proxy = ""  # decided above: the client must not second-guess it
    if chosen and str(cfg.host).lower().startswith("http://"):
        cfg.api_key, cfg.api_key_prefix, cfg.refresh_api_key_hook = {}, {}, None
        cfg.username = cfg.password = ""
        say(f"vllm-triage: warning: the API server {cfg.host} is plain http and reached "
            f"through the proxy {redact_text(chosen)}: no credentials are sent (they would "
            "cross the proxy in clear)")


def _bounded(load: Callable[[], None], timeout: float, context: str | None,
             command: str) -> None:
    """Load the kubeconfig, which runs its exec credential plugin, within --request-timeout:
    a plugin that never returns (a login prompt with no terminal) is named and stopped."""
    failure: list[BaseException] = []

    def run() -> None:
        try:
            load()
        except BaseException as exc:  # handed to the waiting thread
            failure.append(exc)
    worker = threading.Thread(target=run, name="kubeconfig-load", daemon=True)
    before = _children()
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        _stop(_children() - before)  # the plugin this load started, and nothing else
        raise ClusterUnreachable(
            f"the exec credential plugin of context {context!r}"
            + (f" ({command})" if command else "")
            + f" did not return within --request-timeout {timeout:g}s")
    if failure:
        raise failure[0]


class _BoundedRefresh:
    """The client's token refresh hook, bounded as the kubeconfig's load is (``_bounded``).

    The kubernetes client calls it before every request (``auth_settings``); once the exec
    plugin's token is within five minutes of its expiry it runs the plugin again, in the
    requesting thread, with no time limit: a plugin that hangs then (an expired refresh
    token, a login prompt) hung the scan, and every pool thread ran a plugin of its own.
    Here one refresh runs at a time (the requests waiting for it take its token), within
    --request-timeout; a plugin that does not return is stopped with its children, and
    it and a plugin that fails are named in a ClusterUnreachable (exit 3), raised to every
    request that was waiting for that refresh. The client's hook writes into a scratch
    object, of which only the token is taken: it would also reset the proxy chosen here
    and reinstall itself in place of this one.
    """

    def __init__(self, hook: Callable[[Any], None], timeout: float, context: str | None,
                 command: str, log: _ClientLog) -> None:
        self.hook = hook
        self.timeout = timeout
        self.context = context
        self.command = command
        self.log = log
        log.exec_reported = True  # this says it as the error it is, once
        self.lock = threading.Lock()
        self.failure: tuple[float, str] | None = None  # when, and what

    def __call__(self, cfg: Any) -> None:
        asked = time.monotonic()
        with self.lock:
            if self.failure is not None and self.failure[0] >= asked:
                raise ClusterUnreachable(self.failure[1])
            scratch = _Scratch()
            if not self._due():
                self.hook(scratch)  # nothing to run: the token as it is
            else:
                problem = self._refresh(scratch)
                if problem:
                    self.failure = (time.monotonic(), problem)
                    raise ClusterUnreachable(problem)
            token = scratch.api_key.get("BearerToken")
            if token:
                cfg.api_key["BearerToken"] = token

    def _due(self) -> bool:
        """Whether the client's hook would run the plugin now (its loader's token is
        within the client's skew of expiring); True when that cannot be told."""
        try:
            cells = [c.cell_contents for c in getattr(self.hook, "__closure__", None) or ()]
            loader = next(c for c in cells if hasattr(c, "_load_authentication"))
            expiry = vars(loader).get("expiry")
            if expiry is None:
                return False  # a token without an expiry is never refreshed
            from kubernetes.config.kube_config import _is_expired

            return bool(_is_expired(expiry))
        except Exception:
            return True

    def _refresh(self, scratch: _Scratch) -> str | None:
        """Run the client's hook (the plugin) within the timeout; what went wrong, or None."""
        name = f"the exec credential plugin of context {self.context!r}" + (
            f" ({self.command})" if self.command else "")
        failure: list[BaseException] = []
        seen = len(self.log.seen)

        def run() -> None:
            try:
                self.hook(scratch)
            except BaseException as exc:  # handed to the waiting thread
                failure.append(exc)
        worker = threading.Thread(target=run, name="token-refresh", daemon=True)
        before = _children()
        worker.start()
        worker.join(self.timeout)
        if worker.is_alive():
            _stop(_children() - before)
            return (f"{name} did not return within --request-timeout {self.timeout:g}s "
                    "when its token expired and was refreshed")
        said = [m for m in self.log.seen[seen:] if m.startswith("exec:")]
        if failure or said:
            why = _one_line(str(failure[0])) if failure else \
                said[0].removeprefix("exec:").strip()
            return f"{name} failed when its token expired and was refreshed: {why}"
        return None


class _Scratch:
    """What the client's refresh hook writes (the token, the proxy, itself)."""

    def __init__(self) -> None:
        self.api_key: dict[str, str] = {}
        self.refresh_api_key_hook: Any = None


def _stop(pids: set[int], grace: float = 0.5) -> None:
    """SIGTERM these processes and their descendants, SIGKILL what is left after
    ``grace`` seconds (a plugin's own children hold its output pipe open)."""
    tree = set(pids)
    frontier = set(pids)
    while frontier:
        frontier = set().union(*(_children(p) for p in frontier)) - tree
        tree |= frontier
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in tree:
            with suppress(OSError):
                os.kill(pid, sig)
        deadline = time.monotonic() + grace
        while sig == signal.SIGTERM and time.monotonic() < deadline and \
                any(_running(p) for p in tree):
            time.sleep(0.02)
        tree = {p for p in tree if _running(p)}
        if not tree:
            return


def _running(pid: int) -> bool:
    """Alive and not a zombie (Linux /proc; after kill(0) elsewhere)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        try:
            os.kill(pid, 0)
        except OSError:
            return False
        return not Path("/proc").is_dir()
    return state not in ("Z", "X")


def _children(parent: int | None = None) -> set[int]:
    """The child processes of ``parent`` (this process) (Linux /proc; empty elsewhere)."""
    out: set[int] = set()
    me = os.getpid() if parent is None else parent
    with suppress(OSError):
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            with suppress(OSError, ValueError, IndexError):
                stat_text = Path(f"/proc/{entry}/stat").read_text()
                if int(stat_text.rsplit(")", 1)[1].split()[1]) == me:
                    out.add(int(entry))
    return out


def _exec_command(path: str, context: Obj) -> str:
    """The exec credential plugin's command of a context's user, "" without one."""
    user = str((context.get("context") or {}).get("user") or "")
    for name in (p for p in path.split(os.pathsep) if p):
        with suppress(Exception):  # the loader reports a broken file itself
            data = yaml.safe_load(Path(name).read_text()[:1_000_000]) or {}
            for entry in data.get("users") or []:
                if isinstance(entry, dict) and entry.get("name") == user:
                    return str(((entry.get("user") or {}).get("exec") or {}).get("command")
                               or "")
    return ""


_ERROR_BODY_BYTES = 64 * 1024
_MAX_LOG_PROBES = 12  # bisection over --tail-lines (up to 200,000 lines: 18 would be exact)
_MAX_RETRIES_429 = 3


def cluster_access(conn: Connection) -> ClusterAccess:
    """The API server and the kubeconfig's own credentials, for Prometheus' service proxy."""
    from triage.collect.prometheus import ClusterAccess

    cfg = conn.api.configuration
    headers = {str(s["key"]): str(s["value"]) for s in cfg.auth_settings().values()
               if s.get("in") == "header" and s.get("value")}
    return ClusterAccess(host=str(cfg.host), ca_file=cfg.ssl_ca_cert, cert_file=cfg.cert_file,
                         key_file=cfg.key_file, headers=headers, verify=bool(cfg.verify_ssl))


class Reader:
    """GET one API path and return its body; every failure becomes a ReadError.

    Each request, with its retries after a 429, ends within ``timeout`` wall
    seconds (transport.deadline) and reads at most its byte cap; a redirect
    is a failed read, never content; an error answer's text is read bounded.
    """

    def __init__(self, conn: Connection, timeout: float,
                 max_bytes: int = Options.max_json_bytes) -> None:
        self.api = conn.api
        self.pool = conn.api.rest_client.pool_manager
        self.timeout = timeout
        self.max_bytes = max_bytes

    def fetch(self, path: str, query: dict[str, Any] | None = None,
              accept: str = "application/json", cap: int | None = None, keep: str = "head",
              ring: int = 0, fail_over_cap: bool = True) -> transport.Body:
        params = [(k, v) for k, v in (query or {}).items() if v is not None]
        cap = self.max_bytes if cap is None else cap
        try:
            # The client's own serializer adds the credentials (bearer token,
            # exec plugin token refresh) exactly as its typed methods would.
            _, url, headers, _, _ = self.api.param_serialize(
                "GET", path, query_params=params, header_params={"Accept": accept},
                auth_settings=["BearerToken"],
            )
        except ClusterUnreachable:  # the exec plugin's token refresh hung or failed
            raise
        except Exception as exc:  # a credential refresh (exec plugin) that failed
            raise ReadError(None, f"cannot get credentials: {_one_line(str(exc))}",
                            "tls") from None
        headers["Accept-Encoding"] = "identity"
        resp: Any = None
        complete = False
        with transport.deadline(self.timeout) as scope:
            try:
                for attempt in range(_MAX_RETRIES_429 + 1):
                    left = max(0.05, scope.remaining())
                    resp = self.pool.request(
                        "GET", url, headers=headers, preload_content=False, redirect=False,
                        retries=False, decode_content=False,
                        timeout=urllib3.Timeout(connect=left, read=left))
                    if resp.status == 429 and attempt < _MAX_RETRIES_429:
                        wait = transport.retry_after(resp.headers.get("Retry-After"))
                        wait = 1.0 if wait is None else wait
                        resp.close()
                        resp.release_conn()
                        if wait < scope.remaining() - 0.1:
                            time.sleep(wait)
                            continue
                        raise ReadError(429, f"429 Too Many Requests: the API server asks to "
                                        f"retry after {wait:g}s, past --request-timeout "
                                        f"{self.timeout:g}s")
                    break
                status = resp.status
                if 300 <= status < 400:
                    where = resp.headers.get("Location") or "elsewhere"
                    raise ReadError(status, f"{status} redirect to {_one_line(where)[:200]}: not "
                                    "followed (the API server answers reads itself)", "protocol")
                if status >= 400 or status < 200:
                    body = transport.read_body(resp, _ERROR_BODY_BYTES)
                    raise ReadError(status, _status_reason(status, body.data))
                got = transport.read_body(resp, cap, keep, ring, fail_over_cap)
                complete = got.complete
                return got
            except ReadError:
                raise
            except transport.BodyTooLarge as exc:
                raise ReadError(None, f"the answer is larger than {size_label(exc.limit)}; "
                                "not read", "size") from None
            except transport.UnsupportedEncoding as exc:
                raise ReadError(None, f"the answer is compressed as {str(exc)[:40]!r}, which "
                                "this tool does not decode", "protocol") from None
            except zlib.error:
                raise ReadError(None, "the answer's compressed body is corrupt",
                                "protocol") from None
            except (urllib3.exceptions.HTTPError, OSError) as exc:
                if time.monotonic() >= scope.deadline - 0.01:
                    raise ReadError(None, f"timed out: no complete answer within "
                                    f"--request-timeout {self.timeout:g}s", "timeout") from None
                tls = _tls_reason(exc)
                if tls:
                    raise ReadError(None, tls, "tls") from None
                raise ReadError(None, _network_reason(exc, self.timeout), "network") from None
            finally:
                # Back to the pool only after the deadline no longer applies to
                # it; a body not read to its end closes the connection.
                if resp is not None:
                    if not complete:
                        resp.close()
                    scope_tokens = list(scope.tokens)
                    scope.tokens.clear()
                    for token in scope_tokens:
                        transport.WATCHDOG.release(token)
                    resp.release_conn()

    def get(self, path: str, query: dict[str, Any] | None = None, accept: str = "application/json",
            cap: int | None = None) -> bytes:
        return self.fetch(path, query, accept, cap=cap).data

    def list_items(self, path: str, query: dict[str, Any] | None = None,
                   keep: Callable[[list[Any]], list[Obj]] | None = None,
                   on_version: Callable[[str], None] | None = None) -> list[Obj]:
        """Every item of a list, page by page as kubectl reads it (``limit`` and
        ``continue``), with ``keep`` applied to each page before the next is parsed;
        ``on_version`` is told the list's resourceVersion (its first page's: every page
        of a list is read at that version).

        A continue token the API server no longer honours (410 Expired: the
        list's resourceVersion was compacted away) starts the list over once,
        as client-go's pager does; a second expiry is a failed read saying so.
        """
        restarted = False
        # The next page is asked for as soon as this one's bytes are in (its continue
        # token is read from the answer's head), so the API server prepares and sends it
        # while this one is parsed and selected: one page ahead, read in order.
        while True:
            kept: list[Obj] = []
            token: str | None = None
            coming: tuple[str, Future[bytes]] | None = None
            try:
                while True:
                    if coming is not None and coming[0] == token:
                        body = coming[1].result()
                    else:
                        body = self.get(path, {**(query or {}), "limit": PAGE_SIZE,
                                               "continue": token})
                    coming = None
                    early = _early_continue(body)
                    if early:
                        coming = (early, _ahead(
                            self.get, path, {**(query or {}), "limit": PAGE_SIZE,
                                             "continue": early}))
                    page = self._parse(path, body)
                    del body
                    items = page.pop("items", None)
                    items = items if isinstance(items, list) else []
                    kept += keep(items) if keep is not None else [
                        i for i in items if isinstance(i, dict)]
                    del items  # before the next page: one page parsed at a time
                    list_meta = page.get("metadata")
                    list_meta = list_meta if isinstance(list_meta, dict) else {}
                    if token is None and on_version is not None:
                        on_version(str(list_meta.get("resourceVersion") or ""))
                    # The parsed answer decides; a page asked for with another
                    # token (a head read wrongly) is dropped, never used.
                    token = str(list_meta.get("continue") or "")
                    if not token:
                        return kept
            except ReadError as exc:
                if exc.status != 410 or token is None:
                    raise
                if restarted:
                    raise ReadError(410, "the list changed faster than it could be paged: "
                                    "its continue token expired (410 Expired) again after "
                                    f"the list was started over ({exc.reason})") from None
                restarted = True

    def get_json(self, path: str, query: dict[str, Any] | None = None) -> Obj:
        return self._parse(path, self.get(path, query))

    @staticmethod
    def _parse(path: str, body: bytes) -> Obj:
        try:
            data = json.loads(body)
        except (ValueError, RecursionError):
            raise ReadError(None, f"the answer to {path} is not JSON "
                            f"({_one_line(decode(body[:80]))!r}...)", "protocol") from None
        if not isinstance(data, dict):
            raise ReadError(None, f"the answer to {path} is a JSON {type(data).__name__}, not an "
                            "object", "protocol")
        return data


def _ahead(get: Callable[[str, dict[str, Any]], bytes], path: str,
           query: dict[str, Any]) -> Future[bytes]:
    """``get(path, query)`` on a thread of its own. A daemon: a page asked for ahead and
    never used (the list failed, or was interrupted) ends on its own deadline, and the
    process does not wait for it to exit."""
    done: Future[bytes] = Future()

    def run() -> None:
        try:
            done.set_result(get(path, query))
        except BaseException as exc:  # handed to the reader of the page
            done.set_exception(exc)
    threading.Thread(target=run, name="list-ahead", daemon=True).start()
    return done


_HEAD_BYTES = 4096  # of a list's answer, where its metadata (and continue token) is


def _early_continue(body: bytes) -> str | None:
    """The continue token of a list's answer, read from its head before the whole answer
    is parsed (an API server writes ``metadata`` before ``items``); None when it is not
    there. Only a guess to ask for the next page early: the parsed answer decides."""
    head = body[:_HEAD_BYTES]
    at = head.find(b'"metadata"')
    items = head.find(b'"items"')
    if at < 0 or 0 <= items < at:
        return None
    colon = head.find(b":", at + len(b'"metadata"'))
    if colon < 0:
        return None
    try:
        text = head[colon + 1:].decode("utf-8", "ignore").lstrip()
        found, _ = json.JSONDecoder().raw_decode(text)
    except (ValueError, RecursionError):
        return None
    token = found.get("continue") if isinstance(found, dict) else None
    return token if isinstance(token, str) and token else None


def _client_cert(conn: Connection) -> str | None:
    path = getattr(conn.api.configuration, "cert_file", None)
    return str(path) if path else None


def _client_cert_problem(conn: Connection) -> str | None:
    """Why the kubeconfig's client certificate would be refused, if it can tell."""
    path = _client_cert(conn)
    if not path:
        return None
    try:
        decoded = ssl._ssl._test_decode_cert(path)  # type: ignore[attr-defined]
        not_after = ssl.cert_time_to_seconds(decoded["notAfter"])
        not_before = ssl.cert_time_to_seconds(decoded["notBefore"])
    except Exception:  # not a certificate Python can decode: say nothing more
        return None
    now = time.time()
    if not_after < now:
        when = datetime.fromtimestamp(not_after, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        return f"TLS: the client certificate of context {conn.context!r} expired on {when}"
    if not_before > now:
        return f"TLS: the client certificate of context {conn.context!r} is not valid yet"
    return None


_TLS_CAUSES = (
    ("certificate has expired", "the API server's certificate has expired"),
    ("certificate is not yet valid", "the API server's certificate is not valid yet"),
    ("unable to get local issuer certificate",
     "the API server's certificate is signed by an unknown authority"),
    ("self-signed certificate", "the API server's certificate is signed by an unknown authority"),
    ("self signed certificate", "the API server's certificate is signed by an unknown authority"),
    ("unable to verify the first certificate",
     "the API server's certificate is signed by an unknown authority"),
    ("hostname mismatch", "the API server's certificate is not valid for this server's name"),
    ("ip address mismatch", "the API server's certificate is not valid for this server's address"),
    ("alert certificate expired", "the API server refused the client certificate: it has expired"),
    ("alert bad certificate", "the API server refused the client certificate"),
    ("alert unknown ca", "the API server refused the client certificate (unknown authority)"),
    ("certificate required", "the API server requires a client certificate and got none"),
    ("wrong version number", "the server does not speak TLS (an http:// address?)"),
)


def _tls_reason(exc: BaseException) -> str | None:
    """One line naming the TLS cause, or None when this was not a TLS failure."""
    chain: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and len(chain) < 6:
        chain.append(cur)
        reason = getattr(cur, "reason", None)
        cur = reason if isinstance(reason, BaseException) else (cur.__cause__ or cur.__context__)
    if not any(isinstance(e, (ssl.SSLError, urllib3.exceptions.SSLError)) for e in chain):
        return None
    text = " ".join(str(e) for e in chain).lower()
    for needle, cause in _TLS_CAUSES:
        if needle in text:
            return f"TLS: {cause}"
    verify = next((e for e in chain if isinstance(e, ssl.SSLCertVerificationError)), None)
    detail = verify.verify_message if verify is not None else _one_line(str(chain[-1]))
    return f"TLS: {_one_line(str(detail))[:200]}"


def _network_reason(exc: Exception, timeout: float | None = None) -> str:
    inner = getattr(exc, "reason", None) or exc
    text = _one_line(str(inner))
    if "timed out" in text.lower() or isinstance(inner, (TimeoutError, socket.timeout)):
        if timeout is not None:
            return f"timed out: no answer within --request-timeout {timeout:g}s"
        return f"timed out ({_plain(text)})"
    return _plain(text)


# urllib3 names its connection class and repr in front of the OS error:
# "DeadlineHTTPSConnection(host='127.0.0.1', port=1): Failed to establish a new
# connection: [Errno 111] Connection refused". People need the last part.
_LIBRARY_PREFIX = regex.compile(r"^(?:<?[A-Za-z_.]*(?:Connection|Pool)[A-Za-z]*(?:\([^)]*\)|"
                                r" object at 0x[0-9a-f]+>)?: )+")
_ERRNO = regex.compile(r"^(?:Failed to establish a new connection: )?\[Errno -?\d+\] ")


def _plain(text: str) -> str:
    """A network error in words: no library class names, no errno numbers."""
    out = _ERRNO.sub("", _LIBRARY_PREFIX.sub("", text))
    return (out[:1].lower() + out[1:]) if out else text


def _status_reason(status: int, body: bytes) -> str:
    names = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
             429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway",
             503: "Service Unavailable", 504: "Gateway Timeout"}
    message = ""
    try:
        data = json.loads(body)
        if isinstance(data, dict):
            message = str(data.get("message") or "")
    except (ValueError, RecursionError):
        message = decode(body[:300]).strip()
    label = f"{status} {names.get(status, '')}".strip()
    return f"{label}: {_one_line(message)}" if message else label


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
        )
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
            if status.get("state", {}).get("running") or status.get("state", {}).get("terminated"):
                keys.append((ns, name, cname, "current"))
            if status.get("lastState", {}).get("terminated") or status.get("restartCount"):
                keys.append((ns, name, cname, "previous"))
        return keys

    def _log_reader(self, snap: Snapshot, ns: str, pod: str, container: str,
                    stream: str) -> Callable[[], None]:
        def run() -> None:
            label = "previous log" if stream == "previous" else "log"
            what = f"{label} of {ns}/{pod} ({container})"
            try:
                text, note = self._read_log_end(ns, pod, container, stream)
            except ReadError as exc:
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
