"""Build fixture variants in temporary directories for the tests and the benchmark.

A variant starts as a copy of a recorded fixture (or empty) and gets faults,
extra pods, logs and metrics added, so a test can say exactly what it
changes without adding another directory under fixtures/.
"""

from __future__ import annotations

import copy
import shutil
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import FIXTURES

CUDA_OOM_POD = "vllm-qwen-5b7d9c8f6d-7xk2p"

METRICS_TEXT = """\
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="Qwen/Qwen3-8B"} 3.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="Qwen/Qwen3-8B"} 0.0
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="Qwen/Qwen3-8B"} 0.41
# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{engine="0",model_name="Qwen/Qwen3-8B"} 0.0
# HELP vllm:e2e_request_latency_seconds Histogram of e2e request latency in seconds.
# TYPE vllm:e2e_request_latency_seconds histogram
vllm:e2e_request_latency_seconds_bucket{engine="0",le="1.0",model_name="Qwen/Qwen3-8B"} 120.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="2.5",model_name="Qwen/Qwen3-8B"} 380.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="5.0",model_name="Qwen/Qwen3-8B"} 470.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="10.0",model_name="Qwen/Qwen3-8B"} 498.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="+Inf",model_name="Qwen/Qwen3-8B"} 500.0
vllm:e2e_request_latency_seconds_sum{engine="0",model_name="Qwen/Qwen3-8B"} 1012.5
vllm:e2e_request_latency_seconds_count{engine="0",model_name="Qwen/Qwen3-8B"} 500.0
"""

RUNNING_LOG = """\
(APIServer pid=1) INFO 11-28 02:40:01 [api_server.py:1805] vLLM API server version 0.10.1.1
(APIServer pid=1) INFO 11-28 02:40:09 [__init__.py:1750] Using max model len 8192
(EngineCore_0 pid=270) INFO 11-28 02:40:31 [gpu_worker.py:276] Available KV cache memory: 6.10 GiB
(EngineCore_0 pid=270) INFO 11-28 02:40:31 [kv_cache_utils.py:849] GPU KV cache size: 44,416 tokens
(APIServer pid=1) INFO 11-28 02:41:02 [api_server.py:1880] Starting vLLM API server 0 on http://0.0.0.0:8000
(APIServer pid=1) INFO:     Application startup complete.
(APIServer pid=1) INFO:     10.48.0.1:51234 - "GET /metrics HTTP/1.1" 200 OK
"""


def load_list(root: Path, plural: str) -> dict[str, Any]:
    path = root / "objects" / f"{plural}.yaml"
    if path.exists():
        data: dict[str, Any] = yaml.safe_load(path.read_text()) or {}
        data.setdefault("items", [])
        return data
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": "1"},
            "items": []}


def save_list(root: Path, plural: str, data: dict[str, Any]) -> None:
    (root / "objects").mkdir(parents=True, exist_ok=True)
    (root / "objects" / f"{plural}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))


def copy_fixture(dest: Path, name: str = "cuda-oom", **incident: Any) -> Path:
    """Copy fixtures/NAME to dest and merge ``incident`` keys (faults, namespace, ...)."""
    shutil.copytree(FIXTURES / name, dest)
    meta = yaml.safe_load((dest / "incident.yaml").read_text()) or {}
    meta.update(incident)
    (dest / "incident.yaml").write_text(yaml.safe_dump(meta, sort_keys=False))
    return dest


def running_pod(template: dict[str, Any], name: str, namespace: str | None = None,
                labels: dict[str, str] | None = None, image: str | None = None,
                node: str | None = None) -> dict[str, Any]:
    """A healthy copy of ``template``: Running, ready, never restarted."""
    pod = copy.deepcopy(template)
    md = pod["metadata"]
    md["name"] = name
    md["uid"] = f"uid-{name}"
    if namespace:
        md["namespace"] = namespace
    if labels is not None:
        md["labels"] = labels
    container = pod["spec"]["containers"][0]
    if image:
        container["image"] = image
    if node:
        pod["spec"]["nodeName"] = node
    pod["status"]["phase"] = "Running"
    pod["status"]["conditions"] = [
        {"type": t, "status": "True", "lastTransitionTime": "2026-11-28T02:41:05Z"}
        for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
                  "PodScheduled")]
    pod["status"]["containerStatuses"] = [{
        "name": container["name"], "image": container["image"], "imageID": "",
        "containerID": f"containerd://{name}", "restartCount": 0, "started": True,
        "ready": True, "state": {"running": {"startedAt": "2026-11-28T02:40:00Z"}},
        "lastState": {}}]
    return pod


