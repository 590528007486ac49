"""A --patterns directory is someone else's input: an alias bomb, an oversized file or a
FIFO in it is refused and named, and the other files of the directory still load."""

from __future__ import annotations

import os
import resource
from pathlib import Path

from triage.rules.loader import load_patterns

# Nine levels of nine aliases: a few hundred bytes, 9**9 values once walked.
_BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n"
    for i in range(8))


def _errors_by_file(directory: Path) -> dict[str, str]:
    loaded = load_patterns([directory])
    return {Path(e.source).name: e.problem for e in loaded.errors}


def test_an_alias_bomb_in_a_patterns_directory_is_refused_in_bounded_memory(
        tmp_path: Path) -> None:
    (tmp_path / "bomb.yaml").write_text(_BOMB)
    (tmp_path / "wordings.yaml").write_text(_BOMB)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    errors = _errors_by_file(tmp_path)
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert "values once parsed" in errors["bomb.yaml"]
    assert "values once parsed" in errors["wordings.yaml"]
    assert grown_mib < 200


def test_each_unreadable_pattern_file_is_named_and_the_rest_still_load(
        tmp_path: Path) -> None:
    (tmp_path / "bomb.yaml").write_text(_BOMB)
    os.mkfifo(tmp_path / "fifo.yaml")
    with (tmp_path / "huge.yaml").open("wb") as fh:
        fh.truncate(65 * 1024 * 1024)
    shipped = len(load_patterns().patterns)
    loaded = load_patterns([tmp_path])
    errors = {Path(e.source).name: e.problem for e in loaded.errors}
    assert set(errors) == {"bomb.yaml", "fifo.yaml", "huge.yaml"}
    assert "not a regular file" in errors["fifo.yaml"]
    assert "larger than 64 MiB" in errors["huge.yaml"]
    assert str(tmp_path) not in errors["huge.yaml"]
    assert len(loaded.patterns) == shipped
