"""The report writers are registered by format name."""

from __future__ import annotations

from triage.writers import writers


def test_writers_registered() -> None:
    assert {"table", "json", "markdown", "html"} <= set(writers())
