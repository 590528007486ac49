"""The lint report: findings on manifests, each at the field it is about.

``build`` turns the diagnoses of the pods lint made from the manifests into
``LintFinding``\\ s with a file, line, column, object and path, applies the
suppressions (the object's ``vllm-triage.io/ignore`` annotation, ``--ignore``),
and says for every pattern whether it applied and, if not, why. Only what a
rule found *true* is a finding: a rule that needs a running pod ends unknown
and stays silent. Every string from the manifests is made terminal-safe and
redacted here, once, for every writer. Its JSON form is schema
``vllm-triage/lint/v1``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from triage.kube.workload import containers as workload_containers
from triage.lint.sourcemap import (
    RUNTIME_KINDS,
    ManifestObject,
    Manifests,
    Placeholder,
    Resolved,
    Skipped,
    Workload,
    dotted,
)
from triage.results import Finding, Location, Severity, map_strings
from triage.rules.evaluate import PodDiagnosis, Truth
from triage.rules.language import Pattern
from triage.safety.redact import redact_text
from triage.safety.sanitize import sanitize
from triage.vllm import selection

SCHEMA = "vllm-triage/lint/v1"
FAIL_ON = ("critical", "warning", "info", "never")


@dataclass(frozen=True)
class LintFinding:
    id: str
    severity: Severity
    file: str
    line: int
    column: int
    object: str  # Kind/namespace/name or Kind/name
    path: str  # spec.template.spec.containers[0].args
    message: str
    fix: str
    title: str
    step: int
    workload: str  # the object whose pod the finding is about (the HPA's Deployment)
    # False when the line and column are of a rendered stream (kubectl kustomize),
    # not of the file itself: writers then give no region.
    exact: bool = True


@dataclass(frozen=True)
class Suppressed:
    id: str
    object: str
    file: str
    line: int
    by: str  # "annotation vllm-triage.io/ignore" or "--ignore"


@dataclass(frozen=True)
class PatternUse:
    """What lint did with one pattern: applied (and found so many), or why not."""

    id: str
    applied: bool
    findings: int
    reason: str
    # (workload, why): the vLLM workloads on which the pattern could not be decided,
    # each with its own reason, when they are not all alike.
    undecided: tuple[tuple[str, str], ...] = ()
    # For a pattern that ran on the spec: what of it only a running pod shows, and why
    # (its log signs, its status), "" when the spec decides all of it.
    needs_running_pod: str = ""


@dataclass(frozen=True)
class Rule:
    """A pattern's metadata, as SARIF's rule descriptors carry it."""

    id: str
    title: str
    severity: Severity
    step: int
    summary: str
    remediation: str
    references: tuple[str, ...]


@dataclass(frozen=True)
class LintReport:
    tool_version: str
    findings: tuple[LintFinding, ...]
    skipped: tuple[Skipped, ...]
    suppressed: tuple[Suppressed, ...]
    patterns: tuple[PatternUse, ...]
    rules: tuple[Rule, ...]
    workloads: int  # vLLM workloads linted
    objects: int  # objects read
    problems: tuple[str, ...] = ()  # inputs that could not be read
    warnings: tuple[str, ...] = ()
    # (object, pattern id, "true" | "false" | "unknown"): what each pattern decided on
    # each vLLM workload, before suppressions.
    decisions: tuple[tuple[str, str, str], ...] = ()

    def failing(self, fail_on: str) -> bool:
        if fail_on == "never":
            return False
        limit = Severity(fail_on).rank
        return any(f.severity.rank <= limit for f in self.findings)

    def to_document(self, explain: bool = False) -> dict[str, Any]:
        """The ``vllm-triage/lint/v1`` document (its keys are a public contract)."""
        doc: dict[str, Any] = {
            "schema": SCHEMA,
            "findings": [{"id": f.id, "severity": f.severity.value, "file": f.file,
                          "line": f.line, "column": f.column, "object": f.object,
                          "path": f.path, "message": f.message, "fix": f.fix}
                         for f in self.findings],
            "skipped": [{"file": s.file, "line": s.line, "object": s.object,
                         "reason": s.reason} for s in self.skipped],
        }
        if self.warnings:  # what lint assumed (KServe's built-in runtime) or noted
            doc["warnings"] = list(self.warnings)
        if explain:
            doc["explain"] = {
                "applied": [{"id": p.id, "findings": p.findings,
                             **({"needs_running_pod": p.needs_running_pod}
                                if p.needs_running_pod else {}),
                             **({"undecided": [{"object": o, "reason": r}
                                               for o, r in p.undecided]} if p.undecided
                                else {})}
                            for p in self.patterns if p.applied],
                "not_applicable": [{"id": p.id, "reason": p.reason,
                                    **({"undecided": [{"object": o, "reason": r}
                                                      for o, r in p.undecided]}
                                       if p.undecided else {})}
                                   for p in self.patterns if not p.applied],
                "suppressed": [{"id": s.id, "object": s.object, "file": s.file,
                                "line": s.line, "by": s.by} for s in self.suppressed],
            }
        return doc


def build(manifests: Manifests, diagnoses: list[PodDiagnosis], patterns: tuple[Pattern, ...],
          ignore: set[str], warnings: list[str], tool_version: str,
          spec_decided: dict[tuple[int, str], str] | None = None) -> LintReport:
    """The lint report. ``spec_decided`` says, per (pod, pattern) that ended unknown, what
    of it the spec alone decided false (it ran on the manifest and found nothing), and
    what needs a running pod."""
    by_pod = {id(w.pod): w for w in manifests.workloads}
    placeholders = _placeholders_by_doc(manifests)
    findings: list[LintFinding] = []
    suppressed: list[Suppressed] = []
    seen: set[tuple[str, str, str, int, int, str]] = set()
    skipped = list(manifests.skipped)
    linted = 0
    decisions: list[tuple[str, str, str]] = []
    labelled: list[tuple[str, PodDiagnosis]] = []
    # (workload label, pattern id) -> why a finding there was not decided.
    withheld: dict[tuple[str, str], str] = {}
    for diag in diagnoses:
        workload = by_pod.get(id(diag.pod))
        if workload is None:
            continue
        if not diag.contexts:
            src = workload.source
            reasons = [selection.why_not_vllm(c) for c in workload_containers(workload.pod)]
            note = workload.note
            template = "" if not note else f" {note}" if note.startswith("in ") \
                else f" in its {note}"
            skipped.append(Skipped(src.file, src.line, src.label, f"no vLLM container{template}: "
                                   + ("; ".join(reasons) if reasons
                                      else "the pod has no containers")))
            continue
        linted += 1
        label = _workload_label(workload)
        labelled.append((label, diag))
        for f in diag.findings:
            where, holder = _place(manifests, f, workload.source, by_pod)
            where = _in_origin(manifests, where, holder)
            path = dotted(where.path[len(holder.prefix):]) if where is not None else ""
            message = _message(f)
            unrendered = _on_placeholder(placeholders, where, holder, message)
            if unrendered is not None:
                withheld.setdefault((label, f.id), unrendered)
                continue
            item = LintFinding(
                id=f.id, severity=f.severity,
                file=where.file if where is not None else holder.file,
                line=where.line if where is not None else holder.line,
                column=where.column if where is not None else holder.column,
                object=holder.label, path=path, message=message, fix=_fix(f),
                title=f.title, step=f.step, workload=workload.source.label,
                exact=where.exact if where is not None else holder.exact)
            key = (item.id, item.workload, item.file, item.line, item.column, item.path)
            if key in seen:
                continue
            seen.add(key)
            by = _suppressed_by(f.id, ignore, workload.source, holder)
            if by:
                suppressed.append(Suppressed(f.id, holder.label, item.file, item.line, by))
                continue
            findings.append(item)
        decisions += [(workload.source.label, pid,
                       "unknown" if (label, pid) in withheld else truth.value)
                      for pid, truth in sorted(diag.states.items())]
    findings.sort(key=lambda f: (f.file, f.line, f.column, f.severity.rank, f.id))
    report = LintReport(
        tool_version=tool_version,
        findings=tuple(findings),
        skipped=tuple(skipped),
        suppressed=tuple(suppressed),
        patterns=_uses(patterns, labelled, findings, suppressed, linted, withheld,
                       spec_decided or {}),
        rules=(),
        workloads=linted,
        objects=len(manifests.objects),
        warnings=tuple([*warnings, *_unrendered(manifests)]),
        decisions=tuple(decisions),
    )
    # What came from the manifests is shown in a terminal and goes into CI logs; the
    # rules are the patterns' own words. A file's name is the user's own, never a
    # credential: it is made safe for the terminal, not masked.
    clean = _Cleaner()
    cleaned = map_strings(report, clean)
    return dataclasses.replace(
        cleaned,
        findings=tuple(dataclasses.replace(c, file=sanitize(o.file))
                       for c, o in zip(cleaned.findings, report.findings, strict=True)),
        skipped=tuple(dataclasses.replace(c, file=sanitize(o.file))
                      for c, o in zip(cleaned.skipped, report.skipped, strict=True)),
        suppressed=tuple(dataclasses.replace(c, file=sanitize(o.file))
                         for c, o in zip(cleaned.suppressed, report.suppressed, strict=True)),
        problems=tuple(f"{sanitize(p.where)}: {clean(p.what)}" if p.where else clean(p.what)
                       for p in manifests.problems),
        rules=tuple(Rule(p.id, p.title, p.severity, p.step, p.summary, p.remediation,
                         p.references) for p in sorted(patterns, key=lambda p: p.id)))


class _Cleaner:
    """Terminal-safe and redacted, each distinct text once (thousands of workloads repeat
    the same evidence)."""

    def __init__(self) -> None:
        self.done: dict[str, str] = {}

    def __call__(self, text: str) -> str:
        found = self.done.get(text)
        if found is None:
            found = self.done[text] = redact_text(sanitize(text))
        return found


# --- template placeholders: what rests on them is not decided ------------------------

_Placeholders = dict[tuple[str, int], list[Placeholder]]


def _placeholders_by_doc(manifests: Manifests) -> _Placeholders:
    out: _Placeholders = {}
    for p in manifests.placeholders:
        out.setdefault((p.file, p.doc), []).append(p)
    return out


def _on_placeholder(placeholders: _Placeholders, where: Resolved | None,
                    holder: ManifestObject, message: str) -> str | None:
    """Why a finding is not decided: the field it is about holds a template placeholder
    (or lies inside one that stands for a whole block), or its evidence quotes one. None
    when it rests on written values only."""
    if not placeholders:
        return None
    candidates = placeholders.get((holder.file, holder.doc), [])
    if where is not None:
        candidates = candidates + [p for p in placeholders.get((where.file, where.doc), [])
                                   if p not in candidates]
    for p in candidates:
        on_path = where is not None and (where.file, where.doc) == (p.file, p.doc) and (
            where.path[:len(p.path)] == p.path or p.path[:len(where.path)] == where.path)
        if on_path or p.text in message:
            return (f"{dotted(p.path)} is the template placeholder {p.text} ({p.file}:"
                    f"{p.line}): render the chart first")
    return None


def _unrendered(manifests: Manifests) -> list[str]:
    """One note per object that is a template's source rather than a manifest."""
    notes: list[str] = []
    for (file, doc), found in _placeholders_by_doc(manifests).items():
        for obj in [o for o in manifests.objects if (o.file, o.doc) == (file, doc)]:
            mine = [p for p in found if p.path[:len(obj.prefix)] == obj.prefix]
            if not mine:
                continue
            first = mine[0]
            more = f" and {len(mine) - 1} more" if len(mine) > 1 else ""
            notes.append(
                f"{file}:{obj.line}: {obj.label} is a template's source, not a manifest: "
                f"{first.text} at {dotted(first.path[len(obj.prefix):])}{more}; what rests "
                "on a placeholder is not decided. Render the chart first: helm template "
                "RELEASE CHART -f values.yaml | vllm-triage lint -f -")
    return notes


