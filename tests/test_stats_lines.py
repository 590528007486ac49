"""Issue 17 point 7: data on hand.

Without Prometheus, vLLM's own periodic stats lines (every 10 s while it
serves) say what the server does now: the queue and the KV cache of the last
two minutes. request-queueing judges from them (its thresholds in the pattern
file), steps 5 and 7 say what they show, and a step judged from histograms
since start-up suggests --prometheus auto. vllm:cache_config_info
(num_gpu_blocks x block_size) gives the KV capacity when the logs do not.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_cli
from tests.fixturekit import copy_fixture

POD = "vllm-qwen-6d8f7b9c5d-m4x7w"
QUEUEING = [
    "(APIServer pid=1) INFO 11-27 22:50:39 [loggers.py:123] Engine 000: Avg prompt throughput: "
    "5321.4 tokens/s, Avg generation throughput: 1210.7 tokens/s, Running: 118 reqs, Waiting: "
    "9 reqs, GPU KV cache usage: 97.1%, Prefix cache hit rate: 41.0%",
    "(APIServer pid=1) INFO 11-27 22:50:49 [loggers.py:123] Engine 000: Avg prompt throughput: "
    "5102.9 tokens/s, Avg generation throughput: 1188.3 tokens/s, Running: 118 reqs, Waiting: "
    "23 reqs, GPU KV cache usage: 99.8%, Prefix cache hit rate: 40.6%",
]


def _log(root: Path) -> Path:
    return root / "logs" / "llm" / POD / "vllm.log"


def test_stats_lines_say_it_queues_now(tmp_path: Path) -> None:
    root = copy_fixture(tmp_path / "fx", "well-sized-healthy")
    with _log(root).open("a") as fh:
        fh.write("\n".join(QUEUEING) + "\n")
    report = run_cli("analyze", str(root), "-o", "json").json()
    pod = next(p for p in report["pods"] if p["name"] == POD)
    finding = next(f for f in pod["findings"] if f["id"] == "request-queueing")
    assert any("requests waiting 23 at the last tick" in e and "vLLM's stats log lines" in e
               for e in finding["evidence"]), finding["evidence"]
    assert any("KV cache usage 99.8%" in e for e in finding["evidence"])
    other = next(p for p in report["pods"] if p["name"] != POD)
    assert not any(f["id"] == "request-queueing" for f in other["findings"])


def test_steps_say_what_the_stats_lines_show_and_suggest_prometheus() -> None:
    report = run_cli("analyze", str(Path("fixtures/well-sized-healthy").resolve()),
                     "-o", "json").json()
    step5 = report["checklist"][4]
    assert step5["verdict"] == "pass"
    assert any(e.strip().startswith("now: requests waiting 0 at the last tick")
               for e in step5["evidence"]), step5["evidence"]
    assert any("--prometheus auto" in e for e in step5["evidence"]), step5["evidence"]


def test_cache_config_info_gives_the_kv_capacity(tmp_path: Path) -> None:
    root = copy_fixture(tmp_path / "fx", "well-sized-healthy")
    log = _log(root)
    log.write_text("".join(line for line in log.read_text().splitlines(keepends=True)
                           if "KV cache size" not in line and "Maximum concurrency" not in line))
    metrics = root / "metrics" / "llm" / f"{POD}.txt"
    text = metrics.read_text()
    if "vllm:cache_config_info" not in text:
        text = ("# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n"
                "# TYPE vllm:cache_config_info gauge\n"
                'vllm:cache_config_info{block_size="16",cache_dtype="auto",'
                'gpu_memory_utilization="0.9",num_gpu_blocks="18629",num_cpu_blocks="0"} 1.0\n'
                + text)
    metrics.write_text(text)
    report = run_cli("analyze", str(root), "-o", "json").json()
    step3 = report["checklist"][2]
    line = next(e for e in step3["evidence"] if POD in e)
    assert "vllm:cache_config_info" in line and "x block_size 16" in line, line
    pod = next(p for p in report["pods"] if p["name"] == POD)
    assert pod["gpu_budget"]["kv_cache_tokens"] == int(line.split(" tokens: ")[0]
                                                        .rsplit(" ", 1)[1].replace(",", ""))
