"""Fixes computed from the pod's own figures, and the patches that carry them.

Every expected number below is worked out by hand from the fixture's own log
and spec lines, cited next to it; the patches must change only the fields the
fix names (tests/cli/test_fixes.py applies them with the real kubectl).
"""

from __future__ import annotations

import functools
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, fixture_names
from tests.support.fixturekit import copy_fixture, load_list, save_list
from triage import pipeline
from triage.collect import bundle
from triage.fixes import patches
from triage.fixes.language import (
    FixLanguageError,
    Missing,
    fill,
    parse_expression,
    quantity,
    render,
    template_names,
)
from triage.results import Fix, Report

GIB = 2**30


@functools.lru_cache(maxsize=64)
def report_of(path: str) -> Report:
    return pipeline.analyze(bundle.load(Path(path)))


def fix_of(fixture: str | Path, pod: str, finding: str) -> Fix:
    report = report_of(str(FIXTURES / fixture if isinstance(fixture, str) else fixture))
    for p in report.pods:
        if p.name.startswith(pod):
            for f in p.findings:
                if f.id == finding:
                    assert f.fix is not None, (pod, finding)
                    return f.fix
    raise AssertionError(f"{finding} not raised on {pod} in {fixture}")


# --- each computed value, against the number worked out by hand -----------------------

