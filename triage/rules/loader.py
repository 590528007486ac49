"""Pattern files: YAML under ``patterns/``, loaded and checked here.

Every name a pattern uses is checked when it is loaded: facts against
``triage.facts.REGISTRY``, metrics against ``triage.vllm.metrics.METRICS``, API
fields against ``triage.rules.fields.SCHEMA``, and finding ids against the
other patterns. A mistake is a ``PatternError`` naming the file and the
field path (``when.any[2].fact.name``); that pattern is skipped and the
others still run.
"""

from __future__ import annotations

import fnmatch
import functools
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import regex
import yaml

from triage.facts import REGISTRY as FACTS
from triage.facts import SCOPES
from triage.fixes.language import (
    FixCase,
    FixLanguageError,
    LazyExpression,
    PatchSpec,
    parse_expression,
    template_names,
    value_names,
)
from triage.results import Severity, Verdict
from triage.rules.fields import check_path, parse_path
from triage.rules.language import (
    CAUSE_GROUPS,
    COMPARISONS,
    DEFAULT_LOG_LEVELS,
    EVENT_ABOUT,
    LOG_LEVELS,
    NUMERIC_OPS,
    PATTERN_SCOPES,
    STREAMS,
    AllOf,
    AnyOf,
    CauseExample,
    CausePattern,
    CauseSide,
    Comparison,
    Condition,
    Deferred,
    Escalation,
    EventLeaf,
    Example,
    FactLeaf,
    FieldLeaf,
    FindingLeaf,
    LogLeaf,
    MetricLeaf,
    NodeConditionLeaf,
    Not,
    Pattern,
    RootCauseLeaf,
    walk,
)
from triage.safety import parsed
from triage.speed import lazyregex
from triage.speed.lazyregex import LazyRegex
from triage.vllm.metrics import METRICS
from triage.vllm.wordings import REGEX_FLAGS, WORDINGS_FILE, Wording, shipped_dir
from triage.vllm.wordings import read as read_wordings
from triage.vllm.wordings import shipped as shipped_wordings

# Files beside the patterns that are data, not patterns: each is read by its own reader
# (the wordings by triage.vllm.wordings; checklist.yaml: the steps' titles and settings).
CHECKLIST_FILE = "checklist.yaml"
DATA_FILES = (WORDINGS_FILE, CHECKLIST_FILE)
# libyaml's loader when PyYAML was built with it: loading every pattern file
# is most of a small scan's start-up otherwise.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_LEAF_KINDS = ("any", "all", "not", "log", "container", "pod", "event", "node", "fact",
               "metric", "finding", "root_cause")


class PatternError(ValueError):
    """A pattern file is malformed; the message names the file and the field."""

    def __init__(self, source: str, where: str, problem: str) -> None:
        super().__init__(f"{source}: {where}: {problem}")
        self.source = source
        self.where = where
        self.problem = problem


_ID = lazyregex.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_VALUE_NAME = lazyregex.compile(r"^[a-z][a-z0-9_]*$")
# Names every fix may use besides facts, metrics and its own values: where it is.
FIX_CONTEXT = ("namespace", "pod", "container", "node", "workload", "workload_kind",
               "workload_name")
_TOP_KEYS = {
    "id", "severity", "title", "step", "remediation", "when", "summary", "show", "fallback",
    "yields_to", "escalate", "examples", "references", "warn_when", "fix", "answers_step",
    "explained_by", "scope",
}
_CAUSE_KEYS = {"id", "scope", "title", "summary", "cause", "references", "examples"}
_SAYS_KEYS = {"values", "if", "text"}
_CAUSE_EXAMPLE_KEYS = {"name", "reports", "pods", "nodes", "says"}
_EXAMPLE_POD_KEYS = {"name", "workload", "node", "gpus", "phase", "state", "restarts",
                     "findings", "facts"}
# The leaves a pattern of each scope may use: what that scope's context can answer.
_SCOPE_LEAVES = {
    "pod": ("any", "all", "not", "pod", "node", "event", "fact", "metric", "finding"),
    "workload": ("any", "all", "not", "fact"),
    "node": ("any", "all", "not", "node", "fact"),
}
# The fact scopes each pattern scope reads: its own and the ones around it.
_SCOPE_FACTS = {
    "container": SCOPES,
    "pod": ("pod", "node", "workload", "cluster"),
    "workload": ("workload", "cluster"),
    "node": ("node", "cluster"),
    "cluster": ("pod", "node", "workload", "cluster"),
}

_FIX_KEYS = {"when", "values", "if", "text", "patch", "commands"}
_PATCH_KEYS = {"target", "args", "container", "pod", "spec"}
_PATCH_TARGETS = ("workload", "autoscaler", "claim")
_EXAMPLE_KEYS = {"name", "reports", "log", "previous_log", "status", "pod", "container",
                 "events", "node", "objects", "facts", "metrics", "findings", "unread",
                 "severity"}
_UNREAD_KINDS = ("logs", "events", "metrics", "nodes", "configmaps", "services",
                 "replicasets", "deployments", "statefulsets", "horizontalpodautoscalers",
                 "inferenceservices", "persistentvolumeclaims", "nodeevents",
                 "endpointslices", "scaledobjects", "inferencepools", "llminferenceservices",
                 "pickerpods")


