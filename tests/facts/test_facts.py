"""Every fact measures: a value (with its unit) and the evidence it came from.

One table of cases per fact, on small in-memory pods; a test checks that
every registered fact has cases here, and that a fact whose input was not
read is unknown with the reason, never a default.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.unit import GPU, OWNED_POD, context, deployment_objects, example, hpa, telemetry
from triage.facts import REGISTRY, Scopes
from triage.rules.examples import build
from triage.snapshot import PodTelemetry

CRASHED = {"state": {"waiting": {"reason": "CrashLoopBackOff"}},
           "lastState": {"terminated": {"reason": "OOMKilled", "exitCode": 137,
                                        "finishedAt": "2026-11-28T03:00:00Z"}},
           "restartCount": 3}
V1_START = """\
(APIServer pid=1) INFO 11-28 02:40:01 [api_server.py:1805] vLLM API server version 0.10.1.1
(APIServer pid=1) INFO 11-28 02:40:09 [__init__.py:1750] Using max model len 32768
(EngineCore_0 pid=270) INFO 11-28 02:40:11 [config.py:2434] Chunked prefill is enabled with max_num_batched_tokens=8192.
model-00001-of-00004.safetensors:  41%|████      | 2.04G/4.98G [00:31<00:45, 65.2MB/s]
(EngineCore_0 pid=270) INFO 11-28 02:40:31 [kv_cache_utils.py:849] GPU KV cache size: 44,416 tokens
(EngineCore_0 pid=270) INFO 11-28 02:40:31 [kv_cache_utils.py:853] Maximum concurrency for 32,768 tokens per request: 1.36x
(APIServer pid=1) INFO 11-28 02:41:36 [api_server.py:1880] Starting vLLM API server 0 on http://0.0.0.0:8000
"""
V0_BLOCKS = "INFO 01-11 15:51:18 llm_engine.py:275] # GPU blocks: 229, # CPU blocks: 512\n"
PROBE = {"httpGet": {"path": "/health", "port": 8000}}
ISVC_POD = {"metadata": {"labels": {"serving.kserve.io/inferenceservice": "qwen-chat"}}}


# The example's container (vllm) listed as an init container of the pod.
AS_INIT: dict[str, Any] = {"spec": {"initContainers": [{"name": "vllm", "image": "x"}]}}


def init_status(status: dict[str, Any]) -> dict[str, Any]:
    """A pod with an init container ``init`` in this status."""
    return {"spec": {"initContainers": [{"name": "init", "image": "x"}]},
            "status": {"initContainerStatuses": [{"name": "init", **status}]}}


def isvc(predictor: dict[str, Any] | None = None,
         annotations: dict[str, str] | None = None) -> dict[str, list[dict[str, Any]]]:
    return {"inferenceservices": [{
        "metadata": {"name": "qwen-chat", "namespace": "llm", "annotations": annotations or {}},
        "spec": {"predictor": predictor or {}}}]}


SERVICE_VLLM = {"services": [{"metadata": {"name": "vllm", "namespace": "llm"},
                              "spec": {"clusterIP": "10.96.41.17",
                                       "ports": [{"port": 8000, "protocol": "TCP"}]}}]}
GFD = {"metadata": {"labels": {
    "nvidia.com/gpu.memory": "23034", "nvidia.com/gpu.compute.major": "8",
    "nvidia.com/gpu.compute.minor": "9", "nvidia.com/cuda.driver-version.full": "550.90.07",
    "nvidia.com/cuda.runtime-version.full": "12.4"}}}
OLD_GFD = {"metadata": {"labels": {
    "nvidia.com/cuda.driver.major": "535", "nvidia.com/cuda.driver.minor": "104",
    "nvidia.com/cuda.driver.rev": "05", "nvidia.com/cuda.runtime.major": "12",
    "nvidia.com/cuda.runtime.minor": "2"}}}
WAITING_HPA = [{"type": "Pods", "pods": {"metric": {"name": "vllm:num_requests_waiting"},
                                         "target": {"type": "AverageValue",
                                                    "averageValue": "4"}}}]
RUNNING_HPA = [{"type": "Pods", "pods": {"metric": {"name": "vllm:num_requests_running"},
                                         "target": {"type": "AverageValue",
                                                    "averageValue": "8"}}}]
WITH_HPA = {**deployment_objects(), "horizontalpodautoscalers": [hpa(WAITING_HPA)]}
SCHEDULED_LATE = {"metadata": {"creationTimestamp": "2026-11-28T02:20:00Z"}, "status": {
    "conditions": [{"type": "PodScheduled", "status": "True",
                    "lastTransitionTime": "2026-11-28T02:32:00Z"}]}}
PENDING = {"spec": {"nodeName": None}, "status": {"phase": "Pending", "conditions": [
    {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
     "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}]}}
PULLED = {"reason": "Pulled", "type": "Normal",
          "message": 'Successfully pulled image "vllm/vllm-openai:v0.10.1.1" in 3m12.456s '
                     '(3m12.456s including waiting). Image size: 10218341220 bytes.'}
PULLED_133 = {"reason": "Pulled", "type": "Normal",
              "message": 'spec.containers{vllm}: Successfully pulled image '
                         '"docker.io/vllm/vllm-openai:v0.10.1.1" in 1m4.2s (1m5s including '
                         'waiting). Image size: 10218341220 bytes.'}
PRESENT = {"reason": "Pulled", "type": "Normal",
           "message": 'Container image "vllm/vllm-openai:v0.10.1.1" already present on machine'}
SIDECAR_PULL = {"reason": "Pulled", "type": "Normal",
                "message": 'spec.containers{proxy}: Successfully pulled image "envoy:v1" in 9s '
                           '(9s including waiting). Image size: 1 bytes.'}
CACHE_MOUNT = {"container": {"volumeMounts": [{"name": "models", "mountPath": "/models"}]},
               "pod": {"spec": {"volumes": [{"name": "models", "persistentVolumeClaim": {
                   "claimName": "model-cache"}}]}}}


def pvc(phase: str = "Bound", modes: tuple[str, ...] = ("ReadWriteOnce",)) -> dict[str, Any]:
    out: dict[str, Any] = {
        "metadata": {"name": "model-cache", "namespace": "llm"},
        "spec": {"accessModes": list(modes), "storageClassName": "standard-rwo",
                 "resources": {"requests": {"storage": "200Gi"}}},
        "status": {"phase": phase}}
    if phase == "Bound":
        out["status"].update({"accessModes": list(modes), "capacity": {"storage": "200Gi"}})
    return out


def holder(node: str, phase: str = "Running") -> dict[str, Any]:
    return {"metadata": {"name": "vllm-old", "namespace": "llm"},
            "spec": {"nodeName": node, "containers": [{"name": "vllm"}], "volumes": [
                {"name": "models", "persistentVolumeClaim": {"claimName": "model-cache"}}]},
            "status": {"phase": phase}}

# fact -> [(example keys, expected value)]; value "UNKNOWN" means unknown, not measured.
STATS_V1 = "\n".join([
    "(APIServer pid=1) INFO 11-28 03:10:49 [loggers.py:123] Engine 000: Avg prompt throughput: "
    "5321.4 tokens/s, Avg generation throughput: 1210.7 tokens/s, Running: 118 reqs, Waiting: "
    "9 reqs, GPU KV cache usage: 97.1%, Prefix cache hit rate: 41.0%",
    "(APIServer pid=1) INFO 11-28 03:10:59 [loggers.py:123] Engine 000: Avg prompt throughput: "
    "5102.9 tokens/s, Avg generation throughput: 1188.3 tokens/s, Running: 118 reqs, Waiting: "
    "23 reqs, GPU KV cache usage: 99.8%, Prefix cache hit rate: 40.6%"])
STATS_V0 = ("INFO 11-28 02:58:02 metrics.py:467] Avg prompt throughput: 612.4 tokens/s, Avg "
            "generation throughput: 205.7 tokens/s, Running: 64 reqs, Swapped: 0 reqs, Pending: "
            "17 reqs, GPU KV cache usage: 98.2%, CPU KV cache usage: 0.0%.")

CASES: dict[str, list[tuple[dict[str, Any], Any]]] = {
    "gpu_request": [({}, 1),
                    ({"container": {"resources": {"limits": {"nvidia.com/gpu": "4"}}}}, 4),
                    ({"container": {"resources": {"limits": {"nvidia.com/gpu": None},
                                                  "requests": {"nvidia.com/gpu": None}}}}, 0),
                    # an init container runs before vLLM: what it asks for is not vLLM's
                    ({"pod": AS_INIT}, None)],
    "container_kind": [({}, "container"), ({"pod": AS_INIT}, "init container"),
                       ({"pod": {"spec": {"initContainers": [
                           {"name": "vllm", "image": "x", "restartPolicy": "Always"}]}}},
                        "sidecar container")],
    "init_containers_ran": [({}, False), ({"pod": init_status(
        {"restartCount": 2, "state": {"waiting": {"reason": "CrashLoopBackOff"}}})}, True),
        ({"pod": init_status({"state": {"terminated": {"exitCode": 0}}})}, True),
        ({"pod": init_status({"restartCount": 0, "state": {
            "waiting": {"reason": "PodInitializing"}}})}, False)],
    "tensor_parallel_size": [({}, 1), ({"container": {"args": ["serve", "m", "-tp", "2"]}}, 1),
                             ({"container": {"args": ["--tensor-parallel-size=4"]}}, 4)],
    "pipeline_parallel_size": [({}, 1),
                               ({"container": {"args": ["--pipeline-parallel-size", "2"]}}, 2)],
    "shm_memory_backed": [
        ({}, False),
        ({"pod": {"spec": {"hostIPC": True}}}, True),
        ({"container": {"volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}]},
          "pod": {"spec": {"volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]}}},
         True),
        ({"container": {"volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}]},
          "pod": {"spec": {"volumes": [{"name": "dshm", "emptyDir": {}}]}}}, False)],
    "memory_limit": [({}, "32Gi"), ({"container": {"resources": {"limits": {"memory": None}}}},
                                     None)],
    "restart_count": [({}, 0), ({"status": CRASHED}, 3)],
    "last_exit_code": [({}, None), ({"status": CRASHED}, 137)],
    "last_termination_reason": [({}, None), ({"status": CRASHED}, "OOMKilled")],
    "container_started": [
        ({}, True), ({"status": CRASHED}, True),
        ({"status": {"state": {"waiting": {"reason": "ContainerCreating"}}}}, False)],
    "container_state": [({}, "running"), ({"status": CRASHED}, "waiting")],
    "logs_read": [({}, []), ({"log": "x", "previous_log": "y"}, ["current", "previous"])],
    "log_lines_read": [({"log": "a\n\nb\n"}, 3), ({}, 0)],
    "pod_state": [({}, "Running"), ({"status": CRASHED}, "CrashLoopBackOff")],
    "unschedulable_message": [
        ({}, None),
        ({"pod": {"status": {"conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
             "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}]}}},
         "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.")],
    "node_disk_pressure": [
        ({}, "False"),
        ({"pod": {"spec": {"nodeName": None}}}, None),
        ({"unread": ["nodes"], "pod": {"spec": {"nodeName": "gone"}}}, "UNKNOWN")],
    "image_tag": [({}, "v0.10.1.1"), ({"container": {"image": "vllm/vllm-openai"}}, None),
                  ({"container": {"image": "reg:5000/vllm/vllm-openai:latest"}}, "latest")],
    "image_pinned_by_digest": [({}, False),
                               ({"container": {"image": "vllm/vllm-openai@sha256:abc"}}, True)],
    "service_link_vllm_port": [
        ({}, None),
        ({"objects": SERVICE_VLLM}, "tcp://10.96.41.17:8000"),
        ({"objects": SERVICE_VLLM, "pod": {"spec": {"enableServiceLinks": False}}}, None),
        ({"unread": ["services"]}, "UNKNOWN")],
    "metrics_models": [({}, []), ({"unread": ["metrics"]}, "UNKNOWN")],
    "gpu_memory_utilization": [
        ({}, 0.9),
        ({"container": {"args": ["--gpu-memory-utilization", "0.98"]}}, 0.98),
        ({"container": {"args": ["--config", "/etc/vllm/c.yaml"],
                        "volumeMounts": [{"name": "cfg", "mountPath": "/etc/vllm"}]},
          "pod": {"spec": {"volumes": [{"name": "cfg", "configMap": {"name": "vllm-cfg"}}]}},
          "objects": {"configmaps": [{"metadata": {"name": "vllm-cfg", "namespace": "llm"},
                                      "data": {"c.yaml": "gpu_memory_utilization: 0.95\n"}}]}},
         0.95),
        ({"container": {"args": ["--config", "/etc/vllm/c.yaml"],
                        "volumeMounts": [{"name": "cfg", "mountPath": "/etc/vllm"}]},
          "pod": {"spec": {"volumes": [{"name": "cfg", "configMap": {"name": "vllm-cfg"}}]}},
          "unread": ["configmaps"]}, "UNKNOWN")],
    "max_model_len_set": [({}, False), ({"container": {"args": ["--max-model-len", "8k"]}}, True)],
    "max_model_len": [({"log": V1_START}, 32768),
                      ({"container": {"args": ["--max-model-len", "16384"]}}, 16384),
                      ({}, None), ({"unread": ["logs"]}, "UNKNOWN")],
    "kv_cache_tokens": [({"log": V1_START}, 44416), ({"log": V0_BLOCKS}, 229 * 16), ({}, None)],
    "max_concurrency": [({"log": V1_START}, 1.36), ({}, None)],
    # Issue 17: vLLM's periodic stats lines, the last two minutes of them.
    "recent_requests_waiting": [({"log": STATS_V1}, 23.0), ({"log": STATS_V0}, 17.0),
                                ({"log": V1_START}, None), ({}, None)],
    "recent_requests_running": [({"log": STATS_V1}, 118.0), ({"log": STATS_V0}, 64.0),
                                ({}, None)],
    "recent_kv_cache_usage": [({"log": STATS_V1}, pytest.approx(0.998)),
                              ({"log": STATS_V0}, pytest.approx(0.982)), ({}, None)],
    "max_model_len_over_kv_cache": [({"log": V1_START}, pytest.approx(32768 / 44416)),
                                    ({}, None)],
    "max_num_batched_tokens": [
        ({"log": V1_START}, 8192),
        ({"container": {"args": ["--max-num-batched-tokens", "4096"]}}, 4096), ({}, None)],
    "batched_tokens_over_prompt_p99": [
        ({"log": V1_START, "metrics": {"prompt_len_p99": 1024}}, 8.0),
        ({"log": V1_START}, None)],
    "observed_startup_seconds": [({"log": V1_START}, 95.0), ({}, None),
                                 ({"unread": ["logs"]}, "UNKNOWN")],
    "weights_downloaded": [({"log": V1_START}, True), ({}, False)],
    "model_cache_volume": [
        ({}, "container"),
        ({"container": {"args": ["--model", "/models/qwen"]}}, "local"),
        ({"container": {"env": [{"name": "HF_HOME", "value": "/models"}],
                        "volumeMounts": [{"name": "m", "mountPath": "/models"}]},
          "pod": {"spec": {"volumes": [{"name": "m", "persistentVolumeClaim": {
              "claimName": "hf"}}]}}}, "pvc"),
        ({"container": {"volumeMounts": [{"name": "c", "mountPath": "/root/.cache"}]},
          "pod": {"spec": {"volumes": [{"name": "c", "emptyDir": {}}]}}}, "emptyDir")],
    "has_startup_probe": [({}, False), ({"container": {"startupProbe": PROBE}}, True)],
    "load_probe": [({}, None), ({"container": {"livenessProbe": PROBE}}, "livenessProbe"),
                   ({"container": {"livenessProbe": PROBE, "startupProbe": PROBE}},
                    "startupProbe")],
    "load_probe_budget_seconds": [
        ({}, None),
        ({"container": {"livenessProbe": {**PROBE, "initialDelaySeconds": 30}}}, 60),
        ({"container": {"startupProbe": {**PROBE, "failureThreshold": 60}}}, 600)],
    "liveness_probe": [({}, None), ({"container": {"livenessProbe": PROBE}},
                                    "initialDelaySeconds 0, periodSeconds 10, timeoutSeconds 1, "
                                    "failureThreshold 3")],
    "liveness_timeout_seconds": [({}, None), ({"container": {"livenessProbe": PROBE}}, 1),
                                 ({"container": {"livenessProbe": {**PROBE,
                                                                   "timeoutSeconds": 5}}}, 5)],
    "autoscalers": [({}, []), ({"pod": OWNED_POD, "objects": WITH_HPA},
                               ["HPA vllm-qwen -> Deployment/vllm-qwen: replicas 1-4, Pods "
                                "vllm:num_requests_waiting target 4"]),
                    ({"unread": ["horizontalpodautoscalers"]}, "UNKNOWN")],
    "autoscaler_metrics": [
        ({}, []),
        ({"pod": OWNED_POD, "objects": WITH_HPA}, ["vllm:num_requests_waiting"]),
        ({"pod": OWNED_POD, "objects": {**deployment_objects(),
                                        "horizontalpodautoscalers": [hpa()]}}, ["cpu"]),
        ({"pod": ISVC_POD, "objects": isvc()}, ["concurrency"])],
    "autoscale_target_over_capacity": [
        ({"pod": OWNED_POD, "log": V1_START, "objects": {
            **deployment_objects(), "horizontalpodautoscalers": [hpa(RUNNING_HPA)]}},
         pytest.approx(8 / 1.36)),
        ({}, None)],
    "min_replicas": [({}, None), ({"pod": ISVC_POD, "objects": isvc({"minReplicas": 0})}, 0),
                     ({"pod": ISVC_POD, "objects": isvc()}, 1),
                     ({"pod": OWNED_POD, "objects": {**deployment_objects(),
                                                     "horizontalpodautoscalers": [
                                                         hpa(min_replicas=2)]}}, 2)],
    "workload_replicas": [({}, None), ({"pod": OWNED_POD, "objects": deployment_objects(3)}, 3)],
    "rollout_max_surge_pods": [
        ({}, None),
        ({"pod": OWNED_POD, "objects": deployment_objects(1)}, 1),
        ({"pod": OWNED_POD, "objects": deployment_objects(
            4, {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0}})}, 0),
        ({"pod": OWNED_POD, "objects": deployment_objects(1, {"type": "Recreate"})}, 0)],
    "other_revision_pods_running": [
        ({"pod": OWNED_POD, "objects": {**deployment_objects(), "pods": [
            {"metadata": {"name": "old", "namespace": "llm", "ownerReferences": [
                {"kind": "ReplicaSet", "name": "vllm-qwen-1", "controller": True}]},
             "status": {"phase": "Running"}}]}}, 1),
        ({"pod": OWNED_POD, "objects": deployment_objects()}, 0)],
    "rollout_changes": [({"pod": OWNED_POD, "objects": deployment_objects()}, 1), ({}, None)],
    "rollout_revision": [({"pod": OWNED_POD, "objects": deployment_objects()}, 2), ({}, None)],
    "inference_service": [({}, None), ({"pod": ISVC_POD, "objects": isvc()}, "qwen-chat"),
                          ({"pod": ISVC_POD, "unread": ["inferenceservices"]}, "UNKNOWN")],
    "gpu_product": [({}, "NVIDIA-L4"), ({"pod": {"spec": {"nodeName": None}}}, None),
                    ({"node": {"metadata": {"labels": {"nvidia.com/gpu.product": None}}}}, None)],
    "gpu_memory_mib": [({"node": GFD}, 23034), ({}, None)],
    "gpu_compute_capability": [({"node": GFD}, 8.9), ({}, None)],
    "cuda_driver_version": [({"node": GFD}, "550.90.07"), ({"node": OLD_GFD}, "535.104.05"),
                            ({}, None), ({"unread": ["nodes"]}, "UNKNOWN")],
    "cuda_runtime_version": [({"node": GFD}, "12.4"), ({"node": OLD_GFD}, "12.2"), ({}, None)],
    "node_gpu_capacity": [({}, 1), ({"node": {"status": {"capacity": {
        "nvidia.com/gpu": "8"}}}}, 8)],
    "node_gpu_allocatable": [({}, 1), ({"node": {"status": {"allocatable": {
        "nvidia.com/gpu": "7"}}}}, 7), ({"node": {"status": {"allocatable": {
            "nvidia.com/gpu": None}}}}, 0)],
    "pod_created": [({}, True), ({"static": True}, False)],
    "pod_scheduled": [({}, True), ({"pod": PENDING}, False),
                      ({"pod": SCHEDULED_LATE}, True)],
    "image_pull_seconds": [({"events": [PULLED]}, pytest.approx(192.456)),
                           ({"events": [PULLED_133, PRESENT]}, pytest.approx(64.2)),
                           ({"events": [PRESENT]}, 0.0), ({"events": [SIDECAR_PULL]}, None),
                           ({}, None), ({"unread": ["events"]}, "UNKNOWN")],
    "volume_claims": [({}, []), ({**CACHE_MOUNT, "objects": {
        "persistentvolumeclaims": [pvc()]}}, ["model-cache"]),
        ({**CACHE_MOUNT, "unread": ["persistentvolumeclaims"]}, "UNKNOWN")],
    "unbound_claims": [({**CACHE_MOUNT, "objects": {"persistentvolumeclaims": [pvc()]}}, []),
                       ({**CACHE_MOUNT, "objects": {"persistentvolumeclaims": [
                           pvc("Pending")]}}, ["model-cache"]),
                       ({**CACHE_MOUNT}, ["model-cache"]), ({}, [])],
    "claim_holders": [
        ({**CACHE_MOUNT, "objects": {"persistentvolumeclaims": [pvc()],
                                     "pods": [holder("gpu-node-2")]}}, ["vllm-old"]),
        ({**CACHE_MOUNT, "objects": {"persistentvolumeclaims": [pvc()],
                                     "pods": [holder("gpu-node-1")]}}, []),
        ({**CACHE_MOUNT, "objects": {"persistentvolumeclaims": [pvc(modes=("ReadWriteMany",))],
                                     "pods": [holder("gpu-node-2")]}}, []),
        ({**CACHE_MOUNT, "objects": {"persistentvolumeclaims": [pvc()],
                                     "pods": [holder("gpu-node-2", "Succeeded")]}}, []),
        ({**CACHE_MOUNT, "objects": {"persistentvolumeclaims": [pvc()],
                                     "pods": [holder("gpu-node-2", "Pending")]}}, [])],
    "shm_size_mib": [({}, 64),
                     ({"container": {"volumeMounts": [{"name": "d", "mountPath": "/dev/shm"}]},
                       "pod": {"spec": {"volumes": [{"name": "d", "emptyDir": {
                           "medium": "Memory", "sizeLimit": "8Gi"}}]}}}, 8192),
                     ({"container": {"volumeMounts": [{"name": "d", "mountPath": "/dev/shm"}]},
                       "pod": {"spec": {"volumes": [{"name": "d", "emptyDir": {
                           "medium": "Memory"}}]}}}, None),
                     ({"pod": {"spec": {"hostIPC": True}}}, None)],
    "previous_log_lines": [({"previous_log": "a\nb\n"}, 2), ({"previous_log": ""}, 0),
                           ({}, None), ({"unread": ["logs"]}, None)],
    "engine_nodes": [
        ({}, 1),
        ({"container": {"args": ["--tensor-parallel-size", "8", "--pipeline-parallel-size", "2"],
                        "resources": {"limits": {"nvidia.com/gpu": "8"}}}}, 2),
        ({"pod": {"metadata": {"labels": {"leaderworkerset.sigs.k8s.io/size": "3"}}}}, 3)],
    "served_model": [({}, "Qwen/Qwen3-8B"),
                     ({"container": {"args": ["Qwen/Qwen3-VL-8B-Instruct", "--port", "8000"]}},
                      "Qwen/Qwen3-VL-8B-Instruct"),
                     ({"container": {"args": ["--port", "8000"]}}, None)],
    "nccl_failure": [
        ({"previous_log": "[rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught "
                          "collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, "
                          "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600086 "
                          "milliseconds before timing out.\n"},
         "collective timeout: ALLREDUCE SeqNum=1 gave up after 600 s (the first collective: "
         "the ranks never connected)"),
        ({"log": "(pid=34272) host:34272:34565 [1] transport/p2p.cc:238 NCCL WARN failed to open "
                 "CUDA IPC handle : 217 peer access is not supported between these two "
                 "devices\nRuntimeError: NCCL error: unhandled cuda error (run with "
                 "NCCL_DEBUG=INFO for details)\n"}, "P2P / CUDA IPC between GPUs"),
        ({"log": "(VllmWorker rank=1 pid=412) ERROR 06-04 10:01:11 [multiproc_executor.py:470] "
                 "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO "
                 "for details)\n"}, "NCCL system error"),
        ({"log": "ip-1:1:1 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]\n"},
         None),
        ({"unread": ["logs"]}, "UNKNOWN")],
    "canary_traffic_percent": [
        ({"pod": ISVC_POD, "objects": isvc({"canaryTrafficPercent": 10})}, 10),
        ({"pod": ISVC_POD, "objects": isvc()}, None)],
    # DCGM and kube-state-metrics over a Prometheus window: absent (not unknown) without it.
    "gpu_fb_used_mib": [({"telemetry": telemetry()}, 22600.0), ({}, None),
                        ({"telemetry": "failed"}, None), ({"telemetry": telemetry([])}, None)],
    "gpu_fb_free_mib": [({"telemetry": telemetry()}, 71.0), ({}, None)],
    "gpu_fb_total_mib": [({"telemetry": telemetry()}, 23034.0), ({}, None)],
    "gpu_utilization_percent": [({"telemetry": telemetry()}, 97.5), ({}, None)],
    "gpu_xid_last": [({"telemetry": telemetry()}, []),
                     ({"telemetry": telemetry([{**GPU, "xid_last": 79.0}])}, [79]), ({}, None)],
    "gpu_xid_new_in_window": [({"telemetry": telemetry()}, False), ({"telemetry": telemetry(
        [{**GPU, "xid_last": 79.0, "xid_changes": 1.0}])}, True), ({}, None)],
    "gpu_shared_with": [({"telemetry": telemetry()}, []), ({"telemetry": telemetry(
        [{**GPU, "shared_with": ["team-b/notebook-0"]}])}, ["team-b/notebook-0"]), ({}, None)],
    "gpu_fb_used_beyond_vllm_mib": [
        ({"telemetry": telemetry()}, 22600.0 - 0.9 * 23034.0),
        ({"telemetry": telemetry(), "container": {"args": [
            "--model", "Qwen/Qwen3-8B", "--gpu-memory-utilization", "0.5"]}},
         22600.0 - 0.5 * 23034.0), ({}, None)],
    "restarts_in_window": [({"telemetry": telemetry(restarts={"vllm": 3.0})}, 3.0),
                           ({"telemetry": telemetry()}, None), ({}, None)],
    # Progress (startup-stalled, engine-hung); the example snapshot is collected at 03:00:00.
    "log_silent_seconds": [
        ({"log": "2026-11-28T02:35:50.081Z x NCCL INFO Bootstrap : Using eth0\n",
          "status": {"state": {"running": {"startedAt": "2026-11-28T02:35:00Z"}}}}, 1449.919),
        ({"log": "(APIServer pid=1) INFO 11-28 02:50:00 [api_server.py:1805] vLLM API server "
                 "version 0.10.1.1\n",
          "status": {"state": {"running": {"startedAt": "2026-11-28T02:49:00Z"}}}}, 600.0),
        # a progress bar without a time of its own: not measured
        ({"log": "(APIServer pid=1) INFO 11-28 02:50:00 [x.py:1] y\nLoading safetensors "
                 "checkpoint shards:  53% Completed | 16/30 [19:01<15:40, 71.34s/it]\n"}, None),
        ({"log": "", "status": {"state": {"running": {"startedAt": "2026-11-28T02:40:00Z"}}}},
         1200.0),
        ({"status": {"state": {"waiting": {"reason": "CrashLoopBackOff"}}}}, None),
        ({"unread": ["logs"]}, "UNKNOWN")],
    "startup_milestone": [
        ({"log": "2026-11-28T02:35:31Z (EngineCore_0 pid=270) INFO 11-28 02:35:31 [core.py:74] "
                 "Initializing a V1 LLM engine (v0.10.1.1) with config: model='x'\n"},
         "CUDA init (engine starting)"),
        ({"log": "2026-11-28T02:35:31Z Loading safetensors checkpoint shards:  62% Completed | "
                 "5/8 [00:03<00:01,  1.25it/s]\n"}, "weights shard 5/8 (62%)"),
        ({"log": "2026-11-28T02:35:31Z x:412:412 [0] NCCL INFO Channel 00/24 :    0   1\n"},
         "NCCL / distributed init"),
        ({"log": "2026-11-28T02:35:31Z (APIServer pid=1) INFO 11-28 02:35:31 [api_server.py:1880]"
                 " Starting vLLM API server 0 on http://0.0.0.0:8000\n"}, "ready"),
        # only a serving server prints stats and access lines (its start scrolled out)
        ({"log": "2026-11-28T02:35:31Z (APIServer pid=1) INFO:     10.0.3.7:52114 - \"POST "
                 "/v1/chat/completions HTTP/1.1\" 200 OK\n"}, "ready"),
        # vLLM <= 0.11 logs the weights format, then downloads with its bars off
        ({"log": "2026-11-28T02:35:31Z (EngineCore_0 pid=270) INFO 11-28 02:35:31 "
                 "[weight_utils.py:296] Using model weights format ['*.safetensors']\n"},
         "download (no progress printed)"),
        # from 0.12 the format is at DEBUG: 'Starting to load model' of a hub model is it
        ({"log": "2026-11-28T02:35:00Z (APIServer pid=1) INFO 11-28 02:35:00 [api_server.py:1354]"
                 " vLLM API server version 0.13.0\n2026-11-28T02:35:31Z (EngineCore_DP0 pid=192)"
                 " INFO 11-28 02:35:31 [gpu_model_runner.py:3562] Starting to load model "
                 "Qwen/Qwen3-8B...\n"}, "download (no progress printed)"),
        # ... but not in 0.10, nor for a model on a path
        ({"log": "2026-11-28T02:35:00Z (APIServer pid=1) INFO 11-28 02:35:00 [api_server.py:1805]"
                 " vLLM API server version 0.10.1.1\n2026-11-28T02:35:31Z (EngineCore_0 pid=270)"
                 " INFO 11-28 02:35:31 [gpu_model_runner.py:1953] Starting to load model "
                 "Qwen/Qwen3-8B...\n"}, "weights load"),
        ({"container": {"args": ["--model", "/models/qwen3-8b"]},
          "log": "2026-11-28T02:35:31Z (EngineCore_DP0 pid=192) INFO 11-28 02:35:31 "
                 "[gpu_model_runner.py:3562] Starting to load model /models/qwen3-8b...\n"},
         "weights load"),
        ({"log": "2026-11-28T02:35:31Z Downloading (incomplete total...):  43%|####     | "
                 "6.4G/15.0G [04:10<05:30, 26.1MB/s]\n"}, "download (all files at 43%)"),
        ({"log": "hello\n"}, None), ({"unread": ["logs"]}, "UNKNOWN")],
    "ready_probe": [({}, None), ({"container": {"startupProbe": PROBE}}, "startupProbe"),
                    ({"container": {"readinessProbe": PROBE, "startupProbe": PROBE}},
                     "readinessProbe")],
    "engine_stalled_seconds": [
        ({"log": "2026-11-28T02:10:02Z (APIServer pid=1) INFO 11-28 02:10:02 [api_server.py:1880] "
                 "Starting vLLM API server 0 on http://0.0.0.0:8000\n"
                 "2026-11-28T02:52:00Z (APIServer pid=1) INFO 11-28 02:52:00 [loggers.py:123] "
                 "Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: "
                 "0.0 tokens/s, Running: 4 reqs, Waiting: 0 reqs\n"
                 "2026-11-28T02:52:50Z (EngineCore_0 pid=270) INFO 11-28 02:52:50 "
                 "[shm_broadcast.py:466] No available shared memory broadcast block found in 60 "
                 "second.\n"}, 50.0),
        ({"log": "2026-11-28T02:10:02Z (APIServer pid=1) INFO 11-28 02:10:02 [api_server.py:1880] "
                 "Starting vLLM API server 0 on http://0.0.0.0:8000\n"
                 "2026-11-28T02:52:50Z (EngineCore_0 pid=270) INFO 11-28 02:52:50 "
                 "[shm_broadcast.py:466] No available shared memory broadcast block found in 60 "
                 "second.\n"}, 60.0),
        # before ready: a start's wait, not the engine's
        ({"log": "2026-11-28T02:52:50Z (EngineCore_0 pid=270) INFO 11-28 02:52:50 "
                 "[shm_broadcast.py:466] No available shared memory broadcast block found in 60 "
                 "second.\n"}, None),
        ({"unread": ["logs"]}, "UNKNOWN")],
    # Where the container may write (cache-dir-not-writable's evidence).
    "run_as_user": [({"container": {"securityContext": {"runAsUser": 1000680000}}}, 1000680000),
                    ({"pod": {"spec": {"securityContext": {"runAsUser": 1001}}}}, 1001),
                    ({"pod": {"spec": {"securityContext": {"runAsUser": 1001}}},
                      "container": {"securityContext": {"runAsUser": 0}}}, 0),
                    ({}, None)],
    "fs_group": [({"pod": {"spec": {"securityContext": {"fsGroup": 2000}}}}, 2000), ({}, None)],
    "read_only_root_filesystem": [
        ({"container": {"securityContext": {"readOnlyRootFilesystem": True}}}, True),
        ({}, False)],
    "cache_env": [
        ({"container": {"env": [{"name": "HF_HOME", "value": "/cache/hf"},
                                {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {
                                    "name": "hf", "key": "token"}}},
                                {"name": "LOG_LEVEL", "value": "debug"}]}},
         ["HF_HOME=/cache/hf"]),
        ({}, [])],
    # The path of the last EACCES/EROFS line (CPython's OSError text), then where it lies.
    "unwritable_path": [
        ({"previous_log": "PermissionError: [Errno 13] Permission denied: '/.cache'"}, "/.cache"),
        ({"log": "OSError: [Errno 30] Read-only file system: '/tmp//torchinductor_root/'"},
         "/tmp/torchinductor_root"),
        ({"previous_log": "PermissionError: [Errno 13] Permission denied: '.locks/m/1.lock'"},
         "UNKNOWN"),
        # huggingface_hub's warning that it goes on: not a failure to write
        ({"log": "Could not cache non-existence of file. Will ignore error and continue. "
                 "Error: [Errno 13] Permission denied: '/models/.no_exist'"}, "UNKNOWN"),
        ({}, "UNKNOWN")],
    "unwritable_path_mount": [
        ({"previous_log": "PermissionError: [Errno 13] Permission denied: '/models/hub/x'",
          "container": {"volumeMounts": [{"name": "m", "mountPath": "/models"},
                                         {"name": "h", "mountPath": "/models/hub"},
                                         {"name": "o", "mountPath": "/model"}]}},
         "/models/hub"),
        ({"previous_log": "PermissionError: [Errno 13] Permission denied: '/.cache'",
          "container": {"volumeMounts": [{"name": "c", "mountPath": "/cache"}]}}, None),
        ({}, "UNKNOWN")],
    "unwritable_path_env": [
        ({"previous_log": "PermissionError: [Errno 13] Permission denied: '/data/hf/hub'",
          "container": {"env": [{"name": "HOME", "value": "/"},
                                {"name": "HF_HOME", "value": "/data/hf/"},
                                {"name": "XDG_CACHE_HOME", "value": "/data"}]}}, "HF_HOME"),
        ({"previous_log": "PermissionError: [Errno 13] Permission denied: '/.cache'",
          "container": {"env": [{"name": "HOME", "value": "/"}]}}, None),
        ({}, "UNKNOWN")],
    "image": [({}, "vllm/vllm-openai:v0.10.1.1"), ({"container": {"image": None}}, None)],
    # Estimates from the model's name: parameters x bytes per parameter, in GiB.
    "model_weights_gib": [
        ({}, 14.9),  # Qwen3-8B, bf16
        ({"container": {"args": ["--model", "meta-llama/Llama-3.1-70B-Instruct"]}}, 130.4),
        ({"container": {"args": ["--model", "mistralai/Mixtral-8x7B-Instruct-v0.1"]}}, 104.3),
        ({"container": {"args": ["--model", "Qwen/Qwen2.5-0.5B-Instruct"]}}, 0.9),
        ({"container": {"args": ["--model", "Qwen/Qwen2.5-72B-Instruct-AWQ"]}}, 33.5),
        ({"container": {"args": ["--model", "Qwen/Qwen3-30B-A3B-FP8"]}}, 27.9),
        ({"container": {"args": ["--model", "x/m-7b", "--dtype", "float32"]}}, 26.1),
        ({"container": {"args": ["--model", "/models/in-house"]}}, None),
        ({"container": {"args": ["--model", "Qwen/Qwen3-8B-Instruct-2507",
                                 "--quantization", "fp8"]}}, 7.5)],
    "model_context_estimate": [
        ({}, 40960),
        ({"container": {"args": ["--model", "meta-llama/Llama-3.1-8B-Instruct"]}}, 131072),
        ({"container": {"args": ["--model", "meta-llama/Meta-Llama-3-8B-Instruct"]}}, 8192),
        ({"container": {"args": ["--model", "Qwen/Qwen3-4B-Instruct-2507"]}}, 262144),
        ({"container": {"args": ["--model", "/models/in-house"]}}, None)],
}


V1_REFUSAL = ("(EngineCore_0 pid=266) ERROR 11-28 03:02:01 [core.py:700] ValueError: To serve at "
              "least one request with the models's max seq len (1010000), (53.94 GiB KV cache is "
              "needed, which is larger than the available KV cache memory (5.03 GiB). Based on the "
              "available memory, the estimated maximum model length is 94176. Try increasing "
              "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.")
V0_REFUSAL = ("ValueError: The model's max seq len (131072) is larger than the maximum number of "
              "tokens that can be stored in KV cache (28752). Try increasing "
              "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.")
TORCH_OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 160.00 MiB. GPU 0 has "
             "a total capacity of 22.03 GiB of which 91.06 MiB is free.")
CAPTURE_OOM = ("ERROR 11-28 03:06:57 [core.py:700]   File \"/usr/local/lib/python3.12/dist-packages/"
               "vllm/v1/worker/gpu_model_runner.py\", line 2708, in capture_model\n" + TORCH_OOM)
SAMPLER_OOM = ("ERROR 11-28 03:05:51 [core.py:396]   File \"/x/gpu_model_runner.py\", line 1561, "
               "in _dummy_sampler_run\n" + TORCH_OOM)
DUMMY_RUN_OOM = ("(VllmWorker rank=1 pid=413) ERROR 11-28 03:06:57 [multiproc_executor.py:654]"
                 "   File \"/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/"
                 "gpu_model_runner.py\", line 2203, in _dummy_run\n(VllmWorker rank=1 pid=413) "
                 "ERROR 11-28 03:06:57 [multiproc_executor.py:654] " + TORCH_OOM + "\n")
CAPTURE_BAR = ("Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):  43%|████▎     | 29/67 "
               "[00:04<00:05,  7.02it/s]\n")
CAPTURE_DONE = ("(VllmWorker rank=0 pid=412) INFO 11-28 03:06:55 [gpu_model_runner.py:2485] Graph "
                "capturing finished in 9 secs, took 1.30 GiB\n")
FILLER = "(APIServer pid=1) INFO 11-28 03:06:50 [loggers.py:123] waiting for the engine\n"
SHARDS = ("(APIServer pid=1) INFO 11-28 02:58:04 [__init__.py:241] Automatically detected platform "
          "cuda.\n(Worker_TP0 pid=412) INFO 11-28 02:59:05 [weight_utils.py:296] Using model weights "
          "format ['*.safetensors']\nLoading safetensors checkpoint shards:  63% Completed | 19/30 "
          "[01:25<00:49,  4.49s/it]\n")
SHM_8GI = {"container": {"volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}]},
           "pod": {"spec": {"volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory",
                                                                       "sizeLimit": "8Gi"}}]}}}
HF_ON_CLAIM = {"container": {"env": [{"name": "HF_HOME", "value": "/models"}],
                             "volumeMounts": [{"name": "models", "mountPath": "/models"}]},
               "pod": CACHE_MOUNT["pod"]}
TAINTED = {"spec": {"nodeName": None}, "status": {"phase": "Pending", "conditions": [
    {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
     "message": "0/1 nodes are available: 1 node(s) had untolerated taint "
                "{nvidia.com/gpu: present}."}]}}
GiB = 2**30
GPU_NODE_TAINTED = {"metadata": {"name": "gpu-node-2"}, "spec": {"taints": [
    {"key": "nvidia.com/gpu", "value": "present", "effect": "NoExecute"}]},
    "status": {"allocatable": {"nvidia.com/gpu": "8"}}}
# Tolerating a CPU node's taint gives no GPU: not the taint to tolerate.
CPU_NODE_TAINTED = {"metadata": {"name": "cpu-node-1"}, "spec": {"taints": [
    {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
    "status": {"allocatable": {"cpu": "8"}}}

CASES.update({
    "estimated_max_model_len": [({}, None), ({"previous_log": V1_REFUSAL}, 94176),
                                ({"previous_log": V0_REFUSAL}, 28752),
                                ({"unread": ["logs"]}, "UNKNOWN")],
    "kv_cache_needed_gib": [({}, None), ({"previous_log": V1_REFUSAL}, 53.94)],
    "kv_cache_available_gib": [
        ({}, None), ({"previous_log": V1_REFUSAL}, 5.03),
        ({"log": "INFO 11-28 02:40:31 [gpu_worker.py:276] Available KV cache memory: 6.10 GiB"},
         6.1)],
    "weights_gib": [({}, None), ({"log": "INFO 11-28 03:05:43 [gpu_model_runner.py:2007] Model "
                                         "loading took 15.2683 GiB and 7.309114 seconds"},
                                 15.2683)],
    "gpu_total_gib": [({}, None), ({"previous_log": TORCH_OOM}, 22.03),
                      ({"node": GFD}, 22.49)],
    "cuda_oom_tried_gib": [({}, None), ({"previous_log": TORCH_OOM}, 0.156)],
    "cuda_oom_phase": [({}, None), ({"previous_log": CAPTURE_OOM}, "cuda_graph_capture"),
                       ({"previous_log": SAMPLER_OOM}, "sampler_warmup"),
                       ({"previous_log": TORCH_OOM}, None),
                       # the bar rank 0 draws just after rank 1's OOM, whose traceback kept
                       # only _dummy_run (the profiling run's frame too): the capture
                       ({"previous_log": DUMMY_RUN_OOM + CAPTURE_BAR}, "cuda_graph_capture"),
                       ({"previous_log": CAPTURE_BAR + DUMMY_RUN_OOM}, "cuda_graph_capture"),
                       # the capture finished before the OOM: not the capture's
                       ({"previous_log": CAPTURE_BAR + CAPTURE_DONE + DUMMY_RUN_OOM},
                        "profiling"),
                       # far from the OOM (a bar of an earlier start in the same log)
                       ({"previous_log": CAPTURE_BAR + FILLER * 20 + DUMMY_RUN_OOM},
                        "profiling")],
    "memory_limit_bytes": [({}, 32 * GiB),
                           ({"container": {"resources": {"limits": {"memory": None}}}}, None)],
    "shm_memory_bytes": [({}, 0), (SHM_8GI, 8 * GiB)],
    "shm_volume_name": [({}, None), (SHM_8GI, "dshm")],
    "load_estimate_seconds": [({}, None), ({"previous_log": SHARDS}, 196)],
    "probe_port": [({}, 8000), ({"container": {"livenessProbe": {"httpGet": {
        "path": "/health", "port": "http"}}}}, "http")],
    "probe_scheme": [({}, "HTTP"), ({"container": {"readinessProbe": {"httpGet": {
        "path": "/health", "port": 8443, "scheme": "HTTPS"}}}}, "HTTPS")],
    "image_digest_ref": [({}, None), ({"status": {"imageID": "docker.io/vllm/vllm-openai@sha256:"
                                                            "395b4c9b"}},
                                      "vllm/vllm-openai@sha256:395b4c9b")],
    "model_cache_claim": [({}, None), (HF_ON_CLAIM, "model-cache")],
    "model_cache_claim_bytes": [({}, None),
                                ({**HF_ON_CLAIM, "objects": {"persistentvolumeclaims": [pvc()]}},
                                 200 * GiB)],
    "model_size_bytes": [({}, None), ({"previous_log": "model-00021-of-00030.safetensors:  62%|"
                                                       "██████▏   | 3.09G/4.98G [00:41<00:25, "
                                                       "74.3MB/s]"}, 149_400_000_000)],
    "untolerated_taint_key": [({}, None), ({"pod": TAINTED}, "nvidia.com/gpu"),
                              ({"pod": TAINTED, "objects": {"nodes": [CPU_NODE_TAINTED]}}, None)],
    "untolerated_taint_effect": [({}, None), ({"pod": TAINTED}, "NoSchedule"),
                                 ({"pod": TAINTED, "objects": {"nodes": [GPU_NODE_TAINTED]}},
                                  "NoExecute")],
    "node_gpu_holders": [({}, ["vllm-0 (1 GPU, Running)"]), ({"pod": PENDING}, None)],
    # a crash-looping pod keeps its GPUs; an unscheduled or finished one holds none
    "pod_gpus_held": [({}, 1), ({"status": CRASHED}, 1), ({"pod": PENDING}, 0),
                      ({"pod": {"status": {"phase": "Succeeded"}}}, 0),
                      ({"container": {"resources": {"limits": {"nvidia.com/gpu": None},
                                                    "requests": {"nvidia.com/gpu": None}}}}, 0)],
    "pod_restarts": [({}, 0), ({"status": CRASHED}, 3)],
    "cluster_gpus_allocatable": [({}, 1), ({"node": {"status": {"allocatable": {
        "nvidia.com/gpu": "4"}}}}, 4), ({"unread": ["nodes"]}, "UNKNOWN")],
    "cluster_gpus_held": [({}, 1), ({"pod": PENDING}, 0)],
    "max_num_seqs": [({}, None), ({"container": {"args": ["--max-num-seqs", "64"]}}, 64)],
    # the version vLLM logged, else the image tag's; major x 100 + minor
    "vllm_release": [({}, 10),
                     ({"log": "(APIServer pid=1) INFO 11-28 02:40:01 [api_server.py:1354] vLLM "
                              "API server version 0.13.0\n"}, 13),
                     ({"container": {"image": "vllm/vllm-openai:v0.8.5.post1"}}, 8),
                     ({"container": {"image": "registry.acme.internal/ml/vllm:latest"}}, None)],
    "max_lora_rank": [({}, 16), ({"container": {"args": ["--max-lora-rank", "64"]}}, 64)],
    "lora_rank_needed": [
        ({}, None),
        ({"previous_log": "(EngineCore pid=86) ERROR 06-01 13:18:12 [core.py:1341] ValueError: "
                          "LoRA rank 64 is greater than max_lora_rank 16.\n"}, 64),
        ({"unread": ["logs"]}, "UNKNOWN")],
    "compilation_config": [({}, None), ({"container": {"args": [
        "--compilation-config", '{"level": 3}']}}, '{"level": 3}')],
    "quantization": [({}, None), ({"container": {"args": ["--quantization", "awq"]}}, "awq")],
    "autoscale_target": [({}, None), ({"pod": OWNED_POD, "objects": WITH_HPA}, 4.0)],
    # the same HPA's only metric; behind a CPU metric it is the second
    "autoscale_target_field": [
        ({}, None),
        ({"pod": OWNED_POD, "objects": WITH_HPA}, "spec.metrics[0].pods.target.averageValue"),
        ({"pod": OWNED_POD, "objects": {**deployment_objects(), "horizontalpodautoscalers": [
            hpa([{"type": "Resource", "resource": {"name": "cpu", "target": {
                "type": "Utilization", "averageUtilization": 70}}}, *WAITING_HPA])]}},
         "spec.metrics[1].pods.target.averageValue")],
    # tests/support/unit.py hpa(): maxReplicas 4; without an HPA, none
    "hpa_max_replicas": [({}, None), ({"pod": OWNED_POD, "objects": WITH_HPA}, 4)],
    # GPUs, TPU chips and Neuron devices alike; an init container's are not vLLM's
    "accelerator_request": [
        ({}, 1), ({"container": {"resources": {"limits": {"nvidia.com/gpu": None,
                                                          "google.com/tpu": "8"}}}}, 8),
        ({"container": {"resources": {"limits": {"nvidia.com/gpu": None,
                                                 "aws.amazon.com/neuron": "16"},
                                      "requests": {"nvidia.com/gpu": None}}}}, 16),
        ({"container": {"resources": {"limits": {"nvidia.com/gpu": None},
                                      "requests": {"nvidia.com/gpu": None}}}}, 0),
        ({"pod": AS_INIT}, None)],
    "image_platform": [
        ({}, "cuda"), ({"container": {"image": "vllm/vllm-tpu:nightly"}}, "tpu"),
        ({"container": {"image": "public.ecr.aws/data-on-eks/"
                                 "neuron-sdk2.20-vllm0.5.0-neuron:v8"}}, "neuron"),
        ({"container": {"image": "rocm/vllm:latest"}}, "rocm"),
        ({"container": {"image": "kserve/huggingfaceserver:v0.15.2"}}, "cpu"),
        ({"container": {"image": "kserve/huggingfaceserver:v0.15.2-gpu"}}, "cuda"),
        ({"container": {"image": "registry.example.com/llm/serve:1.4"}}, None)],
    "cpu_serving_signal": [
        ({}, None),
        ({"container": {"image": "public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.10.1"}},
         "image public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.10.1"),
        ({"container": {"env": [{"name": "VLLM_CPU_KVCACHE_SPACE", "value": "4"}]}},
         "env VLLM_CPU_KVCACHE_SPACE"),
        ({"container": {"args": ["--model", "Qwen/Qwen3-0.6B", "--device", "cpu"]}},
         "--device cpu"),
        # another VLLM_ variable says nothing about the device
        ({"container": {"env": [{"name": "VLLM_PORT", "value": "8000"}]}}, None)],
    "pod_concurrency": [({}, None), ({"log": "INFO 03-20 16:01:36 executor_base.py:115] Maximum "
                                            "concurrency for 32768 tokens per request: 9.44x"},
                                     9.44)],
})


# What the pod spec alone decides: the memory request, credentials written into the
# environment (named, never their value), the GPUs one engine gets, shutdown timing.
LLM_ENV = {"configmaps": [{"metadata": {"name": "llm-env", "namespace": "llm"},
                           "data": {"HF_HOME": "/models", "VLLM_API_KEY": "sk-x"}}]}
CASES.update({
    "memory_request_bytes": [
        ({}, 32 * GiB),
        ({"container": {"resources": {"requests": {"memory": None}}}}, 32 * GiB),
        ({"container": {"resources": {"requests": {"memory": None},
                                      "limits": {"memory": None}}}}, None)],
    "literal_secret_env": [
        ({}, None),
        ({"container": {"env": [{"name": "HF_TOKEN", "value": "hf_x"}]}},
         ["HF_TOKEN (env[0].value)"]),
        ({"container": {"env": [{"name": "HF_TOKEN", "value": "$HF_TOKEN"}]}},
         ["HF_TOKEN (env[0].value, a placeholder substituted before apply)"]),
        ({"container": {"envFrom": [{"configMapRef": {"name": "llm-env"}}]},
          "objects": LLM_ENV},
         ["VLLM_API_KEY (ConfigMap llm-env key VLLM_API_KEY, via envFrom[0])"]),
        ({"container": {"env": [{"name": "HF_TOKEN", "valueFrom": {
            "secretKeyRef": {"name": "hf", "key": "token"}}}]}}, None),
        ({"container": {"env": [{"name": "TOKENIZERS_PARALLELISM", "value": "false"}]}}, None),
        ({"container": {"envFrom": [{"configMapRef": {"name": "llm-env"}}]},
          "unread": ["configmaps"]}, "UNKNOWN")],
    "parallel_ranks": [
        ({}, 1),
        ({"container": {"args": ["--tensor-parallel-size", "4",
                                 "--pipeline-parallel-size", "2"]}}, 8)],
    "engine_gpus": [
        ({}, 1),
        ({"pod": {"metadata": {"labels": {"leaderworkerset.sigs.k8s.io/size": "2"}}},
          "container": {"resources": {"limits": {"nvidia.com/gpu": "8"}}}}, 16),
        ({"container": {"args": ["--distributed-executor-backend", "ray"]}}, "UNKNOWN")],
    "termination_grace_seconds": [
        ({}, 30), ({"pod": {"spec": {"terminationGracePeriodSeconds": 90}}}, 90),
        ({"pod": {"spec": {"terminationGracePeriodSeconds": "90"}}}, "UNKNOWN")],
    "prestop_delay_seconds": [
        ({}, 0),
        ({"container": {"lifecycle": {"preStop": {"sleep": {"seconds": 15}}}}}, 15),
        ({"container": {"lifecycle": {"preStop": {"exec": {
            "command": ["/bin/sleep", "20"]}}}}}, 20),
        ({"container": {"lifecycle": {"preStop": {"exec": {
            "command": ["sh", "-c", "sleep 5 && kill -TERM 1"]}}}}}, 5),
        ({"container": {"lifecycle": {"preStop": {"exec": {
            "command": ["/drain.sh"]}}}}}, "UNKNOWN"),
        ({"container": {"lifecycle": {"preStop": {"httpGet": {
            "path": "/drain", "port": 8000}}}}}, "UNKNOWN")],
    "shutdown_timeout_seconds": [
        ({}, None), ({"container": {"args": ["--model", "m", "--shutdown-timeout", "45"]}}, 45)],
    "shutdown_needs_seconds": [
        ({}, 0),
        ({"container": {"args": ["--model", "m", "--shutdown-timeout=45"],
                        "lifecycle": {"preStop": {"sleep": {"seconds": 15}}}}}, 60)],
})


def test_facts_hold_no_verdict() -> None:
    """A fact says what is, not whether it is good: no range, no 'outside', no advice."""
    ctx = context(container={"args": ["--gpu-memory-utilization", "0.98"]})
    evidence = ctx.fact("gpu_memory_utilization").evidence
    assert "0.98" in evidence and "outside" not in evidence and "0.92" not in evidence


def test_wider_scopes_are_computed_once() -> None:
    """A workload fact is shared by every pod of that workload, a node fact by every pod on
    that node, a cluster fact by all; a pod fact by the pod's containers only."""
    snap, pod, container = build(example(pod=OWNED_POD, objects=WITH_HPA))
    scopes = Scopes(snap)
    first, = scopes.containers(pod, [container])
    second, = scopes.containers(pod, [container])  # as another pod of the workload would
    for name in ("autoscalers", "gpu_product", "cluster_gpus_held"):
        assert first.fact(name) is second.fact(name), name
    assert first.fact("pod_state") is not second.fact("pod_state")
    assert first.pod_context.node_context.fact("gpu_product") is first.fact("gpu_product")


