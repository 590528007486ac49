"""Saved bundles and fixture directories: one layout, read and written here.

::

    manifest.json            schema, tool version, time, context, namespace,
                             what could not be read (bundles)
    incident.yaml            the same keys plus the expected result (fixtures)
    objects/<kind>.json|yaml an API List exactly as the API server returns it
    logs/<ns>/<pod>/<container>.log           current container log
    logs/<ns>/<pod>/<container>.previous.log  previous container log
    metrics/<ns>/<pod>.txt   Prometheus text from the pod's /metrics

A bundle is this directory as a ``.tar.gz``. Anything written is redacted.
"""

from __future__ import annotations

import io
import json
import tarfile
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from triage import __version__, workload
from triage.collect import InputError
from triage.redact import redact_object, redact_text
from triage.snapshot import ALL_KINDS, Obj, ReadFailure, Snapshot

BUNDLE_SCHEMA = "vllm-triage/bundle/v1"
_SUPPORTED_SCHEMAS = {BUNDLE_SCHEMA}
_MAX_MEMBER_BYTES = 64 * 1024 * 1024  # a bundle member larger than this is refused


def load(path: Path) -> Snapshot:
    """Read a bundle (.tar.gz), an unpacked bundle, or a fixture directory."""
    if not path.exists():
        raise InputError(f"{path}: no such file or directory")
    if path.is_dir():
        return _load_dir(path)
    try:
        with tarfile.open(path, "r:*") as tar, tempfile.TemporaryDirectory() as tmp:
            _safe_extract(tar, Path(tmp))
            roots = [p for p in Path(tmp).iterdir() if p.is_dir()]
            root = roots[0] if len(roots) == 1 and not (Path(tmp) / "manifest.json").exists() \
                else Path(tmp)
            return _load_dir(root)
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise InputError(f"{path}: not a readable bundle ({exc})") from None


def _safe_extract(tar: tarfile.TarFile, dest: Path) -> None:
    for member in tar.getmembers():
        target = (dest / member.name).resolve()
        if not str(target).startswith(str(dest.resolve())) or member.issym() or member.islnk():
            raise InputError(f"bundle member {member.name!r} points outside the bundle")
        if member.size > _MAX_MEMBER_BYTES:
            raise InputError(f"bundle member {member.name!r} is larger than "
                             f"{_MAX_MEMBER_BYTES // (1024 * 1024)} MiB")
        if member.isfile() or member.isdir():
            tar.extract(member, dest)


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
            schema = data.get("schema")
            if name == "manifest.json" and schema not in _SUPPORTED_SCHEMAS:
                raise InputError(
                    f"{p}: bundle schema {schema!r} is not one this vllm-triage {__version__} "
                    f"reads ({', '.join(sorted(_SUPPORTED_SCHEMAS))}); use the version that "
                    f"wrote it ({data.get('tool_version', 'unknown')}) or a newer one")
            return data
    raise InputError(f"{root}: neither manifest.json (bundle) nor incident.yaml (fixture) found")


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
        snap.failures.append(ReadFailure(str(f.get("what")), str(f.get("reason")),
                                         str(f.get("kind", ""))))
    snap.absent_kinds = set(man.get("absent_kinds") or [])
    objects = root / "objects"
    for kind in ALL_KINDS:
        for ext in (".json", ".yaml", ".yml"):
            p = objects / f"{kind}{ext}"
            if p.exists():
                data = _read_structured(p)
                items = data.get("items") if isinstance(data, dict) else data
                if not isinstance(items, list):
                    raise InputError(f"{p}: expected an API List with items")
                snap.objects[kind] = [redact_object(o) for o in items if isinstance(o, dict)]
                break
    if man.get("schema") is None:  # a fixture: keep the pods a live scan would keep
        if not snap.selector:
            snap.objects["pods"] = [p for p in snap.pods() if workload.vllm_containers(p)]
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
            snap.logs[(ns, pod, name, stream)] = redact_text(
                p.read_bytes().decode("utf-8", errors="replace"))
    metrics = root / "metrics"
    if metrics.is_dir():
        for p in sorted(metrics.glob("*/*.txt")):
            snap.metrics[(p.parent.name, p.stem)] = redact_text(
                p.read_bytes().decode("utf-8", errors="replace"))
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
        "failures": [{"what": f.what, "reason": f.reason, "kind": f.kind}
                     for f in snapshot.failures],
        "absent_kinds": sorted(snapshot.absent_kinds),
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
    with tarfile.open(out, "w:gz") as tar:
        for name, data in members:
            info = tarfile.TarInfo(str(top / name))
            info.size = len(data)
            info.mode = 0o644
            info.mtime = 0
            tar.addfile(info, io.BytesIO(data))
