"""Offline bundles: ``collect`` then ``analyze`` says exactly what ``scan`` said.

For every fixture, ``collect`` and ``scan`` run against the same replayed
API server; the report ``analyze`` makes from the tarball (and from the
unpacked directory) must be identical to ``scan -o json``, ``generated_at``
included: it is the collection time, pinned for both runs with
SOURCE_DATE_EPOCH. Then the ways a bundle can be wrong: an unknown format
version, a corrupt archive, a member that escapes the bundle.
"""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from pathlib import Path

import pytest

from tests.conftest import fixture_names, replay, run_cli

PINNED = {"SOURCE_DATE_EPOCH": "1795834800"}  # 2026-11-28T03:00:00Z


def _members(bundle: Path) -> dict[str, bytes]:
    out = {}
    with tarfile.open(bundle) as tar:
        for m in tar.getmembers():
            fh = tar.extractfile(m)
            if fh is not None:
                out[m.name] = fh.read()
    return out


def _repack(bundle: Path, out: Path, edit: dict[str, bytes]) -> Path:
    """A copy of a bundle with some members replaced or added."""
    members = _members(bundle)
    members.update(edit)
    with tarfile.open(out, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out


@pytest.fixture(scope="module")
def cuda_oom_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("bundle")
    bundle = tmp / "bundle.tar.gz"
    with replay("cuda-oom", tmp) as (_server, kubeconfig):
        run = run_cli("collect", "--kubeconfig", str(kubeconfig), "-o", str(bundle))
    assert run.code == 0, run.stderr
    return bundle


@pytest.mark.parametrize("name", fixture_names())
def test_collect_then_analyze_equals_scan(name: str, tmp_path: Path) -> None:
    bundle = tmp_path / "out" / f"{name}.tar.gz"
    with replay(name, tmp_path) as (server, kubeconfig):
        scan = run_cli("scan", "--kubeconfig", str(kubeconfig), "-o", "json", env=PINNED)
        collect = run_cli("collect", "--kubeconfig", str(kubeconfig), "-o", str(bundle),
                          env=PINNED)
        requests = list(server.requests)
    assert collect.code == 0, collect.stderr
    assert f"bundle written to {bundle}" in collect.stderr
    assert collect.stdout == ""
    assert all(r.startswith("GET ") for r in requests)

    analyzed = run_cli("analyze", str(bundle), "-o", "json")
    assert analyzed.code == scan.code, analyzed.stderr
    assert analyzed.json() == scan.json()
    assert analyzed.stdout == scan.stdout  # byte for byte, key order included

    # The manifest says what the brief asks for, and no credential.
    members = _members(bundle)
    manifest = json.loads(members["vllm-triage-bundle/manifest.json"])
    assert manifest["schema"] == "vllm-triage/bundle/v1"
    assert manifest["context"] == "incident-replay"
    assert manifest["collected_at"] == scan.json()["generated_at"] == "2026-11-28T03:00:00Z"
    assert {"tool_version", "namespace", "failures", "absent_kinds"} <= set(manifest)
    assert [f["what"] for f in manifest["failures"]] == [
        u["what"] for u in scan.json()["unreadable"]]
    token = server.token
    for member, data in members.items():
        assert token.encode() not in data, member
        assert b"certificate-authority-data" not in data, member

    # An unpacked bundle reads the same, at its own directory or its parent.
    unpacked = tmp_path / "unpacked"
    with tarfile.open(bundle) as tar:
        tar.extractall(unpacked, filter="data")
    for where in (unpacked, unpacked / "vllm-triage-bundle"):
        run = run_cli("analyze", str(where), "-o", "json")
        assert run.code == scan.code, run.stderr
        assert run.stdout == scan.stdout


def test_analyze_keeps_collection_time(cuda_oom_bundle: Path) -> None:
    """Without a pinned clock, the report's time is still the collection's."""
    manifest = json.loads(_members(cuda_oom_bundle)["vllm-triage-bundle/manifest.json"])
    run = run_cli("analyze", str(cuda_oom_bundle), "-o", "json")
    assert run.json()["generated_at"] == manifest["collected_at"]


@pytest.mark.parametrize(("schema", "words"), [
    ("vllm-triage/bundle/v99", ["newer", "upgrade vllm-triage", "vllm-triage/bundle/v1"]),
    ("vllm-triage/bundle/v0", ["no longer read", "9.9.9"]),
    ("something-else", ["not a vllm-triage bundle manifest"]),
    (None, ["not a vllm-triage bundle manifest"]),
])
def test_other_bundle_versions_are_refused_clearly(cuda_oom_bundle: Path, tmp_path: Path,
                                                   schema: str | None,
                                                   words: list[str]) -> None:
    manifest = json.loads(_members(cuda_oom_bundle)["vllm-triage-bundle/manifest.json"])
    manifest["schema"] = schema
    manifest["tool_version"] = "9.9.9"
    bad = _repack(cuda_oom_bundle, tmp_path / "other.tar.gz",
                  {"vllm-triage-bundle/manifest.json": json.dumps(manifest).encode()})
    run = run_cli("analyze", str(bad))
    assert run.code == 2
    assert run.stdout == ""
    assert "Traceback" not in run.stderr
    assert run.stderr.startswith("vllm-triage: error: ") and len(run.stderr.splitlines()) == 1
    for word in words:
        assert word in run.stderr, run.stderr


def test_newer_tool_same_schema_is_read(cuda_oom_bundle: Path, tmp_path: Path) -> None:
    """A bundle from another tool version with the same format just works,
    even with manifest keys this version does not know."""
    manifest = json.loads(_members(cuda_oom_bundle)["vllm-triage-bundle/manifest.json"])
    manifest["tool_version"] = "7.3.0"
    manifest["added_in_a_later_version"] = {"x": 1}
    newer = _repack(cuda_oom_bundle, tmp_path / "newer.tar.gz",
                    {"vllm-triage-bundle/manifest.json": json.dumps(manifest).encode(),
                     "vllm-triage-bundle/objects/widgets.json": b'{"items": []}'})
    run = run_cli("analyze", str(newer), "-o", "json")
    same = run_cli("analyze", str(cuda_oom_bundle), "-o", "json")
    assert run.code == same.code == 1, run.stderr
    assert run.stdout == same.stdout
    assert "cuda-oom" in [f["id"] for f in run.json()["pods"][0]["findings"]]


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty", "not-gzip-json",
                                    "bad-json-member"])
