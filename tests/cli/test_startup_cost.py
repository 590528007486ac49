"""Start-up: analyze of a one-pod fixture took 12x kubectl version --client: every pattern
regex compiled at load, every report writer, rich and typer's pydantic imported for -o
json. What a command does not use is neither imported nor compiled; counted here, never
timed (bench/scale.py times it)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import regex

from tests.conftest import FIXTURES, ROOT
from triage.rules.language import (
    EventLeaf,
    FactLeaf,
    FieldLeaf,
    LogLeaf,
    MetricLeaf,
    Pattern,
    RootCauseLeaf,
    walk,
)
from triage.rules.loader import REGEX_FLAGS, load_patterns
from triage.speed.lazyregex import LazyRegex

# Modules analyze -o json has no use for: other commands' implementations (lint, watch,
# the live collector with the kubernetes client), the other writers (the HTML page and
# its charts, the table's rich), pydantic (typer 0.29 and later import it to coerce every
# parameter: pyproject.toml keeps typer below 0.29 for that reason), the archive modules
# (a fixture is a directory).
NOT_FOR_ANALYZE = (
    "kubernetes", "urllib3", "httpx", "prometheus_client", "pydantic", "pydantic_core", "rich",
    "tarfile", "gzip", "zipfile",
    "triage.collect.live", "triage.collect.prometheus", "triage.lint.manifests",
    "triage.lint.sourcemap", "triage.writers.html", "triage.writers.svg", "triage.writers.table",
    "triage.writers.markdown", "triage.lint.report", "triage.lint.writers",
    "triage.watch", "triage.clusters.scan",
)

_PROBE = """
import json, runpy, sys
import regex
compiled = []
real = regex.compile
def counted(*args, **kw):
    compiled.append(str(args[0])[:80])
    return real(*args, **kw)
regex.compile = counted
out = sys.argv[1]
sys.argv = ["vllm-triage", *sys.argv[2:]]
try:
    runpy.run_module("triage.cli", run_name="__main__")
except SystemExit:
    pass
with open(out, "w") as fh:
    json.dump({"modules": sorted(sys.modules), "compiled": compiled}, fh)
"""


def _imported(tmp_path: Path, *args: str) -> dict[str, list[str]]:
    out = tmp_path / "probe.json"
    env = {"HOME": os.environ["HOME"], "NO_COLOR": "1", "PATH": "/usr/bin:/bin"}  # the run's
    subprocess.run([sys.executable, "-c", _PROBE, str(out), *args], cwd=str(ROOT), env=env,
                   check=True, timeout=120, stdout=subprocess.DEVNULL)
    probe: dict[str, list[str]] = json.loads(out.read_text())
    return probe


def test_why_analyze_imports_only_what_it_uses(tmp_path: Path) -> None:
    """Before: analyze -o json imported every writer (the HTML page's among them), rich,
    typer's pydantic adapters (with importlib.metadata's entry points) and compiled 324
    regexes, 173 of them the pattern files' at load."""
    report = tmp_path / "report.json"
    probe = _imported(tmp_path, "analyze", str(FIXTURES / "cuda-oom"), "-o", "json",
                      "--output-file", str(report), "-q")
    assert json.loads(report.read_text())["pods"]  # it did run
    loaded = [m for m in probe["modules"]
              if any(m == bad or m.startswith(bad + ".") for bad in NOT_FOR_ANALYZE)]
    assert loaded == [], loaded
    # 352 with typer 0.29 and its pydantic; with typer 0.28: its own copy of click (31
    # modules), the tree's package faces (speed, kube, vllm, ...), the log engine, results
    # and snapshot split by section, the scopes (facts' contexts and registry, the causes)
    # and the report's parts (about 0.1 ms of import each, the code the same)
    assert len(probe["modules"]) <= 290, len(probe["modules"])
    # The pattern files' regexes compile on first use (after the log prefilter); a few
    # dozen run on this pod, not the few hundred the files hold.
    shipped = {leaf.pattern for p in load_patterns().patterns for leaf in _regexes(p)}
    compiled = [c for c in probe["compiled"] if c in {s[:80] for s in shipped}]
    assert len(compiled) < len(shipped) / 4, (len(compiled), len(shipped))


def test_scan_imports_no_writer_it_does_not_write(tmp_path: Path) -> None:
    """--help of scan and patterns run without the collector, the patterns or a writer."""
    probe = _imported(tmp_path, "scan", "--help")
    assert not [m for m in probe["modules"] if m.startswith(("kubernetes", "pydantic",
                                                            "triage.pipeline",
                                                            "triage.report."))]


