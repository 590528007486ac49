"""A report written a pod at a time to a file is the one document ``-o json`` prints."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import FIXTURES


def test_json_to_a_file_is_written_a_pod_at_a_time_and_is_the_same(tmp_path: Path) -> None:
    from tests.conftest import run_cli

    target = tmp_path / "report.json"
    env = {"SOURCE_DATE_EPOCH": "1764000000"}
    to_stdout = run_cli("analyze", str(FIXTURES / "busy-namespace"), "-o", "json", env=env)
    to_file = run_cli("analyze", str(FIXTURES / "busy-namespace"), "-o", "json", "-q",
                      "--output-file", str(target), env=env)
    assert to_file.code == to_stdout.code and to_file.stdout == ""
    assert target.read_text() == to_stdout.stdout
    assert not [p for p in tmp_path.iterdir() if p.name != "report.json"]  # no temp file left
