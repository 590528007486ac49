"""The credential forms redaction knows never reach a ``scan`` output or a ``collect``
bundle: planted in a copy of fixtures/secrets-planted (env, an annotation, the log),
then searched for in every output and every member of the bundle."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

from tests.conftest import replay, run_cli
from tests.safety.test_redaction_forms import ENV_FORMS, TEXT_FORMS
from tests.support.fixturekit import copy_fixture, load_list, save_list, write_bytes
from triage.safety.redact import MASK


def test_credential_forms_never_reach_bundle_or_output(tmp_path: Path) -> None:
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
