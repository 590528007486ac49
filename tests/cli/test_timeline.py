"""The derived per-pod data behind the pictures: the timeline and the GPU memory budget.

Measured on recorded incidents: the CUDA OOM's start-up and crash in order
with the card from PyTorch's own message, the probe kill's spans of probe
failures and kills, and what the table and the markdown show of them.
"""

from __future__ import annotations

from typing import Any

from tests.conftest import FIXTURES, run_cli
from triage.results import Report
from triage.writers import markdown, table


def _report(name: str) -> dict[str, Any]:
    run = run_cli("analyze", str(FIXTURES / name), "-o", "json")
    assert run.code in (0, 1), run.stderr
    doc: dict[str, Any] = run.json()
    return doc


def _pod(doc: dict[str, Any], prefix: str) -> dict[str, Any]:
    pod: dict[str, Any] = next(p for p in doc["pods"] if p["name"].startswith(prefix))
    return pod


def test_cuda_oom_timeline_in_order() -> None:
    pod = _pod(_report("cuda-oom"), "vllm-qwen")
    entries = [(t["at"], t["kind"], t["label"]) for t in pod["timeline"]]
    assert entries == sorted(entries, key=lambda e: e[0])
    labels = [label for _, _, label in entries]
    for expected in ("pod created", "previous run started", "vLLM log starts",
                     "weights loaded (15.3 GiB)", "KV cache sized: 35,456 tokens",
                     "terminated: Error (exit 1)", "waiting: CrashLoopBackOff"):
        assert expected in labels, labels
    error = next(t for t in pod["timeline"] if t["kind"] == "error")
    assert error["at"] == "2026-11-28T03:06:57Z"
    assert "torch.OutOfMemoryError: CUDA out of memory" in error["label"]
    # the error as the engine printed it first, not the same message re-raised below it
    assert "previous log (vllm) line 47" in error["detail"]
    backoff = next(t for t in pod["timeline"] if t["label"].startswith("back-off"))
    assert backoff["until"] == "2026-11-28T03:07:01Z" and backoff["count"] == 19


def test_cuda_oom_budget_from_the_logs() -> None:
    b = _pod(_report("cuda-oom"), "vllm-qwen")["gpu_budget"]
    assert b["total_gib"] == 22.03 and "total capacity of 22.03 GiB" in b["total_source"]
    assert b["utilization"] == 0.98
    assert b["weights_gib"] == 15.2683 and b["kv_cache_gib"] == 4.87
    assert abs(b["other_gib"] - (22.03 * 0.98 - 15.2683 - 4.87)) < 0.01
    assert abs(b["free_gib"] - 22.03 * 0.02) < 0.01
    assert b["kv_cache_tokens"] == 35456 and b["max_model_len"] == 16384
    assert abs(b["sequences_fit"] - 35456 / 16384) < 0.001


def test_probe_kill_spans_and_a_start_cut_short() -> None:
    doc = _report("probe-kill-vs-crash-while-loading")
    pod = _pod(doc, "vllm-llama70b")
    by_label = {t["label"]: t for t in pod["timeline"]}
    liveness = by_label["liveness probe failed (x15)"]
    assert (liveness["at"], liveness["until"]) == ("2026-11-28T02:38:40Z",
                                                   "2026-11-28T03:02:20Z")
    assert by_label["killed: failed liveness probe (x4)"]["kind"] == "kill"
    assert by_label["terminated: Error (exit 137)"]["kind"] == "kill"
    assert any(label.startswith("still loading: Loading safetensors checkpoint shards: 63%")
               for label in by_label)
    budget = pod["gpu_budget"]
    # No size in the log and no GFD label: GKE's accelerator label gives the nominal card.
    assert budget["total_gib"] == 80.0 and "nvidia-a100-80gb" in budget["total_source"]
    assert budget["weights_gib"] is None and budget["kv_cache_gib"] is None
    other = _pod(doc, "vllm-qwen3-14b")
    error = next(t for t in other["timeline"] if t["kind"] == "error")
    assert "PermissionError: [Errno 13] Permission denied: '/.triton'" in error["detail"]
    assert error["label"].startswith("error: torch._inductor.exc.InductorError: PermissionError")


def test_table_and_markdown_show_the_timeline() -> None:
    report = Report.from_document(_report("probe-kill-vs-crash-while-loading"))
    text = table.render(report, False)
    assert "timeline (UTC):" in text
    assert "02:38:40-03:02:20 liveness probe failed (x15)" in text
    md = markdown.render(report, False)
    # Issue 17: collapsed per pod, ranges within a day say the date once.
    assert "<details><summary>timeline of <code>llm/vllm-qwen3-14b-84c6d9f7b5-p2lxc</code> (UTC)" \
        "</summary>" in md
    assert "- `2026-11-28 02:38:40 to 03:02:20` liveness probe failed (x15)" in md
    assert "GPU memory: card 80.0 GiB; weights " in md


def test_healthy_pod_has_no_table_timeline() -> None:
    """The terminal shows the timeline of failing pods only; the JSON has it for every pod."""
    doc = _report("well-sized-healthy")
    assert all(p["timeline"] for p in doc["pods"])
    assert "timeline (UTC):" not in table.render(Report.from_document(doc), False)


def test_report_document_round_trips() -> None:
    doc = _report("cuda-oom")
    assert Report.from_document(doc).to_document() == doc
