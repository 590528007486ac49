"""``@node``: an immutable record class, as ``@dataclass(frozen=True)`` makes one, without
its cost at import.

A frozen dataclass ``exec``s generated source for its ``__init__``, ``__repr__``,
``__eq__``, ``__hash__``, ``__setattr__`` and ``__delattr__``: about 0.3 ms a class on a
quiet machine, and the pattern language has 17 of them, created on every start. ``@node``
reads the class's annotations and gives it shared, generic methods instead (a few
microseconds a class); the instances behave the same: keyword or positional arguments in
field order, defaults (``field(default_factory=...)`` too), equality and hashing by
value and type, a dataclass-like repr, no assignment after ``__init__``. Not a dataclass
to ``dataclasses`` (no ``replace``, ``fields`` or ``asdict``): nothing uses them on
these classes.
"""

from __future__ import annotations

import inspect  # dataclasses imports it anyway
from collections.abc import Callable
from dataclasses import MISSING, Field, field
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:  # what it tells a type checker is all it does (typing has it from 3.11 only)
    def dataclass_transform(**_kw: Any) -> Callable[[T], T]:
        return lambda decorated: decorated

T = TypeVar("T")


class _Node:
    """The shared methods; ``_fields``, ``_defaults`` and ``_factories`` are set per class."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()
    _defaults: dict[str, Any] = {}  # noqa: RUF012 (replaced per class, never mutated)
    _factories: dict[str, Any] = {}  # noqa: RUF012

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        cls = type(self)
        names = cls._fields
        if len(args) > len(names):
            raise TypeError(f"{cls.__name__}() takes {len(names)} arguments, "
                            f"{len(args)} given")
        put = object.__setattr__
        for name, value in zip(names, args, strict=False):
            put(self, name, value)
        for name in names[len(args):]:
            if name in kwargs:
                put(self, name, kwargs.pop(name))
            elif name in cls._defaults:
                put(self, name, cls._defaults[name])
            elif name in cls._factories:
                put(self, name, cls._factories[name]())
            else:
                raise TypeError(f"{cls.__name__}() missing argument {name!r}")
        if kwargs:
            raise TypeError(f"{cls.__name__}() got an unexpected argument "
                            f"{sorted(kwargs)[0]!r}")

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._fields)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__qualname__}({inner})"

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}")


@dataclass_transform(frozen_default=True, field_specifiers=(field, Field))
def node(cls: type[T]) -> type[T]:
    """The class, with ``_Node``'s methods over its annotated fields, in order (a class
    that names ``_Node`` among its bases is not needed: the methods are copied in)."""
    names = tuple(k for k in inspect.get_annotations(cls) if not k.startswith("_"))
    defaults: dict[str, Any] = {}
    factories: dict[str, Any] = {}
    for name in names:
        if name not in cls.__dict__:
            continue
        value = cls.__dict__[name]
        if isinstance(value, Field):
            if value.default_factory is not MISSING:
                factories[name] = value.default_factory
            elif value.default is not MISSING:
                defaults[name] = value.default
            delattr(cls, name)
        else:
            defaults[name] = value
    seen = False
    for name in names:  # as dataclass: no field without a default after one with
        has = name in defaults or name in factories
        if seen and not has:
            raise TypeError(f"{cls.__name__}: field {name!r} without a default follows one "
                            "with a default")
        seen = seen or has
    for method in ("__init__", "_values", "__eq__", "__hash__", "__repr__", "__setattr__",
                   "__delattr__"):
        if method not in cls.__dict__:
            setattr(cls, method, _Node.__dict__[method])
    cls._fields = names  # type: ignore[attr-defined]
    cls._defaults = defaults  # type: ignore[attr-defined]
    cls._factories = factories  # type: ignore[attr-defined]
    return cls
