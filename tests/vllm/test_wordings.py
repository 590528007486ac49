"""Each log wording is written once: in a pattern file, or in patterns/wordings.yaml, where
the code and the patterns name it.

A regex literal in ``triage/`` that repeats one of the pattern files' or the wordings file's
is a wording with two homes; the regex literals left in the code over log (or event) text
are the lines' structure, each listed here with why it is not a wording.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import regex
import yaml

from tests.conftest import ROOT
from triage.rules.language import EventLeaf, FactLeaf, FieldLeaf, LogLeaf, RootCauseLeaf, walk
from triage.rules.loader import DATA_FILES, REGEX_FLAGS, load_patterns
from triage.vllm import rootcause, wordings
from triage.vllm.wordings import WORDINGS_FILE

TRIAGE = ROOT / "triage"
PATTERN_DIR = ROOT / "patterns"
_FUNCTIONS = {"compile", "search", "match", "fullmatch", "findall", "finditer", "sub", "subn",
              "split"}

# The regex literals left in the code that reads what software prints (the modules that
# read log lines, the wordings, or a log's head), and why each is no wording. The log
# engine's own (triage/logs/) are a line's structure, every one: the kubelet's timestamp,
# vLLM's level/date/file prefix, [rank0]:, ANSI and control bytes, tqdm's carriage
# returns and bars after their description, line ends, and the syntax of the regexes it runs.
_SPEC = "what the pod's spec says (an image, a command line, a label), not a log"
ALLOWED: dict[str, dict[str, str]] = {
    "triage/facts/failures.py": {
        r"\[[Rr]ank ?(\d+)\]": "who printed the line: torch.distributed's [rank0]: prefix "
                               "and the [Rank N] tag of its messages",
        r"\b(?:Worker_|VllmWorker )TP(\d+)": "who printed the line: vLLM's process name in "
                                              "its prefix (0.11's Worker_TP1, 0.10's "
                                              "VllmWorker TP1)",
        r"\brank=(\d+)": "who printed the line: (VllmWorker rank=N pid=M) in vLLM's prefix",
        r"\S+:\d+:\d+ \[(\d+)\] ": "who printed the line: NCCL's own prefix, host:pid:tid "
                                   "[local GPU]",
    },
    "triage/facts/timeline.py": {
        ".": "any line: its level (ERROR, CRITICAL) decides",
    },
    "triage/facts/kubernetes.py": {
        r"^spec\.(?:init|ephemeral)?[cC]ontainers\{(?P<name>[^}]*)\}: ": "an event's "
        "structure: the container's field path in front of its message",
        r"spec\.(?:init|ephemeral)?[cC]ontainers\{(?P<name>[^}]*)\}": "an event's structure: "
        "involvedObject.fieldPath",
        r"(\d+(?:\.\d+)?)(h|ms|us|µs|ns|m|s)": "a Go duration's format (3m12.456s)",
        r"^(\d+(?:\.\d+)?)([KMGTPE]i?|[kmgtpe]?)$": "a Kubernetes quantity's format",
    },
    "triage/rules/evaluate.py": {
        r" line \d+> ": "the tool's own evidence format (the matched line's marker)",
        r"^((?:previous log|log) \([^)]*\)) line (\d+)([> ]) (.*)$": "the tool's own "
        "evidence format: which log, the line's number, its marker, the line as printed",
        r"^event |^pod \S+ condition \w+=": "the tool's own evidence format: an event's and a "
                                            "pod condition's evidence",
    },
    "triage/vllm/rootcause.py": {
        rootcause.ERROR_SHAPE.pattern: "the shapes of an error line in any program's log (a "
        "Python exception or warning, pydantic's header and error lines, argparse's error, "
        "C++'s terminate and what(), a fatal signal, the shell's report of one, NCCL's WARN): "
        "what a line says about a failure; its named groups are read by the code that ranks "
        "them",
        rootcause.NOT_A_MESSAGE.pattern: "the shapes of a traceback's own lines (its header, "
        "frames, chaining sentences, carets, the source echo) and argparse's usage text: "
        "never the cause",
    },
    "triage/vllm/selection.py": {
        r"\(APIServer pid=\d+\)|\((?:EngineCore|VllmWorker|VllmWorkerProcess|Worker_TP)\w*"
        r"(?:[ \t]+(?:rank=\d+|TP\d+(?:[_ \t]EP\d+)?))?[ \t]+pid=\d+":
            "vLLM's log format: the names of its processes in the prefix of their lines",
        r"(?i)(^|[\s/])vllm\s+serve\b|vllm\.entrypoints\.openai\.api_server|"
        r"vllm\.entrypoints\.api_server|(^|\s)vllm$|huggingfaceserver.*--backend[= ]vllm": _SPEC,
        r"(?i)(^|/)huggingfaceserver(:|@|$)": _SPEC,
        r"--backend[= ](?:huggingface|hf)\b": _SPEC,
        r"(?i)router|gateway|proxy|exporter|triage": _SPEC,
        r"(?i)router|gateway|proxy|exporter|sidecar|fluent|shipper|agent\b": _SPEC,
        r"(?i)(?:^|[-_./])vllm(?:$|[-_./])": _SPEC,
        r"(?i)router|gateway|proxy|exporter|bench|loadgen|client|triage": _SPEC,
        r"^llminferenceservice-workload": _SPEC,
        r"^(?:prefill|decode|both|prefill-decode)$": _SPEC,
        r"^true$": _SPEC,
    },
}


def _string(node: ast.AST, constants: dict[str, str]) -> str | None:
    """The text of a string expression: a literal, literals joined with +, or a module's
    string constant; None when it is computed."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
        value = node.value
        return value if isinstance(value, str) else value.decode("latin-1")
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _string(node.left, constants), _string(node.right, constants)
        return left + right if left is not None and right is not None else None
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    return None


