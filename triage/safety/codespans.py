"""Code spans in a fix's text: where a command or a flag is, delimited as CommonMark
delimits them, so every writer finds the same ones.

A fix's or a remediation's text is prose with `code spans` (a command, a flag, a
field). A span opens with a run of backticks and closes at the next run of exactly
that length; a value filled into one from a cluster may hold backticks, so the span is
written with a run longer than any inside it (``code``). Every writer splits a text
with ``split``: what it takes for code is a whole span, never half a command.
"""

from __future__ import annotations

import regex

_RUN = regex.compile(r"`+")


def code(content: str) -> str:
    """``content`` as one code span, whatever backticks it holds."""
    longest = max((len(m) for m in _RUN.findall(content)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if content[:1] in ("`", " ") or content[-1:] in ("`", " ") else ""
    return f"{fence}{pad}{content}{pad}{fence}"


def split(text: str) -> list[tuple[bool, str]]:
    """``text`` as (is_code, part) in order: prose as written, each code span's content
    as CommonMark reads it (a line end is a space; one space each side stripped when
    both are there). A backtick run that closes nothing is prose."""
    runs = [(m.start(), m.end()) for m in _RUN.finditer(text)]
    out: list[tuple[bool, str]] = []
    pos = 0
    k = 0
    while k < len(runs):
        start, end = runs[k]
        size = end - start
        close = next((j for j in range(k + 1, len(runs))
                      if runs[j][1] - runs[j][0] == size), None)
        if close is None:
            k += 1
            continue
        if start > pos:
            out.append((False, text[pos:start]))
        content = text[end:runs[close][0]].replace("\r\n", " ").replace("\n", " ")
        if len(content) >= 2 and content[0] == " " and content[-1] == " " and content.strip():
            content = content[1:-1]
        out.append((True, content))
        pos = runs[close][1]
        k = close + 1
    if pos < len(text):
        out.append((False, text[pos:]))
    return out
