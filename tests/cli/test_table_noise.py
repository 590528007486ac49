"""The table says numbers in human words with units and their source once, and every
"more" says where the rest is."""

from __future__ import annotations

import re

from tests.conftest import FIXTURES, run_cli


def test_numbers_in_human_words_with_units_and_their_source_once() -> None:
    run = run_cli("analyze", str(FIXTURES / "latency-tail-high"), env={"COLUMNS": "120"})
    panel = run.stdout.split("╰")[0]
    assert not re.search(r"\b(e2e_latency|ttft|itl|queue_time)_p\d\d\b", panel), panel
    assert "e2e latency P99 45.8 s" in panel and "time to first token P50 64 ms" in panel
    assert panel.count("one scrape of /metrics, since the server started") == 1


def test_every_more_says_where_the_rest_is() -> None:
    for fixture in ("cuda-oom", "nccl-failure", "gpu-hardware-error", "latency-tail-high"):
        run = run_cli("analyze", str(FIXTURES / fixture), env={"COLUMNS": "100"})
        for line in run.stdout.splitlines():
            if re.search(r"\bmore\b", line) and ("…" in line or "(+" in line):
                assert "-o json" in line or "-o html" in line or "above" in line, line
