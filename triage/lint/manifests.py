"""The manifest collector: YAML and JSON files, directories, stdin and kustomize, as kubectl
reads them, into a static Snapshot for ``lint``.

kubectl's conventions: several documents per file (``---``), ``List`` objects,
a directory's ``.yaml``, ``.yml`` and ``.json`` files (its subdirectories with
``-R``), ``-`` for stdin (``helm template ... | vllm-triage lint -f -``) and
``-k DIR`` through the real ``kubectl kustomize``. Each mapping and list keeps
where it was written (``triage.lint.sourcemap.SourceMap``), so a finding names its
file, line and column.

Every workload becomes the pod its template would make, sharing the
template's own objects: Deployment, StatefulSet, Pod, LeaderWorkerSet (its
leader and worker templates), KServe InferenceService (its predictor, or the
ServingRuntime container its model runs in), Knative Service. HPAs, KEDA
ScaledObjects (as the HPA KEDA makes of them), Services, ConfigMaps (a
``--config`` file mounted from one) and PVCs go where a live scan puts what it
lists. Nothing a running pod gives (status, logs, events, metrics, its node)
is there: the snapshot says so, and rules that need those are not applicable.

Input is someone else's: the bundle's bounds apply (file size, values once
parsed, so YAML aliases cannot blow up; entries in a directory).
"""

from __future__ import annotations

import contextlib
import functools
import os
import stat
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import regex
import yaml

from triage import __version__
from triage.collect import InputError
from triage.collect.bundle import (  # the bounds offline input already has
    _MAX_DEPTH,
    _MAX_ENTRIES,
    _MAX_MEMBER_BYTES,
    _MAX_VALUES_TOTAL,
    _count_values,
)
from triage.collect.shape import Shaped, normalize
from triage.lint import kserve
from triage.lint.sourcemap import (
    ManifestObject,
    Manifests,
    Mark,
    Node,
    Placeholder,
    Problem,
    Skipped,
    SourceMap,
    Workload,
    dotted,
)
from triage.safety import parsed
from triage.snapshot import ALL_KINDS, Obj, ReadFailure, Snapshot, meta
from triage.vllm import images

STATIC_REASON = "a manifest has no running pod"
EXTENSIONS = (".yaml", ".yml", ".json")
KUSTOMIZE_TIMEOUT_S = 60.0
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# kind -> the plural a snapshot keeps it under (what a live scan lists).
_LISTED = {
    "HorizontalPodAutoscaler": "horizontalpodautoscalers",
    "Service": "services",
    "ConfigMap": "configmaps",
    "PersistentVolumeClaim": "persistentvolumeclaims",
    "InferenceService": "inferenceservices",
    "Deployment": "deployments",
    "StatefulSet": "statefulsets",
}
_KNOWN = {*_LISTED, "Pod", "LeaderWorkerSet", "ServingRuntime", "ClusterServingRuntime",
          "ScaledObject", "Service.serving.knative.dev"}
# InferenceService predictor keys that are KServe's, not the pod's.
_KSERVE_PREDICTOR_KEYS = {"minReplicas", "maxReplicas", "scaleTarget", "scaleMetric",
                          "canaryTrafficPercent", "model", "annotations", "labels", "logger",
                          "batcher", "timeout", "containerConcurrency", "deploymentStrategy",
                          "workerSpec", "autoScaling"}
_KEDA_RESOURCE_TRIGGERS = ("cpu", "memory")
# Kinds whose object is, or makes, pods: without one there is nothing to lint.
_MAKES_PODS = {"Pod", "Deployment", "StatefulSet", "LeaderWorkerSet", "InferenceService",
               "Service.serving.knative.dev"}
# The name Knative's webhook gives a Service's only container when it has none.
_KNATIVE_CONTAINER = "user-container"


@dataclass(frozen=True)
class Input:
    """One thing to read: a path, ``-`` (stdin) or a kustomize directory."""

    path: str
    kustomize: bool = False


def collect(inputs: Iterable[Input], recursive: bool = False,
            stdin: Any = None) -> Manifests:
    """Read every input; what cannot be read is a problem named in the result, and the
    rest is still linted: every readable file of a directory, whatever a file before it
    held."""
    sources = SourceMap()
    snap = Snapshot(context=None, namespace=None, collected_at="", tool_version=__version__,
                    static=STATIC_REASON)
    snap.objects = {kind: [] for kind in ALL_KINDS}
    for kind, what in (("logs", "the pod's logs"), ("events", "the events about the pod"),
                       ("metrics", "vLLM's /metrics")):
        snap.failures.append(ReadFailure(what, f"not applicable, {STATIC_REASON}", kind))
    out = Manifests(snapshot=snap, sources=sources)
    budget = [_MAX_VALUES_TOTAL]
    for item in inputs:
        first = len(out.objects)
        try:
            for label, read, exact in _texts(item, recursive, stdin):
                before = (len(out.objects), len(out.skipped))
                try:
                    _parse(label, read(), exact, out, budget)
                except InputError as exc:
                    out.problems.append(problem(label, exc))
                    continue
                if (len(out.objects), len(out.skipped)) == before and \
                        (label == STDIN_LABEL or item.kustomize):
                    # Nothing read where something had to be: an empty pipe (the command
                    # before it failed) or an empty render is never a clean lint.
                    out.problems.append(Problem(label, _NOTHING[label == STDIN_LABEL]))
        except InputError as exc:
            out.problems.append(problem(item.path, exc))
        if item.kustomize:
            _origins(item.path, out.objects[first:], out, budget)
    _build(out)
    return out


