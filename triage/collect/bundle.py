"""Saved bundles and fixture directories: one layout, read and written here.

::

    manifest.json            schema, tool version, time, context, namespace,
                             what could not be read (bundles)
    incident.yaml            the same keys plus the expected result (fixtures)
    objects/<kind>.json|yaml an API List exactly as the API server returns it
    logs/<ns>/<pod>/<container>.log           current container log
    logs/<ns>/<pod>/<container>.previous.log  previous container log
    metrics/<ns>/<pod>.txt   Prometheus text from the pod's /metrics
    prometheus.json          what Prometheus said over the window (--prometheus)

A bundle is this directory as a ``.tar.gz``. Every member is redacted when
written, so a bundle is not redacted again when loaded (its manifest names
the redaction rules it was written with); a fixture directory's objects get
the structural pass on load. Log and metrics text is redacted where it leaves
the tool, in the report.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import re
import stat
import zlib
from collections import deque
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, BinaryIO

import yaml

from triage import __version__
from triage.collect import InputError
from triage.collect.logtail import keep_end
from triage.collect.shape import normalize_items
from triage.kube import workload
from triage.logs import LogSource, decode, linetime
from triage.safety import outfile, parsed
from triage.safety.redact import REDACTION_VERSION, redact_object, redact_text
from triage.safety.shell import KubectlTarget
from triage.snapshot import (
    ALL_KINDS,
    OPTIONAL_KINDS,
    PICKER_PODS,
    Obj,
    PodTelemetry,
    PrometheusWindow,
    ReadFailure,
    Snapshot,
    meta,
)
from triage.vllm import selection

if TYPE_CHECKING:
    import tarfile  # imported where an archive is read or written: a directory needs none

# libyaml's safe loader where PyYAML has it (a fixture's YAML objects parse several times
# faster); the pure-Python SafeLoader otherwise. Both build plain data, no objects.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

BUNDLE_SCHEMA = "vllm-triage/bundle/v1"
_SUPPORTED_SCHEMAS = {BUNDLE_SCHEMA}
_NEWEST_SCHEMA_VERSION = 1
_SCHEMA_RE = re.compile(r"^vllm-triage/bundle/v(\d+)$")

# Offline input is someone else's: every read is bounded, measured on what is
# kept, and the structure is bounded after parsing (YAML aliases make a few
# hundred bytes into gigabytes of objects once anything walks them).
_MAX_MEMBER_BYTES = parsed.MAX_FILE_BYTES  # one bundle member or file (objects, manifest)
# A bundle unpacks to at most this, whatever its compression ratio (a 1 MB .tar.gz of
# zeros unpacks to a gigabyte), and at most this is read into memory from a directory
# (its logs are streamed from their files, not read in).
MAX_TOTAL_BYTES = 512 * 1024 * 1024
_MAX_METRICS_BYTES = 16 * 1024 * 1024  # as the live collector
# Of a log in a .tar.gz (read into memory), its end: what a live scan keeps
# (Options.limit_bytes). A log in a directory is streamed from its file whole, in
# bounded memory (triage.logs), however large it is.
OFFLINE_LOG_BYTES = 4 * 1024 * 1024
_MAX_VALUES_PER_FILE = parsed.MAX_VALUES_PER_FILE  # values in one parsed file
_MAX_VALUES_TOTAL = parsed.MAX_VALUES_TOTAL
_MAX_ENTRIES = 100_000  # files and directories in a bundle or directory
_MAX_DEPTH = 8
_CHUNK = 1024 * 1024


_BUNDLE_FILES = {"manifest.json", "incident.yaml", "prometheus.json"}
_BUNDLE_FOLDERS = {"objects", "logs", "metrics"}


def _read_by_loader(parts: tuple[str, ...]) -> bool:
    """A member the loader reads: the bundle's own files, at its top or in its one
    folder (``vllm-triage-bundle/``)."""
    inner = [p for p in parts if p not in ("", ".")]
    return any(inner[i:] and (inner[i] in _BUNDLE_FOLDERS or
                              (len(inner) == i + 1 and inner[i] in _BUNDLE_FILES))
               for i in (0, 1) if len(inner) > i)


class _Entry:
    """One file of a bundle: its content, or why it cannot be read."""

    def __init__(self, data: bytes | None = None, problem: str = "", total: int = 0) -> None:
        self.data = data
        self.problem = problem
        self.total = total  # bytes the file had, of which ``data`` may be the end


class _Source:
    """A bundle's files by relative POSIX path, read bounded, never through a link."""

    def __init__(self, label: str) -> None:
        self.label = label  # how messages name the bundle
        self.kinds: dict[str, str] = {}  # path -> "file" | "dir" | why it is not one

    def name(self, rel: str) -> str:
        return f"{self.label}/{rel}"

    def read(self, rel: str, cap: int, tail: bool = False) -> _Entry:
        raise NotImplementedError

    def log(self, rel: str) -> tuple[LogSource | None, str, str]:
        """A log to scan, or why not: (source, problem, note about what was cut)."""
        entry = self.read(rel, OFFLINE_LOG_BYTES, tail=True)
        if entry.data is None:
            return None, entry.problem, ""
        data, note = keep_end(entry.data, entry.total, f"the file {rel}")
        return LogSource(data=data), "", note

    def exists(self, rel: str) -> bool:
        return rel in self.kinds

    def listing(self, prefix: str, depth: int, suffix: str) -> list[str]:
        """Paths under ``prefix`` exactly ``depth`` levels down that end in ``suffix``."""
        return sorted(p for p in self.kinds if p.startswith(prefix + "/")
                      and p.count("/") == prefix.count("/") + depth and p.endswith(suffix)
                      and self.kinds[p] != "dir")


