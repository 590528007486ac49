"""One report over several clusters: a section per cluster, the worst verdict first.

Each cluster's section is that cluster's own report, rendered by the same
writer as a single-cluster scan; a cluster that could not be read is a
section saying why (its verdict ``unknown``, never a silent pass). JSON and
YAML give a ``vllm-triage/report-set/v1`` document whose ``clusters`` hold
each cluster's ``vllm-triage/report/v1`` document unchanged.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass

import yaml

from triage.results import Report, Verdict
from triage.safety.redact import redact_text
from triage.safety.sanitize import sanitize
from triage.writers import writers
from triage.writers.markdown import code, inline

SET_SCHEMA = "vllm-triage/report-set/v1"
_ORDER = (Verdict.FAIL, Verdict.WARN, Verdict.UNKNOWN, Verdict.PASS, Verdict.NA)


@dataclass(frozen=True)
class ClusterReport:
    context: str
    report: Report | None  # None: the cluster could not be read
    error: str = ""

    def __post_init__(self) -> None:
        # A context name and an error come from a kubeconfig or a server: made
        # safe for a terminal and masked like every report string.
        object.__setattr__(self, "context", redact_text(sanitize(self.context)))
        object.__setattr__(self, "error", redact_text(sanitize(self.error)))

    @property
    def verdict(self) -> Verdict:
        return self.report.verdict if self.report is not None else Verdict.UNKNOWN


def overall(sections: list[ClusterReport]) -> Verdict:
    verdicts = {s.verdict for s in sections}
    return next((v for v in _ORDER if v in verdicts), Verdict.UNKNOWN)


def document(sections: list[ClusterReport]) -> dict[str, object]:
    return {
        "schema": SET_SCHEMA,
        "verdict": overall(sections).value,
        "clusters": [{"context": s.context, "verdict": s.verdict.value,
                      "error": s.error or None,
                      "report": s.report.to_document() if s.report is not None else None}
                     for s in sections],
    }


def _headline(sections: list[ClusterReport]) -> list[str]:
    return [f"{s.context}: {s.verdict.value}"
            + (f" ({s.report.summary})" if s.report is not None else f" (not read: {s.error})")
            for s in sections]


def render(sections: list[ClusterReport], fmt: str, color: bool = False) -> str:
    if fmt == "json":
        return json.dumps(document(sections), indent=2, ensure_ascii=False) + "\n"
    if fmt == "yaml":
        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        text: str = yaml.dump(document(sections), Dumper=dumper, sort_keys=False,
                              allow_unicode=True, default_flow_style=False, width=100)
        return text
    one = writers()[fmt]
    if fmt == "html":
        return _html(sections, one)
    out: list[str] = []
    if fmt == "markdown":
        out.append(f"# vLLM triage over {len(sections)} clusters: "
                   f"{overall(sections).value}\n")
        out += [f"- {inline(line)}" for line in _headline(sections)]
        for s in sections:
            out.append(f"\n## Cluster {code(s.context)}\n")
            out.append(one(s.report, False) if s.report is not None
                       else f"Not read: {inline(s.error)}\n")
        return "\n".join(out)
    out.append(f"vllm-triage over {len(sections)} clusters: {overall(sections).value}")
    out += [f"  {line}" for line in _headline(sections)]
    for s in sections:
        out.append("")
        out.append(f"==== cluster {s.context} " + "=" * max(4, 60 - len(s.context)))
        out.append((one(s.report, color) if s.report is not None
                    else f"not read: {s.error}\n").rstrip("\n"))
    return "\n".join(out) + "\n"


def _html(sections: list[ClusterReport], one: object) -> str:
    assert callable(one)
    head, bodies = "", []
    for s in sections:
        if s.report is None:
            bodies.append(f"<p>Not read: {html.escape(s.error)}</p>")
            continue
        page = str(one(s.report, False))
        start, end = page.find("<body>"), page.rfind("</body>")
        if not head:
            head = page[page.find("<head>") + len("<head>"):page.find("</head>")]
        bodies.append(page[start + len("<body>"):end])
    esc = html.escape
    title = f"vLLM triage over {len(sections)} clusters: {overall(sections).value.upper()}"
    start, end = head.find("<title>"), head.find("</title>")
    if start >= 0 and end > start:
        head = f"{head[:start]}<title>{esc(title)}{head[end:]}"
    toc = "".join(
        f'<li><a href="#cluster-{esc(s.context)}">{esc(s.context)}</a>: '
        f'<span class="verdict {s.verdict.value}">{esc(s.verdict.value.upper())}</span></li>'
        for s in sections)
    parts = ["<!DOCTYPE html>", '<html lang="en">', "<head>", head, "</head>", "<body>",
             f"<header><h1>vLLM triage over {len(sections)} clusters "
             f'<span class="verdict {overall(sections).value}">'
             f"{esc(overall(sections).value.upper())}</span></h1><ul>{toc}</ul></header>"]
    for s, body in zip(sections, bodies, strict=True):
        parts.append(f'<section id="cluster-{esc(s.context)}"><h1>Cluster '
                     f"<code>{esc(s.context)}</code></h1>{body}</section>")
    parts += ["</body>", "</html>"]
    return "\n".join(parts) + "\n"
