"""The README shows what the tool does today: its checklist table names the ten steps as
the code does, in order; its example report is the first screen of `vllm-triage analyze
fixtures/cuda-oom` in an 80-column terminal; its findings are the shipped patterns; its
command synopsis names only commands and flags the tool has; its exit codes are the
collectors' and the report's."""

from __future__ import annotations

import re

import pytest

from tests.conftest import ROOT, run_cli
from triage.collect import ClusterUnreachable, InputError
from triage.rules.loader import load_patterns, shipped_checklist

README = (ROOT / "README.md").read_text()


def section(heading: str) -> str:
    """The text under a level-two heading, up to the next one."""
    return README.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def test_the_checklist_table_is_the_codes() -> None:
    table = README.split("## The checklist", 1)[1].split("\n\n")[2]
    rows = [line for line in table.splitlines() if re.match(r"^\| \d+ \|", line)]
    titles = [row.split("|")[2].strip().replace("`", "") for row in rows]
    steps = shipped_checklist().titles
    assert titles == [steps[n] for n in sorted(steps)]


@pytest.mark.slow  # runs the CLI
def test_the_example_report_is_what_analyze_prints_at_80_columns() -> None:
    section = README.split("## Example report", 1)[1]
    example = section.split("```\n", 2)[1]
    shown = example.removesuffix("...\n").splitlines()
    assert len(shown) > 20
    run = run_cli("analyze", str(ROOT / "fixtures" / "cuda-oom"), env={"COLUMNS": "80"})
    assert run.stdout.splitlines()[:len(shown)] == shown


def test_the_findings_table_lists_every_shipped_finding_at_its_step_and_severity() -> None:
    rows = [line for line in section("Findings").splitlines() if re.match(r"^\| \d+ \|", line)]
    listed: dict[str, tuple[int, str]] = {}
    for row in rows:
        step, critical, warning = (cell.strip() for cell in row.strip("|").split("|"))
        for severity, cell in (("critical", critical), ("warning", warning)):
            for finding in re.findall(r"`([a-z0-9-]+)`", cell):
                listed[finding] = (int(step), severity)
    shipped = {p.id: (p.step, p.severity.value) for p in load_patterns([]).patterns}
    assert listed == shipped


def synopsis() -> dict[str, set[str]]:
    """Command -> the flags the README's synopsis gives it."""
    text = section("Commands and flags")
    block = text[text.index("    vllm-triage "):].split("\n\n", 1)[0]
    flags: dict[str, set[str]] = {}
    command = ""
    for line in block.splitlines():
        starts = re.match(r"^ {4}vllm-triage (\w+)", line)
        if starts:
            command = starts.group(1)
            flags[command] = set()
            line = line[starts.end():]
        flags[command] |= set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", line))
    return flags


def test_the_synopsis_names_every_command_and_only_flags_each_has() -> None:
    import typer.main

    from triage.cli import app

    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    shown = synopsis()
    assert set(shown) == set(commands)
    for name, flags in shown.items():
        known = {opt for param in commands[name].params
                 for opt in (*param.opts, *param.secondary_opts)}
        assert flags <= known, (name, flags - known)
    assert {"-n", "-A", "--context", "-l", "-o", "--fail-on", "--prometheus"} <= shown["scan"]


def test_the_exit_codes_table_is_the_contract() -> None:
    rows = dict(re.findall(r"^\| (\d+) \| (.+) \|$", section("Exit codes"), re.MULTILINE))
    assert set(rows) == {"0", "1", "2", "3"}
    assert "unreadable input" in rows[str(InputError.exit_code)]
    assert "unreachable" in rows[str(ClusterUnreachable.exit_code)]
    assert "credentials refused" in rows[str(ClusterUnreachable.exit_code)]
    assert "critical" in rows["1"] and rows["0"] == "nothing failing"