class _DirSource(_Source):
    def __init__(self, root: Path) -> None:
        super().__init__(str(root))
        self.root = root
        self.read_in = 0  # bytes read into memory (logs are streamed, not counted)
        stack: list[tuple[Path, str, int]] = [(root, "", 0)]
        while stack:
            folder, rel, depth = stack.pop()
            try:
                entries = list(os.scandir(folder))
            except OSError as exc:
                raise InputError(f"{folder}: cannot list: {exc.strerror or exc}") from None
            for entry in entries:
                if len(self.kinds) >= _MAX_ENTRIES:
                    raise InputError(f"{root}: more than {_MAX_ENTRIES:,} files; not a bundle")
                path = f"{rel}/{entry.name}" if rel else entry.name
                if entry.is_symlink():
                    self.kinds[path] = "a symbolic link (not followed)"
                elif entry.is_dir(follow_symlinks=False):
                    self.kinds[path] = "dir"
                    if depth < _MAX_DEPTH:
                        stack.append((Path(entry.path), path, depth + 1))
                elif entry.is_file(follow_symlinks=False):
                    self.kinds[path] = "file"
                else:
                    self.kinds[path] = "not a regular file"

    def read(self, rel: str, cap: int, tail: bool = False) -> _Entry:
        kind = self.kinds.get(rel)
        if kind != "file":
            return _Entry(problem=kind or "missing")
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        try:
            fd = os.open(self.root / rel, flags)
        except OSError as exc:
            return _Entry(problem=f"cannot open: {exc.strerror or exc}")
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode):  # swapped since it was listed
                return _Entry(problem="not a regular file")
            if tail:
                fh.seek(max(0, st.st_size - cap))
                return self._counted(_Entry(fh.read(cap), total=st.st_size))
            data = fh.read(cap + 1)
            if len(data) > cap:
                return _Entry(problem=f"larger than {cap // (1024 * 1024)} MiB")
            return self._counted(_Entry(data, total=len(data)))

    def _counted(self, entry: _Entry) -> _Entry:
        self.read_in += len(entry.data or b"")
        if self.read_in > MAX_TOTAL_BYTES:
            raise InputError(f"{self.root}: more than {MAX_TOTAL_BYTES // 2**20} MiB of "
                             "objects and metrics to read; refusing it")
        return entry


    def log(self, rel: str) -> tuple[LogSource | None, str, str]:
        """A log in a directory is scanned from its file, whole: not read into memory."""
        kind = self.kinds.get(rel)
        if kind != "file":
            return None, kind or "missing", ""
        return LogSource(path=self.root / rel), "", ""


