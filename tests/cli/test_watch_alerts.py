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
