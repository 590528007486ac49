"""A real Kubernetes API server under the tests: ``kube-apiserver`` with ``etcd`` on
127.0.0.1, a recorded incident loaded into it through the API, its logs served by a
kubelet endpoint of the tests' own and its pods' /metrics by listeners in a network
namespace of the tests' own.

What a real API server does that the replaying one (tests/support/kubeapi.py) only
plays: it validates and defaults every object, sets ``creationTimestamp``, ``uid`` and
``resourceVersion`` itself, drops fields newer than its version, authorizes every
request with RBAC (the tool reads as a member of group ``oncall``, bound by
deploy/rbac-clusterrole.yaml as it is shipped), pages lists with etcd, and reaches
pods and kubelets itself:

- ``pods/log``: the API server asks the kubelet at the Node's ``InternalIP`` and
  ``daemonEndpoints.kubeletEndpoint.Port``, over TLS, with its kubelet client
  certificate. Every Node is loaded with 127.0.0.1 and the port of ``Kubelet`` below,
  which serves the fixture's logs with the kubelet's semantics (the replaying server's
  own, ``Handler._pod_log``, answered as the kubelet answers: text, not a Status).
- ``pods/proxy``: the API server dials the pod's ``status.podIP`` itself and refuses
  a loopback one. Each Running pod's address is rewritten to one of 198.18.N.0/24
  (RFC 2544's benchmarking range), local to a network namespace made here (``ip netns
  add``, a veth pair, an AnyIP route), where a listener on each port the pod listens
  on serves its /metrics; a port nobody listens on refuses the connection.

The binaries: ``kube-apiserver`` (scripts/build-kube-apiserver builds Debian 12's
v1.20.2 once per machine and caches it; ``$KUBE_APISERVER`` names another) and
``etcd`` (Debian's ``etcd-server``). The network namespace needs root.
"""

from __future__ import annotations

import contextlib
import copy
import ctypes
import fcntl
import glob
import json
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import httpx
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.support.kubeapi import (
    ALTERNATES,
    RESOURCES,
    Fixture,
    Handler,
    TLSFiles,
    _listening_ports,
    write_kubeconfig,
)

ROOT = Path(__file__).resolve().parents[2]
ADMIN_TOKEN = "real-admin-9d2e71"  # system:masters: loads and removes fixtures
READER_TOKEN = "real-reader-5b08c3"  # the tool: user triage, group oncall (deploy/ RBAC)
POD_NET = "198.18"  # the pods' addresses: 198.18.N.0/24, N per network namespace
LINK_NET = "198.19"  # the veth pair between this namespace and the pods': 198.19.N.0/30
READY_TIMEOUT = 60.0


def kube_apiserver_binary() -> str | None:
    """$KUBE_APISERVER, kube-apiserver on PATH, or the one scripts/build-kube-apiserver
    cached (the newest source package version)."""
    named = os.environ.get("KUBE_APISERVER")
    if named:
        return named if os.access(named, os.X_OK) else None
    on_path = shutil.which("kube-apiserver")
    if on_path:
        return on_path
    # The tests run with a HOME of their own (tests/conftest.py): the build's cache is
    # the invoking user's, whose home the password database still names.
    homes = {os.path.expanduser("~"), os.path.expanduser(f"~{os.environ.get('USER', '')}")}
    with contextlib.suppress(KeyError, ImportError):
        import pwd

        homes.add(pwd.getpwuid(os.getuid()).pw_dir)
    caches = {os.environ.get("VLLM_TRIAGE_CI_CACHE") or ""} | {
        os.path.join(h, ".cache", "vllm-triage-ci") for h in homes}
    found = sorted(p for c in caches if c for p in glob.glob(
        os.path.join(c, "kube-apiserver-*", "kube-apiserver")) if os.access(p, os.X_OK))
    return found[-1] if found else None


def missing_parts() -> list[str]:
    """What this machine lacks to run a real API server here, in words ([] if nothing)."""
    missing = []
    if kube_apiserver_binary() is None:
        missing.append("kube-apiserver (scripts/build-kube-apiserver builds it)")
    if shutil.which("etcd") is None:
        missing.append("etcd (Debian's etcd-server)")
    if shutil.which("ip") is None:
        missing.append("ip (Debian's iproute2)")
    if os.geteuid() != 0:
        missing.append("root (for a network namespace)")
    return missing


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(*args: str) -> None:
    proc = subprocess.run(list(args), capture_output=True, text=True, timeout=30)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {proc.stderr.strip()}")