STDIN_LABEL = "<stdin>"
_NOTHING = {
    True: ("no Kubernetes object on standard input (it was empty or held only comments): "
           "did the command before the pipe fail? (helm template ... | vllm-triage lint -f -)"),
    False: "kubectl kustomize rendered no Kubernetes object",
}


class Unreadable(InputError):
    """An input that cannot be read, said as where (a path) and what went wrong."""

    def __init__(self, where: str, what: str) -> None:
        super().__init__(f"{where}: {what}")
        self.where, self.what = where, what


def problem(label: str, exc: Exception) -> Problem:
    """An input that could not be read, split into where (a path, maybe with its line and
    column) and what went wrong: a path is not a credential, the message may quote one."""
    if isinstance(exc, Unreadable):
        return Problem(exc.where, exc.what)
    text = str(exc)
    if label and text.startswith(label):
        rest = text[len(label):]
        place = regex.match(r"^(?::\d+)*(?: \(document \d+\))?", rest)
        cut = place.end() if place else 0
        if rest[cut:cut + 2] == ": ":
            return Problem(label + rest[:cut], rest[cut + 2:])
    return Problem("", text)


# --- reading ---------------------------------------------------------------------


Reader = Callable[[], str]


def _texts(item: Input, recursive: bool, stdin: Any) -> Iterable[tuple[str, Reader, bool]]:
    """(label, how to read its text, marks are of the file itself) for each file an input
    names; a file that cannot be read raises when it is read, the others still are."""
    if item.kustomize:
        refuse_remote(item.path)
        yield f"{item.path} (kubectl kustomize)", lambda: _kustomize(item.path), False
        return
    if item.path == "-":
        yield STDIN_LABEL, lambda: _stdin(stdin), True
        return
    path = Path(item.path)
    try:
        info = path.stat()
    except OSError:
        raise InputError(f"{path}: no such file or directory") from None
    if stat.S_ISDIR(info.st_mode):
        for file, unreadable in _directory(path, recursive):
            # A folder that cannot be listed is named; the rest is still read.
            yield str(file), functools.partial(_raise, unreadable) if unreadable else \
                functools.partial(_read, file), True
    elif stat.S_ISREG(info.st_mode):
        yield str(path), functools.partial(_read, path), True
    else:
        raise InputError(f"{path}: not a regular file or directory (a FIFO or a device?)")


def _stdin(stdin: Any) -> str:
    stream = stdin if stdin is not None else sys.stdin.buffer
    data = stream.read(_MAX_MEMBER_BYTES + 1)
    if isinstance(data, str):
        data = data.encode("utf-8")
    if len(data) > _MAX_MEMBER_BYTES:
        raise InputError(f"{STDIN_LABEL}: larger than {_MAX_MEMBER_BYTES // 2**20} MiB")
    return _decode(STDIN_LABEL, data)


ORIGIN_ANNOTATION = "config.kubernetes.io/origin"


def _origins(directory: str, objects: list[ManifestObject], out: Manifests,
             budget: list[int]) -> None:
    """Each object of kustomize's output in the file it came from, by the origin
    annotation kustomize writes with ``buildMetadata: [originAnnotations]`` (``path:``
    relative to the kustomization directory). Without it, or for a generated or remote
    object, the finding keeps the rendered output's place."""
    parsed: dict[str, list[ManifestObject]] = {}
    for obj in objects:
        raw = (meta(obj.obj).get("annotations") or {}).get(ORIGIN_ANNOTATION)
        try:
            origin = yaml.safe_load(raw) if isinstance(raw, str) else None
        except yaml.YAMLError:
            continue
        if not isinstance(origin, dict) or not isinstance(origin.get("path"), str) \
                or origin.get("repo"):
            continue
        file = os.path.normpath(os.path.join(directory, origin["path"]))
        if file not in parsed:
            found = Manifests(snapshot=out.snapshot, sources=out.sources)
            with contextlib.suppress(InputError):  # unreadable: the rendered place stays
                _parse(file, _read(Path(file)), True, found, budget)
            parsed[file] = found.objects
        same = [o for o in parsed[file] if o.kind == obj.kind]
        named = [o for o in same if meta(o.obj).get("name") == meta(obj.obj).get("name")]
        # kustomize may have renamed it (namePrefix): the only one of its kind then.
        pick = named or (same if len(same) == 1 else [])
        if pick:
            obj.origin = pick[0]


def _raise(exc: InputError) -> str:
    raise exc


