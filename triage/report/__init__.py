"""The report: one document built from the judged snapshot, one writer per format.

``build`` makes the JSON-shaped document (schema ``vllm-triage/report/v1``);
every writer renders that document and nothing else, so all formats say
the same thing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from triage import __version__
from triage.checklist import StepResult, overall_failing, pod_state
from triage.classify import Classification
from triage.redact import redact_object
from triage.snapshot import Snapshot

SCHEMA = "vllm-triage/report/v1"
Report = dict[str, Any]


def build(snapshot: Snapshot, classification: Classification, steps: list[StepResult],
          warnings: list[str]) -> Report:
    pods = []
    for diag in classification.pods:
        pods.append({
            "name": diag.name,
            "namespace": diag.namespace,
            "phase": (diag.pod.get("status") or {}).get("phase", "Unknown"),
            "state": pod_state(diag.pod),
            "restarts": sum(int(cs.get("restartCount") or 0) for cs in
                            (diag.pod.get("status") or {}).get("containerStatuses") or []),
            "node": (diag.pod.get("spec") or {}).get("nodeName"),
            "owner": diag.owner,
            "containers": [c.name for c in diag.contexts],
            "findings": [
                {
                    "id": f.id,
                    "severity": f.pattern.severity,
                    "title": f.pattern.title,
                    "step": f.pattern.step,
                    "container": f.container,
                    "evidence": f.evidence,
                    "remediation": f.pattern.remediation,
                }
                for f in diag.findings
            ],
        })
    failing = overall_failing(steps, classification)
    doc: Report = {
        "schema": SCHEMA,
        "tool_version": __version__,
        "generated_at": snapshot.collected_at,
        "context": snapshot.context,
        "namespace": snapshot.namespace,
        "selector": snapshot.selector,
        "verdict": "fail" if failing else "pass",
        "summary": _summary(pods, steps),
        "pods": pods,
        "checklist": [
            {"step": r.step, "title": r.title, "verdict": r.verdict, "evidence": r.evidence,
             "remediation": r.remediation}
            for r in steps
        ],
        "unreadable": [{"what": f.what, "reason": f.reason} for f in snapshot.failures],
        "warnings": warnings + classification.warnings,
    }
    # Everything that reaches a ticket passes the redactor once more.
    redacted: Report = redact_object(doc)
    return redacted


def _summary(pods: list[dict[str, Any]], steps: list[StepResult]) -> str:
    if not pods:
        return "no vLLM server pods found"
    ids: list[str] = []
    for p in pods:
        for f in p["findings"]:
            if f["severity"] == "critical" and f["id"] not in ids:
                ids.append(f["id"])
    failing = [str(s.step) for s in steps if s.verdict == "fail"]
    if ids:
        return (f"{len(pods)} vLLM pod(s); critical: {', '.join(ids)}; failing steps: "
                f"{', '.join(failing) or 'none'}")
    warn = [str(s.step) for s in steps if s.verdict == "warn"]
    return (f"{len(pods)} vLLM pod(s); no critical finding"
            + (f"; failing steps: {', '.join(failing)}" if failing else "")
            + (f"; steps to review: {', '.join(warn)}" if warn else ""))


Writer = Callable[[Report, bool], str]


def writers() -> dict[str, Writer]:
    from triage.report import html, json_report, markdown, table  # late: each writer's deps

    return {"table": table.render, "json": json_report.render, "markdown": markdown.render,
            "html": html.render}