# ---------------------------------------------------------------------------------------
# The pods' network namespace


_CLONE_NEWNET = 0x40000000
_LIBC = ctypes.CDLL(None, use_errno=True)
# Which process made each pod network (and etcd data folder): a killed run's are removed
# by the next.
OWNERS = Path(tempfile.gettempdir()) / "vllm-triage-podnet"


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _with_parent(argv: list[str]) -> list[str]:
    """``argv`` sent SIGTERM when the test process ends, however it ends (a killed test
    worker leaves no API server or etcd running): util-linux's setpriv, where there is
    one."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM", *argv] if setpriv else argv


class PodNetwork:
    """A network namespace where 198.18.N.0/24 is local (an AnyIP route), reached from
    here through a veth pair; listeners are bound in it from a thread that enters it
    (``setns`` moves only the calling thread) and served from this process."""

    LOCK = Path(tempfile.gettempdir()) / "vllm-triage-podnet.lock"

    def __init__(self) -> None:
        self.index = -1
        self.name = ""

    def create(self) -> PodNetwork:
        # One /24 per namespace, chosen under a lock: test workers and other runs on
        # this machine make theirs at the same time.
        with open(self.LOCK, "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            taken = set(subprocess.run(["ip", "netns", "list"], capture_output=True,
                                       text=True).stdout.split())
            for name in sorted(n for n in taken if n.startswith("vtriage-")):
                owner = OWNERS / name
                if owner.exists() and not _alive(int(owner.read_text() or 0)):
                    # Left by a run that was killed: nothing uses it any more.
                    subprocess.run(["ip", "netns", "del", name], capture_output=True)
                    owner.unlink(missing_ok=True)
                    taken.discard(name)
            routes = subprocess.run(["ip", "route", "show"], capture_output=True,
                                    text=True).stdout
            for n in range(1, 255):
                if f"vtriage-{n}" not in taken and f"{POD_NET}.{n}.0/24" not in routes:
                    self.index, self.name = n, f"vtriage-{n}"
                    break
            else:
                raise RuntimeError("no free 198.18.N.0/24 for a pod network")
            n, host, peer = self.index, f"vtr{self.index}h", f"vtr{self.index}n"
            _run("ip", "netns", "add", self.name)
            OWNERS.mkdir(exist_ok=True)
            (OWNERS / self.name).write_text(str(os.getpid()))
        try:
            _run("ip", "link", "add", host, "type", "veth", "peer", "name", peer)
            _run("ip", "link", "set", peer, "netns", self.name)
            _run("ip", "addr", "add", f"{LINK_NET}.{n}.1/30", "dev", host)
            _run("ip", "link", "set", host, "up")
            _run("ip", "-n", self.name, "addr", "add", f"{LINK_NET}.{n}.2/30", "dev", peer)
            _run("ip", "-n", self.name, "link", "set", peer, "up")
            _run("ip", "-n", self.name, "link", "set", "lo", "up")
            _run("ip", "-n", self.name, "route", "add", "local", f"{POD_NET}.{n}.0/24",
                 "dev", "lo")
            _run("ip", "route", "add", f"{POD_NET}.{n}.0/24", "via", f"{LINK_NET}.{n}.2")
        except BaseException:
            self.delete()
            raise
        return self

    def address(self, i: int) -> str:
        """The i-th pod address (1-253)."""
        return f"{POD_NET}.{self.index}.{i}"

    def listen(self, ip: str, port: int) -> socket.socket:
        """A listening socket bound to ``ip:port`` inside the namespace."""
        made: list[socket.socket | BaseException] = []

        def inside() -> None:
            try:
                fd = os.open(f"/var/run/netns/{self.name}", os.O_RDONLY)
                try:
                    if _LIBC.setns(fd, _CLONE_NEWNET) != 0:
                        raise OSError(ctypes.get_errno(), "setns")
                finally:
                    os.close(fd)
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind((ip, port))
                sock.listen(64)
                made.append(sock)
            except BaseException as exc:  # handed to the caller
                made.append(exc)
        worker = threading.Thread(target=inside, name="podnet-bind")
        worker.start()
        worker.join()
        got = made[0]
        if isinstance(got, BaseException):
            raise got
        return got

    def delete(self) -> None:
        """The namespace, and with it the veth pair and the route."""
        if self.name:
            subprocess.run(["ip", "netns", "del", self.name], capture_output=True, timeout=30)
            (OWNERS / self.name).unlink(missing_ok=True)
            self.name = ""


class _PodHandler(Handler):
    """A vLLM pod's HTTP server, as far as the tool asks it: /metrics, and 404 for the
    rest (vLLM's FastAPI answers an unknown path itself)."""

    server: _PodServer  # type: ignore[assignment]

    def end_headers(self) -> None:
        self.send_header("Connection", "close")
        super().end_headers()

    def do_GET(self) -> None:
        # One answer per connection: the API server keeps a connection to a pod address
        # alive, and the next fixture's pod at that address must answer it, not this one.
        self.close_connection = True
        path = urlsplit(self.path).path
        if path == "/metrics":
            self._send(200, self.server.metrics.read_bytes(),
                       "text/plain; version=0.0.4; charset=utf-8")
        else:
            self._send(404, {"detail": "Not Found"})


class _PodServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, sock: socket.socket, metrics: Path) -> None:
        super().__init__(sock.getsockname(), _PodHandler, bind_and_activate=False)
        self.socket.close()
        self.socket = sock
        self.metrics = metrics