def _place(manifests: Manifests, f: Finding, source: ManifestObject,
           by_pod: dict[int, Workload]) -> tuple[Resolved | None, ManifestObject]:
    """The field the finding is about, and the object it is in: the first field of the
    rule that is written in the manifest, else the deepest part of one that is not (a
    missing startupProbe: its container)."""
    best: Resolved | None = None
    best_loc: Location | None = None
    for loc in f.at or (Location(source.obj, ()),):
        where = manifests.sources.resolve(loc)
        if where is None:
            continue
        if where.depth == len(loc.path):
            best, best_loc = where, loc
            break
        if best is None or where.depth > best.depth:
            best, best_loc = where, loc
    if best is None or best_loc is None:
        return None, source
    # A field of the workload's own pod is the workload's, even where YAML aliases
    # share its text with another object, but for what a KServe runtime's container
    # gave it; another object's field (an HPA's) is that one's.
    holder = manifests.object_at(best)
    made = by_pod.get(id(best_loc.obj))
    if best_loc.obj is source.obj or (made is not None and made.pod is best_loc.obj
                                      and made.source is source):
        if holder is not None and holder.kind in RUNTIME_KINDS:
            return best, holder
        return best, source
    return best, holder or source


def _in_origin(manifests: Manifests, where: Resolved | None, holder: ManifestObject
               ) -> Resolved | None:
    """A field of kustomize's output, at its line in the file kustomize read the object
    from (the origin annotation), when it is known: the same path in that object, or
    the nearest part of it written there (a field a patch added)."""
    origin = holder.origin
    if where is None or where.exact or origin is None:
        return where
    rel = where.path[len(holder.prefix):]
    # A value a kustomize patch changed is not the one written there: its parent is.
    while rel and _leaf(holder.obj, rel) != _leaf(origin.obj, rel):
        rel = rel[:-1]
    found = manifests.sources.resolve(Location(origin.obj, rel))
    if found is None:
        return where
    return Resolved(found.file, found.doc, found.line, found.column,
                    (*holder.prefix, *found.path[len(origin.prefix):]), found.depth, True)


