"""Crashes in logs that are read are seen: the end of every line is read, and
carriage-return redraws are lines of their own, in live scans, bundles and directories
alike."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import replay, run_cli
from tests.logs.test_log_cost import OOM
from tests.support.fixturekit import CUDA_OOM_POD, copy_fixture
from triage.logs.lines import MAX_LINE_BYTES

BAR = b"Loading safetensors checkpoint shards:  37% Completed | 3/8 [00:15<00:25, 5.00s/it]"
LOGS = {
    # 10,000 tqdm redraws, then the crash printed where the last redraw ended.
    "redraws": b"INFO 11-28 03:06:40 [core.py:58] start\n" + (BAR + b"\r") * 10_000
    + OOM.encode() + b"\n" + b"INFO 11-28 03:06:58 [core.py:61] shutting down\n",
    # A log whose lines are separated by carriage returns only.
    "carriage-returns-only": b"\r".join([b"INFO 11-28 03:06:40 [core.py:58] line %d" % i
                                         for i in range(2_000)] + [OOM.encode()]
                                        + [b"INFO 11-28 03:06:58 [core.py:61] done"] * 5),
    # A log of carriage returns only, longer than a read block: 10 MiB of tqdm redraws,
    # the crash, more redraws (before: read as one line, cut to its 4 KB head and tail).
    "carriage-returns-only-past-a-block": (BAR + b"\r") * 120_000 + OOM.encode() + b"\r"
    + (BAR + b"\r") * 100,
    # The crash at the end of a line longer than a block (9 MiB).
    "end-of-a-huge-line": b"INFO 11-28 03:06:40 [core.py:58] start\n"
    + b"x" * (9 * 1024 * 1024) + b" " + OOM.encode() + b"\n",
}


def _with_previous_log(root: Path, data: bytes) -> Path:
    (root / "logs" / "llm" / CUDA_OOM_POD / "vllm.previous.log").write_bytes(data)
    return root


def _step2(report: dict[str, Any]) -> dict[str, Any]:
    step: dict[str, Any] = report["checklist"][1]
    return step


@pytest.mark.parametrize("name", sorted(LOGS))
def test_why_crashes_read_but_not_seen_are_seen_in_a_directory(name: str,
                                                               tmp_path: Path) -> None:
    """Before: only the first 16 KB of an over-long line was kept: step 2 said "no CUDA
    out-of-memory error"."""
    root = _with_previous_log(copy_fixture(tmp_path / "fx"), LOGS[name])
    run = run_cli("analyze", str(root), "-o", "json")
    assert run.code == 1, run.stderr
    assert _step2(run.json())["verdict"] == "fail", _step2(run.json())
    assert "cuda-oom" in {f["id"] for p in run.json()["pods"] for f in p["findings"]}


@pytest.mark.parametrize("name", ["redraws", "carriage-returns-only"])
def test_why_crashes_read_but_not_seen_are_seen_live_and_in_a_bundle(name: str,
                                                                     tmp_path: Path) -> None:
    root = _with_previous_log(copy_fixture(tmp_path / "fx"), LOGS[name])
    bundle = tmp_path / "bundle.tar.gz"
    with replay(root, tmp_path) as (_server, kc):
        live = run_cli("scan", "--kubeconfig", str(kc), "-o", "json")
        collected = run_cli("collect", "--kubeconfig", str(kc), "-o", str(bundle))
    assert collected.code == 0, collected.stderr
    offline = run_cli("analyze", str(bundle), "-o", "json")
    for run in (live, offline):
        assert run.code == 1, run.stderr
        assert _step2(run.json())["verdict"] == "fail"


def _json_record(message: str) -> bytes:
    """One record as a JSON logger writes it (python-json-logger, structlog): the whole
    traceback in one JSON string, its line breaks escaped."""
    return json.dumps({"asctime": "2026-11-28 03:06:58,114", "levelname": "ERROR",
                       "name": "vllm.engine", "message": message, "process": 1}).encode()


JSON_TRACEBACK = ("Traceback (most recent call last):\n" + "".join(
    f'  File "/usr/local/lib/python3.12/dist-packages/vllm/worker/m{i}.py", line {i}, in f\n'
    f"    x = self.model_runner.execute_model()\n" for i in range(60))
    + "RuntimeError: Worker failed with error 'CUDA error', please check the stack trace\n"
    "CUDA out of memory. Tried to allocate 160.00 MiB. GPU 0 has a total capacity of "
    "22.03 GiB of which 91.06 MiB is free.")


def test_why_a_json_lines_record_longer_than_a_line_is_read_to_its_end(tmp_path: Path) -> None:
    """Before: a JSON-lines log whose record (longer than the line limit) ends with the CUDA
    OOM was missed: the message's lines were one line of escaped text, so
    ``\\bCUDA out of memory`` met ``\\nCUDA`` and step 2 passed. The escaped line breaks
    of a JSON record are lines for matching."""
    record = _json_record(JSON_TRACEBACK)
    assert len(record) > MAX_LINE_BYTES
    data = (_json_record("Starting vLLM API server on http://0.0.0.0:8000") + b"\n"
            + record + b"\n")
    root = _with_previous_log(copy_fixture(tmp_path / "fx"), data)
    run = run_cli("analyze", str(root), "-o", "json")
    assert run.code == 1, run.stderr
    assert _step2(run.json())["verdict"] == "fail", _step2(run.json())
    assert "cuda-oom" in {f["id"] for p in run.json()["pods"] for f in p["findings"]}