def _directory(root: Path, recursive: bool) -> list[tuple[Path, InputError | None]]:
    """The manifest files of a directory in name order, as kubectl -f DIR [-R] takes them,
    and a problem for each folder that could not be listed. Linked directories are not
    followed (no loops); linked files are read."""
    found: list[Path] = []
    problems: list[tuple[Path, InputError | None]] = []
    stack: list[tuple[Path, int]] = [(root, 0)]
    seen = 0
    while stack:
        folder, depth = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            problems.append((folder, InputError(f"{folder}: cannot list: "
                                                f"{exc.strerror or exc}")))
            continue
        for entry in entries:
            seen += 1
            if seen > _MAX_ENTRIES:
                raise InputError(f"{root}: more than {_MAX_ENTRIES:,} entries")
            try:
                if entry.is_dir(follow_symlinks=False):
                    if recursive and depth < _MAX_DEPTH * 4:
                        stack.append((Path(entry.path), depth + 1))
                elif entry.name.endswith(EXTENSIONS) and entry.is_file():
                    found.append(Path(entry.path))
                elif entry.name.endswith(EXTENSIONS) and entry.is_symlink():
                    problems.append((Path(entry.path), InputError(
                        f"{entry.path}: cannot open: a link to nothing")))
            except OSError as exc:
                problems.append((Path(entry.path), InputError(
                    f"{entry.path}: cannot read: {exc.strerror or exc}")))
    return [*((f, None) for f in sorted(found)), *problems]


def _read(path: Path) -> str:
    try:
        data = parsed.read_bytes(path, _MAX_MEMBER_BYTES)
    except parsed.Refused as exc:
        raise InputError(str(exc)) from None
    except OSError as exc:
        raise InputError(f"{path}: cannot open: {exc.strerror or exc}") from None
    return _decode(str(path), data)


def _decode(label: str, data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{label}: not UTF-8 text (byte {exc.start}): not a manifest"
                         ) from None


# The file names kustomize reads a kustomization from, in its order.
KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
# Fields of a kustomization that name further files or directories to read.
_KUSTOMIZE_REFS = ("resources", "bases", "components", "patchesStrategicMerge", "crds",
                   "configurations", "generators", "transformers", "validators")
# kustomize fetches what is not a local path: a URL, a git or ssh address, a host path
# (github.com/org/repo//dir?ref=v1).
_REMOTE = regex.compile(r"(?i)^(?:[a-z][a-z0-9+.-]*://|git::|git@|ssh:|"
                        r"(?:[a-z0-9-]+\.)+[a-z]{2,}(?::\d+)?/)")
_MAX_KUSTOMIZATIONS = 256


def refuse_remote(directory: str) -> None:
    """Refuse a kustomization that names a remote base, component or chart, before kubectl
    runs: a linter in CI must not reach the network on a manifest's say. Local bases are
    followed, so a remote reference in one of them is found too."""
    pending: list[Path] = [Path(directory)]
    seen: set[Path] = set()
    while pending and len(seen) < _MAX_KUSTOMIZATIONS:
        folder = pending.pop()
        try:
            key = folder.resolve()
        except OSError:
            continue
        if key in seen:
            continue
        seen.add(key)
        file = next((folder / n for n in KUSTOMIZATION_FILES if (folder / n).is_file()), None)
        if file is None:
            continue
        try:
            data = yaml.load(_read(file), Loader=_LOADER)
        except (InputError, yaml.YAMLError, RecursionError):
            continue  # kubectl says what is wrong with it
        if not isinstance(data, dict):
            continue
        refs: list[tuple[str, Any]] = []
        for field_name in _KUSTOMIZE_REFS:
            items = data.get(field_name)
            refs += [(f"{field_name}[{i}]", v) for i, v in enumerate(items)] \
                if isinstance(items, list) else []
        for i, patch in enumerate(data.get("patches") or []):
            if isinstance(patch, dict):
                refs.append((f"patches[{i}].path", patch.get("path")))
        for i, chart in enumerate(data.get("helmCharts") or []):
            if isinstance(chart, dict) and chart.get("repo"):
                refs.append((f"helmCharts[{i}].repo", chart.get("repo")))
        openapi = data.get("openapi")
        if isinstance(openapi, dict):
            refs.append(("openapi.path", openapi.get("path")))
        for where, ref in refs:
            if not isinstance(ref, str):
                continue
            local = folder / ref
            if _REMOTE.match(ref.strip()) and not local.exists():
                raise Unreadable(
                    os.path.normpath(file),
                    f"{where} is a remote reference ({ref}): lint -k {directory} reads "
                    "only local files and does not fetch what a manifest names (kubectl "
                    "kustomize was not run); vendor it into the repository, or render it "
                    "yourself and pipe it in (kubectl kustomize DIR | vllm-triage lint -f -)")
            if where.split("[")[0] in ("resources", "bases", "components") and local.is_dir():
                pending.append(local)