def _is_regex_call(func: ast.AST) -> bool:
    """re.X / regex.X (compile, search, ...), lazyregex.compile, Query(...), LazyRegex(...)."""
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return (func.value.id in ("re", "regex") and func.attr in _FUNCTIONS) or \
            (func.value.id == "lazyregex" and func.attr == "compile")
    return isinstance(func, ast.Name) and func.id in ("Query", "LazyRegex")


def code_regexes(path: Path) -> Iterator[tuple[int, str]]:
    """Each regex literal of a module: the first argument of a regex call, as text."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    constants: dict[str, str] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and \
                isinstance(statement.targets[0], ast.Name):
            text = _string(statement.value, constants)
            if text is not None:
                constants[statement.targets[0].id] = text
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and _is_regex_call(node.func):
            text = _string(node.args[0], constants)
            if text is not None:
                yield node.lineno, text


def _top_level(rx: str) -> list[str]:
    """A regex's alternatives at its top level (outside groups and classes)."""
    out, depth, start, i, in_class = [], 0, 0, 0, False
    while i < len(rx):
        ch = rx[i]
        if ch == "\\":
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
            i += 2 if rx[i + 1:i + 2] in ("]", "^") else 1
            continue
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            out.append(rx[start:i])
            start = i + 1
        i += 1
    return [*out, rx[start:]]


def normalised(rx: str) -> str:
    """What differs in spelling only: a leading inline flag group, a (?:...) around it all,
    white space around it."""
    rx = re.sub(r"^\(\?[aiLmsux]+\)", "", rx.strip())
    while rx.startswith("(?:") and rx.endswith(")") and len(_top_level(rx)) == 1 and \
            _top_level(rx[3:-1]) and _balanced(rx[3:-1]):
        rx = rx[3:-1]
    return rx


def _balanced(rx: str) -> bool:
    depth, i = 0, 0
    while i < len(rx):
        if rx[i] == "\\":
            i += 2
            continue
        depth += {"(": 1, ")": -1}.get(rx[i], 0)
        if depth < 0:
            return False
        i += 1
    return depth == 0