HAND_WORKED: list[tuple[str, str, str, str, Any]] = [
    # kv-cache-too-small-v1, vllm.previous.log line 20: "... the estimated maximum model
    # length is 94176" (line 3: "Using max model len 1010000").
    ("kv-cache-too-small-v1", "vllm-qwen-1m", "kv-cache-insufficient", "max_model_len", 94176),
    ("kv-cache-too-small-v1", "vllm-qwen-1m", "kv-cache-insufficient", "max_model_len_asked",
     1010000),
    # line 18: "(53.94 GiB KV cache is needed, which is larger than the available KV cache
    # memory (5.03 GiB)": 48.91 GiB more; 0.92 - 0.90 (non-default args) = 0.02 of the card,
    # so a 48.91 / 0.02 = 2445.5 -> 2446 GiB GPU: no utilisation in range holds it.
    ("kv-cache-too-small-v1", "vllm-qwen-1m", "kv-cache-insufficient", "more_gib", 48.91),
    ("kv-cache-too-small-v1", "vllm-qwen-1m", "kv-cache-insufficient", "card_needed_gib",
     2446),
    # kv-cache-too-small-v0, line 23: "The model's max seq len (131072) is larger than the
    # maximum number of tokens that can be stored in KV cache (28752)".
    ("kv-cache-too-small-v0", "vllm-llama8b", "kv-cache-insufficient", "max_model_len", 28752),
    # probe-kill-vs-crash-while-loading, vllm-llama70b previous log: line 1 is stamped
    # 02:58:04, the shards start after line 39 (02:59:05): 61 s; line 60 "19/30
    # [01:25<...": 85 s x 30 / 19 = 134.2 s for all shards; 61 + 134.2 = 195.2 -> 196 s.
    # + 120 s for profiling / KV cache / graphs = 316 s; x 1.5 = 474 s -> 48 periods of
    # 10 s = 480 s.
    ("probe-kill-vs-crash-while-loading", "vllm-llama70b", "probe-killed-during-load",
     "load_seconds", 196),
    ("probe-kill-vs-crash-while-loading", "vllm-llama70b", "probe-killed-during-load",
     "failure_threshold", 48),
    ("probe-kill-vs-crash-while-loading", "vllm-llama70b", "probe-killed-during-load",
     "startup_probe_budget_s", 480),
    ("probe-kill-vs-crash-while-loading", "vllm-llama70b", "probe-timing",
     "startup_probe_budget_s", 480),
    # probe-timing, by the kubelet's line times: line 1 at 03:09:41.12, the shards start
    # after line 12 (03:09:58.244): 17.124 s; line 17 "4/8 [00:20<": 20 x 8 / 4 = 40 s;
    # 57.124 s -> 58 s (whole seconds, up); 58 + 120 = 178 s x 1.5 = 267 s, under the
    # 300 s floor: 30 periods of 10 s.
    ("probe-timing", "vllm-qwen14b", "probe-killed-during-load", "load_seconds", 58),
    ("probe-timing", "vllm-qwen14b", "probe-timing", "startup_probe_budget_s", 300),
    # oomkilled-vs-cuda-oom, vllm-llama: limits.memory 16Gi, dshm emptyDir Memory
    # sizeLimit 2Gi: processes had 14 GiB, x2 = 28 GiB, + 2 GiB /dev/shm = 30Gi.
    ("oomkilled-vs-cuda-oom", "vllm-llama", "container-oomkilled", "memory_limit_bytes",
     30 * GIB),
    # busy-namespace, vllm-llama: limits.memory 12Gi, dshm sizeLimit 8Gi: processes had
    # 4 GiB, x2 = 8 GiB (the 8 GiB floor), + 8 GiB /dev/shm = 16Gi.
    ("busy-namespace", "vllm-llama", "container-oomkilled", "memory_limit_bytes", 16 * GIB),
    # oomkilled-vs-cuda-oom, vllm-qwen14b: OOM in _dummy_sampler_run (line 27) with
    # --max-num-seqs 1024 and --gpu-memory-utilization 0.95: 1024 / 4 = 256, 0.90.
    ("oomkilled-vs-cuda-oom", "vllm-qwen14b", "cuda-oom", "max_num_seqs", 256),
    ("oomkilled-vs-cuda-oom", "vllm-qwen14b", "cuda-oom", "gpu_memory_utilization", 0.9),
    # cuda-oom: capture_model (line 43), --gpu-memory-utilization 0.98, "GPU 0 has a total
    # capacity of 22.03 GiB" (line 47): 0.90, (0.98 - 0.90) x 22.03 = 1.76 GiB freed.
    ("cuda-oom", "vllm-qwen", "cuda-oom", "gpu_memory_utilization", 0.9),
    ("cuda-oom", "vllm-qwen", "cuda-oom", "freed_gib", 1.76),
    ("cuda-oom", "vllm-qwen", "gpu-memory-utilization", "gpu_memory_utilization", 0.9),
    # shm-bus-error-tp2: --tensor-parallel-size 2 -> 2 x 2 GiB = 4Gi of /dev/shm (it was the
    # runtime's 64 MiB, no volume); limits.memory 64Gi + 4 GiB = 68Gi.
    ("shm-bus-error-tp2", "vllm-llama8b-tp2", "shm-too-small", "shm_size_bytes", 4 * GIB),
    ("shm-bus-error-tp2", "vllm-llama8b-tp2", "shm-too-small", "memory_limit_bytes",
     68 * GIB),
    # image-tag-latest, pods.yaml line 142: imageID docker.io/vllm/vllm-openai@sha256:e3f1...
    ("image-tag-latest", "vllm-qwen", "image-tag-latest", "image",
     "vllm/vllm-openai@sha256:e3f1a2b4c6d8e0f2a4b6c8d0e2f4a6b8c0d2e4f6a8b0c2d4e6f8a0b2c4d6e8f0"),
    # disk-full-download, line 9: "model-00021-of-00030.safetensors: ... 3.09G/4.98G":
    # 30 shards x 4.98 GB = 149.4 GB = 139.1 GiB, + 25% = 173.9 GiB -> 180Gi.
    ("disk-full-download", "vllm-llama70b-nocache", "disk-full", "pvc_size_bytes",
     180 * GIB),
    # kserve-target-too-high: knative target '32' (inferenceservices.yaml line 17) against
    # "Maximum concurrency for 32,768 tokens per request: 6.45x" (log line 29):
    # floor(6.45 x 0.8) = 5.
    ("kserve-target-too-high", "qwen-chat", "autoscale-target-too-high", "target", 5),
    # hpa-target-too-high: spec.metrics[1] Pods vllm:num_requests_running averageValue '32'
    # (horizontalpodautoscalers.yaml line 32) against "Maximum concurrency for 16,384 tokens
    # per request: 2.16x" (vllm.log line 29): floor(2.16 x 0.8) = 1.
    ("hpa-target-too-high", "vllm-qwen", "autoscale-target-too-high", "target", 1),
    ("hpa-target-too-high", "vllm-qwen", "autoscale-target-too-high", "target_was", 32),
    # kserve-scale-to-zero: spec.predictor.minReplicas 0 -> 1.
    ("kserve-scale-to-zero", "gemma-chat", "scale-to-zero", "min_replicas", 1),
    # batched-tokens-unbounded: prompt-token buckets 2000: 1400, 5000: 1985 of 2000; P99 =
    # 2000 + (1980 - 1400) / 585 x 3000 = 4974.4; x2 = 9948.7 -> 10240 (512 steps).
    ("batched-tokens-unbounded", "vllm-llama", "batched-tokens-unbounded",
     "max_num_batched_tokens", 10240),
    # no-gpu-missing-request: no nvidia.com/gpu in limits; tensor x pipeline = 1 x 1.
    ("no-gpu-missing-request", "vllm-qwen8b-batch", "no-gpu", "gpus", 1),
    # gpu-arch-unsupported: node label nvidia.com/gpu.compute.major 7 / minor 5 (Tesla T4).
    ("gpu-arch-unsupported", "vllm-qwen25", "gpu-arch-unsupported", "capability", 7.5),
    # autoscaling-on-cpu, vllm.log line 29 "Maximum concurrency for 16,384 tokens per
    # request: 2.16x": floor(2.16 x 0.8) = 1 running request per pod as the HPA's target;
    # metrics line 17 "vllm:num_requests_waiting ... 14.0", deployments.yaml line 18
    # replicas 1: ceil(1 x (1 + 14 / 2.16)) = ceil(7.48) = 8 replicas, above the HPA's
    # maxReplicas 4 (horizontalpodautoscalers.yaml line 18): maxReplicas 8.
    ("autoscaling-on-cpu", "vllm-qwen", "autoscaling-on-cpu", "target", 1),
    ("autoscaling-on-cpu", "vllm-qwen", "request-queueing", "replicas_needed", 8),
    ("autoscaling-on-cpu", "vllm-qwen", "request-queueing", "max_replicas_was", 4),
    ("autoscaling-on-cpu", "vllm-qwen", "request-queueing", "max_replicas", 8),
    # request-queueing, metrics line 17 "... 37.0" waiting, 2.16x (log line 29), 1 replica,
    # no HPA: ceil(1 x (1 + 37 / 2.16)) = ceil(18.13) = 19.
    ("request-queueing", "vllm-qwen", "request-queueing", "replicas_needed", 19),
    # gmu-too-high, pods.yaml line 33: --gpu-memory-utilization '0.97' -> 0.90.
    ("gmu-too-high", "vllm-mistral", "gpu-memory-utilization", "gpu_memory_utilization", 0.9),
    # secrets-planted, deployments.yaml line 22 "--gpu-memory-utilization", "0.90" and
    # "total capacity of 22.03 GiB" in the OOM: 0.90 - 0.05 = 0.85 (the floor), freed
    # (0.90 - 0.85) x 22.03 = 1.10 GiB.
    ("secrets-planted", "vllm-llama", "cuda-oom", "gpu_memory_utilization", 0.85),
    ("secrets-planted", "vllm-llama", "cuda-oom", "freed_gib", 1.1),
    # busy-namespace, vllm-qwen pods.yaml lines 34-35 --tensor-parallel-size '2': 2 GPUs.
    ("busy-namespace", "vllm-qwen", "gpu-unschedulable", "gpus", 2),
    # gpu-pending-insufficient, nodes.yaml lines 22-24: taint nvidia.com/gpu NoSchedule.
    ("gpu-pending-insufficient", "vllm-mistral", "gpu-unschedulable", "taint_key",
     "nvidia.com/gpu"),
    ("gpu-pending-insufficient", "vllm-mistral", "gpu-unschedulable", "taint_effect",
     "NoSchedule"),
    # gpu-hardware-error, pods.yaml line 94: nodeName gke-inference-a3-pool-0c4d1e2f-r7vd.
    ("gpu-hardware-error", "vllm-llama70b-2c1b0a9f8e-d4f6g", "gpu-hardware-error",
     "bad_node", "gke-inference-a3-pool-0c4d1e2f-r7vd"),
    # volume-mount-failed, events.yaml line 44 "Volume is already used by pod(s)
    # vllm-qwen-4a3b2c1d0e-h2j6k".
    ("volume-mount-failed", "vllm-qwen-6c5d4e3f2a", "volume-mount-failed", "holders",
     ["vllm-qwen-4a3b2c1d0e-h2j6k"]),
    # vllm-port-env-clash, services.yaml line 15 clusterIP 10.96.41.17, port 8000.
    ("vllm-port-env-clash", "vllm", "vllm-port-env-clash", "service_env",
     "tcp://10.96.41.17:8000"),
    # known-failure-variants, vllm-llama-tp2 pods.yaml lines 352-353 --tensor-parallel-size
    # '2': 2 x 2 GiB = 4Gi /dev/shm; limits.memory 64Gi (line 369) + 4 GiB = 68Gi.
    ("known-failure-variants", "vllm-llama-tp2", "shm-too-small", "shm_size_bytes", 4 * GIB),
    ("known-failure-variants", "vllm-llama-tp2", "shm-too-small", "memory_limit_bytes",
     68 * GIB),
    # startup-stalled-nccl: --tensor-parallel-size 2 (pods.yaml line 32): 4Gi /dev/shm;
    # limits.memory 48Gi (line 51) + 4 GiB = 52Gi.
    ("startup-stalled-nccl", "vllm-llama70b", "shm-too-small", "memory_limit_bytes",
     52 * GIB),
    # kserve-target-too-high, metrics: vllm:num_requests_waiting 11.
    ("kserve-target-too-high", "qwen-chat", "request-queueing", "waiting", 11),
]


