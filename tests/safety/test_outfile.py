"""Report files are replaced atomically: a symbolic link at the target is replaced, not
followed, and an interrupted write keeps the previous report whole."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from triage import cli


def test_write_replaces_a_symlink_instead_of_following_it(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("not yours to overwrite")
    target = tmp_path / "report.md"
    target.symlink_to(elsewhere)
    cli.write_atomically(target, b"# report\n")
    assert not target.is_symlink() and target.read_text() == "# report\n"
    assert elsewhere.read_text() == "not yours to overwrite"


def test_interrupted_write_keeps_the_previous_report(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    target = tmp_path / "report.json"
    target.write_text("previous report")

    def killed(*_args: object) -> None:
        raise cli.Terminated

    monkeypatch.setattr(os, "fsync", killed)
    with pytest.raises(cli.Terminated):
        cli.write_atomically(target, b"new report" * 1000)
    assert target.read_text() == "previous report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]  # no temp file left
