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
from triage.logs.prefilter import _level_prefilter, _prefilter_pattern  # noqa: E402
from triage.rules.evaluate import queries_for  # noqa: E402
from triage.rules.loader import load_patterns  # noqa: E402

_CLASS_ESCAPES = {r"\d": "0-9", r"\w": "[:alnum:]_", r"\s": "[:space:]"}
# Escapes for one character (inside a class or out): grep's ERE has none of them.
_CHAR_ESCAPES = {"t": "\t", "r": "\r", "f": "\f", "v": "\v", "a": "\a", "e": "\x1b",
                 "n": "\n"}


def _escaped_char(pattern: str, i: int) -> tuple[str, int] | None:
    """The one character a ``\\t``, ``\\xHH`` or ``\\uHHHH`` at ``i`` stands for, and where
    the escape ends; None for any other escape."""
    nxt = pattern[i + 1:i + 2]
    if nxt in _CHAR_ESCAPES:
        return _CHAR_ESCAPES[nxt], i + 2
    width = {"x": 2, "u": 4, "U": 8}.get(nxt)
    digits = pattern[i + 2:i + 2 + width] if width else ""
    if width and len(digits) == width and all(c in "0123456789abcdefABCDEF" for c in digits):
        return chr(int(digits, 16)), i + 2 + width
    return None


def _bracket(pattern: str, i: int, fold: bool) -> tuple[str, int]:
    """A Python character class at ``i`` (its ``[``) as a POSIX bracket expression, and where
    the class ends. In POSIX a backslash is itself, ``]`` is literal only first and ``-``
    only last, so the members are read and written again in that order. A member with no
    POSIX spelling (``\\S``, ``\\W``, ``\\D``, a range past ASCII) makes it ``.``: more
    lines, never fewer. A newline, which no line holds, is dropped; a class of a newline
    alone is returned as ``\\n`` for the caller to cut at."""
    j = i + 1
    negated = pattern[j:j + 1] == "^"
    j += negated
    chars: set[str] = set()
    ranges: list[tuple[str, str]] = []
    names: list[str] = []
    wide = False  # a member grep cannot spell: the class becomes "."
    first = True
    while j < len(pattern) and (first or pattern[j] != "]"):
        first = False
        member: str | None
        if pattern[j] == "\\" and j + 1 < len(pattern):
            two = pattern[j:j + 2]
            one = _escaped_char(pattern, j)
            if two in _CLASS_ESCAPES:
                if two == r"\d":
                    ranges.append(("0", "9"))
                else:
                    names.append(_CLASS_ESCAPES[two])
                j += 2
                continue
            if two in (r"\D", r"\W", r"\S"):
                wide = True
                j += 2
                continue
            if one is not None:
                member, j = one
            else:
                member, j = pattern[j + 1], j + 2
        else:
            member, j = pattern[j], j + 1
        if pattern[j:j + 1] == "-" and pattern[j + 1:j + 2] not in ("]", ""):
            k = j + 1
            hi: str
            if pattern[k] == "\\":
                one = _escaped_char(pattern, k)
                hi, k = one if one is not None else (pattern[k + 1], k + 2)
            else:
                hi, k = pattern[k], k + 1
            if ord(hi) > 127:
                wide = True
            else:
                ranges.append((member, hi))
            j = k
            continue
        chars.add(member)
    end = j + 1  # past the "]"
    chars.discard("\n")
    if wide or (negated and not (chars or ranges or names)):
        return ".", end
    if not (chars or ranges or names):
        return "\\n", end
    if fold:
        for lo, hi in list(ranges):
            if lo.isalpha() and hi.isalpha():
                ranges.append((lo.swapcase(), hi.swapcase()))
        chars |= {c.swapcase() for c in chars}
    ascii_, other = {c for c in chars if ord(c) < 128}, [c for c in chars if ord(c) >= 128]
    body = "]" if "]" in ascii_ else ""
    body += "".join(f"{lo}-{hi}" for lo, hi in ranges)
    body += "".join(names)
    body += "".join(sorted(ascii_ - set("]^-[")))
    body += "".join(ch for c in other for ch in c.encode().decode("latin-1"))  # LC_ALL=C: bytes
    body += "[" if "[" in ascii_ else ""
    body += "^" if "^" in ascii_ else ""
    body += "-" if "-" in ascii_ else ""
    if body == "^" and not negated:
        return "\\^", end
    return "[" + ("^" if negated else "") + body + "]", end