def _says_words(rx: str) -> bool:
    """A regex names text when a word of it is written out (`.` or `\\d+` name none)."""
    return re.search(r"[A-Za-z]{3}", re.sub(r"\\.", "", rx)) is not None


def spellings(rx: str) -> set[str]:
    """The forms compared: the whole regex and each of its top-level alternatives that
    names text, normalised."""
    whole = normalised(rx)
    return {s for s in {whole, *(normalised(a) for a in _top_level(whole))} if _says_words(s)}


def _pattern_regexes() -> dict[str, str]:
    """Every regex of the shipped pattern files (log leaves, event reason and message,
    root-cause skips, regex comparisons) -> the file it is in."""
    out: dict[str, str] = {}
    for p in load_patterns().patterns:
        conds = [p.when, *p.show, *(c for c in (p.warn_when, p.escalate.when if p.escalate
                                                 else None) if c is not None),
                 *(case.when for case in p.fix if case.when is not None)]
        for cond in conds:
            for leaf in walk(cond, into_not=True):
                found: list[Any] = []
                if isinstance(leaf, LogLeaf):
                    found.append(leaf.regex)
                elif isinstance(leaf, EventLeaf):
                    found += [rx for rx in (leaf.reason, leaf.message) if rx is not None]
                elif isinstance(leaf, RootCauseLeaf):
                    found += list(leaf.skip)
                elif isinstance(leaf, (FieldLeaf, FactLeaf)) and \
                        leaf.comparison is not None and leaf.comparison.op == "regex":
                    found.append(leaf.comparison.value)
                for rx in found:
                    out.setdefault(rx.pattern, p.source)
    return out


def _written_in_pattern_files() -> Iterator[tuple[str, str]]:
    """Each regex written out in a pattern file (not named as a wording), with its file."""
    def strings(node: Any) -> Iterator[str]:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "examples":
                    continue
                if key in ("regex", "message", "reason") and isinstance(value, str):
                    yield value
                elif key == "skip" and isinstance(value, list):
                    yield from (s for s in value if isinstance(s, str))
                else:
                    yield from strings(value)
        elif isinstance(node, list):
            for value in node:
                yield from strings(value)

    for path in sorted(PATTERN_DIR.glob("*.yaml")):
        if path.name not in DATA_FILES:
            for rx in strings(yaml.safe_load(path.read_text(encoding="utf-8"))):
                yield rx, path.name


def _code_files() -> list[Path]:
    return sorted(TRIAGE.rglob("*.py"))


def _reads_texts(path: Path) -> bool:
    """A module that reads what software prints: log lines (a Query, a LogLine), the
    wordings, or a log's head (the selection)."""
    source = path.read_text(encoding="utf-8")
    imported = re.findall(r"^from triage\.logs import ([^\n(]+)", source, re.MULTILINE)
    return path.name == "selection.py" or "from triage.vllm import wordings" in source or \
        any(re.search(r"\b(?:Query|LogLine|LogIndex|Hit)\b", names) for names in imported)


def test_no_regex_is_written_both_in_the_code_and_in_the_patterns_or_wordings() -> None:
    """NCCL's watchdog text was in patterns/nccl-failure.yaml and again in
    triage/facts/failures.py; now the fact and the pattern name one wording."""
    shipped: dict[str, str] = {}
    for rx, where in _pattern_regexes().items():
        for spelling in spellings(rx):
            shipped.setdefault(spelling, where)
    for w in wordings.shipped().values():
        for spelling in spellings(w.regex):
            shipped.setdefault(spelling, f"{WORDINGS_FILE} ({w.name})")
    twice = [f"{path.relative_to(ROOT)}:{line}: {spelling!r} is also in {shipped[spelling]}"
             for path in _code_files() for line, rx in code_regexes(path)
             for spelling in spellings(rx) if spelling in shipped]
    assert twice == [], "\n".join(twice)


