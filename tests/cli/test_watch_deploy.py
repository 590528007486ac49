"""deploy/watch/: a kustomize base kubectl accepts, least privilege, a hardened pod.

- ``kubectl kustomize`` builds it and ``kubectl apply --dry-run=client``
  accepts every object, against the test API server (kubectl needs discovery
  even for a client-side dry run; no cluster exists here). Schema validation
  needs the server's OpenAPI document, which the test server does not serve,
  so it runs with ``--validate=false``.
- kube-linter's checks for what matters here, as assertions: non-root,
  read-only root filesystem, no privilege escalation, all capabilities
  dropped, seccomp, CPU and memory requests and limits, liveness and
  readiness probes, no latest tag.
- The role is the scan's reads plus ``watch`` on pods, and ``watch`` runs
  against a server that enforces exactly it without a single refusal.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.cli.test_watch import wait_for, watching
from tests.conftest import FIXTURES, ROOT, need, replay
from tests.support.kubeapi import RBAC
from triage import __version__

BASE = ROOT / "deploy" / "watch"
SCAN_ROLE = ROOT / "deploy" / "rbac-clusterrole.yaml"


def built() -> list[dict[str, Any]]:
    kubectl = need("kubectl")
    proc = subprocess.run([kubectl, "kustomize", str(BASE)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    return [d for d in yaml.safe_load_all(proc.stdout) if d]


def by_kind(kind: str) -> list[dict[str, Any]]:
    return [d for d in built() if d["kind"] == kind]


def test_kustomize_builds_every_object() -> None:
    kinds = sorted(d["kind"] for d in built())
    assert kinds == sorted(["Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding",
                            "Deployment", "Service", "ServiceMonitor", "PrometheusRule"])


def test_kubectl_apply_dry_run_client(tmp_path: Path) -> None:
    kubectl = need("kubectl")
    with replay(FIXTURES / "well-sized-healthy", tmp_path, deploy_kinds=True) as (server, kc):
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
        env.update({"KUBECONFIG": str(kc), "HOME": str(tmp_path)})
        proc = subprocess.run([kubectl, "apply", "--dry-run=client", "--validate=false", "-k",
                               str(BASE)], capture_output=True, text=True, env=env, timeout=120)
        requests = list(server.requests)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("created (dry run)") == 8, proc.stdout
    assert all(r.startswith("GET ") for r in requests)  # a dry run writes nothing


def test_pod_is_hardened_like_kube_linter_asks() -> None:
    (deploy,) = by_kind("Deployment")
    pod = deploy["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] > 0
    assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    assert pod["serviceAccountName"] == "vllm-triage-watch"
    assert not pod.get("hostNetwork") and not pod.get("hostPID") and not pod.get("hostIPC")
    for c in pod["containers"]:
        sc = c["securityContext"]
        assert sc["readOnlyRootFilesystem"] is True
        assert sc["allowPrivilegeEscalation"] is False
        assert sc.get("privileged") is not True
        assert sc["capabilities"]["drop"] == ["ALL"] and not sc["capabilities"].get("add")
        for kind in ("requests", "limits"):
            assert {"cpu", "memory"} <= set(c["resources"][kind]), (c["name"], kind)
        assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
        assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
        image = c["image"]
        assert ":" in image and not image.endswith(":latest")
        assert image.rsplit(":", 1)[1] == __version__
        assert c["args"][0] == "watch"
        # Every volume it writes to is an emptyDir with a size limit.
        for mount in c.get("volumeMounts") or []:
            volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
            assert volume["emptyDir"]["sizeLimit"]


def test_service_and_servicemonitor_agree() -> None:
    (svc,) = by_kind("Service")
    (mon,) = by_kind("ServiceMonitor")
    (deploy,) = by_kind("Deployment")
    labels = deploy["spec"]["template"]["metadata"]["labels"]
    assert all(labels.get(k) == v for k, v in svc["spec"]["selector"].items())
    assert mon["spec"]["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items()
    endpoint = mon["spec"]["endpoints"][0]
    assert endpoint["port"] == svc["spec"]["ports"][0]["name"]
    assert endpoint["path"] == "/metrics"
    assert endpoint["honorLabels"] is True  # the series' namespace/pod are the vLLM pod's
    # Prometheus Operator finds the Service in the watch's own namespace.
    assert mon["spec"]["namespaceSelector"] == {"matchNames": [svc["metadata"]["namespace"]]}
    assert svc["metadata"]["namespace"] == deploy["metadata"]["namespace"] == "vllm-triage"


def test_one_watcher_at_a_time() -> None:
    """A RollingUpdate would run two watchers during a rollout: twice the API reads and
    every series twice. Recreate stops the old one first (it exits within seconds of
    SIGTERM, well inside the grace period)."""
    (deploy,) = by_kind("Deployment")
    assert deploy["spec"]["replicas"] == 1
    assert deploy["spec"]["strategy"] == {"type": "Recreate"}
    grace = deploy["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    assert grace >= 10


def _role() -> dict[str, Any]:
    (role,) = by_kind("ClusterRole")
    return role


def test_role_is_the_scan_role_plus_watch_on_pods() -> None:
    role = _role()
    for rule in role["rules"]:
        assert set(rule["verbs"]) <= {"get", "list", "watch"}, rule
        assert "secrets" not in rule["resources"] and "*" not in rule["resources"]
        if "watch" in rule["verbs"]:
            assert rule["resources"] == ["pods"] and rule["apiGroups"] == [""]

    def grants(doc: dict[str, Any]) -> set[tuple[str, str, str]]:
        return {(g, r, v) for rule in doc["rules"] for g in rule["apiGroups"]
                for r in rule["resources"] for v in rule["verbs"]}

    scan = next(d for d in yaml.safe_load_all(SCAN_ROLE.read_text()) if d["kind"] == "ClusterRole")
    assert grants(role) - grants(scan) == {("", "pods", "watch")}
    assert grants(scan) <= grants(role)
    (binding,) = by_kind("ClusterRoleBinding")
    (account,) = by_kind("ServiceAccount")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account["metadata"]["name"],
                                     "namespace": account["metadata"]["namespace"]}]


def test_watch_needs_nothing_the_role_does_not_grant(tmp_path: Path) -> None:
    with replay(FIXTURES / "cuda-oom", tmp_path, rbac=RBAC([_role()])) as (server, kc), \
            watching(kc, tmp_path, "-A", "--interval", "1s") as watch:
        wait_for("two cycles", lambda: 'result="ok"} 2.0' in watch.metrics())
        assert 'vllm_triage_pod_watch_up{cluster="incident-replay"} 1.0' in watch.metrics()
        assert watch.get("/report.json").json()["unreadable"] == []
        denied = list(server.denied)
        requests = list(server.requests)
    assert denied == []
    assert any("watch=1" in r for r in requests)
    # Without watch on pods, the watch is refused and the interval alone paces it.
    refused = _role()
    for rule in refused["rules"]:
        rule["verbs"] = [v for v in rule["verbs"] if v != "watch"]
    (tmp_path / "refused").mkdir()
    with replay(FIXTURES / "cuda-oom", tmp_path / "refused", rbac=RBAC([refused])) as (s2, kc2), \
            watching(kc2, tmp_path, "-A", "--interval", "1s") as watch:
        wait_for("two cycles", lambda: 'result="ok"} 2.0' in watch.metrics())
        assert 'vllm_triage_pod_watch_up{cluster="incident-replay"} 0.0' in watch.metrics()
        assert 'vllm_triage_last_cycle_success{cluster="incident-replay"} 1.0' in watch.metrics()
        assert s2.denied and all(d.startswith("watch /pods") for d in s2.denied)


def test_the_tools_own_lint_passes_and_never_takes_the_watch_for_vllm() -> None:
    from tests.conftest import run_cli
    from triage.vllm.selection import is_vllm_container

    run = run_cli("lint", "-k", str(BASE), "--fail-on", "info", "-o", "json")
    assert run.code == 0, run.stdout + run.stderr
    # Every object read as the API server would: nothing dropped as of the wrong type
    # (an RBAC rule's resources are names, not a container's resources).
    text = run_cli("lint", "-k", str(BASE), "--fail-on", "info")
    assert text.code == 0 and "0 finding(s)" in text.stdout + text.stderr
    assert "wrong type" not in text.stdout + text.stderr, text.stdout + text.stderr
    doc = run.json()
    assert doc["findings"] == []
    (deploy,) = [s for s in doc["skipped"] if s["object"].startswith("Deployment/")]
    assert deploy["reason"].startswith("no vLLM container")
    # The image is named vllm-triage: scan -A in the cluster must not triage the
    # watch itself as a vLLM server (a router's or exporter's image is not one either).
    (container,) = by_kind("Deployment")[0]["spec"]["template"]["spec"]["containers"]
    assert not is_vllm_container(container)
    assert not is_vllm_container({"image": "ghcr.io/acme/vllm-triage:0.1.0", "args": ["watch"]})
    assert is_vllm_container({"image": "vllm/vllm-openai:v0.10.1.1"})
