"""The CLI's options, help and completion.

collect names its bundle with --output-file (a report format after -o is an
error, not a file called "json"); help shows kubectl-style metavars and the
examples once; errors are one sentence without library class names;
--quiet with --output-file; --fail-on sets what exits 1; shell completion
for bash, zsh and fish, and kubectl's plugin completion executable.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT, need, replay, run_cli
from tests.support.kubeapi import write_kubeconfig

COMMANDS = ["scan", "collect", "analyze", "patterns", "completion"]


def one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("vllm-triage: error: "), lines[0]
    return lines[0]


@pytest.mark.parametrize("fmt", ["json", "yaml", "markdown", "table", "html"])
def test_collect_o_with_a_report_format_is_an_error(fmt: str, tmp_path: Path) -> None:
    run = run_cli("collect", "--kubeconfig", str(tmp_path / "none"), "-o", fmt)
    assert run.code == 2
    line = one_line(run.stderr)
    assert f"-o {fmt} is a report format" in line and "--output-file" in line
    assert not (ROOT / fmt).exists()


def test_collect_writes_its_bundle_to_output_file_or_a_named_default(tmp_path: Path) -> None:
    with replay("cuda-oom", tmp_path) as (_server, kc):
        named = run_cli("collect", "--kubeconfig", str(kc), "--output-file",
                        str(tmp_path / "b.tar.gz"))
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
        work = tmp_path / "work"
        work.mkdir()
        default = subprocess.run([sys.executable, "-m", "triage.cli", "collect",
                                  "--kubeconfig", str(kc)], cwd=work, env=env,
                                 capture_output=True, text=True, timeout=120)
    assert named.code == 0, named.stderr
    assert tarfile.is_tarfile(tmp_path / "b.tar.gz")
    assert default.returncode == 0, default.stderr
    made = [p.name for p in work.iterdir()]
    assert len(made) == 1 and made[0].startswith("vllm-triage-llm-") and \
        made[0].endswith(".tar.gz"), made
    assert f"bundle written to {made[0]}" in default.stderr


@pytest.mark.parametrize("command", COMMANDS)
def test_help_uses_kubectl_style_metavars_and_no_repeated_examples(command: str) -> None:
    run = run_cli(command, "--help")
    assert run.code == 0
    for python_type in ("<str>", "<int", "<list", "<path>", " TEXT", " INTEGER", "<bool"):
        assert python_type not in run.stdout, (python_type, run.stdout)
    assert "Examples:" not in run.stdout  # said once, at the top level
    top = run_cli("--help").stdout
    assert top.count("Examples:") == 1 and "--fail-on warning" in top


def test_scan_help_names_its_values() -> None:
    text = run_cli("scan", "--help").stdout
    for metavar in ("-n, --namespace NAMESPACE", "--kubeconfig FILE", "-o, --output FORMAT",
                    "--request-timeout DURATION", "--tail-lines N", "--patterns DIR",
                    "--fail-on LEVEL", "--output-file FILE"):
        assert metavar in text, metavar


def test_a_wrong_format_is_one_clean_sentence() -> None:
    run = run_cli("analyze", str(FIXTURES / "cuda-oom"), "-o", "wide")
    assert run.code == 2
    line = one_line(run.stderr)
    assert "-o 'wide' is not a report format; use one of table, json, yaml, markdown, html" \
        in line
    assert "Value error" not in run.stderr


def test_tail_lines_out_of_range_is_one_clean_sentence(tmp_path: Path) -> None:
    kc = write_kubeconfig(tmp_path / "kubeconfig", "https://127.0.0.1:1")
    run = run_cli("scan", "--kubeconfig", str(kc), "--tail-lines", "0")
    assert run.code == 2
    assert "--tail-lines 0 must be between 1 and 200000" in one_line(run.stderr)


def test_unreachable_cluster_names_no_library_class(tmp_path: Path) -> None:
    kc = write_kubeconfig(tmp_path / "kubeconfig", "https://127.0.0.1:1")
    run = run_cli("scan", "--kubeconfig", str(kc), timeout=60)
    assert run.code == 3
    line = one_line(run.stderr)
    assert "Connection(" not in line and "HTTPS" not in line.split("https://")[0]
    assert "connection refused" in line.lower()


def test_quiet_with_output_file(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    run = run_cli("analyze", str(FIXTURES / "cuda-oom"), "-o", "json", "--output-file",
                  str(out), "--quiet")
    assert run.code == 1 and run.stdout == "" and run.stderr == ""
    assert '"schema"' in out.read_text()
    alone = run_cli("analyze", str(FIXTURES / "cuda-oom"), "--quiet")
    assert alone.code == 2 and "--quiet needs --output-file" in one_line(alone.stderr)


def test_fail_on_sets_what_exits_1() -> None:
    warn = str(FIXTURES / "latency-tail-high")  # a 45.8 s P99 against a 2 s median: warn
    assert run_cli("analyze", warn, "-o", "json").code == 0
    assert run_cli("analyze", warn, "-o", "json", "--fail-on", "warning").code == 1
    assert run_cli("analyze", warn, "-o", "json", "--fail-on", "critical").code == 0
    healthy = str(FIXTURES / "well-sized-healthy")
    assert run_cli("analyze", healthy, "-o", "json", "--fail-on", "warning").code == 0
    bad = run_cli("analyze", healthy, "--fail-on", "sometimes")
    assert bad.code == 2 and "--fail-on 'sometimes' must be critical or warning" in bad.stderr


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts(shell: str) -> None:
    run = run_cli("completion", shell)
    assert run.code == 0 and "_VLLM_TRIAGE_COMPLETE" in run.stdout
    assert run_cli("completion", "tcsh").code == 2


def test_bash_completes_through_the_script(tmp_path: Path) -> None:
    bash = need("bash")
    script = run_cli("completion", "bash").stdout
    (tmp_path / "c.bash").write_text(script)
    exe = tmp_path / "bin" / "vllm-triage"
    exe.parent.mkdir()
    exe.write_text(f"#!/bin/sh\nexec {sys.executable} -m triage.cli \"$@\"\n")
    exe.chmod(0o755)
    env = {**os.environ, "PATH": f"{exe.parent}:{os.environ['PATH']}", "PYTHONPATH": str(ROOT)}
    probe = ('source c.bash; COMP_WORDS=(vllm-triage scan --fail-on ""); COMP_CWORD=3; '
             '_vllm_triage_completion vllm-triage; printf "%s\\n" "${COMPREPLY[@]}"')
    out = subprocess.run([bash, "-c", probe], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=60).stdout
    assert out.split() == ["critical", "warning"], out


def test_kubectl_plugin_completion_through_the_real_kubectl(tmp_path: Path) -> None:
    """kubectl 1.26+ runs kubectl_complete-vllm_triage (the console script) for
    `kubectl vllm-triage <TAB>` and reads Cobra's __complete answer."""
    kubectl = need("kubectl")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name, entry in (("kubectl-vllm_triage", "main"),
                        ("kubectl_complete-vllm_triage", "kubectl_complete")):
        exe = bindir / name
        exe.write_text(f"#!{sys.executable}\nimport sys\nsys.argv[0] = {name!r}\n"
                       f"from triage.cli import {entry}\n{entry}()\n")
        exe.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env.update({"PATH": f"{bindir}:{os.environ['PATH']}", "PYTHONPATH": str(ROOT),
                "HOME": str(tmp_path)})

    def complete(*words: str) -> list[str]:
        proc = subprocess.run([kubectl, "__complete", "vllm-triage", *words], env=env,
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.splitlines()

    assert complete("scan", "-o", "") == ["table", "json", "yaml", "markdown", "html", ":4"]
    commands = [line.split("\t")[0] for line in complete("")]
    assert {"scan", "collect", "analyze", "patterns"} <= set(commands)
    assert complete("scan", "--kubeconfig", "")[-1] == ":0"  # kubectl completes file names
