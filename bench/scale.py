"""Issue 16's benchmarks: big clusters, dense logs and start-up, each against its baseline
measured in the same run (see bench/README.md).

    python -m bench.scale cluster [--pods 20000] [--namespace-pods 3000]
    python -m bench.scale namespace [--namespace-pods 3000]
    python -m bench.scale dense [--mib 64]
    python -m bench.scale startup [--runs 5] [--src CHECKOUT]
    python -m bench.scale all

cluster: a cluster of N production-sized pods (about 7 KB each: managedFields,
annotations, env) in 40 namespaces, 40 of them vLLM, served by the test API
server (tests/support/kubeapi.py, paging as an API server pages); ``vllm-triage scan
-A -o json`` against ``kubectl get pods -A`` (which pages the same list in
chunks of 500). Then one namespace of M pods, ``scan -n`` (memory only).

namespace: that namespace alone: ``scan -n`` of M vLLM pods, peak RSS against the bound
(300 MB for 3,000 pods).

dense: the three dense shapes of bench/dense.py at N MiB as a pod's previous
log, ``vllm-triage analyze DIR -o json`` against ``LC_ALL=C grep -c`` of the
tool's own patterns (bench/grep_patterns.py) over the same file.

startup: ``vllm-triage analyze fixtures/cuda-oom -o json`` against ``kubectl
version --client``, in turn; wall and CPU time, and ``python -c pass`` as the floor.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import dense, synthetic  # noqa: E402
from bench.grep_patterns import grep_patterns  # noqa: E402
from bench.run import CUDA_OOM_POD, clean_env, cli, measure, warm_up  # noqa: E402
from tests.support.kubeapi import KubeAPIServer, write_kubeconfig  # noqa: E402

VLLM_PODS = 40


def _big_pod(i: int, ns: str) -> dict[str, Any]:
    """A web pod the size production pods have (about 7 KB as JSON)."""
    name = f"web-{i:05d}-7d9c8f6d5b-{i % 99991:05x}"
    env = [{"name": f"FEATURE_FLAG_{k:02d}", "value": f"enabled-for-cohort-{k}-{i % 13}"}
           for k in range(56)]
    fields = {"f:metadata": {"f:labels": {f"f:{k}": {} for k in ("app", "tier", "version")}},
              "f:spec": {"f:containers": {'k:{"name":"web"}': {f"f:{k}": {} for k in (
                  "image", "imagePullPolicy", "resources", "env", "ports", "livenessProbe",
                  "readinessProbe", "terminationMessagePath", "volumeMounts")}}}}
    return {
        "metadata": {
            "name": name, "namespace": ns, "uid": f"uid-web-{i:05d}",
            "resourceVersion": str(100000 + i), "creationTimestamp": "2026-11-20T08:00:00Z",
            "labels": {"app": "web", "tier": "frontend", "version": "v2.14.3",
                       "pod-template-hash": "7d9c8f6d5b"},
            "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-20T08:00:00Z",
                            "prometheus.io/scrape": "true", "prometheus.io/port": "9102",
                            "checksum/config": "9f2c" * 16},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                 "name": f"web-{i % 200:03d}-7d9c8f6d5b",
                                 "uid": f"rs-web-{i % 200}", "controller": True,
                                 "blockOwnerDeletion": True}],
            "managedFields": [{"manager": "kube-controller-manager", "operation": "Update",
                               "apiVersion": "v1", "time": "2026-11-20T08:00:00Z",
                               "fieldsType": "FieldsV1", "fieldsV1": fields},
                              {"manager": "kubelet", "operation": "Update", "apiVersion": "v1",
                               "time": "2026-11-20T08:00:05Z", "fieldsType": "FieldsV1",
                               "subresource": "status",
                               "fieldsV1": {"f:status": {"f:conditions": {}, "f:podIP": {},
                                                         "f:containerStatuses": {}}}}]},
        "spec": {
            "nodeName": f"pool-{i % 500:03d}", "serviceAccountName": "web",
            "containers": [{
                "name": "web", "image": "registry.example.com/shop/web:v2.14.3",
                "imagePullPolicy": "IfNotPresent", "env": env,
                "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                "resources": {"limits": {"cpu": "2", "memory": "2Gi"},
                              "requests": {"cpu": "500m", "memory": "1Gi"}},
                "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080},
                                  "periodSeconds": 10},
                "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080},
                                   "periodSeconds": 5},
                "volumeMounts": [{"name": "kube-api-access", "readOnly": True,
                                  "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
                "terminationMessagePath": "/dev/termination-log"}],
            "volumes": [{"name": "kube-api-access", "projected": {"sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}]}}]},
        "status": {
            "phase": "Running", "podIP": f"10.{i % 250}.{i // 250 % 250}.{i % 200 + 2}",
            "conditions": [{"type": t, "status": "True",
                            "lastTransitionTime": "2026-11-20T08:00:05Z"}
                           for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")],
            "containerStatuses": [{
                "name": "web", "image": "registry.example.com/shop/web:v2.14.3",
                "imageID": "registry.example.com/shop/web@sha256:" + "ab" * 32,
                "containerID": f"containerd://{i:064x}", "ready": True, "started": True,
                "restartCount": 0, "state": {"running": {"startedAt": "2026-11-20T08:00:04Z"}},
                "lastState": {}}]}}


def cluster_fixture(root: Path, pods: int, namespaces: int = 40) -> Path:
    """``pods`` pods in ``namespaces`` namespaces; VLLM_PODS of them vLLM (bench/synthetic)."""
    if root.exists():
        shutil.rmtree(root)
    synthetic.generate(root, pods=VLLM_PODS, lines=300)
    listed = json.loads((root / "objects" / "pods.json").read_text())
    for i in range(pods - VLLM_PODS):
        listed["items"].append(_big_pod(i, f"team-{i % namespaces:02d}"))
    (root / "objects" / "pods.json").write_text(json.dumps(listed))
    return root


def namespace_fixture(root: Path, pods: int) -> Path:
    """One namespace of ``pods`` vLLM pods (the 3,000-pod namespace), short logs."""
    if root.exists():
        shutil.rmtree(root)
    synthetic.generate(root, pods=pods, lines=60)
    return root


def bench_cluster(pods: int, namespace_pods: int, tmp: Path) -> list[dict[str, Any]]:
    env = clean_env()
    rows = []
    root = cluster_fixture(tmp / f"cluster-{pods}", pods)
    size = (root / "objects" / "pods.json").stat().st_size
    server = KubeAPIServer(root).start()
    try:
        kc = write_kubeconfig(tmp / "kc-cluster", server.url, namespace=synthetic.NS)
        kenv = {**env, "KUBECONFIG": str(kc), "KUBECACHEDIR": str(tmp / "kcache")}
        measure(["kubectl", "get", "ns"], kenv)  # discovery cache warm, as on a laptop
        kubectl = measure(["kubectl", "get", "pods", "-A", "--request-timeout=300s"], kenv)
        tool = measure(cli("scan", "--kubeconfig", str(kc), "-A", "-o", "json",
                           "--request-timeout", "300s"), env)
        rows.append({"what": f"scan -A, {pods:,} pods ({size / 2**20:.0f} MiB of pod JSON)",
                     "tool_s": tool.wall_s, "tool_cpu_s": tool.cpu_s,
                     "tool_rss_mb": tool.peak_rss_mb, "tool_exit": tool.exit_code,
                     "baseline": "kubectl get pods -A", "baseline_s": kubectl.wall_s,
                     "baseline_cpu_s": kubectl.cpu_s, "baseline_rss_mb": kubectl.peak_rss_mb,
                     "ratio": round(tool.wall_s / kubectl.wall_s, 2),
                     # A loaded machine moves wall time by 2x between runs; CPU time less.
                     "cpu_ratio": round(tool.cpu_s / max(kubectl.cpu_s, 0.001), 2)})
    finally:
        server.stop()
    return rows + bench_namespace(namespace_pods, tmp)


NAMESPACE_RSS_MB = 300  # issue 16: a 3,000-pod namespace under 300 MB


def bench_namespace(pods: int, tmp: Path) -> list[dict[str, Any]]:
    """``scan -n`` of one namespace of ``pods`` vLLM pods: its peak RSS against the bound
    (memory is held per pod analysed at a time, not per pod of the namespace)."""
    env = clean_env()
    root = namespace_fixture(tmp / f"ns-{pods}", pods)
    server = KubeAPIServer(root).start()
    try:
        kc = write_kubeconfig(tmp / "kc-ns", server.url, namespace=synthetic.NS)
        tool = measure(cli("scan", "--kubeconfig", str(kc), "-o", "json",
                           "--request-timeout", "300s"), env)
    finally:
        server.stop()
    return [{"what": f"scan -n, {pods:,} vLLM pods in one namespace",
             "tool_s": tool.wall_s, "tool_cpu_s": tool.cpu_s, "tool_rss_mb": tool.peak_rss_mb,
             "tool_exit": tool.exit_code, "target_rss_mb": NAMESPACE_RSS_MB,
             "rss_met": tool.peak_rss_mb < NAMESPACE_RSS_MB}]


def bench_dense(mib: int, tmp: Path) -> list[dict[str, Any]]:
    env = clean_env()
    patterns = tmp / "patterns.ere"
    grep_patterns(patterns)
    rows = []
    for shape in dense.SHAPES:
        root = tmp / f"dense-{shape}"
        if root.exists():
            shutil.rmtree(root)
        shutil.copytree(ROOT / "fixtures" / "cuda-oom", root)
        log = root / "logs" / "llm" / CUDA_OOM_POD / "vllm.previous.log"
        crash = log.read_bytes()
        dense.write(log, shape, mib, crash)
        size = log.stat().st_size / 2**20
        grep = measure(["grep", "-E", "-c", "-f", str(patterns), str(log)], {"LC_ALL": "C"})
        tool = measure(cli("analyze", str(root), "-o", "json"), env)
        rows.append({"what": f"analyze DIR, {shape}, {size:.0f} MiB", "tool_s": tool.wall_s,
                     "tool_cpu_s": tool.cpu_s, "baseline_cpu_s": grep.cpu_s,
                     "tool_rss_mb": tool.peak_rss_mb, "tool_exit": tool.exit_code,
                     "tool_mib_s": round(size / tool.wall_s, 1),
                     "baseline": "LC_ALL=C grep -E -c -f", "baseline_s": grep.wall_s,
                     "ratio": round(tool.wall_s / max(grep.wall_s, 0.01), 1)})
        shutil.rmtree(root)
    return rows


def bench_startup(runs: int, src: str | None = None) -> list[dict[str, Any]]:
    """analyze of the quick-start fixture against kubectl version --client, run in turn
    so that both see the same load; wall time (the target) and CPU time (which a loaded
    machine disturbs less), with the interpreter's own start as the floor. ``src``: a
    checkout whose ``triage`` is run instead (another commit, measured in the same
    minutes; its ``patterns`` directory must be beside its ``triage``)."""
    env = clean_env()
    if src:
        env["PYTHONPATH"] = src
    tool, kubectl, python = [], [], []
    for _ in range(runs):
        cmd = cli("analyze", str(ROOT / "fixtures" / "cuda-oom"), "-o", "json")
        if src:
            cmd.insert(1, "-P")  # the working directory (this checkout) not first on the path
        tool.append(measure(cmd, env))
        if not tool[-1].stdout.strip():  # an error (a checkout without its patterns) is no run
            raise SystemExit(f"analyze wrote no report (exit {tool[-1].exit_code})")
        kubectl.append(measure(["kubectl", "version", "--client"], env))
        python.append(measure([sys.executable, "-c", "pass"], env))

    def med(rs: list[Any], what: str) -> float:
        return round(statistics.median(getattr(r, what) for r in rs), 3)
    t, k = med(tool, "wall_s"), med(kubectl, "wall_s")
    tc, kc = med(tool, "cpu_s"), med(kubectl, "cpu_s")
    return [{"what": "analyze fixtures/cuda-oom (start-up)", "tool_s": t, "tool_cpu_s": tc,
             "tool_rss_mb": max(r.peak_rss_mb for r in tool), "baseline":
             "kubectl version --client", "baseline_s": k, "baseline_cpu_s": kc,
             "ratio": round(t / k, 2), "cpu_ratio": round(tc / max(kc, 0.001), 2),
             "interpreter_s": med(python, "wall_s"), "runs": runs}]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["cluster", "namespace", "dense", "startup", "all"])
    parser.add_argument("--pods", type=int, default=20_000)
    parser.add_argument("--namespace-pods", type=int, default=3_000)
    parser.add_argument("--mib", type=int, default=64)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--src", help="startup: run the triage package of this checkout")
    args = parser.parse_args()
    warm_up()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        if args.what in ("startup", "all"):
            rows += bench_startup(args.runs, args.src)
        if args.what in ("dense", "all"):
            rows += bench_dense(args.mib, Path(tmp))
        if args.what in ("cluster", "all"):
            rows += bench_cluster(args.pods, args.namespace_pods, Path(tmp))
        if args.what == "namespace":
            rows += bench_namespace(args.namespace_pods, Path(tmp))
    load = os.getloadavg()[0]
    for row in rows:
        print(json.dumps({**row, "load_avg_1m": round(load, 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