def test_every_regex_left_in_the_code_over_log_text_is_structure() -> None:
    """The regex literals of the modules that read log lines, events or a log's head are
    each on the allow-list, with why they are no wording; and the list names no literal that
    is gone."""
    found: dict[str, set[str]] = {}
    for path in _code_files():
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("triage/logs/") or not _reads_texts(path):
            continue
        found[rel] = {rx for _, rx in code_regexes(path)}
    unlisted = [f"{rel}: {rx!r}" for rel, rxs in sorted(found.items()) for rx in sorted(rxs)
                if rx not in ALLOWED.get(rel, {})]
    assert unlisted == [], ("a wording belongs in patterns/wordings.yaml; structure goes on "
                            "the allow-list with its reason:\n" + "\n".join(unlisted))
    stale = [f"{rel}: {rx!r}" for rel, rxs in ALLOWED.items() for rx in rxs
             if rx not in found.get(rel, set())]
    assert stale == [], "\n".join(stale)
    assert all(reason.strip() for rxs in ALLOWED.values() for reason in rxs.values())


def test_a_pattern_file_names_a_wording_rather_than_repeat_it() -> None:
    by_spelling = {normalised(w.regex): w.name for w in wordings.shipped().values()}
    repeated = [f"{where}: {rx!r} is wording {by_spelling[normalised(rx)]}"
                for rx, where in _written_in_pattern_files() if normalised(rx) in by_spelling]
    assert repeated == [], "\n".join(repeated)


def test_the_wordings_file_is_well_formed_and_every_regex_compiles() -> None:
    found, errors = wordings.read(PATTERN_DIR / WORDINGS_FILE)
    assert errors == []
    assert {n: (w.regex, w.means, w.source) for n, w in found.items()} == \
        {n: (w.regex, w.means, w.source) for n, w in wordings.shipped().items()}
    for w in found.values():
        regex.compile(w.regex, REGEX_FLAGS)
        assert w.means and w.source, w.name


def test_every_wording_is_read_by_the_code_or_a_pattern() -> None:
    """A wording nothing reads is not kept; a name the code asks for exists."""
    named: set[str] = set()
    asked: list[str] = []
    for path in _code_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                named.add(node.value)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    isinstance(node.func.value, ast.Name) and node.func.value.id == "wordings":
                asked += [a.value for a in node.args if isinstance(a, ast.Constant)]
    for path in PATTERN_DIR.glob("*.yaml"):
        named.update(re.findall(r"\bwording: *([a-z][a-z0-9_]*)", path.read_text()))
    shipped = wordings.shipped()
    assert sorted(set(shipped) - named) == []
    assert sorted(set(asked) - set(shipped)) == []


def test_the_fact_and_the_pattern_read_the_same_watchdog_wording() -> None:
    from triage.facts.failures import _NCCL_KINDS

    text = wordings.text("nccl_watchdog_timeout")
    nccl = load_patterns().by_id()["nccl-failure"]
    leaves = [leaf for leaf in walk(nccl.when) if isinstance(leaf, LogLeaf)]
    assert text in [leaf.regex.pattern for leaf in leaves]
    assert dict(_NCCL_KINDS)["collective timeout"].regex.pattern == text


def _pattern(tmp: Path, name: str, log_leaf: str) -> None:
    (tmp / f"{name}.yaml").write_text(
        f"id: {name}\nseverity: warning\ntitle: t\nstep: 2\nremediation: r\n"
        f"when:\n  log: {log_leaf}\n")


def test_a_users_pattern_may_name_a_wording(tmp_path: Path) -> None:
    _pattern(tmp_path, "my-nccl", "{wording: nccl_system_error, stream: previous}")
    loaded = load_patterns([tmp_path])
    assert loaded.errors == ()
    leaf = loaded.by_id()["my-nccl"].when
    assert isinstance(leaf, LogLeaf) and leaf.stream == "previous"
    assert leaf.regex.pattern == wordings.text("nccl_system_error")


