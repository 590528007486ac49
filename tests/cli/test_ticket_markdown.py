"""Markdown sized for a GitHub or GitLab comment, rendered by GitHub's own renderer
(cmark-gfm, the ``cmarkgfm`` package) the way a comment is: GFM extensions, raw HTML
for <details>, and a newline in a paragraph as a line break (so hard-wrapped prose
would break raggedly)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import cmarkgfm
from cmarkgfm.cmark import Options

from tests.conftest import FIXTURES, run_cli
from triage.writers.markdown import CODE_WIDTH

_LOG = re.compile(r"^(?:previous log|log) \([^)]*\) line \d+[> ] ?(.*)$")


class Html(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.stack: list[str] = []
        self.pre: list[str] = []
        self.paragraphs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.stack.append(tag)
        if tag == "pre":
            self.pre.append("")
        if tag == "p":
            self.paragraphs.append("")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "br" and "p" in self.stack:
            self.paragraphs[-1] += "<br>"

    def handle_endtag(self, tag: str) -> None:
        if tag in self.stack:
            while self.stack and self.stack.pop() != tag:
                pass

    def handle_data(self, data: str) -> None:
        if "pre" in self.stack:
            self.pre[-1] += data
        if "p" in self.stack and self.paragraphs:
            self.paragraphs[-1] += data


def github_comment(markdown: str) -> Html:
    html = cmarkgfm.github_flavored_markdown_to_html(
        markdown, options=Options.CMARK_OPT_UNSAFE | Options.CMARK_OPT_HARDBREAKS)
    doc = Html()
    doc.feed(html)
    return doc


def test_cuda_oom_markdown_as_github_draws_it() -> None:
    run = run_cli("analyze", str(FIXTURES / "cuda-oom"), "-o", "markdown")
    report = run_cli("analyze", str(FIXTURES / "cuda-oom"), "-o", "json").json()
    doc = github_comment(run.stdout)
    # Prose is one line per paragraph or item: no line break inside a sentence.
    assert "br" not in doc.tags, [p for p in doc.paragraphs if "<br>" in p]
    assert doc.tags.count("table") == 2  # pods, checklist
    # Details: the rest of the evidence, the checklist evidence, the timeline.
    assert doc.tags.count("details") >= 3
    # Code lines wrap visibly instead of scrolling sideways.
    for block in doc.pre:
        for line in block.splitlines():
            assert len(line) <= CODE_WIDTH + 8, line
    # Every evidence line of every finding is there exactly once.
    code = " ".join(re.sub(r"\n *↪ ", " ", "\n".join(doc.pre)).split())
    texts = [" ".join((m.group(1) if (m := _LOG.match(e)) else e).split())
             for p in report["pods"] for f in p["findings"] for e in f["evidence"]]
    distinct = list(dict.fromkeys(texts))
    # Line 52 re-raises line 47's CUDA OOM at the end of the traceback: named, not repeated.
    again = "(EngineCore_0 pid=270) torch.OutOfMemoryError: CUDA out of memory. Tried to"
    assert "52> (line 47's error again)" in run.stdout
    for text in distinct:
        expected = 0 if text.startswith(again) else sum(1 for other in distinct if text in other)
        assert code.count(text) == expected, (text, code.count(text))
    # The proving line is in sight, not folded away in <details>.
    first_details = run.stdout.index("<details>")
    assert run.stdout.index("47> ") < first_details


def test_beside_rows_and_remediation_render() -> None:
    run = run_cli("analyze", str(FIXTURES / "port-in-use"), "-o", "markdown")
    doc = github_comment(run.stdout)
    assert "br" not in doc.tags
    assert "port-in-use" in run.stdout.split("#### Checklist")[1].split("\n\n")[1]
