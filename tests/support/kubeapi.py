"""A test Kubernetes API server that replays a recorded incident from fixtures/.

It speaks enough of the real API for the official Python client and for
real ``kubectl`` (discovery, list/get with label and field selectors, Table
output, pod logs with ``previous``/``tailLines``/``limitBytes``/``timestamps``, the pod
proxy) over HTTP with bearer-token auth. Only GET is served; every request
is logged so tests can prove the tool never writes.

Faults come from the fixture's ``incident.yaml``::

    faults:
      forbidden: [events, nodes]        # 403 on these kinds
      forbidden_logs_of: [POD]          # 403 on these pods' logs only
      unavailable: [horizontalpodautoscalers]   # 503
                                        # (``discovery`` stands for GET /apis)
      slow: {metrics: 5}                # seconds to wait before answering
      message: "..."                    # the text of the 403s above, instead of the real one

and, to play a hostile or broken server (kinds are plurals, ``log`` or ``proxy``)::

      drip: {proxy: 1.0}                # send the body one byte every N seconds
      gzip_bomb: {proxy: 1073741824}    # a gzip body that unpacks to N zero bytes
      redirect: [events]                # 302 to somewhere else
      too_many: {events: 2}             # the first N requests get 429, Retry-After: 1
      not_json: [pods]                  # 200 with an HTML page
      ignore_limit_bytes: true          # pod logs: limitBytes is not applied
      expire_continue: 1                # the first N continue tokens get 410 Expired

Lists page as the API server pages them: ``limit`` cuts the list, the
answer's ``metadata.continue`` (an opaque token) and ``remainingItemCount``
say how to go on, and a token past its resourceVersion's compaction gets
410 Expired with a Status whose ``metadata.continue`` would go on
inconsistently (what etcd compaction does to a slow pager).

      watch_gone: true                  # every watch ends at once: 410 Gone (expired version)

The replayed cluster can change: ``server.switch(other_fixture_dir)`` serves
another fixture from then on, as the same cluster a moment later. The pods
that differ become watch events (ADDED, MODIFIED, DELETED) with a new
``resourceVersion``, sent to open watches and to watches started from an
older version, the way an API server's watch cache does.

Run by hand: ``python -m tests.support.kubeapi fixtures/cuda-oom --port 8001``.
"""

from __future__ import annotations

import argparse
import base64
import collections
import contextlib
import datetime as dt
import ipaddress
import json
import re
import select
import ssl
import tempfile
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

TOKEN = "test-token-4f1c9e"

# plural -> (group, version, Kind, namespaced, short names)
RESOURCES: dict[str, tuple[str, str, str, bool, list[str]]] = {
    "pods": ("", "v1", "Pod", True, ["po"]),
    "events": ("", "v1", "Event", True, ["ev"]),
    "nodes": ("", "v1", "Node", False, ["no"]),
    "services": ("", "v1", "Service", True, ["svc"]),
    "configmaps": ("", "v1", "ConfigMap", True, ["cm"]),
    "persistentvolumeclaims": ("", "v1", "PersistentVolumeClaim", True, ["pvc"]),
    "namespaces": ("", "v1", "Namespace", False, ["ns"]),
    "secrets": ("", "v1", "Secret", True, []),
    "replicasets": ("apps", "v1", "ReplicaSet", True, ["rs"]),
    "deployments": ("apps", "v1", "Deployment", True, ["deploy"]),
    "statefulsets": ("apps", "v1", "StatefulSet", True, ["sts"]),
    "horizontalpodautoscalers": ("autoscaling", "v2", "HorizontalPodAutoscaler", True, ["hpa"]),
    "inferenceservices": ("serving.kserve.io", "v1beta1", "InferenceService", True, ["isvc"]),
    # The layers beside the pods; each served only when the fixture has its file (a CRD
    # not installed is not served at all: not in discovery, 404 on the list).
    "endpointslices": ("discovery.k8s.io", "v1", "EndpointSlice", True, []),
    "scaledobjects": ("keda.sh", "v1alpha1", "ScaledObject", True, ["so"]),
    "inferencepools": ("inference.networking.k8s.io", "v1", "InferencePool", True, ["infpool"]),
    "llminferenceservices": ("serving.kserve.io", "v1alpha1", "LLMInferenceService", True,
                             ["llmisvc"]),
}
# A kind some clusters serve from another API group too: the fixture's items that carry
# that group's apiVersion are served there (and only those).
ALTERNATES: dict[str, tuple[str, str, str, bool, list[str]]] = {
    "inferencepools": ("inference.networking.x-k8s.io", "v1alpha2", "InferencePool", True,
                       ["infpool"]),
}
# Kinds served only when the fixture has their file (CRDs, and an API a cluster may lack).
_OPTIONAL = ("inferenceservices", "endpointslices", "scaledobjects", "inferencepools",
             "llminferenceservices")
SUBRESOURCES = {"pods": ["log", "proxy", "status"], "services": ["proxy"]}
# Kinds a cluster serves that the tool never reads, for ``kubectl apply
# --dry-run=client`` of deploy/ (discovery must know them): served with
# ``KubeAPIServer(..., deploy_kinds=True)``, always empty.
DEPLOY_RESOURCES: dict[str, tuple[str, str, str, bool, list[str]]] = {
    "serviceaccounts": ("", "v1", "ServiceAccount", True, ["sa"]),
    "roles": ("rbac.authorization.k8s.io", "v1", "Role", True, []),
    "rolebindings": ("rbac.authorization.k8s.io", "v1", "RoleBinding", True, []),
    "clusterroles": ("rbac.authorization.k8s.io", "v1", "ClusterRole", False, []),
    "clusterrolebindings": ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", False, []),
    "servicemonitors": ("monitoring.coreos.com", "v1", "ServiceMonitor", True, ["smon"]),
    "prometheusrules": ("monitoring.coreos.com", "v1", "PrometheusRule", True, ["promrule"]),
}


# The API server's words for a continue token whose resourceVersion was compacted.
_EXPIRED_MESSAGE = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted between "
    "the time the first chunk was returned and now may show up in the list.")


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}