def _past_line(pattern: str, i: int) -> tuple[str, int]:
    """A newline the pattern requires at ``i``: what follows it is on the next line, which
    grep does not see, so the rest of this branch is skipped (the first line still holds
    the match's start: grep counts no fewer lines). Returns the closing parentheses of the
    groups the skip leaves and where the next branch starts."""
    out, depth = "", 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "[":
            i = _bracket(pattern, i, False)[1]
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            if depth == 0:
                out += ")"
            else:
                depth -= 1
        elif ch == "|" and depth == 0:
            return out, i
        i += 1
    return out, i


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
    """``pattern`` as an ERE for ``LC_ALL=C grep -E``, each byte one character (write it as
    latin-1 to get the bytes grep reads)."""
    out: list[str] = []
    i, fold = 0, False
    while i < len(pattern):
        ch = pattern[i]
        two = pattern[i:i + 2]
        if ch == "[":
            cls, i = _bracket(pattern, i, fold)
            if cls == "\\n":  # a class of a newline alone: a newline
                close, i = _past_line(pattern, i)
                out.append(close)
            else:
                out.append(cls)
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
        m = re.match(r"\(\?([a-zA-Z]+)\)", pattern[i:])  # inline flags: dropped, but
        if m:  # a case-blind pattern's letters are spelled both ways
            fold = fold or "i" in m.group(1)
            i += m.end()
            continue
        m = re.match(r"\(\?([a-zA-Z]+):", pattern[i:])  # a group with its own flags: a
        if m:  # group; its case-blindness runs to the pattern's end (more lines, never fewer)
            fold = fold or "i" in m.group(1)
            out.append("(")
            i += m.end()
            continue
        if two == r"\d":
            out.append("[0-9]")
            i += 2
            continue
        if two in (r"\h", r"\A", r"\Z", r"\z"):
            i += 2
            continue
        if two == r"\n":
            if pattern[i + 2:i + 3] in ("?", "*"):  # a newline that may be absent
                i += 3
                continue
            close, i = _past_line(pattern, i + 2)
            out.append(close)
            continue
        if ch == "\\" and i + 1 < len(pattern):
            one = _escaped_char(pattern, i)
            if one is not None:
                out.append(one[0])
                i = one[1]
                continue
            if fold and pattern[i + 1].isalpha() and pattern[i + 1] not in "bBwWsSdD":
                c = pattern[i + 1]
                out.append(f"[{c.lower()}{c.upper()}]")
            else:
                out.append(two)  # any other escape stays as it is
            i += 2
            continue
        if ch in "*+?}" and pattern[i + 1:i + 2] == "?":  # lazy -> greedy
            out.append(ch)
            i += 2
            continue
        if fold and ch.isalpha() and ch.lower() != ch.upper():
            out.append(f"[{ch.lower()}{ch.upper()}]")
            i += 1
            continue
        out.append(ch.encode().decode("latin-1"))  # grep reads bytes (LC_ALL=C)
        i += 1
    return "".join(out)


def grep_patterns(dest: Path) -> tuple[int, list[str]]:
    """Write the translated patterns to ``dest``; returns (count written, refused)."""
    good, refused = [], []
    for pattern in tool_regexes():
        ere = to_ere(pattern)
        check = subprocess.run([b"grep", b"-E", b"-e", ere.encode("latin-1"), b"/dev/null"],
                               capture_output=True,
                               env={"LC_ALL": "C"})
        if check.returncode == 2 or check.stderr:
            refused.append(pattern)
        else:
            good.append(ere)
    dest.write_bytes(("\n".join(good) + "\n").encode("latin-1"))
    return len(good), refused


if __name__ == "__main__":
    n, bad = grep_patterns(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("/dev/stdout"))
    print(f"{n} patterns; grep refused {len(bad)}: {bad}", file=sys.stderr)