class _Reader:
    """Validates one file, keeping the path of the field being read for errors."""

    def __init__(self, source: str, lazy: bool = False,
                 wordings: Mapping[str, Wording] | None = None) -> None:
        self.source = source
        self.lazy = lazy  # a shipped file, checked when the tool is tested: compiled on use
        # What a log leaf may name instead of writing a regex (`log: {wording: NAME}`).
        self.wordings = wordings if wordings is not None else shipped_wordings()

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
        if self.lazy:
            return LazyRegex(pattern, REGEX_FLAGS)
        try:
            return regex.compile(pattern, REGEX_FLAGS)
        except regex.error as exc:
            raise self.fail(where, f"invalid regular expression: {exc}") from None

    def comparison(self, data: dict[str, Any], where: str, allowed_extra: set[str],
                   display_ok: bool) -> Comparison | None:
        unknown = set(data) - set(COMPARISONS) - allowed_extra
        if unknown:
            raise self.fail(f"{where}.{sorted(unknown)[0]}", "unknown key; expected one of "
                            f"{', '.join(COMPARISONS)}")
        ops = [k for k in data if k in COMPARISONS]
        if not ops:
            if display_ok:
                return None
            raise self.fail(where, f"needs one of {', '.join(COMPARISONS)} (a leaf without a "
                            "comparison only displays a value, under show)")
        if len(ops) != 1:
            raise self.fail(where, f"needs exactly one of {', '.join(COMPARISONS)}")
        op = ops[0]
        value = data[op]
        at = f"{where}.{op}"
        if op == "regex":
            return Comparison(op, self.compile(value, at))
        if op in ("in", "not_in"):
            if not isinstance(value, list):
                raise self.fail(at, "must be a list")
            return Comparison(op, tuple(value))
        if op == "exists":
            if not isinstance(value, bool):
                raise self.fail(at, "must be true or false")
            return Comparison(op, value)
        if op == "between":
            if (not isinstance(value, list) or len(value) != 2
                    or not all(_is_number(v) for v in value) or value[0] > value[1]):
                raise self.fail(at, "must be [low, high], two numbers, low <= high")
            return Comparison(op, (float(value[0]), float(value[1])))
        if op in NUMERIC_OPS:
            if isinstance(value, dict):
                if "fact" not in value or set(value) - {"fact", "times", "plus"} \
                        or not isinstance(value["fact"], str):
                    raise self.fail(at, "must be a number or {fact: NAME} (optionally with "
                                    "times: K and plus: C, an estimate's rule)")
                for key in ("times", "plus"):
                    if key in value and not _is_number(value[key]):
                        raise self.fail(f"{at}.{key}", "must be a number")
                self.fact_name(value["fact"], f"{at}.fact")
                return Comparison(op, None, fact_ref=value["fact"],
                                  times=float(value.get("times", 1.0)),
                                  plus=float(value.get("plus", 0.0)))
            if not _is_number(value):
                raise self.fail(at, "must be a number or {fact: NAME}")
            return Comparison(op, float(value))
        return Comparison(op, value)

    def fact_name(self, name: Any, where: str) -> str:
        if not isinstance(name, str) or name not in FACTS:
            raise self.fail(where, f"unknown fact {name!r}; `vllm-triage patterns --facts` "
                            "lists them")
        return name

    def metric_name(self, name: Any, where: str) -> str:
        if not isinstance(name, str) or name not in METRICS:
            raise self.fail(where, f"unknown metric {name!r}; `vllm-triage patterns --facts` "
                            "lists them")
        return name

    def field_leaf(self, scope: str, body: dict[str, Any], at: str,
                   display_ok: bool) -> FieldLeaf:
        text = self.string(body, "field", f"{at}.")
        path = parse_path(text)
        if path is None:
            raise self.fail(f"{at}.field", f"{text!r} is not a dotted path (write keys that "
                            "hold dots in brackets: metadata.labels[\"nvidia.com/gpu.product\"])")
        problem = check_path(scope, path)
        if problem:
            raise self.fail(f"{at}.field", problem)
        return FieldLeaf(scope, text, path, self.comparison(body, at, {"field"}, display_ok))

    def condition(self, data: Any, where: str, display_ok: bool = False) -> Condition:
        if not isinstance(data, dict) or len(data) != 1:
            raise self.fail(where, "a condition is a mapping with exactly one key ("
                            + ", ".join(_LEAF_KINDS) + ")")
        ((kind, body),) = data.items()
        at = f"{where}.{kind}"
        if kind in ("any", "all"):
            if not isinstance(body, list) or not body:
                raise self.fail(at, "must be a non-empty list of conditions")
            children = tuple(self.condition(c, f"{at}[{i}]", display_ok)
                             for i, c in enumerate(body))
            return AnyOf(children) if kind == "any" else AllOf(children)
        if kind == "not":
            return Not(self.condition(body, at))
        if kind == "finding" and isinstance(body, dict):
            levels = [s.value for s in Severity]
            if set(body) != {"severity"} or body["severity"] not in levels:
                raise self.fail(at, "must be a finding id, a list of them, or {severity: "
                                "LEVEL} (any finding of at least LEVEL), LEVEL one of "
                                + ", ".join(levels))
            return FindingLeaf((), Severity(body["severity"]))
        if kind == "finding":
            ids = [body] if isinstance(body, str) else body
            if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
                raise self.fail(at, "must be a finding id or a list of them")
            return FindingLeaf(tuple(ids))
        if kind in ("fact", "metric") and isinstance(body, str):
            body = {"name": body}  # `fact: NAME` displays the fact
        if not isinstance(body, dict):
            raise self.fail(at, "must be a mapping")
        if kind == "log":
            return self.log_leaf(body, at)
        if kind in ("container", "pod"):
            return self.field_leaf(kind, body, at, display_ok)
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
            return self.field_leaf("node", body, at, display_ok)
        if kind == "fact":
            name = self.fact_name(body.get("name"), f"{at}.name")
            return FactLeaf(name, self.comparison(body, at, {"name"}, display_ok))
        if kind == "metric":
            name = self.metric_name(body.get("name"), f"{at}.name")
            return MetricLeaf(name, self.comparison(body, at, {"name"}, display_ok))
        if kind == "root_cause":
            if not display_ok:
                raise self.fail(at, "root_cause only displays evidence: use it under show")
            skip = body.get("skip", [])
            if not isinstance(skip, list):
                raise self.fail(f"{at}.skip", "must be a list of regular expressions")
            lines = body.get("lines", 8)
            if not isinstance(lines, int) or lines < 1:
                raise self.fail(f"{at}.lines", "must be a positive integer")
            return RootCauseLeaf(
                tuple(self.compile(s, f"{at}.skip[{i}]") for i, s in enumerate(skip)), lines
            )
        raise self.fail(at, "unknown condition kind; expected one of " + ", ".join(_LEAF_KINDS))

    def scoped(self, cond: Condition, scope: str, where: str) -> Condition:
        """``cond`` if a pattern of ``scope`` can evaluate it: only the leaves and the facts
        that scope's context answers (a node pattern reads no log)."""
        leaves = _SCOPE_LEAVES.get(scope)
        kinds = {AnyOf: "any", AllOf: "all", Not: "not", LogLeaf: "log", EventLeaf: "event",
                 NodeConditionLeaf: "node", FactLeaf: "fact", MetricLeaf: "metric",
                 FindingLeaf: "finding", RootCauseLeaf: "root_cause"}
        for leaf in walk(cond, into_not=True):
            kind = leaf.scope if isinstance(leaf, FieldLeaf) else kinds[type(leaf)]
            if leaves is not None and kind not in leaves:
                raise self.fail(where, f"a {scope} pattern cannot use a {kind} leaf (it is "
                                f"evaluated once per {scope}); it may use "
                                + ", ".join(leaves))
            if isinstance(leaf, FactLeaf):
                for name in (leaf.name, leaf.comparison.fact_ref if leaf.comparison else None):
                    if name and FACTS[name].scope not in _SCOPE_FACTS[scope]:
                        raise self.fail(where, f"fact {name} is about a {FACTS[name].scope}: "
                                        f"a {scope} pattern reads facts about a "
                                        + " or ".join(_SCOPE_FACTS[scope]))
        return cond

    def log_leaf(self, body: dict[str, Any], at: str) -> LogLeaf:
        unknown = set(body) - {"regex", "wording", "stream", "levels", "tail", "context"}
        if unknown:
            raise self.fail(f"{at}.{sorted(unknown)[0]}", "unknown key")
        text, where = body.get("regex"), f"{at}.regex"
        if "wording" in body:
            where, name = f"{at}.wording", body["wording"]
            if "regex" in body:
                raise self.fail(where, "give regex or wording, not both")
            if not isinstance(name, str) or name not in self.wordings:
                raise self.fail(where, f"unknown wording {name!r}; patterns/{WORDINGS_FILE} "
                                "lists them")
            text = self.wordings[name].regex
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
            regex=self.compile(text, where),
            stream=stream, levels=levels, tail=tail, context=context,
        )

    def escalation(self, data: Any) -> Escalation | None:
        if data is None:
            return None
        if not isinstance(data, dict) or set(data) - {"when", "verdict", "note"}:
            raise self.fail("escalate", "must be a mapping with when, verdict and note")
        verdict = data.get("verdict")
        if verdict not in ("fail", "warn"):
            raise self.fail("escalate.verdict", "must be fail or warn")
        if "when" not in data:
            raise self.fail("escalate.when", "missing")
        return Escalation(self.condition(data["when"], "escalate.when"), Verdict(verdict),
                          self.string(data, "note", "escalate."))

    def fix(self, data: Any, key: str = "fix", names: set[str] | None = None,
            keys: set[str] = _FIX_KEYS) -> tuple[FixCase, ...]:
        """``fix:``: one case (a mapping) or a list of cases, tried in order. ``key``,
        ``names`` and ``keys``: another list of cases (a cause's ``says``), the names its
        expressions may use and the keys a case may have."""
        if data is None:
            return ()
        cases = data if isinstance(data, list) else [data]
        out: list[FixCase] = []
        for i, case in enumerate(cases):
            at = f"{key}[{i}]" if isinstance(data, list) else key
            if not isinstance(case, dict):
                raise self.fail(at, "must be a mapping with text, and " + ", ".join(
                    sorted(keys - {"text"})))
            unknown = set(case) - keys
            if unknown:
                raise self.fail(f"{at}.{sorted(unknown)[0]}", "unknown key; expected one of "
                                + ", ".join(sorted(keys)))
            known = set(names) if names is not None else \
                set(FACTS) | set(METRICS) | set(FIX_CONTEXT)
            values: list[tuple[str, Any]] = []
            raw_values = case.get("values") or {}
            if not isinstance(raw_values, dict):
                raise self.fail(f"{at}.values", "must be a mapping of name: expression")
            for name, text in raw_values.items():
                where = f"{at}.values.{name}"
                if not isinstance(name, str) or not _VALUE_NAME.match(name):
                    raise self.fail(where, "a value name is lower_case_with_underscores")
                if self.lazy:  # a shipped file: parsed when first computed, checked by tests
                    values.append((name, LazyExpression(text)))
                    known.add(name)
                    continue
                try:
                    expr = parse_expression(text)
                except FixLanguageError as exc:
                    raise self.fail(where, str(exc)) from None
                self._check_names(expr.names, known, where)
                values.append((name, expr))
                known.add(name)
            check: Any = None
            if "if" in case and self.lazy:
                check = LazyExpression(case["if"])
            elif "if" in case:
                try:
                    check = parse_expression(case["if"])
                except FixLanguageError as exc:
                    raise self.fail(f"{at}.if", str(exc)) from None
                self._check_names(check.names, known, f"{at}.if")
            text = self.string(case, "text", f"{at}.")
            try:
                if not self.lazy:
                    self._check_names(template_names(text), known, f"{at}.text")
                patch = self.patch(case.get("patch"), f"{at}.patch", known)
                commands = case.get("commands") or []
                if not isinstance(commands, list) or not all(
                        isinstance(c, str) for c in commands):
                    raise self.fail(f"{at}.commands", "must be a list of command templates")
                for j, command in enumerate(commands if not self.lazy else ()):
                    self._check_names(template_names(command), known, f"{at}.commands[{j}]")
            except FixLanguageError as exc:
                raise self.fail(at, str(exc)) from None
            when = self.condition(case["when"], f"{at}.when") if "when" in case else None
            out.append(FixCase(text=text.strip(), when=when, values=tuple(values), check=check,
                               patch=patch, commands=tuple(commands)))
        return tuple(out)

    def patch(self, data: Any, at: str, known: set[str]) -> PatchSpec | None:
        if data is None:
            return None
        if not isinstance(data, dict) or set(data) - _PATCH_KEYS:
            raise self.fail(at, "must be a mapping with target, args, container, pod, spec")
        target = data.get("target", "workload")
        if target not in _PATCH_TARGETS:
            raise self.fail(f"{at}.target", "must be one of " + ", ".join(_PATCH_TARGETS))
        parts: dict[str, dict[str, Any]] = {}
        for key in ("args", "container", "pod", "spec"):
            part = data.get(key) or {}
            if not isinstance(part, dict):
                raise self.fail(f"{at}.{key}", "must be a mapping")
            if not self.lazy:
                self._check_names(value_names(part), known, f"{at}.{key}")
            parts[key] = part
        if target != "workload" and (parts["args"] or parts["container"] or parts["pod"]):
            raise self.fail(at, f"a patch of the {target} changes only its spec")
        return PatchSpec(target=target, **parts)

    def _check_names(self, names: Iterable[str], known: set[str], where: str) -> None:
        for name in sorted(names):
            if name not in known:
                raise self.fail(where, f"unknown name {name!r}: not a fact, a metric, an "
                                "earlier value or one of " + ", ".join(FIX_CONTEXT))

    def examples(self, data: Any) -> tuple[Example, ...]:
        if data is None:
            return ()
        if not isinstance(data, list):
            raise self.fail("examples", "must be a list of whole-rule examples (each a small "
                            "snapshot with reports: true or false); see patterns/README.md")
        out: list[Example] = []
        for i, case in enumerate(data):
            at = f"examples[{i}]"
            if not isinstance(case, dict):
                raise self.fail(at, "must be a mapping")
            unknown = set(case) - _EXAMPLE_KEYS
            if unknown:
                raise self.fail(f"{at}.{sorted(unknown)[0]}", "unknown key; expected one of "
                                + ", ".join(sorted(_EXAMPLE_KEYS)))
            name = self.string(case, "name", f"{at}.")
            reports = case.get("reports")
            if not isinstance(reports, bool) and reports != "unknown":
                raise self.fail(f"{at}.reports", "must be true (the pattern reports this), "
                                "false (it stays silent) or unknown (it cannot be evaluated)")
            maps = {}
            for key in ("status", "pod", "container", "node", "facts", "metrics", "objects"):
                value = case.get(key) or {}
                if not isinstance(value, dict):
                    raise self.fail(f"{at}.{key}", "must be a mapping")
                maps[key] = value
            for fname in maps["facts"]:
                self.fact_name(fname, f"{at}.facts.{fname}")
            for mname, mvalue in maps["metrics"].items():
                self.metric_name(mname, f"{at}.metrics.{mname}")
                if not _is_number(mvalue):
                    raise self.fail(f"{at}.metrics.{mname}", "must be a number")
            for kind, items in maps["objects"].items():
                if not isinstance(items, list) or not all(isinstance(o, dict) for o in items):
                    raise self.fail(f"{at}.objects.{kind}", "must be a list of API objects")
            events = case.get("events") or []
            if not isinstance(events, list) or not all(isinstance(e, dict) for e in events):
                raise self.fail(f"{at}.events", "must be a list of events (reason, message, "
                                "type, about)")
            findings = case.get("findings") or []
            if not isinstance(findings, list) or not all(isinstance(f, str) for f in findings):
                raise self.fail(f"{at}.findings", "must be a list of finding ids")
            unread = case.get("unread") or []
            if not isinstance(unread, list) or any(k not in _UNREAD_KINDS for k in unread):
                raise self.fail(f"{at}.unread", "must be a list of: " + ", ".join(_UNREAD_KINDS))
            severity = case.get("severity")
            if severity is not None and (reports is not True or severity not in
                                         [s.value for s in Severity]):
                raise self.fail(f"{at}.severity", "with reports: true, one of "
                                + ", ".join(s.value for s in Severity))
            logs: dict[str, list[str | None]] = {}
            for key in ("log", "previous_log"):
                value = case.get(key)
                if value is None:
                    logs[key] = [None]
                elif isinstance(value, str):
                    logs[key] = [value]
                elif isinstance(value, list) and value and all(isinstance(v, str) for v in value):
                    logs[key] = list(value)  # each item is a case of its own
                else:
                    raise self.fail(f"{at}.{key}", "must be a log text, or a list of texts "
                                    "each tried as its own case")
            for log in logs["log"]:
                for previous in logs["previous_log"]:
                    out.append(Example(
                        name=name, reports=reports if isinstance(reports, bool) else None,
                        log=log, previous_log=previous,
                        status=maps["status"], pod=maps["pod"], container=maps["container"],
                        events=tuple(events), node=maps["node"], objects=maps["objects"],
                        facts=maps["facts"], metrics={k: float(v) for k, v in
                                                      maps["metrics"].items()},
                        findings=tuple(findings), unread=tuple(unread),
                        severity=severity))
        return tuple(out)

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
        if severity not in [s.value for s in Severity]:
            raise self.fail("severity", "must be one of "
                            + ", ".join(s.value for s in Severity))
        step = data.get("step")
        if not isinstance(step, int) or isinstance(step, bool) or not 1 <= step <= 10:
            raise self.fail("step", f"must be a checklist step from 1 to 10, got {step!r}")
        scope = data.get("scope", "container")
        if scope not in PATTERN_SCOPES:
            raise self.fail("scope", "must be one of " + ", ".join(PATTERN_SCOPES))
        if scope == "cluster":
            raise self.fail("scope", "a cluster pattern is a cause: it has a cause section "
                            "instead of severity, step, when and remediation")
        answers_step = data.get("answers_step", True)
        if not isinstance(answers_step, bool):
            raise self.fail("answers_step", f"must be true or false, got {answers_step!r}")
        if "when" not in data:
            raise self.fail("when", "missing")
        show_raw = data.get("show", [])
        if not isinstance(show_raw, list):
            raise self.fail("show", "must be a list of conditions")
        yields = data.get("yields_to", [])
        if not isinstance(yields, list) or not all(isinstance(x, str) for x in yields):
            raise self.fail("yields_to", "must be a list of finding ids")
        refs = data.get("references", [])
        if not isinstance(refs, list):
            raise self.fail("references", "must be a list")
        warn_when = None
        if data.get("warn_when") is not None:
            if severity != Severity.CRITICAL.value:
                raise self.fail("warn_when", "only a critical pattern has a milder warning "
                                "form")
            warn_when = self.scoped(self.condition(data["warn_when"], "warn_when"), scope,
                                    "warn_when")
        explained_by = None
        if data.get("explained_by") is not None:
            rule = data["explained_by"]
            levels = [s.value for s in Severity]
            if not isinstance(rule, dict) or set(rule) != {"severity"} or \
                    rule["severity"] not in levels:
                raise self.fail("explained_by", "must be {severity: LEVEL}, LEVEL one of "
                                + ", ".join(levels))
            if data.get("fallback"):
                raise self.fail("explained_by", "a fallback already stands back for every "
                                "critical finding")
            explained_by = Severity(rule["severity"])
        remediation = self.string(data, "remediation", "").strip()
        try:  # the general advice names the pod's real namespace, pod, container, node
            self._check_names(template_names(remediation), set(FACTS) | set(FIX_CONTEXT),
                              "remediation")
        except FixLanguageError as exc:
            raise self.fail("remediation", str(exc)) from None
        return Pattern(
            id=pid,
            severity=Severity(severity),
            title=self.string(data, "title", ""),
            step=step,
            remediation=remediation,
            summary=self.string(data, "summary", "", required=False).strip(),
            when=self.scoped(self.condition(data["when"], "when"), scope, "when"),
            show=tuple(self.scoped(self.condition(c, f"show[{i}]", display_ok=True), scope,
                                   f"show[{i}]") for i, c in enumerate(show_raw)),
            fallback=bool(data.get("fallback", False)),
            yields_to=tuple(yields),
            escalate=self.escalation(data.get("escalate")),
            examples=Deferred(lambda: self.examples(data.get("examples"))) if self.lazy
            else self.examples(data.get("examples")),
            references=tuple(str(r) for r in refs),
            source=self.source,
            warn_when=warn_when,
            explained_by=explained_by,
            fix=self.fix(data.get("fix")),
            answers_step=answers_step,
            scope=scope,
        )

    def cause_pattern(self, data: dict[str, Any]) -> CausePattern:
        """A cluster-scope pattern: a cause that joins pods (see ``CausePattern``)."""
        unknown = set(data) - _CAUSE_KEYS
        if unknown:
            raise self.fail(sorted(unknown)[0], "a cluster pattern is a cause: it has "
                            + ", ".join(sorted(_CAUSE_KEYS)) + ", not a finding's "
                            "severity, step, when and remediation")
        pid = self.string(data, "id", "")
        if not _ID.match(pid):
            raise self.fail("id", f"must be lower-case words joined by '-', got {pid!r}")
        cause = data.get("cause")
        same = cause.get("same", "workload") if isinstance(cause, dict) else "workload"
        keys = {"by", "of", "says"} if same == "workload" else {"same", "by", "says"}
        if same not in CAUSE_GROUPS:
            raise self.fail("cause.same", "must be one of " + ", ".join(CAUSE_GROUPS))
        if not isinstance(cause, dict) or set(cause) - {"same"} != keys - {"same"}:
            raise self.fail("cause", "must be a mapping with by, of and says (or, with same: "
                            "node, by and says: the pods of one node said together)")
        by = self.cause_side(cause["by"], "cause.by")
        of = self.cause_side(cause["of"], "cause.of") if "of" in keys else None
        names = {n for n, spec in FACTS.items() if spec.scope == "cluster"}
        pod_facts = [n for n, spec in FACTS.items() if spec.scope == "pod"]
        for side in ("by", "of") if of is not None else ("by",):
            names |= {f"{side}_workload", f"{side}_workloads", f"{side}_pods",
                      f"{side}_findings", f"{side}_node", f"{side}_pod_names"} | {
                f"{side}_{n}" for n in pod_facts}
        says = self.fix(cause["says"], "cause.says", names, _SAYS_KEYS)
        if not says:
            raise self.fail("cause.says", "must hold at least one sentence")
        refs = data.get("references", [])
        if not isinstance(refs, list):
            raise self.fail("references", "must be a list")
        return CausePattern(
            id=pid, title=self.string(data, "title", ""), by=by, of=of, says=says,
            source=self.source, references=tuple(str(r) for r in refs),
            summary=self.string(data, "summary", "", required=False).strip(),
            examples=Deferred(lambda: self.cause_examples(data.get("examples")))
            if self.lazy else self.cause_examples(data.get("examples")), same=same)

    def cause_side(self, data: Any, where: str) -> CauseSide:
        if not isinstance(data, dict) or set(data) != {"pods", "findings"}:
            raise self.fail(where, "must be a mapping with pods (a condition on each pod) and "
                            "findings (the findings whose cards carry the cause)")
        pods = self.scoped(self.condition(data["pods"], f"{where}.pods"), "pod",
                           f"{where}.pods")
        carried = data["findings"]
        if isinstance(carried, dict):
            levels = [s.value for s in Severity]
            if set(carried) != {"severity"} or carried["severity"] not in levels:
                raise self.fail(f"{where}.findings", "must be a list of finding ids or "
                                "{severity: LEVEL}, LEVEL one of " + ", ".join(levels))
            return CauseSide(pods, severity=Severity(carried["severity"]))
        if not isinstance(carried, list) or not carried or \
                not all(isinstance(i, str) for i in carried):
            raise self.fail(f"{where}.findings", "must be a list of finding ids or "
                            "{severity: LEVEL}")
        return CauseSide(pods, finding_ids=tuple(carried))

    def cause_examples(self, data: Any) -> tuple[CauseExample, ...]:
        if data is None:
            return ()
        if not isinstance(data, list):
            raise self.fail("examples", "must be a list of whole-rule examples")
        out: list[CauseExample] = []
        for i, case in enumerate(data):
            at = f"examples[{i}]"
            if not isinstance(case, dict):
                raise self.fail(at, "must be a mapping")
            unknown = set(case) - _CAUSE_EXAMPLE_KEYS
            if unknown:
                raise self.fail(f"{at}.{sorted(unknown)[0]}", "unknown key; expected one of "
                                + ", ".join(sorted(_CAUSE_EXAMPLE_KEYS)))
            reports = case.get("reports")
            if not isinstance(reports, bool):
                raise self.fail(f"{at}.reports", "must be true (the cause is said) or false")
            pods = case.get("pods") or []
            if not isinstance(pods, list) or not all(isinstance(p, dict) for p in pods):
                raise self.fail(f"{at}.pods", "must be a list of pods")
            for j, pod in enumerate(pods):
                bad = set(pod) - _EXAMPLE_POD_KEYS
                if bad or not isinstance(pod.get("name"), str):
                    raise self.fail(f"{at}.pods[{j}]", "a pod has a name and any of "
                                    + ", ".join(sorted(_EXAMPLE_POD_KEYS - {"name"})))
                given = pod.get("facts") or {}
                if not isinstance(given, dict):
                    raise self.fail(f"{at}.pods[{j}].facts", "must map pod facts to values")
                for fname in given:
                    self.fact_name(fname, f"{at}.pods[{j}].facts.{fname}")
            nodes = case.get("nodes") or []
            if not isinstance(nodes, list) or not all(
                    isinstance(n, dict) and set(n) <= {"name", "gpus"} for n in nodes):
                raise self.fail(f"{at}.nodes", "must be a list of {name, gpus}")
            says = case.get("says")
            if says is not None and not isinstance(says, str):
                raise self.fail(f"{at}.says", "must be the sentence the cause says")
            out.append(CauseExample(self.string(case, "name", f"{at}."), reports,
                                    tuple(pods), tuple(nodes), says))
        return tuple(out)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def parse_pattern(text: str, source: str, lazy: bool = False,
                  wordings: Mapping[str, Wording] | None = None) -> Pattern:
    """One pattern file; ``lazy``: its regexes are compiled on first use (a shipped file,
    whose regexes the tests compile), else here, so that a mistake is a PatternError.
    ``wordings``: what its log leaves may name (the shipped wordings when not given)."""
    found = parse_document(text, source, lazy, wordings)
    if isinstance(found, CausePattern):
        raise PatternError(source, "scope", "a cluster pattern is a cause, not a finding")
    return found


