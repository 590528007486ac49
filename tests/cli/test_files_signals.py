"""An interrupted run cleans up, and ``--output-file`` replaces its target atomically.

SIGTERM mid-scan leaves neither the kubernetes client's decoded client key nor
bundle extraction directories in the temp folder; a signal a finaliser swallowed
is delivered again.
"""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT, replay, run_cli
from tests.support.fixturekit import copy_fixture
from tests.support.kubeapi import TLSFiles


def test_output_file_through_the_cli(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("keep me")
    target = tmp_path / "out" / "report.json"
    target.parent.mkdir()
    target.symlink_to(elsewhere)
    run = run_cli("analyze", str(ROOT / "fixtures" / "cuda-oom"), "-o", "json",
                  "--output-file", str(target))
    assert run.code == 1, run.stderr
    assert elsewhere.read_text() == "keep me"
    assert not target.is_symlink() and '"schema"' in target.read_text()
    assert [p.name for p in target.parent.iterdir()] == ["report.json"]


@pytest.mark.parametrize(("sig", "code", "word"), [(signal.SIGTERM, 143, "terminated"),
                                                   (signal.SIGINT, 130, "interrupted")])
def test_signal_mid_scan_removes_the_decoded_client_key(tmp_path: Path, sig: int,
                                                                 code: int, word: str) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    root = copy_fixture(tmp_path / "fx", faults={"slow": {"events": 30}})
    cert, key = TLSFiles.get().issue("triage", server=False)
    with replay(root, tmp_path) as (server, kc):
        config = yaml.safe_load(kc.read_text())
        config["users"][0]["user"].update({
            "client-certificate-data": base64.b64encode(cert).decode(),
            "client-key-data": base64.b64encode(key).decode()})
        kc.write_text(yaml.safe_dump(config))
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
        env.update({"TMPDIR": str(temp), "NO_COLOR": "1"})
        # The installed command, as users run it: under ``python -m``, CPython 3.11 ends a
        # process with SIGINT after any KeyboardInterrupt that left an exec() of a string
        # (a dataclass being built), whatever exit code the program then chose.
        command = Path(sys.executable).with_name("vllm-triage")
        proc = subprocess.Popen([str(command), "scan", "--kubeconfig",
                                 str(kc), "-o", "json"], cwd=str(ROOT), env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 30
            # Wait until the scan is under way: the key is decoded and events are asked for.
            while time.monotonic() < deadline and not (
                    list(temp.iterdir()) and any("/events" in r for r in server.requests)):
                time.sleep(0.05)
            assert list(temp.iterdir()), "the client never decoded its key"
            decoded = [p.read_bytes() for p in temp.iterdir()]
            assert key in decoded  # the private key really was written out
            start = time.monotonic()
            proc.send_signal(sig)
            _out, err = proc.communicate(timeout=20)
            elapsed = time.monotonic() - start
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == code, err
    assert "Traceback" not in err
    assert err.strip() == f"vllm-triage: error: {word}"
    assert elapsed < 5, elapsed
    assert list(temp.iterdir()) == []


@pytest.mark.parametrize(("sig", "caught"), [("SIGTERM", "Terminated"),
                                             ("SIGINT", "KeyboardInterrupt")])
def test_a_signal_a_finaliser_swallowed_is_delivered_again(sig: str, caught: str) -> None:
    # CI caught this: SIGTERM arrived while the regex compiler ran one of its
    # parse nodes' __del__; Python printed "Exception ignored" and the scan went on.
    script = f"""
import signal, sys, time
from triage.commands.common import Terminated, install_signal_handlers
install_signal_handlers()
class Finaliser:
    def __del__(self):
        signal.raise_signal(signal.{sig})  # the handler runs inside __del__
try:
    Finaliser()
    time.sleep(10)
    print("the run went on")
except {caught}:
    print("delivered")
"""
    run = subprocess.run([sys.executable, "-c", script], cwd=str(ROOT), capture_output=True,
                         text=True, timeout=30)
    assert run.stdout.strip() == "delivered", (run.stdout, run.stderr)
    assert "Exception ignored" not in run.stderr
