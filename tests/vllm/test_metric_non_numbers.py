"""A /metrics page with a duplicated counter sample is malformed, and named so."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import FIXTURES

HEALTHY = "well-sized-healthy"


def test_prometheus_duplicate_counter_sample_is_named(tmp_path: Path) -> None:
    """A counter's samples twice: the parser gives each line a family of its own, which
    read as no counter at all; now the counter is unknown, named."""
    from triage.vllm.metrics import parse_metrics

    page = next((FIXTURES / HEALTHY / "metrics").rglob("*.txt")).read_text()
    doubled = "".join(line * 2 if line.startswith("vllm:request_success_total") else line
                      for line in page.splitlines(keepends=True))
    assert "requests_finished" in parse_metrics(page).derived()
    view = parse_metrics(doubled)
    assert "requests_finished" not in view.derived()
    assert "twice in one page" in view.problems()["requests_finished"]
    assert parse_metrics(page).problems() == {}