def parse_document(text: str, source: str, lazy: bool = False,
                   wordings: Mapping[str, Wording] | None = None,
                   budget: list[int] | None = None) -> Pattern | CausePattern:
    """One pattern file: a finding's pattern, or a cause (``scope: cluster``).
    ``budget``: the values the files of one load may still parse to (shared)."""
    reader = _Reader(source, lazy, wordings)
    data = _yaml(text, source, budget)
    if isinstance(data, dict) and data.get("scope") == "cluster":
        return reader.cause_pattern(data)
    return reader.pattern(data)


def _yaml(text: str, source: str, budget: list[int] | None = None) -> Any:
    """The file parsed, its values counted before anything walks them: an alias bomb in a
    --patterns directory is refused as a manifest's or a bundle's is
    (``triage.safety.parsed``)."""
    try:
        data = yaml.load(text, Loader=_YAML_LOADER)  # a SafeLoader: no arbitrary objects
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "(file)"
        problem = getattr(exc, "problem", exc)
        raise PatternError(source, where, f"not valid YAML: {problem}") from None
    except RecursionError:
        raise PatternError(source, "(file)", "nested too deeply") from None
    total = budget if budget is not None else [parsed.MAX_VALUES_TOTAL]
    try:
        total[0] -= parsed.count_values(data, source, min(parsed.MAX_VALUES_PER_FILE,
                                                          max(total[0], 0)))
    except parsed.Refused as exc:
        raise PatternError(source, "(file)", str(exc).removeprefix(f"{source}: ")) from None
    return data


