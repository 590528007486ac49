"""Every command the report prints, pasted into bash as a person pastes it.

The commands are taken from every output (the table, markdown as GitHub draws it,
HTML, the JSON's fix texts and commands, the --fix-dir files' comments) and run by
bash with a ``kubectl`` of the test's own on PATH that records its arguments and
does nothing. Each must name the cluster it is about (``--context``, ``--kubeconfig``),
its namespace and the patch file actually written; with names from a hostile bundle,
nothing but kubectl (and the ``grep`` / ``tail`` a command pipes to) may run.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import cmarkgfm
import yaml
from cmarkgfm.cmark import Options

from tests.cli.test_clusters import PINNED, clusters
from tests.conftest import FIXTURES, run_cli
from tests.support.fixturekit import rename_values
from triage.safety import codespans

RECORDER = """#!{python}
import json, os, sys
with open(os.environ["RECORD"], "a") as out:
    out.write(json.dumps({{"prog": os.path.basename(sys.argv[0]), "argv": sys.argv[1:]}}) + "\\n")
"""
# Verbs and resources that are not namespaced (a node), and the flag of every namespace.
_CLUSTER_WIDE = {"cordon", "uncordon", "drain", "node", "nodes", "-A", "--all-namespaces"}


def stubs(tmp_path: Path) -> Path:
    """A folder holding the only programs the pasted commands can find."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    for prog in ("kubectl", "grep", "tail"):
        path = folder / prog
        path.write_text(RECORDER.format(python=sys.executable))
        path.chmod(0o755)
    return folder


def paste(command: str, tmp_path: Path) -> list[dict[str, Any]]:
    """Run one command as bash runs a paste; what the stubs recorded."""
    record = tmp_path / "record.jsonl"
    record.unlink(missing_ok=True)
    run = subprocess.run(["/bin/bash", "-c", command], cwd=tmp_path, capture_output=True,
                         text=True, timeout=30,
                         env={"PATH": str(stubs(tmp_path)), "RECORD": str(record)})
    assert run.returncode == 0, (command, run.stderr)
    calls = [json.loads(line) for line in record.read_text().splitlines()] \
        if record.exists() else []
    assert calls and all(c["prog"] in ("kubectl", "grep", "tail") for c in calls), command
    return calls


# --- taking the commands out of each output -------------------------------------------------


def _kubectl_spans(text: str) -> list[str]:
    return [part for is_code, part in codespans.split(text)
            if is_code and part.startswith("kubectl ")]


