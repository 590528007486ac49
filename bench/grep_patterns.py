"""The tool's own log regexes, translated for ``grep -E -f`` (the baseline of the benchmark).

grep's ERE lacks some of Python's syntax; each construct becomes the nearest
ERE that matches at least as much (lookarounds are dropped, ``\\d`` becomes
``[0-9]``, ``(?:`` becomes ``(``), so grep does no less work than the tool.
A pattern grep still refuses is left out and reported.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from triage.facts import LOG_QUERIES  # noqa: E402
from triage.logs import _level_prefilter, _prefilter_pattern  # noqa: E402
from triage.rules.evaluate import queries_for  # noqa: E402
from triage.rules.loader import load_patterns  # noqa: E402

_CLASS_ESCAPES = {r"\d": "0-9", r"\w": "[:alnum:]_", r"\s": "[:space:]"}


def tool_regexes() -> list[str]:
    """Every regex one scan answers; a query that matches nearly any line (``.``, counted
    on ERROR lines) is what the tool searches for too: its level words."""
    queries = LOG_QUERIES.merged(queries_for(load_patterns().patterns))
    out = set()
    for q in queries.queries.values():
        if _prefilter_pattern(q.regex.pattern) is None:
            words = _level_prefilter(q.levels)
            if words:
                out.add(words)
                continue
        out.add(q.regex.pattern)
    return sorted(out)


def to_ere(pattern: str) -> str:
    out: list[str] = []
    i, in_class = 0, False
    while i < len(pattern):
        ch = pattern[i]
        two = pattern[i:i + 2]
        if in_class:
            if two in _CLASS_ESCAPES:
                out.append(_CLASS_ESCAPES[two])
                i += 2
                continue
            if ch == "\\" and i + 1 < len(pattern):
                nxt = pattern[i + 1]
                out.append("\\\\" if nxt == "\\" else nxt if nxt not in "]^-" else "\\" + nxt)
                i += 2
                continue
            if ch == "]":
                in_class = False
            out.append(ch)
            i += 1
            continue
        if ch == "[":
            in_class = True
            out.append(ch)
            if pattern[i + 1:i + 2] == "^":
                out.append("^")
                i += 1
            i += 1
            continue
        if pattern.startswith(("(?=", "(?!", "(?<=", "(?<!"), i):  # drop the lookaround
            depth = 0
            while i < len(pattern):
                if pattern[i] == "\\":
                    i += 2
                    continue
                depth += pattern[i] == "("
                depth -= pattern[i] == ")"
                i += 1
                if depth == 0:
                    break
            continue
        if pattern.startswith("(?:", i):
            out.append("(")
            i += 3
            continue
        named = re.match(r"\(\?P?<[A-Za-z_]\w*>", pattern[i:])  # a named group: a group
        if named:
            out.append("(")
            i += named.end()
            continue
        m = re.match(r"\(\?[a-zA-Z]+\)", pattern[i:])  # inline flags: dropped
        if m:
            i += m.end()
            continue
        if two == r"\d":
            out.append("[0-9]")
            i += 2
            continue
        if two in (r"\h", r"\A", r"\Z", r"\z"):
            i += 2
            continue
        if ch == "\\" and i + 1 < len(pattern):  # any other escape stays as it is
            out.append(two)
            i += 2
            continue
        if ch in "*+?}" and pattern[i + 1:i + 2] == "?":  # lazy -> greedy
            out.append(ch)
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def grep_patterns(dest: Path) -> tuple[int, list[str]]:
    """Write the translated patterns to ``dest``; returns (count written, refused)."""
    good, refused = [], []
    for pattern in tool_regexes():
        ere = to_ere(pattern)
        check = subprocess.run(["grep", "-E", "-e", ere, "/dev/null"], capture_output=True,
                               env={"LC_ALL": "C"})
        if check.returncode == 2 or check.stderr:
            refused.append(pattern)
        else:
            good.append(ere)
    dest.write_text("\n".join(good) + "\n")
    return len(good), refused


if __name__ == "__main__":
    n, bad = grep_patterns(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("/dev/stdout"))
    print(f"{n} patterns; grep refused {len(bad)}: {bad}", file=sys.stderr)
