"""A rule whose regex cannot finish makes its step unknown and names the rule, end to end."""

from __future__ import annotations

from pathlib import Path

SLOW_RULE = """\
id: slow-rule
severity: warning
title: A rule whose regex backtracks without end
step: 6
summary: proves that a rule which cannot finish makes its step unknown
remediation: none
references: [issue 9]
when:
  log: {regex: 'xxxx(?=(x+x+)+y)'}
"""


def test_a_rule_that_times_out_makes_its_step_unknown_and_names_it(tmp_path: Path) -> None:
    """Issue 9: a timed-out rule is never a silent 'no match' (end to end, through the CLI)."""
    from tests.conftest import run_cli
    from tests.support.fixturekit import CUDA_OOM_POD, copy_fixture

    root = copy_fixture(tmp_path / "fx")
    prev = root / "logs" / "llm" / CUDA_OOM_POD / "vllm.previous.log"
    prev.write_text("x" * 3000 + "\n" + prev.read_text())
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "slow-rule.yaml").write_text(SLOW_RULE)
    run = run_cli("analyze", str(root), "--patterns", str(rules), "-o", "json")
    report = run.json()
    step6 = report["checklist"][5]
    assert step6["verdict"] == "unknown", step6
    assert any("could not evaluate slow-rule" in e and "timed out" in e
               for e in step6["evidence"]), step6
    # The rest of the report is unchanged: the CUDA OOM is still found.
    assert any(f["id"] == "cuda-oom" for p in report["pods"] for f in p["findings"])


def test_a_pod_without_container_statuses_has_its_logs_read_and_judged(
        tmp_path: Path) -> None:
    """The API holds no containerStatuses of a scheduled pod (its status update lost):
    its logs are still read, its CUDA OOM found (exit 1), and the report says why it
    judged without a status; the current log, not there, is no unreadable input."""
    from tests.conftest import replay, run_cli
    from tests.support.fixturekit import copy_fixture, load_list, save_list

    root = copy_fixture(tmp_path / "fx")
    pods = load_list(root, "pods")
    for pod in pods["items"]:
        pod["status"].pop("containerStatuses", None)
    save_list(root, "pods", pods)
    with replay(root, tmp_path) as (_server, kubeconfig):
        run = run_cli("scan", "--kubeconfig", str(kubeconfig), "-o", "json")
    report = run.json()
    assert run.code == 1, run.stderr
    assert any(f["id"] == "cuda-oom" for p in report["pods"] for f in p["findings"])
    assert any("the kubelet reported no container status" in w for w in report["warnings"])
    assert not report["unreadable"], report["unreadable"]
