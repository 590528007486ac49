"""Offline input is bounded.

A YAML alias bomb, a small bundle of huge logs, symbolic links, /dev/zero, a FIFO, deep
nesting: files are read bounded (a log's last 4 MiB, as a live scan keeps), parsed
structures are counted with a budget, links and special files are never opened, and a
bundle is read as a stream without unpacking it to disk.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from tests.cli.test_bad_input import clean, one_line_error
from tests.conftest import FIXTURES, ROOT, Run, run_cli
from tests.support.fixturekit import CUDA_OOM_POD, copy_fixture

ALIAS_BOMB = """\
apiVersion: v1
kind: List
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
items: [{metadata: {name: x, annotations: {bomb: *i}}}]
"""
LOG = FIXTURES / "cuda-oom" / "logs" / "llm" / CUDA_OOM_POD / "vllm.previous.log"


def measured(*args: str, timeout: float = 300) -> tuple[Run, float, float]:
    """Run the CLI in a child of a fresh interpreter: (run, seconds, peak RSS in MiB)."""
    probe = ("import json, resource, subprocess, sys, time\n"
             "t = time.monotonic()\n"
             "p = subprocess.run([sys.executable, '-m', 'triage.cli', *sys.argv[1:]],"
             " capture_output=True, text=True)\n"
             "print(json.dumps({'code': p.returncode, 'out': p.stdout[-200000:], 'err': p.stderr,"
             " 'secs': time.monotonic() - t,"
             " 'rss': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env["NO_COLOR"] = "1"
    proc = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True,
                          timeout=timeout, cwd=str(ROOT), env=env)
    got = json.loads(proc.stdout)
    return Run(got["code"], got["out"], got["err"]), got["secs"], got["rss"]


def tarball(path: Path, members: dict[str, bytes], level: int = 6) -> Path:
    with tarfile.open(path, "w:gz", compresslevel=level) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def fixture_members(name: str = "cuda-oom") -> dict[str, bytes]:
    root = FIXTURES / name
    return {f"fx/{p.relative_to(root)}": p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("packed", [False, True])
def test_a_yaml_alias_bomb_is_bounded(tmp_path: Path, packed: bool) -> None:
    root = copy_fixture(tmp_path / "fx")
    (root / "objects" / "events.yaml").write_text(ALIAS_BOMB)
    target = root
    if packed:
        members = fixture_members()
        members["fx/objects/events.yaml"] = ALIAS_BOMB.encode()
        target = tarball(tmp_path / "bomb.tar.gz", members)
    run, secs, rss = measured("analyze", str(target))
    clean(run, 2)
    one_line_error(run, "events.yaml", "values once parsed")
    assert secs < 20 and rss < 300, (secs, rss)
    assert "/tmp/tmp" not in run.stderr  # point 11: no temp directory named


def test_big_logs_in_a_small_bundle(tmp_path: Path) -> None:
    """Logs that unpack far past their packed size keep their end only."""
    members = fixture_members()
    line = LOG.read_bytes().splitlines(keepends=True)[3]
    big = line * (40 * 1024 * 1024 // len(line)) + LOG.read_bytes()
    for i in range(6):
        members[f"fx/logs/llm/{CUDA_OOM_POD}/side{i}.log"] = big
    members[f"fx/logs/llm/{CUDA_OOM_POD}/vllm.previous.log"] = big
    bundle = tarball(tmp_path / "big.tar.gz", members, level=1)
    run, secs, rss = measured("analyze", str(bundle), "-o", "json")
    clean(run, 1)
    assert "cuda-oom" in run.stdout
    assert secs < 60 and rss < 400, (secs, rss)
    assert any("kept" in w for w in json.loads(run.stdout)["warnings"])


def test_directory_log_read_from_its_end(tmp_path: Path) -> None:
    root = copy_fixture(tmp_path / "fx")
    log = root / "logs" / "llm" / CUDA_OOM_POD / "vllm.previous.log"
    original = log.read_bytes()
    with log.open("wb") as fh:
        fh.write(b"filler line\n" * (200 * 1024 * 1024 // 12))
        fh.write(original)
    run, secs, rss = measured("analyze", str(root), "-o", "json")
    clean(run, 1)
    assert "cuda-oom" in run.stdout
    assert secs < 30 and rss < 300, (secs, rss)


def test_symbolic_links_are_not_followed(tmp_path: Path) -> None:
    secret = tmp_path / "local-secret.txt"
    secret.write_text("LOCAL-FILE-CONTENT-NOT-FOR-TICKETS CUDA out of memory\n")
    root = copy_fixture(tmp_path / "fx")
    log = root / "logs" / "llm" / CUDA_OOM_POD / "vllm.previous.log"
    log.unlink()
    log.symlink_to(secret)
    run = run_cli("analyze", str(root), "-o", "json")
    clean(run, 1)  # step 4 still fails on the args; the crash itself is not claimed
    assert "LOCAL-FILE-CONTENT" not in run.stdout + run.stderr
    report = run.json()
    hits = [u for u in report["unreadable"] if "previous log" in u["what"]]
    assert hits and "symbolic link" in hits[0]["reason"], report["unreadable"]
    assert report["checklist"][1]["verdict"] == "unknown"  # step 2: the log was not read

    objects = root / "objects" / "events.yaml"
    objects.unlink()
    objects.symlink_to(FIXTURES / "cuda-oom" / "objects" / "events.yaml")
    run = run_cli("analyze", str(root))
    clean(run, 2)
    one_line_error(run, "events.yaml", "symbolic link")


def test_fifo_and_devices_are_never_opened(tmp_path: Path) -> None:
    root = copy_fixture(tmp_path / "fx")
    log = root / "logs" / "llm" / CUDA_OOM_POD / "vllm.previous.log"
    log.unlink()
    os.mkfifo(log)
    start = time.monotonic()
    run = run_cli("analyze", str(root), "-o", "json", timeout=30)
    clean(run, 1)
    assert time.monotonic() - start < 20
    hits = [u for u in run.json()["unreadable"] if "previous log" in u["what"]]
    assert hits and "not a regular file" in hits[0]["reason"]

    fifo = tmp_path / "bundle.fifo"
    os.mkfifo(fifo)
    for target in (fifo, Path("/dev/zero")):
        run = run_cli("analyze", str(target), timeout=30)
        clean(run, 2)
        one_line_error(run, "not a regular file or directory")


def test_deep_nesting_is_a_clear_error(tmp_path: Path) -> None:
    root = copy_fixture(tmp_path / "fx")
    (root / "objects" / "events.yaml").unlink()
    (root / "objects" / "events.json").write_text("[" * 100_000 + "]" * 100_000)
    run = run_cli("analyze", str(root))
    clean(run, 2)
    one_line_error(run, "events.json", "nested too deeply")


def test_bundle_errors_name_the_member_not_a_temp_dir(tmp_path: Path) -> None:
    members = fixture_members()
    members["fx/objects/events.yaml"] = b"items: [ {unclosed\n"
    bundle = tarball(tmp_path / "broken.tar.gz", members)
    run = run_cli("analyze", str(bundle))
    clean(run, 2)
    line = one_line_error(run, str(bundle), "objects/events.yaml", "not valid YAML")
    assert "/tmp/tmp" not in line
    empty = tarball(tmp_path / "empty.tar.gz", {"x/readme.txt": b"hello"})
    run = run_cli("analyze", str(empty))
    clean(run, 2)
    line = one_line_error(run, str(empty), "neither manifest.json")
    assert "/tmp/tmp" not in line


def test_a_bundle_that_unpacks_to_a_gigabyte_is_refused_in_bounded_memory(
        tmp_path: Path) -> None:
    """A 1 MB .tar.gz whose fifteen members unpack to 63 MiB of zeros each: refused once
    past 512 MiB, whatever the ratio, and never held in memory on the way."""
    members = fixture_members()
    zeros = b"\0" * (63 * 1024 * 1024)
    for i in range(15):
        members[f"fx/extra/blob{i}.bin"] = zeros
    bundle = tarball(tmp_path / "zeros.tar.gz", members, level=9)
    assert bundle.stat().st_size < 2 * 1024 * 1024
    run, secs, rss = measured("analyze", str(bundle))
    clean(run, 2)
    one_line_error(run, str(bundle), "unpacks to more than 512 MiB")
    assert secs < 30 and rss < 200, (secs, rss)


def _collected(tmp_path: Path, drop: str) -> Path:
    """cuda-oom as `collect` writes it, without one of its members."""
    from triage.collect import bundle

    whole = tmp_path / "whole.tar.gz"
    bundle.write(bundle.load(FIXTURES / "cuda-oom"), whole)
    with tarfile.open(whole) as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers()  # type: ignore[union-attr]
                   if m.isfile() and not m.name.endswith(drop)}
    return tarball(tmp_path / f"without-{Path(drop).stem}.tar.gz", members)


def test_a_bundle_without_its_pod_list_is_unreadable_never_an_all_clear(
        tmp_path: Path) -> None:
    run = run_cli("analyze", str(_collected(tmp_path, "objects/pods.json")))
    clean(run, 2)
    one_line_error(run, "no pod list")
    # Any other list a bundle holds, taken out of it, is unknown, not empty.
    run = run_cli("analyze", str(_collected(tmp_path, "objects/events.json")), "-o", "json")
    clean(run, 1)
    doc = run.json()
    assert any(u["what"].startswith("events") and u["reason"] == "not in the bundle"
               for u in doc["unreadable"]), doc["unreadable"]
