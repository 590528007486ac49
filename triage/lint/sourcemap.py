"""Manifests as ``lint`` reads them: the objects, and where every field of them was written.

The manifest collector (``triage.lint.manifests``) parses YAML keeping each
node's mark and records, for every mapping and list it builds, the file, the
path from its document's root and the line and column of each key. A
``Location`` (an object the facts read and a path inside it) then resolves to
``file:line:column`` and a path such as ``spec.template.spec.containers[0].args``,
also through the pods ``lint`` makes from a Deployment's template, which share
the template's own dicts and lists.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import regex

from triage.results import Location
from triage.snapshot import Obj, Snapshot, meta

IGNORE_ANNOTATION = "vllm-triage.io/ignore"
# KServe's runtimes: a workload's field that one of them wrote is reported on it.
RUNTIME_KINDS = ("ServingRuntime", "ClusterServingRuntime")

PathPart = str | int


@dataclass(frozen=True)
class Mark:
    line: int  # 1-based
    column: int  # 1-based


@dataclass
class Node:
    """Where one mapping or list was written."""

    file: str
    path: tuple[PathPart, ...]  # from the document's root object
    mark: Mark
    doc: int  # the document's number in its file, from 1
    keys: dict[PathPart, Mark] = field(default_factory=dict)  # key (or index) -> its mark
    exact: bool = True  # False: marks are of the rendered stream (kustomize), not a file
    # A key lint looks up under another name than the one written (a KEDA ScaledObject's
    # minReplicaCount is the minReplicas of the HPA KEDA makes of it).
    aliases: dict[PathPart, PathPart] = field(default_factory=dict)
    # A key of an object lint merged from several written ones (KServe's runtime
    # container with the InferenceService's model): where that key was written, as
    # the node it came from and its key there.
    origins: dict[PathPart, tuple[Node, PathPart]] = field(default_factory=dict)


@dataclass(frozen=True)
class Resolved:
    """A Location in a manifest file."""

    file: str
    doc: int
    line: int
    column: int
    path: tuple[PathPart, ...]  # the field's full path in its document
    depth: int  # how many of the path's steps exist in the manifest
    exact: bool = True

    @property
    def dotted(self) -> str:
        return dotted(self.path)


_PLAIN_KEY = regex.compile(r"^[A-Za-z_$][A-Za-z0-9_$-]*$")


def dotted(path: tuple[PathPart, ...]) -> str:
    """``spec.template.spec.containers[0].resources.limits["nvidia.com/gpu"]``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _PLAIN_KEY.match(part):
            out += f".{part}" if out else part
        else:
            out += '["' + part.replace("\\", "\\\\").replace('"', '\\"') + '"]'
    return out


class SourceMap:
    """Object identity -> where it was written. Keeps every object alive it maps, so an
    id is never reused while the map is in use."""

    def __init__(self) -> None:
        self._nodes: dict[int, tuple[Any, Node]] = {}

    def add(self, obj: Any, node: Node) -> None:
        self._nodes[id(obj)] = (obj, node)

    def node(self, obj: Any) -> Node | None:
        found = self._nodes.get(id(obj))
        return found[1] if found is not None and found[0] is obj else None

    def adopt(self, obj: Any, like: Any, keys_from: tuple[Any, ...] = (),
              aliases: dict[PathPart, PathPart] | None = None) -> None:
        """``obj`` (built by lint from ``like``) resolves as ``like`` does; keys that
        came from one of ``keys_from`` take their marks from there."""
        base = self.node(like)
        if base is None:
            return
        keys = dict(base.keys)
        for other in keys_from:
            other_node = self.node(other)
            if other_node is not None and other_node.file == base.file:
                keys.update(other_node.keys)
        self.add(obj, Node(base.file, base.path, base.mark, base.doc, keys, base.exact,
                           dict(aliases or {})))

    def compose(self, obj: Any, like: Any, origins: dict[PathPart, tuple[Any, PathPart]]
                ) -> None:
        """``obj`` (merged by lint from several written objects) resolves as ``like``
        does, except that each key of ``origins`` resolves where it was written: in the
        object given for it, under the key given."""
        base = self.node(like)
        found: dict[PathPart, tuple[Node, PathPart]] = {}
        for key, (source, written) in origins.items():
            node = self.node(source)
            if node is not None and written in node.keys:
                found[key] = (node, written)
        if base is None:
            if not found:
                return
            first, _ = next(iter(found.values()))
            base = Node(first.file, first.path, first.mark, first.doc, {}, first.exact)
            keys: dict[PathPart, Mark] = {}
        else:
            keys = dict(base.keys)
        self.add(obj, Node(base.file, base.path, base.mark, base.doc, keys, base.exact,
                           {}, found))

    def resolve(self, loc: Location) -> Resolved | None:
        """The file, line and column of the deepest part of ``loc.path`` that exists, and
        the field's whole path (a missing tail says where the field belongs)."""
        cur: Any = loc.obj
        start = self.node(cur)
        best: tuple[Node, tuple[PathPart, ...], Mark] | None = \
            (start, start.path, start.mark) if start is not None else None
        depth = 0
        tail = list(loc.path)
        for i, part in enumerate(loc.path):
            parent = self.node(cur)
            written = parent.aliases.get(part, part) if parent is not None else part
            tail[i] = written
            found, child = _step(cur, part)
            if not found:
                break
            child_node = self.node(child)
            origin = parent.origins.get(written) if parent is not None else None
            if origin is not None:
                where, key = origin
                best = (where, (*where.path, key), where.keys[key])
            elif parent is not None and written in parent.keys:
                best = (parent, (*parent.path, written), parent.keys[written])
            elif child_node is not None:
                best = (child_node, child_node.path, child_node.mark)
            else:
                break
            cur = child
            depth = i + 1
        if best is None:
            return None
        node, path, mark = best
        return Resolved(node.file, node.doc, mark.line, mark.column, (*path, *tail[depth:]),
                        depth, node.exact)