@pytest.mark.parametrize(("fixture", "pod", "finding", "name", "expected"), HAND_WORKED,
                         ids=[f"{f}-{n}-{v}" for f, _, n, v, _ in HAND_WORKED])
def test_computed_value_matches_the_hand_worked_number(fixture: str, pod: str, finding: str,
                                                       name: str, expected: Any) -> None:
    values = fix_of(fixture, pod, finding).value_map()
    assert name in values, values
    if isinstance(expected, float):
        assert values[name] == pytest.approx(expected, abs=0.005)
    else:
        assert values[name] == expected


def test_pvc_size_names_the_claim_when_the_cache_is_on_a_pvc(tmp_path: Path) -> None:
    """disk-full-download with HF_HOME on a 100Gi claim: the shards say 180Gi (above),
    which beats 100Gi + 10Gi, and the patch grows that claim."""
    root = _on_a_claim(tmp_path)
    fix = fix_of(root, "vllm-llama70b-nocache-7b8c9d0e1f-5tq2w", "disk-full")
    assert fix.value_map()["pvc_size_bytes"] == 180 * GIB
    assert fix.patch is not None and fix.patch.kind == "PersistentVolumeClaim"
    assert fix.patch.name == "llama70b-cache"
    assert fix.patch.body == {"spec": {"resources": {"requests": {"storage": "180Gi"}}}}
    assert "llama70b-cache" in fix.text


def _on_a_claim(tmp_path: Path) -> Path:
    root = copy_fixture(tmp_path / "f", "disk-full-download")
    pods = load_list(root, "pods")
    for pod in pods["items"]:
        c = pod["spec"]["containers"][0]
        c.setdefault("env", []).append({"name": "HF_HOME", "value": "/models"})
        c.setdefault("volumeMounts", []).append({"name": "model-cache", "mountPath": "/models"})
        pod["spec"].setdefault("volumes", []).append(
            {"name": "model-cache", "persistentVolumeClaim": {"claimName": "llama70b-cache"}})
    save_list(root, "pods", pods)
    save_list(root, "persistentvolumeclaims", {
        "apiVersion": "v1", "kind": "PersistentVolumeClaimList",
        "metadata": {"resourceVersion": "99000"},
        "items": [{"metadata": {"name": "llama70b-cache", "namespace": "llm",
                                "uid": "5b0c3f1e-8d2a-4e7b-9c1d-2f3e4a5b6c7d",
                                "resourceVersion": "98000",
                                "creationTimestamp": "2026-11-20T08:00:00Z"},
                   "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "premium-rwo",
                            "resources": {"requests": {"storage": "100Gi"}},
                            "volumeMode": "Filesystem", "volumeName": "pvc-5b0c3f1e"},
                   "status": {"phase": "Bound", "accessModes": ["ReadWriteOnce"],
                              "capacity": {"storage": "100Gi"}}}]})
    return root


