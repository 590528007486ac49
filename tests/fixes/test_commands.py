"""Commands the report prints: every word quoted for a POSIX shell, every kubectl naming
its cluster and namespace (tests/cli/test_pasted_commands.py pastes them into bash)."""

from __future__ import annotations

import shlex
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from triage.fixes import commands
from triage.fixes.language import is_command, render_command, render_text
from triage.results import Patch
from triage.rules.loader import load_patterns
from triage.safety import codespans, shell
from triage.safety.shell import KubectlTarget

TARGET = KubectlTarget("gpu-west", "/home/me/.kube/two clusters.yaml")
FLAGS = ["--kubeconfig", "/home/me/.kube/two clusters.yaml", "--context", "gpu-west"]
# Resources and verbs of kubectl that are not namespaced.
# --raw names its namespace in the path, when it has one.
_CLUSTER_WIDE = {"cordon", "uncordon", "drain", "node", "nodes", "-A", "--all-namespaces",
                 "--raw"}


def _words(line: str) -> list[str]:
    return shlex.split(line)


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1, max_size=40))
def test_any_name_is_one_argument_of_the_command(name: str) -> None:
    command = render_command("kubectl delete pod -n {namespace} {pod}",
                             {"namespace": "llm", "pod": name}, TARGET)
    assert isinstance(command, str)
    words = _words(command)
    assert words[:5] == ["kubectl", *FLAGS] and words[5:9] == ["delete", "pod", "-n", "llm"]
    assert len(words) == 10
    shown = words[9]
    # A name is passed as it is, or made visible where it cannot be a Kubernetes name.
    assert shown == name or "<U+" in shown or "[REDACTED" in shown
    assert not shown.startswith("-")
    for ch in "\n\r\u2028\u2029\x85":
        assert ch not in command


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=30), st.text(min_size=1, max_size=30))
def test_a_command_in_a_text_stays_one_code_span(pod: str, node: str) -> None:
    """Whatever backticks a name holds, a writer finds the command whole."""
    text = render_text("Move it off `kubectl cordon {node}`, then `kubectl delete pod -n "
                       "{namespace} {pod}` (node {node}).",
                       {"namespace": "llm", "pod": pod, "node": node}, TARGET)
    assert isinstance(text, str)
    spans = [part for is_code, part in codespans.split(text) if is_code]
    assert len(spans) == 2 and all(span.startswith("kubectl ") for span in spans), text
    assert _words(spans[0])[-1] in (node, shell.argument(node))
    assert _words(spans[1])[-1] in (pod, shell.argument(pod))


def test_operators_of_the_template_stay_operators_and_a_name_never_is_one() -> None:
    command = render_command("kubectl logs -n {namespace} {pod} --previous | grep -n Errno",
                             {"namespace": "llm", "pod": "|"}, KubectlTarget("c"))
    assert command == "kubectl --context c logs -n llm '|' --previous | grep -n Errno"


def test_a_list_is_one_argument_per_item() -> None:
    command = render_command("kubectl describe pvc -n {namespace} {claims}",
                             {"namespace": "llm", "claims": ["a", "b c"]}, KubectlTarget())
    assert _words(str(command)) == ["kubectl", "describe", "pvc", "-n", "llm", "a", "b c"]


def test_the_patch_commands_name_the_cluster_namespace_and_file() -> None:
    patch = Patch("apps/v1", "Deployment", "ll m", "vllm;x", "strategic", {"spec": {"a": "'"}})
    apply = _words(commands.apply(patch, FLAGS, "out dir/f.patch.yaml"))
    assert apply == ["kubectl", *FLAGS, "patch", "deployment", "vllm;x", "-n", "ll m", "--type",
                     "strategic", "--patch-file", "out dir/f.patch.yaml"]
    inline = _words(commands.apply(patch, FLAGS))
    assert inline[-2:] == ["-p", '{"spec":{"a":"\'"}}']
    preview = commands.preview(patch, FLAGS, "f.yaml")
    left, right = preview.split(" | ")
    assert _words(right) == ["kubectl", *FLAGS, "diff", "-n", "ll m", "-f", "-"]
    assert _words(left)[-3:] == ["--dry-run=server", "-o", "yaml"]
    lines = commands.lines(patch, FLAGS, "f.yaml", preview=True)
    assert shlex.split(" ".join(line.rstrip("\\") for line in lines)) == shlex.split(preview)


def _templates() -> list[tuple[str, str]]:
    """Every command a shipped pattern prints: (pattern, command template)."""
    out: list[tuple[str, str]] = []
    for pattern in load_patterns([]).patterns:
        texts: list[Any] = [pattern.remediation]
        for case in pattern.fix:
            texts.append(case.text)
            out += [(pattern.id, c) for c in case.commands]
        out += [(pattern.id, part) for t in texts for is_code, part in codespans.split(t)
                if is_code and is_command(part)]
    return out


def test_every_kubectl_a_pattern_prints_names_its_namespace() -> None:
    """The cluster is added to every command where templates are filled; the namespace is
    the template's to say, for every namespaced resource."""
    found = _templates()
    assert len(found) > 20
    for pattern, template in found:
        words = shell.split(template)
        assert words is not None, (pattern, template)
        for start in [i for i in range(len(words)) if shell.starts_kubectl(words, i)]:
            end = next((j for j in range(start + 1, len(words))
                        if isinstance(words[j], shell.Operator)), len(words))
            command = set(words[start:end])
            assert command & _CLUSTER_WIDE or "-n" in command, (pattern, template)