def _step(cur: Any, part: PathPart) -> tuple[bool, Any]:
    if isinstance(cur, dict) and part in cur:
        return True, cur[part]
    if isinstance(cur, list) and isinstance(part, int) and 0 <= part < len(cur):
        return True, cur[part]
    return False, None


@dataclass
class ManifestObject:
    """One object read from the manifests."""

    obj: Obj
    file: str
    line: int
    column: int
    doc: int = 1
    prefix: tuple[PathPart, ...] = ()  # its path in the document (items[3] in a List)
    exact: bool = True
    # For an object of kustomize's output: the same object in the file kustomize read
    # it from (its config.kubernetes.io/origin annotation), where its lines are.
    origin: ManifestObject | None = None

    @property
    def kind(self) -> str:
        return str(self.obj.get("kind") or "")

    @property
    def label(self) -> str:
        """``Kind/namespace/name``, or ``Kind/name`` without a namespace."""
        m = meta(self.obj)
        ns, name = m.get("namespace"), m.get("name") or m.get("generateName") or "(no name)"
        return f"{self.kind}/{ns}/{name}" if ns else f"{self.kind}/{name}"

    def ignored(self) -> set[str]:
        """Finding ids the object's ``vllm-triage.io/ignore`` annotation suppresses."""
        raw = (meta(self.obj).get("annotations") or {}).get(IGNORE_ANNOTATION)
        if not isinstance(raw, str):
            return set()
        return {part for part in regex.split(r"[\s,]+", raw.strip()) if part}


@dataclass
class Workload:
    """A pod lint builds from an object's pod template, and the object it came from."""

    source: ManifestObject
    pod: Obj
    note: str = ""  # how the pod was made (LeaderWorkerSet leader, KServe runtime, ...)


@dataclass(frozen=True)
class Skipped:
    file: str
    line: int
    object: str
    reason: str


@dataclass(frozen=True)
class Problem:
    """An input that could not be read: where (a path, maybe with a line and column) and
    what went wrong. Only ``what`` may quote a manifest; a path is the user's own."""

    where: str
    what: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what}" if self.where else self.what


@dataclass(frozen=True)
class Placeholder:
    """A value of a manifest that is a template's placeholder (``{{ .Values.gpus }}``), not
    a value: where it is written and its text."""

    file: str
    doc: int
    path: tuple[PathPart, ...]  # from the document's root
    line: int
    text: str


@dataclass
class Manifests:
    """What the manifest collector read: a static snapshot, the workloads, the map."""

    snapshot: Snapshot
    sources: SourceMap
    objects: list[ManifestObject] = field(default_factory=list)
    workloads: list[Workload] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    # Inputs that could not be read (a missing file, a YAML error): reported, exit 2.
    problems: list[Problem] = field(default_factory=list)
    # Values that are a template's placeholders: nothing that rests on them is decided.
    placeholders: list[Placeholder] = field(default_factory=list)

    # Lookups built once the objects are all read (a report asks them per finding).
    _by_doc: dict[tuple[str, int], list[ManifestObject]] = field(
        default_factory=dict, repr=False, compare=False)
    _by_obj: dict[int, ManifestObject] = field(default_factory=dict, repr=False, compare=False)
    _indexed: int = field(default=-1, repr=False, compare=False)

    def _index(self) -> None:
        if self._indexed == len(self.objects):
            return
        self._by_doc, self._by_obj = {}, {}
        for o in self.objects:
            self._by_doc.setdefault((o.file, o.doc), []).append(o)
            self._by_obj[id(o.obj)] = o
        self._indexed = len(self.objects)

    def source_of(self, obj: Obj) -> ManifestObject | None:
        self._index()
        found = self._by_obj.get(id(obj))
        return found if found is not None and found.obj is obj else None

    def object_at(self, where: Resolved) -> ManifestObject | None:
        """The object a resolved field is in."""
        self._index()
        best: ManifestObject | None = None
        for o in self._by_doc.get((where.file, where.doc), ()):
            if where.path[:len(o.prefix)] == o.prefix \
                    and (best is None or len(o.prefix) > len(best.prefix)):
                best = o
        return best
