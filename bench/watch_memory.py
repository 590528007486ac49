"""Memory of ``vllm-triage watch`` over many cycles, and its requests per cycle.

    python bench/watch_memory.py [--pods 40] [--cycles 1000] [--lines 300] [--json out.json]

A synthetic namespace of ``--pods`` vLLM pods (bench/synthetic.py: one in ten
crash-looping on a CUDA OOM, the rest running with a previous and a current
log of ``--lines`` lines and a /metrics page) is served by the test API
server. ``vllm-triage watch --interval 0.01s`` runs as its own process and
triages it back to back; its resident set (``/proc/PID/status`` VmRSS) is
read at cycle 10 and at checkpoints up to ``--cycles``. The target: RSS at
the last cycle within 10 % of RSS at cycle 10 (memory does not grow with
cycles). Also: the API requests of each cycle against one ``scan``'s (the
pod watch's own stream is counted apart). See bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import synthetic  # noqa: E402
from tests.support.kubeapi import KubeAPIServer, write_kubeconfig  # noqa: E402


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def _cycles(url: str) -> int:
    import httpx

    for line in httpx.get(f"{url}/metrics", timeout=10).text.splitlines():
        if line.startswith("vllm_triage_cycles_total{") and 'result="ok"' in line:
            return int(float(line.rsplit(" ", 1)[1]))
    return 0


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env.update({"NO_COLOR": "1", "HOME": tempfile.mkdtemp(prefix="bench-home-")})
    return env


def run(pods: int, cycles: int, lines: int) -> dict[str, object]:
    tmp = Path(tempfile.mkdtemp(prefix="bench-watch-"))
    root = tmp / "ns"
    synthetic.generate(root, pods=pods, lines=lines)
    server = KubeAPIServer(root).start()
    kubeconfig = write_kubeconfig(tmp / "kubeconfig", server.url, namespace=synthetic.NS)
    try:
        scan = subprocess.run([sys.executable, "-m", "triage.cli", "scan", "--kubeconfig",
                               str(kubeconfig), "-o", "json"], env=_env(), cwd=str(ROOT),
                              capture_output=True, timeout=600)
        assert scan.returncode in (0, 1), scan.stderr[-2000:]
        per_scan = Counter(server.requests)
        server.requests.clear()
        from tests.support.promserver import free_port

        port = free_port()
        url = f"http://127.0.0.1:{port}"
        proc = subprocess.Popen(
            [sys.executable, "-m", "triage.cli", "watch", "--kubeconfig", str(kubeconfig),
             "--interval", "0.01s", "--listen", f"127.0.0.1:{port}"],
            env=_env(), cwd=str(ROOT), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        checkpoints = sorted({10, *(c for c in (100, 250, 500, 750) if c < cycles), cycles})
        rss: dict[int, float] = {}
        started = time.monotonic()
        try:
            while len(rss) < len(checkpoints):
                if proc.poll() is not None:
                    raise RuntimeError(f"watch exited: {proc.stderr.read()[-2000:]!r}")
                try:
                    done = _cycles(url)
                except Exception:
                    done = 0
                for c in checkpoints:
                    if c not in rss and done >= c:
                        rss[c] = _rss_mb(proc.pid)
                        print(f"cycle {done:5d}: RSS {rss[c]:.1f} MB "
                              f"({time.monotonic() - started:.0f}s)", flush=True)
                time.sleep(0.05)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
        elapsed = time.monotonic() - started
        requests = list(server.requests)
    finally:
        server.stop()
    watches = sum("watch=1" in r for r in requests)
    plain = [r for r in requests if "watch=1" not in r]
    list_path = f"GET /api/v1/namespaces/{synthetic.NS}/pods"
    per_cycle: list[Counter[str]] = []
    for r in plain:
        if r.split("?")[0] == list_path:
            per_cycle.append(Counter())
        if per_cycle:
            per_cycle[-1][r] += 1
    complete = per_cycle[:-1]
    first, last = rss[10], rss[cycles]
    return {
        "pods": pods, "cycles": cycles, "log_lines": lines,
        "rss_mb": {str(k): round(v, 1) for k, v in sorted(rss.items())},
        "growth": round(last / first - 1, 4),
        "within_10_percent": abs(last / first - 1) <= 0.10,
        "seconds": round(elapsed, 1),
        "requests_per_scan": sum(per_scan.values()),
        "requests_per_cycle_max": max(sum(c.values()) for c in complete),
        "cycles_equal_to_a_scan": sum(c == per_scan for c in complete),
        "cycles_counted": len(complete),
        "watch_streams": watches,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=40)
    parser.add_argument("--cycles", type=int, default=1000)
    parser.add_argument("--lines", type=int, default=300)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    result = run(args.pods, args.cycles, args.lines)
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    sys.exit(0 if result["within_10_percent"] else 1)


if __name__ == "__main__":
    main()
