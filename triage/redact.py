"""Masking of credentials in everything the tool keeps, prints or writes.

Reports go into tickets. The collector never reads Secret objects; this
module masks what can still leak through pod specs, logs, events and
metrics: Hugging Face and other API tokens, bearer tokens and
``Authorization`` headers, passwords in URLs, cloud keys, and the values of
environment variables whose names say they are secret. It runs once on the
snapshot right after collection and once more on every rendered report.
"""

from __future__ import annotations

from typing import Any

import regex

MASK = "[REDACTED]"

_SECRET_NAME = regex.compile(
    r"(?i)(token(?![a-z])|secret|passw(or)?d|passwd|api[_-]?key|access[_-]?key|private[_-]?key|"
    r"credential|auth(?!or)|session[_-]?key|signature|cookie)"
)

# Words that make a key, flag or variable name a secret's name.
_SECRET_WORDS = (r"(?:token(?![a-z])|secret|passw(?:or)?d|api[_-]?key|access[_-]?key|"
                 r"credentials?)")

_SECRET_FLAG = regex.compile(r"(?i)--?[\w-]*" + _SECRET_WORDS + r"[\w-]*")

# (pattern, replacement). Group 1, where present, is kept: it is the label
# ("Authorization: Bearer ", "password=") that tells a reader what was there.
_RULES: list[tuple[Any, str]] = [
    # A command-line flag that names a secret, then its value: --api-key VALUE,
    # --hf-token 'VALUE' (--api-key=VALUE is the KEY=value rule below).
    # (Anchored at the start of a dash run and bounded, so a line of dashes stays linear.)
    (regex.compile(r"(?i)((?<![\w-])--?(?=[a-z0-9])[\w-]{0,60}?" + _SECRET_WORDS
                   + r"[\w-]{0,40}[ \t]+)([\"']?)(?!-)(?!\[REDACTED\])[^\s\"']+\2"),
     r"\1\2" + MASK + r"\2"),
    # 'api_key': ['v1', 'v2'] -- vLLM prints list-valued args this way.
    (regex.compile(r"(?i)(" + _SECRET_WORDS + r"[\w.-]{0,60}[\"']?\s*[=:]\s*)"
                   r"\[(?!\s*\]|REDACTED\]|'\[REDACTED\]'\])[^\]\r\n]{0,512}\]"),
     r"\1['" + MASK + "']"),
    (regex.compile(r"\bhf_[A-Za-z0-9]{20,}\b"), MASK),  # Hugging Face user tokens
    (regex.compile(r"\bapi_org_[A-Za-z0-9]{20,}\b"), MASK),
    (regex.compile(r"(?i)(\bauthorization[\"']?\s*[:=]\s*[\"']?)(?:bearer|basic|token)?\s*[^\s\"',}]+"),
     r"\1" + MASK),
    (regex.compile(r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]{8,}"), r"\1" + MASK),
    # user:password@ in a URL; matching from "://" keeps this linear.
    (regex.compile(r"(://[^/\s:@]+:)[^@\s/]+(@)"), r"\1" + MASK + r"\2"),
    (regex.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), MASK),  # AWS access key ids
    (regex.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"), MASK),  # Google API keys
    (regex.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"), MASK),  # GitHub tokens
    (regex.compile(r"\bgithub_pat_[A-Za-z0-9_]{40,}\b"), MASK),
    (regex.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}\b"), MASK),  # OpenAI / Anthropic
    (regex.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b"), MASK),  # Slack
    (regex.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b"), MASK),  # JWT
    (regex.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----"),
     MASK),
    # Azure storage / service bus connection strings: AccountKey=...;
    (regex.compile(r"(?i)(\b(?:AccountKey|SharedAccessKey|SharedAccessSignature)\s*=\s*)"
                   r"[^;\s\"']+"), r"\1" + MASK),
    # Signed URLs and tokens in query strings (S3/GCS presigned, Azure SAS, OAuth).
    (regex.compile(r"(?i)([?&;](?:sig|signature|x-amz-signature|x-amz-security-token|"
                   r"x-goog-signature|x-goog-credential|client_secret|access_token|"
                   r"refresh_token|id_token|token|api[_-]?key|apikey|key|password|pwd)=)"
                   r"[^&#\s\"']+"), r"\1" + MASK),
    # Cookie headers carry sessions.
    (regex.compile(r"(?i)(\b(?:set-)?cookie[\"']?\s*:\s*[\"']?)[^\r\n\"']+"), r"\1" + MASK),
    # KEY=value / "key": "value" where the key names a secret.
    (regex.compile(
        r"(?i)((?:token(?![a-z])|secret|passw(?:or)?d|api[_-]?key|access[_-]?key|"
        r"credentials?)[\w.-]{0,60}[\"']?\s*[=:]\s*[\"']?)"
        r"(?![\"']?\s*(?:\[REDACTED\]|None|null|true|false|\"?\s*$))[^\s\"',}]{4,}"),
     r"\1" + MASK),
]


def redact_text(text: str) -> str:
    if not text:
        return text
    for rx, repl in _RULES:
        text = rx.sub(repl, text)
    return text


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
                    and _SECRET_FLAG.fullmatch(prev.strip())
                    and not out_list[i].startswith("-")):
                out_list[i] = MASK
        return out_list
    if isinstance(obj, str):
        return redact_text(obj)
    return obj


def _redact_env(entry: Any) -> Any:
    if not isinstance(entry, dict):
        return redact_object(entry)
    entry = dict(entry)
    if "value" in entry and is_secret_name(str(entry.get("name", ""))):
        entry["value"] = MASK
    return redact_object(entry)
