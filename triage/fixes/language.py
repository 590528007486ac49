"""The fix language: small arithmetic expressions and text templates over facts.

A pattern's ``fix`` computes numbers from the pod's own facts
(``max_model_len: "round_down(estimated_max_model_len, 256)"``) and fills a
sentence with them (``"Set `--max-model-len={max_model_len:,}`"``). The
expression is parsed with Python's ``ast`` and then walked here, never
``eval``-ed: only numbers, strings, names, arithmetic, comparisons,
``and``/``or``/``not``, ``x if c else y`` and the functions in ``FUNCTIONS``
exist. Every name is checked when the pattern is loaded, so a typo is a
pattern error, not a silent blank in an incident report.

A name whose value is absent (a fact measured as None, or unknown) makes the
expression ``Missing`` with that name: the fix then says which fact it
needed, and falls back to the pattern's general advice.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import regex

from triage.safety import codespans, shell
from triage.safety.shell import KubectlTarget
from triage.speed import lazyregex

KIB, MIB, GIB, TIB = 1024, 1024**2, 1024**3, 1024**4
CONSTANTS: dict[str, Any] = {"KiB": KIB, "MiB": MIB, "GiB": GIB, "TiB": TIB,
                             "true": True, "false": False, "none": None}


def _digits(step: float) -> int:
    """Decimal places of a step (0.01 -> 2), so 57 x 0.01 is 0.57, never 0.5700000000000001."""
    text = f"{step:.10f}".rstrip("0")
    return len(text.partition(".")[2])


def _round_up(x: float, step: float = 1) -> float:
    # a quotient a hair above a whole number (0.9 - 0.05 = 0.8500000000000001) is that number
    return round(math.ceil(round(x / step, 9)) * step, _digits(step))


def _round_down(x: float, step: float = 1) -> float:
    return round(math.floor(round(x / step, 9)) * step, _digits(step))


def _clamp(x: float, low: float, high: float) -> float:
    return max(low, min(high, x))


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "min": min, "max": max, "abs": abs, "int": lambda x: int(x), "float": float,
    "ceil": math.ceil, "floor": math.floor, "round": round,
    "round_up": _round_up, "round_down": _round_down, "clamp": _clamp,
    "default": lambda x, y: y if x is None else x,  # evaluated lazily in _eval
}

_BINOPS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
}
_CMPOPS: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.Eq: operator.eq, ast.NotEq: operator.ne,
}


class FixLanguageError(ValueError):
    """An expression or template that is not in the language."""


@dataclass(frozen=True)
class Missing:
    """The value of an expression one of whose names has no value."""

    name: str


@dataclass(frozen=True)
class Expression:
    """A parsed fix expression and the names it reads."""

    text: str
    tree: ast.expr
    names: frozenset[str]

    def evaluate(self, scope: Mapping[str, Any]) -> Any:
        try:
            return _eval(self.tree, scope)
        except _MissingName as exc:
            return Missing(exc.name)
        except (ArithmeticError, TypeError, ValueError) as exc:
            raise FixLanguageError(f"{self.text!r}: {exc}") from None


class LazyExpression:
    """A shipped pattern's expression, parsed when a fix is first computed with it: most
    runs compute a fix or two, and the tests and ``vllm-triage patterns`` parse and check
    every one at load (``load_patterns(check_builtin=True)``)."""

    __slots__ = ("_parsed", "text")

    def __init__(self, text: str | int | float) -> None:
        self.text = text
        self._parsed: Expression | None = None

    def parsed(self) -> Expression:
        if self._parsed is None:
            self._parsed = parse_expression(self.text)
        return self._parsed

    def evaluate(self, scope: Mapping[str, Any]) -> Any:
        return self.parsed().evaluate(scope)


class _MissingName(Exception):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def parse_expression(text: str | int | float) -> Expression:
    """Parse and check one expression; names are returned for the loader to check."""
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise FixLanguageError(f"an expression must be a string or a number, got {text!r}")
    source = str(text)
    if len(source) > 500:
        raise FixLanguageError("an expression is at most 500 characters")
    try:
        tree = ast.parse(source, mode="eval").body
    except SyntaxError as exc:
        raise FixLanguageError(f"{source!r}: {exc.msg}") from None
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
                raise FixLanguageError(f"{source!r}: only these functions exist: "
                                       f"{', '.join(sorted(FUNCTIONS))}")
            if node.keywords:
                raise FixLanguageError(f"{source!r}: no keyword arguments")
        elif isinstance(node, ast.Name):
            if node.id not in FUNCTIONS and node.id not in CONSTANTS:
                names.add(node.id)
        elif not isinstance(node, (ast.Constant, ast.BinOp, ast.UnaryOp, ast.Compare,
                                   ast.BoolOp, ast.IfExp, ast.Load, ast.operator,
                                   ast.unaryop, ast.cmpop, ast.boolop)):
            raise FixLanguageError(f"{source!r}: {type(node).__name__} is not part of the "
                                   "fix language")
        if isinstance(node, ast.Constant) and not isinstance(
                node.value, (int, float, str, bool, type(None))):
            raise FixLanguageError(f"{source!r}: constant {node.value!r} not allowed")
        if isinstance(node, ast.BinOp) and type(node.op) not in _BINOPS:
            raise FixLanguageError(f"{source!r}: operator not allowed")
        if isinstance(node, ast.Compare) and any(type(o) not in _CMPOPS for o in node.ops):
            raise FixLanguageError(f"{source!r}: comparison not allowed")
    return Expression(source, tree, frozenset(names))


def _eval(node: ast.expr, scope: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in CONSTANTS:
            return CONSTANTS[node.id]
        value = scope.get(node.id)
        if value is None or isinstance(value, Missing):
            raise _MissingName(value.name if isinstance(value, Missing) else node.id)
        return value
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left, scope), _eval(node.right, scope)
        if isinstance(left, (int, float)) and isinstance(right, (int, float)) \
                and max(abs(left), abs(right)) > 1e18:
            raise ValueError("number out of range")
        return _BINOPS[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp):
        value = _eval(node.operand, scope)
        if isinstance(node.op, ast.USub):
            return -value
        if isinstance(node.op, ast.UAdd):
            return +value
        if isinstance(node.op, ast.Not):
            return not value
        raise ValueError("unary operator not allowed")
    if isinstance(node, ast.Compare):
        left = _eval(node.left, scope)
        for op, comp in zip(node.ops, node.comparators, strict=False):
            right = _eval(comp, scope)
            if not _CMPOPS[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.BoolOp):
        if isinstance(node.op, ast.And):
            result: Any = True
            for v in node.values:
                result = _eval(v, scope)
                if not result:
                    return result
            return result
        for v in node.values:
            result = _eval(v, scope)
            if result:
                return result
        return result
    if isinstance(node, ast.IfExp):
        return _eval(node.body if _eval(node.test, scope) else node.orelse, scope)
    if isinstance(node, ast.Call):
        assert isinstance(node.func, ast.Name)
        if node.func.id == "default":  # default(x, y): y when x has no value
            if len(node.args) != 2:
                raise ValueError("default takes two arguments")
            try:
                return _eval(node.args[0], scope)
            except _MissingName:
                return _eval(node.args[1], scope)
        return FUNCTIONS[node.func.id](*(_eval(a, scope) for a in node.args))
    raise ValueError(f"{type(node).__name__} is not part of the fix language")


# --- templates ---------------------------------------------------------------

FIELD = lazyregex.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)(?::([^{}\s]*))?\}")
_NUMBER_SPEC = lazyregex.compile(r"^,?(?:\.\d)?[fdg%]?$")


def quantity(value: float) -> str:
    """Bytes as the largest Kubernetes binary quantity that is a whole number (24Gi)."""
    number = math.ceil(value)
    for suffix, size in (("Ti", TIB), ("Gi", GIB), ("Mi", MIB), ("Ki", KIB)):
        if number >= size and number % size == 0:
            return f"{number // size}{suffix}"
    return str(number)


FORMATS: dict[str, Callable[[Any], str]] = {
    "quantity": quantity,
    "gib": lambda v: f"{v / GIB:.1f} GiB",
    "mib": lambda v: f"{v / MIB:,.0f} MiB",
    "duration": lambda v: f"{int(v) // 60}m{int(v) % 60:02d}s" if v >= 60 else f"{int(v)}s",
}


def template_names(template: str) -> set[str]:
    """Names a template refers to; checks each format spec."""
    names = set()
    for m in FIELD.finditer(template):
        spec = m.group(2)
        if spec is not None and spec not in FORMATS and not _NUMBER_SPEC.match(spec):
            raise FixLanguageError(f"{{{m.group(1)}:{spec}}}: unknown format; use one of "
                                   f"{', '.join(FORMATS)} or a number format such as , .2f")
        names.add(m.group(1))
    return names


def render(template: str, scope: Mapping[str, Any]) -> str | Missing:
    """The template with every ``{name}`` / ``{name:format}`` filled in, or the name
    that had no value."""
    missing: list[str] = []

    def fill(m: regex.Match[str]) -> str:
        value = scope.get(m.group(1))
        if value is None or isinstance(value, Missing):
            missing.append(value.name if isinstance(value, Missing) else m.group(1))
            return ""
        return format_value(value, m.group(2))

    text: str = FIELD.sub(fill, template)
    return Missing(missing[0]) if missing else text


def render_text(template: str, scope: Mapping[str, Any], target: KubectlTarget,
                say_missing: bool = False) -> str | Missing:
    """A fix's text or a remediation filled in: prose with its `code spans`, each value
    from the cluster on one line and visible (``shell.visible``); a code span that is a
    ``kubectl`` command is filled as a command (``render_command``: every word quoted, the
    cluster named), and every span is written with backticks no value can close.
    ``say_missing``: a name without a value reads "(no NAME)" instead of failing."""
    missing: list[str] = []

    def value(m: regex.Match[str]) -> str:
        return _value(m, scope, missing, say_missing)

    out: list[str] = []
    for is_code, part in codespans.split(template):
        if is_code and is_command(part):
            command = render_command(part, scope, target, say_missing)
            if isinstance(command, Missing):
                return command
            out.append(codespans.code(command))
        elif is_code:
            out.append(codespans.code(FIELD.sub(value, part)))
        else:
            out.append(FIELD.sub(value, part))
    return Missing(missing[0]) if missing else "".join(out)


def is_command(text: str) -> bool:
    """A code span (or a ``commands`` entry) that runs kubectl."""
    return text.lstrip().startswith(shell.KUBECTL + " ")


def render_command(template: str, scope: Mapping[str, Any], target: KubectlTarget,
                   say_missing: bool = False) -> str | Missing:
    """A command template filled in as a shell line: split into words first (as a POSIX
    shell splits it), each word filled and quoted, a value that is a whole word never
    read as a flag, a list value as one word per item; every ``kubectl`` that starts a
    command names the cluster (``target``)."""
    words = shell.split(template)
    if words is None:
        raise FixLanguageError(f"{template!r}: a command whose quotes do not close")
    missing: list[str] = []
    out: list[str] = []
    for i, word in enumerate(words):
        if isinstance(word, shell.Operator):
            out.append(word)
            continue
        whole = FIELD.fullmatch(word)
        got = scope.get(whole.group(1)) if whole else None
        if whole and isinstance(got, (list, tuple)) and whole.group(2) is None:
            out += [shell.argument(format_value(item, None)) for item in got]
        else:
            filled = FIELD.sub(lambda m: _value(m, scope, missing, say_missing), word)
            out.append(shell.argument(filled) if word.startswith("{") else filled)
        if shell.starts_kubectl(words, i):
            out += target.flags()
    return Missing(missing[0]) if missing else shell.join(out)


def _value(m: regex.Match[str], scope: Mapping[str, Any], missing: list[str],
           say_missing: bool) -> str:
    got = scope.get(m.group(1))
    if got is None or isinstance(got, Missing):
        if say_missing:
            return f"(no {m.group(1)})"
        missing.append(got.name if isinstance(got, Missing) else m.group(1))
        return ""
    return shell.visible(format_value(got, m.group(2)))


def format_value(value: Any, spec: str | None) -> str:
    if spec in FORMATS:
        return FORMATS[spec](value)
    if spec and isinstance(value, (int, float)) and not isinstance(value, bool):
        return format(value, spec)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return str(value)


def fill(value: Any, scope: Mapping[str, Any]) -> Any:
    """A patch value with its templates filled: a string that is exactly ``{name}``
    takes the value with its type (an int stays an int); other strings are rendered;
    lists and mappings are filled item by item. Missing names propagate."""
    if isinstance(value, str):
        whole = FIELD.fullmatch(value)
        if whole and whole.group(2) is None:
            got = scope.get(whole.group(1))
            return got if got is not None else Missing(whole.group(1))
        return render(value, scope)
    if isinstance(value, list):
        items = [fill(v, scope) for v in value]
        return next((i for i in items if isinstance(i, Missing)), items)
    if isinstance(value, dict):
        # A key may name a field by a fact (``{autoscale_target_field}``: which of an HPA's
        # metrics holds the target).
        filled = {(render(k, scope) if "{" in k else k): fill(v, scope)
                  for k, v in value.items()}
        missing = [k for k in filled if isinstance(k, Missing)]
        return missing[0] if missing else \
            next((v for v in filled.values() if isinstance(v, Missing)), filled)
    return value


def value_names(value: Any) -> set[str]:
    """Template names used anywhere in a patch value."""
    if isinstance(value, str):
        return template_names(value)
    if isinstance(value, list):
        return set().union(*(value_names(v) for v in value)) if value else set()
    if isinstance(value, dict):
        return set().union(*(value_names(v) | template_names(str(k))
                             for k, v in value.items())) if value else set()
    return set()


# --- a pattern's fix section, as loaded -------------------------------------------


@dataclass(frozen=True)
class PatchSpec:
    """The edits a fix makes, as templates over its values (``triage.fixes.patches.Edits``)."""

    target: str = "workload"  # workload | autoscaler | claim
    args: dict[str, Any] = field(default_factory=dict)
    container: dict[str, Any] = field(default_factory=dict)
    pod: dict[str, Any] = field(default_factory=dict)
    spec: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class FixCase:
    """One way to fix a finding: when ``when`` holds (always, without one), compute
    ``values`` in order from facts, fill ``text`` and ``patch`` with them."""

    text: str
    when: Any = None  # a rules Condition (triage.rules.language), evaluated by the caller
    values: tuple[tuple[str, Any], ...] = ()  # (name, Expression)
    check: Any = None  # an expression over the values: the case applies only when true
    patch: PatchSpec | None = None
    commands: tuple[str, ...] = ()  # templates of kubectl commands that check or apply it
