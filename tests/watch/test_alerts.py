"""The PrometheusRule's alerts (deploy/watch/prometheusrule.yaml), read: finding alerts
aggregate to bounded labels and do not flap, the watch itself is alerted on when absent
or stale, and every series a rule names is one the watch exports."""

from __future__ import annotations

import yaml

from tests.conftest import ROOT

RULE = ROOT / "deploy" / "watch" / "prometheusrule.yaml"


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