class Fixture:
    def __init__(self, root: Path) -> None:
        self.root = root
        meta_path = root / "incident.yaml"
        self.incident: dict[str, Any] = yaml.safe_load(meta_path.read_text()) if \
            meta_path.exists() else {}
        self.faults: dict[str, Any] = self.incident.get("faults") or {}
        self.objects: dict[str, list[dict[str, Any]]] = {}
        for plural in RESOURCES:
            for ext in (".yaml", ".json"):
                p = root / "objects" / f"{plural}{ext}"
                if p.exists():
                    text = p.read_text()
                    data = json.loads(text) if ext == ".json" else yaml.safe_load(text)
                    # A real API server lists in etcd key order: namespace, then name.
                    self.objects[plural] = sorted(
                        data.get("items") or [],
                        key=lambda o: ((o.get("metadata") or {}).get("namespace") or "",
                                       (o.get("metadata") or {}).get("name") or ""))
        # Every cluster has the system namespaces; an API server answers 404 for
        # GET /api/v1/namespaces/NAME of any other namespace that holds nothing.
        namespaces = sorted(({(o.get("metadata") or {}).get("namespace") for items in
                              self.objects.values() for o in items} - {None})
                            | {"default", "kube-system", "kube-public", "kube-node-lease"})
        if "namespaces" not in self.objects:
            self.objects["namespaces"] = [
                {"metadata": {"name": ns, "uid": f"ns-{ns}", "resourceVersion": "1",
                              "creationTimestamp": "2026-01-01T00:00:00Z"},
                 "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}
                for ns in namespaces]

    def served(self, plural: str, group: str | None = None) -> bool:
        """Whether the API serves the kind (from ``group``: the kind's own when None). A CRD
        that is not installed is not served at all (404 on the list); a kind with an
        alternate group is served from each group its items name (the first when none)."""
        if plural in _OPTIONAL and plural not in self.objects:
            return False
        if plural not in ALTERNATES or group is None:
            return True
        return any(self.group_of(plural, o) == group for o in self.objects[plural]) or (
            not self.objects[plural] and group == RESOURCES[plural][0])

    def group_of(self, plural: str, obj: dict[str, Any]) -> str:
        """The API group that serves one of the fixture's objects."""
        version = str(obj.get("apiVersion") or "")
        alternate = ALTERNATES.get(plural)
        if alternate is not None and version.startswith(alternate[0] + "/"):
            return alternate[0]
        return RESOURCES[plural][0]

    def log(self, ns: str, pod: str, container: str, previous: bool) -> Path:
        suffix = ".previous.log" if previous else ".log"
        return self.root / "logs" / ns / pod / f"{container}{suffix}"

    def metrics(self, ns: str, pod: str) -> Path:
        return self.root / "metrics" / ns / f"{pod}.txt"


_LABEL_NAME = r"[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_LABEL_KEY = re.compile(rf"^(?:[a-z0-9](?:[-a-z0-9.]{{0,251}}[a-z0-9])?/)?{_LABEL_NAME}$")
_LABEL_VALUE = re.compile(rf"^(?:{_LABEL_NAME})?$")
_TERM = re.compile(r"""^\s*(?:
      (?P<not>!)\s*(?P<nkey>[^\s!=(),]+)
    | (?P<skey>[^\s!=(),<>]+)\s+(?P<setop>in|notin)\s*\((?P<vals>[^()]*)\)
    | (?P<ekey>[^\s!=(),<>]+)\s*(?P<eop>==|!=|=|>|<)\s*(?P<val>[^\s!=(),<>]*)
    | (?P<key>[^\s!=(),<>]+)
    )\s*$""", re.VERBOSE)

Requirement = tuple[str, str, list[str]]  # key, operator, values


class SelectorError(ValueError):
    pass


def parse_label_selector(selector: str) -> list[Requirement]:
    """Parse a label selector the way the API server does; a bad one raises SelectorError."""
    parts, depth, cur = [], 0, ""
    for ch in selector:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    reqs: list[Requirement] = []
    for raw in parts:
        if not raw.strip():
            if selector.strip():
                raise SelectorError(f"unable to parse requirement: found ',', expected: "
                                    f"identifier in {selector!r}")
            continue
        m = _TERM.match(raw)
        if m is None:
            raise SelectorError(f"unable to parse requirement: {raw.strip()!r}: found "
                                f"unexpected token, expected: '=', '!=', '==', 'in', notin'")
        if m.group("nkey"):
            key, op, vals = m.group("nkey"), "!", []
        elif m.group("skey"):
            key, op = m.group("skey"), m.group("setop")
            vals = [v.strip() for v in m.group("vals").split(",")]
        elif m.group("ekey"):
            key, op, vals = m.group("ekey"), m.group("eop"), [m.group("val")]
        else:
            key, op, vals = m.group("key"), "exists", []
        if not _LABEL_KEY.match(key):
            raise SelectorError(f"unable to parse requirement: values[0][{key}]: Invalid "
                                f"value: {key!r}: name part must consist of alphanumeric "
                                "characters, '-', '_' or '.'")
        for v in vals:
            if not _LABEL_VALUE.match(v) or (op in (">", "<") and not v.isdigit()):
                raise SelectorError(f"unable to parse requirement: values[0][{key}]: Invalid "
                                    f"value: {v!r}: a valid label must be an empty string or "
                                    "consist of alphanumeric characters, '-', '_' or '.'")
        reqs.append((key, op, vals))
    return reqs


def _match_labels(labels: dict[str, str], selector: str) -> bool:
    """Equality- and set-based label selectors, as the API server accepts them."""
    for key, op, vals in parse_label_selector(selector or ""):
        have = labels.get(key)
        if op == "exists" and key not in labels:
            return False
        if op == "!" and key in labels:
            return False
        if op in ("=", "==", "in") and have not in vals:
            return False
        if op in ("!=", "notin") and have in vals:
            return False
        if op in (">", "<"):
            if have is None or not have.lstrip("-").isdigit():
                return False
            if (int(have) > int(vals[0])) != (op == ">") or int(have) == int(vals[0]):
                return False
    return True


# Fields the API server lets a field selector name, per kind (every kind has
# metadata.name and metadata.namespace); anything else is a 400.
FIELD_SELECTABLE = {
    "pods": {"spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
             "spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP",
             "status.podIPs", "status.nominatedNodeName"},
    "events": {"involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
               "involvedObject.uid", "involvedObject.apiVersion",
               "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason",
               "reportingComponent", "source", "type"},
    "nodes": {"spec.unschedulable"},
    "replicasets": {"status.replicas"},
    "namespaces": {"status.phase"},
    "secrets": {"type"},
}


def _field_terms(plural: str, selector: str) -> list[tuple[str, bool, str]]:
    allowed = FIELD_SELECTABLE.get(plural, set()) | {"metadata.name", "metadata.namespace"}
    terms = []
    for term in filter(None, (t.strip() for t in selector.split(","))):
        neg = "!=" in term
        key, sep, val = term.partition("!=") if neg else (
            term.partition("==") if "==" in term else term.partition("="))
        if not sep:
            raise SelectorError(f"invalid selector: '{selector}'; can't understand '{term}'")
        if key.strip() not in allowed:
            raise SelectorError(f"field label not supported: {key.strip()}")
        terms.append((key.strip(), neg, val.strip()))
    return terms


def _dig(obj: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def _match_fields(obj: dict[str, Any], terms: list[tuple[str, bool, str]]) -> bool:
    for key, neg, val in terms:
        actual = _dig(obj, key)
        if key == "source":
            actual = _dig(obj, "source.component") or obj.get("reportingComponent")
        actual_s = "" if actual is None else str(actual).lower() if isinstance(
            actual, bool) else str(actual)
        if (actual_s == val) == neg:
            return False
    return True


def _listening_ports(pod: dict[str, Any]) -> set[str]:
    """Ports a replayed pod answers on: declared container ports and vLLM's --port."""
    ports = set()
    for c in (pod.get("spec") or {}).get("containers") or []:
        ports |= {str(p.get("containerPort")) for p in c.get("ports") or []}
        args = [str(a) for a in (c.get("command") or []) + (c.get("args") or [])]
        for i, a in enumerate(args):
            if a == "--port" and i + 1 < len(args):
                ports.add(args[i + 1])
            elif a.startswith("--port="):
                ports.add(a.split("=", 1)[1])
        if not c.get("ports") and not any(a.startswith("--port") for a in args) and any(
                "vllm" in x for x in [str(c.get("image", "")), *args]):
            ports.add("8000")  # vLLM's default
    return ports


def _age(ts: str | None) -> str:
    if not ts:
        return "<unknown>"
    try:
        then = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return "<unknown>"
    secs = int((datetime.now(timezone.utc) - then).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if secs >= size:
            return f"{secs // size}{unit}"
    return f"{max(secs, 0)}s"


# The count columns of the workload kinds' Tables, between Name and Age.
_WORKLOAD_COLUMNS = {
    "deployments": (("Ready", "string"), ("Up-to-date", "string"), ("Available", "string")),
    "replicasets": (("Desired", "integer"), ("Current", "integer"), ("Ready", "integer")),
    "statefulsets": (("Ready", "string"),),
}


def _workload_cells(plural: str, obj: dict[str, Any]) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    desired = int(spec.get("replicas", 1) or 0)
    ready = int(status.get("readyReplicas") or 0)
    if plural == "deployments":
        return [f"{ready}/{desired}", int(status.get("updatedReplicas") or 0),
                int(status.get("availableReplicas") or 0)]
    if plural == "replicasets":
        return [desired, int(status.get("replicas") or 0), ready]
    return [f"{ready}/{desired}"]


def _format_selector(selector: dict[str, Any]) -> str:
    """A LabelSelector as the API server prints it (metav1.FormatLabelSelector): its
    requirements sorted by key, values sorted."""
    terms: list[tuple[str, str]] = [(str(k), f"{k}={v}") for k, v in
                                    (selector.get("matchLabels") or {}).items()]
    for expr in selector.get("matchExpressions") or []:
        key, op = str(expr.get("key")), expr.get("operator")
        values = ",".join(sorted(str(v) for v in expr.get("values") or []))
        terms.append((key, {"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})",
                            "Exists": key, "DoesNotExist": f"!{key}"}.get(str(op), key)))
    return ",".join(t for _k, t in sorted(terms)) or "<none>"


def _table(plural: str, items: list[dict[str, Any]], list_meta: dict[str, Any]) -> dict[str, Any]:
    """The meta.k8s.io Table kubectl asks for, for the kinds a person lists."""
    cols = [{"name": "Name", "type": "string", "format": "name", "description": "Name"}]
    rows = []
    if plural == "pods":
        cols += [{"name": n, "type": t, "format": "", "description": n} for n, t in
                 (("Ready", "string"), ("Status", "string"), ("Restarts", "string"),
                  ("Age", "string"))]
        # priority 1: only with -o wide, as the API server's pod printer does
        cols += [{"name": n, "type": "string", "format": "", "description": n, "priority": 1}
                 for n in ("IP", "Node", "Nominated Node", "Readiness Gates")]
    elif plural == "nodes":
        cols += [{"name": n, "type": "string", "format": "", "description": n} for n in
                 ("Status", "Roles", "Age", "Version")]
    elif plural == "events":
        cols = [{"name": n, "type": "string", "format": "", "description": n} for n in
                ("Last Seen", "Type", "Reason", "Object", "Message")]
    elif plural in _WORKLOAD_COLUMNS:
        # The API server's printers (pkg/printers/internalversion): the counts, then the
        # template's containers, images and selector with -o wide.
        cols += [{"name": n, "type": t, "format": "", "description": n} for n, t in
                 (*_WORKLOAD_COLUMNS[plural], ("Age", "string"))]
        cols += [{"name": n, "type": "string", "format": "", "description": n, "priority": 1}
                 for n in ("Containers", "Images", "Selector")[:2 if plural == "statefulsets"
                                                                else 3]]
    else:
        cols += [{"name": "Age", "type": "string", "format": "", "description": "Age"}]
    for obj in items:
        md = obj.get("metadata") or {}
        if plural == "pods":
            statuses = (obj.get("status") or {}).get("containerStatuses") or []
            ready = sum(1 for c in statuses if c.get("ready"))
            reason = (obj.get("status") or {}).get("phase", "Unknown")
            for c in statuses:
                st = c.get("state") or {}
                if st.get("waiting", {}).get("reason"):
                    reason = st["waiting"]["reason"]
                elif st.get("terminated", {}).get("reason"):
                    reason = st["terminated"]["reason"]
            restarts = sum(int(c.get("restartCount") or 0) for c in statuses)
            status = obj.get("status") or {}
            if status.get("reason"):
                reason = status["reason"]
            if md.get("deletionTimestamp"):
                reason = "Terminating"
            cells = [md.get("name"), f"{ready}/{len(statuses) or len(obj['spec']['containers'])}",
                     reason, str(restarts), _age(md.get("creationTimestamp")),
                     status.get("podIP") or "<none>",
                     (obj.get("spec") or {}).get("nodeName") or "<none>",
                     status.get("nominatedNodeName") or "<none>", "<none>"]
        elif plural == "nodes":
            conds = {c.get("type"): c.get("status") for c in
                     (obj.get("status") or {}).get("conditions") or []}
            state = "Ready" if conds.get("Ready") == "True" else "NotReady"
            if (obj.get("spec") or {}).get("unschedulable"):
                state += ",SchedulingDisabled"
            roles = sorted(k.split("/", 1)[1] for k in (md.get("labels") or {})
                           if k.startswith("node-role.kubernetes.io/"))
            version = ((obj.get("status") or {}).get("nodeInfo") or {}).get(
                "kubeletVersion", "")
            cells = [md.get("name"), state, ",".join(roles) or "<none>",
                     _age(md.get("creationTimestamp")), version]
        elif plural == "events":
            inv = obj.get("involvedObject") or {}
            cells = [_age(obj.get("lastTimestamp")), obj.get("type"), obj.get("reason"),
                     f"{str(inv.get('kind', '')).lower()}/{inv.get('name')}", obj.get("message")]
        elif plural in _WORKLOAD_COLUMNS:
            cells = [md.get("name"), *_workload_cells(plural, obj),
                     _age(md.get("creationTimestamp"))]
            containers = ((((obj.get("spec") or {}).get("template") or {}).get("spec") or {})
                          .get("containers") or [])
            cells += [",".join(str(c.get("name")) for c in containers),
                      ",".join(str(c.get("image")) for c in containers)]
            if plural != "statefulsets":
                cells.append(_format_selector((obj.get("spec") or {}).get("selector") or {}))
        else:
            cells = [md.get("name"), _age(md.get("creationTimestamp"))]
        rows.append({"cells": cells, "object": {"kind": "PartialObjectMetadata",
                                                "apiVersion": "meta.k8s.io/v1", "metadata": md}})
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": list_meta,
            "columnDefinitions": cols, "rows": rows}


class Handler(BaseHTTPRequestHandler):
    server: KubeAPIServer
    protocol_version = "HTTP/1.1"
    # Go's net/http (so kube-apiserver) sets TCP_NODELAY on every connection;
    # without it, headers and body written apart meet the client's delayed ACK
    # and every answer waits ~40 ms that no real API server adds.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _record(self) -> None:
        with self.server.lock:
            self.server.requests.append(f"{self.command} {self.path}")
            if self.server.request_log:
                with open(self.server.request_log, "a", encoding="utf-8") as fh:
                    fh.write(f"{self.command} {self.path}\n")

    def _send(self, code: int, body: Any, content_type: str = "application/json") -> None:
        data = body if isinstance(body, bytes) else (
            body.encode() if isinstance(body, str) else json.dumps(body).encode())
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _refuse(self) -> None:
        self._record()
        # Read the body so it is not taken for the next request on this connection.
        length = self.headers.get("Content-Length", "")
        if length.isdigit():
            self.rfile.read(int(length))
        self.close_connection = True
        self._send(405, _status(405, "MethodNotAllowed",
                                "the test API server only serves GET requests"))

    do_POST = do_PUT = do_PATCH = do_DELETE = _refuse

    def do_GET(self) -> None:
        self._record()
        if self.server.latency:
            self.server.stopping.wait(self.server.latency)
        auth = self.headers.get("Authorization", "")
        if auth != f"Bearer {self.server.token}":
            self._send(401, _status(401, "Unauthorized", "Unauthorized"))
            return
        with contextlib.suppress(BrokenPipeError):
            self._route()

    def _route(self) -> None:
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        parts = [unquote(p) for p in url.path.strip("/").split("/") if p]
        accept = self.headers.get("Accept", "")
        fx = self.server.fixture
        if parts == ["version"]:
            self._send(200, {"major": "1", "minor": "31", "gitVersion": "v1.31.4",
                             "platform": "linux/amd64", "goVersion": "go1.22.10",
                             "compiler": "gc",
                             "gitCommit": "a78aa47129b8539636eb86a9d00e31b2720fe06b",
                             "gitTreeState": "clean", "buildDate": "2024-12-10T11:36:31Z"})
            return
        if parts == ["api"]:
            self._send(200, {"kind": "APIVersions", "versions": ["v1"],
                             "serverAddressByClientCIDRs": [
                                 {"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443"}]})
            return
        if parts == ["apis"]:
            if not self._fault("discovery", None, parts):
                self._send(200, self._group_list())
            return
        if parts[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", parts[2:]
        elif len(parts) >= 3 and parts[0] == "apis":
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            self._send(404, _status(404, "NotFound", "the server could not find the requested "
                                    "resource"))
            return
        if not rest:
            self._send(200, self._resource_list(group, version))
            return
        ns = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            ns, rest = rest[1], rest[2:]
        plural = rest[0]
        spec = self.server.resources.get(plural)
        alternate = ALTERNATES.get(plural)
        if spec is not None and (spec[0], spec[1]) != (group, version) and alternate \
                and (alternate[0], alternate[1]) == (group, version):
            spec = alternate
        if spec is None or (spec[0], spec[1]) != (group, version) or not fx.served(plural,
                                                                                   group):
            self._send(404, _status(404, "NotFound",
                                    "the server could not find the requested resource"))
            return
        if self.server.rbac is not None:
            verb = "get" if len(rest) >= 2 else (
                "watch" if query.get("watch") in ("true", "1") else "list")
            resource = plural if len(rest) < 3 else f"{plural}/{rest[2]}"
            if not self.server.rbac.allows(verb, group, resource, ns):
                with self.server.lock:
                    self.server.denied.append(f"{verb} {group}/{resource} in {ns or '(cluster)'}")
                scope = f' in the namespace "{ns}"' if ns else " at the cluster scope"
                self._send(403, _status(
                    403, "Forbidden", f'{resource} is forbidden: User "triage" cannot {verb} '
                    f'resource "{resource}" in API group "{group}"{scope}'))
                return
        if plural == "secrets":
            # The tool must never read Secrets; the fixture has none to give.
            self._send(403, _status(403, "Forbidden", 'secrets is forbidden: the test API '
                                    'server never serves Secrets'))
            return
        fault = self._fault(plural if len(rest) < 3 else rest[2], ns, rest)
        if fault:
            return
        items = [o for o in fx.objects.get(plural, [])
                 if (ns is None or (o.get("metadata") or {}).get("namespace") == ns)
                 and (plural not in ALTERNATES or fx.group_of(plural, o) == group)]
        if len(rest) == 1:
            self._list(plural, spec, group, version, items, query, accept)
            return
        name = rest[1]
        if plural in ("pods", "services") and len(rest) >= 3 and rest[2] == "proxy":
            # pod:port, service:port or scheme:service:port
            parts = name.split(":")
            name = parts[1] if plural == "services" and len(parts) == 3 else parts[0]
        obj = next((o for o in items if (o.get("metadata") or {}).get("name") == name), None)
        if obj is None:
            kind_label = plural if not spec[0] else f"{plural}.{spec[0]}"
            self._send(404, _status(404, "NotFound", f'{kind_label} "{name}" not found'))
            return
        if len(rest) == 2:
            full = {"apiVersion": f"{group}/{version}" if group else version, "kind": spec[2],
                    **{k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}}
            if "as=Table" in accept:
                self._send(200, _table(plural, [full], {"resourceVersion": "424242"}))
                return
            self._send(200, full)
            return
        if plural == "pods" and rest[2] == "log":
            self._pod_log(ns or "", obj, query)
            return
        if plural == "pods" and rest[2] == "proxy":
            self._pod_proxy(ns or "", obj, rest[1], "/".join(rest[3:]))
            return
        if plural == "services" and rest[2] == "proxy":
            self._service_proxy(ns or "", name, "/".join(rest[3:]), url.query)
            return
        self._send(404, _status(404, "NotFound", "the server could not find the requested "
                                "resource"))

    def _list(self, plural: str, spec: tuple[str, str, str, bool, list[str]], group: str,
              version: str, items: list[dict[str, Any]], query: dict[str, str],
              accept: str) -> None:
        label_sel, field_sel = query.get("labelSelector", ""), query.get("fieldSelector", "")
        try:
            terms = _field_terms(plural, field_sel)
            items = [o for o in items if _match_labels(
                (o.get("metadata") or {}).get("labels") or {}, label_sel)]
        except SelectorError as exc:
            # kubectl itself wraps this in 'Unable to find "/v1, Resource=pods" that match...'
            self._send(400, _status(400, "BadRequest", str(exc)))
            return
        items = [o for o in items if _match_fields(o, terms)]
        list_meta: dict[str, Any] = {"resourceVersion": str(self.server.version)}
        if query.get("watch") in ("true", "1"):
            self._watch(plural, items, accept, query)
            return
        # Paging the way the API server does it: limit, then an opaque continue token.
        start = 0
        token = query.get("continue", "")
        if token:
            try:
                start = int(json.loads(base64.b64decode(token))["start"])
            except (ValueError, KeyError, TypeError):
                self._send(400, _status(400, "BadRequest", "continue key is not valid: "
                                        "incorrect encoded start resourceVersion"))
                return
            expire = int(self.server.fixture.faults.get("expire_continue") or 0)
            with self.server.lock:
                expired = self.server.counts.get("expired-continue", 0)
                if expired < expire:
                    self.server.counts["expired-continue"] = expired + 1
            if expired < expire:
                gone = _status(410, "Expired", _EXPIRED_MESSAGE)
                gone["metadata"] = {"continue": token}
                self._send(410, gone)
                return
        limit = query.get("limit", "")
        if limit.isdigit() and int(limit) > 0:
            end = start + int(limit)
            if end < len(items):
                list_meta["continue"] = base64.b64encode(
                    json.dumps({"v": "meta.k8s.io/v1", "rv": 424242, "start": end}).encode()
                ).decode()
                list_meta["remainingItemCount"] = len(items) - end
            items = items[start:end]
        else:
            items = items[start:]
        if "as=Table" in accept:
            self._send(200, _table(plural, items, list_meta))
            return
        clean = [{k: v for k, v in o.items() if k not in ("apiVersion", "kind")}
                 for o in items]
        api_version = f"{group}/{version}" if group else version
        self._send(200, {"kind": f"{spec[2]}List", "apiVersion": api_version,
                         "metadata": list_meta, "items": clean})

    def _watch(self, plural: str, items: list[dict[str, Any]], accept: str,
               query: dict[str, str]) -> None:
        """A watch: ADDED for every object when started from no version, then the
        changes after the version it started from (``switch``), until timeoutSeconds
        or the client hangs up."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def chunk(data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        def send(kind: str, obj: dict[str, Any]) -> None:
            body = _table(plural, [obj], {"resourceVersion": str(self.server.version)}) \
                if "as=Table" in accept else obj
            chunk(json.dumps({"type": kind, "object": body}).encode() + b"\n")

        srv = self.server
        since = query.get("resourceVersion", "")
        if since in ("", "0"):
            for obj in items:
                send("ADDED", obj)
            seen = srv.version
        else:
            seen = int(since) if since.isdigit() else srv.version
        oldest = srv.changes[0][0] if srv.changes else srv.version + 1
        if srv.fixture.faults.get("watch_gone") or (
                since.isdigit() and seen < srv.version and seen + 1 < oldest):
            send("ERROR", _status(410, "Expired", f"too old resource version: {since} "
                                  f"({srv.version})"))
            chunk(b"")
            self.close_connection = True
            return
        ns = self.path.split("/namespaces/", 1)[1].split("/", 1)[0] \
            if "/namespaces/" in self.path else None
        selector = query.get("labelSelector", "")
        timeout = query.get("timeoutSeconds", "")
        deadline = time.monotonic() + (float(timeout) if timeout.isdigit() else 1800.0)
        try:
            while time.monotonic() < deadline and not srv.stopping.is_set():
                with srv.changed:
                    fresh = [c for c in srv.changes if c[0] > seen and c[2] == plural]
                    if not fresh:
                        srv.changed.wait(0.2)
                if fresh:
                    for version, kind, _plural, obj in fresh:
                        seen = version
                        md = obj.get("metadata") or {}
                        if (ns is None or md.get("namespace") == ns) and _match_labels(
                                md.get("labels") or {}, selector):
                            send(kind, obj)
                    continue
                readable, _, _ = select.select([self.connection], [], [], 0)
                if readable:
                    try:
                        if not self.connection.recv(1):
                            break  # the client hung up
                    except (OSError, ssl.SSLError):
                        break
            with contextlib.suppress(OSError):
                chunk(b"")
        except (OSError, ssl.SSLError):
            pass
        self.close_connection = True

    def _fault(self, kind: str, ns: str | None, rest: list[str]) -> bool:
        faults = self.server.fixture.faults
        slow = (faults.get("slow") or {}).get(kind)
        if slow:
            self.server.stopping.wait(float(slow))
        with self.server.lock:
            seen = self.server.counts[kind] = self.server.counts.get(kind, 0) + 1
        if seen <= int((faults.get("too_many") or {}).get(kind, 0)):
            body = json.dumps(_status(429, "TooManyRequests", "too many requests")).encode()
            self.send_response(429)
            self.send_header("Retry-After", "1")
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return True
        if kind in (faults.get("redirect") or []):
            self.send_response(302)
            self.send_header("Location", "https://127.0.0.1:1/elsewhere")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return True
        if kind in (faults.get("not_json") or []):
            self._send(200, b"<html><body>Welcome to nginx!</body></html>", "text/html")
            return True
        if kind in (faults.get("drip") or {}):
            self._drip(float(faults["drip"][kind]))
            return True
        if kind in (faults.get("gzip_bomb") or {}):
            self._gzip_bomb(int(faults["gzip_bomb"][kind]))
            return True
        if kind in (faults.get("forbidden") or []) or (
                kind == "log" and len(rest) > 1 and rest[1] in (faults.get("forbidden_logs_of")
                                                                or [])):
            scope = f' in the namespace "{ns}"' if ns else " at the cluster scope"
            verb = "list" if len(rest) == 1 else "get"
            resource = {"log": "pods/log", "proxy": "pods/proxy"}.get(kind, kind)
            group = RESOURCES.get(kind, ("",))[0]
            self._send(403, _status(
                403, "Forbidden", faults.get("message") or
                f'{resource} is forbidden: User "system:serviceaccount:llm:vllm-triage" cannot '
                f'{verb} resource "{resource}" in API group "{group}"{scope}'))
            return True
        if kind in (faults.get("unavailable") or []):
            self._send(503, _status(503, "ServiceUnavailable",
                                    "the server is currently unable to handle the request"))
            return True
        return False

    def _drip(self, seconds_per_byte: float) -> None:
        """A body that never ends in time: one byte every ``seconds_per_byte``,
        until the client hangs up or the server stops (at most 10 minutes)."""
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(10**9))
        self.end_headers()
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and not self.server.stopping.is_set():
            try:
                self.wfile.write(b"#")
                self.wfile.flush()
            except (OSError, ssl.SSLError):
                break
            self.server.stopping.wait(seconds_per_byte)
        self.close_connection = True

    def _gzip_bomb(self, size: int) -> None:
        body = _gzip_zeros(size)
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(OSError, ssl.SSLError):
            self.wfile.write(body)

    def _pod_log(self, ns: str, pod: dict[str, Any], query: dict[str, str]) -> None:
        name = pod["metadata"]["name"]
        containers = [c["name"] for c in pod["spec"]["containers"]]
        inits = [c["name"] for c in pod["spec"].get("initContainers") or []]
        container = query.get("container") or (containers[0] if len(containers) == 1 else "")
        if not container:
            self._send(400, _status(400, "BadRequest", f"a container name must be specified for "
                                    f"pod {name}, choose one of: {containers}"
                                    + (f" or one of the init containers: {inits}"
                                       if inits else "")))
            return
        if container not in containers + inits:
            self._send(400, _status(400, "BadRequest", f"container {container} is not valid for "
                                    f"pod {name}"))
            return
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        if node and self._node_missing(node):
            # The API server looks up the Node to reach its kubelet, and says so in the
            # words of its own lookup (the Node's name, as a "pods" NotFound).
            missing = _status(404, "NotFound", f'pods "{node}" not found')
            missing["details"] = {"name": node, "kind": "pods"}
            self._send(404, missing)
            return
        previous = query.get("previous") == "true"
        pod_status = pod.get("status") or {}
        status = next((c for key in ("containerStatuses", "initContainerStatuses")
                       for c in pod_status.get(key) or [] if c.get("name") == container), {})
        state = status.get("state") or {}
        last = (status.get("lastState") or {}).get("terminated")
        # The kubelet picks the container instance from the pod status, not from what
        # is on disk (kubelet validateContainerLogStatus). Its own status, that is: when
        # the API's holds none of the container (a status update lost), the kubelet still
        # serves the logs of the instances it has.
        if not status and (pod.get("spec") or {}).get("nodeName"):
            path = self.server.fixture.log(ns, name, container, previous)
            if not path.exists():
                which = "previous terminated container" if previous else "container"
                self._send(400, _status(400, "BadRequest", f'{which} "{container}" in pod '
                                        f'"{name}" not found'))
                return
        elif previous:
            if not last and not state.get("terminated"):
                self._send(400, _status(400, "BadRequest", f'previous terminated container '
                                        f'"{container}" in pod "{name}" not found'))
                return
            path = self.server.fixture.log(ns, name, container, True)
        elif state.get("running") or state.get("terminated"):
            path = self.server.fixture.log(ns, name, container, False)
        elif last:
            # a container waiting to restart serves its last run's log
            path = self.server.fixture.log(ns, name, container, True)
        else:
            reason = (state.get("waiting") or {}).get("reason", "")
            why = {"ErrImagePull": "image can't be pulled",
                   "ImagePullBackOff": "trying and failing to pull image"}.get(reason, reason)
            tail_msg = f": {why}" if why else " - no logs yet"
            self._send(400, _status(400, "BadRequest", f'container "{container}" in pod '
                                    f'"{name}" is waiting to start{tail_msg}'))
            return
        if not path.exists():
            self._send(200, b"", "text/plain")
            return
        # The kubelet's semantics, read from the end of the file as it does (a
        # 100 MB log is not loaded to serve its tail): tailLines counts "\n"
        # only, then limitBytes keeps the first bytes of that tail.
        size = path.stat().st_size
        tail = query.get("tailLines")
        start = _tail_start(path, int(tail)) if tail and tail.isdigit() else 0
        limit = query.get("limitBytes")
        cap = int(limit) if limit and limit.isdigit() and \
            not self.server.fixture.faults.get("ignore_limit_bytes") else None
        # timestamps=true: the kubelet's RFC3339Nano time and a space before each line.
        # A fixture log holds them (as `collect` writes it); a log a test wrote without
        # them gets the container run's start time on every line.
        stamped = _has_kubelet_times(path)
        want = query.get("timestamps") == "true"
        if stamped and not want:
            body = strip_kubelet_times(path.read_bytes()[start:])
            self._send(200, body[:cap] if cap is not None else body, "text/plain")
            return
        prefix = b""
        if want and not stamped:
            run = (last or {}) if previous or not (state.get("running") or
                                                   state.get("terminated")) else \
                (state.get("running") or state.get("terminated") or {})
            prefix = str(run.get("startedAt") or "1970-01-01T00:00:00Z").replace(
                "Z", ".000000000Z").encode() + b" "
        total = size - start + len(prefix) * _line_starts(path, start, size)
        length = total if cap is None else min(total, cap)
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(length))
        self.end_headers()
        with path.open("rb") as fh, contextlib.suppress(OSError, ssl.SSLError):
            for chunk in _timed_chunks(fh, start, size, prefix):
                if length <= 0:
                    break
                self.wfile.write(chunk[:length])
                length -= len(chunk)

    def _node_missing(self, node: str) -> bool:
        return not any((n.get("metadata") or {}).get("name") == node
                       for n in self.server.fixture.objects.get("nodes", []))

    def _pod_proxy(self, ns: str, pod: dict[str, Any], target: str, path: str) -> None:
        name = pod["metadata"]["name"]
        port = target.split(":", 1)[1] if ":" in target else ""
        ip = (pod.get("status") or {}).get("podIP") or "10.0.0.1"
        metrics = self.server.fixture.metrics(ns, name)
        running = (pod.get("status") or {}).get("phase") == "Running"
        if not port:  # no port: the first declared container port, as the API server does
            declared = [str(p.get("containerPort")) for c in pod["spec"]["containers"]
                        for p in c.get("ports") or []]
            port = declared[0] if declared else "80"
        if not running or not metrics.exists() or port not in _listening_ports(pod):
            # The API server's proxy answers a refused dial with 500 and a Status that
            # has no reason (apimachinery's proxy ErrorResponder).
            self._send(500, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                             "status": "Failure", "code": 500,
                             "message": f"error trying to reach service: dial tcp {ip}:{port}: "
                                        "connect: connection refused"})
            return
        if path != "metrics":  # vLLM's FastAPI answers unknown paths itself
            self._send(404, {"detail": "Not Found"})
            return
        self._send(200, metrics.read_bytes(), "text/plain; version=0.0.4; charset=utf-8")

    def _service_proxy(self, ns: str, name: str, path: str, query: str) -> None:
        """The API server's service proxy, GET only, to an upstream a test registered
        (``server.service_upstreams[(ns, name)] = "http://127.0.0.1:PORT"``)."""
        import urllib.error
        import urllib.request

        upstream = self.server.service_upstreams.get((ns, name))
        if upstream is None:
            self._send(503, _status(503, "ServiceUnavailable",
                                    f'no endpoints available for service "{name}"'))
            return
        target = f"{upstream.rstrip('/')}/{path}" + (f"?{query}" if query else "")
        try:
            with urllib.request.urlopen(target, timeout=30) as resp:
                self._send(resp.status, resp.read(),
                           resp.headers.get("Content-Type", "application/json"))
        except urllib.error.HTTPError as exc:
            self._send(exc.code, exc.read(), exc.headers.get("Content-Type",
                                                             "application/json"))
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            self._send(503, _status(503, "ServiceUnavailable",
                                    f"error trying to reach service: {reason}"))

    def _served_resources(self) -> list[tuple[str, tuple[str, str, str, bool, list[str]]]]:
        """(plural, spec) of every kind served now, alternates included."""
        fx = self.server.fixture
        every = [*self.server.resources.items(),
                 *((p, spec) for p, spec in ALTERNATES.items() if p in self.server.resources)]
        return [(p, spec) for p, spec in every if fx.served(p, spec[0])]

    def _group_list(self) -> dict[str, Any]:
        groups: dict[str, set[str]] = {}
        for _plural, (group, version, *_rest) in self._served_resources():
            if group:
                groups.setdefault(group, set()).add(version)
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
            {"name": g, "versions": [{"groupVersion": f"{g}/{v}", "version": v}
                                     for v in sorted(vs)],
             "preferredVersion": {"groupVersion": f"{g}/{sorted(vs)[0]}",
                                  "version": sorted(vs)[0]}}
            for g, vs in sorted(groups.items())]}

    def _resource_list(self, group: str, version: str) -> dict[str, Any]:
        resources = []
        for plural, (g, v, kind, namespaced, short) in self._served_resources():
            if (g, v) != (group, version):
                continue
            resources.append({"name": plural, "singularName": kind.lower(),
                              "namespaced": namespaced, "kind": kind,
                              "verbs": ["get", "list", "watch"], "shortNames": short})
            for sub in SUBRESOURCES.get(plural, []):
                resources.append({"name": f"{plural}/{sub}", "singularName": "",
                                  "namespaced": namespaced, "kind": kind if sub != "log" else
                                  "Pod", "verbs": ["get"]})
        return {"kind": "APIResourceList", "apiVersion": "v1",
                "groupVersion": f"{group}/{version}" if group else version,
                "resources": resources}


_KUBELET_TIME = re.compile(rb"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:\d\d) ",
                           re.MULTILINE)


def _has_kubelet_times(path: Path) -> bool:
    """Whether a log file holds the kubelet's time in front of its lines."""
    with path.open("rb") as fh:
        return _KUBELET_TIME.match(fh.read(64)) is not None


def strip_kubelet_times(data: bytes) -> bytes:
    """A log as ``kubectl logs`` shows it without ``--timestamps``."""
    return _KUBELET_TIME.sub(b"", data)


def _line_starts(path: Path, start: int, end: int) -> int:
    """Lines that begin in [start, end): one at start, one after each newline but the last
    byte's."""
    if end <= start:
        return 0
    count = 1
    with path.open("rb") as fh:
        fh.seek(start)
        pos = start
        while pos < end - 1:
            block = fh.read(min(1 << 20, end - 1 - pos))
            if not block:
                break
            count += block.count(b"\n")
            pos += len(block)
    return count


def _timed_chunks(fh: Any, start: int, end: int, prefix: bytes) -> Iterator[bytes]:
    """The bytes of [start, end) with ``prefix`` before every line (none: as they are),
    streamed: a 256 MiB log is never held whole."""
    fh.seek(start)
    pos, fresh = start, True
    while pos < end:
        chunk = fh.read(min(1 << 20, end - pos))
        if not chunk:
            return
        if not prefix:
            pos += len(chunk)
            yield chunk
            continue
        out = bytearray()
        offset = 0
        for i, part in enumerate(chunk.split(b"\n")):
            if i:
                out += b"\n"
                offset += 1
                fresh = True
            if fresh and pos + offset < end:
                out += prefix
            fresh = False
            out += part
            offset += len(part)
        pos += len(chunk)
        yield bytes(out)


def _tail_start(path: Path, lines: int) -> int:
    """Offset of the last ``lines`` lines ("\n"-terminated; a last line without one counts)."""
    if lines <= 0:
        return path.stat().st_size
    with path.open("rb") as fh:
        size = fh.seek(0, 2)
        pos = size
        if size and (fh.seek(size - 1), fh.read(1))[1] == b"\n":
            pos -= 1  # the final newline ends the last line; it does not start one
        seen = 0
        while pos > 0:
            step = min(pos, 1 << 16)
            fh.seek(pos - step)
            block = fh.read(step)
            idx = len(block)
            while True:
                idx = block.rfind(b"\n", 0, idx)
                if idx < 0:
                    break
                seen += 1
                if seen == lines:
                    return pos - step + idx + 1
            pos -= step
    return 0


_BOMBS: dict[int, bytes] = {}


def _gzip_zeros(size: int) -> bytes:
    """gzip of ``size`` zero bytes (1 GiB packs to about 1 MiB), made once."""
    if size not in _BOMBS:
        import zlib

        packer = zlib.compressobj(9, zlib.DEFLATED, 31)
        block = bytes(1 << 20)
        parts = [packer.compress(block) for _ in range(size >> 20)]
        parts.append(packer.compress(bytes(size & ((1 << 20) - 1))))
        parts.append(packer.flush())
        _BOMBS[size] = b"".join(parts)
    return _BOMBS[size]


class TLSFiles:
    """A throw-away CA and a serving certificate for 127.0.0.1, made once per process.

    Real clients send bearer tokens only over TLS (kubectl drops them on
    plain HTTP), so the test server speaks HTTPS like a real API server.
    """

    _made: TLSFiles | None = None

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="kubeapi-tls-"))
        now = dt.datetime.now(dt.timezone.utc)
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "replay-ca")])
        ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
              .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
              .not_valid_before(now - dt.timedelta(hours=1))
              .not_valid_after(now + dt.timedelta(days=2))
              .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
              .add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False,
                                           False), critical=True)
              .sign(ca_key, hashes.SHA256()))
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (x509.CertificateBuilder()
                .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME,
                                                            "kube-apiserver")]))
                .issuer_name(ca_name).public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - dt.timedelta(hours=1))
                .not_valid_after(now + dt.timedelta(days=1))
                .add_extension(x509.SubjectAlternativeName([
                    x509.DNSName("localhost"),
                    x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
                .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]),
                               critical=False)
                .sign(ca_key, hashes.SHA256()))
        self.ca_pem = ca.public_bytes(serialization.Encoding.PEM)
        self._ca, self._ca_key = ca, ca_key
        self.ca_file = self.dir / "ca.crt"
        self.ca_file.write_bytes(self.ca_pem)
        self.cert = self.dir / "tls.crt"
        self.key = self.dir / "tls.key"
        self.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        self.key.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                               serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()))

    def issue(self, name: str, server: bool, expired: bool = False) -> tuple[bytes, bytes]:
        """A certificate and key (PEM) signed by this CA: for 127.0.0.1 when ``server``,
        else a client certificate for user ``name``; ``expired`` ended an hour ago."""
        now = dt.datetime.now(dt.timezone.utc)
        key = ec.generate_private_key(ec.SECP256R1())
        end = now - dt.timedelta(hours=1) if expired else now + dt.timedelta(days=1)
        builder = (x509.CertificateBuilder()
                   .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
                   .issuer_name(self._ca.subject).public_key(key.public_key())
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(now - dt.timedelta(days=2)).not_valid_after(end))
        if server:
            builder = builder.add_extension(x509.SubjectAlternativeName([
                x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                critical=False)
        usage = x509.oid.ExtendedKeyUsageOID.SERVER_AUTH if server else \
            x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH
        cert = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False).sign(
            self._ca_key, hashes.SHA256())
        return (cert.public_bytes(serialization.Encoding.PEM),
                key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))

    @classmethod
    def get(cls) -> TLSFiles:
        if cls._made is None:
            cls._made = cls()
        return cls._made


