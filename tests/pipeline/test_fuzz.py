"""Fuzzing every parser that takes cluster or file input: no traceback, no hang,
bounded memory.

hypothesis builds input from the pieces real input is made of (vLLM log
prefixes, Prometheus syntax, kubeconfig and pattern keys, API fields) mixed
with controls, wrong types and garbage. Each parser must end, within a time
bound, with its result or its own documented error: a log gives lines, a
metrics page a view or "malformed", a kubeconfig a connection or a
CollectError, a pattern file a Pattern or a PatternError, a bundle a Snapshot
or an InputError; and a snapshot of objects of the wrong types still gives a
report in every format. The default profile keeps this to seconds
(tests/conftest.py); HYPOTHESIS_PROFILE=deep runs many more examples.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import tarfile
import time
import tracemalloc
from collections.abc import Callable
from typing import Any, TypeVar

import pytest
import yaml
from hypothesis import example, given
from hypothesis import strategies as st

from tests.conftest import FIXTURES
from triage import pipeline
from triage.collect import CollectError, InputError, bundle
from triage.collect.shape import normalize_items
from triage.logs import LogSource, Query, QuerySet, scan
from triage.rules.loader import PatternError, parse_pattern
from triage.snapshot import Snapshot
from triage.vllm.metrics import parse_metrics
from triage.vllm.milestones import QUERIES, read_startup
from triage.writers import writers

# Fuzzing spends its seconds on purpose: the full run's, not the quick one's.
pytestmark = pytest.mark.slow

T = TypeVar("T")
BOUND_S = 10.0
PEAK_BYTES = 256 * 1024 * 1024


def bounded(fn: Callable[[], T]) -> T:
    """Run ``fn`` and check it stayed within the time and memory bounds."""
    tracemalloc.start()
    start = time.perf_counter()
    try:
        result = fn()
    finally:
        elapsed = time.perf_counter() - start
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert elapsed < BOUND_S, elapsed
    assert peak < PEAK_BYTES, peak
    return result


def pieces(*words: str) -> st.SearchStrategy[str]:
    noise = st.text(max_size=6)
    controls = st.sampled_from(["\x00", "\x1b[31m", "\x1b]52;c;x\x07", "\r", "\n", "\t", "\ufffd",
                                "\u202e", "\x9b", "\\", '"', "'", "{", "}", "[", "]", ":", "="])
    return st.lists(st.one_of(st.sampled_from(words), noise, controls), max_size=60).map("".join)


LOG_TEXT = pieces(
    "(EngineCore_0 pid=270) ", "(APIServer pid=1) ", "INFO 11-28 02:40:01 ", "ERROR ",
    "WARNING ", "[core.py:700] ", "[rank0]: ", "2026-11-28T03:06:57.123Z ", "INFO:     ",
    "torch.OutOfMemoryError: CUDA out of memory. ", "Traceback (most recent call last):",
    "GPU KV cache size: 44,416 tokens", "Maximum concurrency for 8,192 tokens per request: 5.4x",
    "Starting vLLM API server", "Loading weights took 4.2 seconds", "\n", "\r\n", "100%|█████|",
)


@given(LOG_TEXT)
def test_fuzz_logs(text: str) -> None:
    def parse() -> None:
        import regex

        index = scan(LogSource.of(text), QUERIES)
        read_startup(index)
        extra = QuerySet()
        query = extra.add(Query(regex.compile(r"(?m)CUDA out of memory|^Traceback")))
        scan(LogSource.of(text), extra).result(query)
    bounded(parse)


METRICS_TEXT = pieces(
    "# HELP ", "# TYPE ", "vllm:num_requests_running", "vllm:num_requests_waiting",
    "vllm:e2e_request_latency_seconds", "_bucket", "_sum", "_count", "histogram ", "gauge ",
    "counter ", '{le="1.0"}', '{le="+Inf"}', '{model_name="m",engine="0"}', " 1.0", " NaN",
    " +Inf", " -1e308", " 3", "\n", "vllm:cache_config_info", '{block_size="16"}',
    "vllm:kv_cache_usage_perc", "vllm:num_preemptions_total",
)


@given(METRICS_TEXT)
def test_fuzz_metrics(text: str) -> None:
    view = bounded(lambda: parse_metrics(text))
    if not view.error:
        view.derived()


def _kubeconfig_values() -> st.SearchStrategy[Any]:
    leaves = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=10),
                       st.sampled_from(["https://127.0.0.1:1", "not a url", "ctx", "default"]))
    return st.recursive(leaves, lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["name", "cluster", "user", "context", "server",
                                         "namespace", "token", "certificate-authority-data",
                                         "insecure-skip-tls-verify", "client-key-data",
                                         "username", "password"]), inner, max_size=4)),
        max_leaves=12)


KUBECONFIG = st.fixed_dictionaries({}, optional={
    "apiVersion": st.sampled_from(["v1", 1, None]),
    "kind": st.sampled_from(["Config", "List", None]),
    "current-context": st.one_of(st.text(max_size=5), st.sampled_from(["ctx"]), st.none()),
    "clusters": _kubeconfig_values(), "users": _kubeconfig_values(),
    "contexts": _kubeconfig_values(), "preferences": _kubeconfig_values(),
})


@given(KUBECONFIG)
def test_fuzz_kubeconfig(tmp_path_factory: pytest.TempPathFactory, config: dict[str, Any]
                         ) -> None:
    from triage.collect.live import connect

    path = tmp_path_factory.mktemp("kc") / "config"
    path.write_text(yaml.safe_dump(config))
    with contextlib.suppress(CollectError):
        bounded(lambda: connect(str(path), None, 1.0, say=lambda _line: None))


PATTERN_TEXT = pieces(
    "id: x\n", "severity: critical\n", "severity: bogus\n", "title: t\n", "step: 2\n",
    "step: 99\n", "summary: s\n", "remediation: r\n", "when:\n", "  log: {regex: 'a('}\n",
    "  log: {regex: 'CUDA'}\n", "  any:\n", "  - fact: {name: gpu_count, gt: 0}\n",
    "  - metric: {name: requests_waiting, gt: x}\n", "examples:\n", "- name: e\n",
    "  reports: true\n", "yields_to: [a]\n", "&a [1]\n", "*a\n", "- \n", "  ", "\n",
)


@given(PATTERN_TEXT)
def test_fuzz_pattern_files(text: str) -> None:
    with contextlib.suppress(PatternError):
        bounded(lambda: parse_pattern(text, "fuzz.yaml"))


def _report_everything(snap: Snapshot) -> None:
    report = pipeline.analyze(snap)
    for render in writers().values():
        render(report, False)


API_JUNK = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8),
                     st.lists(st.integers(), max_size=2), st.dictionaries(
                         st.text(max_size=3), st.integers(), max_size=2))
BUNDLE_FILES = st.dictionaries(
    st.sampled_from(["manifest.json", "incident.yaml", "objects/pods.json", "objects/pods.yaml",
                     "objects/events.yaml", "objects/nodes.json", "objects/configmaps.yaml",
                     "logs/llm/p/vllm.log", "logs/llm/p/vllm.previous.log", "metrics/llm/p.txt",
                     "logs/x.log", "objects/deployments.json"]),
    st.one_of(
        st.binary(max_size=200),
        API_JUNK.map(json.dumps),
        st.fixed_dictionaries({"schema": st.sampled_from(["vllm-triage/bundle/v1", None, 3]),
                               "namespace": API_JUNK, "context": API_JUNK,
                               "failures": API_JUNK, "notes": API_JUNK,
                               "items": st.lists(API_JUNK, max_size=3)}).map(json.dumps),
        LOG_TEXT,
    ),
    max_size=6,
)


@given(BUNDLE_FILES)
def test_fuzz_bundle_directories(tmp_path_factory: pytest.TempPathFactory,
                                 files: dict[str, Any]) -> None:
    root = tmp_path_factory.mktemp("bundle")
    for rel, content in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(content if isinstance(content, bytes) else content.encode())

    def run() -> None:
        try:
            snap = bundle.load(root)
        except InputError:
            return
        _report_everything(snap)
    bounded(run)


CUDA_OOM_BUNDLE: list[bytes] = []


def _real_bundle() -> bytes:
    if not CUDA_OOM_BUNDLE:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            tar.add(FIXTURES / "cuda-oom", arcname="fx")
        CUDA_OOM_BUNDLE.append(buf.getvalue())
    return CUDA_OOM_BUNDLE[0]


@given(st.one_of(st.binary(max_size=300),
                 st.tuples(st.integers(0, 4000), st.binary(max_size=20)).map(
                     lambda cut: _real_bundle()[:cut[0]] + cut[1])))
def test_fuzz_bundle_archives(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    path = tmp_path_factory.mktemp("tar") / "b.tar.gz"
    path.write_bytes(data)

    def run() -> None:
        with contextlib.suppress(InputError):
            _report_everything(bundle.load(path))
    bounded(run)


SNAPSHOTS = {name: bundle.load(FIXTURES / name) for name in (
    "cuda-oom", "kserve-target-too-high", "autoscaling-on-cpu", "gpu-pending-insufficient",
    "rollout-gpu-surge", "probe-timing", "shm-bus-error-tp2", "model-cache-missing")}


def _paths(obj: Any, prefix: tuple[Any, ...] = (), depth: int = 0) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    if depth > 9:
        return out
    children = obj.items() if isinstance(obj, dict) else enumerate(obj) \
        if isinstance(obj, list) else []
    for key, value in children:
        out.append((*prefix, key))
        out += _paths(value, (*prefix, key), depth + 1)
    return out


@given(st.sampled_from(sorted(SNAPSHOTS)), st.data())
def test_fuzz_api_objects_of_wrong_types(name: str, data: st.DataObject) -> None:
    snap = copy.deepcopy(SNAPSHOTS[name])
    kinds = sorted(k for k, v in snap.objects.items() if v)
    for _ in range(data.draw(st.integers(1, 4))):
        kind = data.draw(st.sampled_from(kinds))
        obj = data.draw(st.sampled_from(snap.objects[kind]))
        paths = _paths(obj)
        if not paths:
            continue
        path = data.draw(st.sampled_from(paths))
        value = data.draw(st.one_of(API_JUNK, st.sampled_from(
            ["", "1Gi", "nan", "-1", "0.98", "--x", "25%", "True", "{}", "\x1b[2J"])))
        target: Any = obj
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    # What both collectors do with objects from outside, then the whole analysis.
    notes: list[str] = []
    snap.objects = {k: normalize_items(k, v, notes) for k, v in snap.objects.items()}
    bounded(lambda: _report_everything(snap))


@given(st.lists(st.one_of(
    st.sampled_from(["--max-model-len", "--gpu-memory-utilization", "--tensor-parallel-size",
                     "--max-num-seqs", "--max-num-batched-tokens", "--port", "--config",
                     "--kv-cache-dtype", "-tp", "serve", "vllm", "--model"]),
    st.sampled_from(["nan", "inf", "-inf", "1e400", "", "0", "-1", "1k", "32Gi", "0.98", "x",
                     "99999999999999999999999"])), max_size=12))
@example(["--max-model-len", "nan"])  # found by the deep profile: int(float("nan"))
@example(["--max-model-len", "inf", "--max-num-seqs", "-inf"])
def test_fuzz_engine_args(args: list[str]) -> None:
    snap = copy.deepcopy(SNAPSHOTS["cuda-oom"])
    pod = next(p for p in snap.pods() if "vllm" in json.dumps(p))
    pod["spec"]["containers"][0]["args"] = args
    bounded(lambda: _report_everything(snap))
