"""A command the table wraps to its width still runs when copied off the screen."""

from __future__ import annotations


def test_a_wrapped_command_still_runs_when_copied() -> None:
    """Commands wrap only between words, with a backslash: what is copied off the screen
    is the same command (a hard wrap inside the quoted JSON of -p would break it)."""
    import shlex

    from triage.writers.table import shell_lines

    command = ("kubectl patch deployment vllm-llama70b -n llm --type strategic -p "
               "'{\"spec\": {\"template\": {\"spec\": {\"containers\": [{\"name\": \"vllm\"}]}}}}'")
    lines = shell_lines(command, 40)
    assert len(lines) > 1
    assert all(line.endswith(" \\") for line in lines[:-1])
    # Only a word longer than a line may make one longer.
    assert all(len(line) <= 40 for line in lines
               if len(shlex.split(line.removesuffix(" \\"))) > 1)
    assert shlex.split("\n".join(lines).replace("\\\n", " ")) == shlex.split(command)
    assert shell_lines("kubectl delete pod -n llm x", 80) == ["kubectl delete pod -n llm x"]
