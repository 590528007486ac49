"""Network and credentials as kubectl has them: proxies as client-go picks them, no
credential sent to a proxy over plain http, an exec plugin bounded by the timeout."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import yaml

from tests.conftest import replay, run_cli

DEAD_PROXY = "http://127.0.0.1:9"  # nothing listens on the discard port


def test_why_https_proxy_is_not_applied_to_a_loopback_api_server(tmp_path: Path) -> None:
    """Before: kind, minikube, k3d or an ssh tunnel behind a corporate proxy failed with
    exit 3 where kubectl works: HTTPS_PROXY was applied to 127.0.0.1."""
    with replay("cuda-oom", tmp_path) as (_server, kc):
        run = run_cli("scan", "--kubeconfig", str(kc), "-o", "json",
                      env={"HTTPS_PROXY": DEAD_PROXY, "https_proxy": DEAD_PROXY})
    assert run.code == 1, run.stderr
    assert run.json()["pods"]


def test_why_kubeconfig_proxy_url_wins_over_no_proxy(tmp_path: Path) -> None:
    """Before: the kubeconfig's proxy-url was skipped when NO_PROXY matched the server.
    The proxy sees the connection (exit 3 alone would also be a direct request failing)."""
    with replay("cuda-oom", tmp_path) as (server, kc), http_proxy() as proxy:
        config = yaml.safe_load(kc.read_text())
        config["clusters"][0]["cluster"]["proxy-url"] = proxy
        kc.write_text(yaml.safe_dump(config))
        run = run_cli("scan", "--kubeconfig", str(kc), "-o", "json", "--request-timeout", "5s",
                      env={"NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"})
        direct = list(server.requests)
    host = server.url.removeprefix("https://")
    assert [h.get("connect") for h in _Proxy.seen] and \
        all(h.get("connect") == host for h in _Proxy.seen), (_Proxy.seen, host)
    assert direct == []  # nothing went around the proxy
    assert run.code == 3, (run.code, run.stderr)
    assert "Traceback" not in run.stderr


class _Proxy(BaseHTTPRequestHandler):
    seen: ClassVar[list[dict[str, str]]] = []

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_CONNECT(self) -> None:  # an https server through the proxy: a tunnel asked for
        _Proxy.seen.append({"connect": self.path,
                            **{k.lower(): v for k, v in self.headers.items()}})
        self.send_response(502)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        _Proxy.seen.append({k.lower(): v for k, v in self.headers.items()})
        body = b'{"kind":"Status","code":502,"message":"proxy: upstream unreachable"}'
        self.send_response(502)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@contextmanager
def http_proxy() -> Iterator[str]:
    _Proxy.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Proxy)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _kubeconfig(path: Path, server: str, user: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u",
                                               "namespace": "llm"}}]}))
    return path


def test_why_no_credential_is_sent_to_a_proxy_over_plain_http(tmp_path: Path) -> None:
    """Before: against an http:// server the bearer token went to the proxy in clear."""
    kc = _kubeconfig(tmp_path / "kubeconfig", "http://api.cluster.example:8080",
                     {"token": "plain-http-token-must-stay-home"})
    with http_proxy() as proxy:
        run = run_cli("scan", "--kubeconfig", str(kc), "-o", "json", "--request-timeout", "5s",
                      env={"HTTP_PROXY": proxy, "http_proxy": proxy})
    assert _Proxy.seen, run.stderr  # the request did go through the proxy
    assert not any("authorization" in headers for headers in _Proxy.seen), _Proxy.seen
    assert run.code == 3 and "no credentials are sent" in run.stderr, run.stderr
    assert "plain-http-token" not in run.stdout + run.stderr


