"""No planted credential reaches any output or bundle.

fixtures/secrets-planted is a CUDA OOM incident whose deployment carries
credentials in plain sight (env, args, a lifecycle hook, the
last-applied annotation), whose log prints tokens, and whose events echo
one. Every format of ``scan``, ``analyze`` (bundle and fixture directory)
and every member of a ``collect`` bundle is searched for each planted value.
"""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest
import yaml

from tests.conftest import FIXTURES, replay, run_cli
from triage.safety.redact import MASK, redact_object, redact_text

FIXTURE = "secrets-planted"
INCIDENT = yaml.safe_load((FIXTURES / FIXTURE / "incident.yaml").read_text())
PLANTED: list[str] = INCIDENT["planted_secrets"]
FORMATS = ["json", "table", "markdown", "html"]


def leaks(text: str) -> list[str]:
    return [secret for secret in PLANTED if secret in text]


def test_fixture_really_holds_the_secrets() -> None:
    """The test means nothing if the values are not in the fixture's raw files."""
    raw = "\n".join(p.read_text() for p in (FIXTURES / FIXTURE).rglob("*")
                    if p.is_file() and p.name != "incident.yaml")
    assert not [s for s in PLANTED if s not in raw]


def test_no_planted_secret_in_any_output_or_bundle(tmp_path: Path) -> None:
    outputs: dict[str, str] = {}
    bundle = tmp_path / "bundle.tar.gz"
    with replay(FIXTURE, tmp_path) as (server, kubeconfig):
        for fmt in FORMATS:
            run = run_cli("scan", "--kubeconfig", str(kubeconfig), "-o", fmt)
            assert run.code == 1, run.stderr
            outputs[f"scan -o {fmt}"] = run.stdout + run.stderr
            out = tmp_path / f"scan.{fmt}"
            run = run_cli("scan", "--kubeconfig", str(kubeconfig), "-o", fmt,
                          "--output-file", str(out))
            outputs[f"scan -o {fmt} --output-file"] = (out.read_text() + run.stdout
                                                       + run.stderr)
        run = run_cli("collect", "--kubeconfig", str(kubeconfig), "-o", str(bundle))
        assert run.code == 0, run.stderr
        outputs["collect"] = run.stdout + run.stderr
        requests = list(server.requests)
    log_requests = (tmp_path / "requests.log").read_text()

    with tarfile.open(bundle) as tar:
        members = [m for m in tar.getmembers() if m.isfile()]
        assert any(m.name.endswith(".log") for m in members)
        assert any(m.name.endswith("objects/pods.json") for m in members)
        assert any(m.name.endswith("objects/events.json") for m in members)
        for m in members:
            fh = tar.extractfile(m)
            assert fh is not None
            outputs[f"bundle member {m.name}"] = fh.read().decode("utf-8", errors="replace")
    outputs["bundle raw bytes"] = bundle.read_bytes().decode("latin-1")  # compressed: sanity

    for fmt in FORMATS:
        for source in (str(bundle), str(FIXTURES / FIXTURE)):
            run = run_cli("analyze", source, "-o", fmt)
            assert run.code == 1, run.stderr
            outputs[f"analyze {Path(source).name} -o {fmt}"] = run.stdout + run.stderr

    found = {where: leaks(text) for where, text in outputs.items() if leaks(text)}
    assert not found, found
    # The report is still useful: the finding and the masks are there.
    assert "cuda-oom" in outputs["scan -o json"]
    assert MASK in outputs[next(k for k in outputs if k.endswith("objects/pods.json"))]
    assert MASK in outputs[next(k for k in outputs if k.endswith("vllm.previous.log"))]
    # Secrets are never read: no request for them, and only GETs.
    assert requests and all(r.startswith("GET ") for r in requests)
    assert not [r for r in requests if "secret" in r.lower()], requests
    assert "secret" not in log_requests.lower()


def test_non_secret_env_values_stay_readable(tmp_path: Path) -> None:
    """Masking is targeted: a reader still sees what is not a credential."""
    bundle = tmp_path / "b.tar.gz"
    with replay(FIXTURE, tmp_path) as (_server, kubeconfig):
        assert run_cli("collect", "--kubeconfig", str(kubeconfig), "-o", str(bundle)).code == 0
    with tarfile.open(bundle) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("objects/pods.json"))
        fh = tar.extractfile(member)
        assert fh is not None
        text = fh.read().decode()
    for visible in ("/models", "us-east-1", "proxy.corp.internal:3128", "svc-proxy",
                    "AccountName=acmemodels", "--served-model-name llama", "secretKeyRef",
                    "vllm-api"):
        assert visible in text, visible


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
