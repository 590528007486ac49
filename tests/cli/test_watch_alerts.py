"""The PrometheusRule's alerts, checked and unit-tested by the real promtool.

``promtool check rules`` on the rule groups of deploy/watch/prometheusrule.yaml
(its ``spec``), and ``promtool test rules`` with
tests/support/promtool/watch-alerts.test.yaml: every alert fires on its condition,
resolves when it clears, does not flap through a one-cycle gap, and stays
silent on a healthy cluster.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import yaml

from tests.conftest import ROOT, need

RULE = ROOT / "deploy" / "watch" / "prometheusrule.yaml"
UNIT_TESTS = ROOT / "tests" / "support" / "promtool" / "watch-alerts.test.yaml"


def _rules(tmp_path: Path) -> Path:
    doc = yaml.safe_load(RULE.read_text())
    assert doc["kind"] == "PrometheusRule"
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump(doc["spec"], sort_keys=False))
    return rules


def test_promtool_check_rules(tmp_path: Path) -> None:
    promtool = need("promtool")
    proc = subprocess.run([promtool, "check", "rules", str(_rules(tmp_path))],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS: 6 rules found" in proc.stdout


def test_promtool_unit_tests_cover_every_alert(tmp_path: Path) -> None:
    promtool = need("promtool")
    _rules(tmp_path)
    shutil.copy(UNIT_TESTS, tmp_path / UNIT_TESTS.name)
    proc = subprocess.run([promtool, "test", "rules", UNIT_TESTS.name], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    alerts = {r["alert"] for g in yaml.safe_load(RULE.read_text())["spec"]["groups"]
              for r in g["rules"] if "alert" in r}
    tests = yaml.safe_load(UNIT_TESTS.read_text())["tests"]
    for alert in alerts:
        cases = [c for t in tests for c in t.get("alert_rule_test", [])
                 if c["alertname"] == alert]
        assert any(c["exp_alerts"] for c in cases), f"{alert}: no case where it fires"
        assert sum(not c["exp_alerts"] for c in cases) >= 2, \
            f"{alert}: needs a resolved case and a healthy case"


def test_finding_alerts_are_per_workload_and_finding_and_do_not_flap() -> None:
    groups = yaml.safe_load(RULE.read_text())["spec"]["groups"]
    findings = [r for g in groups for r in g["rules"] if r.get("alert", "").endswith("Finding")]
    assert len(findings) == 2
    for rule in findings:
        assert "by (cluster, namespace, workload, finding, severity, step)" in rule["expr"]
        assert rule["for"] and rule["keep_firing_for"]
        assert {"summary", "proof", "description", "fix", "report_url"} <= set(
            rule["annotations"])
        # Free text is never a label of the alert: it aggregates to bounded labels.
        assert set(rule["labels"]) == {"severity"}
        # Every text an annotation takes from a series is cut, and the pods and fix
        # numbers it lists are bounded.
        annotations = rule["annotations"]
        for key, label in (("summary", "title"), ("proof", "proof"), ("fix", "fix")):
            assert 'reReplaceAll "^(.{' in annotations[key] and "…" in annotations[key]
            assert f".Labels.{label}" in annotations[key]
        assert "if lt $i 10" in annotations["description"]
        assert "if lt $i 8" in annotations["fix"]


def test_the_watch_itself_is_alerted_on_when_absent_or_stale() -> None:
    rules = {r["alert"]: r for g in yaml.safe_load(RULE.read_text())["spec"]["groups"]
             for r in g["rules"] if "alert" in r}
    assert rules["VllmTriageAbsent"]["expr"].strip() == "absent(vllm_triage_watch_info)"
    stale = rules["VllmTriageStale"]["expr"]
    # In the watch's own intervals, not a fixed time.
    assert "3 * max by (cluster) (vllm_triage_interval_seconds)" in stale
    assert "time() - max by (cluster) (vllm_triage_last_complete_scan_timestamp_seconds)" in stale


def test_every_series_the_rules_name_is_one_the_watch_exports() -> None:
    """A renamed metric must not leave an alert that can never fire."""
    import re

    from prometheus_client import generate_latest

    from tests.watch.test_exposition import _report, _watch
    from triage.watch.exposition import registry

    text = yaml.safe_dump(yaml.safe_load(RULE.read_text())["spec"])
    named = set(re.findall(r"\bvllm_triage_[a-z_]+", text))
    watch = _watch("gpu-east", _report("cuda-oom"))
    # Every family is declared (# TYPE) even when it has no series this scrape.
    exported = set(re.findall(r"^(?:# TYPE )?(vllm_triage_[a-z_]+)", generate_latest(
        registry([watch])).decode(), re.MULTILINE))
    assert named and named <= exported, named - exported