def from_json(doc: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for card in doc["cards"]:
        fix = card["fix"] or {}
        out += fix.get("commands") or []
        out += _kubectl_spans(fix.get("text") or "")
    for pod in doc["pods"]:
        for f in pod["findings"]:
            out += _kubectl_spans(f.get("remediation") or "")
            out += _kubectl_spans((f.get("fix") or {}).get("text") or "")
    return out


class _Code(HTMLParser):
    """<code> outside <pre>, and <pre> blocks, as text."""

    def __init__(self) -> None:
        super().__init__()
        self.inline: list[str] = []
        self.blocks: list[str] = []
        self.stack: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack.append(tag)
        if tag == "pre":
            self.blocks.append("")
        elif tag == "code" and "pre" not in self.stack:
            self.inline.append("")

    def handle_endtag(self, tag: str) -> None:
        while self.stack and self.stack.pop() != tag:
            pass

    def handle_data(self, data: str) -> None:
        if "pre" in self.stack:
            self.blocks[-1] += data
        elif "code" in self.stack:
            self.inline[-1] += data


def _from_html(page: str) -> list[str]:
    parser = _Code()
    parser.feed(page)
    out = [c for c in parser.inline if c.startswith("kubectl ")]
    for block in parser.blocks:
        out += _shell_commands(html.unescape(block).splitlines())
    return out


def from_markdown(text: str) -> list[str]:
    """As GitHub draws the ticket (cmark-gfm)."""
    return _from_html(cmarkgfm.github_flavored_markdown_to_html(
        text, options=Options.CMARK_OPT_UNSAFE))


def from_html(page: str) -> list[str]:
    return _from_html(page)


def _shell_commands(lines: list[str]) -> list[str]:
    """Commands in lines: each starts with kubectl, goes on while a line ends with a
    backslash or a pipe."""
    out: list[str] = []
    current: list[str] | None = None
    for line in lines:
        text = line.strip()
        if current is None and text.startswith("kubectl "):
            current = []
        if current is None:
            continue
        current.append(line)
        if not (text.endswith("\\") or text.endswith("|")):
            out.append("\n".join(current))
            current = None
    return out


def from_table(text: str) -> list[str]:
    lines = []
    for line in text.splitlines():
        # the label of a card's command, and the box a pod's part is drawn in
        lines.append(re.sub(r"^(\s*)run:\s+", r"\1", line))
    return _shell_commands(lines)


def from_fix_dir(folder: Path) -> dict[str, list[str]]:
    return {p.name: [line.removeprefix("#   ") for line in p.read_text().splitlines()
                     if line.startswith("#   kubectl ")] for p in sorted(folder.iterdir())}


def sections(text: str, heads: dict[str, str]) -> dict[str, str]:
    """Each cluster's part of a several-cluster output (head: the line that opens it)."""
    starts = sorted((text.index(head), name) for name, head in heads.items())
    return {name: text[at:(starts[i + 1][0] if i + 1 < len(starts) else len(text))]
            for i, (at, name) in enumerate(starts)}


# --- what each kubectl must say ---------------------------------------------------------------


def check_call(argv: list[str], context: str, kubeconfig: Path, files: set[Path]) -> None:
    assert argv[:4] == ["--kubeconfig", str(kubeconfig), "--context", context], argv
    words = set(argv)
    if not words & _CLUSTER_WIDE:
        assert "-n" in words, argv
    if "--patch-file" in words:
        named = Path(argv[argv.index("--patch-file") + 1])
        assert named in files or any(named.name == f.name for f in files), (named, files)


def test_every_printed_command_names_its_cluster_namespace_and_file(tmp_path: Path) -> None:
    """Three contexts, the current one not scanned: every command of every output of a
    scan of the two others acts on the cluster it is about, in its namespace, with the
    patch file --fix-dir wrote."""
    fixdir = tmp_path / "fixes"
    with clusters(tmp_path, {"gpu-central": "well-sized-healthy", "gpu-east": "cuda-oom",
                             "gpu-west": "gpu-hardware-error"}) as kc:
        both = ("scan", "--kubeconfig", str(kc), "--context", "gpu-east", "--context",
                "gpu-west")
        doc = run_cli(*both, "-o", "json", "--fix-dir", str(fixdir), env=PINNED).json()
        markdown = run_cli(*both, "-o", "markdown", env=PINNED).stdout
        page = run_cli(*both, "-o", "html", env=PINNED).stdout
        table = run_cli(*both, env={**PINNED, "COLUMNS": "200"}).stdout
        alone = run_cli("scan", "--kubeconfig", str(kc), "--context", "gpu-west", "-o",
                        "json", env=PINNED).json()
    files = set(fixdir.iterdir())
    assert {f.name for f in files} == {"gpu-east.llm.deployment.vllm-qwen.patch.yaml",
                                       "gpu-west.llm.deployment.vllm-qwen32b.patch.yaml"}
    found: dict[str, list[str]] = {"gpu-east": [], "gpu-west": []}
    for section in doc["clusters"]:
        found[section["context"]] += from_json(section["report"])
    found["gpu-west"] += from_json(alone)
    for name, part in sections(markdown, {c: f"## Cluster `{c}`" for c in found}).items():
        found[name] += from_markdown(part)
    for name, part in sections(page, {c: f'<section id="cluster-{c}">' for c in found}).items():
        found[name] += from_html(part)
    for name, part in sections(table, {c: f"==== cluster {c} " for c in found}).items():
        found[name] += from_table(part)
    for file_name, commands in from_fix_dir(fixdir).items():
        found[file_name.split(".")[0]] += commands
    # Each output gave its commands: the patch's in gpu-east, cordon and delete in gpu-west.
    assert sum("--patch-file" in c for c in found["gpu-east"]) >= 2 * 4
    assert any(" cordon " in c for c in found["gpu-west"])
    assert any(" delete pod " in c for c in found["gpu-west"])
    calls = 0
    for context, commands in found.items():
        for command in dict.fromkeys(commands):
            for call in paste(command, tmp_path):
                if call["prog"] == "kubectl":
                    try:
                        check_call(call["argv"], context, kc, files)
                    except AssertionError as exc:
                        raise AssertionError(f"{command!r}: {exc}") from None
                    calls += 1
    assert calls >= 15


# --- hostile names ----------------------------------------------------------------------------

HOSTILE = {
    # name in the fixture -> a name a bundle can carry: each would run something if a
    # command did not quote it (every one creates a file named "ran" in the folder)
    "gke-inference-a3-pool-0c4d1e2f-r7vd": "gpu-node-$(touch ran)`touch ran`",
    "vllm-llama70b-2c1b0a9f8e-d4f6g": "--all;touch ran;'\";touch ran;#",
    "vllm-llama70b": "vllm-llama70b'$(touch ran)'\u2028metadata: {annotations: {x: y}}",
    "llm": "llm;touch ran\ntouch ran",
    "vllm": "vllm`touch ran`\u0085|touch ran",
}


def test_names_from_a_bundle_never_run_when_a_command_is_pasted(tmp_path: Path) -> None:
    """A bundle's names are data: pasted from every output, each command runs kubectl
    (or the grep it pipes to) with each name as one argument, and nothing else."""
    root = tmp_path / "bundle"
    shutil.copytree(FIXTURES / "gpu-hardware-error", root)
    rename_values(root, HOSTILE)
    incident = yaml.safe_load((root / "incident.yaml").read_text())
    incident["context"] = "prod$(touch ran)"
    (root / "incident.yaml").write_text(yaml.safe_dump(incident))
    fixdir = tmp_path / "fixes"
    doc = run_cli("analyze", str(root), "-o", "json", "--fix-dir", str(fixdir)).json()
    commands = from_json(doc)
    commands += from_markdown(run_cli("analyze", str(root), "-o", "markdown").stdout)
    commands += from_html(run_cli("analyze", str(root), "-o", "html").stdout)
    commands += from_table(run_cli("analyze", str(root), env={"COLUMNS": "200"}).stdout)
    for listed in from_fix_dir(fixdir).values() if fixdir.exists() else ():
        commands += listed
    assert any(" cordon " in c for c in commands) and any(" delete pod " in c for c in commands)
    work = tmp_path / "paste"
    work.mkdir()
    for command in dict.fromkeys(commands):
        calls = paste(command, work)
        assert not (work / "ran").exists(), command
        for call in calls:
            if call["prog"] == "kubectl":
                argv = call["argv"]
                assert argv[:2] == ["--context", "prod$(touch ran)"], argv
                assert not any(a.startswith("-") and "touch" in a for a in argv), argv
    cordon = next(c["argv"] for command in commands if " cordon " in command
                  for c in paste(command, work) if c["prog"] == "kubectl")
    assert cordon[-1] == HOSTILE["gke-inference-a3-pool-0c4d1e2f-r7vd"]
    delete = next(c["argv"] for command in commands if " delete pod " in command
                  for c in paste(command, work) if c["prog"] == "kubectl")
    # A name kubectl would read as a flag is shown, never passed as one.
    assert delete[-1] == "<U+002D>-all;touch ran;'\";touch ran;#"
    assert delete[delete.index("-n") + 1] == "llm;touch ran<U+000A>touch ran"