# ---------------------------------------------------------------------------------------
# The kubelet endpoint


class _KubeletHandler(Handler):
    """``GET /containerLogs/NS/POD/CONTAINER``, what the API server asks a kubelet for a
    pod's log: the replaying server's log semantics, answered as a kubelet answers (an
    error is its text; the API server makes the Status)."""

    server: Kubelet  # type: ignore[assignment]

    def _send(self, code: int, body: Any, content_type: str = "application/json") -> None:
        if isinstance(body, dict) and body.get("kind") == "Status":
            body, content_type = str(body.get("message", "")), "text/plain; charset=utf-8"
        super()._send(code, body, content_type)

    def _node_missing(self, node: str) -> bool:
        return False  # the API server found the Node: that is how it came here

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        parts = [unquote(p) for p in url.path.strip("/").split("/")]
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        fixture = self.server.fixture
        if len(parts) != 4 or parts[0] != "containerLogs" or fixture is None:
            self._send(404, "404 page not found", "text/plain; charset=utf-8")
            return
        _, ns, name, container = parts
        pod = next((p for p in fixture.objects.get("pods", [])
                    if (p.get("metadata") or {}).get("namespace") == ns
                    and (p.get("metadata") or {}).get("name") == name), None)
        if pod is None:
            self._send(404, f'pod "{name}" does not exist', "text/plain; charset=utf-8")
            return
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self._pod_log(ns, pod, {**query, "container": container})


