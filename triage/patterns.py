"""Finding patterns: data files under ``patterns/``, loaded and checked here.

A pattern file names a finding (id, severity, title, checklist step,
remediation) and a condition over what was collected. Conditions are a small
tree: ``any`` / ``all`` / ``not`` over leaves, one leaf kind per kind of
evidence (``log``, ``container``, ``pod``, ``event``, ``node``, ``fact``,
``metric``, ``root_cause``). This module only turns YAML into validated
objects; ``triage.classify`` evaluates them.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import regex
import yaml

SEVERITIES = ("critical", "warning", "info")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL", "NONE")
# By default a log leaf ignores lines that vLLM itself logged at INFO/DEBUG:
# advisory lines ("If out-of-memory error occurs during cudagraph capture")
# and argument dumps are not crashes.
DEFAULT_LOG_LEVELS = ("WARNING", "ERROR", "CRITICAL", "NONE")
STREAMS = ("current", "previous", "any")
COMPARISONS = ("equals", "not_equals", "in", "not_in", "regex", "gte", "lte", "exists")
EVENT_ABOUT = ("pod", "owner", "any")
REGEX_FLAGS = regex.VERSION1 | regex.MULTILINE
# libyaml's loader when PyYAML was built with it: loading every pattern file
# is most of a small scan's start-up otherwise.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class PatternError(ValueError):
    """A pattern file is malformed; the message names the file and the field."""

    def __init__(self, source: str, where: str, problem: str) -> None:
        super().__init__(f"{source}: {where}: {problem}")
        self.source = source
        self.where = where
        self.problem = problem


@dataclass(frozen=True)
class Comparison:
    op: str
    value: Any


@dataclass(frozen=True)
class LogLeaf:
    regex: Any  # compiled regex.Pattern
    stream: str = "any"
    levels: tuple[str, ...] = DEFAULT_LOG_LEVELS
    tail: int | None = None  # only the last N lines of the stream
    context: int = 1


@dataclass(frozen=True)
class FieldLeaf:
    scope: str  # "container" | "pod" | "node"
    field: str
    comparison: Comparison


@dataclass(frozen=True)
class EventLeaf:
    reason: Any | None
    message: Any | None
    type: str | None
    about: str = "pod"


@dataclass(frozen=True)
class NodeConditionLeaf:
    condition: str
    status: str = "True"


@dataclass(frozen=True)
class FactLeaf:
    name: str
    comparison: Comparison


@dataclass(frozen=True)
class MetricLeaf:
    name: str  # a derived metric, see triage.metrics.DERIVED
    comparison: Comparison


@dataclass(frozen=True)
class RootCauseLeaf:
    """Always true when a log exists: shows the last error that is not a wrapper."""

    skip: tuple[Any, ...]
    lines: int = 8


@dataclass(frozen=True)
class AnyOf:
    children: tuple[Condition, ...]


@dataclass(frozen=True)
class AllOf:
    children: tuple[Condition, ...]


@dataclass(frozen=True)
class Not:
    child: Condition


Condition = (
    AnyOf | AllOf | Not | LogLeaf | FieldLeaf | EventLeaf | NodeConditionLeaf | FactLeaf
    | MetricLeaf | RootCauseLeaf
)


@dataclass(frozen=True)
class Pattern:
    id: str
    severity: str
    title: str
    step: int
    remediation: str
    when: Condition
    source: str
    summary: str = ""
    show: tuple[Condition, ...] = ()
    fallback: bool = False
    # Findings this one stands back for: when any of them is found for the
    # same pod, this one is dropped (a more specific explanation won).
    yields_to: tuple[str, ...] = ()
    examples_match: tuple[str, ...] = ()
    examples_no_match: tuple[str, ...] = ()
    references: tuple[str, ...] = field(default_factory=tuple)


_ID = regex.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_TOP_KEYS = {
    "id", "severity", "title", "step", "remediation", "when", "summary", "show", "fallback",
    "yields_to", "examples", "references",
}


class _Reader:
    """Validates one file, keeping the path of the field being read for errors."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, problem: str) -> PatternError:
        return PatternError(self.source, where, problem)

    def string(self, data: dict[str, Any], key: str, where: str, required: bool = True) -> str:
        value = data.get(key)
        if value is None:
            if required:
                raise self.fail(f"{where}{key}", "missing")
            return ""
        if not isinstance(value, str) or not value.strip():
            raise self.fail(f"{where}{key}", f"must be a non-empty string, got {value!r}")
        return value

    def compile(self, pattern: Any, where: str) -> Any:
        if not isinstance(pattern, str) or not pattern:
            raise self.fail(where, f"must be a regular expression string, got {pattern!r}")
        try:
            return regex.compile(pattern, REGEX_FLAGS)
        except regex.error as exc:
            raise self.fail(where, f"invalid regular expression: {exc}") from None

    def comparison(self, data: dict[str, Any], where: str, allowed_extra: set[str]) -> Comparison:
        ops = [k for k in data if k in COMPARISONS]
        unknown = set(data) - set(COMPARISONS) - allowed_extra
        if unknown:
            raise self.fail(f"{where}.{sorted(unknown)[0]}", f"unknown key; expected one of "
                            f"{', '.join(COMPARISONS)}")
        if len(ops) != 1:
            raise self.fail(where, f"needs exactly one of {', '.join(COMPARISONS)}")
        op = ops[0]
        value = data[op]
        if op == "regex":
            value = self.compile(value, f"{where}.regex")
        elif op in ("in", "not_in") and not isinstance(value, list):
            raise self.fail(f"{where}.{op}", "must be a list")
        elif op in ("gte", "lte") and not isinstance(value, (int, float)):
            raise self.fail(f"{where}.{op}", "must be a number")
        elif op == "exists" and not isinstance(value, bool):
            raise self.fail(f"{where}.{op}", "must be true or false")
        return Comparison(op, value)

    def condition(self, data: Any, where: str) -> Condition:
        if not isinstance(data, dict) or len(data) != 1:
            raise self.fail(where, "a condition is a mapping with exactly one key "
                            "(any, all, not, log, container, pod, event, node, fact, metric, "
                            "root_cause)")
        ((kind, body),) = data.items()
        at = f"{where}.{kind}"
        if kind in ("any", "all"):
            if not isinstance(body, list) or not body:
                raise self.fail(at, "must be a non-empty list of conditions")
            children = tuple(self.condition(c, f"{at}[{i}]") for i, c in enumerate(body))
            return AnyOf(children) if kind == "any" else AllOf(children)
        if kind == "not":
            return Not(self.condition(body, at))
        if not isinstance(body, dict):
            raise self.fail(at, "must be a mapping")
        if kind == "log":
            return self.log_leaf(body, at)
        if kind in ("container", "pod"):
            fld = self.string(body, "field", f"{at}.")
            return FieldLeaf(kind, fld, self.comparison(body, at, {"field"}))
        if kind == "event":
            unknown = set(body) - {"reason", "message", "type", "about"}
            if unknown:
                raise self.fail(f"{at}.{sorted(unknown)[0]}", "unknown key")
            if "reason" not in body and "message" not in body:
                raise self.fail(at, "needs reason or message")
            about = body.get("about", "pod")
            if about not in EVENT_ABOUT:
                raise self.fail(f"{at}.about", f"must be one of {', '.join(EVENT_ABOUT)}")
            return EventLeaf(
                reason=self.compile(body["reason"], f"{at}.reason") if "reason" in body else None,
                message=self.compile(body["message"], f"{at}.message")
                if "message" in body else None,
                type=body.get("type"),
                about=about,
            )
        if kind == "node":
            if "condition" in body:
                unknown = set(body) - {"condition", "status"}
                if unknown:
                    raise self.fail(f"{at}.{sorted(unknown)[0]}", "unknown key")
                return NodeConditionLeaf(str(body["condition"]), str(body.get("status", "True")))
            fld = self.string(body, "field", f"{at}.")
            return FieldLeaf("node", fld, self.comparison(body, at, {"field"}))
        if kind == "fact":
            name = self.string(body, "name", f"{at}.")
            return FactLeaf(name, self.comparison(body, at, {"name"}))
        if kind == "metric":
            name = self.string(body, "name", f"{at}.")
            return MetricLeaf(name, self.comparison(body, at, {"name"}))
        if kind == "root_cause":
            skip = body.get("skip", [])
            if not isinstance(skip, list):
                raise self.fail(f"{at}.skip", "must be a list of regular expressions")
            lines = body.get("lines", 8)
            if not isinstance(lines, int) or lines < 1:
                raise self.fail(f"{at}.lines", "must be a positive integer")
            return RootCauseLeaf(
                tuple(self.compile(s, f"{at}.skip[{i}]") for i, s in enumerate(skip)), lines
            )
        raise self.fail(at, "unknown condition kind")

    def log_leaf(self, body: dict[str, Any], at: str) -> LogLeaf:
        unknown = set(body) - {"regex", "stream", "levels", "tail", "context"}
        if unknown:
            raise self.fail(f"{at}.{sorted(unknown)[0]}", "unknown key")
        stream = body.get("stream", "any")
        if stream not in STREAMS:
            raise self.fail(f"{at}.stream", f"must be one of {', '.join(STREAMS)}")
        levels_raw = body.get("levels", list(DEFAULT_LOG_LEVELS))
        if levels_raw == "any":
            levels = LOG_LEVELS
        elif isinstance(levels_raw, list) and all(lv in LOG_LEVELS for lv in levels_raw):
            levels = tuple(levels_raw)
        else:
            raise self.fail(f"{at}.levels", f"must be 'any' or a list of {', '.join(LOG_LEVELS)}")
        tail = body.get("tail")
        if tail is not None and (not isinstance(tail, int) or tail < 1):
            raise self.fail(f"{at}.tail", "must be a positive integer")
        context = body.get("context", 1)
        if not isinstance(context, int) or not 0 <= context <= 10:
            raise self.fail(f"{at}.context", "must be an integer from 0 to 10")
        return LogLeaf(
            regex=self.compile(body.get("regex"), f"{at}.regex"),
            stream=stream, levels=levels, tail=tail, context=context,
        )

    def pattern(self, data: Any) -> Pattern:
        if not isinstance(data, dict):
            raise self.fail("(top)", "a pattern file holds one mapping")
        unknown = set(data) - _TOP_KEYS
        if unknown:
            raise self.fail(sorted(unknown)[0], "unknown field")
        pid = self.string(data, "id", "")
        if not _ID.match(pid):
            raise self.fail("id", f"must be lower-case words joined by '-', got {pid!r}")
        severity = self.string(data, "severity", "")
        if severity not in SEVERITIES:
            raise self.fail("severity", f"must be one of {', '.join(SEVERITIES)}")
        step = data.get("step")
        if not isinstance(step, int) or not 1 <= step <= 10:
            raise self.fail("step", f"must be a checklist step from 1 to 10, got {step!r}")
        if "when" not in data:
            raise self.fail("when", "missing")
        show_raw = data.get("show", [])
        if not isinstance(show_raw, list):
            raise self.fail("show", "must be a list of conditions")
        examples = data.get("examples", {}) or {}
        if not isinstance(examples, dict) or set(examples) - {"match", "no_match"}:
            raise self.fail("examples", "must be a mapping with match and no_match lists")
        ex_match = examples.get("match", []) or []
        ex_no = examples.get("no_match", []) or []
        for key, lst in (("match", ex_match), ("no_match", ex_no)):
            if not isinstance(lst, list) or not all(isinstance(x, str) for x in lst):
                raise self.fail(f"examples.{key}", "must be a list of log lines")
        yields = data.get("yields_to", [])
        if not isinstance(yields, list) or not all(isinstance(x, str) for x in yields):
            raise self.fail("yields_to", "must be a list of finding ids")
        refs = data.get("references", [])
        if not isinstance(refs, list):
            raise self.fail("references", "must be a list")
        return Pattern(
            id=pid,
            severity=severity,
            title=self.string(data, "title", ""),
            step=step,
            remediation=self.string(data, "remediation", "").strip(),
            summary=self.string(data, "summary", "", required=False).strip(),
            when=self.condition(data["when"], "when"),
            show=tuple(self.condition(c, f"show[{i}]") for i, c in enumerate(show_raw)),
            fallback=bool(data.get("fallback", False)),
            yields_to=tuple(yields),
            examples_match=tuple(ex_match),
            examples_no_match=tuple(ex_no),
            references=tuple(str(r) for r in refs),
            source=self.source,
        )