def _kustomize(directory: str) -> str:
    """``kubectl kustomize DIR``: the real kustomize, as users run it."""
    try:
        done = subprocess.run(["kubectl", "kustomize", directory], capture_output=True,
                              timeout=KUSTOMIZE_TIMEOUT_S, check=False)
    except FileNotFoundError:
        raise InputError(f"-k {directory}: kubectl is not installed (kubectl kustomize "
                         "renders the directory)") from None
    except subprocess.TimeoutExpired:
        raise InputError(f"-k {directory}: kubectl kustomize took longer than "
                         f"{KUSTOMIZE_TIMEOUT_S:.0f}s") from None
    if done.returncode != 0:
        why = " ".join(done.stderr.decode("utf-8", "replace").split())[:400]
        raise InputError(f"-k {directory}: kubectl kustomize failed: {why}")
    if len(done.stdout) > _MAX_MEMBER_BYTES:
        raise InputError(f"-k {directory}: output larger than {_MAX_MEMBER_BYTES // 2**20} MiB")
    return _decode(f"-k {directory}", done.stdout)


# --- parsing, keeping marks ------------------------------------------------------


# A Go template action that names a value (Helm's ``{{ .Values.gpus }}``, ``{{ $name }}``,
# ``{{ include "x" . }}``): a chart's source, not what kubectl applies. A chat template's
# Jinja (``{{ messages }}``, ``{% if %}``) is a value and is left alone.
_GO_TEMPLATE = regex.compile(
    r"\{\{-?\s*(?:[.$]|(?:include|template|tpl|toYaml|toJson|default|required|printf|if|"
    r"else|end|range|with|quote|lookup|index)\b)")
# KServe fills these in a ServingRuntime's container from the InferenceService itself.
_KSERVE_PLACEHOLDER = regex.compile(
    r"\{\{-?\s*\.(?:Name|Namespace|Labels|Annotations)\b[^}]*\}\}")
_REFUSED_KEY = ("kubectl and the API server refuse the file (Go's YAML parser allows only "
                "a string, number or boolean as a key)")


class _Builder:
    """Python objects from a composed YAML document, each mapping and list recorded in
    the source map. An alias yields the same object again, as PyYAML's loader does.

    What PyYAML accepts and kubectl does not (a mapping, list or null used as a key) is
    read anyway and said in a note: the cluster would refuse the file. Template actions
    (``{{ .Values.gpus }}``, quoted or not) are recorded as placeholders: an unquoted one
    is a YAML flow mapping used as a key, read back as the text it was written as."""

    def __init__(self, loader: Any, file: str, doc: int, exact: bool, out: Manifests,
                 text: str) -> None:
        self.loader, self.file, self.exact, self.sources = loader, file, exact, out.sources
        self.out, self.text = out, text
        self.doc = doc
        self.memo: dict[int, Any] = {}
        self.placeholders: list[Placeholder] = []

    def build(self, node: yaml.Node, path: tuple[str | int, ...]) -> Any:
        known = self.memo.get(id(node))
        if known is not None:
            return known
        mark = Mark(node.start_mark.line + 1, node.start_mark.column + 1)
        if isinstance(node, yaml.MappingNode):
            action = self._template_action(node)
            if action is not None:
                self._refused(mark, path, f"an unquoted template action {action} is a "
                                          "YAML mapping used as a key")
                self.placeholders.append(Placeholder(self.file, self.doc, path, mark.line,
                                                     action))
                return action
            # Keys written here, not merged in with <<: a merged key may be overridden,
            # a written one twice is refused, as kubectl and kustomize refuse it.
            written = {id(k) for k, _ in node.value if k.tag != "tag:yaml.org,2002:merge"}
            self.loader.flatten_mapping(node)  # merge keys (<<)
            out: dict[Any, Any] = {}
            self.memo[id(node)] = out
            keys: dict[str | int, Mark] = {}
            seen: dict[Any, Mark] = {}
            for key_node, value_node in node.value:
                at = Mark(key_node.start_mark.line + 1, key_node.start_mark.column + 1)
                key = self.build(key_node, path)
                if isinstance(key, (dict, list)) or key is None:
                    what = "a mapping" if isinstance(key, dict) else \
                        "a list" if isinstance(key, list) else "null"
                    self._refused(at, path, f"{what} used as a key")
                    key = str(key)
                if id(key_node) in written:
                    if key in seen:
                        raise InputError(
                            f"{self.file}:{at.line}:{at.column}: duplicate key {key!r} "
                            f"(first at line {seen[key].line}): kubectl and kustomize "
                            "refuse a mapping with a key twice")
                    seen[key] = at
                keys[key] = at
                out[key] = self.build(value_node, (*path, key))
            self.sources.add(out, Node(self.file, path, mark, self.doc, keys, self.exact))
            return out
        if isinstance(node, yaml.SequenceNode):
            items: list[Any] = []
            self.memo[id(node)] = items
            marks: dict[str | int, Mark] = {}
            for i, item in enumerate(node.value):
                marks[i] = Mark(item.start_mark.line + 1, item.start_mark.column + 1)
                items.append(self.build(item, (*path, i)))
            self.sources.add(items, Node(self.file, path, mark, self.doc, marks, self.exact))
            return items
        value = self.loader.construct_object(node, deep=True)
        if value is not None and not isinstance(value, (str, int, float, bool)):
            value = str(node.value)  # timestamps, binary: the text as written
        if isinstance(value, str) and "{{" in value and _GO_TEMPLATE.search(value):
            self.placeholders.append(Placeholder(self.file, self.doc, path, mark.line, value))
        return value

    def _template_action(self, node: yaml.MappingNode) -> str | None:
        """``{{ .Values.gpus }}`` written unquoted: a flow mapping whose only key is a flow
        mapping with one key and no values. The text as written, else None."""
        if not node.flow_style or len(node.value) != 1:
            return None
        key, value = node.value[0]
        if not (isinstance(key, yaml.MappingNode) and key.flow_style and len(key.value) == 1
                and isinstance(value, yaml.ScalarNode) and value.value == ""):
            return None
        inner, empty = key.value[0]
        if not (isinstance(inner, yaml.ScalarNode) and isinstance(empty, yaml.ScalarNode)
                and empty.value == ""):
            return None
        start, end = node.start_mark.index, node.end_mark.index
        written = self.text[start:end] if 0 <= start < end <= len(self.text) else \
            "{{ " + str(inner.value) + " }}"
        return " ".join(written.split())

    def _refused(self, at: Mark, path: tuple[str | int, ...], what: str) -> None:
        where = dotted(path) or "the document"
        note = (f"{self.file}:{at.line}:{at.column}: {what} (in {where}): {_REFUSED_KEY}; "
                "linted as PyYAML reads it")
        if note not in self.out.snapshot.notes:
            self.out.snapshot.notes.append(note)


