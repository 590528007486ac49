"""``analyze`` plainly written runs without typer (triage/commands/offline.py); the
same arguments through typer's command give the same report, message and exit code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT
from triage.commands import flags, offline
from triage.commands.common import Output

# typer's command for analyze, whatever the arguments (the front is skipped).
_TYPER = ("import sys; from triage.commands.app import build_app; "
          "build_app('analyze')(prog_name='vllm-triage')")
_FRONT = """
import sys, triage.cli
sys.argv[0] = "vllm-triage"
try:
    triage.cli.main()
except SystemExit as done:
    code = done.code
sys.exit(99 if "typer" in sys.modules else code)  # 99: the front did not take it
"""


def _run(code: str, args: list[str], cwd: Path) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env.update({"NO_COLOR": "1", "HOME": str(ROOT / ".pytest-home"),
                "PYTHONPATH": str(ROOT)})
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True,
                          text=True, env=env, timeout=120, cwd=str(cwd))
    return proc.returncode, proc.stdout, proc.stderr


def _both(args: list[str], tmp_path: Path) -> tuple[tuple[int, str, str], tuple[int, str, str]]:
    (tmp_path / "front").mkdir(exist_ok=True)
    (tmp_path / "typer").mkdir(exist_ok=True)
    front = _run(_FRONT, ["analyze", *args], tmp_path / "front")
    typer = _run(_TYPER, ["analyze", *args], tmp_path / "typer")
    return front, typer


def _same_report(a: str, b: str) -> None:
    try:
        assert json.loads(a) == json.loads(b)
    except json.JSONDecodeError:
        assert a == b


OOM = str(FIXTURES / "cuda-oom")


@pytest.mark.parametrize("args", [
    [OOM, "-o", "json"],
    [OOM, "--output", "json"],
    [OOM, "--output=yaml"],
    ["-o", "markdown", OOM],
    [OOM],
    [OOM, "-o", "json", "--fail-on", "warning"],
    [OOM, "-o", "json", "--debug"],
    [OOM, "-o", "json", "--patterns", str(ROOT / "patterns")],
    [OOM, "-o", "json", "--output-file", "r.json", "-q"],
    [OOM, "-o", "json", "--output-file", "r.json"],
    [OOM, "-o", "json", "--output-file", "-"],
    [OOM, "-o", "json", "--fix-dir", "fixes"],
])
def test_each_flag_gives_the_same_report_and_exit_code_both_ways(args: list[str],
                                                                 tmp_path: Path) -> None:
    (fcode, fout, ferr), (tcode, tout, terr) = _both(args, tmp_path)
    assert fcode == tcode, (ferr, terr)
    _same_report(fout, tout)
    assert ferr == terr
    for name in ("r.json", "fixes"):
        f, t = tmp_path / "front" / name, tmp_path / "typer" / name
        assert f.exists() == t.exists()
        if f.is_file():
            _same_report(f.read_text(), t.read_text())
        elif f.is_dir():
            assert sorted(p.name for p in f.iterdir()) == sorted(p.name for p in t.iterdir())


@pytest.mark.parametrize("args", [
    [OOM, "-o", "wide"],
    [str(FIXTURES / "no-such-fixture"), "-o", "json"],
    [OOM, "--fail-on", "never"],
    [OOM, "-q"],
    [OOM, "--patterns", "no-such-dir"],
    [OOM, "--patterns", OOM + "/incident.yaml"],
])
def test_errors_give_the_same_message_and_exit_code_both_ways(args: list[str],
                                                              tmp_path: Path) -> None:
    (fcode, fout, ferr), (tcode, tout, terr) = _both(args, tmp_path)
    assert fcode == tcode == 2
    assert ferr == terr and "vllm-triage: error:" in ferr
    assert fout == tout == ""


@pytest.mark.parametrize("args", [
    ["analyze", OOM, "--help"], ["analyze", OOM, "-h"], ["analyze"], ["analyze", OOM, OOM],
    ["analyze", OOM, "-o"], ["analyze", OOM, "-ojson"], ["analyze", OOM, "--unknown"],
    ["analyze", OOM, "-o", "json", "-o", "yaml"], ["analyze", "--", OOM],
    ["analyze", OOM, "-o", "-q"], ["analyze", OOM, "--debug=1"], ["analyze", OOM, "-qo", "x"],
    ["scan", "-n", "llm"], ["--version"], [],
])
def test_anything_not_plainly_written_is_left_to_typer(args: list[str]) -> None:
    assert offline.parse(args) is None


def test_the_front_takes_the_typer_command_s_defaults_and_flags() -> None:
    """One definition: typer's analyze options are the flags the front parses, with the
    same names, defaults, switches and repeatable ones."""
    import typer.main

    from triage.commands.app import build_app

    group = typer.main.get_command(build_app("analyze"))
    command = group.commands["analyze"]  # type: ignore[attr-defined]
    options = {p.name: p for p in command.params if p.name != "bundle_path"}
    assert list(options) == [f.dest for f in flags.ANALYZE]
    parsed = offline.parse(["analyze", OOM])
    assert parsed is not None
    for flag in flags.ANALYZE:
        param = options[flag.dest]
        assert tuple(param.opts) == flag.names
        assert param.default == flag.default == parsed[flag.dest]
        assert param.is_flag == (flag.value is None)  # type: ignore[attr-defined]
        assert param.multiple == flag.repeat  # type: ignore[attr-defined]
        assert param.help == flag.help  # type: ignore[attr-defined]
    assert tuple(o.value for o in Output) == flags.FORMATS


def test_common_imports_no_typer() -> None:
    code = "import sys, triage.commands.common, triage.cli; print('typer' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=str(ROOT), check=True, timeout=60).stdout
    assert out.strip() == "False"
