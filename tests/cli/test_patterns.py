"""``vllm-triage patterns`` and ``--patterns``: the shipped examples run as ``patterns
--test`` runs them, ``patterns --facts`` lists every name (and the README carries the
list), a malformed or misspelt pattern is reported while the scan goes on, and
overriding a pattern changes both the finding and the checklist step it feeds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_cli

PATTERN_DIR = ROOT / "patterns"


def test_patterns_test_command_runs_the_examples() -> None:
    run = run_cli("patterns", "--test")
    assert run.code == 0, run.stdout + run.stderr
    assert " 0 failed" in run.stdout


def test_patterns_facts_lists_every_name() -> None:
    from triage.facts import REGISTRY
    from triage.vllm.metrics import METRICS

    run = run_cli("patterns", "--facts")
    assert run.code == 0, run.stderr
    for name in [*REGISTRY, *METRICS]:
        assert f"  {name} " in run.stdout, name


def test_readme_carries_the_generated_fact_list() -> None:
    """patterns/README.md holds `vllm-triage patterns --facts --markdown` between markers."""
    run = run_cli("patterns", "--facts", "--markdown")
    readme = (PATTERN_DIR / "README.md").read_text()
    start, end = "<!-- facts:start -->\n", "<!-- facts:end -->"
    assert start in readme and end in readme
    block = readme.split(start, 1)[1].split(end, 1)[0]
    assert block == run.stdout, "regenerate with ./scripts/update-docs"


MALFORMED = """\
id: broken-example
severity: critical
title: A pattern with a bad log leaf
step: 2
remediation: nothing
when:
  any:
    - log: {regex: 'unbalanced (group', levels: [INFO]}
"""

BAD_STEP = """\
id: bad-step
severity: warning
title: A pattern with a step that does not exist
step: 11
remediation: nothing
when:
  log: {regex: 'x'}
"""

MISSPELT_FACT = """\
id: misspelt-fact
severity: warning
title: A pattern that names a fact that does not exist
step: 4
remediation: nothing
when:
  any:
    - fact: {name: gpu_memory_utilisation, gt: 0.92}
"""

MISSPELT_FIELD = """\
id: misspelt-field
severity: warning
title: A pattern that names an API field that does not exist
step: 1
remediation: nothing
when:
  container: {field: lastState.terminated.reasn, equals: OOMKilled}
"""

UNKNOWN_FINDING = """\
id: unknown-finding
severity: warning
title: A pattern that refers to a finding that does not exist
step: 4
remediation: nothing
when:
  finding: cuda-oops
"""


def test_malformed_pattern_is_reported_and_scan_goes_on(tmp_path: Path) -> None:
    (tmp_path / "broken-example.yaml").write_text(MALFORMED)
    (tmp_path / "bad-step.yaml").write_text(BAD_STEP)
    run = run_cli("analyze", "fixtures/cuda-oom", "--patterns", str(tmp_path), "-o", "json")
    report = run.json()
    text = json.dumps(report)
    assert "broken-example.yaml" in text
    assert "when.any[0].log.regex" in text
    assert "bad-step.yaml" in text
    assert "step" in text
    # The rest of the patterns still ran.
    found = {p["name"]: [f["id"] for f in p["findings"]] for p in report["pods"]}
    assert "cuda-oom" in found["vllm-qwen-5b7d9c8f6d-7xk2p"]
    assert "broken-example" not in json.dumps(found)
    assert run.code == 1, run.stderr


@pytest.mark.parametrize(("name", "text", "where"), [
    ("misspelt-fact.yaml", MISSPELT_FACT, "when.any[0].fact.name: unknown fact "
                                          "'gpu_memory_utilisation'"),
    ("misspelt-field.yaml", MISSPELT_FIELD, "when.container.field: unknown field 'reasn'"),
    ("unknown-finding.yaml", UNKNOWN_FINDING, "finding: unknown finding id 'cuda-oops'"),
])
def test_a_misspelt_name_fails_the_pattern_lint(tmp_path: Path, name: str, text: str,
                                                where: str) -> None:
    (tmp_path / name).write_text(text)
    run = run_cli("patterns", "--patterns", str(tmp_path))
    assert run.code == 2, run.stdout
    assert name in run.stderr and where in run.stderr, run.stderr
    # A scan still runs, without the broken pattern, and says it was skipped.
    scan = run_cli("analyze", "fixtures/cuda-oom", "--patterns", str(tmp_path), "-o", "json")
    assert any(name in w and "pattern skipped" in w for w in scan.json()["warnings"])


def _utilisation_override(tmp_path: Path, low: float, high: float) -> Path:
    shipped = (PATTERN_DIR / "gpu-memory-utilization.yaml").read_text()
    assert "gt: 0.92" in shipped and "lt: 0.85" in shipped
    text = (shipped.replace("gt: 0.92", f"gt: {high}").replace("lt: 0.85", f"lt: {low}")
            .replace("remediation: |", "remediation: |\n  Our fleet runs dedicated GPUs: "
                                       f"keep it within {low}-{high}."))
    # The shipped examples are about the shipped range; the override brings none.
    text = text[:text.index("\nexamples:")] + "\n"
    (tmp_path / "gpu-memory-utilization.yaml").write_text(text)
    return tmp_path


def _step(report: dict, n: int) -> dict:
    return next(s for s in report["checklist"] if s["step"] == n)


def test_overriding_the_utilisation_range_moves_finding_and_step_together(
        tmp_path: Path) -> None:
    # gmu-too-high runs --gpu-memory-utilization 0.97: outside the shipped range ...
    shipped = run_cli("analyze", "fixtures/gmu-too-high", "-o", "json").json()
    assert _step(shipped, 4)["verdict"] == "warn"
    assert any(f["id"] == "gpu-memory-utilization" for p in shipped["pods"]
               for f in p["findings"])
    # ... inside a team's 0.80-0.98: no finding, and step 4 passes on the value.
    wide = tmp_path / "wide"
    wide.mkdir()
    _utilisation_override(wide, 0.80, 0.98)
    run = run_cli("analyze", "fixtures/gmu-too-high", "--patterns", str(wide), "-o", "json")
    report = run.json()
    assert not any(f["id"] == "gpu-memory-utilization" for p in report["pods"]
                   for f in p["findings"])
    step4 = _step(report, 4)
    assert step4["verdict"] == "pass", step4
    assert any("--gpu-memory-utilization=0.97" in e for e in step4["evidence"])
    assert not any("0.85" in e or "0.92" in e for e in step4["evidence"])


def test_a_narrower_range_warns_with_the_overriding_remediation(tmp_path: Path) -> None:
    narrow = tmp_path / "narrow"
    narrow.mkdir()
    _utilisation_override(narrow, 0.80, 0.88)
    # well-sized-healthy runs --gpu-memory-utilization 0.9.
    run = run_cli("analyze", "fixtures/well-sized-healthy", "--patterns", str(narrow), "-o",
                  "json")
    step4 = _step(run.json(), 4)
    assert step4["verdict"] == "warn", step4
    assert any("keep it within 0.8-0.88" in r for r in step4["remediation"]), step4