@contextlib.contextmanager
def _tar_stream(path: Path) -> Iterator[tarfile.TarFile]:
    """The bundle as a tar stream. A gzip one is read through the gzip module, which
    raises EOFError when the stream was cut short; tarfile's own stream reader ends
    quietly at the cut, and a bundle cut between two members would read as a smaller,
    whole one."""
    import gzip
    import tarfile

    with open(path, "rb") as probe:
        gzipped = probe.read(2) == b"\x1f\x8b"
    if not gzipped:
        with tarfile.open(path, "r|*") as tar:
            yield tar
        return
    with gzip.open(path, "rb") as raw, tarfile.open(fileobj=raw, mode="r|") as tar:
        yield tar


class _TarSource(_Source):
    """A .tar.gz read as a stream, into memory, nothing extracted to disk.

    Absolute names, ``..`` components, links and device files are refused:
    a bundle comes from someone else's machine. Logs keep their end.
    """

    def __init__(self, path: Path) -> None:
        super().__init__(str(path))
        self.files: dict[str, _Entry] = {}
        total = 0
        with _tar_stream(path) as tar:
            for member in tar:
                if len(self.kinds) >= _MAX_ENTRIES:
                    raise InputError(f"{path}: more than {_MAX_ENTRIES:,} members; not a bundle")
                parts = PurePosixPath(member.name.replace("\\", "/")).parts
                if (member.name.startswith(("/", "\\")) or ".." in parts or member.issym()
                        or member.islnk()):
                    raise InputError(f"{path}: bundle member {member.name!r} points outside the "
                                     f"bundle; refusing to read it")
                if not (member.isfile() or member.isdir()):
                    raise InputError(f"{path}: bundle member {member.name!r} is not a regular "
                                     f"file or directory; refusing to read it")
                rel = "/".join(p for p in parts if p not in ("", "."))
                if not rel:
                    continue
                for i in range(1, len(parts)):
                    self.kinds.setdefault("/".join(parts[:i]), "dir")
                if member.isdir():
                    self.kinds[rel] = "dir"
                    continue
                if member.size > _MAX_MEMBER_BYTES:
                    raise InputError(f"{path}: bundle member {member.name!r} is larger than "
                                     f"{_MAX_MEMBER_BYTES // (1024 * 1024)} MiB")
                total += member.size
                if total > MAX_TOTAL_BYTES:
                    raise InputError(
                        f"{path}: bundle unpacks to more than {MAX_TOTAL_BYTES // 2**20} MiB "
                        f"(its members so far hold {total / 2**20:,.0f} MiB, from a "
                        f"{path.stat().st_size / 2**20:,.1f} MiB file); refusing it")
                self.kinds[rel] = "file"
                src = tar.extractfile(member)
                if src is None:
                    continue
                if not _read_by_loader(parts):
                    # Read through (the stream goes on), never kept: only what a bundle
                    # holds takes memory.
                    while src.read(_CHUNK):
                        pass
                    self.files[rel] = _Entry(problem="not part of a bundle (not read)")
                    continue
                keep = OFFLINE_LOG_BYTES if rel.endswith(".log") else _MAX_MEMBER_BYTES
                kept: deque[bytes] = deque()
                kept_len = got = 0
                while chunk := src.read(_CHUNK):
                    kept.append(chunk)
                    kept_len += len(chunk)
                    got += len(chunk)
                    while kept_len - len(kept[0]) >= keep:
                        kept_len -= len(kept.popleft())
                if got < member.size:
                    # A stream cut inside its last member ends quietly: never a partial
                    # member read as if it were whole.
                    raise EOFError(f"member {member.name!r} is cut short")
                data = b"".join(kept)
                self.files[rel] = _Entry(data[-keep:], total=member.size)

    def read(self, rel: str, cap: int, tail: bool = False) -> _Entry:
        entry = self.files.get(rel)
        if entry is None or entry.data is None:
            return _Entry(problem=self.kinds.get(rel, "missing"))
        if tail:
            return _Entry(entry.data[-cap:], total=entry.total)
        if len(entry.data) > cap:
            return _Entry(problem=f"larger than {cap // (1024 * 1024)} MiB")
        return entry


