"""/metrics parsing: V0 and V1 names, quantiles as Prometheus computes them."""

from __future__ import annotations

import math

import pytest

from triage.vllm.metrics import histogram_quantile, parse_metrics

V1 = """\
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="Qwen/Qwen3-8B"} 12.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="Qwen/Qwen3-8B"} 3.0
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="Qwen/Qwen3-8B"} 0.42
# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{engine="0",model_name="Qwen/Qwen3-8B"} 7.0
# HELP vllm:e2e_request_latency_seconds Histogram of e2e request latency in seconds.
# TYPE vllm:e2e_request_latency_seconds histogram
vllm:e2e_request_latency_seconds_bucket{engine="0",le="0.3",model_name="Qwen/Qwen3-8B"} 10.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="0.5",model_name="Qwen/Qwen3-8B"} 20.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="1.0",model_name="Qwen/Qwen3-8B"} 30.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="+Inf",model_name="Qwen/Qwen3-8B"} 40.0
vllm:e2e_request_latency_seconds_count{engine="0",model_name="Qwen/Qwen3-8B"} 40.0
vllm:e2e_request_latency_seconds_sum{engine="0",model_name="Qwen/Qwen3-8B"} 31.5
# HELP vllm:inter_token_latency_seconds Histogram of inter-token latency in seconds.
# TYPE vllm:inter_token_latency_seconds histogram
vllm:inter_token_latency_seconds_bucket{engine="0",le="0.01",model_name="Qwen/Qwen3-8B"} 0.0
vllm:inter_token_latency_seconds_bucket{engine="0",le="0.025",model_name="Qwen/Qwen3-8B"} 90.0
vllm:inter_token_latency_seconds_bucket{engine="0",le="+Inf",model_name="Qwen/Qwen3-8B"} 100.0
vllm:inter_token_latency_seconds_count{engine="0",model_name="Qwen/Qwen3-8B"} 100.0
vllm:inter_token_latency_seconds_sum{engine="0",model_name="Qwen/Qwen3-8B"} 2.0
# HELP http_requests_total Total number of requests by method, status and handler.
# TYPE http_requests_total counter
http_requests_total{handler="/v1/chat/completions",method="POST",status="2xx"} 40.0
"""

V0 = """\
# HELP vllm:num_requests_running Number of requests currently running on GPU.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="meta-llama/Llama-3.1-8B-Instruct"} 4.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0
# HELP vllm:gpu_cache_usage_perc GPU KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.95
# HELP vllm:time_per_output_token_seconds Histogram of time per output token in seconds.
# TYPE vllm:time_per_output_token_seconds histogram
vllm:time_per_output_token_seconds_bucket{le="0.01",model_name="meta-llama/Llama-3.1-8B-Instruct"} 5.0
vllm:time_per_output_token_seconds_bucket{le="0.025",model_name="meta-llama/Llama-3.1-8B-Instruct"} 10.0
vllm:time_per_output_token_seconds_bucket{le="+Inf",model_name="meta-llama/Llama-3.1-8B-Instruct"} 10.0
vllm:time_per_output_token_seconds_count{model_name="meta-llama/Llama-3.1-8B-Instruct"} 10.0
vllm:time_per_output_token_seconds_sum{model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.15
# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0
"""


def test_histogram_quantile_interpolates_like_prometheus() -> None:
    buckets = [(0.3, 10.0), (0.5, 20.0), (1.0, 30.0), (math.inf, 40.0)]
    assert histogram_quantile(0.5, buckets) == pytest.approx(0.5)
    assert histogram_quantile(0.1, buckets) == pytest.approx(0.12)  # first bucket starts at 0
    assert histogram_quantile(0.6, buckets) == pytest.approx(0.7)  # 0.5 + 0.5 * 4/10
    # In the +Inf bucket Prometheus answers the highest finite bound.
    assert histogram_quantile(0.99, buckets) == pytest.approx(1.0)
    assert histogram_quantile(0.5, [(1.0, 0.0), (math.inf, 0.0)]) is None
    assert histogram_quantile(0.5, [(1.0, 3.0)]) is None  # no +Inf bucket: not a histogram


def test_v1_exposition() -> None:
    view = parse_metrics(V1)
    assert view.error is None
    assert view.models == ["Qwen/Qwen3-8B"]
    d = view.derived()
    assert d["requests_running"] == 12
    assert d["requests_waiting"] == 3
    assert d["kv_cache_usage"] == pytest.approx(0.42)
    assert d["preemptions"] == 7
    assert d["e2e_latency_p50"] == pytest.approx(0.5)
    assert d["e2e_latency_p99"] == pytest.approx(1.0)
    assert d["e2e_latency_count"] == 40
    assert d["e2e_latency_p99_over_p50"] == pytest.approx(2.0)
    assert d["itl_p50"] == pytest.approx(0.01 + 0.015 * 50 / 90)
    assert view.exposed["kv_cache_usage"] == "vllm:kv_cache_usage_perc"


def test_v0_exposition_names() -> None:
    view = parse_metrics(V0)
    d = view.derived()
    assert d["kv_cache_usage"] == pytest.approx(0.95)
    assert view.exposed["kv_cache_usage"] == "vllm:gpu_cache_usage_perc"
    assert view.exposed["itl"] == "vllm:time_per_output_token_seconds"
    assert d["itl_p50"] == pytest.approx(0.01)
    assert d["preemptions"] == 0


def test_two_engines_are_summed_and_usage_is_the_fullest() -> None:
    text = """\
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 12.0
vllm:num_requests_running{engine="1",model_name="m"} 9.0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.42
vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.91
"""
    d = parse_metrics(text).derived()
    assert d["requests_running"] == 21
    assert d["kv_cache_usage"] == pytest.approx(0.91)


def test_malformed_text_is_an_error_not_an_exception() -> None:
    view = parse_metrics("vllm:num_requests_running{model_name=\"x\" 1\n\x00\xff garbage {{{")
    assert view.error and "malformed" in view.error
    assert view.derived() == {}