@dataclass(frozen=True)
class Checklist:
    """``patterns/checklist.yaml``: the ten steps' titles, and the settings the facts and
    the steps read (values that are no one pattern's condition, such as how old vLLM's
    stats lines may be to say what the server does now)."""

    titles: dict[int, str]
    settings: dict[str, Any]


def read_checklist(text: str, source: str, base: Checklist | None = None,
                   budget: list[int] | None = None) -> Checklist:
    """A checklist file; over ``base`` (the shipped one) it changes only what it names, and
    may name only the steps and settings the shipped file has, with values of their type."""
    data = _yaml(text, source, budget)
    if not isinstance(data, dict) or set(data) - {"steps", "settings"}:
        raise PatternError(source, "(top)", "a checklist file has steps and settings")
    titles = dict(base.titles) if base else {}
    steps = data.get("steps") or {}
    if not isinstance(steps, dict):
        raise PatternError(source, "steps", "must map step numbers 1-10 to titles")
    for number, title in steps.items():
        if not isinstance(number, int) or not 1 <= number <= 10:
            raise PatternError(source, f"steps.{number}", "a step is a number from 1 to 10")
        if not isinstance(title, str) or not title.strip():
            raise PatternError(source, f"steps.{number}", "must be a non-empty title")
        titles[number] = title.strip()
    if base is None and sorted(titles) != list(range(1, 11)):
        raise PatternError(source, "steps", "must title every step from 1 to 10")
    settings = dict(base.settings) if base else {}
    given = data.get("settings") or {}
    if not isinstance(given, dict):
        raise PatternError(source, "settings", "must be a mapping of name: value")
    for name, value in given.items():
        if base is not None and name not in base.settings:
            raise PatternError(source, f"settings.{name}", "unknown setting; the shipped "
                               "checklist.yaml lists them")
        if not _is_number(value) or (base is not None and not _is_number(base.settings[name])):
            raise PatternError(source, f"settings.{name}", "must be a number")
        settings[name] = value
    return Checklist(titles, settings)