def load(path: Path) -> Snapshot:
    """Read a bundle (.tar.gz), an unpacked bundle, or a fixture directory."""
    try:
        info = path.stat()  # the path the user gave may be a link; what is inside may not
    except OSError:
        raise InputError(f"{path}: no such file or directory") from None
    if stat.S_ISDIR(info.st_mode):
        return _load(_root_of(_DirSource(path)))
    if not stat.S_ISREG(info.st_mode):
        raise InputError(f"{path}: not a regular file or directory (a FIFO or a device?); "
                         "give a bundle or a directory")
    import tarfile

    try:
        source: _Source = _TarSource(path)
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        reason = " ".join(str(exc).split()) or exc.__class__.__name__
        if "end of data" in reason or isinstance(exc, EOFError):
            reason = "the archive is cut short"
        raise InputError(f"{path}: not a readable bundle (a .tar.gz written by vllm-triage "
                         f"collect, an unpacked bundle or a fixture directory): {reason}"
                         ) from None
    return _load(_root_of(source))


class _Sub(_Source):
    """A source seen from one of its directories (a bundle unpacks to one folder)."""

    def __init__(self, base: _Source, prefix: str) -> None:
        super().__init__(f"{base.label}/{prefix}")
        self.base, self.prefix = base, prefix
        self.kinds = {k[len(prefix) + 1:]: v for k, v in base.kinds.items()
                      if k.startswith(prefix + "/")}

    def read(self, rel: str, cap: int, tail: bool = False) -> _Entry:
        return self.base.read(f"{self.prefix}/{rel}", cap, tail)


def _root_of(source: _Source) -> _Source:
    """The bundle's own directory: the top, or its one subdirectory
    (a bundle unpacks to ``vllm-triage-bundle/``)."""
    if source.exists("manifest.json") or source.exists("incident.yaml"):
        return source
    subdirs = [p for p, kind in source.kinds.items() if kind == "dir" and "/" not in p]
    if len(subdirs) == 1 and (source.exists(f"{subdirs[0]}/manifest.json")
                              or source.exists(f"{subdirs[0]}/incident.yaml")):
        return _Sub(source, subdirs[0])
    return source


def _count_values(data: Any, name: str, budget: int) -> int:
    """``triage.safety.parsed.count_values``, its refusal an unreadable input."""
    try:
        return parsed.count_values(data, name, budget)
    except parsed.Refused as exc:
        raise InputError(str(exc)) from None


def _read_structured(source: _Source, rel: str, budget: list[int]) -> Any:
    entry = source.read(rel, _MAX_MEMBER_BYTES)
    if entry.data is None:
        raise InputError(f"{source.name(rel)}: {entry.problem}")
    text = entry.data.decode("utf-8", errors="replace")
    try:
        data = json.loads(text) if rel.endswith(".json") else yaml.load(text, Loader=_YAML_LOADER)
    except (ValueError, yaml.YAMLError, RecursionError) as exc:
        detail = "nested too deeply" if isinstance(exc, RecursionError) else \
            " ".join(str(exc).split())[:200]
        raise InputError(f"{source.name(rel)}: not valid {rel.rsplit('.', 1)[-1].upper()}: "
                         f"{detail}") from None
    used = _count_values(data, source.name(rel), min(_MAX_VALUES_PER_FILE, budget[0]))
    budget[0] -= used
    return data


def _manifest(source: _Source, budget: list[int]) -> dict[str, Any]:
    for name in ("manifest.json", "incident.yaml"):
        if source.exists(name):
            data = _read_structured(source, name, budget)
            if not isinstance(data, dict):
                raise InputError(f"{source.name(name)}: expected a mapping")
            if name == "manifest.json":
                _check_schema(source.name(name), data)
            return data
    raise InputError(f"{source.label}: neither manifest.json (bundle) nor incident.yaml "
                     "(fixture) found")


