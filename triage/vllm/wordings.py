"""Log wordings: the texts vLLM, PyTorch, NCCL, huggingface_hub, uvicorn and the kubelet
print that the tool's own code reads, each written once, by name, in
``patterns/wordings.yaml`` beside the finding patterns.

The facts, the start-up parser (``triage.vllm.milestones``) and the selection of vLLM
pods ask for a wording by name (``regex("vllm_stats_line")``, or ``either(...)`` for a
line that may be any of several); a pattern's log leaf may name one too (``log:
{wording: nccl_system_error}``), so a text a pattern decides on and a fact measures
from is the same regex. Each wording carries what it means and where the real text comes
from (the software's source file, or the thread it was seen in).

A wording is a message, not the shape of a line: the kubelet's timestamp, vLLM's
level/date/file prefix, ``[rank0]:``, ANSI colours and tqdm's carriage returns are the
log engine's (``triage.logs``), and the shape of an error line in any program's log is
the root cause's (``triage.rules.evaluate``).

The facts build their log queries when they are imported, so the file is read then, once.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import regex as _regex
import yaml

from triage.safety import parsed
from triage.speed import lazyregex

# Every regex of a wording or a pattern file is compiled so: the `regex` module's
# version 1 (scoped inline flags, nested sets), ^ and $ at each line of a message.
REGEX_FLAGS = _regex.VERSION1 | _regex.MULTILINE
WORDINGS_FILE = "wordings.yaml"  # beside the patterns, in the shipped directory and a user's
_KEYS = ("name", "regex", "means", "source")
_NAME_START = frozenset("abcdefghijklmnopqrstuvwxyz")
_NAME_CHARS = _NAME_START | frozenset("0123456789_")


@dataclass(frozen=True, slots=True)
class Wording:
    """One text as the software prints it: its name, regex, meaning and source."""

    name: str
    regex: str
    means: str
    source: str
    origin: str = ""  # the file it was read from, as the user named it


class WordingError(ValueError):
    """A wordings file is malformed; the message names the file and the entry."""

    def __init__(self, source: str, where: str, problem: str) -> None:
        super().__init__(f"{source}: {where}: {problem}")
        self.source = source
        self.where = where
        self.problem = problem


@cache
def shipped_dir() -> Path:
    """The shipped patterns: the installed triage.builtin_patterns package, or the source tree."""
    # A data-only namespace package: find_spec knows where it lives, in a wheel
    # and in an editable install alike.
    try:
        spec = importlib.util.find_spec("triage.builtin_patterns")
    except (ImportError, ValueError):
        spec = None
    for location in (spec.submodule_search_locations or []) if spec else []:
        path = Path(location)
        if any(path.glob("*.yaml")):
            return path
    return Path(__file__).resolve().parent.parent.parent / "patterns"


def read(path: Path, origin: str | None = None) -> tuple[dict[str, Wording], list[WordingError]]:
    """The wordings of one file, by name, and what is wrong with the entries that were left
    out (a file that cannot be read or parsed is one error). Regexes are not compiled here:
    the shipped ones compile on first use (the tests compile every one)."""
    where = origin or str(path)
    try:
        content = parsed.read_text(path)
    except (OSError, UnicodeDecodeError, parsed.Refused) as exc:
        return {}, [WordingError(where, "(file)", f"unreadable: {exc}")]
    return _built(_check(content), where)


def _built(checked: dict[str, list[list[str]]], origin: str
           ) -> tuple[dict[str, Wording], list[WordingError]]:
    return ({name: Wording(name, rx, means, source, origin)
             for name, rx, means, source in checked["wordings"]},
            [WordingError(origin, at, problem) for at, problem in checked["problems"]])


def _check(content: str) -> dict[str, list[list[str]]]:
    """A wordings file's entries (name, regex, means, source) and its problems (where,
    what), as plain data."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        data = yaml.load(content, Loader=loader)  # a SafeLoader: no arbitrary objects
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        return {"wordings": [], "problems": [[
            f"line {mark.line + 1}" if mark is not None else "(file)",
            f"not valid YAML: {getattr(exc, 'problem', exc)}"]]}
    except RecursionError:
        return {"wordings": [], "problems": [["(file)", "nested too deeply"]]}
    try:  # an alias bomb is refused before anything walks it (triage.safety.parsed)
        parsed.count_values(data, "the file", parsed.MAX_VALUES_PER_FILE)
    except parsed.Refused as exc:
        return {"wordings": [], "problems": [["(file)", str(exc).removeprefix("the file: ")]]}
    if not isinstance(data, list):
        return {"wordings": [], "problems": [["(top)", "a wordings file is a list of entries "
                                              "with name, regex, means and source"]]}
    out: dict[str, list[str]] = {}
    problems: list[list[str]] = []
    for i, entry in enumerate(data):
        name = entry.get("name") if isinstance(entry, dict) else None
        at = name if isinstance(name, str) and name else f"[{i}]"
        if not isinstance(entry, dict):
            problems.append([at, "must be a mapping with name, regex, means and source"])
            continue
        unknown = sorted(set(entry) - set(_KEYS))
        missing = [k for k in _KEYS if not isinstance(entry.get(k), str) or
                   not entry[k].strip()]
        if unknown:
            problems.append([f"{at}.{unknown[0]}", "unknown key; expected " + ", ".join(_KEYS)])
        elif missing:
            problems.append([f"{at}.{missing[0]}", "must be a non-empty string"])
        elif at[0] not in _NAME_START or not set(at) <= _NAME_CHARS:
            problems.append([f"{at}.name", f"must be lower-case words joined by '_', got "
                                           f"{name!r}"])
        elif at in out:
            problems.append([f"{at}.name", "named twice in this file"])
        else:
            out[at] = [at, entry["regex"], entry["means"].strip(), entry["source"].strip()]
    return {"wordings": list(out.values()), "problems": problems}


@cache
def shipped() -> dict[str, Wording]:
    """The shipped wordings, read once (they are the installation's: a mistake in them is
    one, and the tests keep them right)."""
    path = shipped_dir() / WORDINGS_FILE
    found, errors = read(path, str(Path("patterns") / WORDINGS_FILE))
    if errors:
        raise errors[0]
    return found


def text(name: str) -> str:
    """The regex of a shipped wording, as written."""
    try:
        return shipped()[name].regex
    except KeyError:
        raise KeyError(f"no wording {name!r} in patterns/{WORDINGS_FILE}") from None


def regex(name: str) -> _regex.Pattern[str]:
    """A shipped wording, compiled on first use (as a pattern file's regex is)."""
    return lazyregex.compile(text(name), REGEX_FLAGS)


def either(*names: str) -> _regex.Pattern[str]:
    """A line that says any of the named wordings, in this order (each in a group of its
    own: a wording's inline flags stay its own; its groups keep their order)."""
    return lazyregex.compile("|".join(f"(?:{text(n)})" for n in names), REGEX_FLAGS)
