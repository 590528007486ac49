"""Data on hand: without Prometheus, vLLM's own stats lines say what the server does now.

vLLM's periodic stats lines (every 10 s while it serves) give the queue and the KV
cache of the last two minutes. request-queueing judges from them (its thresholds in
the pattern file), steps 5 and 7 say what they show, and a step judged from histograms
since start-up suggests --prometheus auto. vllm:cache_config_info
(num_gpu_blocks x block_size) gives the KV capacity when the logs do not.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import run_cli
from tests.support.fixturekit import copy_fixture

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


def _queueing(tmp_path: Path, collected_at: str) -> dict[str, Any]:
    """well-sized-healthy, one pod's log ending on two stats lines that queue (11-27
    22:50:39 and 22:50:49, kubelet times), collected at ``collected_at``."""
    root = copy_fixture(tmp_path / "fx", "well-sized-healthy")
    with _log(root).open("a") as fh:
        fh.write("".join(f"2026-11-27T{line[26:34]}.000Z {line}\n" for line in QUEUEING))
    incident = root / "incident.yaml"
    text = incident.read_text()
    incident.write_text(text.replace("collected_at: '2026-11-28T03:12:09Z'",
                                     f"collected_at: '{collected_at}'"))
    assert f"collected_at: '{collected_at}'" in incident.read_text()
    result: dict[str, Any] = run_cli("analyze", str(root), "-o", "json").json()
    return result


def test_stats_lines_say_it_queues_now(tmp_path: Path) -> None:
    report = _queueing(tmp_path, "2026-11-27T22:51:29Z")
    pod = next(p for p in report["pods"] if p["name"] == POD)
    finding = next(f for f in pod["findings"] if f["id"] == "request-queueing")
    # The series, its source and its age, said in the evidence.
    line = next(e for e in finding["evidence"] if e.startswith("requests waiting"))
    assert line.startswith("requests waiting 0, 0, 0, 9, 23 (vLLM's last 5 stats line(s)"), line
    assert "22:50:09-22:50:49 UTC, the last one 40 s before the collection" in line, line
    assert any("KV cache usage 38.0%, 39.0%, 40.0%, 97.1%, 99.8%" in e
               for e in finding["evidence"]), finding["evidence"]
    other = next(p for p in report["pods"] if p["name"] != POD)
    assert not any(f["id"] == "request-queueing" for f in other["findings"])
    # Step 5 says what the stats lines show now, once per pod, with their age.
    step5 = report["checklist"][4]
    now = [e.strip() for e in step5["evidence"] if "stats line" in e]
    mine = next(e for e in now if "waiting 0, 0, 0, 9, 23" in e)
    assert mine.startswith("now (vLLM's last 5 stats line(s), log (vllm) lines 45-49, "
                           "22:50:09-22:50:49 UTC, the last one 40 s before the collection): "
                           "running 22, 23, 24, 118, 118; waiting 0, 0, 0, 9, 23;"), mine


def test_stale_stats_lines_are_not_now(tmp_path: Path) -> None:
    """The last stats line 40 minutes before the collection says what the server did then:
    no request-queueing from it, and the steps say its age, never "now"."""
    report = _queueing(tmp_path, "2026-11-27T23:30:49Z")
    pod = next(p for p in report["pods"] if p["name"] == POD)
    assert not any(f["id"] == "request-queueing" for f in pod["findings"]), pod["findings"]
    for step in (report["checklist"][4], report["checklist"][6]):
        lines = [e.strip() for e in step["evidence"] if "stats line" in e]
        assert lines and not any(e.startswith("now") for e in lines), step["evidence"]
        mine = next(e for e in lines if "waiting 0, 0, 0, 9, 23" in e)
        assert mine.startswith("vLLM's stats lines do not say the queue now: vLLM's last "
                               "stats line is 40m before the collection (over 5m); then "
                               "(log (vllm) lines 45-49, 22:50:09-22:50:49 UTC)"), mine


def test_steps_say_what_the_stats_lines_show_and_suggest_prometheus() -> None:
    report = run_cli("analyze", str(Path("fixtures/well-sized-healthy").resolve()),
                     "-o", "json").json()
    step5 = report["checklist"][4]
    assert step5["verdict"] == "pass"
    # The fixture's last stats lines are 4h21m before its collection: said, never "now".
    assert any(e.strip().startswith("vLLM's stats lines do not say the queue now: vLLM's last "
                                     "stats line is 4h21m before the collection")
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
    # One fact per line: the pod's setting, then its capacity on a line of its own.
    mine = [e for e in step3["evidence"] if POD in e]
    assert "--max-model-len=8192" in mine[0] and "cache_config_info" not in mine[0], mine
    line = next(e for e in mine if "vllm:cache_config_info" in e)
    assert "x block_size 16" in line, line
    pod = next(p for p in report["pods"] if p["name"] == POD)
    assert pod["gpu_budget"]["kv_cache_tokens"] == int(line.split(" tokens: ")[0]
                                                        .rsplit(" ", 1)[1].replace(",", ""))


def test_findings_from_since_start_histograms_suggest_prometheus_in_every_format() -> None:
    """Steps 5 and 7 decided by findings from one scrape's since-start counts suggest
    --prometheus auto, in the table, markdown, html, json and yaml alike."""
    fixture = str(Path("fixtures/request-queueing").resolve())
    report = run_cli("analyze", fixture, "-o", "json").json()
    for step in (report["checklist"][4], report["checklist"][6]):
        assert step["verdict"] == "warn"
        assert any("since the server started" in e and "--prometheus auto" in e
                   for e in step["evidence"] if not e.startswith("  ")), step["evidence"]
    for fmt in ("table", "markdown", "html", "yaml"):
        out = run_cli("analyze", fixture, "-o", fmt, env={"COLUMNS": "200"}).stdout
        assert out.count("--prometheus auto") >= 2, fmt
    # A finding that rests on no metric (a CUDA OOM) suggests nothing.
    oom = run_cli("analyze", str(Path("fixtures/cuda-oom").resolve()), "-o", "json").json()
    assert not any("--prometheus" in e for s in oom["checklist"] for e in s["evidence"])