def _parse(label: str, text: str, exact: bool, out: Manifests, budget: list[int]) -> None:
    loader = _LOADER(text)
    doc_index = 0
    try:
        while loader.check_node():
            node = loader.get_node()
            doc_index += 1
            if node is None:
                continue
            builder = _Builder(loader, label, doc_index, exact, out, text)
            data = builder.build(node, ())
            budget[0] -= _count_values(data, f"{label} (document {doc_index})",
                                       max(budget[0], 0))
            mark = Mark(node.start_mark.line + 1, node.start_mark.column + 1)
            _add(data, label, mark, out, doc_index, (), exact, builder.placeholders)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        at = f":{where.line + 1}:{where.column + 1}" if where is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise InputError(f"{label}{at}: not valid YAML: {' '.join(str(problem).split())}"
                         ) from None
    except RecursionError:
        raise InputError(f"{label}: nested too deeply to be a manifest") from None
    finally:
        loader.dispose()


def _add(data: Any, file: str, mark: Mark, out: Manifests, doc: int,
         prefix: tuple[str | int, ...], exact: bool,
         placeholders: list[Placeholder] | None = None) -> None:
    """One document: an object, or a List of them (with the template placeholders read
    in it)."""
    if data is None:
        return
    if not isinstance(data, dict):
        out.skipped.append(Skipped(file, mark.line, "(document)",
                                   f"not a Kubernetes object (a {type(data).__name__})"))
        return
    kind = str(data.get("kind") or "")
    if kind == "List" or (kind.endswith("List") and isinstance(data.get("items"), list)):
        node = out.sources.node(data.get("items"))
        for i, item in enumerate(data.get("items") or []):
            at = node.keys.get(i, mark) if node is not None else mark
            _add(item, file, at, out, doc, (*prefix, "items", i), exact, placeholders)
        return
    if not kind or not data.get("apiVersion"):
        out.skipped.append(Skipped(file, mark.line, kind or "(document)",
                                   "no apiVersion and kind: not a Kubernetes object"))
        return
    # The shape the API server would have enforced: a field of the wrong type for its
    # name is dropped (as for bundles), the marks follow the fields that stay.
    shaped = Shaped()
    obj = normalize(data, shaped)
    _follow(obj, data, out.sources)
    if shaped.dropped:
        label = ManifestObject(obj, file, mark.line, mark.column).label
        more = ", ..." if shaped.dropped > len(shaped.paths) else ""
        out.snapshot.notes.append(f"{file}:{mark.line}: {label}: {shaped.dropped} field(s) "
                                  "of the wrong type for the Kubernetes API were ignored: "
                                  f"{', '.join(shaped.paths)}{more}")
    out.objects.append(ManifestObject(obj, file, mark.line, mark.column, doc, prefix, exact))
    runtime = kind in kserve.RUNTIME_KINDS
    out.placeholders += [p for p in placeholders or () if p.path[:len(prefix)] == prefix
                         and not (runtime and not _GO_TEMPLATE.search(
                             _KSERVE_PLACEHOLDER.sub("", p.text)))]


def _same_kind(new: Any, old: Any) -> bool:
    if isinstance(new, dict) or isinstance(old, dict):
        return isinstance(new, dict) and isinstance(old, dict)
    return not isinstance(old, list)