class Kubelet(ThreadingHTTPServer):
    """The kubelet endpoint every loaded Node points at: HTTPS on 127.0.0.1, serving the
    loaded fixture's logs to a client whose certificate the test CA signed (the API
    server's kubelet client certificate)."""

    daemon_threads = True

    def __init__(self, tls: TLSFiles, cert: Path, key: Path) -> None:
        super().__init__(("127.0.0.1", 0), _KubeletHandler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(tls.ca_file)
        self.socket = context.wrap_socket(self.socket, server_side=True)
        self.fixture: Fixture | None = None
        self.stopping = threading.Event()

    def handle_error(self, request: Any, client_address: Any) -> None:
        return  # a client that hangs up mid-log is not an error here

    @property
    def port(self) -> int:
        return int(self.server_address[1])


# ---------------------------------------------------------------------------------------
# Loading a fixture through the API


# Load order: what an object refers to is there before it (owners before what they own,
# pods before the events about them).
_LOAD_ORDER = ["nodes", "llminferenceservices", "deployments", "statefulsets", "replicasets",
               "pods", "services", "configmaps", "persistentvolumeclaims",
               "horizontalpodautoscalers", "inferenceservices", "scaledobjects",
               "inferencepools", "events"]
# Custom resources: a CRD of the kind's group and version is created (schema-less, with a
# status subresource) before the fixture's objects of that kind, and removed after.
_CUSTOM = {"inferenceservices", "llminferenceservices", "scaledobjects", "inferencepools"}
# The API path each kind is written at. v1.20 serves HorizontalPodAutoscalers in
# autoscaling/v1, v2beta1 and v2beta2 (v2's shape, before it was named v2).
_WRITE_VERSION = {"horizontalpodautoscalers": "autoscaling/v2beta2"}
_HAS_STATUS = {"nodes", "deployments", "statefulsets", "replicasets", "pods",
               "persistentvolumeclaims", "horizontalpodautoscalers", "services", *_CUSTOM}
# Set by the server, never by a client: left out of what is written, and of the
# comparison of what was written with what was read back.
_SERVER_SET = {"uid", "resourceVersion", "creationTimestamp", "generation", "managedFields",
               "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"}

_CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def _kind_of(plural: str, obj: dict[str, Any]) -> tuple[str, str, str]:
    """(group, version, kind) an object of ``plural`` is written as: its own API group
    where the kind has another one too (InferencePools of inference.networking.x-k8s.io)."""
    group, version, kind = RESOURCES[plural][:3]
    alternate = ALTERNATES.get(plural)
    if alternate and str(obj.get("apiVersion", "")).startswith(f"{alternate[0]}/"):
        group, version, kind = alternate[:3]
    if plural in _WRITE_VERSION:
        group, version = _WRITE_VERSION[plural].split("/")
    return group, version, kind


def _crd(plural: str, group: str, version: str, kind: str) -> dict[str, Any]:
    """A schema-less CustomResourceDefinition serving ``plural`` in ``group/version``."""
    short = RESOURCES[plural][4]
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"plural": plural, "singular": kind.lower(), "kind": kind,
                           "listKind": f"{kind}List", "shortNames": short},
                 "versions": [{"name": version, "served": True, "storage": True,
                               "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": {
                                   "type": "object",
                                   "x-kubernetes-preserve-unknown-fields": True}}}]}}


def _api_path(plural: str, ns: str | None, name: str | None = None,
              obj: dict[str, Any] | None = None) -> str:
    group, version, _kind = _kind_of(plural, obj or {})
    base = f"/apis/{group}/{version}" if group else "/api/v1"
    where = f"{base}/namespaces/{ns}/{plural}" if ns and RESOURCES[plural][3] else \
        f"{base}/{plural}"
    return f"{where}/{name}" if name else where


def dropped_fields(sent: Any, got: Any, path: str = "") -> list[str]:
    """The paths of fields in ``sent`` that ``got`` (the object read back) lacks: fields
    this server's version does not know and dropped."""
    if isinstance(sent, dict):
        if not isinstance(got, dict):
            return [path or "."]
        out = []
        for key, value in sent.items():
            if path == ".metadata" and key in _SERVER_SET:
                continue
            if key not in got:
                if value in (None, [], {}, "", False):
                    continue  # an empty value is not written back either
                out.append(f"{path}.{key}")
            else:
                out += dropped_fields(value, got[key], f"{path}.{key}")
        return out
    if isinstance(sent, list) and isinstance(got, list):
        return [p for i, (s, g) in enumerate(zip(sent, got, strict=False)) for p in
                dropped_fields(s, g, f"{path}[{i}]")]
    return []


@dataclass
class Loaded:
    """A fixture as loaded: what was created (to remove it), the pods' addresses, and the
    fields the server dropped, per object."""

    fixture: Fixture
    created: list[str] = field(default_factory=list)
    dropped: dict[str, list[str]] = field(default_factory=dict)
    pod_ips: dict[tuple[str, str], str] = field(default_factory=dict)
    servers: list[_PodServer] = field(default_factory=list)
    finalized: set[str] = field(default_factory=set)  # created with finalizers
    crds: list[str] = field(default_factory=list)  # the paths of the CRDs created


class LoadError(AssertionError):
    pass


# ---------------------------------------------------------------------------------------
# The cluster


