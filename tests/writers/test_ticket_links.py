"""Ticket markdown with names a cluster chose: drawn as GitHub draws a comment (cmark-gfm),
no name outside code becomes a link, a mention or a reference to an issue."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import cmarkgfm
from cmarkgfm.cmark import Options

from tests.support.fixturekit import copy_fixture, rename_values
from triage import pipeline
from triage.collect import bundle
from triage.writers import markdown

# GitHub links these in a comment's text: a mention, issue references, a SHA-like word
# is not one of the names here.
_LINKED = re.compile(r"@[A-Za-z0-9]|(?<![\w&])#[0-9]|\bGH-[0-9]|[\w.-]+/[\w.-]+#[0-9]")
NAME = "gpu-[x](javascript:alert(1))-<javascript:alert(2)>-@alice-#123-org/repo#45-GH-7"


class _Text(HTMLParser):
    """The rendered text outside <code> and <pre>, and every link."""

    def __init__(self) -> None:
        super().__init__()
        self.text: list[str] = []
        self.links: list[str] = []
        self.depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("code", "pre"):
            self.depth += 1
        if tag == "a":
            self.links.append(dict(attrs).get("href") or "")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("code", "pre"):
            self.depth -= 1

    def handle_data(self, data: str) -> None:
        if not self.depth:
            self.text.append(data)


def test_names_from_the_cluster_never_become_links_mentions_or_references(
        tmp_path: Path) -> None:
    root = copy_fixture(tmp_path / "f", "gpu-hardware-error")
    # A node named so that the fix's prose ("Take node NAME out of scheduling") holds it.
    rename_values(root, {"gke-inference-a3-pool-0c4d1e2f-r7vd": NAME})
    text = markdown.render(pipeline.analyze(bundle.load(root)))
    assert NAME.split("(")[0] in text  # the name is in the ticket, outside code too
    page = _Text()
    page.feed(cmarkgfm.github_flavored_markdown_to_html(
        text, options=Options.CMARK_OPT_UNSAFE))
    assert page.links == [], page.links
    shown = "".join(page.text)
    assert "Take node gpu-[x](javascript:alert(1))" in shown  # said, as text
    assert not _LINKED.findall(shown), _LINKED.findall(shown)