def _follow(new: Any, old: Any, sources: SourceMap) -> None:
    """Map a normalized copy onto the marks of what was read (list items may have
    been dropped: the ones kept keep their own marks and written index)."""
    if isinstance(new, dict) and isinstance(old, dict):
        sources.adopt(new, old)
        for key, value in new.items():
            if key in old:
                _follow(value, old[key], sources)
    elif isinstance(new, list) and isinstance(old, list):
        node = sources.node(old)
        keys: dict[str | int, Mark] = {}
        aliases: dict[str | int, str | int] = {}
        j = 0
        for i, item in enumerate(new):
            while j < len(old) and not _same_kind(item, old[j]):
                j += 1
            if j == len(old):
                break
            if node is not None and j in node.keys:
                keys[j] = node.keys[j]
            if i != j:
                aliases[i] = j
            _follow(item, old[j], sources)
            j += 1
        if node is not None:
            sources.add(new, Node(node.file, node.path, node.mark, node.doc, keys, node.exact,
                                  aliases))


# --- what a live scan would list, and the pods templates make ---------------------


def _mapping(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _kind(obj: Obj) -> str:
    kind = str(obj.get("kind") or "")
    if kind == "Service" and str(obj.get("apiVersion", "")).startswith("serving.knative.dev"):
        return "Service.serving.knative.dev"
    return kind


def _build(out: Manifests) -> None:
    snap = out.snapshot
    runtimes: list[Obj] = []
    for item in out.objects:
        kind = _kind(item.obj)
        if kind in _LISTED:
            snap.objects[_LISTED[kind]].append(item.obj)
        if kind in kserve.RUNTIME_KINDS:
            runtimes.append(item.obj)
        if kind == "ScaledObject":
            hpa = _keda_hpa(item.obj, out.sources)
            if hpa is not None:
                snap.objects["horizontalpodautoscalers"].append(hpa)
    used_runtimes: set[int] = set()
    for item in out.objects:
        kind = _kind(item.obj)
        if kind not in _KNOWN:
            out.skipped.append(Skipped(item.file, item.line, item.label,
                                       f"kind {item.kind} is not linted"))
            continue
        before = len(out.skipped)
        pods = _pods(item, runtimes, used_runtimes, out)
        for pod, note in pods:
            out.workloads.append(Workload(item, pod, note))
            snap.objects["pods"].append(pod)
        if not pods and kind in _MAKES_PODS and len(out.skipped) == before:
            where = "spec" if kind == "Pod" else (
                "spec.predictor" if kind == "InferenceService" else "pod template spec")
            out.skipped.append(Skipped(item.file, item.line, item.label,
                                       f"no {where}: there is no pod to lint"))
    for runtime in runtimes:
        if id(runtime) not in used_runtimes:
            src = out.source_of(runtime)
            if src is not None:
                out.skipped.append(Skipped(src.file, src.line, src.label,
                                           "a ServingRuntime is linted through the "
                                           "InferenceServices that use it; none here does"))


def _template_pod(item: ManifestObject, template: Any, name: str,
                  owner: tuple[str, str] | None, extra_labels: dict[str, str] | None = None,
                  sources: SourceMap | None = None) -> Obj | None:
    if not isinstance(template, dict) or not isinstance(template.get("spec"), dict):
        return None
    tmeta = _mapping(template.get("metadata"))
    labels = {**(tmeta.get("labels") or {}), **(extra_labels or {})}
    annotations = dict(tmeta.get("annotations") or {})
    pod_meta: Obj = {"name": name, "labels": labels, "annotations": annotations}
    if sources is not None:  # the template's annotations are read from the pod
        sources.adopt(annotations, tmeta.get("annotations"))
        sources.adopt(pod_meta, tmeta)
    namespace = meta(item.obj).get("namespace")
    if namespace:
        pod_meta["namespace"] = namespace
    if owner is not None:
        pod_meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner[0],
                                        "name": owner[1], "controller": True}]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": template["spec"]}
    if sources is not None:
        sources.adopt(pod, template)
    return pod


