"""What a fact is, and the registry of every fact a pattern may name.

A fact has a unit, a scope, a one-line doc and, once computed, the evidence it came
from. Every fact is registered once, with ``@fact``, in the facts module of its concern;
``REGISTRY`` is what pattern files are checked against and what ``vllm-triage patterns
--facts`` lists.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from triage.logs import QuerySet
from triage.results import Location
from triage.vllm import milestones

# What a fact is about. A fact is computed once per instance of its scope (a workload
# fact once for all the pods of that workload) from the context of that scope
# (triage.facts.contexts); a container's context reads the facts of every scope around it.
SCOPES = ("container", "pod", "node", "workload", "cluster")


@dataclass(frozen=True, slots=True)  # slots: thousands of pods hold their facts
class Measured:
    """What a fact function returns: the value and the sentence saying where it came from."""

    value: Any
    evidence: str
    # The fields the value was read from (or where it would be set): what a
    # finding resting on this fact points at in a manifest.
    at: tuple[Location, ...] = ()


class Unmeasurable(Exception):
    """Raised by a fact function whose input could not be read."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Fact:
    """One measured fact about a container, pod, workload, node or the cluster."""

    name: str
    value: Any
    unit: str
    evidence: str
    unknown: str | None = None  # why it could not be measured
    at: tuple[Location, ...] = ()

    @property
    def known(self) -> bool:
        return self.unknown is None


@dataclass(frozen=True)
class FactSpec:
    """What a fact is: its unit, scope and meaning, and the function that measures it
    (called with the context of its scope)."""

    name: str
    unit: str
    scope: str
    doc: str
    compute: Callable[[Any], Measured]


REGISTRY: dict[str, FactSpec] = {}
# The regexes facts read from logs, answered by every scan's one pass.
LOG_QUERIES = QuerySet().merged(milestones.QUERIES)

F = Callable[[Any], Measured]


def fact(name: str, *, unit: str, scope: str, doc: str) -> Callable[[F], F]:
    """Register a fact function under ``name``; it is called with a context of ``scope``."""
    if scope not in SCOPES:
        raise ValueError(f"fact {name}: scope must be one of {SCOPES}")

    def register(fn: F) -> F:
        if name in REGISTRY:
            raise ValueError(f"fact {name} is registered twice")
        REGISTRY[name] = FactSpec(name, unit, scope, doc, fn)
        return fn
    return register


def measure(spec: FactSpec, ctx: Any) -> Fact:
    """The fact measured on a context of its scope; unknown, with the reason, when its
    input could not be read."""
    try:
        measured = spec.compute(ctx)
    except Unmeasurable as exc:
        return Fact(spec.name, None, spec.unit, f"{spec.name} could not be measured: "
                    f"{exc.reason}", unknown=exc.reason)
    return Fact(spec.name, measured.value, spec.unit, measured.evidence, at=measured.at)


def given(spec: FactSpec, value: Any) -> Fact:
    """A value given instead of measured (whole-rule examples)."""
    return Fact(spec.name, value, spec.unit, f"{spec.name} = {value!r} (given)")


def describe_registry() -> list[FactSpec]:
    return sorted(REGISTRY.values(), key=lambda s: (SCOPES.index(s.scope), s.name))
