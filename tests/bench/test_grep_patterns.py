"""bench/grep_patterns.py: the benchmark's grep baseline runs every regex the tool runs.

grep refused two of them (a ``\\]`` and a ``\\-`` inside a class, which POSIX brackets
spell otherwise), so grep's side of the benchmark was lighter than the tool's.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from bench.grep_patterns import grep_patterns, to_ere, tool_regexes

pytestmark = pytest.mark.skipif(shutil.which("grep") is None, reason="no grep")


def _grep_count(ere: str, text: bytes, tmp_path: Path) -> int:
    f = tmp_path / "in.log"
    f.write_bytes(text)
    out = subprocess.run([b"grep", b"-E", b"-c", b"-e", ere.encode("latin-1"), str(f).encode()],
                         capture_output=True, env={"LC_ALL": "C"})
    assert out.returncode in (0, 1) and not out.stderr, out.stderr
    return int(out.stdout)


def test_grep_accepts_every_shipped_pattern(tmp_path: Path) -> None:
    written, refused = grep_patterns(tmp_path / "p.ere")
    assert refused == []
    assert written == len(tool_regexes())
    for pattern in tool_regexes():
        ere = to_ere(pattern)
        check = subprocess.run([b"grep", b"-E", b"-e", ere.encode("latin-1"), b"/dev/null"],
                               capture_output=True, env={"LC_ALL": "C"})
        assert check.returncode == 1 and not check.stderr, (pattern, ere, check.stderr)


@pytest.mark.parametrize(("pattern", "line"), [
    (r"[\])│|][ \t]*Traceback", "│  Traceback (most recent call last):"),
    (r"[\])│|][ \t]*Traceback", "]\tTraceback"),
    (r"^[\w.\- ]*\w: error: ", "vllm serve-x 1.0: error: unrecognized arguments"),
    (r"[^'\n]{1,4}x", "'abcx"),
    (r"(?i)cuda out of memory", "torch.OutOfMemoryError: CUDA out of memory"),
    (r"a\d+ b\n[^\n]*c", "a12 b"),  # spans lines: the first line is counted
    (r"x(?:\n\s*\S+)? is over", "x is over"),
    (r"[-a^]z", "^z"),
])
def test_each_construct_matches_at_least_what_python_matches(
        pattern: str, line: str, tmp_path: Path) -> None:
    assert re.search(pattern, line + ("\nzzc" if r"\n[" in pattern else ""))
    assert _grep_count(to_ere(pattern), line.encode() + b"\n", tmp_path) == 1


def test_the_shipped_examples_grep_counts_no_fewer_lines(tmp_path: Path) -> None:
    """Lines the tool's regexes match (one per pattern, built from the rule examples'
    text where the regex finds it) are matched by grep too."""
    from triage.rules.loader import load_patterns

    texts = [ex for p in load_patterns().patterns for ex in _examples(p)]
    lines = [ln for t in texts for ln in t.splitlines() if ln]
    data = "\n".join(lines).encode() + b"\n"
    checked = 0
    for pattern in tool_regexes():
        rx = re.compile(pattern, re.MULTILINE)
        expected = sum(1 for ln in lines if rx.search(ln))
        if expected:
            assert _grep_count(to_ere(pattern), data, tmp_path) >= expected, pattern
            checked += 1
    assert checked > 50, checked  # the examples reach most of the patterns


def _examples(pattern: object) -> list[str]:
    out: list[str] = []
    for ex in getattr(pattern, "examples", ()) or ():
        out += [t for t in (getattr(ex, "log", None), getattr(ex, "previous_log", None))
                if isinstance(t, str)]
    return out
