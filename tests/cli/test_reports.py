"""Markdown and HTML reports: right content, safe against hostile log text.

The HTML is checked here by parsing; tests/cli/test_browser.py renders it in a
real headless Chromium.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, fixture_names, replay, run_cli
from triage.results import Report
from triage.writers import html as html_writer
from triage.writers import markdown as md_writer
from triage.writers.markdown import VERDICT_MARK

VOID = {"meta", "br", "hr", "img", "input", "link", "col", "wbr", "area", "base", "source"}


class Page(HTMLParser):
    """Collects tags, checks nesting, and keeps the visible text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.errors: list[str] = []
        self.text: list[str] = []
        self.details_open: list[bool] = []
        self.pre_text: list[str] = []
        self._in_pre = 0
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "details":
            self.details_open.append("open" in dict(attrs))
        if tag == "pre":
            self._in_pre += 1
        if tag == "style":
            self._in_style = True
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.stack.pop()

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        if tag == "pre":
            self._in_pre -= 1
        if tag == "style":
            self._in_style = False
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"unbalanced </{tag}> (open: {self.stack[-3:]})")
            return
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        if self._in_style:
            return
        self.text.append(data)
        if self._in_pre:
            self.pre_text.append(data)


def parse(page: str) -> Page:
    parser = Page()
    parser.feed(page)
    parser.close()
    return parser


@functools.cache
def _analyzed(name: str) -> str:
    run = run_cli("analyze", str(FIXTURES / name), "-o", "json")
    assert run.code in (0, 1), run.stderr
    return run.stdout


def fixture_report(name: str = "cuda-oom") -> dict[str, Any]:
    report: dict[str, Any] = json.loads(_analyzed(name))
    return report


def hostile(report: dict[str, Any]) -> dict[str, Any]:
    """The same report with log lines that try to break out of every container."""
    bad = copy.deepcopy(report)
    lines = ["<script>alert('x')</script> </pre></details><img src=x onerror=alert(1)>",
             "```", "````` five ticks | pipe | and <b>bold</b> & ampersand",
             "| a | b |", "[link](javascript:alert(1)) *stars* _under_"]
    bad["summary"] = "summary | with pipe <i>and tag</i>"
    for step in bad["checklist"]:
        if step["verdict"] in ("fail", "warn"):
            step["evidence"] = step["evidence"] + lines
        step["title"] += " | <u>x</u>"
    for pod in bad["pods"]:
        pod["state"] = "Crash|Loop<br>"
        for f in pod["findings"]:
            f["evidence"] = f["evidence"] + lines
            f["title"] += " `tick` | pipe"
    bad["warnings"] = ["warning <script>bad()</script>"]
    bad["unreadable"] = [{"what": "events <x>", "reason": "403 | Forbidden"}]
    return bad


@pytest.mark.parametrize("name", fixture_names())
def test_markdown_content(name: str) -> None:
    report = fixture_report(name)
    text = md_writer.render(Report.from_document(report), False)
    first = text.splitlines()[0]
    assert report["verdict"].upper() in first
    # one pod table row per pod, the checklist table with all 10 steps
    for pod in report["pods"]:
        row = next(line for line in text.splitlines() if pod["name"] in line
                   and line.startswith("|"))
        assert pod["state"] in row and f"| {pod['restarts']} |" in row
        if pod["findings"]:
            assert pod["findings"][0]["id"] in row
    step_rows = [line for line in text.splitlines() if re.match(r"^\| \d+ \| ", line)]
    assert len(step_rows) == 10
    for step in report["checklist"]:
        if step["verdict"] in ("fail", "warn"):  # its row says so
            assert any(f"| {step['step']} | " in r and VERDICT_MARK[step["verdict"]] in r
                       for r in step_rows), step["step"]
    # Every finding's evidence is there, once (long lines wrap visibly in their
    # block, continued with '↪'), a log line under its log's name with its number.
    unwrapped = re.sub(r"\n *↪ ", " ", text)
    for pod in report["pods"]:
        for f in pod["findings"]:
            for line in dict.fromkeys(f["evidence"]):
                m = re.match(r"^(?:previous log|log) \([^)]*\) line (\d+)[> ] ?(.*)$", line)
                if m and re.search(rf"\b{m.group(1)}> \(line \d+'s error again\)", text):
                    continue  # an error re-raised: named as the earlier line's, not repeated
                shown = " ".join((m.group(2) if m else line).split())
                # a run of numbers from one source names it once, above them
                shown = re.sub(r" \((?:one scrape of /metrics[^)]*|Prometheus, last [^)]*)\)$",
                               "", shown)
                assert " ".join(shown.split()) in " ".join(unwrapped.split()), line
    # The answer first: each card (failure, proof, fix) comes before the pod table.
    pods_at = text.index("#### Pods")
    for card in report["cards"]:
        assert text.index(f"`{card['finding']}`") < pods_at
        if card["fix"]:  # as written, or with markdown's characters escaped outside code
            said = card["fix"]["text"].splitlines()[0].split("`")[0][:30]
            assert said in text[:pods_at] or said in re.sub(r"\\([\\`*_{}\[\]()#+.!|<>-])",
                                                             r"\1", text[:pods_at]), said
    assert "#### Remediation" not in text  # the canned advice at the bottom is gone
    footer = text.strip().splitlines()[-1]
    assert report["context"] in footer and (report["namespace"] or "") in footer
    assert "UTC" in footer and report["tool_version"] in footer


