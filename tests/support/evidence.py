"""What the first line of a finding's evidence must never be, told by its own shapes (not
the tool's): the checks of "the proof line is the cause" over the fixtures and the
whole-rule examples."""

from __future__ import annotations

import regex

from triage.logs import parse_line

# A traceback's frame or header, the source line Python echoes under a frame, argparse's
# usage text, a hint printed after a CUDA error; and the shell's or the kernel's report of
# a death when an error was printed before it.
_FRAME = regex.compile(r'^\s*File "[^"]*", line \d+|^\s*frame #\d+: |^\s*Traceback \(most recent'
                       r"|^The above exception was|^During handling of the above exception")
_ECHO = regex.compile(r"^\s{4,}(?:raise|return|assert|await)\b|^\s{4,}[\w.\[\]]+\(|^\s{4,}\w+ = "
                      r"|^\s*\^+\s*$")
_USAGE = regex.compile(r"^usage: ")
_HINT = regex.compile(r"CUDA kernel errors might be asynchronously reported|CUDA_LAUNCH_BLOCKING"
                      r"|TORCH_USE_CUDA_DSA|\bNCCL INFO\b")
_CONSEQUENCE = regex.compile(r"^Killed$|Segmentation fault|Aborted \(core dumped\)"
                             r"|^Fatal Python error: (?:Aborted|Segmentation fault)"
                             r"|^KeyboardInterrupt: terminated$|\d+ Killed\s+\S")
_AN_ERROR = regex.compile(r"^\s*[A-Za-z_][\w.]*(?:Error|Exception)\b:|\bNCCL WARN\b|: error: "
                          r"|terminated with exception: ")
LOG_ITEM = regex.compile(r"^((?:previous log|log) \([^)]*\)) line (\d+)([> ]) (.*)$", regex.DOTALL)


def first_line_problem(evidence: tuple[str, ...]) -> str | None:
    """Why the first evidence line of a finding that quotes a log is not the line that
    states its cause; None when it is (or the finding quotes no log line it matched)."""
    items = [(m, e) for e in evidence if (m := LOG_ITEM.match(e))]
    if not any(m.group(3) == ">" for m, _ in items) or evidence[0].startswith("event "):
        return None  # quotes no log line it matched, or rests on an event (a probe kill)
    first = LOG_ITEM.match(evidence[0])
    if first is None:
        return f"opens with {evidence[0][:100]!r}, not the log line it rests on"
    message = parse_line(0, first.group(4)).message
    for shape, what in ((_FRAME, "a frame"), (_ECHO, "a source echo"), (_USAGE, "usage text"),
                        (_HINT, "a hint")):
        if shape.search(message):
            return f"opens with {what}: {message[:100]!r}"
    if first.group(3) != ">":
        return f"opens with a context line: {message[:100]!r}"
    if _CONSEQUENCE.search(message):
        before = [m for m, _ in items if m.group(1) == first.group(1)
                  and int(m.group(2)) < int(first.group(2))
                  and _AN_ERROR.search(parse_line(0, m.group(4)).message)]
        if before:
            return f"opens with a consequence ({message[:60]!r}) after an error"
    return None


