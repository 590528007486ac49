"""The least-privilege RBAC manifests in deploy/ grant reads only."""

from __future__ import annotations

import yaml

from tests.conftest import ROOT

CLUSTER = ROOT / "deploy" / "rbac-clusterrole.yaml"
NAMESPACED = ROOT / "deploy" / "rbac-namespaced.yaml"


def test_manifests_grant_reads_only() -> None:
    for path in (CLUSTER, NAMESPACED):
        for doc in yaml.safe_load_all(path.read_text()):
            for rule in (doc or {}).get("rules") or []:
                assert set(rule["verbs"]) <= {"get", "list"}, (path, rule)
                assert "secrets" not in rule["resources"] and "*" not in rule["resources"]
