"""The queueing-last-15m fixture's /metrics file is its Prometheus history's last
instant (tests/support/prometheus_history.py), not a separate story."""

from __future__ import annotations

from tests.conftest import FIXTURES
from tests.support.prometheus_history import SCENARIOS, scrape

NAME = "queueing-last-15m"
POD = "vllm-qwen-6c9f7d8b5d-m4n8q"


def test_fixture_scrape_is_the_history_at_collection_time() -> None:
    """The fixture's /metrics file is the scenario's last instant, not a separate story."""
    recorded = (FIXTURES / NAME / "metrics" / "llm" / f"{POD}.txt").read_text()
    assert recorded == scrape(SCENARIOS[NAME])
