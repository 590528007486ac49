"""No escape sequence, control character or bidi override from a cluster, a bundle or a
server's error reaches the terminal, a report file or stderr.

Every field that comes from outside goes through ``triage.safety.sanitize`` on its way
into the report (``triage.report.build``) and on its way to stderr (the CLI's
one ``_say``), not through each writer.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.conftest import FIXTURES, replay, run_cli
from tests.safety.test_sanitize import raw_controls
from tests.support.fixturekit import copy_fixture, load_list, save_list, write_bytes

OSC52 = "\x1b]52;c;ZXZpbA==\x07"  # write "evil" to the clipboard
CLEAR = "\x1b[2J\x1b[H"  # clear the screen
TITLE = "\x1b]0;owned\x07"  # set the window title
C1_CSI = "\x9b31m"  # CSI as one C1 character
C1_OSC = "\x9d0;title\x9c"  # OSC as one C1 character
BIDI = "\u202e"  # right-to-left override
HOSTILE = OSC52 + CLEAR + TITLE + C1_CSI + C1_OSC + BIDI
FORBIDDEN = ["\x1b", "\x9b", "\x9d", "\x9c", "\x07", "\u202e", "\u2066"]




def _hostile_fixture(root: Path) -> Path:
    """kserve-target-too-high with escape sequences in every field the report shows."""
    copy_fixture(root, "kserve-target-too-high", context="prod" + HOSTILE)
    pods = load_list(root, "pods")
    container = pods["items"][0]["spec"]["containers"][0]
    container["args"] = [*container.get("args", []), "--served-model-name",
                         "qwen" + HOSTILE]
    save_list(root, "pods", pods)
    isvcs = load_list(root, "inferenceservices")
    isvcs["items"][0]["metadata"]["annotations"]["autoscaling.knative.dev/metric"] = (
        "concurrency" + HOSTILE)
    save_list(root, "inferenceservices", isvcs)
    events = load_list(root, "events")
    events["items"].append({
        "metadata": {"name": "sched.1", "namespace": "llm"}, "type": "Warning",
        "reason": "FailedScheduling", "message": "0/3 nodes are available" + HOSTILE,
        "involvedObject": {"kind": "Pod", "namespace": "llm",
                           "name": pods["items"][0]["metadata"]["name"]},
        "lastTimestamp": "2026-11-28T03:00:00Z", "count": 1})
    save_list(root, "events", events)
    metrics = next((root / "metrics").rglob("*.txt"))
    text = metrics.read_text().replace('model_name="Qwen/Qwen3-8B"',
                                       'model_name="Qwen/Qwen3-8B' + HOSTILE + '"')
    write_bytes(metrics, text)
    return root


def test_no_raw_control_from_any_cluster_field(tmp_path: Path) -> None:
    root = _hostile_fixture(tmp_path / "fx")
    outputs = {}
    with replay(root, tmp_path) as (_server, kc):
        for fmt in ("table", "json", "markdown", "html"):
            out = tmp_path / f"report.{fmt}"
            run = run_cli("scan", "--kubeconfig", str(kc), "-o", fmt, "--output-file", str(out))
            assert "Traceback" not in run.stderr
            outputs[f"scan {fmt} stdout"] = run.stdout
            outputs[f"scan {fmt} stderr"] = run.stderr
            outputs[f"scan {fmt} file"] = out.read_text()
    for fmt in ("table", "json"):
        run = run_cli("analyze", str(root), "-o", fmt)
        outputs[f"analyze {fmt}"] = run.stdout + run.stderr
    found = {where: raw_controls(text) for where, text in outputs.items() if raw_controls(text)}
    assert not found, found
    report = json.loads(outputs["scan json file"])
    # The fields did reach the report, made harmless: the bidi override is visible.
    text = json.dumps(report)
    assert "<U+202E>" in text
    offline = json.loads(run_cli("analyze", str(root), "-o", "json").stdout)
    assert offline["context"].startswith("prod<U+202E>"), offline["context"]
    offline = json.loads(outputs["analyze json"])
    assert offline["context"].startswith("prod") and "<U+202E>" in offline["context"]


def test_bundle_manifest_and_api_error_reach_stderr_clean(tmp_path: Path) -> None:
    # An error that quotes a bundle's manifest.
    root = tmp_path / "b"
    root.mkdir()
    (root / "manifest.json").write_text(json.dumps({
        "schema": "vllm-triage/bundle/v9", "tool_version": "9.9" + HOSTILE}))
    run = run_cli("analyze", str(root))
    assert run.code == 2
    assert "9.9" in run.stderr and not raw_controls(run.stderr), repr(run.stderr)
    # An API server's error text.
    fx = copy_fixture(tmp_path / "fx", faults={"forbidden": ["pods"],
                                               "message": "denied" + HOSTILE})
    with replay(fx, tmp_path) as (_server, kc):
        run = run_cli("scan", "--kubeconfig", str(kc))
    assert run.code == 3
    assert "denied" in run.stderr and not raw_controls(run.stderr), repr(run.stderr)


def test_fixture_unchanged_by_sanitising() -> None:
    """Sanity: the recorded incidents analyze exactly as before (no control text in them)."""
    meta = yaml.safe_load((FIXTURES / "cuda-oom" / "incident.yaml").read_text())
    run = run_cli("analyze", str(FIXTURES / "cuda-oom"), "-o", "json")
    assert run.code == meta["expected"]["exit_code"]
