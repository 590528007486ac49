"""Synthetic vLLM workloads for the benchmark: a namespace of N pods, and one huge log.

Lines are what vLLM prints (V1 start-up, uvicorn access lines, loggers.py
throughput lines, "Received request" lines); one pod in ten crash-loops with a
CUDA OOM at the end of its previous log.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import yaml

NS = "llm"
MODEL = "meta-llama/Llama-3.1-8B-Instruct"


# --- synthetic namespace -------------------------------------------------------------------

def _startup(rng: random.Random, day: str) -> list[str]:
    t = f"{day} 0{rng.randint(0, 9)}:{rng.randint(10, 59)}"
    return [
        f"(APIServer pid=1) INFO {t}:01 [api_server.py:1805] vLLM API server version 0.10.1.1",
        f"(APIServer pid=1) INFO {t}:01 [utils.py:326] non-default args: {{'model': '{MODEL}', "
        "'max_model_len': 8192, 'gpu_memory_utilization': 0.9}",
        f"(APIServer pid=1) INFO {t}:09 [__init__.py:711] Resolved architecture: "
        "LlamaForCausalLM",
        f"(APIServer pid=1) INFO {t}:09 [__init__.py:1750] Using max model len 8192",
        f"(EngineCore_0 pid=270) INFO {t}:15 [gpu_model_runner.py:1953] Starting to load model "
        f"{MODEL}...",
        f"(EngineCore_0 pid=270) INFO {t}:25 [default_loader.py:262] Loading weights took "
        f"{rng.uniform(5, 40):.2f} seconds",
        f"(EngineCore_0 pid=270) INFO {t}:31 [gpu_worker.py:276] Available KV cache memory: "
        f"{rng.uniform(4, 20):.2f} GiB",
        f"(EngineCore_0 pid=270) INFO {t}:31 [kv_cache_utils.py:849] GPU KV cache size: "
        f"{rng.randint(30000, 160000):,} tokens",
        f"(EngineCore_0 pid=270) INFO {t}:31 [kv_cache_utils.py:853] Maximum concurrency for "
        f"8,192 tokens per request: {rng.uniform(4, 20):.2f}x",
        f"(APIServer pid=1) INFO {t}:48 [api_server.py:1880] Starting vLLM API server 0 on "
        "http://0.0.0.0:8000",
        "(APIServer pid=1) INFO:     Application startup complete.",
    ]


def _traffic(rng: random.Random, day: str, n: int) -> list[str]:
    out = []
    for i in range(n):
        t = f"{day} {10 + i // 3600 % 10}:{i // 60 % 60:02d}:{i % 60:02d}"
        r = rng.random()
        if r < 0.55:
            peer = f"10.48.{rng.randint(0, 9)}.{rng.randint(2, 250)}"
            port = rng.randint(30000, 65000)
            out.append(f"(APIServer pid=1) INFO:     {peer}:{port} - "
                       "\"POST /v1/chat/completions HTTP/1.1\" 200 OK")
        elif r < 0.75:
            out.append(f"(APIServer pid=1) INFO {t} [loggers.py:123] Engine 000: Avg prompt "
                       f"throughput: {rng.uniform(0, 9000):.1f} tokens/s, Avg generation "
                       f"throughput: {rng.uniform(0, 2000):.1f} tokens/s, Running: "
                       f"{rng.randint(0, 64)} reqs, Waiting: {rng.randint(0, 4)} reqs, GPU KV "
                       f"cache usage: {rng.uniform(0, 95):.1f}%, Prefix cache hit rate: "
                       f"{rng.uniform(0, 60):.1f}%")
        elif r < 0.95:
            out.append(f"(APIServer pid=1) INFO {t} [logger.py:43] Received request "
                       f"chatcmpl-{rng.getrandbits(64):016x}: prompt: '<|begin_of_text|>"
                       f"<|start_header_id|>user<|end_header_id|>...', params: SamplingParams("
                       f"n=1, temperature={rng.choice([0.0, 0.7, 1.0])}, max_tokens="
                       f"{rng.choice([256, 512, 1024])}), lora_request: None.")
        else:
            out.append("(APIServer pid=1) INFO:     10.48.0.1:51234 - \"GET /metrics HTTP/1.1\" "
                       "200 OK")
    return out


OOM_TAIL = [
    "(EngineCore_0 pid=270) ERROR 11-28 03:06:57 [core.py:700] EngineCore failed to start.",
    "(EngineCore_0 pid=270) ERROR 11-28 03:06:57 [core.py:700] Traceback (most recent call "
    "last):",
    "(EngineCore_0 pid=270) ERROR 11-28 03:06:57 [core.py:700]   File \"/usr/local/lib/"
    "python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py\", line 2708, in capture_model",
    "(EngineCore_0 pid=270) ERROR 11-28 03:06:57 [core.py:700] torch.OutOfMemoryError: CUDA out "
    "of memory. Tried to allocate 160.00 MiB. GPU 0 has a total capacity of 22.03 GiB of which "
    "91.06 MiB is free.",
    "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above. "
    "Failed core proc(s): {'EngineCore_0': 1}",
]


def _metrics(rng: random.Random) -> str:
    lines = []
    for name, kind, value in (("vllm:num_requests_running", "gauge", rng.randint(0, 64)),
                              ("vllm:num_requests_waiting", "gauge", rng.randint(0, 3)),
                              ("vllm:kv_cache_usage_perc", "gauge", rng.uniform(0, 0.9)),
                              ("vllm:num_preemptions_total", "counter", 0)):
        lines += [f"# HELP {name} x", f"# TYPE {name} {kind}",
                  f'{name}{{engine="0",model_name="{MODEL}"}} {value}']
    for hist in ("vllm:e2e_request_latency_seconds", "vllm:time_to_first_token_seconds",
                 "vllm:inter_token_latency_seconds"):
        lines += [f"# HELP {hist} x", f"# TYPE {hist} histogram"]
        total = 0
        for le in ("0.01", "0.05", "0.1", "0.5", "1.0", "2.5", "5.0", "10.0", "+Inf"):
            total += rng.randint(0, 400)
            lines.append(f'{hist}_bucket{{engine="0",le="{le}",model_name="{MODEL}"}} {total}.0')
        lines.append(f'{hist}_sum{{engine="0",model_name="{MODEL}"}} {total * 0.9:.1f}')
        lines.append(f'{hist}_count{{engine="0",model_name="{MODEL}"}} {total}.0')
    return "\n".join(lines) + "\n"


def _pod(i: int, node: str, crashing: bool) -> dict[str, Any]:
    name = f"vllm-llama-6f7c9d8b5-{i:05d}"
    running = {"running": {"startedAt": "2026-11-28T02:40:00Z"}}
    waiting = {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s"}}
    return {
        "metadata": {"name": name, "namespace": NS, "uid": f"uid-{i}",
                     "creationTimestamp": "2026-11-27T10:00:00Z",
                     "labels": {"app": "vllm-llama", "pod-template-hash": "6f7c9d8b5"},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                          "name": "vllm-llama-6f7c9d8b5", "uid": "rs-uid",
                                          "controller": True}]},
        "spec": {"nodeName": node, "containers": [{
            "name": "vllm", "image": "vllm/vllm-openai:v0.10.1.1",
            "args": ["--model", MODEL, "--port", "8000", "--gpu-memory-utilization", "0.9",
                     "--max-model-len", "8192"],
            "ports": [{"containerPort": 8000, "name": "http", "protocol": "TCP"}],
            "resources": {"limits": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "1"},
                          "requests": {"cpu": "4", "memory": "24Gi", "nvidia.com/gpu": "1"}},
            "startupProbe": {"httpGet": {"path": "/health", "port": 8000},
                             "periodSeconds": 10, "failureThreshold": 60},
            "livenessProbe": {"httpGet": {"path": "/health", "port": 8000},
                              "periodSeconds": 15, "timeoutSeconds": 5}}]},
        "status": {"phase": "Running", "podIP": f"10.48.{i // 250}.{i % 250 + 2}",
                   "containerStatuses": [{
                       "name": "vllm", "image": "vllm/vllm-openai:v0.10.1.1",
                       "restartCount": 3 if crashing else 1, "ready": not crashing,
                       "started": not crashing,
                       "state": waiting if crashing else running,
                       "lastState": {"terminated": {
                           "exitCode": 1 if crashing else 0,
                           "reason": "Error" if crashing else "Completed",
                           "startedAt": "2026-11-28T01:00:00Z",
                           "finishedAt": "2026-11-28T02:39:00Z"}}}]},
    }


def generate(root: Path, pods: int, lines: int, seed: int = 7) -> dict[str, int]:
    """Write a fixture directory: pods, events, nodes, workloads, logs, metrics."""
    rng = random.Random(seed)
    (root / "objects").mkdir(parents=True)
    nodes = [f"gke-inference-l4-pool-{i:04d}" for i in range(max(1, pods // 4))]
    items, events = [], []
    sizes = {"log_bytes": 0, "metrics_bytes": 0}
    for i in range(pods):
        crashing = i % 10 == 0  # one in ten has an OOM in its previous run
        pod = _pod(i, nodes[i % len(nodes)], crashing)
        items.append(pod)
        name = pod["metadata"]["name"]
        logs = root / "logs" / NS / name
        logs.mkdir(parents=True)
        prev = _startup(rng, "11-28") + _traffic(rng, "11-28", lines - 11)
        if crashing:
            prev = prev[: lines - len(OOM_TAIL)] + OOM_TAIL
        cur = _startup(rng, "11-28") + _traffic(rng, "11-28", lines - 11)
        (logs / "vllm.previous.log").write_text("\n".join(prev[:lines]) + "\n")
        if not crashing:
            (logs / "vllm.log").write_text("\n".join(cur[:lines]) + "\n")
            m = root / "metrics" / NS / f"{name}.txt"
            m.parent.mkdir(parents=True, exist_ok=True)
            m.write_text(_metrics(rng))
            sizes["metrics_bytes"] += m.stat().st_size
        sizes["log_bytes"] += sum(p.stat().st_size for p in logs.iterdir())
        for j, (reason, kind, msg) in enumerate((
                ("Pulled", "Normal", 'Container image "vllm/vllm-openai:v0.10.1.1" already '
                 "present on machine"),
                ("Started", "Normal", "Started container vllm"),
                ("Unhealthy", "Warning", "Startup probe failed: connect: connection refused"),
                *((("BackOff", "Warning", "Back-off restarting failed container vllm"),)
                  if crashing else ()))):
            events.append({
                "metadata": {"name": f"{name}.{j:x}", "namespace": NS, "uid": f"ev-{i}-{j}",
                             "creationTimestamp": "2026-11-28T02:40:00Z"},
                "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": name,
                                   "namespace": NS, "uid": f"uid-{i}"},
                "reason": reason, "message": msg, "type": kind, "count": 1 + j,
                "source": {"component": "kubelet", "host": pod["spec"]["nodeName"]},
                "firstTimestamp": "2026-11-28T02:40:00Z",
                "lastTimestamp": "2026-11-28T03:00:00Z"})
    node_items = [{
        "metadata": {"name": n, "uid": f"node-{n}", "creationTimestamp": "2026-11-20T08:00:00Z",
                     "labels": {"cloud.google.com/gke-accelerator": "nvidia-l4"}},
        "status": {"capacity": {"cpu": "16", "memory": "65851060Ki", "nvidia.com/gpu": "4"},
                   "allocatable": {"cpu": "15890m", "memory": "57803956Ki",
                                   "nvidia.com/gpu": "4"},
                   "conditions": [{"type": "DiskPressure", "status": "False"},
                                  {"type": "Ready", "status": "True"}],
                   "nodeInfo": {"kubeletVersion": "v1.31.4-gke.1256000"}}} for n in nodes]
    template = {k: v for k, v in items[0].items() if k != "status"}
    deploy = {"metadata": {"name": "vllm-llama", "namespace": NS, "uid": "dep-uid",
                           "annotations": {"deployment.kubernetes.io/revision": "1"}},
              "spec": {"replicas": pods, "selector": {"matchLabels": {"app": "vllm-llama"}},
                       "template": {"metadata": {"labels": {"app": "vllm-llama"}},
                                    "spec": template["spec"]}},
              "status": {"replicas": pods, "readyReplicas": pods - pods // 10}}
    rs = {"metadata": {"name": "vllm-llama-6f7c9d8b5", "namespace": NS, "uid": "rs-uid",
                       "annotations": {"deployment.kubernetes.io/revision": "1"},
                       "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                            "name": "vllm-llama", "uid": "dep-uid",
                                            "controller": True}]},
          "spec": {"replicas": pods, "template": deploy["spec"]["template"]},
          "status": {"replicas": pods}}
    for plural, kind, api, objs in (("pods", "PodList", "v1", items),
                                    ("events", "EventList", "v1", events),
                                    ("nodes", "NodeList", "v1", node_items),
                                    ("deployments", "DeploymentList", "apps/v1", [deploy]),
                                    ("replicasets", "ReplicaSetList", "apps/v1", [rs])):
        doc = {"apiVersion": api, "kind": kind, "metadata": {"resourceVersion": "1"},
               "items": objs}
        (root / "objects" / f"{plural}.json").write_text(json.dumps(doc))
    (root / "incident.yaml").write_text(yaml.safe_dump({
        "description": f"synthetic: {pods} vLLM pods, {lines}-line logs",
        "namespace": NS, "context": "bench", "collected_at": "2026-11-28T03:12:09Z"}))
    return {"pods": pods, "events": len(events), "nodes": len(nodes), **sizes}


def generate_huge_line(root: Path, megabytes: int = 10) -> dict[str, int]:
    """One running vLLM pod whose current log is a single line of ``megabytes`` MB."""
    generate(root, pods=1, lines=50)
    name = "vllm-llama-6f7c9d8b5-00000"
    pods = json.loads((root / "objects" / "pods.json").read_text())
    st = pods["items"][0]["status"]["containerStatuses"][0]
    st.update(state={"running": {"startedAt": "2026-11-28T02:40:00Z"}}, ready=True, started=True)
    (root / "objects" / "pods.json").write_text(json.dumps(pods))
    log = root / "logs" / NS / name / "vllm.log"
    log.write_bytes(b"(APIServer pid=1) INFO 11-28 02:41:09 [logger.py:43] Received request: "
                    + b"A" * (megabytes * 1024 * 1024) + b"\n")
    m = root / "metrics" / NS / f"{name}.txt"
    m.parent.mkdir(parents=True, exist_ok=True)
    m.write_text(_metrics(random.Random(1)))
    return {"pods": 1, "log_bytes": log.stat().st_size}
