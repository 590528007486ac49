"""Facts measure: named, typed values about a vLLM container, its pod, node, workload or
the cluster.

A fact has a unit, a one-line doc and, once computed, the evidence it came
from. It never holds a threshold and never answers "nothing" because some
finding's condition is not met: deciding is what ``patterns/`` do. A fact
that could not be measured (its input was not read) is ``unknown`` with the
reason, which is not the same as a measured absence (``value`` None: no
memory limit, no startupProbe, no KV cache line in the logs read).

``registry`` says what a fact is and holds every one (``REGISTRY``: what pattern files
are checked against and ``vllm-triage patterns --facts`` lists); ``contexts`` holds what
they are computed from, one context per scope. Every fact is registered once, with
``@fact``, in the module of its concern below.
"""

from __future__ import annotations

from triage.facts.contexts import (
    ClusterContext,
    ContainerContext,
    LogsSettled,
    NodeContext,
    PodContext,
    Scopes,
    WorkloadContext,
    stream_label,
)
from triage.facts.registry import (
    LOG_QUERIES,
    REGISTRY,
    SCOPES,
    Fact,
    FactSpec,
    Measured,
    Unmeasurable,
    describe_registry,
    fact,
)

__all__ = [
    "LOG_QUERIES", "REGISTRY", "SCOPES", "ClusterContext", "ContainerContext", "Fact",
    "FactSpec", "LogsSettled", "Measured", "NodeContext", "PodContext", "Scopes",
    "Unmeasurable", "WorkloadContext", "describe_registry", "fact", "stream_label",
]

# Register every fact (the modules call @fact at import).
from triage.facts import autoscaling as _autoscaling  # noqa: F401
from triage.facts import capacity as _capacity  # noqa: F401
from triage.facts import container as _container  # noqa: F401
from triage.facts import engine as _engine  # noqa: F401
from triage.facts import failures as _failures  # noqa: F401
from triage.facts import filesystem as _filesystem  # noqa: F401
from triage.facts import gateway as _gateway  # noqa: F401
from triage.facts import kserve as _kserve  # noqa: F401
from triage.facts import kubernetes as _kubernetes  # noqa: F401
from triage.facts import model as _model  # noqa: F401
from triage.facts import node as _node  # noqa: F401
from triage.facts import podspec as _podspec  # noqa: F401
from triage.facts import probes as _probes  # noqa: F401
from triage.facts import progress as _progress  # noqa: F401
from triage.facts import rollout as _rollout  # noqa: F401
from triage.facts import sizing as _sizing  # noqa: F401
from triage.facts import telemetry as _telemetry  # noqa: F401
from triage.facts import timeline as _timeline  # noqa: F401  (its log queries)
