"""SARIF 2.1.0 for GitHub code scanning: one rule per pattern, a region per finding.

Rule ids are the finding ids (a public contract, as in ``scan``); rule
metadata comes from the pattern (title, summary, remediation, references,
checklist step). A finding's region is the line and column of the manifest
field it is about; for kustomize output, whose lines are of the rendered
stream, the result names the directory and no region. Partial fingerprints
follow the finding id, the object and the field path, so a result keeps its
identity when lines move.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any
from urllib.parse import quote

import regex

from triage.lint.report import LintFinding, LintReport
from triage.results import Severity

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {Severity.CRITICAL: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
# GitHub sorts and filters code scanning alerts by this (0.1-10).
_SECURITY_SEVERITY = {Severity.CRITICAL: "8.0", Severity.WARNING: "5.0", Severity.INFO: "2.0"}


STDIN_URI = "stdin"


def artifact(file: str) -> dict[str, Any]:
    """The artifactLocation of a linted file: a percent-encoded repository-relative
    path against %SRCROOT% (as GitHub matches it against the checkout), a file: URI
    without a base for an absolute path, and a placeholder for standard input, which
    has no file to point at."""
    if file == "<stdin>":
        return {"uri": STDIN_URI,
                "description": {"text": "standard input (vllm-triage lint -f -): the "
                                        "manifest was piped in, there is no file"}}
    path = file.split(" (kubectl kustomize)")[0].replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    if path.startswith("/") or _DRIVE.match(path):
        absolute = path if path.startswith("/") else "/" + path
        return {"uri": "file://" + quote(absolute, safe="/:")}
    return {"uri": quote(path, safe="/"), "uriBaseId": "%SRCROOT%"}


_DRIVE = regex.compile(r"^[A-Za-z]:/")


def _location(f: LintFinding) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": artifact(f.file)}
    if f.exact and f.file != "<stdin>":
        physical["region"] = {"startLine": f.line, "startColumn": f.column}
    return {
        "physicalLocation": physical,
        "logicalLocations": [{"name": f.path or f.object, "kind": "member",
                              "fullyQualifiedName": f"{f.object}:{f.path}" if f.path
                              else f.object}],
    }


def _fingerprint(f: LintFinding) -> str:
    return hashlib.sha256(f"{f.id}\0{f.object}\0{f.path}".encode()).hexdigest()[:32]


def document(report: LintReport) -> dict[str, Any]:
    rules = list(report.rules)
    index = {r.id: i for i, r in enumerate(rules)}
    descriptors = [{
        "id": r.id,
        "name": "".join(w.capitalize() for w in r.id.split("-")),
        "shortDescription": {"text": r.title},
        "fullDescription": {"text": r.summary or r.title},
        "help": {"text": r.remediation,
                 "markdown": f"**{r.title}**\n\n{r.summary}\n\n**Fix**\n\n{r.remediation}"},
        "defaultConfiguration": {"level": _LEVEL[r.severity]},
        "properties": {
            "tags": ["vllm", "kubernetes", f"checklist-step-{r.step}"],
            "precision": "high",
            "problem.severity": {Severity.CRITICAL: "error", Severity.WARNING: "warning",
                                 Severity.INFO: "recommendation"}[r.severity],
            "security-severity": _SECURITY_SEVERITY[r.severity],
            "references": list(r.references),
        },
    } for r in rules]
    results = [{
        "ruleId": f.id,
        **({"ruleIndex": index[f.id]} if f.id in index else {}),
        "level": _LEVEL[f.severity],
        "message": {"text": f"{f.message}\nFix: {f.fix}" if f.fix else f.message},
        "locations": [_location(f)],
        "partialFingerprints": {"vllmTriageFinding/v1": _fingerprint(f)},
        "properties": {"object": f.object, "path": f.path, "severity": f.severity.value},
    } for f in report.findings]
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "vllm-triage",
                "semanticVersion": report.tool_version,
                "version": report.tool_version,
                "rules": descriptors,
            }},
            "originalUriBaseIds": {"%SRCROOT%": {"description": {
                "text": "The directory vllm-triage lint was run from"}}},
            "columnKind": "unicodeCodePoints",
            "results": results,
            # What lint assumed or could not read (KServe's built-in runtime a lone
            # InferenceService was linted against, an unreadable file), as notes.
            **({"invocations": [{
                "executionSuccessful": not report.problems,
                "toolExecutionNotifications": [
                    {"level": "error", "message": {"text": text}} for text in report.problems
                ] + [{"level": "note", "message": {"text": text}}
                     for text in report.warnings],
            }]} if report.warnings or report.problems else {}),
        }],
    }


def render(report: LintReport) -> str:
    return json.dumps(document(report), indent=2, ensure_ascii=False) + "\n"
