"""Redaction in the redactor: the planted fixture really holds its secrets, text and
args after a secret flag are masked, env values by name only, ordinary lines kept, and
huge lines redacted in linear time."""

from __future__ import annotations

import pytest
import yaml

from tests.conftest import FIXTURES
from triage.safety.redact import MASK, redact_object, redact_text

FIXTURE = "secrets-planted"
INCIDENT = yaml.safe_load((FIXTURES / FIXTURE / "incident.yaml").read_text())
PLANTED: list[str] = INCIDENT["planted_secrets"]


def test_fixture_really_holds_the_secrets() -> None:
    """The test means nothing if the values are not in the fixture's raw files."""
    raw = "\n".join(p.read_text() for p in (FIXTURES / FIXTURE).rglob("*")
                    if p.is_file() and p.name != "incident.yaml")
    assert not [s for s in PLANTED if s not in raw]


@pytest.mark.parametrize(("text", "secret"), [
    ("Authorization: Bearer abcdefgh12345678", "abcdefgh12345678"),
    ("authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA"),
    ("Proxy-Authorization: Bearer abcdefgh12345678", "abcdefgh12345678"),
    ("{'authorization': 'Bearer tok_abcdefgh1234'}", "tok_abcdefgh1234"),
    ("https://user:pAssw0rd@host/x", "pAssw0rd"),
    ("postgres://app:hunter2hunter@db:5432/x", "hunter2hunter"),
    ("HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz1234", "hf_abcdefghijklmnopqrstuvwxyz1234"),
    ("using token hf_abcdefghijklmnopqrstuvwxyz1234 now", "hf_abcdefghijklmnopqrstuvwxyz1234"),
    ("vllm serve m --api-key plainvalue123 --port 8000", "plainvalue123"),
    ("vllm serve m --api-key=plainvalue123", "plainvalue123"),
    ("vllm serve m --hf-token 'quoted-value-99'", "quoted-value-99"),
    ("non-default args: {'model': 'x', 'api_key': ['plainvalue123']}", "plainvalue123"),
    ("non-default args: {'api_key': ['k1-aaaa', 'k2-bbbb']}", "k2-bbbb"),
    ("AccountName=a;AccountKey=abcDEF0123456789+/xyz==;EndpointSuffix=x", "abcDEF0123456789"),
    ("https://a.blob.core.windows.net/c?sv=2022&sig=AbCdEf0123456789%2Bxyz", "AbCdEf0123456789"),
    ("s3://b/k?X-Amz-Signature=0123456789abcdef0123", "0123456789abcdef0123"),
    ("X-Amz-Security-Token: FwoGZXIvYXdzEJr0123456789", "FwoGZXIvYXdzEJr0123456789"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ('"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEabc\\n-----END PRIVATE KEY-----\\n"',
     "MIIEabc"),
    ("Cookie: session=abcdef0123456789", "abcdef0123456789"),
    ("x-api-key: abcdef0123456789", "abcdef0123456789"),
    ("?token=abcdef0123456789&x=1", "abcdef0123456789"),
])
def test_redact_text(text: str, secret: str) -> None:
    out = redact_text(text)
    assert secret not in out, out
    assert MASK in out
    assert redact_text(out) == out  # reports pass the redactor twice


@pytest.mark.parametrize("text", [
    "INFO 11-28 [core.py:74] max_num_batched_tokens=2048, tokenizer='Qwen/Qwen3-8B'",
    "Chunked prefill is enabled with max_num_batched_tokens=2048.",
    "https://pytorch.org/docs/stable/notes/cuda.html#environment-variables",
    "the tokenizer of the model was loaded",
    "--max-model-len 16384 --gpu-memory-utilization 0.9",
])
def test_redact_text_keeps_ordinary_lines(text: str) -> None:
    assert redact_text(text) == text


def test_args_after_a_secret_flag_are_masked() -> None:
    container = {"name": "vllm", "args": ["--model", "m", "--api-key", "plainvalue123",
                                          "--port", "8000"],
                 "command": ["vllm", "serve", "--hf-token", "another-plain-1"]}
    out = redact_object(container)
    assert out["args"] == ["--model", "m", "--api-key", MASK, "--port", "8000"]
    assert out["command"] == ["vllm", "serve", "--hf-token", MASK]


def test_env_values_masked_by_name_only() -> None:
    env = [{"name": "HF_TOKEN", "value": "short"}, {"name": "DB_PASSWORD", "value": "x1"},
           {"name": "HF_HOME", "value": "/models"},
           {"name": "OPENAI_API_KEY", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]
    out = redact_object({"env": env})["env"]
    assert [e.get("value") for e in out] == [MASK, MASK, "/models", None]
    assert out[3]["valueFrom"] == {"secretKeyRef": {"name": "s", "key": "k"}}


@pytest.mark.parametrize("line", [
    "-" * 1_000_000, "a-" * 500_000, "api_key " * 125_000, "token: [" * 125_000,
    "--api-key" * 110_000, "http://a:b " * 100_000, "x" * 1_000_000, "Bearer " * 140_000,
])
def test_redaction_stays_linear_on_huge_lines(line: str) -> None:
    """A 1 MB log line (a progress bar, a dumped tensor) must not stall a scan."""
    import time

    start = time.perf_counter()
    redact_text(line)
    assert time.perf_counter() - start < 5.0