@functools.cache
def shipped_checklist() -> Checklist:
    """The shipped patterns/checklist.yaml alone (whole-rule examples and tests read its
    settings without loading every pattern)."""
    path = builtin_dir() / CHECKLIST_FILE
    return read_checklist(path.read_text(encoding="utf-8"), _display(path))


def builtin_dir() -> Path:
    """The shipped patterns: the installed triage.builtin_patterns package, or the source tree."""
    return shipped_dir()


@dataclass(frozen=True)
class PatternSet:
    """The loaded patterns and the errors of the files that failed."""

    patterns: tuple[Pattern, ...]  # in evaluation order: a pattern after those it refers to
    errors: tuple[PatternError, ...]
    causes: tuple[CausePattern, ...] = ()  # cluster patterns, joined after every pod
    # the shipped patterns/checklist.yaml unless a set of patterns gives its own
    checklist: Checklist = field(default_factory=lambda: shipped_checklist())

    def by_id(self) -> dict[str, Pattern]:
        return {p.id: p for p in self.patterns}


def load_patterns(extra_dirs: Iterable[Path] = (), check_builtin: bool = False) -> PatternSet:
    """Load the built-in patterns and any extra directories.

    A file that fails to parse is reported and skipped; the rest still run.
    A later file with the same id replaces an earlier one, so a team can
    override a shipped pattern from its own directory. The built-in files'
    regexes are compiled when first used (``LazyRegex``), unless
    ``check_builtin`` (``vllm-triage patterns``, the tests); the others' here.
    """
    by_id: dict[str, Pattern] = {}
    causes: dict[str, CausePattern] = {}
    errors: list[PatternError] = []
    checklist: Checklist | None = None
    budget = [parsed.MAX_VALUES_TOTAL]  # values all the files may parse to
    shipped = builtin_dir()
    extra_dirs = list(extra_dirs)
    table = _wordings(extra_dirs, errors)
    for directory in (shipped, *extra_dirs):
        if not directory.is_dir():
            errors.append(PatternError(str(directory), "(directory)", "not a directory"))
            continue
        lazy = directory == shipped and not check_builtin
        try:
            paths = _pattern_files(directory)
        except parsed.Refused as exc:
            errors.append(PatternError(_display(directory), "(directory)", str(exc)))
            continue
        for path in paths:
            if path.name in DATA_FILES and path.name != CHECKLIST_FILE:
                continue  # data beside the patterns, read by its own reader
            try:
                text = parsed.read_text(path)
            except (OSError, UnicodeDecodeError, parsed.Refused) as exc:
                problem = str(exc).removeprefix(f"{path}: ")
                if isinstance(exc, OSError):
                    problem = exc.strerror or problem
                errors.append(PatternError(_display(path), "(file)", f"unreadable: {problem}"))
                continue
            if path.name == CHECKLIST_FILE:
                try:
                    checklist = read_checklist(text, _display(path), checklist, budget)
                except PatternError as exc:
                    errors.append(exc)
                continue
            try:
                found = parse_document(text, _display(path), lazy, table, budget)
            except PatternError as exc:
                errors.append(exc)
                continue
            if isinstance(found, CausePattern):
                causes[found.id] = found
                by_id.pop(found.id, None)
            else:
                by_id[found.id] = found
                causes.pop(found.id, None)
    loaded = resolve(by_id, errors)
    kept: list[CausePattern] = []
    cause_errors: list[PatternError] = []
    for cause in causes.values():
        missing = sorted(cause.finding_refs() - {p.id for p in loaded.patterns})
        if missing:
            cause_errors.append(PatternError(cause.source, "cause", f"unknown finding id "
                                             f"{missing[0]!r}"))
        else:
            kept.append(cause)
    return PatternSet(loaded.patterns, loaded.errors + tuple(cause_errors), tuple(kept),
                      checklist or shipped_checklist())


