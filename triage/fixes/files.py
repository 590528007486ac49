"""``--fix-dir DIR``: one reviewable patch file per workload, with the commands for it.

Each file holds the patch body (YAML, as ``kubectl patch --patch-file`` reads
it) under comments that say what it fixes and how to preview and apply it.
vllm-triage never applies anything.

A file cannot be broken out of: every string of the body is a quoted YAML scalar,
and the comments hold the tool's own words, names written as JSON strings and
commands whose every value is on one line (``triage.safety.shell.visible``), so no
name from the cluster can start a line of its own (a YAML parser also breaks lines
at U+0085, U+2028 and U+2029). Each patch has a file name of its own, unique in
the run and safe on every filesystem, and the commands printed name that file.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import regex
import yaml

from triage.fixes import commands
from triage.results import Report, WorkloadPatch
from triage.safety.filenames import safe_file_part

__all__ = ["body_yaml", "file_name", "named", "placed", "render", "write"]

SUFFIX = ".patch.yaml"


def file_name(wp: WorkloadPatch, cluster: str = "") -> str:
    """'llm.deployment.vllm-qwen.patch.yaml'; with several clusters in one run, the
    cluster's context first ('gpu-east.llm....'), so two clusters' files never collide."""
    p = wp.patch
    head = f"{safe_file_part(cluster)}." if cluster else ""
    return f"{head}{safe_file_part(p.namespace)}.{safe_file_part(p.kind.lower())}." \
           f"{safe_file_part(p.name)}{SUFFIX}"


def named(patches: Sequence[tuple[str, WorkloadPatch]]) -> list[WorkloadPatch]:
    """Each (cluster, patch) with its file name, unique among them even where a
    filesystem does not tell upper from lower case (a second one gets ``.2``)."""
    seen: set[str] = set()
    out: list[WorkloadPatch] = []
    for cluster, wp in patches:
        base = file_name(wp, cluster)
        name, n = base, 2
        while name.casefold() in seen:
            name = f"{base.removesuffix(SUFFIX)}.{n}{SUFFIX}"
            n += 1
        seen.add(name.casefold())
        out.append(dataclasses.replace(wp, file=name))
    return out


def placed(report: Report, directory: Path) -> Report:
    """The report with each patch's file in ``directory``, as --fix-dir writes it and
    as the commands printed then name it."""
    return dataclasses.replace(report, patches=tuple(
        dataclasses.replace(wp, file=os.path.join(directory, os.path.basename(wp.file)))
        for wp in report.patches))


class _Quoted(yaml.SafeDumper):
    """Every string a quoted scalar; a mapping key stays plain only when it is a field
    name (letters and digits)."""

    def represent_mapping(self, tag: str, mapping: Any, flow_style: Any = None
                          ) -> yaml.MappingNode:
        node = super().represent_mapping(tag, mapping, flow_style)
        for key, _value in node.value:
            if isinstance(key, yaml.ScalarNode) and _FIELD.fullmatch(key.value) \
                    and key.tag == "tag:yaml.org,2002:str":
                key.style = None
        return node


_FIELD = regex.compile(r"[A-Za-z][A-Za-z0-9]*")
_Quoted.add_representer(str, lambda d, s: d.represent_scalar("tag:yaml.org,2002:str", s,
                                                            style="'"))


def body_yaml(body: Any, width: int = 1000) -> str:
    """The patch body as the file holds it and every writer shows it."""
    text: str = yaml.dump(body, Dumper=_Quoted, sort_keys=False, default_flow_style=False,
                          width=width, allow_unicode=False)
    return text


def render(wp: WorkloadPatch, flags: Sequence[str]) -> str:
    p = wp.patch
    head = [
        f"# vllm-triage: {_name(p.kind)}/{_name(p.name)} in namespace {_name(p.namespace)}",
        f"# fixes: {', '.join(_name(f) for f in wp.findings)}",
        f"# a {_name(p.type)} patch; vllm-triage never applies it. Review, preview, then apply:",
        f"#   {commands.preview(p, flags, wp.file)}",
        f"#   {commands.apply(p, flags, wp.file)}",
    ]
    return "\n".join(_comment_safe(line) for line in head) + "\n" + body_yaml(p.body)


_PLAIN_NAME = regex.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}")


def _name(text: str) -> str:
    """A name in a comment: as it is when it is a Kubernetes name, else a JSON string
    (every character that is not printable ASCII escaped)."""
    return text if _PLAIN_NAME.fullmatch(text) else json.dumps(text, ensure_ascii=True)


# What a YAML parser takes for a line break (YAML 1.1 and 1.2, PyYAML and Go's yaml):
# never inside a comment.
_BREAKS = regex.compile(r"[\r\n\x85\u2028\u2029]")


def _comment_safe(line: str) -> str:
    return str(_BREAKS.sub(lambda m: f"<U+{ord(m.group()):04X}>", line))


def write(report: Report, write_file: Callable[[Path, bytes], None]) -> list[Path]:
    """Write every patch of a report placed in a directory (``placed``) to its file (the
    directory is created if needed); the paths written, one per patch."""
    written: list[Path] = []
    for wp in report.patches:
        path = Path(wp.file)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_file(path, render(wp, report.kubectl).encode("utf-8"))
        written.append(path)
    return written