def _leaf(obj: Any, path: tuple[str | int, ...]) -> Any:
    """The scalar at ``path`` ("" for a mapping or list, None when absent)."""
    cur = obj
    for part in path:
        held = (part in cur) if isinstance(cur, dict) else (
            isinstance(cur, list) and isinstance(part, int) and 0 <= part < len(cur))
        if not held:
            return None
        cur = cur[part]
    return "" if isinstance(cur, (dict, list)) else cur


def _fix(f: Finding) -> str:
    """The fix computed from the facts where the finding has one (a pattern's fix
    template, issue 14), else the pattern's remediation."""
    computed = getattr(f, "fix", None)
    text = getattr(computed, "text", None)
    return str(text) if text else f.remediation


_SHOWN_EVIDENCE = 3


def _message(f: Finding) -> str:
    """The title, then the evidence that made the rule true: its first lines, and every
    line that says a figure is an estimate (the finding rests on it)."""
    if not f.evidence:
        return f.title
    shown = [*f.evidence[:_SHOWN_EVIDENCE],
             *(e for e in f.evidence[_SHOWN_EVIDENCE:] if "estimate" in e.split(":", 1)[0]
               or e.startswith("estimate"))]
    return f"{f.title}: " + "; ".join(shown)


def _suppressed_by(fid: str, ignore: set[str], *objects: ManifestObject) -> str:
    if fid in ignore or "all" in ignore:
        return "--ignore"
    for obj in objects:
        marks = obj.ignored()
        if fid in marks or "all" in marks:
            return f"annotation vllm-triage.io/ignore on {obj.label}"
    return ""