def _table_cells(line: str) -> list[str]:
    return re.split(r"(?<!\\)\|", line.strip())[1:-1]


def _fences(text: str) -> list[tuple[str, list[str]]]:
    """(fence, body) pairs by CommonMark's rule: a block closes on a fence at
    least as long as the opening one."""
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        m = re.match(r"^(`{3,})", lines[i])
        if m:
            fence, body, i = m.group(1), [], i + 1
            while i < len(lines) and not re.fullmatch(rf"`{{{len(fence)},}}\s*", lines[i]):
                body.append(lines[i])
                i += 1
            blocks.append((fence, body))
        i += 1
    return blocks


def test_markdown_escapes_hostile_text() -> None:
    text = md_writer.render(Report.from_document(hostile(fixture_report())), False)
    blocks = _fences(text)
    fenced_lines = {line for _, body in blocks for line in body}
    # Table rows keep their column count whatever a cell holds.
    rows = [line for line in text.splitlines()
            if line.startswith("| ") and line not in fenced_lines]
    assert len(rows) >= 2 + 10
    for line in rows:
        assert len(_table_cells(line)) == 4, line
    # Fenced blocks survive lines of backticks: each evidence block holds the
    # hostile lines verbatim, and nothing after it is swallowed.
    step_blocks = [body for _, body in blocks if any("five ticks" in b for b in body)]
    assert step_blocks and any("```" in line for _, body in blocks for line in body)
    assert all(len(fence) >= 6 for fence, body in blocks if any("`````" in b for b in body))
    outside = "\n".join(line for line in text.splitlines()
                        if not any(line in body for _, body in blocks))
    assert "<script>" not in outside and "<img" not in outside and "<b>" not in outside
    assert "<br>" not in outside
    assert text.strip().splitlines()[-1].startswith("<sub>")


def _render_markdown(text: str) -> str:
    """CommonMark + GFM tables, raw HTML allowed: the way an issue tracker reads it."""
    from markdown_it import MarkdownIt  # a dependency of rich

    return str(MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
               .render(text))


@pytest.mark.parametrize("hostile_text", [False, True])
def test_markdown_renders_as_intended(hostile_text: bool) -> None:
    report = fixture_report()
    if hostile_text:
        report = hostile(report)
    doc = parse(_render_markdown(md_writer.render(Report.from_document(report), False)))
    assert not doc.errors, doc.errors
    tags = [t for t, _ in doc.tags]
    # Only the writer's own HTML (details/summary/sub) gets through; a log line's
    # <script> or <img> is text.
    assert not {"script", "img", "b", "i", "u", "br", "a"} & set(tags), set(tags)
    assert tags.count("table") == 2  # pods, checklist
    rows = [i for i, t in enumerate(tags) if t == "tr"]
    assert len(rows) == (1 + len(report["pods"])) + (1 + 10)
    # every row of each table has exactly its header's number of cells
    cells, current = [], -1
    for t, _ in doc.tags:
        if t == "tr":
            cells.append(0)
            current += 1
        elif t in ("td", "th"):
            cells[current] += 1
    assert cells == [4] * len(cells), cells
    # Issue 17: each finding's evidence once, in code blocks that wrap long lines visibly;
    # the rest of it, the checklist evidence and the timeline collapsed.
    pre = " ".join(re.sub(r"\n *↪ ", " ", "".join(doc.pre_text)).split())
    for pod in report["pods"]:
        for f in pod["findings"]:
            for line in f["evidence"]:
                m = re.match(r"^(?:previous log|log) \([^)]*\) line (\d+)[> ] ?(.*)$", line)
                if m and re.search(rf"\b{m.group(1)}> \(line \d+'s error again\)", pre):
                    continue  # an error re-raised: named as the earlier line's, not repeated
                assert " ".join((m.group(2) if m else line).split()) in pre, line
    assert tags.count("details") >= 1 + len([p for p in report["pods"] if p["timeline"]])
    assert "sub" in tags