def test_a_fix_says_which_fact_it_lacked_and_falls_back(tmp_path: Path) -> None:
    """The probe kill with its previous log unreadable: no start-up to measure."""
    root = copy_fixture(tmp_path / "f", "probe-kill-vs-crash-while-loading")
    for log in (root / "logs").rglob("vllm-llama70b-*/vllm.previous.log"):
        log.unlink()
    report = pipeline.analyze(bundle.load(root))
    pod = next(p for p in report.pods if p.name.startswith("vllm-llama70b"))
    finding = next(f for f in pod.findings if f.id == "probe-killed-during-load")
    assert finding.fix is not None and not finding.fix.values
    assert "load_estimate_seconds" in finding.fix.missing
    assert finding.fix.text.startswith("Could not compute the fix: ")
    assert "startupProbe" in finding.fix.text  # then the general advice


def test_a_value_the_computation_cannot_take_gives_the_general_advice(tmp_path: Path) -> None:
    """A fix whose arithmetic fails on the pod's values (here a division by zero in an
    overriding pattern) falls back to the advice; the report is still made."""
    text = (FIXTURES.parent / "patterns" / "gpu-memory-utilization.yaml").read_text()
    text = text.replace('gpu_memory_utilization: "0.9"', 'gpu_memory_utilization: "0.9 / 0"')
    (tmp_path / "gmu.yaml").write_text(text)
    report = pipeline.analyze(bundle.load(FIXTURES / "cuda-oom"), [tmp_path])
    finding = next(f for f in report.pods[0].findings if f.id == "gpu-memory-utilization")
    assert finding.fix is not None and finding.fix.text.startswith("Could not compute the fix")
    assert "division by zero" in finding.fix.text and not finding.fix.values


def test_no_placeholder_in_any_command_or_text() -> None:
    for name in fixture_names():
        doc = report_of(str(FIXTURES / name)).to_document()
        text = json.dumps([doc["cards"], [f for p in doc["pods"] for f in p["findings"]]])
        for placeholder in ("NAMESPACE", " POD ", " POD`", "CONTAINER", " NODE", "CLAIM",
                            "(no namespace)", "(no pod)", "(no container)", "(no node)"):
            assert placeholder not in text, (name, placeholder)
        told = json.dumps([[c.get("fix"), c.get("commands")] for c in doc["cards"]]
                          + [[f.get("fix"), f.get("remediation")] for p in doc["pods"]
                             for f in p["findings"]])
        assert not re.search(r"<[a-z][a-z _-]*>", told), (name, re.findall(r"<[^>]{0,30}>",
                                                                          told))


def test_every_finding_on_every_fixture_has_a_fix_with_text() -> None:
    """The pinned contract: each finding's "fix" is {text, values, patch}, never null, also
    for a pattern with no computed template (cache-dir-not-writable, nccl-failure, ...):
    its remediation with the pod's real names is the text, and every card shows it."""
    for name in fixture_names():
        doc = report_of(str(FIXTURES / name)).to_document()
        for pod in doc["pods"]:
            for f in pod["findings"]:
                assert isinstance(f["fix"], dict) and f["fix"]["text"].strip(), \
                    (name, pod["name"], f["id"])
                assert set(f["fix"]) >= {"text", "values", "patch"}, (name, f["id"])
        for card in doc["cards"]:
            assert card["fix"] and card["fix"]["text"].strip(), (name, card["finding"])


def test_no_remediation_or_fix_keeps_a_canned_example_number() -> None:
    """What to do never says "for example --max-model-len=16384", "e.g. failureThreshold:
    60" or "32Gi for an 8B model": the number comes from the pod's facts, or the text says
    which fact is unknown. Examples of names or paths (e.g. AWQ/GPTQ, e.g. at /cache) stay."""
    from triage.rules.loader import load_patterns
    for pattern in load_patterns().patterns:
        texts = [pattern.remediation, *(case.text for case in pattern.fix)]
        for text in texts:
            for m in re.finditer(r"(?:e\.g\.|for example)([^.;)]*)", text):
                # a setting's value: a flag's, a field's, a size, a duration, a range
                assert not re.search(r"--[a-z-]+[= ]\d|\w: \d|\d+(?:Gi|Mi|GB|G)\b|\d+ ?"
                                     r"(?:s|seconds|minutes)\b|\d+-\d+", m.group(1)), \
                    (pattern.id, m.group(0))


def test_one_value_per_flag_across_the_report() -> None:
    """cuda-oom and gpu-memory-utilization propose the same --gpu-memory-utilization."""
    for name in fixture_names():
        report = report_of(str(FIXTURES / name))
        for pod in report.pods:
            proposed = {f.fix.value_map()["gpu_memory_utilization"] for f in pod.findings
                        if f.fix and "gpu_memory_utilization" in f.fix.value_map()
                        and f.id != "kv-cache-insufficient"}
            assert len(proposed) <= 1, (name, pod.name, proposed)


def test_saved_report_round_trips_cards_and_fixes() -> None:
    report = report_of(str(FIXTURES / "cuda-oom"))
    again = Report.from_document(json.loads(json.dumps(report.to_document())))
    assert again.to_document()["cards"] == report.to_document()["cards"]
    assert again.to_document()["pods"] == report.to_document()["pods"]


# --- the language itself ------------------------------------------------------------------


