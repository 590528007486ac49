"""The table follows the terminal's width, down to 80 columns.

The real CLI runs in a pseudo-terminal of 80, 120 and 200 columns (the width
comes from the terminal, as in a user's shell, colours on) and, separately,
with COLUMNS in a pipe. No line may be longer than the width and every box
must close on every line: a line that starts inside a box ends with its
border.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest
from rich.cells import cell_len

from bench import synthetic
from tests.conftest import FIXTURES, ROOT, run_cli

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
_OPENS = ("╭", "┏")
_INSIDE = ("│", "┃", "┡", "├", "╭", "┏")
_ENDS = ("│", "┃", "┩", "┤", "╮", "┓", "╯", "┘", "┛")
_CLOSES = ("╰", "└", "┗")


def in_pty(args: list[str], columns: int, rows: int = 50) -> str:
    """Run the CLI with its stdout on a pseudo-terminal of the given size."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    env = {k: v for k, v in os.environ.items()
           if k not in ("COLUMNS", "LINES", "NO_COLOR") and not k.startswith("KUBE")}
    env["TERM"] = "xterm-256color"
    proc = subprocess.Popen([sys.executable, "-m", "triage.cli", *args], stdout=slave,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=env,
                            cwd=str(ROOT))
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 1.0)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    proc.wait(timeout=30)
    os.close(master)
    return b"".join(chunks).decode("utf-8", errors="replace").replace("\r\n", "\n")


def check(text: str, width: int) -> list[str]:
    """The screen's lines; fails on a line wider than ``width`` or a box left open."""
    lines = [_ANSI.sub("", line) for line in text.split("\n")]
    inside = False
    for n, line in enumerate(lines):
        assert cell_len(line) <= width, (n, cell_len(line), line)
        if line.startswith(_OPENS):
            inside = True
        if inside:
            assert line.startswith(_INSIDE + _CLOSES) and line.rstrip().endswith(_ENDS), \
                (n, "broken box", line)
            assert cell_len(line) == width, (n, "box narrower than the screen", line)
        if line.startswith(_CLOSES):
            inside = False
    assert not inside, "a box never closed"
    return lines


@pytest.fixture(scope="module")
def busy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A busy namespace: 30 vLLM pods, one in ten crash-looping with a CUDA OOM."""
    root = tmp_path_factory.mktemp("busy") / "fx"
    synthetic.generate(root, pods=30, lines=120)
    return root


@pytest.mark.parametrize("width", [80, 120, 200])
@pytest.mark.parametrize("fixture", ["cuda-oom", "busy-namespace", "busy", "nccl-failure",
                                     "gpu-hardware-error"])
def test_table_fits_the_terminal(fixture: str, width: int, busy: Path) -> None:
    """cuda-oom and the recorded busy-namespace fixture (issue 17's two), a synthetic
    30-pod namespace and two beside-the-step rows, each through a real pty."""
    path = busy if fixture == "busy" else FIXTURES / fixture
    text = in_pty(["analyze", str(path)], width)
    lines = check(text, width)
    assert "\x1b[" in text  # a terminal: colours on
    assert any("checklist" in line for line in lines)
    assert sum(line.startswith("╭") for line in lines) >= 1


@pytest.mark.parametrize("width", [80, 200])
def test_columns_sets_the_width_of_a_pipe(width: int) -> None:
    run = run_cli("analyze", str(FIXTURES / "cuda-oom"), env={"COLUMNS": str(width)})
    lines = check(run.stdout, width)
    assert max(cell_len(line) for line in lines) == width


def test_narrower_than_80_is_drawn_at_80() -> None:
    run = run_cli("analyze", str(FIXTURES / "cuda-oom"), env={"COLUMNS": "50"})
    check(run.stdout, 80)


def test_one_line_per_evidence_item_where_it_fits() -> None:
    """At 200 columns every checklist evidence line of cuda-oom is on one line."""
    run = run_cli("analyze", str(FIXTURES / "cuda-oom"), env={"COLUMNS": "200"})
    lines = check(run.stdout, 200)
    row = next(i for i, line in enumerate(lines) if line.startswith("│  1 │"))
    assert lines[row + 1].startswith("│  2 │"), lines[row:row + 2]


@pytest.mark.parametrize("fixture", ["cuda-oom", "probe-kill-vs-crash-while-loading",
                                     "shm-bus-error-tp2"])
def test_the_patch_on_screen_is_the_patch(fixture: str) -> None:
    """At 80 columns the patch shown under 'Patches to review' parses, as shown, to the
    patch of -o json, and its commands are whole lines joined by backslashes."""
    import json
    import shlex

    import yaml

    run = run_cli("analyze", str(FIXTURES / fixture), env={"COLUMNS": "80"})
    lines = check(run.stdout, 80)
    patches = json.loads(run_cli("analyze", str(FIXTURES / fixture), "-o", "json").stdout)
    assert patches["patches"], "the fixture has a computed patch"
    start = lines.index(next(line for line in lines if line.startswith("Patches to review")))
    shown: list[object] = []
    commands: list[list[str]] = []
    i = start + 1
    while i < len(lines) and lines[i].startswith("   "):
        block = []
        while i + 1 < len(lines) and lines[i + 1].startswith("     "):
            i += 1
            block.append(lines[i][5:])
        if lines[i - len(block)].strip() == "preview, then apply:":
            commands.append(block)
        elif block:
            shown.append(yaml.safe_load("\n".join(block)))
        i += 1
    assert len(commands) == len(shown)
    for block, wp in zip(commands, patches["patches"], strict=True):
        typed = shlex.split("\n".join(block).replace("\\\n", " "))
        p = wp["patch"]
        assert typed[:10] == ["kubectl", "--context", patches["context"], "patch",
                              p["kind"].lower(), p["name"], "-n", p["namespace"], "--type",
                              p["type"]], typed
        assert typed.count("kubectl") == 3 and "--dry-run=server" in typed  # preview, apply
    assert shown == [wp["patch"]["patch"] for wp in patches["patches"]]


@pytest.mark.parametrize("width", [80, 120])
def test_a_multi_line_fix_wraps_each_item_under_its_own_text(width: int) -> None:
    """latency-tail-high's fix is a sentence and "- " items, wrapped in its pattern file
    for the file's width: on a terminal each item wraps under its own text (no orphan
    word at the fix column, no continuation at the item's mark)."""
    text = in_pty(["analyze", str(FIXTURES / "request-queueing")], width)
    lines = check(text, width)
    start = next(i for i, line in enumerate(lines)
                 if "fix:   Read which tail is long" in line)
    column = lines[start].index("Read")
    block = []
    for line in lines[start + 1:]:
        if not line.startswith(" " * column) or line.strip().startswith(("2.", "3.")):
            break
        block.append(line)
    items = [line for line in block if line[column:].startswith("- ")]
    assert len(items) >= 2, block
    for line in block:
        rest = line[column:]
        assert rest.startswith(("- ", "  ", "... ")) or rest[:1].isupper(), (line, block)
        if rest.startswith("  "):  # an item's continuation: under its text, two columns in
            assert rest[2] != " ", (line, block)
