"""What an offline input may make the tool read into memory: bounded however it is given
(tests/cli/test_offline_bounds.py measures it on the CLI)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.fixturekit import copy_fixture
from triage.collect import InputError, bundle


def test_a_directory_is_read_into_memory_up_to_the_bound(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Objects and metrics of a directory count against the same bound as a bundle's
    unpacked size (its logs are streamed from their files, not read in)."""
    root = copy_fixture(tmp_path / "fx")
    size = sum(p.stat().st_size for p in (root / "objects").iterdir())
    monkeypatch.setattr(bundle, "MAX_TOTAL_BYTES", size + 1024)
    assert bundle.load(root).pods()
    monkeypatch.setattr(bundle, "MAX_TOTAL_BYTES", size // 2)
    with pytest.raises(InputError, match="objects and metrics to read"):
        bundle.load(root)
