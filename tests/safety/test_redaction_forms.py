"""The credential forms redaction knows, in the redactor: env values by their name,
tokens and keys in text, a PEM body line by line, and near misses left readable."""

from __future__ import annotations

import pytest

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
def test_env_values_are_masked_by_their_name(name: str, value: str) -> None:
    out = redact_object({"env": [{"name": name, "value": value}]})
    assert out["env"][0]["value"] == MASK


@pytest.mark.parametrize(("text", "secret"), TEXT_FORMS)
def test_credential_forms_in_text_are_masked(text: str, secret: str) -> None:
    out = redact_text(text)
    assert secret not in out, out
    assert MASK in out
    assert out.count("\n") == text.count("\n")


def test_a_pem_body_line_quoted_alone_is_masked() -> None:
    """Evidence quotes lines one at a time: a body line alone is still masked."""
    line = "previous log (vllm) line 12  K7MDENGbPxRfiCYplantedPemBodySecondLine0123456789abcdefABCDEFGH"
    assert "plantedPem" not in redact_text(line)


@pytest.mark.parametrize("text", [
    "sha256:9e1f4a7c0d3b6e9f2a5c8d1b4e7f05c2e9a41d7b3f6e8a0c1d4b7e2f5a8c3d6b",
    "Loading weights from /root/.cache/huggingface/hub/models--Qwen--Qwen3-8B/snapshots/abc",
    "max_num_batched_tokens=2048, cache_config.key_size=16, enable_prefix_caching=True",
    "DB_HOST=db.internal PASSTHROUGH=1 bypass=yes",
])
def test_near_misses_stay_readable(text: str) -> None:
    assert redact_text(text) == text