def add_pod(root: Path, pod: dict[str, Any], log: str | bytes | None = None,
            previous_log: str | bytes | None = None, metrics: str | bytes | None = None) -> None:
    pods = load_list(root, "pods")
    pods["items"].append(pod)
    save_list(root, "pods", pods)
    ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
    container = pod["spec"]["containers"][0]["name"]
    for text, suffix in ((log, ".log"), (previous_log, ".previous.log")):
        if text is not None:
            write_bytes(root / "logs" / ns / name / f"{container}{suffix}", text)
    if metrics is not None:
        write_bytes(root / "metrics" / ns / f"{name}.txt", metrics)


def write_bytes(path: Path, data: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)


def template_pod(root: Path, name: str = CUDA_OOM_POD) -> dict[str, Any]:
    pod = next(p for p in load_list(root, "pods")["items"] if p["metadata"]["name"] == name)
    return copy.deepcopy(pod)


HEALTHY_POD = "vllm-qwen-6d8f7b9c5d-2kqzt"


def crashlooping(dest: Path, pod_name: str = HEALTHY_POD) -> Path:
    """well-sized-healthy a few minutes later: one of its pods crash-loops, its engine
    killed by a CUDA OOM (the cuda-oom fixture's log), the same pod, restarted 6 times."""
    root = copy_fixture(dest, "well-sized-healthy")
    pods = load_list(root, "pods")
    pod = next(p for p in pods["items"] if p["metadata"]["name"] == pod_name)
    status = pod["status"]
    for cond in status["conditions"]:
        if cond["type"] in ("Ready", "ContainersReady"):
            cond.update(status="False", reason="ContainersNotReady",
                        message="containers with unready status: [vllm]")
    cs = status["containerStatuses"][0]
    cs.update(restartCount=6, started=False, ready=False, state={"waiting": {
        "reason": "CrashLoopBackOff",
        "message": f"back-off 5m0s restarting failed container=vllm pod={pod_name}_llm"}},
        lastState={"terminated": {"exitCode": 1, "reason": "Error",
                                  "startedAt": "2026-11-28T03:05:12Z",
                                  "finishedAt": "2026-11-28T03:06:58Z",
                                  "containerID": "containerd://9e1f4a7c0d3b"}})
    save_list(root, "pods", pods)
    logs = root / "logs" / "llm" / pod_name
    (logs / "vllm.log").unlink(missing_ok=True)
    (root / "metrics" / "llm" / f"{pod_name}.txt").unlink(missing_ok=True)
    write_bytes(logs / "vllm.previous.log", (FIXTURES / "cuda-oom" / "logs" / "llm" /
                                             CUDA_OOM_POD / "vllm.previous.log").read_bytes())
    return root


def rename_values(root: Path, names: dict[str, str]) -> None:
    """Every string value equal to a key becomes its value: in every object, in
    incident.yaml, and in the log folders' and files' names (a bundle's names may be
    anything: the tests give them hostile ones)."""
    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return names.get(value, value) if isinstance(value, str) else value

    for path in [*(root / "objects").glob("*.yaml"), root / "incident.yaml"]:
        path.write_text(yaml.safe_dump(walk(yaml.safe_load(path.read_text())),
                                       allow_unicode=True))
    logs = root / "logs"
    for path in sorted(logs.rglob("*") if logs.exists() else (), key=lambda p: -len(p.parts)):
        stem = path.name.split(".")[0] if path.is_file() else path.name
        if stem in names:
            path.rename(path.with_name(names[stem] + path.name[len(stem):]))


def merge_fixture(root: Path, other: Path) -> None:
    """``other``'s objects and logs added to the fixture at ``root``."""
    for path in (other / "objects").glob("*.yaml"):
        mine = load_list(root, path.stem)
        mine["items"] += load_list(other, path.stem)["items"]
        save_list(root, path.stem, mine)
    if (other / "logs").exists():
        shutil.copytree(other / "logs", root / "logs", dirs_exist_ok=True)