def _check_schema(path: str, manifest: dict[str, Any]) -> None:
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


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _select(snap: Snapshot) -> None:
    """A fixture's pods, chosen as a live scan chooses them: by spec and labels, then by
    the first lines of the logs of those that ask for a GPU or fail. The InferencePools'
    endpoint pickers' pods among them are kept apart (``PICKER_PODS``), as a live scan
    reads them."""
    pods = snap.pods()
    if PICKER_PODS not in snap.objects and snap.items("inferencepools"):
        pickers: list[Obj] = []
        for pool in snap.items("inferencepools"):
            pickers += [p for p in workload.picker_pods_to_read(workload.endpoint_picker_pods(
                pool, snap.items("services"), pods)) if all(p is not q for q in pickers)]
        snap.objects[PICKER_PODS] = pickers
    chosen = selection.select_pods(pods, snap.selector)
    if not snap.selector:
        taken = {id(p) for p in chosen}
        for pod in pods:
            if id(pod) in taken:
                continue
            ns, name = str(meta(pod).get("namespace")), str(meta(pod).get("name"))
            for container in selection.worth_reading_head(pod):
                log = snap.log(ns, name, container, "current") or \
                    snap.log(ns, name, container, "previous")
                head = next(log.blocks(selection.LOG_HEAD_BYTES), b"") if log else b""
                if selection.is_vllm_log_head(decode(head)):
                    snap.selected_by_log.add((ns, name, container))
        chosen = selection.select_pods(pods, None, snap.selected_by_log)
        snap.passed_over = selection.passed_over(pods, chosen)
    snap.objects["pods"] = chosen


