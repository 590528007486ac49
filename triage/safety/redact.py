"""Masking of credentials in everything the tool prints or writes.

Reports go into tickets. The collector never reads Secret objects; this
module masks what can still leak through pod specs, logs, events, metrics
and error messages: Hugging Face and other API tokens, bearer tokens and
``Authorization`` headers, passwords in URLs, cloud keys, private key blocks
(PEM and PGP, whole or cut), and the values of environment variables whose
names say they are secret.

Where it runs: on what leaves the tool, not on everything read. API objects
get the structural pass (``redact_object``: env values by name, the value
after a secret flag) when they are read, because that needs their shape;
log and metrics text is redacted where it leaves: every string of a report
(``triage.report.build``), every member of a bundle (``collect``), every line
on stderr. A bundle's members are therefore not redacted again when loaded.

Cost: every rule is linear in its input (possessive or bounded quantifiers,
and a rule whose match starts with a run of some characters only starts
where that run starts); ``tests/safety/test_redaction_linear.py`` proves it on
adversarial input for each rule. A cheap literal prefilter finds the lines
that can hold a secret at all, and only those go through the rules. On top
of that, each line has a time bound: a line that cannot be checked in time
is masked whole (it never leaks because it was slow).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from triage.speed.lazyregex import LazyRegex

MASK = "[REDACTED]"
# Written into a bundle's manifest: a bundle redacted with these rules is not
# redacted again when it is loaded.
REDACTION_VERSION = "vllm-triage/redact/v2"
# A line the rules could not finish within the time bound is masked whole.
UNCHECKED = "[REDACTED: line not checked for credentials in time]"
LINE_TIMEOUT_S = 0.5

_SECRET_NAME = LazyRegex(
    r"(?i)(token(?![a-z])|secret|passw(or)?d|passwd|api[_-]?key|access[_-]?key|private[_-]?key|"
    r"credential|auth(?!or)|session[_-]?key|signature|cookie|(?<![a-z])dsn(?![a-z])|pgpass|"
    r"(?<![a-z])pass(?![a-z])|(?<![a-z])pwd(?![a-z])|(?<![a-z])key(?![a-z])|encryption)", 0)

# Words that make a key, flag or variable name a secret's name in text.
_KEY_QUALIFIERS = (r"(?:api|access|secret|private|encryption|signing|openai|subscription|master|"
                   r"account|client|service|shared|auth|license|storage|app|admin|ssh|gpg|pgp|"
                   r"hf|db|root|session|sas)")
_SECRET_WORDS = (r"(?:token(?![a-z])|secret|passw(?:or)?d|pgpass|(?<![a-z])pass(?![a-z])|"
                 r"(?<![a-z])pwd(?![a-z])|" + _KEY_QUALIFIERS + r"[_-]?key(?![a-z])|"
                 r"(?<![a-z])dsn(?![a-z])|credentials?)")

_SECRET_FLAG = LazyRegex(r"(?i)--?[\w-]{0,60}" + _SECRET_WORDS + r"[\w-]{0,40}", 0)

# Spaces around "=" or ":" are bounded: "password:" and 150,000 spaces must
# cost what any other line of that length costs (it used to be quadratic).
_SP = r"[ \t]{0,16}+"
# A quote, maybe escaped (a JSON document inside a JSON string: \"password\": \"...\").
_Q = r"(?:\\{0,3}[\"'])?+"

def _lazy(pattern: str) -> LazyRegex:
    return LazyRegex(pattern, 0)  # as regex.compile(pattern), on first use


def _has(*literals: str) -> Callable[[str], bool]:
    return lambda low: any(literal in low for literal in literals)


# Every name _SECRET_WORDS matches holds one of these.
_SECRET_IN = _has("token", "secret", "pass", "pwd", "key", "dsn", "credential")


def _query(low: str) -> bool:
    return "=" in low and ("?" in low or "&" in low or ";" in low)


def _always(_low: str) -> bool:
    return True


# (what the lower-cased text must hold for the rule to match at all, pattern,
# replacement). Group 1, where present, is kept: it is the label ("Authorization:
# Bearer ", "password=") that tells a reader what was there. A rule whose literal is
# not in a text is neither compiled nor run on it (most of them, for most texts).
_GATED_RULES: list[tuple[Callable[[str], bool], Any, str]] = [
    # A command-line flag that names a secret, then its value: --api-key VALUE,
    # --hf-token 'VALUE' (--api-key=VALUE is the KEY=value rule below).
    (_SECRET_IN, _lazy(r"(?i)((?<![\w-])--?(?=[a-z0-9])[\w-]{0,60}?" + _SECRET_WORDS
                       + r"[\w-]{0,40}+[ \t]{1,16}+)([\"']?)(?!-)(?!\[REDACTED\])[^\s\"']++\2"),
     r"\1\2" + MASK + r"\2"),
    # 'api_key': ['v1', 'v2'] -- vLLM prints list-valued args this way.
    (_SECRET_IN, _lazy(r"(?i)(" + _SECRET_WORDS + r"[\w.-]{0,60}+" + _Q + _SP + r"[=:]" + _SP
                       + r")\[(?!\s{0,16}+\]|REDACTED\]|'\[REDACTED\]'\])[^\]\r\n]{0,512}+\]"),
     r"\1['" + MASK + "']"),
    # An env list written as JSON inside a string (an annotation, a ConfigMap):
    # {"name": "DB_PASSWORD", "value": "..."}, escaped or not.
    (_SECRET_IN, _lazy(r"(?i)(" + _Q + r"name" + _Q + _SP + r":" + _SP + _Q
                       + r"[\w.-]{0,60}?" + _SECRET_WORDS + r"[\w.-]{0,60}+" + _Q + _SP + r","
                       + _SP + _Q + r"value" + _Q + _SP + r":" + _SP + _Q + r")"
                       r"(?!\[REDACTED\])[^\"'\\\r\n]{1,4096}+"), r"\1" + MASK),
    # Tokens with a recognisable shape. Each starts only where its run of
    # characters starts, so "sk-sk-sk-..." is one attempt, not one per "sk-".
    (_has("hf_"), _lazy(r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{20,}+"), MASK),  # Hugging Face
    (_has("api_org_"), _lazy(r"(?<![A-Za-z0-9_])api_org_[A-Za-z0-9]{20,}+"), MASK),
    (_has("authorization"),
     _lazy(r"(?i)(\bauthorization" + _Q + _SP + r"[:=]" + _SP + r"[\"']?+"
           r"(?:(?:bearer|basic|token|negotiate|digest)[ \t]{1,16}+)?+)"
           r"(?!\[REDACTED\])[^\s\"',}]++"), r"\1" + MASK),
    (_has("bearer"),
     _lazy(r"(?i)(\bbearer[ \t]{1,16}+)(?!\[REDACTED\])[A-Za-z0-9._~+/=-]{8,}+"),
     r"\1" + MASK),
    # user:password@ in a URL; matching from "://" keeps this linear.
    (_has("://"), _lazy(r"(://[^/\s:@]{1,256}+:)(?!\[REDACTED\])[^@\s/]{1,1024}+(@)"),
     r"\1" + MASK + r"\2"),
    # A long user name alone is a key (Sentry DSNs, git https://TOKEN@host).
    (_has("://"), _lazy(r"(://)[A-Za-z0-9_.~+-]{16,256}+(@)"), r"\1" + MASK + r"\2"),
    (_has("akia", "asia"),  # AWS
     _lazy(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Za-z0-9])"), MASK),
    (_has("aiza"),  # Google
     _lazy(r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])"), MASK),
    (_has("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),  # GitHub
     _lazy(r"(?<![A-Za-z0-9_])gh[pousr]_[A-Za-z0-9]{30,}+"), MASK),
    (_has("github_pat_"), _lazy(r"(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9_]{40,}+"), MASK),
    (_has("sk-"),  # OpenAI
     _lazy(r"(?<![A-Za-z0-9_-])sk-(?:proj-|ant-)?+[A-Za-z0-9_-]{20,}+"), MASK),
    (_has("xox"), _lazy(r"(?<![A-Za-z0-9_-])xox[abposr]-[A-Za-z0-9-]{10,}+"), MASK),  # Slack
    (_has("eyj"),  # JWT
     _lazy(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]{8,}+"
           r"\.[A-Za-z0-9_-]{8,}+"), MASK),
    # Azure storage / service bus connection strings: AccountKey=...;
    (_has("accountkey", "sharedaccess"),
     _lazy(r"(?i)(\b(?:AccountKey|SharedAccessKey|SharedAccessSignature)" + _SP + r"="
           + _SP + r")(?!\[REDACTED\])[^;\s\"']++"), r"\1" + MASK),
    # Signed URLs and tokens in query strings (S3/GCS presigned, Azure SAS, OAuth).
    (_query, _lazy(r"(?i)([?&;](?:sig|signature|x-amz-signature|x-amz-security-token|"
                   r"x-amz-credential|x-goog-signature|x-goog-credential|client_secret|"
                   r"access_token|refresh_token|id_token|token|api[_-]?key|apikey|key|code|"
                   r"password|pwd|secret|subscription-key)=)(?!\[REDACTED\])[^&#\s\"']++"),
     r"\1" + MASK),
    # Cookie headers carry sessions.
    (_has("cookie"), _lazy(r"(?i)(\b(?:set-)?cookie" + _Q + _SP + r":" + _SP + r"[\"']?+)"
                           r"(?!\[REDACTED\])[^\r\n\"']++"), r"\1" + MASK),
    # A log line cut for length is cut inside a word on each side of the cut, which may be
    # half of a token the rules above no longer recognise.
    (_has(" cut]"),
     _lazy(r"(?<!\S)\S{1,4096}+(?= \[\.\.\. [\d,]{1,20}+ more (?:characters|bytes) cut\])"),
     MASK),
    (_has(" cut]"),
     _lazy(r"(?<=\[\.\.\. [\d,]{1,20}+ more (?:characters|bytes) cut\] )\S{1,4096}+"), MASK),
    # KEY=value / "key": "value" / Header-Key: value where the name says secret.
    (_SECRET_IN, _lazy(r"(?i)(" + _SECRET_WORDS + r"[\w.-]{0,60}+" + _Q + _SP + r"[=:]" + _SP
                       + _Q + r")(?!(?:\[REDACTED\]|None|null|nil|true|false|\*+)"
                       r"(?![^\s\"',}\\]))[^\s\"',}\\]{4,}+"), r"\1" + MASK),
]
_RULES: list[tuple[Any, str]] = [(rx, repl) for _, rx, repl in _GATED_RULES]
_NEEDS: dict[int, Callable[[str], bool]] = {id(rx): need for need, rx, _ in _GATED_RULES}


def _rules_for(text: str) -> list[tuple[Any, str]]:
    """The rules that can match somewhere in ``text``, in their order (a rule that is
    not in _GATED_RULES, a test's, always runs)."""
    low = _lower(text)
    return [(rx, repl) for rx, repl in _RULES if _NEEDS.get(id(rx), _always)(low)]


def _lower(text: str) -> str:
    """``text`` lower-cased for the literal checks: what a (?i) rule matches as an ASCII
    letter is that letter here (U+017F, the long s, matches "s" and str.lower keeps it;
    the Kelvin sign and U+0130 lower to "k" and "i" already)."""
    low = text.lower()
    return low.replace(_LONG_S, "s") if _LONG_S in low else low


_LONG_S = "\u017f"


# Rules that span lines, run over the whole text when their literal is in it.
_TEXT_RULES: list[tuple[str, Any, str]] = [
    # An env list as YAML inside a string: "- name: DB_PASSWORD\n  value: ...".
    # Compiled on first use like the line rules (6 ms at import, for text that rarely
    # holds "value:").
    ("value:", _lazy(
        r"(?i)(\bname:" + _SP + r"[\"']?[\w.-]{0,60}?" + _SECRET_WORDS
        + r"[\w.-]{0,60}+[\"']?[ \t]{0,16}+(?:\\n|\r?\n)[ \t]{0,40}+value:" + _SP
        + r"[\"']?)(?!\[REDACTED\])[^\s\"'\\]{1,4096}+"), r"\1" + MASK),
]

# Lines with none of these (in the lower-cased text) cannot match a rule above:
# each alternative is the least a rule needs to start ("tokens" or "passed" are
# not enough, "token=" and "password" are).
_TRIGGER = re.compile(
    r"token(?![a-z])|secret|pass(?:w(?:or)?d)?(?![a-z])|pwd(?![a-z])|key(?![a-z])|credential"
    r"|authorization|bearer|cookie|dsn(?![a-z])|hf_|api_org_|akia|asia|aiza|gh[pousr]_"
    r"|github_pat_|sk-|xox|eyj|sharedaccess|://[^/\s@]{1,256}@"
    r"|[?&;](?:sig|signature|x-amz-|x-goog-|client_secret|access_token|refresh_token|id_token"
    r"|apikey|code|subscription-key)[a-z_-]{0,30}="
    r"|more (?:characters|bytes) cut\]")
# Lines that hold a trigger are redacted together in segments of up to this
# many bytes (the rules are line-local), so a log with many hits costs a few
# calls per rule, not one per line; a segment that times out is redone line
# by line, each line with its own bound.
_SEGMENT = 256 * 1024
_GAP = 4096  # trigger lines this close share a segment, with the lines between


# A long base64 run with upper case, lower case and digits is a key, not prose:
# the body lines of a PEM block shown one by one, a random API key of a shape
# no rule above knows. Hex digests (lower case) and paths (dots, dashes) stay.
_BASE64_RUN = re.compile(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{40,}={0,2}(?![A-Za-z0-9+/=])")

# Private key blocks (PEM and PGP armour), whole, without their END (a cut
# log) or without their BEGIN (a tail that starts inside the block).
_KEY_BLOCK = re.compile(r"-----(BEGIN|END) [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_BLOCK_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/= \t\r\n")
_MAX_BLOCK = 64 * 1024


def _key_blocks(text: str) -> str:
    if "PRIVATE KEY" not in text:
        return text
    spans: list[tuple[int, int]] = []
    covered = 0
    for m in _KEY_BLOCK.finditer(text):
        if m.start() < covered:
            continue
        if m.group(1) == "BEGIN":
            end = _KEY_BLOCK.search(text, m.end(), min(len(text), m.end() + _MAX_BLOCK))
            if end is not None and end.group(1) == "END":
                stop = end.end()
            else:
                stop = _walk(text, m.end(), 1)
            spans.append((m.start(), stop))
            covered = stop
        else:
            start = max(_walk(text, m.start(), -1), covered)
            spans.append((start, m.end()))
            covered = m.end()
    out: list[str] = []
    pos = 0
    for start, stop in spans:
        out.append(text[pos:start])
        # One mask per line of the block: line numbers after it stay what they were.
        out.append("\n".join(MASK if part.strip() else part
                              for part in text[start:stop].split("\n")))
        pos = stop
    out.append(text[pos:])
    return "".join(out)


def _walk(text: str, pos: int, step: int) -> int:
    """From ``pos``, the far end of the run of key-block characters (base64,
    whitespace, escaped newlines) going forward (step 1) or back (-1)."""
    limit = min(len(text), pos + _MAX_BLOCK) if step > 0 else max(0, pos - _MAX_BLOCK)
    i = pos
    while i != limit:
        ch = text[i] if step > 0 else text[i - 1]
        if ch in _BLOCK_CHARS:
            i += step
        elif ch == "\\" and step > 0 and text[i + 1:i + 2] in ("n", "r"):
            i += 2
        elif step < 0 and ch in "nr" and i >= 2 and text[i - 2] == "\\":
            i -= 2
        else:
            break
    if step > 0:
        return min(i, len(text))
    return max(i, 0)


def _base64_run(m: re.Match[str]) -> str:
    run = m.group()
    if (any(c.isupper() for c in run) and any(c.islower() for c in run)
            and any(c.isdigit() for c in run)):
        return MASK
    return run


def _line(line: str, deadline: float) -> str:
    for rx, repl in _rules_for(line):
        left = deadline - time.monotonic()
        if left <= 0:
            return UNCHECKED
        try:
            line = rx.sub(repl, line, timeout=left)
        except TimeoutError:
            return UNCHECKED
    return line


def _segment(segment: str, timeout: float) -> str:
    try:
        budget = timeout + len(segment) / 20e6  # generous: the rules run at >100 MB/s
        deadline = time.monotonic() + budget
        for rx, repl in _rules_for(segment):
            segment = rx.sub(repl, segment, timeout=max(0.001, deadline - time.monotonic()))
        return segment
    except TimeoutError:
        if "\n" not in segment:
            return UNCHECKED
        return "\n".join(_line(line, time.monotonic() + timeout)
                         for line in segment.split("\n"))


def redact_text(text: str, timeout: float = LINE_TIMEOUT_S) -> str:
    """``text`` with every credential the rules know masked; linear in its length."""
    if not text:
        return text
    text = _key_blocks(text)
    text = _BASE64_RUN.sub(_base64_run, text)
    lower = _lower(text)
    for literal, rx, repl in _TEXT_RULES:
        if literal in lower:
            try:
                text = rx.sub(repl, text, timeout=timeout + len(text) / 50e6)
            except TimeoutError:
                return UNCHECKED
            lower = _lower(text)
    hit = _TRIGGER.search(lower)
    if hit is None:
        return text
    out: list[str] = []
    pos = 0
    while hit is not None:
        start = text.rfind("\n", 0, hit.start()) + 1
        end = text.find("\n", hit.end())
        end = len(text) if end < 0 else end
        # Take in the next trigger lines while they are close and the segment small.
        while end < len(text) and end - start < _SEGMENT:
            nxt = _TRIGGER.search(lower, end, min(len(text), end + _GAP))
            if nxt is None:
                break
            stop = text.find("\n", nxt.end())
            end = len(text) if stop < 0 else stop
        out.append(text[pos:start])
        out.append(_segment(text[start:end], timeout))
        pos = end
        hit = _TRIGGER.search(lower, end)
    out.append(text[pos:])
    return "".join(out)


def is_secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


_DROP_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration",)


def redact_object(obj: Any) -> Any:
    """A copy of an API object with credentials masked.

    Env values whose variable name looks secret are masked whatever their
    shape; ``valueFrom`` references (a Secret's name and key) are kept, as
    they name where a credential lives without revealing it.
    """
    if isinstance(obj, dict):
        out: dict[str, Any] = {}
        for key, value in obj.items():
            if key == "managedFields":
                continue
            if key == "annotations" and isinstance(value, dict):
                value = {k: ("[dropped: may hold the full manifest]" if k in _DROP_ANNOTATIONS
                             else v) for k, v in value.items()}
            if key == "env" and isinstance(value, list):
                out[key] = [_redact_env(e) for e in value]
                continue
            out[key] = redact_object(value)
        return out
    if isinstance(obj, list):
        out_list = [redact_object(x) for x in obj]
        # args: ["--api-key", "VALUE"]: the value after a secret flag is a secret.
        for i in range(1, len(out_list)):
            prev = obj[i - 1]
            if (isinstance(prev, str) and isinstance(out_list[i], str)
                    and _is_secret_flag(prev) and not out_list[i].startswith("-")):
                out_list[i] = MASK
        return out_list
    if isinstance(obj, str):
        return redact_text(obj)
    return obj


def _is_secret_flag(word: str) -> bool:
    if len(word) > 200:
        return False  # no flag is this long; a value cannot be a flag's name
    try:
        return _SECRET_FLAG.fullmatch(word.strip(), timeout=LINE_TIMEOUT_S) is not None
    except TimeoutError:
        return True


def _redact_env(entry: Any) -> Any:
    if not isinstance(entry, dict):
        return redact_object(entry)
    entry = dict(entry)
    if "value" in entry and is_secret_name(str(entry.get("name", ""))):
        entry["value"] = MASK
    return redact_object(entry)