def test_expressions_compute_and_refuse_everything_else() -> None:
    scope = {"a": 10, "b": 4, "gib": None}
    assert parse_expression("round_up(a * 1.5 + b, 10)").evaluate(scope) == 20
    assert parse_expression("max(a, b) if a > b else 0").evaluate(scope) == 10
    assert parse_expression("default(gib, 2 * GiB)").evaluate(scope) == 2 * GIB
    assert parse_expression("gib + 1").evaluate(scope) == Missing("gib")
    assert parse_expression("ceil(7 / 2)").names == frozenset()
    for bad in ("__import__('os')", "a.real", "a[0]", "(lambda: 1)()", "open('x')",
                "[x for x in a]", "a ** 99999", "f'{a}'", "a @ b", "{1: 2}"):
        with pytest.raises(FixLanguageError):
            parse_expression(bad)


def test_templates_fill_names_and_formats() -> None:
    assert template_names("Set {a:quantity} and {b:,} in {medium: Memory}") == {"a", "b"}
    assert render("limit {m:quantity}, {n:,} tokens, {g:gib}",
                  {"m": 16 * GIB, "n": 94176, "g": 1.5 * GIB}) == \
        "limit 16Gi, 94,176 tokens, 1.5 GiB"
    assert render("{x}", {}) == Missing("x")
    assert quantity(512 * 2**20) == "512Mi" and quantity(30 * GIB) == "30Gi"
    with pytest.raises(FixLanguageError):
        template_names("{a:!r}")


@pytest.mark.parametrize(("container", "expected"), [
    ({"args": ["--model", "m", "--max-model-len", "131072"]},
     {"args": ["--model", "m", "--max-model-len", "8192"]}),
    ({"args": ["--model=m", "--max_model_len=131072"]},
     {"args": ["--model=m", "--max-model-len=8192"]}),
    ({"args": ["--model", "m"]}, {"args": ["--model", "m", "--max-model-len=8192"]}),
    ({"command": ["vllm", "serve", "m", "--max-model-len", "4096"]},
     {"command": ["vllm", "serve", "m", "--max-model-len", "8192"]}),
    ({"command": ["/bin/sh", "-c"], "args": ["exec vllm serve m --max-model-len 4096 --port 8000"]},
     {"command": ["/bin/sh", "-c"], "args": ["exec vllm serve m --max-model-len=8192 --port 8000"]}),
])
def test_flags_are_set_where_the_container_gives_them(container: dict[str, Any],
                                                      expected: dict[str, Any]) -> None:
    patches.set_flags(container, {"--max-model-len": 8192})
    assert container == expected


def test_a_flag_given_twice_is_set_once() -> None:
    c = {"args": ["--gpu-memory-utilization", "0.95", "--gpu-memory-utilization=0.98"]}
    patches.set_flags(c, {"--gpu-memory-utilization": 0.9})
    assert c == {"args": ["--gpu-memory-utilization", "0.9"]}


def test_custom_resources_get_a_merge_patch_with_whole_lists() -> None:
    isvc = {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": "qwen", "namespace": "llm"},
            "spec": {"predictor": {"model": {"modelFormat": {"name": "huggingface"},
                                             "args": ["--model_name=qwen"]}}}}
    doc = patches.build(patches.Target("InferenceService", isvc, "kserve-container"),
                        patches.Edits(args={"--max-model-len": 8192}))
    assert doc is not None and doc["type"] == "merge"
    assert doc["patch"] == {"spec": {"predictor": {"model": {
        "args": ["--model_name=qwen", "--max-model-len=8192"]}}}}
    assert math.isfinite(8192)


def test_a_list_without_a_merge_key_is_changed_at_its_index_and_given_whole() -> None:
    """An HPA's metrics merge by no key: the patch changes the one metric's target and
    keeps the others as they were; an index the object does not have gives no patch."""
    metrics = [{"type": "Resource", "resource": {"name": "memory", "target": {
                   "type": "Utilization", "averageUtilization": 90}}},
               {"type": "Pods", "pods": {"metric": {"name": "vllm:num_requests_running"},
                                         "target": {"type": "AverageValue",
                                                    "averageValue": "32"}}}]
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
           "metadata": {"name": "vllm-qwen", "namespace": "llm"},
           "spec": {"maxReplicas": 4, "metrics": metrics}}
    target = patches.Target("HorizontalPodAutoscaler", hpa, "vllm")
    doc = patches.build(target, patches.Edits(
        spec={"spec.metrics[1].pods.target.averageValue": "1"}))
    assert doc is not None and doc["type"] == "strategic"
    assert doc["patch"]["spec"]["metrics"][0] == metrics[0]
    assert doc["patch"]["spec"]["metrics"][1]["pods"]["target"]["averageValue"] == "1"
    assert hpa["spec"]["metrics"][1]["pods"]["target"]["averageValue"] == "32"  # a copy
    assert patches.build(target, patches.Edits(
        spec={"spec.metrics[2].pods.target.averageValue": "1"})) is None
    assert patches.build(target, patches.Edits(
        spec={"spec.maxReplicas[0].value": "1"})) is None


def test_a_patch_key_may_name_a_field_by_a_fact() -> None:
    assert fill({"{where}": "{n:g}"}, {"where": "spec.metrics[1].x", "n": 1.0}) == \
        {"spec.metrics[1].x": "1"}
    assert fill({"{where}": "1"}, {}) == Missing("where")


# --- what a patch may carry, and patches that meet on one object ---------------------------


def _masks_in(value: Any) -> list[str]:
    text = json.dumps(value)
    return [m for m in ("[REDACTED", "***") if m in text]


