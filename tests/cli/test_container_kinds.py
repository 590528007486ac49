"""Init containers, native sidecars and pods without containerStatuses are triaged like
any container, never read as nothing failing, and the steps say what they looked at."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import replay, run_cli
from tests.support.fixturekit import CUDA_OOM_POD, copy_fixture

STARTED = "2026-11-28T03:02:11Z"
INIT = "storage-initializer"


def _edit_pod(root: Path, change: Any) -> None:
    path = root / "objects" / "pods.yaml"
    data = yaml.safe_load(path.read_text())
    for pod in data["items"]:
        if pod["metadata"]["name"] == CUDA_OOM_POD:
            change(pod)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def _storage_initializer_oomkilled(pod: dict[str, Any]) -> None:
    """KServe's shape: the model download runs in an init container, OOMKilled 5 times."""
    pod["spec"]["initContainers"] = [{
        "name": INIT, "image": "kserve/storage-initializer:v0.14.0",
        "args": ["hf://Qwen/Qwen3-8B", "/mnt/models"],
        "resources": {"limits": {"cpu": "1", "memory": "1Gi"},
                      "requests": {"cpu": "100m", "memory": "100Mi"}},
        "volumeMounts": [{"name": "kserve-provision-location", "mountPath": "/mnt/models"}]}]
    pod["status"]["phase"] = "Pending"
    pod["status"]["initContainerStatuses"] = [{
        "name": INIT, "image": "kserve/storage-initializer:v0.14.0", "imageID": "",
        "containerID": "containerd://5f1e", "ready": False, "restartCount": 5,
        "started": False,
        "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 2m40s "
                              f"restarting failed container={INIT} pod={CUDA_OOM_POD}"}},
        "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled",
                                     "startedAt": STARTED, "finishedAt": "2026-11-28T03:04:51Z",
                                     "containerID": "containerd://5f1e"}}}]
    for cs in pod["status"]["containerStatuses"]:
        cs.update(ready=False, restartCount=0, started=False, lastState={},
                  state={"waiting": {"reason": "PodInitializing"}})


def _findings(report: dict[str, Any]) -> dict[str, list[str]]:
    return {f["id"]: f["evidence"] for p in report["pods"] for f in p["findings"]}


def _named(report: dict[str, Any]) -> set[tuple[str, str]]:
    """Every finding of the report, with the container it names."""
    return {(f["id"], f["container"]) for p in report["pods"] for f in p["findings"]}


def _init_failed(last: dict[str, Any] | None, state: dict[str, Any], restarts: int
                 ) -> Any:
    """The storage-initializer with this status (and no OOM kill)."""
    def change(pod: dict[str, Any]) -> None:
        _storage_initializer_oomkilled(pod)
        pod["status"]["initContainerStatuses"][0].update(
            restartCount=restarts, state=state,
            lastState={"terminated": last} if last else {})
    return change


def test_why_a_failing_init_container_is_a_finding_naming_it(tmp_path: Path) -> None:
    """Before: Init:CrashLoopBackOff with the model download OOMKilled five times exited 0,
    step 1 "pass: not OOMKilled", and the init container was never named."""
    root = copy_fixture(tmp_path / "fx")
    _edit_pod(root, _storage_initializer_oomkilled)
    for log in (root / "logs" / "llm" / CUDA_OOM_POD).glob("*"):
        log.unlink()  # vLLM never started
    (root / "logs" / "llm" / CUDA_OOM_POD / f"{INIT}.previous.log").write_text(
        "INFO:root:Copying contents of hf://Qwen/Qwen3-8B to local\n"
        "Fetching 14 files:  43%|████▎     | 6/14 [00:41<00:55,  6.90s/it]\n")
    with replay(root, tmp_path) as (_server, kc):
        live = run_cli("scan", "--kubeconfig", str(kc), "-o", "json")
    offline = run_cli("analyze", str(root), "-o", "json")
    for run in (live, offline):
        assert run.code == 1, run.stderr
        report = run.json()
        # Exactly these: the init container's OOM kill, and the vLLM flag the fixture has
        # anyway. Before, every failing init container also got a critical no-gpu (it
        # requests no GPU) and volume-mount-failed (vLLM has not started, a claim is not
        # Bound), although its volumes had been mounted for it to run at all.
        assert _named(report) == {("container-oomkilled", INIT),
                                  ("gpu-memory-utilization", "vllm")}, _named(report)
        oom = _findings(report)["container-oomkilled"]
        assert any(f"initContainerStatuses[{INIT}].lastState.terminated.reason = 'OOMKilled'"
                   in e for e in oom), oom
        step1 = report["checklist"][0]
        assert step1["verdict"] == "fail", step1
        assert report["pods"][0]["phase"] == "Pending"
    table = run_cli("analyze", str(root))
    assert "Init:CrashLoopBackOff" in table.stdout and INIT in table.stdout


