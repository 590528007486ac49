"""Typer's value coercion for the plain types the commands take, without pydantic.

Typer 0.29 and later coerce every parameter through a pydantic ``TypeAdapter``, built
the first time the parameter is processed: pydantic and its core schema are imported and
schemas built before any command runs, about a third of ``analyze``'s start-up. The
commands take ``str``, ``int``, ``bool``, ``pathlib.Path`` and lists of them; those
values are coerced here the way typer's adapters coerce them, and an ``Enum`` by its
values, a wrong one said in words ("'wide' is not one of text, json, sarif, github",
not pydantic's "Value error, ..."). Any other annotation, any parameter with
constraints (``min``, a ``parser``, path checks), and any value not taken as it is
(``--tail-lines abc``) go to typer's own adapter, so a mistake reads as typer words it.
A typer without these internals (older ones coerce with click types, with no pydantic)
is left as it is.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Any, get_args, get_origin

import regex

_INT = regex.compile(r"^[+-]?[0-9]+$")
Convert = Callable[[Any], Any]


class _Refused(Exception):
    """A value the light path does not take: typer's adapter decides."""


def _as_str(value: Any) -> str:
    if isinstance(value, str):
        return value
    raise _Refused


def _as_int(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and _INT.match(value):
        return int(value)
    raise _Refused


def _as_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    raise _Refused


def _as_path(value: Any) -> Path:
    if isinstance(value, Path):
        return value
    if not isinstance(value, str):
        raise _Refused
    # typer's path check with its defaults (readable=True): an existing path that cannot
    # be read is its error to word.
    if os.path.exists(value) and not os.access(value, os.R_OK):
        raise _Refused
    return Path(value)


def _as_enum(kind: type[Enum]) -> Convert:
    def convert(value: Any) -> Enum:
        if isinstance(value, kind):
            return value
        if not isinstance(value, str):
            raise _Refused
        for member in kind:
            if value == member.value:
                return member
        import typer  # a wrong value: the usage error typer prints for a bad parameter

        choices = ", ".join(str(m.value) for m in kind)
        raise typer.BadParameter(f"{value!r} is not one of {choices}")
    return convert


_LEAVES: dict[Any, Convert] = {str: _as_str, int: _as_int, bool: _as_bool, Path: _as_path}
# ParameterInfo's defaults: anything else asks for typer's own checks.
_PLAIN = {"parser": None, "min": None, "max": None, "clamp": False, "exists": False,
          "file_okay": True, "dir_okay": True, "writable": False, "readable": True,
          "resolve_path": False, "allow_dash": False, "path_type": None}


def converter(annotation: Any, info: Any) -> Convert | None:
    """How a value of ``annotation`` is coerced here; None for typer's adapter."""
    if any(getattr(info, k, v) != v for k, v in _PLAIN.items()):
        return None
    if get_origin(annotation) is list:
        (item,) = get_args(annotation) or (None,)
        leaf = _LEAVES.get(item)
        if leaf is None:
            return None
        return lambda value: [leaf(v) for v in (value if isinstance(value, (list, tuple))
                                                 else [value])]
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return _as_enum(annotation)
    return _LEAVES.get(annotation)


def install() -> None:
    """Route typer's coercion of plain parameters through ``converter`` (once)."""
    try:
        from typer import _coercion, core
    except ImportError:
        return
    original = getattr(core, "build_runtime_param", None)
    base: Any = getattr(_coercion, "RuntimeParam", None)
    if original is None or base is None or getattr(original, "light", False):
        return
    adapter: Callable[[Any], Any] = original  # typer's own: pydantic

    class Light(base):  # type: ignore[misc]
        """typer's RuntimeParam contract (``coerce`` handles None and multiple values)."""

        def __init__(self, descriptor: Any, convert: Convert) -> None:
            super().__init__(parameter_info=descriptor.parameter_info,
                             annotation=descriptor.annotation)
            object.__setattr__(self, "descriptor", descriptor)
            object.__setattr__(self, "convert", convert)

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            try:
                return self.convert(value)
            except _Refused:
                return adapter(self.descriptor)._coerce_value(value, param=param, ctx=ctx)

    def build(descriptor: Any) -> Any:
        if getattr(descriptor, "file_annotation", None) is None:
            convert = converter(descriptor.annotation, descriptor.parameter_info)
            if convert is not None:
                return Light(descriptor, convert)
        return adapter(descriptor)

    build.light = True  # type: ignore[attr-defined]
    setattr(core, "build_runtime_param", build)  # noqa: B010 (not an exported name)
