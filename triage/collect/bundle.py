"""Saved bundles and fixture directories: one layout, read and written here.

::

    manifest.json            schema, tool version, time, context, namespace,
                             what could not be read (bundles)
    incident.yaml            the same keys plus the expected result (fixtures)
    objects/<kind>.json|yaml an API List exactly as the API server returns it
    logs/<ns>/<pod>/<container>.log           current container log
    logs/<ns>/<pod>/<container>.previous.log  previous container log
    metrics/<ns>/<pod>.txt   Prometheus text from the pod's /metrics

A bundle is this directory as a ``.tar.gz``. Every member is redacted when
written, so a bundle is not redacted again when loaded (its manifest names
the redaction rules it was written with); a fixture directory's objects get
the structural pass on load. Log and metrics text is redacted where it leaves
the tool, in the report.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import tarfile
import tempfile
import zlib
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from triage import __version__, selection
from triage.collect import InputError
from triage.redact import REDACTION_VERSION, redact_object, redact_text
from triage.snapshot import ALL_KINDS, Obj, ReadFailure, Snapshot

BUNDLE_SCHEMA = "vllm-triage/bundle/v1"
_SUPPORTED_SCHEMAS = {BUNDLE_SCHEMA}
_NEWEST_SCHEMA_VERSION = 1
_SCHEMA_RE = re.compile(r"^vllm-triage/bundle/v(\d+)$")
_MAX_MEMBER_BYTES = 64 * 1024 * 1024  # a bundle member larger than this is refused
_MAX_TOTAL_BYTES = 1024 * 1024 * 1024  # and a bundle that unpacks to more than this


def load(path: Path) -> Snapshot:
    """Read a bundle (.tar.gz), an unpacked bundle, or a fixture directory."""
    if not path.exists():
        raise InputError(f"{path}: no such file or directory")
    if path.is_dir():
        return _load_dir(_root_of(path))
    try:
        with tarfile.open(path, "r:*") as tar, tempfile.TemporaryDirectory() as tmp:
            _safe_extract(tar, Path(tmp))
            try:
                return _load_dir(_root_of(Path(tmp)))
            except InputError as exc:  # name the member inside the bundle, not a temp path
                raise InputError(str(exc).replace(str(Path(tmp)) + os.sep, f"{path}: ")
                                 ) from None
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        reason = " ".join(str(exc).split()) or exc.__class__.__name__
        raise InputError(f"{path}: not a readable bundle (a .tar.gz written by vllm-triage "
                         f"collect, an unpacked bundle or a fixture directory): {reason}"
                         ) from None


def _root_of(path: Path) -> Path:
    """The bundle's own directory: the path itself, or its one subdirectory
    (a bundle unpacks to ``vllm-triage-bundle/``)."""
    if (path / "manifest.json").exists() or (path / "incident.yaml").exists():
        return path
    subdirs = [p for p in path.iterdir() if p.is_dir()]
    if len(subdirs) == 1 and ((subdirs[0] / "manifest.json").exists()
                              or (subdirs[0] / "incident.yaml").exists()):
        return subdirs[0]
    return path


def _safe_extract(tar: tarfile.TarFile, dest: Path) -> None:
    """Extract regular files and directories only, each inside ``dest``.

    Absolute names, ``..`` components, links and device files are refused
    before anything is written: a bundle comes from someone else's machine.
    """
    base = dest.resolve()
    members = tar.getmembers()
    total = 0
    for member in members:
        parts = PurePosixPath(member.name.replace("\\", "/")).parts
        target = (base / member.name).resolve()
        if (member.name.startswith(("/", "\\")) or ".." in parts
                or not target.is_relative_to(base) or member.issym() or member.islnk()):
            raise InputError(f"bundle member {member.name!r} points outside the bundle; "
                             f"refusing to unpack it")
        if not (member.isfile() or member.isdir()):
            raise InputError(f"bundle member {member.name!r} is not a regular file or "
                             f"directory; refusing to unpack it")
        if member.size > _MAX_MEMBER_BYTES:
            raise InputError(f"bundle member {member.name!r} is larger than "
                             f"{_MAX_MEMBER_BYTES // (1024 * 1024)} MiB")
        total += member.size
        if total > _MAX_TOTAL_BYTES:
            raise InputError(f"bundle unpacks to more than {_MAX_TOTAL_BYTES // 2**30} GiB")
    for member in members:
        target = base / member.name
        if member.isdir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        src = tar.extractfile(member)
        if src is None:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        with src, open(target, "wb") as out:
            while chunk := src.read(1024 * 1024):
                out.write(chunk)


def _read_structured(path: Path) -> Any:
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        return json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise InputError(f"{path}: not valid {path.suffix[1:].upper()}: "
                         f"{' '.join(str(exc).split())[:200]}") from None


def _manifest(root: Path) -> dict[str, Any]:
    for name in ("manifest.json", "incident.yaml"):
        p = root / name
        if p.exists():
            data = _read_structured(p)
            if not isinstance(data, dict):
                raise InputError(f"{p}: expected a mapping")
            if name == "manifest.json":
                _check_schema(p, data)
            return data
    raise InputError(f"{root}: neither manifest.json (bundle) nor incident.yaml (fixture) found")


def _check_schema(path: Path, manifest: dict[str, Any]) -> None:
    """Bundles of schema v1 are read whatever tool version wrote them; any
    other schema is refused with a message that says what to do."""
    schema = manifest.get("schema")
    if schema in _SUPPORTED_SCHEMAS:
        return
    writer = str(manifest.get("tool_version") or "unknown")
    ours = ", ".join(sorted(_SUPPORTED_SCHEMAS))
    m = _SCHEMA_RE.match(str(schema or ""))
    if m is None:
        raise InputError(f"{path}: not a vllm-triage bundle manifest (schema {schema!r}; "
                         f"this vllm-triage {__version__} reads {ours})")
    if int(m.group(1)) > _NEWEST_SCHEMA_VERSION:
        raise InputError(f"{path}: bundle format {schema} was written by vllm-triage {writer}, "
                         f"newer than this vllm-triage {__version__} (reads {ours}); upgrade "
                         f"vllm-triage to analyze it")
    raise InputError(f"{path}: bundle format {schema} was written by vllm-triage {writer} and is "
                     f"no longer read by this vllm-triage {__version__} (reads {ours}); analyze "
                     f"it with vllm-triage {writer}, or collect it again")


def _load_dir(root: Path) -> Snapshot:
    man = _manifest(root)
    snap = Snapshot(
        context=man.get("context"),
        namespace=man.get("namespace"),
        collected_at=str(man.get("collected_at") or ""),
        tool_version=str(man.get("tool_version") or __version__),
        selector=man.get("selector"),
    )
    for f in man.get("failures") or []:
        subject = f.get("subject") or []
        snap.failures.append(ReadFailure(str(f.get("what")), str(f.get("reason")),
                                         str(f.get("kind", "")),
                                         tuple(str(x) for x in subject)
                                         if isinstance(subject, list) else ()))
    snap.absent_kinds = set(man.get("absent_kinds") or [])
    snap.notes = [str(n) for n in man.get("notes") or [] if isinstance(n, str)]
    redacted = man.get("schema") is not None and man.get("redaction") == REDACTION_VERSION
    objects = root / "objects"
    for kind in ALL_KINDS:
        for ext in (".json", ".yaml", ".yml"):
            p = objects / f"{kind}{ext}"
            if p.exists():
                data = _read_structured(p)
                items = data.get("items") if isinstance(data, dict) else data
                if not isinstance(items, list):
                    raise InputError(f"{p}: expected an API List with items")
                kept = [o for o in items if isinstance(o, dict)]
                # A bundle written with these rules was redacted on the way out.
                snap.objects[kind] = kept if redacted else [redact_object(o) for o in kept]
                break
    if man.get("schema") is None:  # a fixture: keep the pods a live scan would keep
        snap.objects["pods"] = selection.select_pods(snap.pods(), snap.selector)
        if snap.namespace:
            snap.objects = {k: [o for o in v if _in_namespace(o, k, snap.namespace)]
                            for k, v in snap.objects.items()}
        if "inferenceservices" not in snap.objects:
            snap.absent_kinds.add("inferenceservices")
    logs = root / "logs"
    if logs.is_dir():
        for p in sorted(logs.glob("*/*/*.log")):
            ns, pod = p.parent.parent.name, p.parent.name
            name = p.name[: -len(".log")]
            stream = "current"
            if name.endswith(".previous"):
                name, stream = name[: -len(".previous")], "previous"
            snap.logs[(ns, pod, name, stream)] = p.read_bytes().decode("utf-8",
                                                                      errors="replace")
    metrics = root / "metrics"
    if metrics.is_dir():
        for p in sorted(metrics.glob("*/*.txt")):
            snap.metrics[(p.parent.name, p.stem)] = p.read_bytes().decode("utf-8",
                                                                         errors="replace")
    return snap


def _in_namespace(obj: Obj, kind: str, namespace: str) -> bool:
    if kind == "nodes":
        return True
    return (obj.get("metadata") or {}).get("namespace") in (None, namespace)


_LIST_KINDS = {
    "pods": ("v1", "PodList"), "events": ("v1", "EventList"), "nodes": ("v1", "NodeList"),
    "services": ("v1", "ServiceList"), "configmaps": ("v1", "ConfigMapList"),
    "persistentvolumeclaims": ("v1", "PersistentVolumeClaimList"),
    "replicasets": ("apps/v1", "ReplicaSetList"), "deployments": ("apps/v1", "DeploymentList"),
    "statefulsets": ("apps/v1", "StatefulSetList"),
    "horizontalpodautoscalers": ("autoscaling/v2", "HorizontalPodAutoscalerList"),
    "inferenceservices": ("serving.kserve.io/v1beta1", "InferenceServiceList"),
}


def write(snapshot: Snapshot, out: Path) -> None:
    """Write a redacted .tar.gz bundle of everything the snapshot holds."""
    manifest = {
        "schema": BUNDLE_SCHEMA,
        "tool_version": snapshot.tool_version,
        "collected_at": snapshot.collected_at,
        "context": snapshot.context,
        "namespace": snapshot.namespace,
        "selector": snapshot.selector,
        "failures": [{"what": redact_text(f.what), "reason": redact_text(f.reason),
                      "kind": f.kind, "subject": list(f.subject)} for f in snapshot.failures],
        "absent_kinds": sorted(snapshot.absent_kinds),
        "redaction": REDACTION_VERSION,
        "notes": [redact_text(n) for n in snapshot.notes],
    }
    members: list[tuple[str, bytes]] = [
        ("manifest.json", json.dumps(manifest, indent=2).encode())]
    for kind, items in snapshot.objects.items():
        api_version, list_kind = _LIST_KINDS.get(kind, ("v1", "List"))
        doc = {"apiVersion": api_version, "kind": list_kind, "metadata": {},
               "items": [redact_object(o) for o in items]}
        members.append((f"objects/{kind}.json", json.dumps(doc, indent=1).encode()))
    for (ns, pod, container, stream), text in sorted(snapshot.logs.items()):
        suffix = ".previous.log" if stream == "previous" else ".log"
        members.append((f"logs/{ns}/{pod}/{container}{suffix}", redact_text(text).encode()))
    for (ns, pod), text in sorted(snapshot.metrics.items()):
        members.append((f"metrics/{ns}/{pod}.txt", redact_text(text).encode()))
    top = PurePosixPath("vllm-triage-bundle")
    out.parent.mkdir(parents=True, exist_ok=True)
    # Write next to the target and rename: a failed collect leaves no half bundle.
    fd, tmp_name = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
    try:
        with os.fdopen(fd, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz") as tar:
            for name, data in members:
                info = tarfile.TarInfo(str(top / name))
                info.size = len(data)
                info.mode = 0o644
                info.mtime = 0
                tar.addfile(info, io.BytesIO(data))
        os.chmod(tmp_name, 0o600)  # evidence from a cluster: readable by its owner only
        os.replace(tmp_name, out)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise
