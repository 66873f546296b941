"""The SARIF 2.1.0 format, for GitHub code scanning and SARIF viewers.

One run; ``tool.driver`` lists the rules (with their docs as help when the CLI passes
them); each finding is a result whose ``codeFlows`` hold one code flow per path, each with
a single ``threadFlow`` whose locations are the path's steps; the verdict rides in the
result's ``properties``. Files that could not be checked become
``toolExecutionNotifications`` of the invocation. Paths under the root are relative URIs
against ``%SRCROOT%``; others are absolute ``file:`` URIs.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import PurePath
from typing import Any
from urllib.parse import quote

from zerolint.formats import (
    RenderOptions,
    RuleMeta,
    escape_json_text,
    relative_to_root,
    root_dir,
    step_code,
    step_note,
    verdict_line,
    with_fingerprints,
)
from zerolint.model import Diagnostic, Finding, Flow, Report, Step, Verdict

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA_URI = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
SRCROOT = "%SRCROOT%"
# The partialFingerprints key; bump the suffix if the fingerprint recipe changes.
FINGERPRINT_KEY = "zerolint/v1"
# GitHub code scanning's own key: a hash of the primary location's line, ":", its
# occurrence among equal lines of the file (what upload-sarif would otherwise compute).
LINE_HASH_KEY = "primaryLocationLineHash"
# Codes of the ZL900 series are about the run (a file not checked, a fix not applied, a
# limit reached), not results.
_DIAGNOSTIC_PREFIX = "ZL9"


def render(report: Report, options: RenderOptions) -> str:
    """The SARIF log for ``report``; see :func:`zerolint.formats.render`."""
    log = {
        "$schema": SARIF_SCHEMA_URI,
        "version": SARIF_VERSION,
        "runs": [_run(report, options)],
    }
    return escape_json_text(json.dumps(log, indent=2, ensure_ascii=False)) + "\n"


def _run(report: Report, options: RenderOptions) -> dict[str, Any]:
    findings, proved = with_fingerprints(report, options)
    rules = _rules([finding for finding, _ in findings + proved], options)
    rule_index = {rule["id"]: index for index, rule in enumerate(rules)}
    ranks = _line_ranks([finding for finding, _ in findings + proved], options)
    results = [
        _result(finding, fingerprint, rule_index, options, ranks, passed=False)
        for finding, fingerprint in findings
    ]
    results += [
        _result(finding, fingerprint, rule_index, options, ranks, passed=True)
        for finding, fingerprint in proved
    ]
    driver: dict[str, Any] = {"name": "zerolint", "version": options.tool_version, "rules": rules}
    notifications = _notification_descriptors(report, options)
    if notifications:
        driver["notifications"] = notifications
    return {
        "tool": {"driver": driver},
        "invocations": [_invocation(report, options)],
        "originalUriBaseIds": {SRCROOT: {"uri": _folder_uri(root_dir(options.root))}},
        "columnKind": "unicodeCodePoints",
        "results": results,
    }


def _folder_uri(folder: str) -> str:
    """The ``file:`` URI of ``folder``, ending with one `/` (SARIF resolves the relative
    URIs against it): `file:///` for the root, not `file:////`."""
    uri = PurePath(folder).as_uri()
    return uri if uri.endswith("/") else uri + "/"


def _rules(findings: list[Finding], options: RenderOptions) -> list[dict[str, Any]]:
    codes = {code for code in options.rules if not code.startswith(_DIAGNOSTIC_PREFIX)}
    codes.update(finding.code for finding in findings)
    return [_rule(code, options.rules.get(code)) for code in sorted(codes)]


def _rule(code: str, meta: RuleMeta | None) -> dict[str, Any]:
    descriptor = _descriptor(code, meta)
    level = "error" if meta is None or meta.severity == "error" else "warning"
    descriptor["defaultConfiguration"] = {"level": level}
    return descriptor


def _descriptor(code: str, meta: RuleMeta | None) -> dict[str, Any]:
    if meta is None:
        return {"id": code, "shortDescription": {"text": code}}
    descriptor: dict[str, Any] = {
        "id": code,
        "name": meta.name,
        "shortDescription": {"text": meta.summary},
        "fullDescription": {"text": _first_paragraph(meta.doc) or meta.summary},
    }
    if meta.doc:
        descriptor["help"] = {"text": meta.doc, "markdown": meta.doc}
    if meta.uri():
        descriptor["helpUri"] = meta.uri()
    # What GitHub code scanning reads: tags to filter by, precision and severity to rank.
    descriptor["properties"] = {
        "tags": list(meta.tags),
        "precision": meta.precision,
        "problem.severity": meta.severity,
    }
    return descriptor


def _primary_code(finding: Finding) -> str:
    for flow in finding.flows:
        for step in reversed(flow.steps):
            if step.role == "sink":
                return step.code
    return finding.message


def _line_key(finding: Finding, options: RenderOptions) -> tuple[str, str]:
    code = "".join(_primary_code(finding).split())  # whitespace does not move an alert
    return relative_to_root(finding.path, options.root) or finding.path, code


def _line_ranks(findings: list[Finding], options: RenderOptions) -> dict[int, int]:
    """For each finding (by identity), how many findings before it, in line order, have
    the same file and the same code at their primary location: 1 for the first."""
    seen: dict[tuple[str, str], int] = {}
    ranks: dict[int, int] = {}
    for finding in sorted(findings, key=Finding.sort_key):
        key = _line_key(finding, options)
        seen[key] = seen.get(key, 0) + 1
        ranks[id(finding)] = seen[key]
    return ranks


def line_hash(finding: Finding, ranks: dict[int, int]) -> str:
    """``<16 hex digits>:<occurrence>`` from the code at the finding's call, with no
    whitespace: stable when lines move or are re-indented."""
    code = "".join(_primary_code(finding).split())
    digest = hashlib.sha256(code.encode("utf-8")).hexdigest()[:16]
    return f"{digest}:{ranks.get(id(finding), 1)}"


def _first_paragraph(markdown: str) -> str:
    """The first paragraph of prose in ``markdown`` (headings skipped), on one line."""
    for block in markdown.split("\n\n"):
        lines = [line.strip() for line in block.strip().splitlines()]
        if lines and not lines[0].startswith(("#", "```")):
            return " ".join(lines)
    return ""


def _result(
    finding: Finding,
    fingerprint: str,
    rule_index: dict[str, int],
    options: RenderOptions,
    line_ranks: dict[int, int],
    *,
    passed: bool,
) -> dict[str, Any]:
    message = finding.message
    verdict = verdict_line(finding)
    if verdict:
        message = f"{message}\n{verdict}"
    result: dict[str, Any] = {
        "ruleId": finding.code,
        "ruleIndex": rule_index[finding.code],
        "kind": "pass" if passed else "fail",
        "level": "none" if passed else "error",
        "message": {"text": message},
        "locations": [_finding_location(finding, options)],
        "partialFingerprints": {
            FINGERPRINT_KEY: fingerprint,
            LINE_HASH_KEY: line_hash(finding, line_ranks),
        },
        "properties": _properties(finding),
    }
    if finding.flows:
        result["codeFlows"] = [
            _code_flow(flow, number, options) for number, flow in enumerate(finding.flows, 1)
        ]
    return result


def _properties(finding: Finding) -> dict[str, Any]:
    properties: dict[str, Any] = {"sink": finding.sink, "argument": finding.argument}
    if finding.verdict is not None:
        properties["verdict"] = _verdict(finding.verdict)
    return properties


def _verdict(verdict: Verdict) -> dict[str, Any]:
    return {
        "status": verdict.status,
        "witness": dict(verdict.witness),
        "reason": verdict.reason,
        "flowIndex": verdict.flow_index,
    }


def _finding_location(finding: Finding, options: RenderOptions) -> dict[str, Any]:
    region = _region(finding.line, finding.col)
    if region and finding.end_line >= finding.line > 0:
        region["endLine"] = finding.end_line
        if finding.end_col > 0:
            region["endColumn"] = finding.end_col
    return {"physicalLocation": _physical(finding.path, region, options)}


def _code_flow(flow: Flow, number: int, options: RenderOptions) -> dict[str, Any]:
    return {
        "message": {"text": f"path {number}"},
        "threadFlows": [{"locations": [_thread_flow_location(s, options) for s in flow.steps]}],
    }


def _thread_flow_location(step: Step, options: RenderOptions) -> dict[str, Any]:
    note = step_note(step)
    code = step_code(step, limit=1000)
    location = {
        "physicalLocation": _physical(step.path, _region(step.line, step.col), options),
        "message": {"text": f"{note}: {code}" if note else code},
    }
    return {
        "location": location,
        "importance": "essential" if step.role in ("source", "sink") else "important",
        "properties": {"role": step.role, "op": {"kind": step.op.kind, "arg": step.op.arg}},
    }


def _region(line: int, col: int) -> dict[str, Any]:
    # SARIF lines and columns start at 1; 0 means the analyzer did not know.
    if line <= 0:
        return {}
    region: dict[str, Any] = {"startLine": line}
    if col > 0:
        region["startColumn"] = col
    return region


def _physical(path: str, region: dict[str, Any], options: RenderOptions) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": _artifact(path, options)}
    if region:
        physical["region"] = region
    return physical


def _artifact(path: str, options: RenderOptions) -> dict[str, Any]:
    relative = relative_to_root(path, options.root)
    if relative is None:
        return {"uri": PurePath(os.path.abspath(path)).as_uri()}
    # quote() also escapes ':' so a relative path never reads as a URI scheme; a name
    # that is not UTF-8 is its bytes on disk (held as surrogates), escaped as they are.
    return {"uri": quote(relative, safe="/", errors="surrogateescape"), "uriBaseId": SRCROOT}


def _invocation(report: Report, options: RenderOptions) -> dict[str, Any]:
    named = [*report.diagnostics, *report.missing]
    notifications = [_notification(d, options) for d in sorted(named, key=Diagnostic.sort_key)]
    # Mirrors the exit status: the run failed if a path named is not there, or if no file
    # at all could be checked.
    successful = not report.missing and (report.files_checked > 0 or not report.diagnostics)
    return {"executionSuccessful": successful, "toolExecutionNotifications": notifications}


def _notification(diagnostic: Diagnostic, options: RenderOptions) -> dict[str, Any]:
    region = _region(diagnostic.line, diagnostic.col)
    return {
        "level": "error",
        "message": {"text": diagnostic.message},
        "descriptor": {"id": diagnostic.code},
        "locations": [{"physicalLocation": _physical(diagnostic.path, region, options)}],
    }


def _notification_descriptors(report: Report, options: RenderOptions) -> list[dict[str, Any]]:
    codes = sorted({d.code for d in [*report.diagnostics, *report.missing]})
    return [_descriptor(code, options.rules.get(code)) for code in codes]