EXIT_1 = {"exitCode": 1, "reason": "Error", "startedAt": STARTED,
          "finishedAt": "2026-11-28T03:02:41Z"}


def test_why_an_init_container_that_exits_non_zero_is_named(tmp_path: Path) -> None:
    """Before: an init container that exits 1 with a log of no known signature (Init:
    CrashLoopBackOff, or Init:Error once) got no finding naming it, only a false no-gpu
    and volume-mount-failed; with no log at all, the same."""
    waiting = {"waiting": {"reason": "CrashLoopBackOff"}}
    cases = {
        "crash-looping, with a log": (_init_failed(EXIT_1, waiting, 4), True),
        "crash-looping, no log read": (_init_failed(EXIT_1, waiting, 4), False),
        "Init:Error, first run": (_init_failed(None, {"terminated": EXIT_1}, 0), True),
        # a non-zero exit whatever the reason the runtime gives
        "exit 2, reason DeadlineExceeded": (_init_failed(None, {"terminated": {
            **EXIT_1, "exitCode": 2, "reason": "DeadlineExceeded"}}, 0), True),
    }
    for name, (change, with_log) in cases.items():
        root = copy_fixture(tmp_path / name.replace(" ", "-").replace(",", ""))
        _edit_pod(root, change)
        for log in (root / "logs" / "llm" / CUDA_OOM_POD).glob("*"):
            log.unlink()
        if with_log:
            (root / "logs" / "llm" / CUDA_OOM_POD / f"{INIT}.previous.log").write_text(
                "INFO:root:Initializing, args: src_uri [s3://models/qwen] dest_path[ "
                "/mnt/models]\nERROR:root:unable to copy: bucket not found\n")
        run = run_cli("analyze", str(root), "-o", "json")
        assert run.code == 1, (name, run.stderr)
        report = run.json()
        assert _named(report) == {("crashloop-unknown", INIT),
                                  ("gpu-memory-utilization", "vllm")}, (name, _named(report))
        crash = _findings(report)["crashloop-unknown"]
        assert any(f"initContainerStatuses[{INIT}]" in e for e in crash), (name, crash)
        if with_log:
            assert any("unable to copy: bucket not found" in e for e in crash), (name, crash)


def test_an_init_container_with_a_known_failure_gets_that_finding_alone(
        tmp_path: Path) -> None:
    """A gated model download in the init container: model-download-failed names it, and
    the crash fallback stands back."""
    root = copy_fixture(tmp_path / "fx")
    _edit_pod(root, _init_failed(EXIT_1, {"waiting": {"reason": "CrashLoopBackOff"}}, 4))
    for log in (root / "logs" / "llm" / CUDA_OOM_POD).glob("*"):
        log.unlink()
    (root / "logs" / "llm" / CUDA_OOM_POD / f"{INIT}.previous.log").write_text(
        "INFO:root:Copying contents of hf://Qwen/Qwen3-8B to local\n"
        "huggingface_hub.errors.GatedRepoError: 401 Client Error. (Request ID: Root=1-6745)\n"
        "Cannot access gated repo for url https://huggingface.co/Qwen/Qwen3-8B/resolve/main/"
        "config.json.\n")
    report = run_cli("analyze", str(root), "-o", "json").json()
    assert _named(report) == {("model-download-failed", INIT),
                              ("gpu-memory-utilization", "vllm")}, _named(report)


