"""``triage.safety.sanitize``: escape sequences are dropped, other control characters
and bidi overrides shown as <U+XXXX>, in time linear in its input; markdown mentions and
autolinks from outside are made inert."""

from __future__ import annotations

import pytest

from triage.safety.sanitize import sanitize
from triage.writers.markdown import inline

OSC52 = "\x1b]52;c;ZXZpbA==\x07"  # write "evil" to the clipboard
C1_CSI = "\x9b31m"  # CSI as one C1 character
C1_OSC = "\x9d0;title\x9c"  # OSC as one C1 character
BIDI = "\u202e"  # right-to-left override
FORBIDDEN = ["\x1b", "\x9b", "\x9d", "\x9c", "\x07", "\u202e", "\u2066"]


def raw_controls(text: str) -> list[str]:
    return [repr(c) for c in FORBIDDEN if c in text]


@pytest.mark.parametrize(("text", "shown"), [
    ("plain text\twith a tab\nand a newline", "plain text\twith a tab\nand a newline"),
    ("a" + OSC52 + "b", "ab"),
    ("red \x1b[31mALERT\x1b[0m", "red ALERT"),
    ("x" + C1_CSI + "y", "xy"),
    ("x" + C1_OSC + "y", "xy"),
    ("abc" + BIDI + "fdp.exe", "abc<U+202E>fdp.exe"),
    ("nul\x00bell\x07", "nul<U+0000>bell<U+0007>"),
    ("crlf\r\nline", "crlf\nline"),
    ("over\rwrite", "over<U+000D>write"),
    ("#033[1;31mred#033[0m", "red"),
    ("\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\", "link"),
    ("unterminated \x1b]52;c;" + "A" * 10000, "unterminated " + "A" * (10000 - 4096 + 5)),
])
def test_sanitize_drops_escapes_and_names_other_controls(text: str, shown: str) -> None:
    assert sanitize(text) == shown
    assert not raw_controls(sanitize(text))


def test_sanitize_is_linear_on_escape_floods() -> None:
    import time

    for flood in ("\x1b[" * 200_000, "\x1b]" * 200_000, "\x9b0" * 200_000, "\x1b" * 400_000):
        start = time.perf_counter()
        out = sanitize(flood)
        assert time.perf_counter() - start < 2.0
        assert not raw_controls(out)


def test_markdown_mentions_and_autolinks_are_inert() -> None:
    text = inline("ping @oncall-team see https://evil.example/x, www.evil.example, a@b.example")
    assert "@oncall" not in text and "https://" not in text and "www." not in text
    assert "a@b" not in text
    # It still reads the same once rendered (a zero-width space is invisible).
    assert text.replace("&#8203;", "").replace("\\", "") == (
        "ping @oncall-team see https://evil.example/x, www.evil.example, a@b.example")