class RBAC:
    """Role-based access as the API server decides it, for Roles and ClusterRoles
    (each taken as bound to the caller): a ClusterRole covers every namespace and
    cluster-scoped resources, a Role only namespaced resources in its namespace."""

    def __init__(self, documents: list[dict[str, Any]]) -> None:
        self.roles: list[tuple[str | None, list[dict[str, Any]]]] = []
        for doc in documents:
            if not isinstance(doc, dict) or doc.get("kind") not in ("Role", "ClusterRole"):
                continue
            ns = (doc.get("metadata") or {}).get("namespace") if doc["kind"] == "Role" else None
            self.roles.append((ns, list(doc.get("rules") or [])))

    @classmethod
    def from_files(cls, *paths: Path) -> RBAC:
        return cls([d for p in paths for d in yaml.safe_load_all(p.read_text()) if d])

    def allows(self, verb: str, group: str, resource: str, ns: str | None) -> bool:
        for scope, rules in self.roles:
            if scope is not None and ns != scope:
                continue
            for rule in rules:
                if ((verb in rule.get("verbs", []) or "*" in rule.get("verbs", []))
                        and (group in rule.get("apiGroups", []) or "*" in rule.get("apiGroups", []))
                        and (resource in rule.get("resources", [])
                             or "*" in rule.get("resources", []))):
                    return True
        return False


class KubeAPIServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, fixture_dir: Path, port: int = 0, token: str = TOKEN,
                 request_log: Path | None = None, expired_cert: bool = False,
                 client_certs: bool = False, rbac: RBAC | None = None,
                 latency: float = 0.0, deploy_kinds: bool = False) -> None:
        """``expired_cert``: serve a certificate that has expired; ``client_certs``:
        require a client certificate signed by the test CA (as an API server with
        --client-ca-file does when a client offers one); ``latency``: seconds every
        request waits before it is answered (a remote API server, for the benchmark)."""
        super().__init__(("127.0.0.1", port), Handler)
        self.tls = TLSFiles.get()
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        if expired_cert:
            cert, key = self.tls.issue("kube-apiserver", server=True, expired=True)
            (self.tls.dir / "expired.crt").write_bytes(cert)
            (self.tls.dir / "expired.key").write_bytes(key)
            context.load_cert_chain(self.tls.dir / "expired.crt", self.tls.dir / "expired.key")
        else:
            context.load_cert_chain(self.tls.cert, self.tls.key)
        if client_certs:
            context.verify_mode = ssl.CERT_REQUIRED
            context.load_verify_locations(self.tls.ca_file)
        self.socket = context.wrap_socket(self.socket, server_side=True)
        self.fixture = Fixture(fixture_dir)
        self.resources = {**RESOURCES, **(DEPLOY_RESOURCES if deploy_kinds else {})}
        self.token = token
        self.latency = latency
        self.requests: list[str] = []
        # (namespace, service) -> base URL the service proxy forwards GETs to.
        self.service_upstreams: dict[tuple[str, str], str] = {}
        self.request_log = request_log
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.counts: dict[str, int] = {}
        self.rbac = rbac  # None: everything is allowed (but Secrets)
        self.denied: list[str] = []
        # The cluster's resourceVersion and the last changes, for watches (switch()).
        self.version = 424242
        self.changes: collections.deque[tuple[int, str, str, dict[str, Any]]] = \
            collections.deque(maxlen=1000)
        self.changed = threading.Condition()

    def switch(self, fixture_dir: Path) -> None:
        """Serve ``fixture_dir`` from now on, as this cluster a moment later: the pods
        that changed are sent to watches as events with new resource versions."""
        new = Fixture(fixture_dir)

        def by_key(fx: Fixture) -> dict[tuple[str, str], dict[str, Any]]:
            return {((o.get("metadata") or {}).get("namespace") or "",
                     (o.get("metadata") or {}).get("name") or ""): o
                    for o in fx.objects.get("pods", [])}

        old_pods, new_pods = by_key(self.fixture), by_key(new)
        with self.changed:
            for key in sorted(old_pods.keys() | new_pods.keys()):
                before, after = old_pods.get(key), new_pods.get(key)
                if before == after:
                    continue
                self.version += 1
                kind = "DELETED" if after is None else "ADDED" if before is None else "MODIFIED"
                obj = json.loads(json.dumps(after if after is not None else before))
                obj.setdefault("metadata", {})["resourceVersion"] = str(self.version)
                if after is not None:
                    after.setdefault("metadata", {})["resourceVersion"] = str(self.version)
                self.changes.append((self.version, kind, "pods", obj))
            self.fixture = new
            self.changed.notify_all()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up (a timed-out scan, kubectl -w ended) is not an error."""
        import sys

        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, ssl.SSLError, TimeoutError)):
            return
        super().handle_error(request, client_address)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.server_address[1]}"

    def start(self) -> KubeAPIServer:
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self.stopping.set()  # ends held watches and slow answers
        self.shutdown()
        self.server_close()


def write_kubeconfig(path: Path, server: str, token: str = TOKEN, namespace: str = "llm",
                     context: str = "incident-replay") -> Path:
    ca = base64.b64encode(TLSFiles.get().ca_pem).decode()
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": context,
        "clusters": [{"name": "replay", "cluster": {"server": server,
                                                    "certificate-authority-data": ca}}],
        "users": [{"name": "triage", "user": {"token": token}}],
        "contexts": [{"name": context, "context": {"cluster": "replay", "user": "triage",
                                                   "namespace": namespace}}],
    }))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fixture", type=Path)
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument("--kubeconfig", type=Path, help="write a kubeconfig for this server")
    parser.add_argument("--latency", type=float, default=0.0,
                        help="seconds every request waits before its answer")
    args = parser.parse_args()
    server = KubeAPIServer(args.fixture, args.port, latency=args.latency)
    if args.kubeconfig:
        ns = server.fixture.incident.get("namespace") or "default"
        write_kubeconfig(args.kubeconfig, server.url, namespace=ns)
    print(f"serving {args.fixture} at {server.url} (token {TOKEN})", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
