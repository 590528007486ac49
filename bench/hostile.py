"""Time and peak memory of the tool against hostile input (issue 11 points 1, 3, 4, 5, 8).

    python bench/hostile.py [--code DIR] [--only NAME ...] [--limit-gb 8] [--timeout 300]

Each case builds its input in a temporary directory (a fixture variant served
by tests/support/kubeapi.py on 127.0.0.1, or a bundle), runs the CLI of the source
tree DIR (default: this one; point it at another checkout to compare) as a
child process under a memory limit and a timeout, and prints one JSON line:
seconds, the child's peak RSS, exit code, and what the report says. Every
loop here is bounded and stops by itself.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.fixturekit import (  # noqa: E402
    METRICS_TEXT,
    RUNNING_LOG,
    add_pod,
    copy_fixture,
    load_list,
    running_pod,
    save_list,
    template_pod,
)
from tests.support.kubeapi import KubeAPIServer, write_kubeconfig  # noqa: E402

HEALTHY = "vllm-llama-7d9f8b6c5d-m2x4q"
OOM = (b"(EngineCore_0 pid=270) ERROR 11-28 03:06:57 [core.py:700] torch.OutOfMemoryError: "
       b"CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
       b"22.03 GiB of which 91.06 MiB is free.")


def run_child(code: Path, args: list[str], limit_gb: float, timeout: float) -> dict[str, Any]:
    """The CLI of ``code`` in a grandchild with an address-space limit: seconds, peak RSS."""
    probe = (
        "import json, resource, subprocess, sys, time\n"
        "limit = int(float(sys.argv[1]) * 2**30)\n"
        "def cap():\n"
        "    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))\n"
        "t = time.monotonic()\n"
        "try:\n"
        "    p = subprocess.run([sys.executable, '-m', 'triage.cli', *sys.argv[3:]],"
        " capture_output=True, text=True, preexec_fn=cap, timeout=float(sys.argv[2]))\n"
        "    code, out, err = p.returncode, p.stdout, p.stderr\n"
        "except subprocess.TimeoutExpired:\n"
        "    code, out, err = 'timeout', '', ''\n"
        "print(json.dumps({'code': code, 'secs': round(time.monotonic() - t, 2),"
        " 'peak_rss_mib': round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024),"
        " 'stdout': out[-200000:], 'stderr': err[-2000:]}))\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env["NO_COLOR"] = "1"
    proc = subprocess.run([sys.executable, "-c", probe, str(limit_gb), str(timeout), *args],
                          capture_output=True, text=True, cwd=str(code), env=env,
                          timeout=timeout + 60)
    got: dict[str, Any] = json.loads(proc.stdout)
    return got


def summary(got: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {k: got[k] for k in ("code", "secs", "peak_rss_mib")}
    try:
        report = json.loads(got["stdout"])
    except ValueError:
        out["stderr"] = " ".join(got["stderr"].split())[:300]
        return out
    out["step2"] = report["checklist"][1]["verdict"]
    out["step5"] = report["checklist"][4]["verdict"]
    out["findings"] = sorted({f["id"] for p in report["pods"] for f in p["findings"]})
    out["unreadable"] = [f"{u['what']}: {u['reason']}"[:160] for u in report["unreadable"]]
    return out


def scan_case(tmp: Path, faults: dict[str, Any], log: bytes, metrics: bytes,
              code: Path, limit_gb: float, timeout: float, *extra: str) -> dict[str, Any]:
    root = copy_fixture(tmp / "fx", faults=faults)
    pod = running_pod(template_pod(root), HEALTHY, labels={"app": "vllm-llama"})
    # The hostile pod alone: the verdict and exit code are about it only.
    save_list(root, "pods", {**load_list(root, "pods"), "items": []})
    add_pod(root, pod, log=log, metrics=metrics)
    server = KubeAPIServer(root).start()
    try:
        kc = write_kubeconfig(tmp / "kc", server.url)
        got = run_child(code, ["scan", "--kubeconfig", str(kc), "-o", "json", *extra],
                        limit_gb, timeout)
    finally:
        server.stop()
    return summary(got)


def case_1_five_mib_line(tmp: Path, code: Path, limit: float, timeout: float) -> dict[str, Any]:
    log = (RUNNING_LOG.encode() * 300 + b"(APIServer pid=1) INFO 11-28 02:41:09 [logger.py:43] "
           b"Received request: " + b"x" * (5 * 2**20) + b"\n" + OOM + b"\n"
           + b'(APIServer pid=1) INFO:     10.48.0.1:51234 - "GET /health HTTP/1.1" 200 OK\n'
           * 150)
    return scan_case(tmp, {}, log, METRICS_TEXT.encode(), code, limit, timeout)


def case_1_100_mb_single_line(tmp: Path, code: Path, limit: float, timeout: float
                              ) -> dict[str, Any]:
    bar = b"Loading safetensors checkpoint shards:  50% Completed | 2/4 [00:01<00:01]\r"
    log = bar * (100 * 2**20 // len(bar)) + OOM
    return scan_case(tmp, {}, log, METRICS_TEXT.encode(), code, limit, timeout)


def case_4_metrics_64_mib(tmp: Path, code: Path, limit: float, timeout: float
                          ) -> dict[str, Any]:
    page = METRICS_TEXT.encode() + b"# padding\n" * (64 * 2**20 // 10)
    return scan_case(tmp, {}, RUNNING_LOG.encode(), page, code, limit, timeout)


def case_4_gzip_bomb(size_mib: int) -> Callable[[Path, Path, float, float], dict[str, Any]]:
    def run(tmp: Path, code: Path, limit: float, timeout: float) -> dict[str, Any]:
        return scan_case(tmp, {"gzip_bomb": {"proxy": size_mib * 2**20}}, RUNNING_LOG.encode(),
                         METRICS_TEXT.encode(), code, limit, timeout)
    return run


def case_5_drip(tmp: Path, code: Path, limit: float, timeout: float) -> dict[str, Any]:
    return scan_case(tmp, {"drip": {"proxy": 1.0}}, RUNNING_LOG.encode(),
                     METRICS_TEXT.encode(), code, limit, timeout, "--request-timeout", "2s")


ALIAS_BOMB = "a: &a [" + ",".join(['"lol"'] * 9) + "]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 9) + "]\n"
    for i in range(8)) + "items: [{metadata: {name: x, annotations: {bomb: *i}}}]\n"


def case_8_alias_bomb(tmp: Path, code: Path, limit: float, timeout: float) -> dict[str, Any]:
    root = copy_fixture(tmp / "fx")
    (root / "objects" / "events.yaml").write_text(ALIAS_BOMB)
    got = summary(run_child(code, ["analyze", str(root), "-o", "json"], limit, timeout))
    got["bomb_bytes"] = len(ALIAS_BOMB)
    return got


def case_8_big_log_bundle(tmp: Path, code: Path, limit: float, timeout: float
                          ) -> dict[str, Any]:
    """15 x 63 MiB logs in a bundle of a few MB (they compress well): refused once its
    members pass 512 MiB (exit 2), whatever the ratio, never held in memory."""
    fx = ROOT / "fixtures" / "cuda-oom"
    members = {f"fx/{p.relative_to(fx)}": p.read_bytes() for p in fx.rglob("*") if p.is_file()}
    log_path = "fx/logs/llm/vllm-qwen-5b7d9c8f6d-7xk2p/vllm.previous.log"
    line = members[log_path].splitlines(keepends=True)[3]
    big = line * (63 * 2**20 // len(line)) + members[log_path]
    for i in range(14):
        members[f"fx/logs/llm/vllm-qwen-5b7d9c8f6d-7xk2p/side{i}.log"] = big
    members[log_path] = big
    bundle = tmp / "big.tar.gz"
    with tarfile.open(bundle, "w:gz", compresslevel=9) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    got = summary(run_child(code, ["analyze", str(bundle), "-o", "json"], limit, timeout))
    got["bundle_mb"] = round(bundle.stat().st_size / 1e6, 1)
    return got


def case_3_redaction(tmp: Path, code: Path, limit: float, timeout: float) -> dict[str, Any]:
    """redact_text of 'password:' + 150,000 spaces, in the code's own redactor (a fresh
    grandchild process, so its peak RSS is its own, not this process's at fork)."""
    script = ("import time\nfrom triage.safety.redact import redact_text\n"
              "t = time.monotonic(); redact_text('password:' + ' ' * 150000)\n"
              "print(round(time.monotonic() - t, 3))\n")
    launcher = ("import resource, subprocess, sys\n"
                "p = subprocess.run([sys.executable, '-c', sys.argv[1]], capture_output=True,"
                " text=True)\n"
                "print(p.stdout.strip(),"
                " round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024))\n")
    try:
        proc = subprocess.run([sys.executable, "-c", launcher, script], capture_output=True,
                              text=True, cwd=str(code), timeout=timeout)
        secs, rss = proc.stdout.split()
        return {"secs": float(secs), "peak_rss_mib": int(rss)}
    except subprocess.TimeoutExpired:
        return {"secs": f"> {timeout} (stopped)"}


CASES: dict[str, Callable[[Path, Path, float, float], dict[str, Any]]] = {
    "1-five-mib-line": case_1_five_mib_line,
    "1-100-mb-single-line": case_1_100_mb_single_line,
    "3-password-150k-spaces": case_3_redaction,
    "4-metrics-64-mib": case_4_metrics_64_mib,
    "4-gzip-bomb-256-mib": case_4_gzip_bomb(256),
    "4-gzip-bomb-1-gib": case_4_gzip_bomb(1024),
    "5-drip-1-byte-per-s": case_5_drip,
    "8-alias-bomb": case_8_alias_bomb,
    "8-bundle-15x63-mib-logs": case_8_big_log_bundle,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code", type=Path, default=ROOT, help="source tree whose CLI runs")
    parser.add_argument("--only", nargs="*", default=list(CASES))
    parser.add_argument("--limit-gb", type=float, default=8.0,
                        help="address-space limit of the CLI process")
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args()
    for name in args.only:
        with tempfile.TemporaryDirectory() as tmp:
            start = time.monotonic()
            result = CASES[name](Path(tmp), args.code.resolve(), args.limit_gb, args.timeout)
            result["case"] = name
            result["wall"] = round(time.monotonic() - start, 1)
            print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
