"""Benchmark: the CLI against baselines measured in the same run.

    python bench/run.py analyze [--sizes 10,100,1024] [--runs 3]
    python bench/run.py scan [--pods 40,100,300] [--latency-ms 20] [--runs 3]
    python bench/run.py all [--json out.json]

analyze: a fixture whose crash-looping pod has a previous log of N MiB
(healthy vLLM traffic, a CUDA OOM at the end), analyzed offline, against
``LC_ALL=C grep -E -c -f`` with the tool's own log regexes (bench/grep_patterns.py).

scan: N vLLM pods served by the test API server (tests/support/kubeapi.py) with a
fixed latency per request, against the floor (requests x latency / the
tool's read pool, plus the tool's start-up) and against the manual kubectl
sequence an on-call engineer would type for each pod.

Every command runs as its own subprocess; wall time, CPU time and peak RSS
are that process's own (os.wait4). Medians of --runs. See bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import synthetic  # noqa: E402
from bench.grep_patterns import grep_patterns  # noqa: E402

CUDA_OOM_POD = "vllm-qwen-5b7d9c8f6d-7xk2p"


@dataclass
class Run:
    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    exit_code: int
    stdout: bytes = b""


@dataclass
class Row:
    what: str
    tool: dict[str, float] = field(default_factory=dict)
    baseline: dict[str, float] = field(default_factory=dict)
    baseline_name: str = ""
    notes: str = ""

    @property
    def ratio(self) -> float:
        return self.tool["wall_s"] / self.baseline["wall_s"] if self.baseline.get("wall_s") else 0


def measure(cmd: list[str], env: dict[str, str] | None = None) -> Run:
    """Run ``cmd`` and read its own resource usage.

    Through /usr/bin/time where it exists: a child forked from this Python
    process would otherwise report the parent's resident pages as its peak.
    """
    timer = Path("/usr/bin/time")
    with tempfile.TemporaryFile() as out, tempfile.NamedTemporaryFile("r") as stats:
        full = ([str(timer), "-q", "-o", stats.name, "-f", "%e %U %S %M %x", *cmd]
                if timer.exists() else cmd)
        start = time.monotonic()
        proc = subprocess.Popen(full, stdout=out, stderr=subprocess.DEVNULL, env=env,
                                cwd=str(ROOT))
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - start
        out.seek(0)
        data = out.read()
        if timer.exists():
            # Peak RSS and exit status from time(1); wall and CPU measured here, to the
            # microsecond (time(1) prints hundredths: a 0.04 s baseline would be a rounding).
            # wait4 counts time(1) and the command it waited for; time(1) adds about 1 ms.
            _e, _u, _s, m, x = stats.read().split()[-5:]
            return Run(wall, usage.ru_utime + usage.ru_stime, int(m) / 1024, int(x), data)
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024,
               os.waitstatus_to_exitcode(status), data)


def median(runs: list[Run]) -> dict[str, float]:
    return {"wall_s": round(statistics.median(r.wall_s for r in runs), 3),
            "cpu_s": round(statistics.median(r.cpu_s for r in runs), 3),
            "peak_rss_mb": round(max(r.peak_rss_mb for r in runs), 1)}


def repeat(n: int, fn: Callable[[], Run]) -> list[Run]:
    return [fn() for _ in range(n)]


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "triage.cli", *args]


def clean_env() -> dict[str, str]:
    # An installed tool has its bytecode compiled (pip does it at install): a
    # PYTHONDONTWRITEBYTECODE in the environment would time compiling every module
    # from source on every run instead.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("KUBE") and k != "PYTHONDONTWRITEBYTECODE"}
    env["NO_COLOR"] = "1"
    return env


# --- analyze vs grep --------------------------------------------------------------------------


def big_log_fixture(root: Path, mib: int, seed_file: Path) -> Path:
    """fixtures/cuda-oom with its previous log grown to ``mib`` MiB of healthy traffic."""
    shutil.copytree(ROOT / "fixtures" / "cuda-oom", root)
    prev = root / "logs" / "llm" / CUDA_OOM_POD / "vllm.previous.log"
    crash = prev.read_bytes()
    block = seed_file.read_bytes()
    with prev.open("wb") as f:
        written = 0
        while written < mib * 1024 * 1024:
            f.write(block)
            written += len(block)
        f.write(crash)
    return prev


def traffic_seed(path: Path, mib: int = 16) -> None:
    import random

    rng = random.Random(7)
    with path.open("w") as f:
        for line in synthetic._startup(rng, "11-28"):
            f.write(line + "\n")
        written = 0
        while written < mib * 1024 * 1024:
            block = "\n".join(synthetic._traffic(rng, "11-28", 5000)) + "\n"
            f.write(block)
            written += len(block)


def bench_analyze(sizes: list[int], runs: int, tmp: Path) -> list[Row]:
    patterns = tmp / "patterns.ere"
    count, refused = grep_patterns(patterns)
    seed = tmp / "seed.log"
    traffic_seed(seed)
    rows = []
    env = clean_env()
    for mib in sizes:
        root = tmp / f"analyze-{mib}"
        log = big_log_fixture(root, mib, seed)
        grep = repeat(runs, lambda log=log: measure(
            ["grep", "-E", "-c", "-f", str(patterns), str(log)], env={"LC_ALL": "C"}))
        tool = repeat(runs, lambda root=root: measure(cli("analyze", str(root), "-o", "json"),
                                                      env=env))
        report = json.loads(tool[-1].stdout)
        found = [f["id"] for p in report["pods"] for f in p["findings"]]
        assert "cuda-oom" in found, found
        rows.append(Row(f"analyze, previous log {mib} MiB", median(tool), median(grep),
                        f"LC_ALL=C grep -E -c -f ({count} patterns)",
                        f"findings {sorted(found)}"))
        shutil.rmtree(root)
        print(f"analyze {mib} MiB: {rows[-1].tool} vs grep {rows[-1].baseline}", file=sys.stderr)
    if refused:
        print(f"grep refused {len(refused)} pattern(s): {refused}", file=sys.stderr)
    return rows


# --- output -----------------------------------------------------------------------------------


def markdown(rows: list[Row]) -> str:
    out = ["| what | tool wall s | tool CPU s | tool peak RSS MB | baseline | baseline wall s "
           "| baseline RSS MB | ratio |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r.what} | {r.tool['wall_s']:.3f} | {r.tool['cpu_s']:.3f} | "
                   f"{r.tool['peak_rss_mb']:.0f} | {r.baseline_name} | "
                   f"{r.baseline.get('wall_s', 0):.3f} | {r.baseline.get('peak_rss_mb', 0):.0f} | "
                   f"{r.ratio:.2f}x |")
    return "\n".join(out)


def warm_up() -> None:
    """Compile the tool's bytecode once, as installing it does, so no timed run pays it."""
    subprocess.run([sys.executable, "-c", "import triage.cli, triage.pipeline, "
                    "triage.collect.live, triage.collect.bundle, triage.writers.html"],
                   env=clean_env(), cwd=str(ROOT), check=True)
    subprocess.run(cli("analyze", str(ROOT / "fixtures" / "cuda-oom"), "-o", "json"),
                   env=clean_env(), cwd=str(ROOT), stdout=subprocess.DEVNULL, check=False)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["analyze", "scan", "all"])
    ap.add_argument("--sizes", default="10,100,1024", help="analyze: log sizes in MiB")
    ap.add_argument("--pods", default="40,100,300", help="scan: namespace sizes")
    ap.add_argument("--latency-ms", type=float, default=20.0, help="scan: per-request latency")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", type=Path, help="also write the rows as JSON")
    args = ap.parse_args()
    rows: list[Row] = []
    warm_up()
    with tempfile.TemporaryDirectory(prefix="vllm-triage-bench-") as t:
        tmp = Path(t)
        if args.what in ("analyze", "all"):
            rows += bench_analyze([int(s) for s in args.sizes.split(",")], args.runs, tmp)
        if args.what in ("scan", "all"):
            from bench.scan import bench_scan

            rows += bench_scan([int(p) for p in args.pods.split(",")], args.latency_ms / 1000,
                               args.runs, tmp)
    print(markdown(rows))
    if args.json:
        args.json.write_text(json.dumps({"cpus": os.cpu_count(), "rows": [
            {**asdict(r), "ratio": round(r.ratio, 3)} for r in rows]}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())


