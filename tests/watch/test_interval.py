"""``watch --interval`` takes a Go duration."""

from __future__ import annotations


def test_interval_is_a_go_duration() -> None:
    from triage.watch.run import parse_interval

    assert parse_interval("30s") == 30
    assert parse_interval("1m30s") == 90
    assert parse_interval("2m") == 120
    assert parse_interval("1.5h") == 5400
    assert parse_interval("1500ms") == 1.5
    assert parse_interval("500ms") == 0.5
    assert parse_interval("0.01s") == 0.01  # bench/watch_memory.py: back to back
    assert parse_interval(" 1h2m3s ") == 3723
    assert parse_interval("+10s") == 10