def _pods(item: ManifestObject, runtimes: list[Obj], used: set[int],
          out: Manifests) -> list[tuple[Obj, str]]:
    obj, kind = item.obj, _kind(item.obj)
    name = str(meta(obj).get("name") or "unnamed")
    raw_spec = obj.get("spec")
    spec: Obj = raw_spec if isinstance(raw_spec, dict) else {}
    if kind == "Pod":
        return [(obj, "")] if isinstance(spec, dict) and spec else []
    if kind == "Deployment":
        # Pod -> ReplicaSet -> Deployment, as the owner facts walk it.
        rs_name = f"{name}-template"
        rs: Obj = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                   "metadata": {"name": rs_name, "ownerReferences": [
                       {"apiVersion": "apps/v1", "kind": "Deployment", "name": name,
                        "controller": True}]}}
        if meta(obj).get("namespace"):
            rs["metadata"]["namespace"] = meta(obj).get("namespace")
        pod = _template_pod(item, spec.get("template"), name, ("ReplicaSet", rs_name))
        if pod is None:
            return []
        out.snapshot.objects["replicasets"].append(rs)
        return [(pod, "")]
    if kind == "StatefulSet":
        pod = _template_pod(item, spec.get("template"), f"{name}-0", ("StatefulSet", name))
        if pod is None:
            return []
        _claim_templates(pod, spec, name, out)
        return [(pod, "")]
    if kind == "Service.serving.knative.dev":
        pod = _template_pod(item, spec.get("template"), name, None,
                            {"serving.knative.dev/service": name}, out.sources)
        if pod is None:
            return []
        _knative_container_names(pod, out.sources)
        return [(pod, "")]
    if kind == "LeaderWorkerSet":
        lwt = spec.get("leaderWorkerTemplate") or {}
        size = {"leaderworkerset.sigs.k8s.io/size": str(lwt.get("size", 1))}
        pods = []
        for key, role in (("leaderTemplate", "leader"), ("workerTemplate", "worker")):
            pod = _template_pod(item, lwt.get(key), f"{name}-{role}", None, size)
            if pod is not None:
                pods.append((pod, f"{role} template"))
        return pods
    if kind == "InferenceService":
        return _predictor_pods(item, spec, runtimes, used, out)
    return []


def _knative_container_names(pod: Obj, sources: SourceMap) -> None:
    """Knative names a Service's only container user-container when it has no name (its
    defaulting webhook); the evidence and the fix name it so."""
    containers = pod["spec"].get("containers")
    if not (isinstance(containers, list) and len(containers) == 1
            and isinstance(containers[0], dict) and not containers[0].get("name")):
        return
    named = {"name": _KNATIVE_CONTAINER, **containers[0]}
    named["name"] = _KNATIVE_CONTAINER
    sources.adopt(named, containers[0])
    listed = [named]
    sources.adopt(listed, containers)
    pod_spec = dict(pod["spec"])
    sources.adopt(pod_spec, pod["spec"])
    pod_spec["containers"] = listed
    pod["spec"] = pod_spec


def _claim_templates(pod: Obj, spec: Obj, name: str, out: Manifests) -> None:
    """The volumes the StatefulSet controller gives pod 0: one PersistentVolumeClaim per
    volumeClaimTemplate, named TEMPLATE-STATEFULSET-0, in place of a pod volume of the
    template's name; the claims go where a live scan lists them."""
    templates = [t for t in spec.get("volumeClaimTemplates") or [] if isinstance(t, dict)]
    if not templates:
        return
    pod_spec = dict(pod["spec"])
    out.sources.adopt(pod_spec, pod["spec"])
    raw = pod_spec.get("volumes")
    written: list[Any] = raw if isinstance(raw, list) else []
    names = {str(_mapping(t.get("metadata")).get("name")) for t in templates}
    volumes: list[Any] = []
    origins: dict[str | int, tuple[Any, str | int]] = {}
    for i, vol in enumerate(written):
        if not (isinstance(vol, dict) and vol.get("name") in names):
            origins[len(volumes)] = (written, i)
            volumes.append(vol)
    claims = spec["volumeClaimTemplates"]
    for i, template in enumerate(claims):
        if not isinstance(template, dict):
            continue
        tname = str(_mapping(template.get("metadata")).get("name") or "")
        claim = f"{tname}-{name}-0"
        volume = {"name": tname, "persistentVolumeClaim": {"claimName": claim}}
        out.sources.adopt(volume, template)
        origins[len(volumes)] = (claims, i)
        volumes.append(volume)
        pvc_meta: Obj = {"name": claim}
        if meta(pod).get("namespace"):
            pvc_meta["namespace"] = meta(pod).get("namespace")
        out.snapshot.objects["persistentvolumeclaims"].append(
            {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": pvc_meta,
             "spec": _mapping(template.get("spec"))})
    out.sources.compose(volumes, written if written else claims, origins)
    pod_spec["volumes"] = volumes
    pod["spec"] = pod_spec