def _load(source: _Source) -> Snapshot:
    budget = [_MAX_VALUES_TOTAL]
    man = _manifest(source, budget)
    snap = Snapshot(
        context=_text(man.get("context")),
        namespace=_text(man.get("namespace")),
        collected_at=str(man.get("collected_at") or ""),
        tool_version=str(man.get("tool_version") or __version__),
        selector=_text(man.get("selector")),
        # A command printed from a bundle names the context it was collected from (and
        # the kubeconfig file, when one was named).
        kubectl=KubectlTarget(_text(man.get("context")), _text(man.get("kubeconfig"))),
    )
    failures = man.get("failures")
    for f in failures if isinstance(failures, list) else []:
        if not isinstance(f, dict):
            continue
        subject = f.get("subject") or []
        snap.failures.append(ReadFailure(str(f.get("what")), str(f.get("reason")),
                                         str(f.get("kind", "")),
                                         tuple(str(x) for x in subject)
                                         if isinstance(subject, list) else ()))
    absent = man.get("absent_kinds")
    snap.absent_kinds = {str(k) for k in absent} if isinstance(absent, list) else set()
    notes = man.get("notes")
    snap.notes = [n for n in notes if isinstance(n, str)] if isinstance(notes, list) else []
    elsewhere = man.get("vllm_elsewhere")
    if isinstance(elsewhere, dict):
        snap.vllm_elsewhere = {str(k): v for k, v in elsewhere.items()
                               if isinstance(v, int) and not isinstance(v, bool)}
    snap.elsewhere_unknown = _text(man.get("elsewhere_unknown"))
    redacted = man.get("schema") is not None and man.get("redaction") == REDACTION_VERSION
    for kind in ALL_KINDS:
        for ext in (".json", ".yaml", ".yml"):
            rel = f"objects/{kind}{ext}"
            if source.exists(rel):
                data = _read_structured(source, rel, budget)
                items = data.get("items") if isinstance(data, dict) else data
                if not isinstance(items, list):
                    raise InputError(f"{source.name(rel)}: expected an API List with items")
                kept = normalize_items(kind, items, snap.notes)
                # A bundle written with these rules was redacted on the way out.
                snap.objects[kind] = kept if redacted else [redact_object(o) for o in kept]
                break
    fixture = man.get("schema") is None
    if "pods" not in snap.objects:
        # Without the pod list there is nothing to triage: never "no vLLM pods", exit 0.
        raise InputError(f"{source.label}: no pod list (objects/pods.json): the bundle is "
                         "incomplete, and nothing in it can be triaged")
    if not fixture:
        # A bundle holds every kind it read, an empty list included; a kind neither read,
        # nor failed, nor absent from the cluster was taken out of it: unknown, not empty.
        failed = {f.kind for f in snap.failures}
        for kind in ALL_KINDS:
            if kind == PICKER_PODS and not snap.objects.get("inferencepools"):
                continue  # read only for the InferencePools a bundle holds
            if kind not in snap.objects and kind not in failed | snap.absent_kinds:
                snap.failures.append(ReadFailure(
                    f"{kind} (objects/{kind}.json)", "not in the bundle", kind,
                    (snap.namespace,) if snap.namespace and kind != "nodes" else ()))
    if fixture:  # a fixture: keep the pods a live scan would keep (once its logs are known)
        if snap.namespace:
            snap.objects = {k: [o for o in v if _in_namespace(o, k, snap.namespace)]
                            for k, v in snap.objects.items()}
        for optional in ("inferenceservices", "leaderworkersets", *OPTIONAL_KINDS):
            if optional not in snap.objects:
                snap.absent_kinds.add(optional)
    for rel in source.listing("logs", 3, ".log"):
        _, ns, pod, file = rel.split("/")
        name, stream = file[: -len(".log")], "current"
        if name.endswith(".previous"):
            name, stream = name[: -len(".previous")], "previous"
        log, problem, note = source.log(rel)
        what = f"{'previous log' if stream == 'previous' else 'log'} of {ns}/{pod} ({name})"
        if log is None:
            snap.failures.append(ReadFailure(what, f"{source.name(rel)}: {problem}",
                                             "logs", (ns, pod, name, stream)))
            continue
        snap.logs[(ns, pod, name, stream)] = log
        if note:
            snap.notes.append(f"{what}: {note}")
    unstamped = [f"{ns}/{pod} ({name}{', previous' if stream == 'previous' else ''})"
                 for (ns, pod, name, stream), log in sorted(snap.logs.items())
                 if log.size and not linetime.KUBELET_STAMP.match(
                     decode(next(log.blocks(64), b"")))]
    if unstamped:
        snap.notes.append(
            f"line times: {len(unstamped)} log(s) were saved without the kubelet's times "
            f"({', '.join(unstamped[:3])}{', ...' if len(unstamped) > 3 else ''}): their "
            f"timeline uses {linetime.SOURCES[linetime.VLLM]}")
    if fixture:
        _select(snap)
    else:
        snap.selected_by_log = {(str(k[0]), str(k[1]), str(k[2])) for k in
                                man.get("selected_by_log") or [] if isinstance(k, list)
                                and len(k) == 3}
        passed = man.get("passed_over")
        snap.passed_over = [p for p in passed if isinstance(p, str)] \
            if isinstance(passed, list) else []
    if source.exists("prometheus.json"):
        snap.prometheus = _read_prometheus(source, budget)
    for rel in source.listing("metrics", 2, ".txt"):
        _, ns, file = rel.split("/")
        pod = file[: -len(".txt")]
        entry = source.read(rel, _MAX_METRICS_BYTES)
        if entry.data is None:
            snap.failures.append(ReadFailure(f"metrics of {ns}/{pod}",
                                             f"{source.name(rel)}: {entry.problem}",
                                             "metrics", (ns, pod)))
            continue
        snap.metrics[(ns, pod)] = entry.data.decode("utf-8", errors="replace")
    snap.failures.sort(key=lambda f: (f.kind, f.what))
    return snap


