"""``analyze``'s flags, each spelling of them, and its usage errors: what each one does to
the report, the files written and the exit code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import FIXTURES, ROOT

OOM = str(FIXTURES / "cuda-oom")


def _analyze(args: list[str], cwd: Path) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env.update({"NO_COLOR": "1", "PYTHONPATH": str(ROOT)})  # HOME: the run's own
    proc = subprocess.run([sys.executable, "-m", "triage.cli", "analyze", *args],
                          capture_output=True, text=True, env=env, timeout=120, cwd=str(cwd))
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The report as ``-o json`` and as the table (the default) print it."""
    cwd = tmp_path_factory.mktemp("plain")
    code, as_json, err = _analyze([OOM, "-o", "json"], cwd)
    assert code == 1 and err == "", err  # the fixture's CUDA OOM fails step 2
    code, table, err = _analyze([OOM], cwd)
    assert code == 1 and err == "", err
    return {"json": as_json, "table": table}


@pytest.mark.parametrize("args", [
    [OOM, "-o", "json"],
    [OOM, "--output", "json"],
    [OOM, "--output=json"],
    ["-o", "json", OOM],
    [OOM, "-o", "json", "--fail-on", "warning"],
    [OOM, "-o", "json", "--debug"],
    [OOM, "-o", "json", "--patterns", str(ROOT / "patterns")],  # the shipped ones, again
    [OOM, "-o", "json", "--output-file", "-"],
])
def test_each_spelling_of_the_json_report_prints_it(args: list[str], tmp_path: Path,
                                                   plain: dict[str, str]) -> None:
    code, out, err = _analyze(args, tmp_path)
    assert (code, out, err) == (1, plain["json"], "")


def test_other_formats_carry_the_same_report(tmp_path: Path, plain: dict[str, str]) -> None:
    code, out, _ = _analyze([OOM, "--output=yaml"], tmp_path)
    assert code == 1 and yaml.safe_load(out) == json.loads(plain["json"])
    code, out, _ = _analyze(["-o", "markdown", OOM], tmp_path)
    assert code == 1 and out.startswith("### vLLM triage: ❌ FAIL (llm)")
    assert plain["table"].startswith("vllm-triage llm  context ")


def test_output_file_takes_the_report_and_the_terminal_the_table(
        tmp_path: Path, plain: dict[str, str]) -> None:
    code, out, err = _analyze([OOM, "-o", "json", "--output-file", "r.json"], tmp_path)
    assert (code, out, err) == (1, plain["table"], "report written to r.json\n")
    assert (tmp_path / "r.json").read_text() == plain["json"]
    (tmp_path / "r.json").unlink()
    code, out, err = _analyze([OOM, "-o", "json", "--output-file", "r.json", "-q"], tmp_path)
    assert (code, out, err) == (1, "", "")
    assert (tmp_path / "r.json").read_text() == plain["json"]


def test_fix_dir_writes_the_patches_beside_the_report(tmp_path: Path,
                                                      plain: dict[str, str]) -> None:
    code, out, err = _analyze([OOM, "-o", "json", "--fix-dir", "fixes"], tmp_path)
    # The report names each patch file where it was written, so its command pastes as is.
    assert (code, out) == (1, plain["json"].replace(
        '"file": "llm.deployment.', '"file": "fixes/llm.deployment.'))
    assert err.endswith("written to fixes\n"), err
    assert sorted(p.name for p in (tmp_path / "fixes").iterdir()) == \
        ["llm.deployment.vllm-qwen.patch.yaml"]


@pytest.mark.parametrize(("args", "said"), [
    ([OOM, "-o", "wide"], "-o 'wide' is not a report format; use one of table, json, yaml, "
     "markdown, html"),
    ([str(FIXTURES / "no-such-fixture"), "-o", "json"], "no-such-fixture"),
    ([OOM, "--fail-on", "never"], "--fail-on 'never' must be critical or warning"),
    ([OOM, "-q"], "--quiet needs --output-file"),
    ([OOM, "--patterns", "no-such-dir"], "--patterns no-such-dir: no such directory"),
    ([OOM, "--patterns", OOM + "/incident.yaml"], "is not a directory of pattern files"),
])
def test_a_usage_error_is_one_line_and_exit_2(args: list[str], said: str,
                                             tmp_path: Path) -> None:
    code, out, err = _analyze(args, tmp_path)
    assert (code, out) == (2, "")
    assert err.startswith("vllm-triage: error: ") and said in err and err.count("\n") == 1, err
