"""The documentation stays in step with the code: docs/architecture.md draws every package
of triage/ and no folder that is gone, and names the import-linter layers in their order;
every link between the pages resolves to a file (and a heading) that exists; the JSON
shape docs/report.md gives is the one the tool writes."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import cmarkgfm
import pytest

from tests.conftest import ROOT, run_cli

ARCHITECTURE = (ROOT / "docs" / "architecture.md").read_text()
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md"), ROOT / "patterns" / "README.md",
                ROOT / "bench" / "README.md", ROOT / "fixtures" / "README.md"])


def section(text: str, heading: str) -> str:
    return text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def tree_folders() -> list[str]:
    """The folders the architecture page's tree block names, as 'triage/collect/live/'."""
    block = section(ARCHITECTURE, "The tree").split("```", 2)[1]
    return [m.group(1) for m in re.finditer(r"^(\S+/)\s", block, re.MULTILINE)]


def test_the_tree_names_every_package_of_triage() -> None:
    packages = {f"{p.parent.relative_to(ROOT).as_posix()}/"
                for p in (ROOT / "triage").rglob("__init__.py") if "__pycache__" not in p.parts}
    assert packages - set(tree_folders()) == set()


def tree_modules() -> dict[str, set[str]]:
    """Each folder of the tree block, with the module files its lines name."""
    block = section(ARCHITECTURE, "The tree").split("```", 2)[1]
    named: dict[str, set[str]] = {}
    folder = ""
    for line in block.splitlines():
        head = re.match(r"^(\S+/)\s", line)
        if head:
            folder = head.group(1)
            named.setdefault(folder, set())
        if folder.startswith("triage/"):
            named[folder] |= set(re.findall(r"\b(\w+\.py)\b", line))
    return named


def test_the_tree_names_every_module_of_each_package_and_only_those() -> None:
    for folder, named in tree_modules().items():
        if not folder.startswith("triage/"):
            continue
        modules = {p.name for p in (ROOT / folder).glob("*.py")} - {"__init__.py"}
        if folder == "triage/":
            modules = {p.name for p in (ROOT / "triage").glob("*.py")}
        assert named - {"__init__.py"} <= modules | {"__init__.py"}, (folder, named - modules)
        assert modules - {"__init__.py"} <= named, (folder, modules - named)


def test_every_folder_the_tree_names_exists() -> None:
    folders = tree_folders()
    assert len(folders) > 20
    assert [f for f in folders if not (ROOT / f).is_dir()] == []


def contract_layers() -> list[str]:
    """The layers of pyproject's import-linter contract, top to bottom ('pipeline | lint')."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    block = re.search(r"^type = \"layers\".*?^layers = \[(.*?)^\]", pyproject,
                      re.MULTILINE | re.DOTALL)
    assert block is not None
    return re.findall(r'"([^"]+)"', block.group(1))


def test_the_layers_table_is_the_import_contract_in_its_order() -> None:
    rows = [line for line in section(ARCHITECTURE, "Layers").splitlines()
            if line.startswith("| `")]
    first_cells = [re.split(r"(?<!\\)\|", row)[1] for row in rows]  # "\|" joins a layer's packages
    drawn = [" | ".join(re.findall(r"`(\w+)`", cell)) for cell in first_cells]
    assert drawn == contract_layers()


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    text = re.sub(r"<[^>]+>", "", heading)
    return re.sub(r"[^\w\- ]", "", html.unescape(text).lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    rendered = cmarkgfm.github_flavored_markdown_to_html(page.read_text())
    return {slug(h) for h in re.findall(r"<h[1-6]>(.*?)</h[1-6]>", rendered)}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_links_between_pages_resolve(page: Path) -> None:
    rendered = cmarkgfm.github_flavored_markdown_to_html(page.read_text())
    broken = []
    for href in map(html.unescape, re.findall(r'href="([^"]+)"', rendered)):
        if re.match(r"^[a-z]+:", href):
            continue  # a web address
        path, _, anchor = href.partition("#")
        target = (page.parent / path).resolve() if path else page
        if not target.exists() or (anchor and target.suffix == ".md"
                                   and anchor not in anchors(target)):
            broken.append(href)
    assert broken == []


def keys(document: Any) -> set[str]:
    if isinstance(document, dict):
        return set(document) | {k for v in document.values() for k in keys(v)}
    if isinstance(document, list):
        return {k for v in document for k in keys(v)}
    return set()


@pytest.mark.slow  # runs the CLI
def test_the_json_shape_in_the_report_page_is_what_the_tool_writes() -> None:
    page = (ROOT / "docs" / "report.md").read_text()
    shape = section(page, "JSON: `vllm-triage/report/v1`").split("```", 2)[1]
    named = set(re.findall(r'"(\w+)"', shape))
    written: set[str] = set()
    for fixture in ("cuda-oom", "port-in-use"):  # port-in-use: a finding beside its step
        run = run_cli("analyze", str(ROOT / "fixtures" / fixture), "-o", "json")
        written |= keys(run.json())
    assert len(named) > 40
    assert named - written == set()
