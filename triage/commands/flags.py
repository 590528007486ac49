"""The options of ``analyze`` (and the ones it shares with ``scan`` and ``lint``), said
once: their names, metavars, help and defaults. ``triage/commands/options.py`` turns them
into typer options; ``triage/commands/offline.py`` parses them without typer. Both read
these, so the two ways of running ``analyze`` cannot drift apart. No typer here.
"""

from __future__ import annotations

# Set by the shell's completion script: the command line is a question, not a command.
COMPLETE_VAR = "_VLLM_TRIAGE_COMPLETE"
FORMATS = ("table", "json", "yaml", "markdown", "html")
FAIL_ON = ("critical", "warning")
DEFAULT_OUTPUT, DEFAULT_FAIL_ON = "table", "critical"


class Flag:
    """One option: ``value`` is its metavar (None for a switch); ``repeat``, whether it may
    be given more than once (a list); ``path``, whether its values are paths."""

    __slots__ = ("default", "dest", "help", "names", "path", "repeat", "value")

    def __init__(self, dest: str, names: tuple[str, ...], help: str, *,
                 value: str | None = None, default: object = None, repeat: bool = False,
                 path: bool = False) -> None:
        self.dest, self.names, self.value, self.help = dest, names, value, help
        self.default, self.repeat, self.path = default, repeat, path


OUTPUT = Flag("output", ("-o", "--output"), f"Report format: {', '.join(FORMATS)}.",
              value="FORMAT", default=DEFAULT_OUTPUT)
OUTPUT_FILE = Flag("output_file", ("--output-file",), "Write the report to this file (the "
                   "terminal still gets the table, unless --quiet).", value="FILE", path=True)
FIX_DIR = Flag("fix_dir", ("--fix-dir",), "Write one reviewable patch file per workload into "
               "DIR, with the kubectl patch / kubectl diff commands for it (never applied by "
               "vllm-triage).", value="DIR", path=True)
QUIET = Flag("quiet", ("-q", "--quiet"), "With --output-file: print nothing but errors (no "
             "table).", default=False)
FAIL_ON_LEVEL = Flag("fail_on", ("--fail-on",), "What exits 1: critical (a failing step or a "
                     "critical finding) or warning (also a step to review, a warning finding).",
                     value="LEVEL", default=DEFAULT_FAIL_ON)
PATTERNS = Flag("patterns", ("--patterns",), "Extra directory of pattern files (repeatable); a "
                "file with the id of a built-in pattern replaces it.", value="DIR",
                repeat=True, path=True)
DEBUG = Flag("debug", ("--debug",), "Show tracebacks on internal errors.", default=False)

# analyze's options, in its signature's order (after BUNDLE).
ANALYZE = (OUTPUT, OUTPUT_FILE, FIX_DIR, QUIET, FAIL_ON_LEVEL, PATTERNS, DEBUG)