def _regexes(p: Pattern) -> list[Any]:
    """Every regex of a pattern: its log leaves', events', root-cause skips', comparisons'."""
    conds = [p.when, *p.show, *(c for c in (p.warn_when, p.escalate.when if p.escalate
                                             else None) if c is not None),
             *(case.when for case in p.fix if case.when is not None)]
    out: list[Any] = []
    for cond in conds:
        for leaf in walk(cond, into_not=True):
            if isinstance(leaf, LogLeaf):
                out.append(leaf.regex)
            elif isinstance(leaf, EventLeaf):
                out += [rx for rx in (leaf.reason, leaf.message) if rx is not None]
            elif isinstance(leaf, RootCauseLeaf):
                out += list(leaf.skip)
            elif isinstance(leaf, (FieldLeaf, FactLeaf, MetricLeaf)) and \
                    leaf.comparison is not None and leaf.comparison.op == "regex":
                out.append(leaf.comparison.value)
    return out


def test_every_shipped_regex_compiles_and_its_lazy_flags_are_the_compiled_ones() -> None:
    """Compiled on first use, a shipped regex must still be valid (checked here and by
    `vllm-triage patterns`), and the flags the log engine reads before compiling it
    (its prefilter's case and dot rules) must be what compiling gives."""
    assert not load_patterns(check_builtin=True).errors
    lazy = [rx for p in load_patterns().patterns for rx in _regexes(p)]
    assert lazy and all(isinstance(rx, LazyRegex) for rx in lazy)
    for rx in lazy:
        assert rx.flags == regex.compile(rx.pattern, REGEX_FLAGS).flags, rx.pattern


def test_lazy_regex_flags_match_compiled_ones_with_inline_flags() -> None:
    for pattern in ("abc", "(?i)abc", "x(?s)y", "a(?i:b)c", "(?P<n>x)(?P=n)", r"\(?i\)"):
        lazy = LazyRegex(pattern, REGEX_FLAGS)
        assert lazy.flags == regex.compile(pattern, REGEX_FLAGS).flags, pattern
        assert bool(lazy.search("xABCy")) == bool(regex.compile(pattern, REGEX_FLAGS)
                                                  .search("xABCy"))


def test_a_user_pattern_with_a_bad_regex_is_still_an_error_at_load(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text(
        "id: bad-regex\nseverity: warning\ntitle: t\nstep: 2\nremediation: r\n"
        "when:\n  log:\n    regex: '(unclosed'\n")
    errors = load_patterns([tmp_path]).errors
    assert any("invalid regular expression" in str(e) and "bad.yaml" in str(e)
               for e in errors), errors


def test_importing_the_analysis_compiles_almost_nothing(tmp_path: Path) -> None:
    """Module constants (the facts', selection's, the log engine's fact queries with
    MULTILINE) compile on first use: importing everything analyze needs compiled 180
    patterns before (60 of them Query.__post_init__'s MULTILINE copies), 15 now."""
    code = ("import json, sys, regex\n"
            "n = []\nreal = regex.compile\n"
            "regex.compile = lambda *a, **k: n.append(str(a[0])) or real(*a, **k)\n"
            "import triage.cli, triage.pipeline, triage.collect.bundle\n"
            "print(json.dumps(n))\n")
    env = {"XDG_CACHE_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], cwd=str(ROOT), env=env, check=True,
                         capture_output=True, text=True, timeout=120).stdout
    compiled = json.loads(out)
    assert len(compiled) <= 20, compiled


def test_shipped_fix_expressions_and_examples_are_read_when_used() -> None:
    """A shipped file's fix expressions are parsed when a fix is computed with them and
    its whole-rule examples read when asked for (``patterns --test``, the tests): before,
    every load parsed 173 expressions and 480 examples a triage never uses. Read, they
    are what a checked load gives."""
    from triage.fixes.language import LazyExpression
    from triage.rules.language import Deferred

    lazy, checked = load_patterns().by_id(), load_patterns(check_builtin=True).by_id()
    exprs = [e for p in lazy.values() for case in p.fix for _, e in case.values]
    assert exprs and all(isinstance(e, LazyExpression) and e._parsed is None for e in exprs)
    assert all(isinstance(p.examples, Deferred) and p.examples._read is not None
               for p in lazy.values())
    for pid, p in lazy.items():
        assert tuple(p.examples) == tuple(checked[pid].examples), pid
        def said(e: Any) -> tuple[str, str, frozenset[str]]:
            return str(e.text), ast.dump(e.tree), e.names

        assert [[(n, said(e.parsed())) for n, e in c.values] for c in p.fix] == \
            [[(n, said(e)) for n, e in c.values] for c in checked[pid].fix], pid
