"""Every usage mistake is a clear sentence with exit 2, before any request, and without a
library's class names.

A broken kubeconfig, lint's -o and --fail-on, --patterns at a missing directory or at
a file, a malformed -l (refused before it reaches the API server); lint's help shows
kubectl-style metavars and its examples once.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import FIXTURES, replay, run_cli
from tests.support.kubeapi import write_kubeconfig

LIBRARY_WORDS = ("ParserError", "ScannerError", "ConfigException", "Exception", "Error:",
                 "Traceback", "Value error", "binascii")


def one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("vllm-triage: error: "), lines[0]
    for word in LIBRARY_WORDS:
        assert word not in lines[0], (word, lines[0])
    return lines[0]


def usage_error(stderr: str) -> str:
    """click's usage error: the usage line, the hint, and one 'Error:' sentence."""
    errors = [line for line in stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1, stderr
    assert "Traceback" not in stderr and "Value error" not in stderr, stderr
    return errors[0]


KUBECONFIGS = {
    "not-yaml": ("garbage: [\n", "it is not valid YAML"),
    "no-current-context": ("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\n",
                           "it has no current-context"),
    "missing-key": ("apiVersion: v1\nkind: Config\ncontexts: []\ncurrent-context: x\n",
                    "has no"),
    "bad-base64": (
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: "
        "'https://127.0.0.1:1'}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
        "current-context: x\nusers:\n- name: u\n  user: {client-certificate-data: "
        "'!!notbase64', client-key-data: zz}\n", "a base64 value in it does not decode"),
    "no-such-cluster": (
        "apiVersion: v1\nkind: Config\nclusters: []\ncontexts:\n- name: x\n  context: "
        "{cluster: c, user: u}\ncurrent-context: x\nusers: []\n", "it has no cluster named 'c'"),
    "a-list": ("- a\n- b\n", "it is not a kubeconfig"),
}


@pytest.mark.parametrize("case", sorted(KUBECONFIGS))
def test_a_broken_kubeconfig_is_one_sentence_without_class_names(case: str,
                                                                 tmp_path: Path) -> None:
    text, said = KUBECONFIGS[case]
    kc = tmp_path / "kubeconfig"
    kc.write_text(text)
    run = run_cli("scan", "--kubeconfig", str(kc), "--request-timeout", "5s")
    assert run.code == 2, run.stderr
    line = one_error_line(run.stderr)
    assert said in line and str(kc) in line, line


@pytest.mark.parametrize(("flag", "value", "choices"), [
    ("-o", "wide", "text, json, sarif, github"),
    ("--fail-on", "bogus", "critical, warning, info, never"),
])
def test_lint_wrong_choice_is_said_in_words(flag: str, value: str, choices: str) -> None:
    run = run_cli("lint", "-f", str(FIXTURES / "cuda-oom"), flag, value)
    assert run.code == 2
    assert f"'{value}' is not one of {choices}" in usage_error(run.stderr)
    assert run.stdout == ""


def test_lint_choices_still_work() -> None:
    run = run_cli("lint", "-f", str(FIXTURES / "cuda-oom"), "-o", "json", "--fail-on",
                  "never")
    assert run.code == 0, run.stderr
    assert run.json()["schema"] == "vllm-triage/lint/v1"


@pytest.mark.parametrize("command", ["scan", "analyze", "lint", "patterns"])
def test_patterns_at_a_missing_directory_is_exit_2(command: str, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-patterns"
    args = {"scan": ["scan", "--kubeconfig", str(write_kubeconfig(
                tmp_path / "kc", "https://127.0.0.1:1"))],  # never reached: exit 2, not 3
            "analyze": ["analyze", str(FIXTURES / "cuda-oom")],
            "lint": ["lint", "-f", str(FIXTURES / "cuda-oom")],
            "patterns": ["patterns"]}[command]
    run = run_cli(*args, "--patterns", str(missing))
    assert run.code == 2, (run.code, run.stderr)
    assert f"--patterns {missing}: no such directory" in one_error_line(run.stderr)
    assert run.stdout == ""


def test_patterns_at_a_file_is_exit_2(tmp_path: Path) -> None:
    not_dir = tmp_path / "file.yaml"
    not_dir.write_text("id: x\n")
    run = run_cli("analyze", str(FIXTURES / "cuda-oom"), "--patterns", str(not_dir))
    assert run.code == 2
    assert "is not a directory of pattern files" in one_error_line(run.stderr)


@pytest.mark.parametrize(("selector", "said"), [
    ("app in (a", "the parenthesis after in is not closed"),
    ("==x", "a label key is missing"),
    ("app=vllm,", "a comma with no requirement after it"),
    ("a b", "requirements are separated by commas"),
    ("app=-x", "is not a label value"),
])
def test_a_malformed_selector_is_exit_2_before_any_request(selector: str, said: str,
                                                           tmp_path: Path) -> None:
    with replay("cuda-oom", tmp_path) as (_server, kc):
        run = run_cli("scan", "--kubeconfig", str(kc), "-l", selector)
    assert run.code == 2, run.stderr
    assert said in one_error_line(run.stderr) and f"-l {selector!r}" in run.stderr
    log = tmp_path / "requests.log"
    assert not log.exists() or log.read_text().strip() == ""  # nothing was asked


def test_a_valid_selector_still_selects(tmp_path: Path) -> None:
    with replay("cuda-oom", tmp_path) as (_server, kc):
        run = run_cli("scan", "--kubeconfig", str(kc), "-l", "app in (vllm-qwen, other)",
                      "-o", "json")
    assert run.code in (0, 1), run.stderr
    assert run.json()["schema"] == "vllm-triage/report/v1"


def test_lint_help_uses_kubectl_style_metavars_and_no_examples() -> None:
    text = run_cli("lint", "--help").stdout
    for python_type in ("<list", "<str>", "<text|", "<critical|"):
        assert python_type not in text, text
    for metavar in ("-o, --output FORMAT", "--fail-on LEVEL", "-f, --filename FILE|DIR|-",
                    "--patterns DIR"):
        assert metavar in text, metavar
    assert "Examples:" not in text
    top = run_cli("--help").stdout
    assert top.count("Examples:") == 1 and "vllm-triage lint -f" in top