def _workload_label(workload: Any) -> str:
    return f"{workload.source.label} ({workload.note})" if workload.note else \
        workload.source.label


def _uses(patterns: tuple[Pattern, ...], labelled: list[tuple[str, PodDiagnosis]],
          findings: list[LintFinding], suppressed: list[Suppressed], linted: int,
          withheld: dict[tuple[str, str], str],
          spec_decided: dict[tuple[int, str], str]) -> tuple[PatternUse, ...]:
    """What each pattern did: it ran on the spec (found something or nothing, and what of
    it only a running pod can show), or it needs what a manifest does not have."""
    out: list[PatternUse] = []
    for p in sorted(patterns, key=lambda p: (p.step, p.id)):
        count = sum(1 for f in findings if f.id == p.id)
        hidden = sum(1 for s in suppressed if s.id == p.id)
        decided, runtime, why_not = 0, [], []
        for label, d in labelled:
            state = d.states.get(p.id)
            if (label, p.id) in withheld:
                why_not.append((label, withheld[(label, p.id)]))
            elif state in (Truth.TRUE, Truth.FALSE):
                decided += 1
            elif (id(d.pod), p.id) in spec_decided:
                decided += 1
                runtime.append(spec_decided[(id(d.pod), p.id)])
            else:
                why_not.append((label, next((u.reason for u in d.unevaluated
                                             if u.pattern == p.id), "not evaluated")))
        if not linted:
            out.append(PatternUse(p.id, False, 0, "no vLLM workload in the manifests"))
        elif decided:
            why = f"{count} finding(s)" if count else "nothing found"
            if hidden:
                why += f", {hidden} suppressed"
            out.append(PatternUse(p.id, True, count, why, tuple(why_not),
                                  runtime[0] if runtime else ""))
        else:
            reason = why_not[0][1] if why_not else "not evaluated"
            differ = len({r for _, r in why_not}) > 1
            out.append(PatternUse(p.id, False, 0, reason, tuple(why_not) if differ else ()))
    return tuple(out)
