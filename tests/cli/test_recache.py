"""triage/recache.py: the standard library's re compiled from code kept between runs must
be the pattern a plain compile gives; a damaged, foreign or wrong file is a plain compile.
Each case runs in its own interpreter (the hook replaces re's compiler for the process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import FIXTURES, ROOT

_PATTERNS = r"""
import re
PATTERNS = [
    ("abc+d", 0), (r"(?P<year>\d{4})-(\d\d)?", 0), (r"^\s*(\w+):", re.M),
    ("hello world", re.I), (r"a.b", re.S | re.I), (r" x  # comment", re.X),
    ("[^\x09\x0A\x0D\x20-\x7E\x85\xA0-\uD7FF\uE000-\uFFFD\U00010000-\U0010ffff]", 0),
    (rb"\x1b\[[0-9;]*[A-Za-z]", 0), ("(?i)ünïcode", 0), (r"(a)|(b)", re.A),
]
SAMPLES = ["abccd", "2024-05 x", "  key: v\nnext: w", "HELLO WORLD", "A\nB", "x", "\x07",
           "ÜNÏCODE", "b"]
"""

_PROBE = _PATTERNS + r"""
import json, sys
from triage.speed import recache
if sys.argv[1] == "on":
    recache.install()
out = []
for pattern, flags in PATTERNS:
    rx = re.compile(pattern, flags)
    found = []
    for s in SAMPLES:
        m = rx.search(s.encode() if isinstance(pattern, bytes) else s)
        found.append(None if m is None else [m.span(), [str(g) for g in m.groups()]])
    out.append([int(rx.flags), rx.groups, dict(rx.groupindex), found])
print(json.dumps({"out": out, "loaded": len(recache._CODE), "new": len(recache._NEW)}))
"""


def _run(tmp_path: Path, mode: str) -> dict[str, object]:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", _PROBE, mode], env=env, cwd=str(ROOT),
                          capture_output=True, text=True, timeout=60, check=True)
    result: dict[str, object] = json.loads(done.stdout)
    return result


def _code_files(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "cache" / "vllm-triage").glob("re-*.marshal"))


def test_kept_code_compiles_the_patterns_re_compiles(tmp_path: Path) -> None:
    plain = _run(tmp_path, "off")
    first = _run(tmp_path, "on")  # compiles, and keeps the code when it exits
    assert first["out"] == plain["out"]
    assert first["loaded"] == 0 and first["new"] >= len(plain["out"])  # type: ignore[operator]
    assert len(_code_files(tmp_path)) == 1
    second = _run(tmp_path, "on")  # every pattern from the kept code, none compiled
    assert second["out"] == plain["out"]
    assert second["new"] == 0 and second["loaded"] >= len(plain["out"])  # type: ignore[arg-type]


def test_a_damaged_or_wrong_file_is_a_plain_compile(tmp_path: Path) -> None:
    plain = _run(tmp_path, "off")
    _run(tmp_path, "on")
    [kept] = _code_files(tmp_path)
    kept.write_bytes(b"\x00not marshal")
    assert _run(tmp_path, "on")["out"] == plain["out"]
    # Code _sre refuses (another interpreter's, say) for every pattern: compiled instead.
    script = _PATTERNS + f"""
import marshal
marshal.dump({{(p, int(f)): (p, int(f), [999999], 0, {{}}, (None,)) for p, f in PATTERNS}},
             open({str(kept)!r}, "wb"))
"""
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
    assert _run(tmp_path, "on")["out"] == plain["out"]


def test_the_program_gives_the_same_report_from_kept_code(tmp_path: Path) -> None:
    """analyze run twice (the second from the kept code) and from another program (which
    does not install the hook) gives one report."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "NO_COLOR": "1",
           "PYTHONPATH": str(ROOT)}
    args = ["analyze", str(FIXTURES / "cuda-oom"), "-o", "json"]
    reports = [subprocess.run([sys.executable, "-m", "triage.cli", *args], env=env,
                              capture_output=True, text=True, timeout=120).stdout
               for _ in range(2)]
    assert _code_files(tmp_path)
    embedded = subprocess.run(
        [sys.executable, "-c", "import sys; from triage.cli import main; "
         f"sys.argv = ['vllm-triage', *{args!r}]; main()"],
        env=env, capture_output=True, text=True, timeout=120).stdout

    def stable(text: str) -> object:
        doc = json.loads(text)
        doc.pop("generated_at", None)
        return doc

    assert stable(reports[0]) == stable(reports[1]) == stable(embedded)


