"""Streaming analysis changes no report: the order pods arrive in is not the order they
are reported in, and a diagnosed pod's log bytes are released."""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURES, fixture_names
from triage import pipeline
from triage.collect import bundle
from triage.logs import LogReleased


@pytest.mark.slow  # every fixture, analyzed twice
@pytest.mark.parametrize("fixture", fixture_names())
def test_the_order_pods_arrive_in_does_not_change_the_report(fixture: str) -> None:
    path = FIXTURES / fixture
    in_order = pipeline.analyze(bundle.load(path))
    snap = bundle.load(path)
    backwards = pipeline.analyze(snap, arrivals=reversed(snap.pods()))
    assert backwards.to_document() == in_order.to_document()


def test_a_diagnosed_pod_s_logs_are_released() -> None:
    snap = bundle.load(FIXTURES / "cuda-oom")
    assert snap.logs
    pipeline.analyze(snap)
    for source in snap.logs.values():
        assert source.released and source.data is None
        with pytest.raises(LogReleased):
            next(source.blocks())