def _prometheus_document(window: PrometheusWindow) -> dict[str, Any]:
    return {
        "source": redact_text(window.source),
        "window_seconds": window.window_seconds,
        "end": window.end,
        "step_seconds": window.step_seconds,
        "errors": {k: redact_text(v) for k, v in sorted(window.errors.items())},
        "pods": [{"namespace": ns, "pod": pod, "values": t.values, "by_model": t.by_model,
                  "series": {k: [list(p) for p in v] for k, v in t.series.items()},
                  "gpus": [redact_object(g) for g in t.gpus], "restarts": t.restarts,
                  **({"memory": {k: [list(p) for p in v] for k, v in t.memory.items()}}
                     if t.memory else {}),
                  **({"not_numbers": t.not_numbers} if t.not_numbers else {})}
                 for (ns, pod), t in sorted(window.pods.items())],
    }


def _read_prometheus(source: _Source, budget: list[int]) -> PrometheusWindow:
    name = "prometheus.json"
    data = _read_structured(source, name, budget)
    if not isinstance(data, dict):
        raise InputError(f"{source.name(name)}: expected a mapping")
    try:
        pods = {}
        for item in data.get("pods") or []:
            pods[(str(item["namespace"]), str(item["pod"]))] = PodTelemetry(
                values={str(k): float(v) for k, v in (item.get("values") or {}).items()},
                by_model={str(m): {str(k): float(v) for k, v in vals.items()}
                          for m, vals in (item.get("by_model") or {}).items()},
                series={str(k): [(float(t), float(v)) for t, v in points]
                        for k, points in (item.get("series") or {}).items()},
                gpus=[redact_object(g) for g in item.get("gpus") or [] if isinstance(g, dict)],
                restarts={str(k): float(v) for k, v in (item.get("restarts") or {}).items()},
                memory={str(k): [(float(t), float(v)) for t, v in points]
                        for k, points in (item.get("memory") or {}).items()},
                not_numbers={str(k): str(v) for k, v in (item.get("not_numbers") or {}).items()
                             if v in ("NaN", "+Inf", "-Inf")})
        return PrometheusWindow(
            source=str(data["source"]), window_seconds=float(data["window_seconds"]),
            end=str(data["end"]), step_seconds=float(data.get("step_seconds") or 60),
            pods=pods, errors={str(k): str(v) for k, v in (data.get("errors") or {}).items()})
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InputError(f"{source.name(name)}: not a Prometheus window written by vllm-triage: "
                         f"{exc.__class__.__name__}: {exc}") from None


def _in_namespace(obj: Obj, kind: str, namespace: str) -> bool:
    if kind == "nodes":
        return True
    if kind == "events" and (obj.get("involvedObject") or {}).get("kind") == "Node":
        return True  # a node's events are recorded in namespace default; the scan reads them
    return (obj.get("metadata") or {}).get("namespace") in (None, namespace)


_LIST_KINDS = {
    "pods": ("v1", "PodList"), "events": ("v1", "EventList"), "nodes": ("v1", "NodeList"),
    "services": ("v1", "ServiceList"), "configmaps": ("v1", "ConfigMapList"),
    "persistentvolumeclaims": ("v1", "PersistentVolumeClaimList"),
    "replicasets": ("apps/v1", "ReplicaSetList"), "deployments": ("apps/v1", "DeploymentList"),
    "statefulsets": ("apps/v1", "StatefulSetList"),
    "horizontalpodautoscalers": ("autoscaling/v2", "HorizontalPodAutoscalerList"),
    "inferenceservices": ("serving.kserve.io/v1beta1", "InferenceServiceList"),
    "leaderworkersets": ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSetList"),
    "endpointslices": ("discovery.k8s.io/v1", "EndpointSliceList"),
    "scaledobjects": ("keda.sh/v1alpha1", "ScaledObjectList"),
    # Items read from inference.networking.x-k8s.io/v1alpha2 keep their own apiVersion.
    "inferencepools": ("inference.networking.k8s.io/v1", "InferencePoolList"),
    "llminferenceservices": ("serving.kserve.io/v1alpha1", "LLMInferenceServiceList"),
    PICKER_PODS: ("v1", "PodList"),
}