def test_a_context_answers_wider_scopes_never_narrower() -> None:
    snap, pod, container = build(example())
    ctx, = Scopes(snap).containers(pod, [container])
    assert ctx.pod_context.fact("cluster_gpus_allocatable").value == 1
    with pytest.raises(KeyError):
        ctx.pod_context.node_context.fact("pod_state")


# --- the layers beside the pod -----------------------------------------------------------

SO = {"metadata": {"name": "vllm-qwen", "namespace": "llm"},
      "spec": {"scaleTargetRef": {"name": "vllm-qwen"}, "triggers": [
          {"type": "prometheus", "metadata": {
              "query": 'sum(vllm:gpu_cache_usage_perc{model_name="Qwen3-8B"})',
              "threshold": "0.8"}}]},
      "status": {"conditions": [{"type": "Ready", "status": "True",
                                 "reason": "ScaledObjectReady"}],
                 "health": {"s0-prometheus": {"numberOfFailures": 4, "status": "Failing"}}}}
WITH_SO = {**deployment_objects(), "scaledobjects": [SO]}
FAILING_HPA = {**hpa(WAITING_HPA), "status": {"conditions": [
    {"type": "ScalingActive", "status": "False", "reason": "FailedGetPodsMetric",
     "message": "the HPA was unable to compute the replica count: unable to get metric "
                "vllm:num_requests_waiting"}]}}