class RealCluster:
    """etcd and kube-apiserver on 127.0.0.1, a kubelet endpoint and a pod network; one
    fixture loaded at a time (``load`` ... ``unload``)."""

    def __init__(self, workdir: Path) -> None:
        self.dir = workdir
        self.dir.mkdir(parents=True, exist_ok=True)
        self.tls = TLSFiles.get()
        self.procs: list[subprocess.Popen[bytes]] = []
        self.net = PodNetwork()
        self.kubelet: Kubelet | None = None
        self.port = 0
        self.admin: httpx.Client | None = None
        self.loaded: Loaded | None = None
        self.namespaces: set[str] = set()
        self.version = ""
        self.next_ip = 0

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    # -- start and stop ------------------------------------------------------------------

    def start(self) -> RealCluster:
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        binary = kube_apiserver_binary()
        etcd = shutil.which("etcd")
        assert binary and etcd, missing_parts()
        d = self.dir
        # Certificates: the API server's (the test CA's 127.0.0.1 one, which kubeconfigs
        # from write_kubeconfig trust), its kubelet client certificate, the kubelet's.
        for name, server in (("kubelet-client", False), ("kubelet", True)):
            cert, key = self.tls.issue(f"kube-apiserver-{name}" if not server else "kubelet",
                                       server=server)
            (d / f"{name}.crt").write_bytes(cert)
            (d / f"{name}.key").write_bytes(key)
        sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        (d / "sa.key").write_bytes(sa_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption()))
        (d / "tokens.csv").write_text(
            f'{ADMIN_TOKEN},admin,admin-uid,"system:masters"\n'
            f'{READER_TOKEN},triage,triage-uid,"oncall"\n')
        # Every request of the tool's user, to prove it only reads.
        (d / "audit-policy.yaml").write_text(yaml.safe_dump({
            "apiVersion": "audit.k8s.io/v1", "kind": "Policy",
            "omitStages": ["RequestReceived"],
            "rules": [{"level": "Metadata", "users": ["triage"]}, {"level": "None"}]}))

        self.kubelet = Kubelet(self.tls, d / "kubelet.crt", d / "kubelet.key")
        threading.Thread(target=self.kubelet.serve_forever, daemon=True).start()
        self.net.create()

        # etcd keeps its data in memory where it can (it fsyncs every write).
        shm = Path("/dev/shm")
        where = shm if shm.is_dir() else d
        for stale in where.glob("vllm-triage-etcd-*"):
            if not _alive(int(stale.name.split("-")[3] or 0)):
                shutil.rmtree(stale, ignore_errors=True)  # a killed run's
        data = Path(tempfile.mkdtemp(prefix=f"vllm-triage-etcd-{os.getpid()}-", dir=where))
        self.etcd_data = data
        client, peer = _free_port(), _free_port()
        self._spawn("etcd", [
            etcd, "--name", "default", "--data-dir", str(data),
            "--listen-client-urls", f"http://127.0.0.1:{client}",
            "--advertise-client-urls", f"http://127.0.0.1:{client}",
            "--listen-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-cluster", f"default=http://127.0.0.1:{peer}",
            "--log-level", "warn"])
        self.port = _free_port()
        self._spawn("kube-apiserver", [
            binary, "--etcd-servers", f"http://127.0.0.1:{client}",
            "--bind-address", "127.0.0.1", "--secure-port", str(self.port),
            "--advertise-address", "127.0.0.1",
            "--endpoint-reconciler-type", "none",
            "--tls-cert-file", str(self.tls.cert), "--tls-private-key-file", str(self.tls.key),
            "--client-ca-file", str(self.tls.ca_file),
            "--token-auth-file", str(d / "tokens.csv"),
            "--authorization-mode", "RBAC",
            "--service-account-issuer", "https://kubernetes.default.svc",
            "--service-account-key-file", str(d / "sa.key"),
            "--service-account-signing-key-file", str(d / "sa.key"),
            "--service-cluster-ip-range", "10.96.0.0/12",
            "--kubelet-client-certificate", str(d / "kubelet-client.crt"),
            "--kubelet-client-key", str(d / "kubelet-client.key"),
            "--kubelet-certificate-authority", str(self.tls.ca_file),
            "--kubelet-preferred-address-types", "InternalIP",
            # Only what a fixture needs: no controller runs here to create service
            # accounts, and admission that adds tolerations, taints or finalizers
            # would change the recorded objects.
            "--enable-admission-plugins", "NamespaceLifecycle",
            "--disable-admission-plugins",
            "ServiceAccount,LimitRanger,TaintNodesByCondition,Priority,"
            "DefaultTolerationSeconds,DefaultStorageClass,StorageObjectInUseProtection,"
            "PersistentVolumeClaimResize,RuntimeClass,CertificateApproval,CertificateSigning,"
            "CertificateSubjectRestriction,DefaultIngressClass,MutatingAdmissionWebhook,"
            "ValidatingAdmissionWebhook,ResourceQuota",
            "--allow-privileged=true",
            "--enable-priority-and-fairness=false",
            "--profiling=false",
            "--audit-policy-file", str(d / "audit-policy.yaml"),
            "--audit-log-path", str(d / "audit.log"), "--audit-log-format", "json",
            "--audit-log-mode", "blocking",
            "--cert-dir", str(d / "certs"),
            "--v", "1"])
        self.admin = httpx.Client(base_url=self.url,
                                  verify=ssl.create_default_context(cafile=str(self.tls.ca_file)),
                                  headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
                                  timeout=30)
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            for name, proc in zip(("etcd", "kube-apiserver"), self.procs, strict=True):
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} exited ({proc.returncode}): "
                                       + self._log_tail(name))
            with contextlib.suppress(httpx.HTTPError):
                if self.admin.get("/readyz").status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"kube-apiserver not ready in {READY_TIMEOUT:g}s: "
                                   + self._log_tail("kube-apiserver"))
            time.sleep(0.2)
        self.version = str(self.admin.get("/version").json().get("gitVersion"))
        # The tool's user gets exactly the shipped least-privilege role.
        for doc in yaml.safe_load_all((ROOT / "deploy" / "rbac-clusterrole.yaml").read_text()):
            kind = "clusterroles" if doc["kind"] == "ClusterRole" else "clusterrolebindings"
            self._write("POST", f"/apis/rbac.authorization.k8s.io/v1/{kind}", doc)

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = open(self.dir / f"{name}.log", "wb")  # noqa: SIM115 (kept open by the child)
        self.procs.append(subprocess.Popen(_with_parent(argv), stdout=log,
                                           stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL))
        log.close()

    def _log_tail(self, name: str) -> str:
        path = self.dir / f"{name}.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self.unload()
        for proc in reversed(self.procs):
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        self.procs.clear()
        if self.kubelet is not None:
            self.kubelet.shutdown()
            self.kubelet.server_close()
            self.kubelet = None
        if self.admin is not None:
            self.admin.close()
            self.admin = None
        self.net.delete()
        with contextlib.suppress(AttributeError):
            shutil.rmtree(self.etcd_data, ignore_errors=True)

    # -- what the tool sees --------------------------------------------------------------

    def kubeconfig(self, path: Path, namespace: str) -> Path:
        return write_kubeconfig(path, self.url, token=READER_TOKEN, namespace=namespace,
                                context="real-apiserver")

    def audit_mark(self) -> int:
        """Where the audit log is now: ``reader_requests(mark)`` reads what came after."""
        path = self.dir / "audit.log"
        return path.stat().st_size if path.exists() else 0

    def reader_requests(self, since: int = 0) -> list[tuple[str, str, int]]:
        """(verb, URI, status code) of every request of the tool's user since ``since``."""
        path = self.dir / "audit.log"
        if not path.exists():
            return []
        with path.open("rb") as fh:
            fh.seek(since)
            lines = fh.read().splitlines()
        out = []
        for line in lines:
            event = json.loads(line)
            if (event.get("user") or {}).get("username") == "triage":
                out.append((str(event.get("verb")), str(event.get("requestURI")),
                            int((event.get("responseStatus") or {}).get("code") or 0)))
        return out

    # -- loading -------------------------------------------------------------------------

    def _write(self, method: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        assert self.admin is not None
        resp = self.admin.request(method, path, json=body)
        if resp.status_code >= 300:
            raise LoadError(f"{method} {path}: {resp.status_code} {resp.text[:1500]}")
        data: dict[str, Any] = resp.json()
        return data

    def _ensure_namespace(self, ns: str) -> None:
        if ns in self.namespaces:
            return
        assert self.admin is not None
        if self.admin.get(f"/api/v1/namespaces/{ns}").status_code == 404:
            self._write("POST", "/api/v1/namespaces", {
                "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        self.namespaces.add(ns)

    def ensure_loaded(self, root: Path) -> None:
        """``root`` loaded, unless it is what is loaded now."""
        if self.loaded is None or self.loaded.fixture.root != root:
            self.load(root)

    def load(self, root: Path) -> Loaded:
        """Load the fixture at ``root`` (unloading the one before): every object created
        through the API and its status written through the status subresource, the
        owners' and involved objects' uids carried over to the ones the server gave."""
        self.unload()
        assert self.kubelet is not None
        fixture = Fixture(root)
        loaded = Loaded(fixture)
        self.loaded = loaded
        self.kubelet.fixture = fixture
        uids: dict[str, str] = {}  # the fixture's uid -> the server's
        for plural in sorted(_CUSTOM):
            kinds = {_kind_of(plural, o) for o in fixture.objects.get(plural, [])}
            for group, version, kind in sorted(kinds):
                crd = _crd(plural, group, version, kind)
                self._write("POST", _CRDS, crd)
                loaded.crds.append(f"{_CRDS}/{crd['metadata']['name']}")
                self._wait_served(f"/apis/{group}/{version}/{plural}")
        for plural in _LOAD_ORDER:
            for original in fixture.objects.get(plural, []):
                obj = copy.deepcopy(original)
                md = obj.setdefault("metadata", {})
                ns, name = md.get("namespace"), md.get("name")
                if ns and RESOURCES[plural][3]:
                    self._ensure_namespace(ns)
                old_uid = md.get("uid")
                for key in _SERVER_SET:
                    md.pop(key, None)
                for ref in md.get("ownerReferences") or []:
                    ref["uid"] = uids.get(ref.get("uid"), ref.get("uid"))
                status = obj.pop("status", None)
                if plural == "nodes":
                    status = self._node_status(status or {})
                elif plural == "pods" and status and status.get("podIP"):
                    # Addresses go round the /24: a fixture's pods never take the
                    # addresses the fixture before gave its own.
                    # (254 is service_address's.)
                    self.next_ip = self.next_ip % 253 + 1
                    ip = self.net.address(self.next_ip)
                    loaded.pod_ips[(ns, name)] = ip
                    status = {**status, "podIP": ip, "podIPs": [{"ip": ip}]}
                elif plural == "services":
                    # The server allocates cluster IPs from its own range.
                    for key in ("clusterIP", "clusterIPs"):
                        (obj.get("spec") or {}).pop(key, None)
                elif plural == "events":
                    inv = obj.get("involvedObject") or {}
                    if inv.get("uid"):
                        inv["uid"] = uids.get(inv["uid"], inv["uid"])
                group, version, kind = _kind_of(plural, original)
                obj["apiVersion"], obj["kind"] = f"{group}/{version}" if group else "v1", kind
                made = self._write("POST", _api_path(plural, ns, obj=original), obj)
                path = _api_path(plural, ns, name, obj=original)
                loaded.created.append(path)
                if md.get("finalizers"):
                    loaded.finalized.add(path)
                if old_uid:
                    uids[old_uid] = made["metadata"]["uid"]
                if status and plural in _HAS_STATUS:
                    made["status"] = status
                    made = self._write("PUT", f"{path}/status", made)
                sent = {**obj, **({"status": status} if status else {})}
                lost = dropped_fields(sent, made)
                if lost:
                    loaded.dropped[f"{plural}/{ns + '/' if ns else ''}{name}"] = lost
        self._serve_pods(loaded)
        return loaded

    def service_address(self) -> str:
        """An address in the pod network for a server of the test's own behind a Service
        (no loaded pod takes it)."""
        return self.net.address(254)

    def route_service(self, ns: str, name: str, port_name: str, ip: str, port: int) -> None:
        """The loaded fixture's Service ``ns/name`` routes its port ``port_name`` to
        ``ip:port``: a Pod at that address and an Endpoints object naming it, as the
        endpoints controller writes it (the API server's service proxy dials an endpoint
        only when its targetRef is a Pod with that address)."""
        assert self.loaded is not None
        self._ensure_namespace(ns)
        pod_name = f"{name}-0"
        pods = f"/api/v1/namespaces/{ns}/pods"
        made = self._write("POST", pods, {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": pod_name, "namespace": ns},
            "spec": {"containers": [{"name": "server", "image": "test-server"}]}})
        self.loaded.created.append(f"{pods}/{pod_name}")
        made["status"] = {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}]}
        self._write("PUT", f"{pods}/{pod_name}/status", made)
        path = f"/api/v1/namespaces/{ns}/endpoints"
        self._write("POST", path, {
            "apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": name, "namespace": ns},
            "subsets": [{"addresses": [{"ip": ip, "targetRef": {
                "kind": "Pod", "namespace": ns, "name": pod_name,
                "uid": made["metadata"]["uid"]}}],
                "ports": [{"name": port_name, "port": port, "protocol": "TCP"}]}]})
        self.loaded.created.append(f"{path}/{name}")

    def _wait_served(self, path: str) -> None:
        assert self.admin is not None
        deadline = time.monotonic() + 30
        while self.admin.get(path).status_code != 200:
            if time.monotonic() > deadline:
                raise LoadError(f"{path} not served 30s after its CRD was created")
            time.sleep(0.1)

    def _node_status(self, status: dict[str, Any]) -> dict[str, Any]:
        """The recorded status, with the kubelet this harness serves at the address and
        port the API server asks for logs."""
        assert self.kubelet is not None
        addresses = [a for a in status.get("addresses") or []
                     if a.get("type") not in ("InternalIP", "ExternalIP")]
        return {**status, "addresses": [{"type": "InternalIP", "address": "127.0.0.1"},
                                        *addresses],
                "daemonEndpoints": {"kubeletEndpoint": {"Port": self.kubelet.port}}}

    def _serve_pods(self, loaded: Loaded) -> None:
        """A listener on every port each pod listens on, when the replaying server would
        answer its /metrics (Running, with a recorded /metrics): the same condition."""
        fx = loaded.fixture
        for pod in fx.objects.get("pods", []):
            md = pod.get("metadata") or {}
            ip = loaded.pod_ips.get((md.get("namespace"), md.get("name")))
            metrics = fx.metrics(str(md.get("namespace")), str(md.get("name")))
            if ip is None or (pod.get("status") or {}).get("phase") != "Running" \
                    or not metrics.exists():
                continue
            for port in sorted(_listening_ports(pod)):
                if not port.isdigit():
                    continue
                server = _PodServer(self.net.listen(ip, int(port)), metrics)
                threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
                loaded.servers.append(server)

    def unload(self) -> None:
        """Remove what ``load`` created (pods at once: no kubelet here confirms a
        graceful deletion); namespaces stay (no namespace controller here removes
        their content)."""
        loaded, self.loaded = self.loaded, None
        if loaded is None:
            return
        for server in loaded.servers:
            server.shutdown()
            server.server_close()
        assert self.admin is not None
        for path in reversed(loaded.created):
            if path in loaded.finalized:
                # No controller here removes a finalizer (kubernetes.io/pvc-protection).
                self.admin.patch(path, content=b'{"metadata":{"finalizers":null}}',
                                 headers={"Content-Type": "application/merge-patch+json"})
            resp = self.admin.request("DELETE", path, params={"gracePeriodSeconds": "0"})
            if resp.status_code not in (200, 202, 404):
                raise LoadError(f"DELETE {path}: {resp.status_code} {resp.text[:500]}")
        for path in loaded.crds:
            self.admin.delete(path)
        for path in loaded.crds:
            deadline = time.monotonic() + 30
            while self.admin.get(path).status_code != 404:
                if time.monotonic() > deadline:
                    raise LoadError(f"the CRD {path} was not removed in 30s")
                time.sleep(0.1)
        if self.kubelet is not None:
            self.kubelet.fixture = None


@contextlib.contextmanager
def real_cluster(workdir: Path) -> Iterator[RealCluster]:
    cluster = RealCluster(workdir).start()
    try:
        yield cluster
    finally:
        cluster.stop()
