"""Issue 16, "--output-file onto a device or link replaces it": only a regular file or a
new path is written; a device, a pipe or a link to one is refused, never replaced; stdout
(``-``, or a name for it) is written through."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from tests.conftest import FIXTURES, run_cli

FIXTURE = str(FIXTURES / "cuda-oom")


def test_why_output_file_link_to_a_device_is_refused_not_replaced(tmp_path: Path) -> None:
    """Before: a link to /dev/null (or /dev/full itself) became a regular file, exit 0."""
    link = tmp_path / "report.json"
    link.symlink_to("/dev/null")
    run = run_cli("analyze", FIXTURE, "-o", "json", "--output-file", str(link))
    assert run.code == 2
    assert "a link to a character device (/dev/null)" in run.stderr
    assert "not replaced" in run.stderr and "Traceback" not in run.stderr
    assert link.is_symlink() and os.readlink(link) == "/dev/null"


def test_why_output_file_onto_a_named_pipe_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    run = run_cli("analyze", FIXTURE, "-o", "json", "--output-file", str(fifo))
    assert run.code == 2
    assert "a named pipe" in run.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_why_output_file_to_stdout_is_written_through(tmp_path: Path) -> None:
    """Before: /dev/stdout was replaced by a file and nothing reached stdout."""
    run = run_cli("analyze", FIXTURE, "-o", "json", "--output-file", "-")
    assert run.code == 1
    assert json.loads(run.stdout)["pods"]
    # A name for this process's stdout (what /dev/stdout is), made in the test's own
    # directory so that a build that replaces it replaces only this link.
    link = tmp_path / "stdout"
    link.symlink_to("/proc/self/fd/1")
    run = run_cli("analyze", FIXTURE, "-o", "json", "--output-file", str(link))
    assert run.code == 1, run.stderr
    assert json.loads(run.stdout)["pods"]
    assert link.is_symlink()


def test_output_file_still_replaces_a_regular_file_and_a_link_to_one(tmp_path: Path) -> None:
    target = tmp_path / "old.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    for path in (target, link):
        run = run_cli("analyze", FIXTURE, "-o", "json", "--output-file", str(path))
        assert run.code == 1, run.stderr
    assert json.loads(link.read_text())["pods"] and not link.is_symlink()
    assert json.loads(target.read_text())["pods"]