def _pattern_files(directory: Path) -> list[Path]:
    """The YAML files of a patterns directory, in order; a directory of more entries than
    any input may have is refused rather than listed."""
    found: list[Path] = []
    with os.scandir(directory) as entries:
        for i, entry in enumerate(entries):
            if i >= parsed.MAX_ENTRIES:
                raise parsed.Refused(f"more than {parsed.MAX_ENTRIES:,} entries; not a "
                                     "patterns directory")
            if fnmatch.fnmatch(entry.name, "*.y*ml"):
                found.append(Path(entry.path))
    return sorted(found)


def _wordings(extra_dirs: list[Path], errors: list[PatternError]) -> dict[str, Wording]:
    """The shipped wordings, and those the ``wordings.yaml`` of each extra directory adds
    (a later directory's over an earlier one's). A shipped wording is not replaced: the
    facts built their log queries from it when the tool started, and a pattern reading
    another text under the same name would disagree with them; a new name is the way."""
    table = dict(shipped_wordings())
    for directory in extra_dirs:
        path = directory / WORDINGS_FILE
        if not path.is_file():
            continue
        added, problems = read_wordings(path, _display(path))
        errors += [PatternError(e.source, e.where, e.problem) for e in problems]
        for name, wording in added.items():
            if name in shipped_wordings() and wording.regex == shipped_wordings()[name].regex:
                continue  # the shipped text again (a copy of the shipped directory)
            if name in shipped_wordings():
                errors.append(PatternError(wording.origin, f"{name}.name", "a shipped wording "
                                           "is read by the tool's own facts as shipped and "
                                           "cannot be replaced: give this text a name of its "
                                           "own and name that in your patterns"))
                continue
            try:
                regex.compile(wording.regex, REGEX_FLAGS)
            except regex.error as exc:
                errors.append(PatternError(wording.origin, f"{name}.regex",
                                           f"invalid regular expression: {exc}"))
                continue
            table[name] = wording
    return table