def _predictor_pods(item: ManifestObject, spec: Obj, runtimes: list[Obj],
                    used: set[int], out: Manifests) -> list[tuple[Obj, str]]:
    """The predictor's pod, as KServe makes it (``triage.lint.kserve``): its own
    containers, or the runtime's container its ``model`` is merged onto."""
    isvc = item.obj
    name = str(meta(isvc).get("name") or "unnamed")
    namespace = str(meta(isvc).get("namespace") or "")
    predictor = spec.get("predictor")
    if not isinstance(predictor, dict):
        return []
    labels = {"serving.kserve.io/inferenceservice": name}
    pod_spec: Obj = {k: v for k, v in predictor.items() if k not in _KSERVE_PREDICTOR_KEYS}
    out.sources.adopt(pod_spec, predictor)
    annotations: Obj = {}
    note = ""
    model = predictor.get("model")
    if isinstance(model, dict):
        runtime = kserve.runtime_for(model, namespace, runtimes)
        builtin = runtime is None
        if runtime is None:
            # None in the manifests: KServe's own runtime for the model's format, as KServe
            # installs it (the usual repository holds the InferenceService alone).
            runtime = kserve.builtin_runtime_for(model)
        if runtime is None:
            fmt = _mapping(model.get("modelFormat")).get("name")
            out.skipped.append(Skipped(item.file, item.line, item.label,
                                       "its predictor.model names no ServingRuntime in these "
                                       "manifests, and KServe installs no vLLM runtime for "
                                       f"format {fmt or '(none)'}: the container it runs in "
                                       "is not known"))
            return []
        used.add(id(runtime))
        rspec = _mapping(runtime.get("spec"))
        base = kserve.runtime_container(runtime)
        if base is None:
            return []
        container = kserve.merge_container(base, model, isvc, out.sources)
        own = [c for c in pod_spec.get("containers") or [] if isinstance(c, dict)]
        rlist = [c for c in rspec.get("containers") or [] if isinstance(c, dict)]
        pod_spec = kserve.merge_pod_spec(rspec, pod_spec, out.sources)
        # The merged container, the runtime's others, then the predictor's own.
        mine = {c.get("name") for c in own}
        containers = [container, *(c for c in rlist if c is not base
                                   and c.get("name") not in mine), *own]
        origins: dict[str | int, tuple[Any, str | int]] = {}
        written = rspec.get("containers")
        if isinstance(written, list):
            origins[0] = (written, written.index(base))
        out.sources.compose(containers, written, origins)
        pod_spec["containers"] = containers
        annotations.update(_mapping(rspec.get("annotations")))
        labels = {**_mapping(rspec.get("labels")), **labels}
        note = f"in {runtime.get('kind')} {meta(runtime).get('name')}"
        image = kserve.runtime_image(container, model, runtime)
        if image is not None:  # KServe's UpdateImageTag: runtimeVersion, or the -gpu build
            container["image"] = image
        if builtin:
            note = f"in KServe's built-in {runtime.get('kind')} {meta(runtime).get('name')}"
            version = images.version(str(container.get("image") or ""))
            out.snapshot.notes.append(
                f"{item.file}:{item.line}: {item.label}: its predictor.model names no "
                f"ServingRuntime in these manifests: linted against KServe's built-in "
                f"{runtime.get('kind')} {meta(runtime).get('name')} as KServe "
                f"{kserve.BUILTIN_RELEASE} installs it (its container, args and defaults; "
                f"image {container.get('image')}"
                + (f", vLLM {version[0]}" if version else "")
                + "); another KServe release's runtime may differ")
    annotations.update({k: v for k, v in _mapping(meta(isvc).get("annotations")).items()})
    annotations.update(_mapping(predictor.get("annotations")))
    pod_meta: Obj = {"name": f"{name}-predictor", "labels": labels, "annotations": annotations}
    if namespace:
        pod_meta["namespace"] = namespace
    return [({"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": pod_spec},
             note)]


def _keda_hpa(scaled: Obj, sources: SourceMap) -> Obj | None:
    """The HorizontalPodAutoscaler KEDA makes of a ScaledObject: a cpu or memory trigger
    becomes a Resource metric, any other an External one on its query or metric name;
    minReplicaCount defaults to 0 (scale to zero)."""
    raw = scaled.get("spec")
    if not isinstance(raw, dict):
        return None
    spec: Obj = raw
    target = spec.get("scaleTargetRef") or {}
    metrics: list[Obj] = []
    for trigger in spec.get("triggers") or []:
        if not isinstance(trigger, dict):
            continue
        kind = str(trigger.get("type", ""))
        md = _mapping(trigger.get("metadata"))
        metric: Obj
        if kind in _KEDA_RESOURCE_TRIGGERS:
            value = md.get("value")
            metric = {"type": "Resource", "resource": {"name": kind, "target": {
                "type": trigger.get("metricType", "Utilization"),
                "averageUtilization": value}}}
        else:
            mname = str(md.get("query") or md.get("metricName") or kind)
            metric = {"type": "External", "external": {
                "metric": {"name": mname},
                "target": {"type": "AverageValue", "averageValue": md.get("threshold")}}}
        sources.adopt(metric, trigger)
        metrics.append(metric)
    hpa_spec: Obj = {
        "scaleTargetRef": {"apiVersion": target.get("apiVersion", "apps/v1"),
                           "kind": target.get("kind", "Deployment"), "name": target.get("name")},
        "minReplicas": spec.get("minReplicaCount", 0),
        "maxReplicas": spec.get("maxReplicaCount", 100),
        "metrics": metrics,
    }
    sources.adopt(hpa_spec, spec, aliases={"minReplicas": "minReplicaCount",
                                           "maxReplicas": "maxReplicaCount",
                                           "metrics": "triggers"})
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {**meta(scaled), "name": f"keda-hpa-{meta(scaled).get('name')}"},
            "spec": hpa_spec}
