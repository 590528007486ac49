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

import yaml

from tests.conftest import FIXTURES, replay, run_cli
from triage.safety.redact import MASK

FIXTURE = "secrets-planted"
INCIDENT = yaml.safe_load((FIXTURES / FIXTURE / "incident.yaml").read_text())
PLANTED: list[str] = INCIDENT["planted_secrets"]
FORMATS = ["json", "table", "markdown", "html"]


def leaks(text: str) -> list[str]:
    return [secret for secret in PLANTED if secret in text]


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


def test_a_credential_named_in_a_finding_is_never_shown(tmp_path: Path) -> None:
    """secret-in-plain-env names HF_TOKEN (a literal env value) and VLLM_API_KEY (a
    ConfigMap key) and where each is written; neither value reaches a report, a bundle
    (the ConfigMap is collected) or lint's outputs on the same objects."""
    fixture = FIXTURES / "secret-in-plain-env"
    planted = yaml.safe_load((fixture / "incident.yaml").read_text())["planted_secrets"]
    outputs: dict[str, str] = {}
    bundle = tmp_path / "b.tar.gz"
    with replay("secret-in-plain-env", tmp_path) as (_server, kubeconfig):
        for fmt in ("json", "table"):
            run = run_cli("scan", "--kubeconfig", str(kubeconfig), "-o", fmt)
            outputs[f"scan -o {fmt}"] = run.stdout + run.stderr
        assert run_cli("collect", "--kubeconfig", str(kubeconfig), "-o", str(bundle)).code == 0
    with tarfile.open(bundle) as tar:
        for m in tar.getmembers():
            fh = tar.extractfile(m) if m.isfile() else None
            if fh is not None:
                outputs[m.name] = fh.read().decode("utf-8", errors="replace")
    manifest = tmp_path / "vllm.yaml"
    docs = [yaml.safe_load((fixture / "objects" / f"{k}.yaml").read_text())["items"][0]
            for k in ("deployments", "configmaps")]
    manifest.write_text(yaml.safe_dump_all(
        [{"apiVersion": "apps/v1", "kind": "Deployment", **docs[0]},
         {"apiVersion": "v1", "kind": "ConfigMap", **docs[1]}]))
    for fmt in ("text", "json", "sarif", "github"):
        run = run_cli("lint", "-f", str(manifest), "-o", fmt, "--fail-on", "never")
        assert run.code == 0, run.stderr
        outputs[f"lint -o {fmt}"] = run.stdout + run.stderr
    found = {where: [s for s in planted if s in text] for where, text in outputs.items()}
    assert not {k: v for k, v in found.items() if v}, found
    assert "HF_TOKEN (env[1].value)" in outputs["scan -o json"]
    assert "VLLM_API_KEY (ConfigMap vllm-qwen-env key VLLM_API_KEY" in outputs["lint -o text"]