def resolve(by_id: dict[str, Pattern], errors: list[PatternError] | None = None) -> PatternSet:
    """Check the ids patterns refer to and order them so a pattern follows those it reads."""
    errors = list(errors or [])
    changed = True
    while changed:  # dropping a pattern can orphan another that refers to it
        changed = False
        for pid, p in sorted(by_id.items()):
            for where, ids in (("yields_to", set(p.yields_to)), ("finding", p.finding_refs())):
                missing = sorted(ids - set(by_id))
                if missing:
                    errors.append(PatternError(p.source, where, f"unknown finding id "
                                               f"{missing[0]!r}"))
                    del by_id[pid]
                    changed = True
                    break
    ordered: list[Pattern] = []
    state: dict[str, int] = {}  # 1 visiting, 2 done

    def visit(p: Pattern, trail: tuple[str, ...]) -> bool:
        if state.get(p.id) == 2:
            return True
        if state.get(p.id) == 1:
            errors.append(PatternError(p.source, "finding", "patterns refer to each other in "
                                       "a cycle: " + " -> ".join((*trail, p.id))))
            return False
        state[p.id] = 1
        ok = all(visit(by_id[ref], (*trail, p.id)) for ref in sorted(p.finding_refs())
                 if ref in by_id)
        state[p.id] = 2
        if ok:
            ordered.append(p)
        return ok

    for p in sorted(by_id.values(), key=lambda p: (p.step, p.id)):
        visit(p, ())
    return PatternSet(tuple(ordered), tuple(errors))


def _display(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)