_MODULES = """
import atexit, runpy, sys
sys.argv = ["vllm-triage", *sys.argv[1:]]
atexit.register(lambda: print(" ".join(sorted(sys.modules)), file=sys.stderr))
runpy.run_module("triage.cli", run_name="__main__", alter_sys=True)
"""


def test_analyze_of_a_directory_to_stdout_imports_no_archive_or_temp_file_module(
        tmp_path: Path) -> None:
    """Before: tarfile, gzip, tempfile (with shutil, bz2, lzma and random) and traceback were
    imported by every analyze, for a bundle archive, a report file or --debug it had not."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    for _ in range(2):  # the first run writes the cache files (through tempfile)
        done = subprocess.run([sys.executable, "-c", _MODULES, "analyze",
                               str(FIXTURES / "cuda-oom"), "-o", "json"], env=env,
                              cwd=str(ROOT), capture_output=True, text=True, timeout=120)
    assert json.loads(done.stdout)["pods"]
    modules = set(done.stderr.split())
    unused = {"tarfile", "gzip", "zipfile", "tempfile", "shutil", "bz2", "lzma", "random",
              "traceback"}
    assert not modules & unused, sorted(modules & unused)


_DATACLASSES = r"""
import dataclasses, json, sys
from dataclasses import dataclass, field
from triage.speed import recache
if sys.argv[1] == "on":
    recache.install()

@dataclass(frozen=True)
class Frozen:
    a: int
    b: str = "x"
    c: list[int] = field(default_factory=list, compare=False)

@dataclass(order=True)
class Ordered:
    n: int
    m: float = 0.5
    hidden: int = field(default=3, init=False, repr=False)

@dataclass(eq=False)
class Plain:
    v: object = None

    def __post_init__(self) -> None:
        self.seen = True

out = []
f = Frozen(1)
out.append([repr(f), f == Frozen(1, "x", [9]), hash(f) == hash(Frozen(1)),
            repr(dataclasses.replace(f, b="y")), dataclasses.asdict(f)])
try:
    f.a = 2  # type: ignore[misc]
except dataclasses.FrozenInstanceError as exc:
    out.append(type(exc).__name__)
o = Ordered(2)
out.append([repr(o), o < Ordered(3), sorted([Ordered(5), o]) == [o, Ordered(5)], o.hidden,
            o == Ordered(2, 0.5)])
p = Plain()
out.append([p == Plain(), p.seen, repr(p)])
out.append([Frozen.__init__.__qualname__, Ordered.__eq__.__qualname__])
print(json.dumps({"out": out, "kept": len(recache._FUNCTIONS),
                  "new": len(recache._NEW_FUNCTIONS)}))
"""


def _dataclasses(tmp_path: Path, mode: str) -> dict[str, object]:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", _DATACLASSES, mode], env=env, cwd=str(ROOT),
                          capture_output=True, text=True, timeout=60, check=True)
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_dataclasses_made_from_kept_code_behave_as_compiled_ones(tmp_path: Path) -> None:
    plain = _dataclasses(tmp_path, "off")
    first = _dataclasses(tmp_path, "on")
    assert first["out"] == plain["out"] and first["new"]
    second = _dataclasses(tmp_path, "on")
    assert second["out"] == plain["out"]
    assert second["new"] == 0 and second["kept"]
    # A file another user could have written is not run: compiled again.
    [kept] = (tmp_path / "cache" / "vllm-triage").glob("dataclass-*.marshal")
    kept.chmod(0o666)
    third = _dataclasses(tmp_path, "on")
    assert third["out"] == plain["out"] and third["kept"] == 0 and third["new"]