def parse_pattern(text: str, source: str) -> Pattern:
    reader = _Reader(source)
    try:
        data = yaml.load(text, Loader=_YAML_LOADER)  # a SafeLoader: no arbitrary objects
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "(file)"
        problem = getattr(exc, "problem", exc)
        raise PatternError(source, where, f"not valid YAML: {problem}") from None
    return reader.pattern(data)


def builtin_dir() -> Path:
    """The shipped patterns: the installed triage.builtin_patterns package, or the source tree."""
    # A data-only namespace package: find_spec knows where it lives, in a wheel
    # and in an editable install alike.
    try:
        spec = importlib.util.find_spec("triage.builtin_patterns")
    except (ImportError, ValueError):
        spec = None
    for location in (spec.submodule_search_locations or []) if spec else []:
        path = Path(location)
        if any(path.glob("*.yaml")):
            return path
    return Path(__file__).resolve().parent.parent / "patterns"


@dataclass
class PatternSet:
    patterns: list[Pattern]
    errors: list[PatternError]


def load_patterns(extra_dirs: Iterable[Path] = ()) -> PatternSet:
    """Load the built-in patterns and any extra directories.

    A file that fails to parse is reported and skipped; the rest still run.
    A later file with the same id replaces an earlier one, so a team can
    override a shipped pattern from its own directory.
    """
    by_id: dict[str, Pattern] = {}
    errors: list[PatternError] = []
    for directory in (builtin_dir(), *extra_dirs):
        if not directory.is_dir():
            errors.append(PatternError(str(directory), "(directory)", "not a directory"))
            continue
        for path in sorted(directory.glob("*.y*ml")):
            try:
                text = path.read_text(encoding="utf-8")
                pattern = parse_pattern(text, _display(path))
            except PatternError as exc:
                errors.append(exc)
                continue
            except (OSError, UnicodeDecodeError) as exc:
                errors.append(PatternError(_display(path), "(file)", f"unreadable: {exc}"))
                continue
            by_id[pattern.id] = pattern
    return PatternSet(sorted(by_id.values(), key=lambda p: (p.step, p.id)), errors)


def _display(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)