def test_why_a_hanging_exec_plugin_is_bounded_and_named(tmp_path: Path) -> None:
    """Before: an exec credential plugin that never returned hung the tool past
    --request-timeout with no message."""
    kc = _kubeconfig(tmp_path / "kubeconfig", "https://127.0.0.1:6443", {"exec": {
        "apiVersion": "client.authentication.k8s.io/v1beta1", "command": sys.executable,
        "args": ["-c", "import time; time.sleep(120)"], "interactiveMode": "Never"}})
    started = time.monotonic()
    run = run_cli("scan", "--kubeconfig", str(kc), "-o", "json", "--request-timeout", "2s",
                  timeout=100)
    took = time.monotonic() - started
    assert run.code == 3, (run.code, run.stderr)
    assert "exec credential plugin" in run.stderr and "did not return within" in run.stderr
    assert "--request-timeout 2s" in run.stderr and "Traceback" not in run.stderr
    assert took < 60, took


# A credential plugin whose first token expires in a second (client-go and the kubernetes
# client refresh a token five minutes before its expiry: at once), and that hangs when it
# is run again, as a plugin waiting on an expired refresh token or a login does.
REFRESH_HANGS = """\
import datetime, json, os, sys, time
calls = os.path.join(os.path.dirname(sys.argv[0]), "calls")
with open(calls, "a") as f:
    f.write(f"{os.getpid()}\\n")
if len(open(calls).read().split()) > 1:
    time.sleep(120)
expiry = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=1)
print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1beta1",
                  "kind": "ExecCredential",
                  "status": {"token": sys.argv[1],
                             "expirationTimestamp": expiry.strftime("%Y-%m-%dT%H:%M:%SZ")}}))
"""


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_why_an_exec_plugin_that_hangs_on_token_refresh_is_bounded_and_named(
        tmp_path: Path) -> None:
    """Before: the plugin was bounded only while the kubeconfig loaded; the refresh of an
    expiring token ran it again from every reading thread with no limit, and the scan hung
    for over a minute with nothing said (an earlier variant left ~100 plugins running)."""
    plugin = tmp_path / "plugin" / "credential-plugin.py"
    plugin.parent.mkdir()
    plugin.write_text(REFRESH_HANGS)
    with replay("cuda-oom", tmp_path) as (server, kc):
        config = yaml.safe_load(kc.read_text())
        config["users"][0]["user"] = {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1", "command": sys.executable,
            "args": [str(plugin), server.token], "interactiveMode": "Never"}}
        kc.write_text(yaml.safe_dump(config))
        run = run_cli("scan", "--kubeconfig", str(kc), "-o", "json", "--request-timeout", "2s",
                      timeout=100)
    assert run.code == 3, (run.code, run.stderr)
    assert f"the exec credential plugin of context 'incident-replay' ({sys.executable}) did not " \
        "return within --request-timeout 2s when its token expired" in run.stderr, run.stderr
    assert "Traceback" not in run.stderr and len(run.stderr.strip().splitlines()) == 1, \
        run.stderr
    pids = [int(p) for p in (plugin.parent / "calls").read_text().split()]
    assert len(pids) == 2, pids  # the load, then one refresh: not one per reading thread
    assert not any(_running(p) for p in pids), pids  # the hanging one was stopped


def test_an_exec_plugin_token_refreshed_in_time_keeps_the_scan_going(tmp_path: Path) -> None:
    """The neighbour: a plugin that answers each refresh at once; every request finds the
    token expiring and refreshes it, one plugin at a time, and the scan reads on."""
    plugin = tmp_path / "plugin" / "credential-plugin.py"
    plugin.parent.mkdir()
    plugin.write_text(REFRESH_HANGS.replace("time.sleep(120)", "pass"))
    with replay("cuda-oom", tmp_path) as (server, kc):
        config = yaml.safe_load(kc.read_text())
        config["users"][0]["user"] = {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1", "command": sys.executable,
            "args": [str(plugin), server.token], "interactiveMode": "Never"}}
        kc.write_text(yaml.safe_dump(config))
        run = run_cli("scan", "--kubeconfig", str(kc), "-o", "json", timeout=100)
    assert run.code == 1, run.stderr
    assert run.json()["pods"] and run.stderr == ""
    assert len((plugin.parent / "calls").read_text().split()) > 2  # refreshed as it went
