"""Label selectors as the API server parses them (``k8s.io/apimachinery/pkg/labels``).

``-l`` is checked before any request, so a typo is a usage error that says what is
wrong, not a 400 from the API server (or a list of every pod) after connecting:

    selector    := requirement (',' requirement)*   (empty: every pod)
    requirement := KEY | '!' KEY | KEY ('=' | '==' | '!=') VALUE
                 | KEY ('in' | 'notin') '(' VALUE (',' VALUE)* ')' | KEY ('>' | '<') INTEGER

KEY is ``[prefix/]name``: name at most 63 characters, alphanumeric at both ends with
``-_.`` inside; prefix a DNS subdomain of at most 253. VALUE is empty or like a name.
"""

from __future__ import annotations

import re

_NAME = re.compile(r"[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?\Z")
_PREFIX = re.compile(r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*\Z")
# Tokens: identifiers (anything up to a separator), operators, parentheses and commas.
_TOKEN = re.compile(r"\s*(?:(?P<op>==|!=|=|!|>|<)|(?P<punct>[(),])|(?P<word>[^\s=!<>(),]+))")


class SelectorError(ValueError):
    """A label selector the API server would refuse; the message says why, in words."""


def check(selector: str) -> None:
    """Raise SelectorError when ``selector`` is not a valid label selector."""
    tokens = _tokens(selector)
    pos = 0

    def peek() -> tuple[str, str] | None:
        return tokens[pos] if pos < len(tokens) else None

    if not tokens:
        return
    while True:
        tok = peek()
        if tok == ("op", "!"):
            pos += 1
            pos = _key(tokens, pos, selector)
        else:
            pos = _key(tokens, pos, selector)
            tok = peek()
            if tok is not None and tok[0] == "op":
                op = tok[1]
                pos += 1
                value = peek()
                if value is None or value[0] != "word":
                    if op in (">", "<"):
                        raise SelectorError(f"{selector!r}: {op} needs an integer after it")
                    _value("", selector)  # an empty value: valid for =, ==, !=
                else:
                    if op in (">", "<") and not value[1].lstrip("-").isdigit():
                        raise SelectorError(f"{selector!r}: {op} needs an integer, not "
                                            f"{value[1]!r}")
                    if op not in (">", "<"):
                        _value(value[1], selector)
                    pos += 1
            elif tok is not None and tok[0] == "word" and tok[1] in ("in", "notin"):
                pos = _values(tokens, pos + 1, selector, tok[1])
        tok = peek()
        if tok is None:
            return
        if tok != ("punct", ","):
            raise SelectorError(f"{selector!r}: unexpected {tok[1]!r}; requirements are "
                                "separated by commas (app=vllm,tier!=cache)")
        pos += 1
        if peek() is None:
            raise SelectorError(f"{selector!r}: a comma with no requirement after it")


def _tokens(selector: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    text = selector.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:  # cannot happen: every character is some token
            raise SelectorError(f"{selector!r}: cannot read it at {text[pos:]!r}")
        kind = m.lastgroup or "word"
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


def _key(tokens: list[tuple[str, str]], pos: int, selector: str) -> int:
    if pos >= len(tokens) or tokens[pos][0] != "word":
        found = tokens[pos][1] if pos < len(tokens) else "its end"
        raise SelectorError(f"{selector!r}: a label key is missing before {found!r}"
                            if pos < len(tokens) else
                            f"{selector!r}: a label key is missing at its end")
    key = tokens[pos][1]
    prefix, _, name = key.rpartition("/")
    if not _NAME.match(name) or (prefix and (len(prefix) > 253 or not _PREFIX.match(prefix))) \
            or key.count("/") > 1:
        raise SelectorError(f"{selector!r}: {key!r} is not a label key (a name of at most 63 "
                            "letters, digits, '-', '_' or '.', optionally prefixed by a DNS "
                            "name and '/')")
    return pos + 1


def _value(value: str, selector: str) -> None:
    if value and not _NAME.match(value):
        raise SelectorError(f"{selector!r}: {value!r} is not a label value (at most 63 "
                            "letters, digits, '-', '_' or '.', starting and ending with a "
                            "letter or digit)")


def _values(tokens: list[tuple[str, str]], pos: int, selector: str, op: str) -> int:
    if pos >= len(tokens) or tokens[pos] != ("punct", "("):
        raise SelectorError(f"{selector!r}: {op} needs a list of values in parentheses, "
                            f"e.g. {op} (a,b)")
    pos += 1
    while True:
        if pos < len(tokens) and tokens[pos][0] == "word":
            _value(tokens[pos][1], selector)
            pos += 1
        if pos >= len(tokens):
            raise SelectorError(f"{selector!r}: the parenthesis after {op} is not closed")
        if tokens[pos] == ("punct", ")"):
            return pos + 1
        if tokens[pos] != ("punct", ","):
            raise SelectorError(f"{selector!r}: unexpected {tokens[pos][1]!r} in the values "
                                f"of {op}")
        pos += 1
