"""The connection to the API server, loaded the way kubectl loads it: --kubeconfig,
$KUBECONFIG, in-cluster; its contexts; a kubeconfig's problems in words; the proxy kubectl
would choose; an exec credential plugin's load and token refresh bounded by
--request-timeout. The one module here that imports the kubernetes client."""

from __future__ import annotations

import binascii
import difflib
import logging
import os
import ssl
import sys
import threading
import time
import warnings
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import regex
import urllib3
import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.config.config_exception import ConfigException

from triage import __version__
from triage.collect import ClusterUnreachable, InputError
from triage.collect.live import proxies, transport
from triage.collect.live.errors import _one_line
from triage.collect.live.processes import _children, _stop
from triage.safety.redact import redact_text
from triage.safety.sanitize import one_line
from triage.safety.shell import KubectlTarget
from triage.snapshot import Obj

if TYPE_CHECKING:  # httpx and the Prometheus client load only when --prometheus is given
    from triage.collect.prometheus import ClusterAccess


_IN_CLUSTER_NS = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


@dataclass
class Connection:
    api: Any  # kubernetes.client.ApiClient
    context: str | None
    default_namespace: str
    # How a printed kubectl command names this cluster: the context and the kubeconfig
    # file it came from (--kubeconfig, or $KUBECONFIG when it names one file); in a pod,
    # no context (the watch names it with --cluster-name).
    kubectl: KubectlTarget = field(default_factory=KubectlTarget)


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
    single = kubeconfig or (env_config if env_config and os.pathsep not in env_config
                            else None)
    target = KubectlTarget() if in_cluster else KubectlTarget(
        ctx_name, os.path.abspath(os.path.expanduser(single)) if single else None)
    return Connection(api, ctx_name, namespace, target)


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


def cluster_access(conn: Connection) -> ClusterAccess:
    """The API server and the kubeconfig's own credentials, for Prometheus' service proxy."""
    from triage.collect.prometheus import ClusterAccess

    cfg = conn.api.configuration
    headers = {str(s["key"]): str(s["value"]) for s in cfg.auth_settings().values()
               if s.get("in") == "header" and s.get("value")}
    return ClusterAccess(host=str(cfg.host), ca_file=cfg.ssl_ca_cert, cert_file=cfg.cert_file,
                         key_file=cfg.key_file, headers=headers, verify=bool(cfg.verify_ssl))


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
