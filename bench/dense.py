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