def test_no_patch_carries_a_secret_or_its_mask() -> None:
    """secrets-planted, deployments.yaml line 50: args end "--api-key sk-planted-..."; the
    snapshot has it as [REDACTED]. The cuda-oom fix (0.90 -> 0.85, line 22) must not give
    the args list whole: a JSON patch replaces args[5] alone, after testing it reads 0.90."""
    for name in fixture_names():
        report = report_of(str(FIXTURES / name))
        for wp in report.patches:
            assert not _masks_in(wp.patch.body), (name, wp.workload)
        for card in report.cards:
            if card.fix is not None and card.fix.patch is not None:
                assert not _masks_in(card.fix.patch.body), (name, card.finding)
                assert not _masks_in(card.fix.commands), (name, card.finding)
    (wp,) = report_of(str(FIXTURES / "secrets-planted")).patches
    assert wp.patch.type == "json"
    assert wp.patch.body == [
        {"op": "test", "path": "/spec/template/spec/containers/0/name", "value": "vllm"},
        {"op": "test", "path": "/spec/template/spec/containers/0/args/5", "value": "0.90"},
        {"op": "replace", "path": "/spec/template/spec/containers/0/args/5", "value": "0.85"}]


def test_env_changes_merge_by_name_and_never_copy_other_env() -> None:
    dep = {"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "v", "namespace": "llm"},
           "spec": {"template": {"spec": {"containers": [{"name": "vllm", "env": [
               {"name": "HF_TOKEN", "value": "[REDACTED]"}, {"name": "A", "value": "1"}]}]}}}}
    doc = patches.build(patches.Target("Deployment", dep, "vllm"), patches.Edits(
        container={"env+": [{"name": "VLLM_PORT", "value": "8000"}]}))
    assert doc is not None and doc["type"] == "strategic"
    assert doc["patch"] == {"spec": {"template": {"spec": {"containers": [
        {"name": "vllm", "env": [{"name": "VLLM_PORT", "value": "8000"}]}]}}}}
    # a custom resource's merge patch gives lists whole: that would copy the mask
    lws = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
           "metadata": {"name": "v", "namespace": "llm"},
           "spec": {"leaderWorkerTemplate": {"workerTemplate": {"spec": {"containers": [
               {"name": "vllm", "args": ["--api-key", "[REDACTED]"],
                "env": [{"name": "HF_TOKEN", "value": "[REDACTED]"}]}]}}}}}
    doc = patches.build(patches.Target("LeaderWorkerSet", lws, "vllm"),
                        patches.Edits(args={"--max-model-len": 8192}))
    assert doc is not None and doc["type"] == "json" and not _masks_in(doc["patch"])
    assert doc["patch"][-1] == {"op": "add", "value": "--max-model-len=8192", "path":
                                "/spec/leaderWorkerTemplate/workerTemplate/spec/containers/0"
                                "/args/-"}
    # replacing the masked value itself cannot be written without the secret: no patch
    assert patches.build(patches.Target("LeaderWorkerSet", lws, "vllm"),
                         patches.Edits(args={"--api-key": None})) is None


_OOM = patches.Edits(container={"resources.limits.memory": "16Gi",
                                "resources.requests.memory": "16Gi"})
_ARGS = patches.Edits(args={"--max-model-len": 8192})


def test_fixes_for_two_containers_of_one_workload_each_land_in_their_own() -> None:
    dep = {"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "v", "namespace": "llm"},
           "spec": {"template": {"spec": {"containers": [
               {"name": "vllm", "args": ["--model", "m"]}, {"name": "sidecar"}]}}}}
    doc = patches.build_all(patches.Target("Deployment", dep, ""),
                            [("vllm", _ARGS), ("sidecar", _OOM)])
    assert doc is not None
    assert doc["patch"]["spec"]["template"]["spec"]["containers"] == [
        {"name": "vllm", "args": ["--model", "m", "--max-model-len=8192"]},
        {"name": "sidecar", "resources": {"limits": {"memory": "16Gi"},
                                          "requests": {"memory": "16Gi"}}}]


def test_kv_cache_fix_claims_no_utilisation_holds_only_from_the_figures() -> None:
    """v1 (line 18: 53.94 GiB needed, 5.03 available, at 0.90) shows it: 2,446 GiB GPU.
    v0's log gives the token count (28752, line 23) but no GiB figures: the fix says the
    alternative is unknown rather than claiming either way."""
    v1 = fix_of("kv-cache-too-small-v1", "vllm-qwen-1m", "kv-cache-insufficient").text
    assert "frees on any GPU under 2,446 GiB" in v1
    v0 = fix_of("kv-cache-too-small-v0", "vllm-llama8b", "kv-cache-insufficient").text
    assert "No utilisation" not in v0 and "is not known" in v0
    assert "--max-model-len=28752" in v0


def _cuda_oom_at(tmp_path: Path, utilisation: str) -> Path:
    """The cuda-oom fixture (capture_model, log line 43) with another utilisation in the
    pod, its template and the log's non-default args (line 2)."""
    root = copy_fixture(tmp_path / utilisation, "cuda-oom")
    for path in [*(root / "objects").glob("*.yaml"), *(root / "logs").rglob("*.log")]:
        text = path.read_text()
        path.write_text(text.replace('"0.98"', f'"{utilisation}"').replace(
            "'gpu_memory_utilization': 0.98", f"'gpu_memory_utilization': {utilisation}"))
    return root