def test_why_vllm_as_a_native_sidecar_is_triaged(tmp_path: Path) -> None:
    """Before: vLLM run as an initContainer with restartPolicy Always was not triaged."""
    root = copy_fixture(tmp_path / "fx")

    def as_sidecar(pod: dict[str, Any]) -> None:
        vllm = pod["spec"]["containers"][0]
        pod["spec"]["initContainers"] = [{**vllm, "restartPolicy": "Always"}]
        pod["spec"]["containers"] = [{"name": "envoy", "image": "envoyproxy/envoy:v1.31.2",
                                      "ports": [{"containerPort": 9901}]}]
        pod["status"]["initContainerStatuses"] = pod["status"]["containerStatuses"]
        pod["status"]["containerStatuses"] = [{
            "name": "envoy", "image": "envoyproxy/envoy:v1.31.2", "imageID": "",
            "containerID": "containerd://e1", "ready": True, "restartCount": 0,
            "started": True, "state": {"running": {"startedAt": STARTED}}, "lastState": {}}]
    _edit_pod(root, as_sidecar)
    with replay(root, tmp_path) as (_server, kc):
        live = run_cli("scan", "--kubeconfig", str(kc), "-o", "json")
    for run in (live, run_cli("analyze", str(root), "-o", "json")):
        assert run.code == 1, run.stderr
        assert _named(run.json()) == {("cuda-oom", "vllm"),
                                      ("gpu-memory-utilization", "vllm")}, _named(run.json())
        assert any("sidecar container vllm" in e
                   for e in run.json()["checklist"][0]["evidence"])


def test_why_a_pod_without_container_statuses_is_not_passed(tmp_path: Path) -> None:
    """Before: steps passed without evidence ("not OOMKilled; no previous termination") and
    the state read "Running, the container has not started"."""
    root = copy_fixture(tmp_path / "fx")

    def no_statuses(pod: dict[str, Any]) -> None:
        pod["status"].pop("containerStatuses", None)
    _edit_pod(root, no_statuses)
    for log in (root / "logs" / "llm" / CUDA_OOM_POD).glob("*"):
        log.unlink()
    report = run_cli("analyze", str(root), "-o", "json").json()
    # Nothing guessed either way: a Running pod mounted its volumes (no volume-mount-failed
    # because "the container has not started" is only what a missing status looks like).
    assert _named(report) == {("gpu-memory-utilization", "vllm")}, _named(report)
    step1, step2 = report["checklist"][0], report["checklist"][1]
    assert step1["verdict"] == "unknown", step1
    assert "reports no status for container vllm" in step1["evidence"][0]
    assert "has not started" not in str(step2["evidence"]), step2
    assert "reports no status" in str(step2["evidence"]), step2


def test_a_completed_init_container_is_not_triaged(tmp_path: Path) -> None:
    """The neighbour that must stay silent: an init container that ran and exited 0."""
    root = copy_fixture(tmp_path / "fx")

    def completed(pod: dict[str, Any]) -> None:
        _storage_initializer_oomkilled(pod)
        pod["status"]["initContainerStatuses"][0].update(
            restartCount=0, lastState={}, state={"terminated": {
                "exitCode": 0, "reason": "Completed", "startedAt": STARTED,
                "finishedAt": "2026-11-28T03:03:11Z"}})
        original = copy.deepcopy(yaml.safe_load(
            (root / "objects" / "pods.yaml").read_text())["items"][0]["status"])
        pod["status"]["containerStatuses"] = original["containerStatuses"]
        pod["status"]["phase"] = original["phase"]
    _edit_pod(root, completed)
    report = run_cli("analyze", str(root), "-o", "json").json()
    assert INIT not in str(report["checklist"]) and INIT not in str(report["pods"])
    assert _named(report) == {("cuda-oom", "vllm"), ("gpu-memory-utilization", "vllm")}, \
        _named(report)
