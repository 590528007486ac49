"""A container's environment as the kubelet builds it: envFrom in order, then env; a
ConfigMap's values where it was read, and unknown (never absent) where it was not."""

from __future__ import annotations

from triage.kube.env import container_env, expand
from triage.snapshot import ReadFailure, Snapshot

POD = {"metadata": {"name": "p", "namespace": "llm"}}


def _snapshot(*configmaps: dict[str, object]) -> Snapshot:
    snap = Snapshot(context=None, namespace="llm", collected_at="", tool_version="t")
    snap.objects = {"configmaps": [{"metadata": {"name": n, "namespace": "llm"}, "data": d}
                                   for cm in configmaps for n, d in cm.items()]}
    return snap


def test_env_from_a_config_map_is_the_containers_environment_and_env_wins() -> None:
    snap = _snapshot({"llm-env": {"HF_HOME": "/models", "VLLM_PORT": "9000"}},
                     {"more": {"HF_HOME": "/later"}})
    container = {"envFrom": [{"configMapRef": {"name": "llm-env"}},
                             {"configMapRef": {"name": "more"}, "prefix": "X_"},
                             {"secretRef": {"name": "hf"}}],
                 "env": [{"name": "VLLM_PORT", "value": "8000"},
                         {"name": "CACHE", "valueFrom": {"configMapKeyRef": {
                             "name": "llm-env", "key": "HF_HOME"}}},
                         {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {
                             "name": "hf", "key": "token"}}},
                         {"name": "DL", "value": "$(HF_HOME)/dl $$(HF_HOME)"}]}
    env = container_env(snap, POD, container)
    assert env.values() == {"HF_HOME": "/models", "VLLM_PORT": "8000", "X_HF_HOME": "/later",
                            "CACHE": "/models", "DL": "/models/dl $(HF_HOME)"}
    hf_home = env.get("HF_HOME")
    assert hf_home is not None and hf_home.described == "envFrom[0] ConfigMap llm-env key HF_HOME"
    token = env.get("HF_TOKEN")
    assert token is not None and token.origin == "secret" and token.value is None
    assert env.unknown("HF_HOME") is None and env.unknown("NOT_SET") is None


def test_a_config_map_that_was_not_read_leaves_its_variables_unknown() -> None:
    snap = _snapshot()
    snap.failures.append(ReadFailure("configmap llm/llm-env", "403 Forbidden", "configmaps",
                                     ("llm", "llm-env")))
    env = container_env(snap, POD, {"envFrom": [{"configMapRef": {"name": "llm-env"}}],
                                    "env": [{"name": "A", "valueFrom": {"configMapKeyRef": {
                                        "name": "llm-env", "key": "a"}}}]})
    assert "could not be read (403 Forbidden)" in str(env.unknown("HF_HOME"))
    assert "could not be read" in str(env.unknown("A"))
    optional = container_env(snap, POD, {"envFrom": [{"configMapRef": {
        "name": "llm-env", "optional": True}}]})
    assert optional.unknown("HF_HOME") is None


def test_expand_leaves_unknown_references_as_written() -> None:
    env = container_env(_snapshot(), POD, {"env": [{"name": "A", "value": "x"}]})
    assert expand("$(A)-$(B)", env.vars) == "x-$(B)"