@pytest.mark.parametrize(("utilisation", "expected"), [
    ("0.88", 0.85),  # 0.88 - 0.05 = 0.83, under the floor: 0.85
    ("0.87", 0.85),
    ("0.92", 0.9),
])
def test_cuda_oom_never_proposes_a_utilisation_under_the_floor(
        tmp_path: Path, utilisation: str, expected: float) -> None:
    fix = fix_of(_cuda_oom_at(tmp_path, utilisation), "vllm-qwen", "cuda-oom")
    value = fix.value_map()["gpu_memory_utilization"]
    assert value == expected and repr(value) == repr(expected)
    # freed: (was - new) x 22.03 GiB (line 47 "total capacity of 22.03 GiB"), 2 decimals
    freed = fix.value_map()["freed_gib"]
    assert freed == round((float(utilisation) - expected) * 22.03, 2)
    assert len(repr(freed).partition(".")[2]) <= 2


def test_cuda_oom_in_capture_at_the_floor_gives_eager_mode(tmp_path: Path) -> None:
    """At 0.85 already, lowering it is not the fix: --enforce-eager, with the 0.16 GiB the
    capture asked for (line 47 "Tried to allocate 160.00 MiB")."""
    fix = fix_of(_cuda_oom_at(tmp_path, "0.85"), "vllm-qwen", "cuda-oom")
    assert "gpu_memory_utilization" not in fix.value_map()
    assert fix.value_map()["tried_gib"] == pytest.approx(0.16, abs=0.005)
    assert "--enforce-eager" in fix.text and "0.85" in fix.text
    assert fix.edits is not None and fix.edits["args"] == {"--enforce-eager": True}


def test_no_proposed_number_has_a_float_artefact() -> None:
    for name in fixture_names():
        for pod in report_of(str(FIXTURES / name)).pods:
            for f in pod.findings:
                for key, value in (f.fix.value_map() if f.fix else {}).items():
                    if isinstance(value, float):
                        assert len(repr(value).partition(".")[2]) <= 4 or key in (
                            "prompt_p99",), (name, f.id, key, value)
                if f.id in ("cuda-oom", "gpu-memory-utilization") and f.fix:
                    v = f.fix.value_map().get("gpu_memory_utilization")
                    assert v is None or 0.85 <= v <= 0.92, (name, v)


def test_a_cards_proof_is_the_sentence_that_proves_it_not_a_status_field() -> None:
    """image-pull-failed: the rule matched state.waiting.reason 'ImagePullBackOff' first;
    the proof is the kubelet's own event, events.yaml: 'Failed to pull image
    "vllm/vllm-openai:v0.10.11": rpc error: code = NotFound'. A probe kill keeps its
    Killing event; four OOMKilled replicas share one card."""
    report = report_of(str(FIXTURES / "image-pull-failed"))
    card = next(c for c in report.cards if c.workload == "Deployment/vllm-qwen")
    assert card.proof.startswith("event Warning Failed") and "Failed to pull image" in card.proof
    probe = report_of(str(FIXTURES / "probe-kill-vs-crash-while-loading"))
    card = next(c for c in probe.cards if c.finding == "probe-killed-during-load")
    assert "failed liveness probe" in card.proof
    busy = report_of(str(FIXTURES / "busy-namespace"))
    (oom,) = [c for c in busy.cards if c.finding == "container-oomkilled"]
    assert (len(oom.pods), oom.pods_total) == (4, 4)


def _cache_denied_at(tmp_path: Path, name: str, path: str,
                     container: dict[str, Any] | None = None) -> Path:
    """cache-dir-not-writable's granite pod with another denied path (previous log line 20)
    and its vllm container changed by ``container`` (env, volumeMounts, securityContext)."""
    root = copy_fixture(tmp_path / name, "cache-dir-not-writable")
    log = root / "logs" / "llm" / "granite-84f7c9d5b6-zt5qd" / "vllm.previous.log"
    log.write_text(log.read_text().replace("Permission denied: '/.cache'",
                                           f"Permission denied: '{path}'"))
    pods = load_list(root, "pods")
    for pod in pods["items"]:
        if pod["metadata"]["name"] == "granite-84f7c9d5b6-zt5qd":
            spec = pod["spec"]
            for c in spec["containers"]:
                if c["name"] == "vllm":
                    c.update(container or {})
            for m in (container or {}).get("volumeMounts", []):
                spec.setdefault("volumes", []).append(
                    {"name": m["name"], "persistentVolumeClaim": {"claimName": m["name"]}})
    save_list(root, "pods", pods)
    return root