def test_corrupt_bundle_is_a_clear_error(cuda_oom_bundle: Path, tmp_path: Path,
                                         damage: str) -> None:
    data = cuda_oom_bundle.read_bytes()
    bad = tmp_path / "bad.tar.gz"
    if damage == "truncated":
        bad.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        bad.write_bytes(data[:20] + b"\x00garbage" * 200 + data[-100:])
    elif damage == "empty":
        bad.write_bytes(b"")
    elif damage == "not-gzip-json":
        bad.write_bytes(gzip.compress(b'{"this": "is a report, not a bundle"}'))
    else:
        _repack(cuda_oom_bundle, bad, {"vllm-triage-bundle/objects/pods.json": b"{not json"})
    run = run_cli("analyze", str(bad))
    assert run.code == 2, (run.code, run.stderr)
    assert "Traceback" not in run.stderr and run.stdout == ""
    assert run.stderr.startswith("vllm-triage: error: ")
    assert "unexpected" not in run.stderr, run.stderr
    assert str(bad) in run.stderr


@pytest.mark.parametrize("name", ["../escape.txt", "vllm-triage-bundle/../../escape.txt",
                                  "/tmp/vllm-triage-escape.txt"])
def test_member_outside_the_bundle_is_refused(cuda_oom_bundle: Path, tmp_path: Path,
                                              name: str) -> None:
    bad = _repack(cuda_oom_bundle, tmp_path / "evil.tar.gz", {name: b"pwned"})
    run = run_cli("analyze", str(bad))
    assert run.code == 2
    assert "outside the bundle" in run.stderr and "Traceback" not in run.stderr
    assert not (tmp_path / "escape.txt").exists()
    assert not Path("/tmp/vllm-triage-escape.txt").exists()


@pytest.mark.parametrize("kind", ["symlink", "hardlink", "fifo"])
def test_links_and_devices_are_refused(cuda_oom_bundle: Path, tmp_path: Path,
                                       kind: str) -> None:
    bad = tmp_path / "links.tar.gz"
    _repack(cuda_oom_bundle, bad, {})
    raw = io.BytesIO()
    with tarfile.open(bad) as src, tarfile.open(fileobj=raw, mode="w:gz") as dst:
        for m in src.getmembers():
            dst.addfile(m, src.extractfile(m))
        info = tarfile.TarInfo("vllm-triage-bundle/logs/llm/x/vllm.log")
        info.type = {"symlink": tarfile.SYMTYPE, "hardlink": tarfile.LNKTYPE,
                     "fifo": tarfile.FIFOTYPE}[kind]
        info.linkname = "/etc/passwd"
        dst.addfile(info)
    bad.write_bytes(raw.getvalue())
    run = run_cli("analyze", str(bad))
    assert run.code == 2 and "refusing" in run.stderr, run.stderr


def test_bundle_is_private_and_atomic(tmp_path: Path) -> None:
    bundle = tmp_path / "b.tar.gz"
    with replay("cuda-oom", tmp_path) as (_server, kubeconfig):
        assert run_cli("collect", "--kubeconfig", str(kubeconfig), "-o", str(bundle)).code == 0
        # a directory where the bundle should go: a clear error, nothing left behind
        blocked = tmp_path / "blocked.tar.gz"
        blocked.mkdir()
        run = run_cli("collect", "--kubeconfig", str(kubeconfig), "-o", str(blocked))
    assert bundle.stat().st_mode & 0o077 == 0
    # refused as scan's --output-file is, before the cluster is read
    assert run.code == 2 and "a directory; not replaced" in run.stderr, run.stderr
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_missing_bundle_is_a_clear_error(tmp_path: Path) -> None:
    run = run_cli("analyze", str(tmp_path / "nope.tar.gz"))
    assert run.code == 2 and "no such file" in run.stderr
    empty = tmp_path / "empty-dir"
    empty.mkdir()
    run = run_cli("analyze", str(empty))
    assert run.code == 2 and "neither manifest.json" in run.stderr
