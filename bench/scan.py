"""The scan benchmark: vllm-triage against the floor and against kubectl by hand.

A synthetic namespace of N vLLM pods (bench/synthetic.py) is served by the
test API server with a fixed latency per request. Three things are timed:

- the tool: ``vllm-triage scan -o json`` (wall, CPU, peak RSS, API requests);
- the floor: the requests the tool sent x the latency / its read pool, plus
  its start-up (a scan of an empty namespace with no latency) -- no tool that
  sends those requests through that pool can be faster;
- by hand: the kubectl sequence an on-call engineer types to look at the same
  things (pods, events, workloads, nodes, then per pod ``describe``, both
  logs and the /metrics page through the pod proxy), one command after another.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench import synthetic
from bench.run import Row, clean_env, cli, measure, median, repeat
from tests.support.kubeapi import KubeAPIServer, write_kubeconfig

WORKERS = 8  # the live collector's read pool (triage/collect/live/collector.py Options.workers)


def _namespace(tmp: Path, pods: int) -> Path:
    root = tmp / f"scan-{pods}"
    if root.exists():
        shutil.rmtree(root)
    synthetic.generate(root, pods=pods, lines=3000)
    return root


def _empty(tmp: Path) -> Path:
    root = tmp / "scan-empty"
    if not root.exists():
        synthetic.generate(root, pods=1, lines=10)
        (root / "objects" / "pods.json").write_text(json.dumps(
            {"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": []}))
    return root


def _kubectl_by_hand(kubeconfig: Path, pods: list[dict[str, object]],
                     cache: Path) -> tuple[float, int]:
    """Wall seconds of the manual sequence, serially, with kubectl's own cache warm after
    the first command (as on an engineer's laptop), and the number of commands."""
    env = {**clean_env(), "KUBECONFIG": str(kubeconfig), "KUBECACHEDIR": str(cache)}
    ns = synthetic.NS
    # What the tool reads, the way an engineer asks for it: the lists, then each node
    # the pods run on (conditions, capacity), then each pod.
    commands = [["get", "pods", "-n", ns, "-o", "wide"],
                ["get", "events", "-n", ns, "--sort-by=.lastTimestamp"],
                ["get", "deploy,rs,sts,hpa,pvc,svc", "-n", ns],
                ["get", "inferenceservices", "-n", ns],
                ["get", "nodes"]]
    nodes = sorted({str(pod["spec"]["nodeName"]) for pod in pods})  # type: ignore[index]
    commands += [["describe", "node", node] for node in nodes]
    for pod in pods:
        name = str(pod["metadata"]["name"])  # type: ignore[index]
        commands.append(["describe", "pod", "-n", ns, name])
        commands.append(["logs", "-n", ns, name, "-c", "vllm", "--previous", "--tail=3000"])
        commands.append(["logs", "-n", ns, name, "-c", "vllm", "--tail=3000"])
        commands.append(["get", "--raw",
                         f"/api/v1/namespaces/{ns}/pods/{name}:8000/proxy/metrics"])
    start = time.monotonic()
    for args in commands:
        subprocess.run(["kubectl", *args], env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=False)
    return time.monotonic() - start, len(commands)


def bench_scan(sizes: list[int], latency: float, runs: int, tmp: Path,
               by_hand_up_to: int = 40) -> list[Row]:
    rows: list[Row] = []
    env = clean_env()
    empty = KubeAPIServer(_empty(tmp)).start()
    try:
        kc = write_kubeconfig(tmp / "empty.kubeconfig", empty.url, namespace=synthetic.NS)
        startup = median(repeat(runs, lambda: measure(
            cli("scan", "--kubeconfig", str(kc), "-o", "json"), env=env)))["wall_s"]
    finally:
        empty.stop()
    for n in sizes:
        root = _namespace(tmp, n)
        server = KubeAPIServer(root, latency=latency).start()
        try:
            kc = write_kubeconfig(tmp / f"scan-{n}.kubeconfig", server.url,
                                  namespace=synthetic.NS)
            before = len(server.requests)
            tool_runs = repeat(runs, lambda kc=kc: measure(
                cli("scan", "--kubeconfig", str(kc), "-o", "json"), env=env))
            requests = (len(server.requests) - before) // runs
            assert all(r.startswith("GET ") for r in server.requests)
            report = json.loads(tool_runs[-1].stdout)
            assert len(report["pods"]) == n, len(report["pods"])
            floor = requests * latency / WORKERS + startup
            rows.append(Row(f"scan, {n} pods, {latency * 1000:g} ms per request",
                            median(tool_runs), {"wall_s": round(floor, 3)},
                            f"floor ({requests} requests x latency / {WORKERS} + start-up "
                            f"{startup:.2f} s)"))
            print(f"scan {n}: {rows[-1].tool} floor {floor:.2f}", file=sys.stderr)
            if n <= by_hand_up_to and shutil.which("kubectl"):
                pods = json.loads((root / "objects" / "pods.json").read_text())["items"]
                cache = tmp / f"kube-cache-{n}"
                by_hand, commands = _kubectl_by_hand(kc, pods, cache)
                rows.append(Row(f"scan, {n} pods, {latency * 1000:g} ms per request",
                                median(tool_runs), {"wall_s": round(by_hand, 3)},
                                f"kubectl by hand ({commands} commands, serial)"))
                print(f"by hand {n}: {by_hand:.1f} s", file=sys.stderr)
        finally:
            server.stop()
            shutil.rmtree(root, ignore_errors=True)
    return rows

