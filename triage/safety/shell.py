"""Commands people paste into a shell: every word quoted for a POSIX shell, every
``kubectl`` naming the cluster it is about.

A command the report prints is built from words, never from text: names from a
cluster or a bundle are data, so each word is quoted (``shlex.quote``: a ``$(...)``,
a backquote or a ``;`` in a name is part of that one argument, never run). A name no
Kubernetes object can have is made visible rather than passed on: a character that
breaks a line or is invisible (a control, a format character, U+2028, U+2029, U+0085,
a space other than U+0020) is written ``<U+XXXX>``, and a leading ``-`` (which kubectl
would read as a flag) ``<U+002D>``. Such a command names nothing that exists and
fails; it can never act on something else, or break the line it is on.

Every ``kubectl`` a command runs carries ``--context`` of the cluster the report is
about (and ``--kubeconfig`` when one was given), so pasted in another shell, or after
``kubectl config use-context``, it still acts on that cluster (``KubectlTarget``).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import regex

from triage.safety.redact import redact_text

# Characters a value is never passed on with: they break a line (for a terminal, a
# YAML parser, a Markdown renderer) or cannot be seen. U+0020 is the one space kept.
_HIDDEN = regex.compile(r"[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cs}\p{Cn}[\p{Zs}--\x20]]", regex.V1)
# The operators a command template may join its commands with.
OPERATORS = frozenset({"|", "||", "&&", ";"})


class Operator(str):
    """An operator of a command template (``|``, ``&&``): written as it is. A word equal
    to one that came from a cluster is a plain ``str``, and quoted like any other."""
# What the tool calls ``kubectl`` in a command: the word that gets the cluster's flags.
KUBECTL = "kubectl"
IN_CLUSTER = "in-cluster"  # the context name of a service account's own cluster


def _code(m: regex.Match[str]) -> str:
    return f"<U+{ord(m.group()):04X}>"


def visible(value: str) -> str:
    """``value`` on one line, every invisible or line-breaking character as ``<U+XXXX>``
    (an escape sequence too: in a name it is seen, not removed), credentials masked."""
    return redact_text(str(_HIDDEN.sub(_code, value)))


def argument(value: str) -> str:
    """A value from a cluster as one argument of a command: visible, and never taken
    for a flag."""
    shown = visible(value)
    return "<U+002D>" + shown[1:] if shown.startswith("-") else shown


def quote(word: str) -> str:
    """One word for a POSIX shell (unchanged when it needs no quoting)."""
    return shlex.quote(word)


@dataclass(frozen=True)
class KubectlTarget:
    """The cluster a report is about, as kubectl is told it: ``--context`` (the
    kubeconfig context the tool read it through, the one a bundle recorded, or, in a
    pod, the name the cluster was given with ``--cluster-name``) and ``--kubeconfig``
    (the file it was read with, when one was named). Empty: the current context."""

    context: str | None = None
    kubeconfig: str | None = None

    def flags(self) -> list[str]:
        out: list[str] = []
        if self.kubeconfig:
            out += ["--kubeconfig", visible(self.kubeconfig)]
        if self.context and self.context != IN_CLUSTER:
            out += ["--context", visible(self.context)]
        return out


def unnamed_cluster(context: str | None, target: KubectlTarget) -> str | None:
    """What to say when the commands cannot name their cluster: read in a pod with its
    service account (no kubeconfig context) and no ``--cluster-name`` given, a pasted
    command acts on whatever cluster the person's kubectl points at."""
    if context != IN_CLUSTER or target.context:
        return None
    return ("read in a pod with its service account: the kubectl commands printed name no "
            "cluster (there is no kubeconfig context); run them against the cluster this "
            "pod runs in (vllm-triage watch --cluster-name NAME names it in every command)")


def join(words: Iterable[str]) -> str:
    """Words (each already an argument, or an operator) as one shell line."""
    return " ".join(w if isinstance(w, Operator) else quote(w) for w in words)


def kubectl(target: KubectlTarget, *words: str) -> list[str]:
    """The words of one kubectl command with the cluster's flags."""
    return [KUBECTL, *target.flags(), *words]


def starts_kubectl(words: Sequence[str], i: int) -> bool:
    """The word at ``i`` of a template is a ``kubectl`` that starts a command."""
    return words[i] == KUBECTL and (i == 0 or isinstance(words[i - 1], Operator))


def split(template: str) -> list[str] | None:
    """A command template's words, operators apart (``|``, ``&&``, ``;``), as a POSIX
    shell splits them; None when it does not split (an unbalanced quote)."""
    lexer = shlex.shlex(template, posix=True, punctuation_chars="|&;")
    lexer.whitespace_split = True
    try:
        return [Operator(w) if w in OPERATORS else w for w in lexer]
    except ValueError:
        return None
