"""What vLLM logs about itself at start-up, read into numbers (V0 and V1 wordings)."""

from __future__ import annotations

import pytest

from triage.logs import LogSource, scan
from triage.vllm.milestones import QUERIES, StartupReport, read_startup

V1 = """\
(APIServer pid=1) INFO 11-24 11:42:58 [api_server.py:1805] vLLM API server version 0.10.1.1
(EngineCore_DP0 pid=441) INFO 11-24 11:43:40 [default_loader.py:262] Loading weights took 31.20 seconds
(EngineCore_DP0 pid=441) INFO 11-24 11:43:41 [gpu_model_runner.py:2007] Model loading took 15.2683 GiB and 32.002714 seconds
(EngineCore_DP0 pid=441) INFO 11-24 11:44:17 [gpu_worker.py:276] Available KV cache memory: 33.31 GiB
(EngineCore_DP0 pid=441) INFO 11-24 11:44:17 [kv_cache_utils.py:849] GPU KV cache size: 242,544 tokens
(EngineCore_DP0 pid=441) INFO 11-24 11:44:17 [kv_cache_utils.py:853] Maximum concurrency for 16,384 tokens per request: 14.80x
(EngineCore_DP0 pid=441) INFO 11-24 11:44:49 [core.py:214] init engine (profile, create kv cache, warmup model) took 68.31 seconds
(APIServer pid=1) INFO 11-24 11:44:52 [api_server.py:1880] Starting vLLM API server 0 on http://0.0.0.0:8000
(APIServer pid=1) INFO:     Application startup complete.
"""

V0 = """\
INFO 01-11 15:50:02 llm_engine.py:72] Initializing an LLM engine with config: model='meta-llama/Llama-2-7b-hf'
INFO 01-11 15:51:10 model_runner.py:1099] Loading model weights took 12.5523 GB
INFO 01-11 15:51:18 llm_engine.py:275] # GPU blocks: 229, # CPU blocks: 512
INFO 01-11 15:51:18 gpu_executor.py:80] Maximum concurrency for 4096 tokens per request: 0.89x
"""

CUT_SHORT = """\
(EngineCore_0 pid=270) INFO 11-28 03:05:43 [default_loader.py:262] Loading weights took 6.52 seconds
(EngineCore_0 pid=270) INFO 11-28 03:06:31 [kv_cache_utils.py:849] GPU KV cache size: 35,456 tokens
(EngineCore_0 pid=270) ERROR 11-28 03:06:57 [core.py:700] EngineCore failed to start.
"""


def read(text: str) -> StartupReport:
    return read_startup(scan(LogSource.of(text), QUERIES))


def test_v1_capacity_and_time_to_ready_from_vllm_stamps() -> None:
    rep = read(V1)
    assert rep.kv_cache_tokens == 242_544
    assert rep.max_concurrency == pytest.approx(14.8)
    assert rep.concurrency_tokens == 16_384
    assert rep.kv_cache_memory_gib == pytest.approx(33.31)
    assert rep.weights_gib == pytest.approx(15.2683)
    assert rep.init_engine_seconds == pytest.approx(68.31)
    assert rep.ready
    assert rep.startup_seconds == 114  # 11:42:58 -> 11:44:52
    assert "first line 1 to ready line 8" in rep.startup_basis


def test_v0_block_count_and_concurrency() -> None:
    rep = read(V0)
    assert rep.gpu_blocks == 229
    assert rep.max_concurrency == pytest.approx(0.89)
    assert rep.concurrency_tokens == 4096
    assert rep.weights_gib == pytest.approx(12.5523)
    assert not rep.ready and rep.startup_seconds is None


def test_a_start_cut_short_has_capacity_but_no_start_up_time() -> None:
    rep = read(CUT_SHORT)
    assert rep.kv_cache_tokens == 35_456
    assert rep.load_seconds == pytest.approx(6.52)
    assert rep.startup_seconds is None
