"""``--output-file`` onto a device or a link: only a regular file or a new path is
written; a device, a pipe or a link to one is refused, never replaced; stdout (``-``,
or a name for it) is written through."""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import sys
import tarfile
from pathlib import Path

from tests.conftest import FIXTURES, ROOT, replay, run_cli

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


def _run_to_files(args: list[str], tmp: Path, pass_fds: tuple[int, ...] = ()
                  ) -> tuple[int, bytes, bytes]:
    """The CLI with stdout and stderr redirected to files (as `> out 2> err` does), which
    is when /dev/stdout and /dev/stderr name regular files."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env["NO_COLOR"] = "1"  # HOME is the run's own (tests/conftest.py)
    out, err = tmp / "stdout.txt", tmp / "stderr.txt"
    with out.open("wb") as o, err.open("wb") as e:
        code = subprocess.run([sys.executable, "-m", "triage.cli", *args], stdout=o, stderr=e,
                              env=env, cwd=str(ROOT), timeout=120, pass_fds=pass_fds
                              ).returncode
    return code, out.read_bytes(), err.read_bytes()


def test_why_output_file_dev_stderr_onto_a_file_is_written_through_not_replaced(
        tmp_path: Path) -> None:
    """Before: with stderr redirected to a file, `--output-file /dev/stderr` followed the
    link to a regular file and renamed the report over the /dev/stderr link itself (the
    system's, made a regular file). Here a private link to /proc/self/fd/2 stands for it,
    so that a build that replaces it replaces only this test's link."""
    link = tmp_path / "stderr"
    link.symlink_to("/proc/self/fd/2")
    code, out, err = _run_to_files(["analyze", FIXTURE, "-o", "json", "--output-file",
                                    str(link)], tmp_path)
    assert code == 1, err
    assert link.is_symlink() and os.readlink(link) == "/proc/self/fd/2"
    report, _, said = err.decode().partition("\n}\n")
    assert json.loads(report + "\n}")["pods"]  # the report, through stderr
    assert f"report written to {link}" in said and "Traceback" not in said
    assert out.startswith(b"vllm-triage llm ")  # the table still on stdout
    # /dev/fd/N too, for any descriptor the shell opened (`3> file`), with -q
    opened = tmp_path / "opened.json"
    with opened.open("wb") as f:  # the child inherits it under the same number
        link = tmp_path / "fd"
        link.symlink_to(f"/dev/fd/{f.fileno()}")
        code, out, err = _run_to_files(["analyze", FIXTURE, "-o", "json", "-q",
                                        "--output-file", str(link)], tmp_path, (f.fileno(),))
    assert code == 1, err
    assert link.is_symlink() and json.loads(opened.read_text())["pods"]
    assert out == b"" and err == b""


def test_output_file_another_process_descriptor_is_refused(tmp_path: Path) -> None:
    link = tmp_path / "theirs"
    link.symlink_to(f"/proc/{os.getpid()}/fd/1")
    run = run_cli("analyze", FIXTURE, "-o", "json", "--output-file", str(link))
    assert run.code == 2 and "another process's file descriptor" in run.stderr, run.stderr
    assert link.is_symlink()


def _char_device(path: Path) -> bool:
    """A character device of our own (the numbers of /dev/null), where allowed (root)."""
    try:
        os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    except (PermissionError, AttributeError):
        return False
    return True


def test_why_collect_output_file_onto_a_device_or_link_is_refused_not_replaced(
        tmp_path: Path) -> None:
    """Before: collect renamed its bundle over whatever --output-file named: a link to
    /dev/null became a regular file, and a character device itself was replaced."""
    link = tmp_path / "bundle.tar.gz"
    link.symlink_to("/dev/null")
    targets = [(link, "a link to a character device (/dev/null)")]
    device = tmp_path / "device"
    if _char_device(device):
        targets.append((device, "a character device"))
    with replay("cuda-oom", tmp_path) as (server, kubeconfig):
        for target, said in targets:
            run = run_cli("collect", "--kubeconfig", str(kubeconfig), "--output-file",
                          str(target))
            assert run.code == 2 and said in run.stderr and "not replaced" in run.stderr, \
                run.stderr
        read = [r for r in server.requests if "/pods" in r]
    assert link.is_symlink() and os.readlink(link) == "/dev/null"
    if device.exists():
        assert stat.S_ISCHR(os.lstat(device).st_mode)
    assert read == []  # refused before the cluster was read
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_collect_output_file_stdout_writes_the_bundle_through(tmp_path: Path) -> None:
    link = tmp_path / "stdout"
    link.symlink_to("/proc/self/fd/1")
    with replay("cuda-oom", tmp_path) as (_server, kubeconfig):
        for target in ("-", str(link)):
            code, out, err = _run_to_files(["collect", "--kubeconfig", str(kubeconfig),
                                            "--output-file", target], tmp_path)
            assert code == 0, err
            with tarfile.open(fileobj=io.BytesIO(out), mode="r:gz") as tar:
                assert "vllm-triage-bundle/manifest.json" in tar.getnames()
            assert b"bundle written to" in err
    assert link.is_symlink()
