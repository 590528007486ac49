"""Dense logs: every line a candidate for the patterns, the shapes that cost per match.

Three shapes of a server failing every request, each repeated to the size asked:

- ``errors``: error lines with no timestamp of their own (exception lines as
  Python prints them, uvicorn's ``ERROR:`` lines), every one a candidate;
- ``stamped``: the same errors as vLLM logs them (``ERROR 11-28 03:06:57
  [serving_chat.py:...]``), each with its own time;
- ``tracebacks``: one traceback per failed request (uvicorn's "Exception in
  ASGI application", the frames, the exception), then the 500 in the access log.

A CUDA OOM traceback ends each log, as in the crash it precedes.
"""

from __future__ import annotations

import random
from pathlib import Path

SHAPES = ("errors", "stamped", "tracebacks")

_ERRORS = [
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 64.00 MiB. GPU 0 has a "
    "total capacity of 22.03 GiB of which 11.06 MiB is free.",
    "RuntimeError: CUDA error: an illegal memory access was encountered",
    "ValueError: This model's maximum context length is 8192 tokens. However, you requested "
    "9120 tokens (8096 in the messages, 1024 in the completion).",
    "ERROR:    Exception in ASGI application",
    "asyncio.exceptions.CancelledError",
    "vllm.engine.async_llm_engine.AsyncEngineDeadError: Background loop has errored already.",
]

_FRAMES = [
    '  File "/usr/local/lib/python3.12/dist-packages/uvicorn/protocols/http/httptools_impl.py",'
    " line 409, in run_asgi",
    "    result = await app(  # type: ignore[func-returns-value]",
    '  File "/usr/local/lib/python3.12/dist-packages/starlette/routing.py", line 73, in app',
    "    response = await f(request)",
    '  File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/openai/api_server.py", '
    "line 561, in create_chat_completion",
    "    generator = await handler.create_chat_completion(request, raw_request)",
    '  File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/openai/serving_chat.py", '
    "line 268, in create_chat_completion",
    "    return await self.chat_completion_full_generator(",
    '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/async_llm.py", line 339, '
    "in generate",
    "    out = q.get_nowait() or await q.get()",
]


def block(shape: str, lines: int = 20000, seed: int = 7) -> bytes:
    rng = random.Random(seed)
    out: list[str] = []
    n = 0
    while len(out) < lines:
        n += 1
        t = f"11-28 {2 + n // 3600 % 10:02d}:{n // 60 % 60:02d}:{n % 60:02d}"
        err = rng.choice(_ERRORS)
        if shape == "errors":
            out.append(err)
        elif shape == "stamped":
            out.append(f"(APIServer pid=1) ERROR {t} [serving_chat.py:{rng.randint(200, 900)}] "
                       f"{err}")
        else:
            out.append("(APIServer pid=1) ERROR:    Exception in ASGI application")
            out.append("Traceback (most recent call last):")
            out += _FRAMES
            out.append(err)
            peer = f"10.48.{rng.randint(0, 9)}.{rng.randint(2, 250)}:{rng.randint(30000, 65000)}"
            out.append(f"(APIServer pid=1) INFO:     {peer} - \"POST /v1/chat/completions "
                       "HTTP/1.1\" 500 Internal Server Error")
    return ("\n".join(out) + "\n").encode()


def write(path: Path, shape: str, mib: int, crash: bytes) -> None:
    seed = block(shape)
    with path.open("wb") as f:
        written = 0
        while written < mib * 1024 * 1024:
            f.write(seed)
            written += len(seed)
        f.write(crash)


def scan_times(data: bytes, runs: int = 3) -> dict[str, float]:
    """The tool's scan of ``data`` timed in this process (its 155 queries, the Hyperscan
    database warm: one scan first): the median CPU and wall seconds of ``runs`` and the
    run-queue wait, which is the wall time a loaded machine adds (read from
    /proc/self/schedstat where it exists), so CPU and wall can be told apart."""
    import statistics
    import time

    from triage.facts import LOG_QUERIES
    from triage.logs import LogSource, scan
    from triage.rules.evaluate import queries_for
    from triage.rules.loader import load_patterns

    queries = LOG_QUERIES.merged(queries_for(load_patterns().patterns))
    scan(LogSource(data=data[:1 << 20]), queries)  # compile and load what is cached
    cpu, wall, waited = [], [], []
    for _ in range(runs):
        w0, c0, q0 = time.perf_counter(), time.process_time(), _run_queue_wait()
        scan(LogSource(data=data), queries)
        wall.append(time.perf_counter() - w0)
        cpu.append(time.process_time() - c0)
        waited.append(_run_queue_wait() - q0)
    mib = len(data) / 2**20
    c = statistics.median(cpu)
    return {"mib": round(mib, 1), "cpu_s": round(c, 3),
            "wall_s": round(statistics.median(wall), 3),
            "run_queue_wait_s": round(statistics.median(waited), 3),
            "mib_s_cpu": round(mib / c, 1)}


def _run_queue_wait() -> float:
    """Seconds this thread has waited for a CPU while runnable (0 where not known)."""
    try:
        return int(Path("/proc/thread-self/schedstat").read_text().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


def _main() -> None:
    import argparse
    import json
    import tempfile

    from bench.run import traffic_seed

    ap = argparse.ArgumentParser(description="The log engine's scan of dense logs, in-process")
    ap.add_argument("--mib", type=int, default=64)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--shapes", default=",".join((*SHAPES, "traffic")))
    args = ap.parse_args()
    for shape in args.shapes.split(","):
        if shape == "traffic":  # as `bench.run analyze` grows its log: 16 MiB, repeated
            with tempfile.TemporaryDirectory() as tmp:
                traffic_seed(Path(tmp) / "seed.log")
                seed = (Path(tmp) / "seed.log").read_bytes()
        else:
            seed = block(shape)
        data = seed * max(1, args.mib * 2**20 // len(seed))
        print(json.dumps({"shape": shape, **scan_times(data, args.runs)}), flush=True)


if __name__ == "__main__":
    _main()
