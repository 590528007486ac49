"""Issue 11 point 6: the credential forms that reached bundles, and where redaction runs.

Each form is checked in the redactor and end to end: planted in a copy of
fixtures/secrets-planted (env, an annotation, the log), then searched for in
every output of ``scan`` and every member of a ``collect`` bundle.
"""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from tests.conftest import replay, run_cli
from tests.support.fixturekit import copy_fixture, load_list, save_list, write_bytes
from triage.safety.redact import MASK, redact_object, redact_text

PGP = """-----BEGIN PGP PRIVATE KEY BLOCK-----

lQOYBGXplantedPgpKeyMaterial0123456789ABCDEFabcdef
=pL4n
-----END PGP PRIVATE KEY BLOCK-----"""
PEM_BODY_NO_BEGIN = ("MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQCplantedPemBody1\n"
                     "K7MDENGbPxRfiCYplantedPemBodySecondLine0123456789abcdefABCDEFGH\n"
                     "-----END PRIVATE KEY-----")

ENV_FORMS = {
    "AZURE_OPENAI_KEY": "0123456789abcdefPlantedAzureOpenAI",
    "DB_PASS": "PlantedDbPass42",
    "ENCRYPTION_KEY": "PlantedEncryptionKey99",
    "PGPASS": "PlantedPgPass77",
    "SENTRY_DSN": "https://PlantedSentryPublicKey0123@o1.ingest.sentry.io/42",
}
TEXT_FORMS = [
    ("Ocp-Apim-Subscription-Key: PlantedApimKey0123456789abcdef", "PlantedApimKey0123456789abcdef"),
    (PGP, "lQOYBGXplantedPgpKeyMaterial0123456789ABCDEFabcdef"),
    ('{"config": "{\\"db_password\\": \\"PlantedEscapedJson1\\"}"}', "PlantedEscapedJson1"),
    ('[{"name": "DB_PASSWORD", "value": "PlantedJsonEnvList1"}]', "PlantedJsonEnvList1"),
    ('[{\\"name\\":\\"API_TOKEN\\",\\"value\\":\\"PlantedJsonEnvList2\\"}]', "PlantedJsonEnvList2"),
    ("env:\n- name: DB_PASSWORD\n  value: PlantedYamlEnv1", "PlantedYamlEnv1"),
    (PEM_BODY_NO_BEGIN, "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQCplantedPemBody1"),
    (PEM_BODY_NO_BEGIN, "K7MDENGbPxRfiCYplantedPemBodySecondLine0123456789abcdefABCDEFGH"),
    ("exec: process returned 1. refresh_token=PlantedRefreshTok3n", "PlantedRefreshTok3n"),
    ("https://PlantedSentryPublicKey0123@o1.ingest.sentry.io/42", "PlantedSentryPublicKey0123"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEplantedCutKeyNoEnd0123456789abcdefABCDEF", "MIIEplanted"),
]


@pytest.mark.parametrize(("name", "value"), ENV_FORMS.items())
def test_point_6_env_values_by_name(name: str, value: str) -> None:
    out = redact_object({"env": [{"name": name, "value": value}]})
    assert out["env"][0]["value"] == MASK


@pytest.mark.parametrize(("text", "secret"), TEXT_FORMS)
def test_point_6_text_forms(text: str, secret: str) -> None:
    out = redact_text(text)
    assert secret not in out, out
    assert MASK in out
    assert out.count("\n") == text.count("\n")


def test_point_6_pem_body_shown_line_by_line() -> None:
    """Evidence quotes lines one at a time: a body line alone is still masked."""
    line = "previous log (vllm) line 12  K7MDENGbPxRfiCYplantedPemBodySecondLine0123456789abcdefABCDEFGH"
    assert "plantedPem" not in redact_text(line)


@pytest.mark.parametrize("text", [
    "sha256:9e1f4a7c0d3b6e9f2a5c8d1b4e7f05c2e9a41d7b3f6e8a0c1d4b7e2f5a8c3d6b",
    "Loading weights from /root/.cache/huggingface/hub/models--Qwen--Qwen3-8B/snapshots/abc",
    "max_num_batched_tokens=2048, cache_config.key_size=16, enable_prefix_caching=True",
    "DB_HOST=db.internal PASSTHROUGH=1 bypass=yes",
])
def test_point_6_near_misses_stay_readable(text: str) -> None:
    assert redact_text(text) == text


def test_point_6_forms_never_reach_bundle_or_output(tmp_path: Path) -> None:
    root = copy_fixture(tmp_path / "fx", "secrets-planted")
    pods = load_list(root, "pods")
    pod = pods["items"][0]
    container = pod["spec"]["containers"][0]
    container["env"] = [*container.get("env", []),
                        *({"name": k, "value": v} for k, v in ENV_FORMS.items())]
    annotations = pod["metadata"].setdefault("annotations", {})
    annotations["acme.example/env"] = json.dumps(
        [{"name": "DB_PASSWORD", "value": "PlantedJsonEnvList1"}])
    annotations["acme.example/config"] = TEXT_FORMS[2][0]
    save_list(root, "pods", pods)
    log = next((root / "logs").rglob("*.log"))
    extra = "\n".join(text for text, _ in TEXT_FORMS) + "\n"
    write_bytes(log, extra + log.read_text())
    secrets = [*ENV_FORMS.values(), *(s for _, s in TEXT_FORMS)]

    outputs: dict[str, str] = {}
    bundle = tmp_path / "b.tar.gz"
    with replay(root, tmp_path) as (_server, kc):
        for fmt in ("json", "table", "markdown"):
            run = run_cli("scan", "--kubeconfig", str(kc), "-o", fmt)
            outputs[f"scan {fmt}"] = run.stdout + run.stderr
        run = run_cli("collect", "--kubeconfig", str(kc), "-o", str(bundle))
        assert run.code == 0, run.stderr
    with tarfile.open(bundle) as tar:
        for m in tar.getmembers():
            fh = tar.extractfile(m)
            if fh is not None:
                outputs[m.name] = fh.read().decode("utf-8", "replace")
    run = run_cli("analyze", str(bundle), "-o", "json")
    outputs["analyze bundle"] = run.stdout + run.stderr
    leaks = {where: [s for s in secrets if s in text] for where, text in outputs.items()}
    assert not {k: v for k, v in leaks.items() if v}
    assert any(MASK in text for where, text in outputs.items() if where.endswith(".log"))