def test_cache_dir_fix_is_chosen_from_the_path_the_container_could_not_write(
        tmp_path: Path) -> None:
    """line 20 "PermissionError: [Errno 13] Permission denied: '/.cache'": outside every
    volume, no variable places it: an emptyDir for HOME (and /tmp on a read-only root);
    on a volume: that volume's permissions, no patch; under HF_HOME: that variable; under
    /tmp: an emptyDir there."""
    home = fix_of(FIXTURES / "cache-dir-not-writable", "granite-84f7c9d5b6",
                  "cache-dir-not-writable")
    assert "`/.cache` is outside every volume" in home.text
    assert home.edits is not None
    assert home.edits["container"]["env+"] == [{"name": "HOME", "value": "/cache"}]
    assert home.edits["container"]["volumeMounts+"] == [{"name": "vllm-cache",
                                                         "mountPath": "/cache"}]

    on_volume = fix_of(_cache_denied_at(
        tmp_path, "pvc", "/models/hub/models--ibm-granite--granite-3.3-8b-instruct/blobs/x",
        {"env": [{"name": "HF_HOME", "value": "/models"}],
         "volumeMounts": [{"name": "models", "mountPath": "/models/"}]}),
        "granite-84f7c9d5b6", "cache-dir-not-writable")
    assert "is on the volume mounted at `/models/`" in on_volume.text
    assert "fsGroup" in on_volume.text and on_volume.edits is None

    by_env = fix_of(_cache_denied_at(tmp_path, "env", "/data/hf/hub",
                                     {"env": [{"name": "HF_HOME", "value": "/data/hf"}]}),
                    "granite-84f7c9d5b6", "cache-dir-not-writable")
    assert "`/data/hf/hub` is where `HF_HOME` puts a cache" in by_env.text
    assert by_env.edits is None

    read_only = fix_of(_cache_denied_at(
        tmp_path, "ro", "/root/.cache/huggingface",
        {"securityContext": {"readOnlyRootFilesystem": True}}),
        "granite-84f7c9d5b6", "cache-dir-not-writable")
    assert "read-only root filesystem" in read_only.text and read_only.edits is not None
    assert [m["mountPath"] for m in read_only.edits["container"]["volumeMounts+"]] == [
        "/cache", "/tmp"]

    tmp = fix_of(_cache_denied_at(tmp_path, "tmp", "/tmp/torchinductor_1000650000"),
                 "granite-84f7c9d5b6", "cache-dir-not-writable")
    assert tmp.edits is not None
    assert tmp.edits["container"]["volumeMounts+"] == [{"name": "vllm-tmp",
                                                        "mountPath": "/tmp"}]


def test_cache_dir_fix_without_an_absolute_path_says_so_and_gives_the_advice(
        tmp_path: Path) -> None:
    """A relative path (huggingface_hub PR#3714's '.locks/...') names no place to fix."""
    fix = fix_of(_cache_denied_at(tmp_path, "rel", ".locks/models--x--y/6e2501a3.lock"),
                 "granite-84f7c9d5b6", "cache-dir-not-writable")
    assert "is relative" in fix.text and "writable place" in fix.text
    assert fix.edits is None


_QUANTITY = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:Ki|Mi|Gi|Ti)\b")
_AS_IS = re.compile(r"\bit is (\d+(?:\.\d+)?(?:Ki|Mi|Gi|Ti))\b")


@pytest.mark.parametrize("fixture", fixture_names())
def test_a_fix_text_names_the_values_its_patch_sets(fixture: str) -> None:
    """One /dev/shm size, one memory limit: every size the fixes and the remediations of
    a patched workload propose is the one its patch sets (a size said as what it is now,
    "it is 16Gi", is not a proposal)."""
    report = report_of(str(FIXTURES / fixture))
    for wp in report.patches:
        sizes = set(_QUANTITY.findall(json.dumps(wp.patch.body)))
        texts = [c.fix.text for c in report.cards
                 if c.finding in wp.findings and c.workload == wp.workload and c.fix]
        texts += [f.remediation for p in report.pods if p.owner == wp.workload
                  for f in p.findings]
        for text in texts:
            said = set(_QUANTITY.findall(text)) - set(_AS_IS.findall(text))
            assert said <= sizes, (wp.workload, said - sizes, text)


def _unit_fix(pattern_id: str, **case: Any) -> Fix | None:
    """The fix a pattern computes on a small in-memory pod (tests/support/unit.py)."""
    from tests.support.unit import context
    from triage.fixes import compute
    from triage.rules.evaluate import Evaluator, PodDiagnosis, diagnose
    from triage.rules.loader import load_patterns

    pattern = load_patterns().by_id()[pattern_id]
    ctx = context(**case)
    diag = PodDiagnosis(ctx.pod, [ctx])
    evaluator = Evaluator([])
    diagnose(evaluator, (pattern,), diag)
    assert [f.id for f in diag.findings] == [pattern_id], diag.findings
    return compute.compute(pattern, ctx, lambda cond: evaluator.evaluate(
        cond, ctx, diag, pattern_id).true)


CRASH_LOOP = {"state": {"waiting": {"reason": "CrashLoopBackOff"}}, "ready": False,
              "lastState": {"terminated": {"reason": "Error", "exitCode": 1}}, "restartCount": 3}


@pytest.mark.parametrize("order", ["bar after", "bar before"])
def test_a_capture_oom_gets_the_capture_fix_when_another_rank_prints_the_bar(order: str) -> None:
    """TP=2: rank 1 runs out in the capture, its traceback keeps only _dummy_run (the
    profiling run's frame too), rank 0's capture bar is a line away: the computed
    graph-capture fix, not the generic list."""
    oom = ("(VllmWorker rank=1 pid=413) ERROR 11-28 03:06:57 [multiproc_executor.py:654]   File "
           "\"/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py\", line "
           "2203, in _dummy_run\n(VllmWorker rank=1 pid=413) ERROR 11-28 03:06:57 "
           "[multiproc_executor.py:654] torch.OutOfMemoryError: CUDA out of memory. Tried to "
           "allocate 160.00 MiB. GPU 1 has a total capacity of 22.03 GiB of which 91.06 MiB is "
           "free.\n")
    bar = ("Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):  43%|████▎     | 29/67 "
           "[00:04<00:05,  7.02it/s]\n")
    fix = _unit_fix("cuda-oom", status=CRASH_LOOP,
                    container={"args": ["--model", "Qwen/Qwen3-8B", "--tensor-parallel-size", "2",
                                        "--gpu-memory-utilization", "0.97"]},
                    previous_log=oom + bar if order == "bar after" else bar + oom)
    assert fix is not None and fix.text.startswith("The OOM is in CUDA graph capture"), fix
    assert fix.value_map()["gpu_memory_utilization"] == 0.9
