"""--fix-dir files: one per patch, under a name of its own, that no name from the cluster
can break out of (tests/cli/test_fixes.py applies them with the real kubectl)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import regex
import yaml

from tests.support.fixturekit import copy_fixture, rename_values
from triage import pipeline
from triage.collect import bundle
from triage.fixes import files
from triage.results import Patch, Report, WorkloadPatch

# What a YAML parser (PyYAML, Go's yaml, YAML 1.1 and 1.2) takes for a line break.
BREAKS = ["\n", "\r", "\r\n", "\u2028", "\u2029", "\x85"]


def _report(root: Path) -> Report:
    return pipeline.analyze(bundle.load(root))


@pytest.mark.parametrize("brk", BREAKS, ids=["+".join(f"U+{ord(c):04X}" for c in b) for b in BREAKS])
def test_a_name_cannot_start_a_line_in_a_patch_file(brk: str, tmp_path: Path) -> None:
    """A Deployment, namespace and container named to add a key: the file is the patch's
    comments and its body, nothing else, for a YAML parser as for a person."""
    inject = f"{brk}metadata: {{annotations: {{pwned: 'yes'}}}}{brk}#"
    root = copy_fixture(tmp_path / "f")
    rename_values(root, {"vllm-qwen": f"vllm-qwen{inject}", "vllm": f"vllm{inject}"})
    report = _report(root)
    [wp] = report.patches
    text = files.render(wp, report.kubectl)
    assert yaml.safe_load(text) == wp.patch.body
    lines = text.split("\n")
    comments = [line for line in lines if line.startswith("#")]
    assert len(comments) == 5 and lines[:5] == comments
    assert "\n".join(lines[5:]) == files.body_yaml(wp.patch.body)
    for ch in ("\r", "\u2028", "\u2029", "\x85"):
        assert ch not in text
    # The name is there, on the comment's line, so the reader sees what it is.
    assert "vllm-qwen" in comments[0] and "pwned" in comments[0]


def test_every_string_of_a_patch_body_is_a_quoted_scalar() -> None:
    body = {"spec": {"template": {"spec": {"containers": [
        {"name": "vllm", "args": ["--max-model-len", "8192", "yes", "null", "1e3"],
         "resources": {"limits": {"nvidia.com/gpu": 2, "memory": "24Gi"}}}]}}}}
    text = files.body_yaml(body)
    assert yaml.safe_load(text) == body
    plain: list[tuple[bool, str]] = []  # (a mapping's key, the scalar) of every plain scalar
    stack: list[list[bool]] = []  # per open collection: a mapping, expecting a key
    for event in yaml.parse(text):
        if isinstance(event, yaml.ScalarEvent):
            key = bool(stack) and stack[-1][0] and stack[-1][1]
            if event.style is None:
                plain.append((key, event.value))
        if isinstance(event, (yaml.ScalarEvent, yaml.MappingStartEvent,
                              yaml.SequenceStartEvent)) and stack and stack[-1][0]:
            stack[-1][1] = not stack[-1][1]
        if isinstance(event, yaml.MappingStartEvent):
            stack.append([True, True])
        elif isinstance(event, yaml.SequenceStartEvent):
            stack.append([False, False])
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            stack.pop()
    # Plain: field names as keys, and numbers; every string value is quoted.
    assert all((key and value.isalpha()) or (not key and value.isdigit())
               for key, value in plain), plain
    assert ("nvidia.com/gpu" not in {v for _, v in plain}) and "'nvidia.com/gpu': 2" in text


def _patch(name: str, namespace: str = "llm") -> WorkloadPatch:
    return WorkloadPatch(f"Deployment/{name}", Patch("apps/v1", "Deployment", namespace, name,
                                                     "strategic", {"spec": {}}), ("x",))


_SAFE = regex.compile(r"[A-Za-z0-9_.-]+")
_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)),
             *(f"lpt{i}" for i in range(10))}


def test_each_patch_gets_a_file_name_of_its_own_safe_everywhere() -> None:
    shared = "vllm-" + "q" * 150
    names = [f"{shared}-a", f"{shared}-b", ".", "..", "Qwen", "qwen", "a/b", "a_b", "con",
             "[REDACTED]", "[REDACTED]", "x" * 253]
    named = files.named([("", _patch(n)) for n in names] + [("", _patch("v", "nul"))])
    out = [wp.file for wp in named]
    assert len({n.casefold() for n in out}) == len(out), out
    for name in out:
        assert _SAFE.fullmatch(name) and len(name.encode()) <= 255, name
        assert name.split(".")[0].lower() not in _RESERVED, name
        assert not name.startswith(".") and name.endswith(".patch.yaml"), name
    # A name already safe is kept as it is.
    assert named[4].file == "llm.deployment.Qwen.patch.yaml"
    # Several clusters: each context first, even two contexts that look alike.
    east = files.named([("gpu/east", _patch("v")), ("gpu_east", _patch("v"))])
    assert east[0].file != east[1].file


def test_the_patch_files_written_are_the_patches_reported(tmp_path: Path) -> None:
    report = _report(copy_fixture(tmp_path / "f"))
    twice = dataclasses.replace(report, patches=tuple(files.named(
        [("", report.patches[0]), ("", report.patches[0])])))
    placed = files.placed(twice, tmp_path / "fixes")
    written: dict[Path, bytes] = {}
    paths = files.write(placed, lambda p, data: written.__setitem__(p, data))
    assert len(paths) == len(set(paths)) == len(written) == 2
    assert {str(p) for p in paths} == {wp.file for wp in placed.patches}