PAGE = ('# TYPE vllm:kv_cache_usage_perc gauge\n'
        'vllm:kv_cache_usage_perc{engine="0",model_name="Qwen/Qwen3-8B"} 0.3\n'
        '# TYPE vllm:num_requests_waiting gauge\n'
        'vllm:num_requests_waiting{engine="0",model_name="Qwen/Qwen3-8B"} 4\n')
POOL_V1 = {"apiVersion": "inference.networking.k8s.io/v1",
           "metadata": {"name": "qwen-pool", "namespace": "llm"},
           "spec": {"selector": {"matchLabels": {"app": "vllm-qwen"}},
                    "targetPorts": [{"number": 8000}],
                    "endpointPickerRef": {"name": "qwen-pool-epp"}}}
POOL_POD = {"metadata": {"labels": {"app": "vllm-qwen"}},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
OTHER = {"metadata": {"name": "vllm-1", "namespace": "llm", "labels": {"app": "vllm-qwen"}},
         "status": {"phase": "Running", "conditions": [
             {"type": "Ready", "status": "False", "reason": "ContainersNotReady"}]}}
SLICE = {"metadata": {"name": "vllm-qwen-x7k2p", "namespace": "llm",
                      "labels": {"kubernetes.io/service-name": "vllm-qwen"}},
         "endpoints": [{"addresses": ["10.48.3.57"],
                        "conditions": {"ready": False, "serving": False, "terminating": False},
                        "targetRef": {"kind": "Pod", "name": "vllm-0", "namespace": "llm"}}]}
PICKER_SERVICE = {"metadata": {"name": "qwen-pool-epp", "namespace": "llm"},
                  "spec": {"selector": {"inferencepool": "qwen-pool-epp"}}}
PICKER = {"metadata": {"name": "qwen-pool-epp-6f9c8d7b5-k2m4p", "namespace": "llm",
                       "labels": {"inferencepool": "qwen-pool-epp"}},
          "spec": {"containers": [{"name": "epp"}]}, "status": {"phase": "Running"}}
WITH_PICKER = {"inferencepools": [POOL_V1], "services": [PICKER_SERVICE], "pickerpods": [PICKER]}
# The picker's two lines for one refused request (zap's JSON encoder, as its chart sets it)
SHED = ('{"level":"error","ts":"2026-11-28T03:11:57Z","caller":"handlers/server.go:%d",'
        '"msg":"%s","error":"inference gateway: InferencePoolResourceExhausted - system '
        'saturated, sheddable request dropped"}\n')
PICKER_LOG = (SHED % (225, "Error handling request") + SHED % (336, "Failed to process request")
              + SHED % (225, "Error handling request") + SHED % (336, "Failed to process request"))
READY_LINE = ("2026-11-28T01:40:02.118Z (APIServer pid=1) INFO 11-28 01:40:02 "
              "[api_server.py:1880] Starting vLLM API server 0 on http://0.0.0.0:8000\n")
STATS_BUSY = ("2026-11-28T02:30:51.220Z (APIServer pid=1) INFO 11-28 02:30:51 [loggers.py:123] "
              "Engine 000: Avg prompt throughput: 5321.4 tokens/s, Avg generation throughput: "
              "1210.7 tokens/s, Running: 58 reqs, Waiting: 12 reqs, GPU KV cache usage: 97.1%, "
              "Prefix cache hit rate: 41.0%\n")
TIMEOUT = {"reason": "Unhealthy", "count": 23, "lastTimestamp": "2026-11-28T02:59:30Z",
           "message": 'Readiness probe failed: Get "http://10.48.3.57:8000/health": context '
                      'deadline exceeded (Client.Timeout exceeded while awaiting headers)'}
REFUSED = {**TIMEOUT, "count": 9, "message": 'Readiness probe failed: Get '
           '"http://10.48.3.57:8000/health": dial tcp 10.48.3.57:8000: connect: connection '
           'refused'}
KILLED = {"status": {"state": {"running": {"startedAt": "2026-11-28T02:31:12Z"}}, "lastState": {
    "terminated": {"reason": "Error", "exitCode": 137, "startedAt": "2026-11-28T01:36:40Z",
                   "finishedAt": "2026-11-28T02:31:10Z"}}, "restartCount": 1},
    "previous_log": READY_LINE + STATS_BUSY,
    "events": [{"reason": "Killing", "type": "Normal", "lastTimestamp": "2026-11-28T02:30:58Z",
                "message": "Container vllm failed liveness probe, will be restarted"}]}
OOM_AFTER_HOURS = {"status": {"lastState": {"terminated": {
    "reason": "OOMKilled", "exitCode": 137, "startedAt": "2026-11-27T19:20:02Z",
    "finishedAt": "2026-11-28T02:41:22Z"}}, "restartCount": 1},
    "previous_log": READY_LINE.replace("2026-11-28T01:40:02", "2026-11-27T19:24:48")}
# 32Gi limit: 20 GiB six hours ago, growing 400 MiB/h, 22.4 GiB at the end
GROWING = [(1795834800.0 + 3600 * h, 20 * 2**30 + h * 400 * 2**20) for h in range(7)]
FLAT_AFTER = [(1795834800.0 + 3600 * h, (20 + min(h, 2)) * 2**30) for h in range(9)]
LLMISVC_OBJECTS = {
    "llminferenceservices": [{"apiVersion": "serving.kserve.io/v1alpha1", "metadata": {
        "name": "qwen", "namespace": "llm", "uid": "llmisvc-qwen"}, "status": {"conditions": [
            {"type": "ScalingReady", "status": "False", "reason": "FailedGetExternalMetric",
             "message": "the HPA was unable to compute the replica count"},
            {"type": "WorkloadsReady", "status": "True", "reason": "Ready"}]}}],
    "deployments": [{"metadata": {"name": "qwen-kserve", "namespace": "llm", "ownerReferences": [
        {"apiVersion": "serving.kserve.io/v1alpha1", "kind": "LLMInferenceService",
         "name": "qwen", "controller": True}]}, "spec": {"replicas": 1}}],
    "replicasets": [{"metadata": {"name": "qwen-kserve-7d9c", "namespace": "llm",
                                  "ownerReferences": [{"apiVersion": "apps/v1",
                                                       "kind": "Deployment",
                                                       "name": "qwen-kserve",
                                                       "controller": True}]}}]}
LLMISVC_POD = {"metadata": {"labels": {"app.kubernetes.io/part-of": "llminferenceservice"},
                            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                                 "name": "qwen-kserve-7d9c",
                                                 "controller": True}]}}
TOKEN_ENV = {"env": [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {
    "name": "hf-token", "key": "token"}}}]}

CASES.update({
    "node_taints": [
        ({}, []),
        ({"node": {"spec": {"taints": [{"key": "nvidia.com/gpu-xid-error", "value": "true",
                                        "effect": "NoSchedule"}]}}},
         ["nvidia.com/gpu-xid-error=true:NoSchedule"]),
        ({"pod": {"spec": {"nodeName": None}}}, None),
        ({"unread": ["nodes"], "pod": {"spec": {"nodeName": "gone"}}}, "UNKNOWN")],
    "cuda_error": [
        ({}, None),
        ({"previous_log": "torch.AcceleratorError: CUDA error: an illegal memory access was "
                          "encountered"}, "an illegal memory access was encountered"),
        ({"log": "failed call to cuInit: CUDA_ERROR_UNKNOWN: unknown error"},
         "CUDA_ERROR_UNKNOWN"),
        ({"unread": ["logs"]}, "UNKNOWN")],
    "pod_cuda_error": [
        ({}, None),
        ({"previous_log": "RuntimeError: CUDA error: unspecified launch failure"},
         "unspecified launch failure"),
        ({"unread": ["logs"]}, "UNKNOWN")],
    "autoscaler_conditions": [
        ({}, []),
        ({"pod": OWNED_POD, "objects": {**deployment_objects(),
                                        "horizontalpodautoscalers": [FAILING_HPA]}},
         ["HorizontalPodAutoscaler/vllm-qwen ScalingActive=False FailedGetPodsMetric"]),
        ({"pod": OWNED_POD, "objects": WITH_SO},
         ["ScaledObject/vllm-qwen Ready=True ScaledObjectReady",
          "ScaledObject/vllm-qwen health s0-prometheus=Failing"]),
        ({"pod": OWNED_POD, "objects": deployment_objects(), "unread": ["scaledobjects"]},
         "UNKNOWN")],
    "autoscaler_series_missing": [
        ({}, []),
        ({"pod": OWNED_POD, "objects": WITH_SO}, None),  # no /metrics read: not running
        ({"pod": OWNED_POD, "objects": WITH_SO, "metrics_text": PAGE},
         ["vllm:gpu_cache_usage_perc", 'model_name="Qwen3-8B"']),
        ({"pod": OWNED_POD, "objects": WITH_HPA, "metrics_text": PAGE}, []),
        ({"pod": OWNED_POD, "objects": WITH_SO, "unread": ["metrics"]}, "UNKNOWN")],
    "autoscaler_series_replacements": [
        ({}, []),
        ({"pod": OWNED_POD, "objects": WITH_SO, "metrics_text": PAGE},
         ["vllm:gpu_cache_usage_perc -> vllm:kv_cache_usage_perc",
          'model_name="Qwen3-8B" -> model_name="Qwen/Qwen3-8B"'])],
    "inference_pools": [
        ({}, []),
        ({"pod": POOL_POD, "objects": {"inferencepools": [POOL_V1]}},
         ["InferencePool llm/qwen-pool"]),
        ({"unread": ["inferencepools"]}, "UNKNOWN")],
    "inference_pool_pods": [
        ({}, None),
        ({"pod": POOL_POD, "objects": {"inferencepools": [POOL_V1], "pods": [OTHER]}}, 2)],
    "inference_pool_ready_pods": [
        ({}, None),
        ({"pod": POOL_POD, "objects": {"inferencepools": [POOL_V1], "pods": [OTHER]}}, 1)],
    "inference_pool_members": [
        ({}, None),
        ({"pod": POOL_POD, "objects": {"inferencepools": [POOL_V1], "pods": [OTHER]}},
         ["vllm-0: Ready", "vllm-1: not Ready (Running; Ready=False ContainersNotReady)"])],
    "inference_pool_picker_errors": [
        ({}, None),
        ({"pod": POOL_POD, "objects": WITH_PICKER,
          "other_logs": {(PICKER["metadata"]["name"], "epp"): PICKER_LOG}},
         ["inference gateway: InferencePoolResourceExhausted - system saturated, sheddable "
          "request dropped (2 times)"]),
        # its log read, no error in it
        ({"pod": POOL_POD, "objects": WITH_PICKER,
          "other_logs": {(PICKER["metadata"]["name"], "epp"): "starting server\n"}}, []),
        ({"pod": POOL_POD, "objects": WITH_PICKER}, None),  # no picker log read
        ({"pod": POOL_POD, "objects": WITH_PICKER, "unread": ["pickerpods"]}, "UNKNOWN")],
    "service_endpoints": [
        ({}, []),
        ({"objects": {"endpointslices": [SLICE]}},
         ["Service vllm-qwen: ready=False serving=False terminating=False (EndpointSlice "
          "vllm-qwen-x7k2p)"]),
        ({"unread": ["endpointslices"]}, "UNKNOWN")],
    "readiness_timeout_seconds": [
        ({}, None), ({"container": {"readinessProbe": PROBE}}, 1),
        ({"container": {"readinessProbe": {**PROBE, "timeoutSeconds": 5}}}, 5)],
    "probe_timeouts_while_serving": [
        ({}, 0),
        ({"log": READY_LINE, "events": [TIMEOUT]}, 23),
        # refused, not timed out: a start
        ({"log": READY_LINE, "events": [REFUSED]}, 0),
        ({"log": READY_LINE, "unread": ["events"]}, "UNKNOWN")],
    "killed_while_generating": [
        ({}, None),
        (KILLED, True),
        ({**KILLED, "previous_log": READY_LINE + STATS_BUSY.replace("Running: 58", "Running: 0")},
         False)],
    "previous_run_served_seconds": [
        ({}, None),
        (OOM_AFTER_HOURS, 26193.882),
        ({"status": CRASHED, "previous_log": "Loading safetensors checkpoint shards: 12%"},
         None),
        ({"status": CRASHED, "unread": ["logs"]}, "UNKNOWN")],
    "memory_working_set_bytes": [
        ({}, None),
        ({"telemetry": PodTelemetry(memory={"vllm": GROWING})}, GROWING[-1][1])],
    "memory_growth_bytes_per_hour": [
        ({}, None),
        ({"telemetry": PodTelemetry(memory={"vllm": GROWING})}, 400 * 2**20)],
    "memory_growth_recent_bytes_per_hour": [
        ({}, None),
        ({"telemetry": PodTelemetry(memory={"vllm": GROWING})}, 400 * 2**20),
        ({"telemetry": PodTelemetry(memory={"vllm": FLAT_AFTER})}, 0.0)],
    "memory_hours_to_limit": [
        ({}, None),
        # (32 GiB - 22.34375 GiB) at 400 MiB/h
        ({"telemetry": PodTelemetry(memory={"vllm": GROWING})}, (32 * 1024 - 22880) / 400),
        ({"telemetry": PodTelemetry(memory={"vllm": FLAT_AFTER})}, None)],
    "llm_inference_service": [
        ({}, None), ({"pod": LLMISVC_POD, "objects": LLMISVC_OBJECTS}, "qwen"),
        # its Deployment names it, the list was refused: unknown, even without the label
        ({"pod": {"metadata": {"ownerReferences": LLMISVC_POD["metadata"]["ownerReferences"]}},
          "objects": {k: v for k, v in LLMISVC_OBJECTS.items() if k != "llminferenceservices"},
          "unread": ["llminferenceservices"]}, "UNKNOWN")],
    "llm_inference_service_conditions": [
        ({}, None),
        ({"pod": LLMISVC_POD, "objects": LLMISVC_OBJECTS},
         ["ScalingReady=False FailedGetExternalMetric", "WorkloadsReady=True Ready"])],
    "hub_token_env": [({}, []), ({"container": TOKEN_ENV},
                                 ["HF_TOKEN (Secret hf-token key token)"]),
                      ({"container": {"envFrom": [{"secretRef": {"name": "hf"}}]}},
                       ["envFrom Secret hf"])],
    "server_hub_token_env": [({}, []), ({"container": TOKEN_ENV},
                                        ["vllm: HF_TOKEN (Secret hf-token key token)"])],
    "server_memory_limit": [({}, "vllm=32Gi"),
                            ({"container": {"resources": {"limits": {"memory": None}}}}, None)],
    "download_model": [
        ({}, None),
        ({"container": {"args": ["hf://meta-llama/Llama-3.1-8B-Instruct", "/mnt/models"]}},
         "meta-llama/Llama-3.1-8B-Instruct"),
        ({"container": {"command": ["sh", "-c"], "args": [
            "hf download Qwen/Qwen3-8B --local-dir /models/qwen"]}}, "Qwen/Qwen3-8B")],
    "download_model_gib": [
        ({}, None),
        ({"container": {"args": ["hf://meta-llama/Llama-3.1-8B-Instruct", "/mnt/models"]}},
         14.9)],
})


# Last, so that every CASES.update above is parametrized.
def test_every_registered_fact_has_cases() -> None:
    assert set(CASES) == set(REGISTRY)


@pytest.mark.parametrize("name", sorted(CASES))
def test_fact(name: str) -> None:
    for keys, expected in CASES[name]:
        fact = context(**keys).fact(name)
        assert fact.name == name and fact.unit == REGISTRY[name].unit
        if expected == "UNKNOWN":
            assert not fact.known and fact.unknown, (keys, fact)
            assert fact.value is None
            continue
        assert fact.known, (keys, fact.unknown)
        assert fact.value == expected, (keys, fact)
        assert fact.evidence.strip(), (keys, fact)