@pytest.mark.parametrize(("leaf", "where", "problem"), [
    ("{wording: no_such_text}", "when.log.wording", "unknown wording 'no_such_text'"),
    ("{wording: nccl_system_error, regex: x}", "when.log.wording", "not both"),
    ("{stream: previous}", "when.log.regex", "must be a regular expression string"),
])
def test_a_log_leaf_naming_no_wording_it_may_is_an_error(tmp_path: Path, leaf: str,
                                                        where: str, problem: str) -> None:
    _pattern(tmp_path, "bad-leaf", leaf)
    errors = load_patterns([tmp_path]).errors
    assert [(e.where, problem in e.problem) for e in errors] == [(where, True)], errors


def test_a_users_wordings_file_adds_names_but_replaces_no_shipped_one(tmp_path: Path) -> None:
    """--patterns DIR: its wordings.yaml merges over the shipped one for new names; a
    shipped name is refused (the facts read it as shipped), and a bad regex is an error."""
    (tmp_path / WORDINGS_FILE).write_text(
        "- {name: my_text, regex: 'flux capacitor overheated', means: m, source: s}\n"
        "- {name: nccl_system_error, regex: 'something else', means: m, source: s}\n"
        "- {name: broken_text, regex: '(unclosed', means: m, source: s}\n")
    _pattern(tmp_path, "my-flux", "{wording: my_text}")
    loaded = load_patterns([tmp_path])
    assert sorted(e.where for e in loaded.errors) == ["broken_text.regex",
                                                      "nccl_system_error.name"]
    assert loaded.by_id()["my-flux"].when.regex.search("the flux capacitor overheated")
    # the shipped text stands for every pattern that names it
    shm = [leaf for leaf in walk(loaded.by_id()["shm-too-small"].when)
           if isinstance(leaf, LogLeaf) and "ncclSystemError" in leaf.regex.pattern]
    assert [leaf.regex.pattern for leaf in shm] == [wordings.text("nccl_system_error")]


def test_data_files_beside_the_patterns_are_not_read_as_patterns(tmp_path: Path) -> None:
    (tmp_path / "checklist.yaml").write_text("steps: {1: Something}\n")
    (tmp_path / WORDINGS_FILE).write_text("[]\n")
    loaded = load_patterns([tmp_path])
    assert loaded.errors == () and loaded.checklist.titles[1] == "Something"


def test_a_malformed_wordings_file_says_where(tmp_path: Path) -> None:
    path = tmp_path / WORDINGS_FILE
    path.write_text("- {name: Bad-Name, regex: x, means: m, source: s}\n"
                    "- {name: no_source, regex: x, means: m}\n"
                    "- {name: extra, regex: x, means: m, source: s, flags: i}\n"
                    "- {name: twice, regex: x, means: m, source: s}\n"
                    "- {name: twice, regex: y, means: m, source: s}\n")
    found, errors = wordings.read(path)
    assert list(found) == ["twice"]
    assert [e.where for e in errors] == ["Bad-Name.name", "no_source.source", "extra.flags",
                                         "twice.name"]
    path.write_text("- {name: [\n")
    assert [e.problem.startswith("not valid YAML") for e in wordings.read(path)[1]] == [True]


def test_composed_wordings_keep_their_groups_and_their_own_flags() -> None:
    """either() puts each wording in a group of its own: a wording's inline flags stay its
    own and its groups keep their order (VERSION reads major and minor from either)."""
    both = wordings.either("vllm_api_server_version", "vllm_engine_init")
    m = both.search("Initializing a V1 LLM engine (v0.10.1.1) with config: ...")
    assert m is not None and m.groups() == (None, None, "0", "10")
    download = wordings.either("hub_download_progress", "vllm_load_start")
    assert download.search("FETCHING 4 FILES") and not download.search("STARTING TO LOAD MODEL")
