"""Make text from a cluster or a file safe to show on a terminal or in a file.

Everything the tool prints or writes may hold text a pod, a manifest or a
bundle controls: container args, a model name, an event message, an HPA
metric name, an annotation, a ``/metrics`` label, an API error, a bundle's
manifest. A terminal interprets control characters: an OSC 52 sequence
writes the clipboard, CSI sequences clear the screen or move the cursor, a
C1 control (U+009B is CSI, U+009D is OSC) does the same in one character,
and bidirectional overrides (U+202E) make text read differently from what
it is. ``sanitize`` is the one step every such string passes (the report is
built through it, and so is every line on stderr):

- escape sequences (CSI, OSC, DCS, SOS, PM, APC, and two-byte ESC
  sequences), in their 7-bit and their C1 forms, are removed: colours in a
  log line are noise, and the others are attacks;
- any other C0 or C1 control character (except tab and newline) and every
  bidirectional control is made visible as ``<U+XXXX>``, so a reader sees
  that it was there and the text cannot change what the terminal shows.
"""

from __future__ import annotations

import regex

from triage.speed import lazyregex

# ESC or its C1 equivalent, then what the sequence is: CSI parameters and a
# final byte; OSC / DCS / SOS / PM / APC strings up to BEL or ST (bounded:
# an unterminated string is cut at the bound, never scanned to the end of
# the text again and again); or a single final byte after ESC.
_SEQUENCE = lazyregex.compile(
    r"(?:\x1b\[|\x9b)[\x30-\x3f]{0,64}+[\x20-\x2f]{0,16}+[\x40-\x7e]?"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]{0,4096}+(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[\x20-\x2f]{0,4}+[\x30-\x7e]?"
    # kubectl and Docker json-file logs sometimes carry the escape as the text "#033["
    r"|#033\[[0-9;]{0,64}+[A-Za-z]"
)
_VISIBLE = lazyregex.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]")
_NEEDS_WORK = lazyregex.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]|#033\[")


def _visible(m: regex.Match[str]) -> str:
    return f"<U+{ord(m.group()):04X}>"


def sanitize(text: str) -> str:
    """``text`` with escape sequences removed and other controls made visible.

    Tabs and newlines stay; a carriage return before a newline goes (CRLF
    line ends); any other carriage return is shown, as it could overwrite
    what came before it on a terminal line.
    """
    if not text or _NEEDS_WORK.search(text) is None:
        return text  # the common case: one C-speed scan, no copy
    text = _SEQUENCE.sub("", text).replace("\r\n", "\n")
    shown: str = _VISIBLE.sub(_visible, text)
    return shown


def one_line(text: str, limit: int = 400) -> str:
    """A sanitised single line for stderr: whitespace runs become one space."""
    return " ".join(sanitize(text).split())[:limit]