@pytest.mark.parametrize("name", fixture_names())
def test_html_structure(name: str) -> None:
    report = fixture_report(name)
    page = html_writer.render(Report.from_document(report), False)
    assert page.startswith("<!DOCTYPE html>")
    doc = parse(page)
    assert not doc.errors, doc.errors
    assert doc.stack == [], doc.stack
    tags = [t for t, _ in doc.tags]
    # self-contained: no script, no external asset of any kind
    assert "script" not in tags and "link" not in tags and "iframe" not in tags
    for tag, attrs in doc.tags:
        for key in ("src", "href", "srcset", "action"):
            assert key not in attrs, (tag, attrs)
        assert not any(k.startswith("on") for k in attrs), (tag, attrs)
    assert "url(" not in page and "@import" not in page
    assert "@media print" in page
    # one <details> per checklist step, open exactly for failing/warning steps
    flagged = [s["verdict"] in ("fail", "warn") for s in report["checklist"]]
    step_details = doc.details_open[-10:]
    assert step_details == flagged
    visible = " ".join(doc.text)
    assert report["summary"] in visible
    for pod in report["pods"]:
        assert pod["name"] in visible
    for step in report["checklist"]:
        for ev in step["evidence"]:
            assert ev in "".join(doc.pre_text)
    assert "UTC" in visible and report["tool_version"] in visible


def test_html_escapes_hostile_text() -> None:
    bad = hostile(fixture_report())
    page = html_writer.render(Report.from_document(bad), False)
    doc = parse(page)
    assert not doc.errors and doc.stack == []
    tags = {t for t, _ in doc.tags}
    assert not tags & {"script", "img", "b", "i", "u", "br"}, tags
    assert "<script>" not in page
    # ...and the text is still there for the reader, verbatim
    assert "<script>alert('x')</script>" in "".join(doc.pre_text)
    assert "summary | with pipe <i>and tag</i>" in " ".join(doc.text)


def test_output_file_markdown_and_table_on_stdout(tmp_path: Path) -> None:
    out = tmp_path / "sub" / "report.md"
    with replay("cuda-oom", tmp_path) as (_server, kubeconfig):
        run = run_cli("scan", "--kubeconfig", str(kubeconfig), "-o", "markdown",
                      "--output-file", str(out))
    assert run.code == 1, run.stderr
    text = out.read_text(encoding="utf-8")
    assert text.startswith("### vLLM triage: ") and "#### Checklist" in text
    assert "10-step checklist" in run.stdout and "#### Checklist" not in run.stdout
    assert f"report written to {out}" in run.stderr


@pytest.mark.parametrize("fmt", ["json", "html", "table"])
def test_output_file_any_format(fmt: str, tmp_path: Path) -> None:
    out = tmp_path / f"report.{fmt}"
    run = run_cli("analyze", str(FIXTURES / "cuda-oom"), "-o", fmt, "--output-file", str(out))
    assert run.code == 1, run.stderr
    text = out.read_text(encoding="utf-8")
    expected = {"json": '"schema": "vllm-triage/report/v1"', "html": "<!DOCTYPE html>",
                "table": "10-step checklist"}[fmt]
    assert expected in text and "10-step checklist" in run.stdout


@pytest.mark.parametrize(("name", "verdict"), [
    ("cuda-oom", "fail"), ("request-queueing", "warn"), ("rollout-one-change", "unknown"),
    ("well-sized-healthy", "pass")])
def test_the_headline_says_pass_only_when_every_step_that_applies_passed(
        name: str, verdict: str) -> None:
    """A report with a step to review or one that could not be judged is not headed
    PASS in green: the exit code stays 0 for them, the headline does not reassure."""
    report = fixture_report(name)
    assert report["verdict"] == verdict
    steps = {s["verdict"] for s in report["checklist"]}
    assert (verdict == "pass") == (steps <= {"pass", "n/a"})
    if verdict == "unknown":
        assert "could not be judged: 5" in report["summary"]
    doc = Report.from_document(report)
    assert f'class="verdict {verdict}">{verdict.upper()}<' in html_writer.render(doc, False)
    assert md_writer.render(doc, False).splitlines()[0].startswith(
        f"### vLLM triage: {md_writer.VERDICT_MARK[verdict].upper()}")