def redact_log(text: str) -> str:
    """A log redacted as the container printed it: the kubelet's time in front of each
    line is set aside first, so a credential spread over lines (a YAML env block) is
    seen whole, then put back on the same lines."""
    lines = text.split("\n")
    heads = [m.group(0) if (m := linetime.KUBELET_STAMP.match(line)) else "" for line in lines]
    if not any(heads):
        return redact_text(text)
    bodies = redact_text("\n".join(line[len(h):] for h, line in zip(heads, lines, strict=True)))
    redacted = bodies.split("\n")
    if len(redacted) != len(lines):  # could not be checked: masked whole
        return redact_text(text)
    return "\n".join(h + body for h, body in zip(heads, redacted, strict=True))


def write(snapshot: Snapshot, out: Path) -> None:
    """Write a redacted .tar.gz bundle of everything the snapshot holds."""
    manifest = {
        "schema": BUNDLE_SCHEMA,
        "tool_version": snapshot.tool_version,
        "collected_at": snapshot.collected_at,
        "context": snapshot.context,
        # The kubeconfig file it was read with, when one was named: the commands of a
        # report analysed from the bundle name it, as the scan's did.
        "kubeconfig": snapshot.kubectl.kubeconfig,
        "namespace": snapshot.namespace,
        "selector": snapshot.selector,
        "failures": [{"what": redact_text(f.what), "reason": redact_text(f.reason),
                      "kind": f.kind, "subject": list(f.subject)} for f in snapshot.failures],
        "absent_kinds": sorted(snapshot.absent_kinds),
        "redaction": REDACTION_VERSION,
        "notes": [redact_text(n) for n in snapshot.notes],
        "selected_by_log": sorted(list(k) for k in snapshot.selected_by_log),
        "passed_over": [redact_text(p) for p in snapshot.passed_over],
        "vllm_elsewhere": snapshot.vllm_elsewhere,
        "elsewhere_unknown": snapshot.elsewhere_unknown,
    }
    members: list[tuple[str, bytes]] = [
        ("manifest.json", json.dumps(manifest, indent=2).encode())]
    for kind, items in snapshot.objects.items():
        api_version, list_kind = _LIST_KINDS.get(kind, ("v1", "List"))
        doc = {"apiVersion": api_version, "kind": list_kind, "metadata": {},
               "items": [redact_object(o) for o in items]}
        members.append((f"objects/{kind}.json", json.dumps(doc, indent=1).encode()))
    for (ns, pod, container, stream), source in sorted(snapshot.logs.items()):
        suffix = ".previous.log" if stream == "previous" else ".log"
        members.append((f"logs/{ns}/{pod}/{container}{suffix}",
                        redact_log(source.text()).encode()))
    for (ns, pod), text in sorted(snapshot.metrics.items()):
        members.append((f"metrics/{ns}/{pod}.txt", redact_text(text).encode()))
    if snapshot.prometheus is not None:
        members.append(("prometheus.json", json.dumps(
            _prometheus_document(snapshot.prometheus), indent=1).encode()))
    top = PurePosixPath("vllm-triage-bundle")

    def archive(raw: BinaryIO) -> None:
        import tarfile

        with tarfile.open(fileobj=raw, mode="w:gz") as tar:
            for name, data in members:
                info = tarfile.TarInfo(str(top / name))
                info.size = len(data)
                info.mode = 0o644
                info.mtime = 0
                tar.addfile(info, io.BytesIO(data))

    # As --output-file of a report (triage/collect/outfile.py): a stream of this process
    # (-, /dev/stdout, /dev/fd/N) is written through; a device, a pipe or a link to one is
    # refused, never replaced.
    target = outfile.classify(out)
    if target.refused:
        raise OSError(errno.EPERM, f"{target.refused}; not replaced")
    if target.fd is not None:
        with outfile.open_stream(target.fd) as raw:
            archive(raw)
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    # Write next to the target and rename: a failed collect leaves no half bundle.
    import tempfile  # as tarfile: only a bundle written needs it (it brings shutil, random)

    fd, tmp_name = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
    try:
        with os.fdopen(fd, "wb") as raw:
            archive(raw)
        os.chmod(tmp_name, 0o600)  # evidence from a cluster: readable by its owner only
        os.replace(tmp_name, out)
    except BaseException:  # SIGTERM and Ctrl-C too (the CLI turns them into exceptions)
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise
