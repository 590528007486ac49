"""vllm-triage lint on a Helm-rendered file of 20 objects: under 0.5 s (issue 18); and,
with --scale, on 1,000 and 4,000 vLLM Deployments: linear, 4x the documents within 4.5x
the time.

The file is what ``helm template`` prints for a vLLM chart with four model
servers: ``# Source:`` comments, ``---`` between documents, per server a
Deployment, a Service, an HPA and a ConfigMap holding its ``--config`` file,
and a PVC for the model cache, 20 objects in all. It is linted as CI runs it,
``vllm-triage lint -f FILE -o sarif``, each run its own process. Baseline,
measured in the same run: the tool's own start-up, ``vllm-triage --version``;
what lint adds is the rest.

    python -m bench.lint [--runs 5]
    python -m bench.lint --scale [--runs 3]

--scale lints one file of N Deployments (the seed article's starting manifest, each
with its own name) for N = 1,000 and 4,000, and compares CPU and wall time: every
Deployment is linted the same way, so the time should grow with N, not faster.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from bench.run import clean_env, cli, measure, median, repeat, warm_up

SERVER = """\
---
# Source: vllm/templates/service.yaml
apiVersion: v1
kind: Service
metadata:
  name: {name}
  labels: {{app.kubernetes.io/name: vllm, app.kubernetes.io/instance: {name}}}
spec:
  selector: {{app.kubernetes.io/instance: {name}}}
  ports:
    - {{name: http, port: 8000, targetPort: http}}
---
# Source: vllm/templates/configmap.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: {name}-config
data:
  config.yaml: |
    max-model-len: {context}
    gpu-memory-utilization: 0.9
    max-num-batched-tokens: 8192
---
# Source: vllm/templates/pvc.yaml
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: {name}-cache
spec:
  accessModes: [ReadWriteMany]
  resources: {{requests: {{storage: 200Gi}}}}
---
# Source: vllm/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  labels: {{app.kubernetes.io/name: vllm, app.kubernetes.io/instance: {name}}}
spec:
  replicas: 2
  strategy: {{type: RollingUpdate, rollingUpdate: {{maxSurge: 0, maxUnavailable: 1}}}}
  selector:
    matchLabels: {{app.kubernetes.io/instance: {name}}}
  template:
    metadata:
      labels: {{app.kubernetes.io/name: vllm, app.kubernetes.io/instance: {name}}}
    spec:
      containers:
        - name: vllm
          image: "vllm/vllm-openai:{tag}"
          args: ["--model", "{model}", "--config", "/etc/vllm/config.yaml",
                 "--tensor-parallel-size", "{tp}", "--port", "8000"]
          ports: [{{name: http, containerPort: 8000}}]
          env:
            - {{name: HF_HOME, value: /models}}
            - name: HF_TOKEN
              valueFrom: {{secretKeyRef: {{name: hf-token, key: token}}}}
          resources:
            limits: {{nvidia.com/gpu: "{tp}", memory: 64Gi}}
            requests: {{nvidia.com/gpu: "{tp}", memory: 48Gi, cpu: "8"}}
          startupProbe: {{httpGet: {{path: /health, port: http}}, periodSeconds: 10,
                         failureThreshold: {startup}}}
          readinessProbe: {{httpGet: {{path: /health, port: http}}, periodSeconds: 5}}
          livenessProbe: {{httpGet: {{path: /health, port: http}}, periodSeconds: 15,
                          timeoutSeconds: {liveness_timeout}, failureThreshold: 3}}
          volumeMounts:
            - {{name: config, mountPath: /etc/vllm}}
            - {{name: cache, mountPath: /models}}
            - {{name: dshm, mountPath: /dev/shm}}
      volumes:
        - {{name: config, configMap: {{name: {name}-config}}}}
        - {{name: cache, persistentVolumeClaim: {{claimName: {name}-cache}}}}
        - {{name: dshm, emptyDir: {{medium: Memory, sizeLimit: {shm}}}}}
---
# Source: vllm/templates/hpa.yaml
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {name}
spec:
  scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: {name}}}
  minReplicas: 2
  maxReplicas: 8
  metrics:
    {metric}
"""

QUEUE = ("- {type: Pods, pods: {metric: {name: vllm_num_requests_waiting}, "
         "target: {type: AverageValue, averageValue: \"5\"}}}")
CPU = ("- {type: Resource, resource: {name: cpu, "
       "target: {type: Utilization, averageUtilization: 70}}}")
SERVERS = [
    # name, model, tp, context, tag, startup failures, liveness timeout, shm, autoscaling
    ("chat-8b", "Qwen/Qwen3-8B", 1, 16384, "v0.10.1.1", 60, 5, "8Gi", QUEUE),
    ("chat-70b", "meta-llama/Llama-3.3-70B-Instruct", 4, 32768, "v0.10.1.1", 90, 5, "16Gi",
     QUEUE),
    ("code-32b", "Qwen/Qwen2.5-Coder-32B-Instruct", 2, 32768, "latest", 12, 1, "512Mi", CPU),
    ("embed-0.6b", "Qwen/Qwen3-Embedding-0.6B", 1, 8192, "v0.10.1.1", 30, 5, "1Gi", QUEUE),
]


def rendered() -> str:
    return "".join(SERVER.format(name=n, model=m, tp=tp, context=ctx, tag=tag, startup=st,
                                 liveness_timeout=lt, shm=shm, metric=metric)
                   for n, m, tp, ctx, tag, st, lt, shm, metric in SERVERS)


SEED_START = Path(__file__).resolve().parent.parent / "tests" / "support" / "data" / "lint" \
    / "seed-002-start.yaml"


def deployments(count: int) -> str:
    """``count`` copies of the seed article's starting Deployment, each named apart."""
    text = SEED_START.read_text()
    return "---\n".join(text.replace("name: vllm-qwen", f"name: vllm-qwen-{i}")
                        for i in range(count))


def scale(runs: int) -> int:
    env = clean_env()
    sizes = (1000, 4000)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            path = Path(tmp) / f"deployments-{n}.yaml"
            path.write_text(deployments(n))
            results[n] = median(repeat(runs, lambda p=path: measure(
                cli("lint", "-f", str(p), "-o", "json", "--fail-on", "never"), env)))
    print("| Deployments | wall s | CPU s | peak RSS MB |")
    print("|---|---|---|---|")
    for n in sizes:
        r = results[n]
        print(f"| {n:,} | {r['wall_s']:.2f} | {r['cpu_s']:.2f} | {r['peak_rss_mb']:.0f} |")
    cpu = results[4000]["cpu_s"] / results[1000]["cpu_s"]
    wall = results[4000]["wall_s"] / results[1000]["wall_s"]
    print(f"4,000 over 1,000: CPU {cpu:.2f}x, wall {wall:.2f}x; target within 4.5x: "
          f"{'met' if cpu <= 4.5 else 'NOT met'}")
    return 0 if cpu <= 4.5 else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--scale", action="store_true",
                        help="lint 1,000 and 4,000 Deployments and compare the times")
    args = parser.parse_args()
    warm_up()
    if args.scale:
        return scale(args.runs)
    env = clean_env()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "helm-rendered.yaml"
        path.write_text(rendered())
        check = measure(cli("lint", "-f", str(path), "-o", "json", "--fail-on", "never"),
                        env)
        doc = json.loads(check.stdout)
        objects = sum(1 for line in rendered().splitlines() if line.startswith("kind:"))
        lint = median(repeat(args.runs, lambda: measure(
            cli("lint", "-f", str(path), "-o", "sarif", "--fail-on", "never"), env)))
        start = median(repeat(args.runs, lambda: measure(cli("--version"), env)))
    print(f"objects: {objects}, findings: {len(doc['findings'])} "
          f"({', '.join(sorted({f['id'] for f in doc['findings']}))})")
    print("| what | wall s | CPU s | peak RSS MB |")
    print("|---|---|---|---|")
    print(f"| lint -o sarif, {objects} objects (Helm-rendered) | {lint['wall_s']:.3f} | "
          f"{lint['cpu_s']:.3f} | {lint['peak_rss_mb']:.0f} |")
    print(f"| baseline: vllm-triage --version (start-up) | {start['wall_s']:.3f} | "
          f"{start['cpu_s']:.3f} | {start['peak_rss_mb']:.0f} |")
    print(f"lint over start-up: {lint['wall_s'] / start['wall_s']:.2f}x; "
          f"target < 0.5 s: {'met' if lint['wall_s'] < 0.5 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
