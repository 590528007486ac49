"""``--fix-dir DIR``: one reviewable patch file per workload, with the commands for it.

Each file holds the patch body (YAML, as ``kubectl patch --patch-file`` reads
it) under comments that say what it fixes and how to preview and apply it.
vllm-triage never applies anything.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import regex
import yaml

from triage.results import Report, WorkloadPatch
from triage.safety.filenames import safe_file_part

__all__ = ["file_name", "render", "write"]


def file_name(wp: WorkloadPatch, cluster: str = "") -> str:
    """'llm.deployment.vllm-qwen.patch.yaml'; with several clusters in one run, the
    cluster's context first ('gpu-east.llm....'), so two clusters' files never collide."""
    p = wp.patch
    head = f"{safe_file_part(cluster)}." if cluster else ""
    return f"{head}{safe_file_part(p.namespace)}.{safe_file_part(p.kind.lower())}." \
           f"{safe_file_part(p.name)}.patch.yaml"


def render(wp: WorkloadPatch, path: str) -> str:
    p = wp.patch
    head = [
        f"# vllm-triage: {p.kind}/{p.name} in namespace {p.namespace}",
        f"# fixes: {', '.join(wp.findings)}",
        f"# a {p.type} patch; vllm-triage never applies it. Review, preview, then apply:",
        f"#   {p.preview(path)}",
        f"#   {p.command(path)}",
    ]
    body = yaml.safe_dump(p.body, sort_keys=False, default_flow_style=False, width=1000)
    return "\n".join(_comment_safe(line) for line in head) + "\n" + body


_NEWLINES = regex.compile(r"[\r\n]+")


def _comment_safe(line: str) -> str:
    return str(_NEWLINES.sub(" ", line))


def write(report: Report, directory: Path, write_file: Callable[[Path, bytes], None],
          cluster: str = "") -> list[Path]:
    """Write every workload's patch into ``directory`` (created if needed); ``cluster``
    names the context's files in a run over several clusters."""
    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for wp in report.patches:
        path = directory / file_name(wp, cluster)
        write_file(path, render(wp, str(path)).encode("utf-8"))
        written.append(path)
    return written
