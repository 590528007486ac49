"""One evidence line per fact. The same evidence of several pods of one workload is said
once for the workload, in every writer; the suggestion to measure a window
(--prometheus auto) is never among the lines a table leaves out."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_cli

HEALTHY = str(Path("fixtures/well-sized-healthy").resolve())


def _rows(table: str, step: int) -> list[str]:
    """The lines of one checklist row of the narrow table layout."""
    lines = table.split("10-step checklist", 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{step:>2} "))
    end = next((i for i, line in enumerate(lines[start + 1:], start + 1)
                if line[:3].strip().isdigit()), len(lines))
    return lines[start:end]


def test_pods_of_one_workload_share_their_evidence_lines() -> None:
    table = run_cli("analyze", HEALTHY, env={"COLUMNS": "120"}).stdout
    markdown = run_cli("analyze", HEALTHY, "-o", "markdown").stdout
    for step in (1, 2, 4, 6):
        row = "\n".join(_rows(table, step))
        assert "2 of 2 pods of Deployment/vllm-qwen" in row, row
        assert "vllm-qwen-6d8f7b9c5d-2kqzt" not in row and "m4x7w" not in row, row
    assert "2 of 2 pods of Deployment/vllm-qwen (vllm): not OOMKilled" in markdown
    # Different numbers stay each pod's own (the two KV caches differ).
    row3 = "\n".join(_rows(table, 3))
    assert "2 of 2 pods of Deployment/vllm-qwen: container vllm: --max-model-len=8192" in row3
    # The JSON keeps every pod's own line: grouping is the writers' view only.
    doc = run_cli("analyze", HEALTHY, "-o", "json").json()
    assert sum("not OOMKilled" in e for e in doc["checklist"][0]["evidence"]) == 2


def test_the_prometheus_suggestion_is_never_cut_from_a_step() -> None:
    table = run_cli("analyze", HEALTHY, env={"COLUMNS": "120"}).stdout
    row5 = " ".join(line.strip() for line in _rows(table, 5))
    assert "--prometheus auto (or a URL) measures a window" in row5, row5


def test_a_reraised_error_is_named_not_printed_twice() -> None:
    """cuda-oom's line 52 is line 47's exception re-raised at the end of the traceback."""
    table = run_cli("analyze", str(Path("fixtures/cuda-oom").resolve()),
                    env={"COLUMNS": "200"}).stdout
    panel = table.split("╭─", 1)[1].split("╰", 1)[0]
    assert "52> (line 47's error again)" in panel, panel
    assert panel.count("Tried to allocate 160.00 MiB") == 1, panel


def test_every_more_says_where_the_rest_is() -> None:
    import re

    pointer = re.compile(r"-o (json|markdown|html)|pod panels above|checklist evidence below|"
                         r"the evidence of step \d+, below|<details>|the rest of the evidence")
    for fixture in ("cuda-oom", "request-queueing", "busy-namespace", "well-sized-healthy"):
        path = str(Path("fixtures", fixture).resolve())
        for fmt in ("table", "markdown", "html"):
            out = run_cli("analyze", path, "-o", fmt, env={"COLUMNS": "120"}).stdout
            for line in out.splitlines():
                if re.search(r"\b\d+ more\b|\(\+\d+ ", line):
                    assert pointer.search(line), (fixture, fmt, line)
