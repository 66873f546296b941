"""The JSON format: one document, a stable schema, sorted, every step of every path.

Schema version 1 (a field is never removed or renamed without bumping ``version``)::

    {
      "version": 1,
      "tool": {"name": "zerolint", "version": "0.1.0"},
      "findings": [Finding, ...],      # sorted by path, line, col, code
      "proved": [Finding, ...],        # proved safe by the SMT judge; empty unless --show-proved
      "diagnostics": [                 # about the run: ZL901-ZL905 a file not checked,
        {"code": "ZL901", "path": str, "line": int, "col": int, "message": str}
      ],                               # ZL910 not fixed, ZL930 a limit; line/col 0: unknown
      "summary": {
        "files_checked": int, "findings": int, "proved": int, "diagnostics": int,
        "files_not_checked": int, "fixed": int, "by_code": {"ZL001": int, ...},
        "paths_not_found": [str, ...]  # named on the command line, not there (exit 2)
      }
    }

    Finding = {
      "code": "ZL001", "message": str,
      "path": str, "line": int, "col": int,          # 1-based, where the sink is called
      "end_line": int | null, "end_col": int | null, # end of the call, end_col exclusive
      "sink": str, "argument": str,                  # the called function, the argument
      "flows": [{"steps": [Step, ...]}, ...],        # each a way the lengths get there
      "verdict": null | {"status": "unsafe" | "safe" | "unknown",
                         "witness": {name: int, ...}, "reason": str,
                         "flow_index": int | null},   # 0-based index into flows
      "fingerprint": str,                             # stable across runs, as in SARIF
      "fixable": bool | null                          # --fix can clamp it; null: not known
    }

    Step = {"path": str, "line": int, "col": int, "code": str,
            "role": "source" | "flow" | "call" | "return" | "sanitizer" | "sink",
            "op": {"kind": str, "arg": int | str | null}, "note": str}

Paths are relative to the current directory when under it (``/`` separators), as given
otherwise. With --statistics the document is instead a list, as ``ruff --statistics``:
``[{"code": str, "name": str, "count": int, "fixable": bool, "fixable_count": int}, ...]``
(``fixable``: every finding of the code is; ``fixable_count``: how many are, as Ruff).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from zerolint.formats import (
    RenderOptions,
    code_counts,
    display_path,
    escape_json_text,
    fixable,
    fixable_count,
    unchecked_files,
    with_fingerprints,
)
from zerolint.model import Diagnostic, Finding, Flow, Report, Step, Verdict

SCHEMA_VERSION = 1


def render(report: Report, options: RenderOptions) -> str:
    """The JSON document for ``report``; see :func:`zerolint.formats.render`."""
    if options.statistics:
        return _dump(_statistics(report, options))
    return _dump(_document(report, options))


def _dump(document: object) -> str:
    return escape_json_text(json.dumps(document, indent=2, ensure_ascii=False)) + "\n"


def _document(report: Report, options: RenderOptions) -> dict[str, Any]:
    root = options.root
    findings, proved = with_fingerprints(report, options)
    return {
        "version": SCHEMA_VERSION,
        "tool": {"name": "zerolint", "version": options.tool_version},
        "findings": [_finding(f, fingerprint, root) for f, fingerprint in findings],
        "proved": [_finding(f, fingerprint, root) for f, fingerprint in proved],
        "diagnostics": [
            _diagnostic(d, root) for d in sorted(report.diagnostics, key=Diagnostic.sort_key)
        ],
        "summary": _summary(report),
    }


def _finding(finding: Finding, fingerprint: str, root: str | None) -> dict[str, Any]:
    known_end = finding.end_line > 0
    return {
        "code": finding.code,
        "message": finding.message,
        "path": display_path(finding.path, root),
        "line": finding.line,
        "col": finding.col,
        "end_line": finding.end_line if known_end else None,
        "end_col": finding.end_col if known_end else None,
        "sink": finding.sink,
        "argument": finding.argument,
        "flows": [_flow(flow, root) for flow in finding.flows],
        "verdict": _verdict(finding.verdict),
        "fingerprint": fingerprint,
        "fixable": finding.fixable,
    }


def _flow(flow: Flow, root: str | None) -> dict[str, Any]:
    return {"steps": [_step(step, root) for step in flow.steps]}


def _step(step: Step, root: str | None) -> dict[str, Any]:
    return {
        "path": display_path(step.path, root),
        "line": step.line,
        "col": step.col,
        "code": step.code,
        "role": step.role,
        "op": {"kind": step.op.kind, "arg": step.op.arg},
        "note": step.note,
    }


def _verdict(verdict: Verdict | None) -> dict[str, Any] | None:
    if verdict is None:
        return None
    return {
        "status": verdict.status,
        "witness": dict(verdict.witness),
        "reason": verdict.reason,
        "flow_index": verdict.flow_index,
    }


def _diagnostic(diagnostic: Diagnostic, root: str | None) -> dict[str, Any]:
    return {
        "code": diagnostic.code,
        "path": display_path(diagnostic.path, root),
        "line": diagnostic.line,
        "col": diagnostic.col,
        "message": diagnostic.message,
    }


def _summary(report: Report) -> dict[str, Any]:
    by_code = Counter(f.code for f in report.findings)
    return {
        "files_checked": report.files_checked,
        "findings": len(report.findings),
        "proved": len(report.proved),
        "diagnostics": len(report.diagnostics),
        "files_not_checked": unchecked_files(report),
        "fixed": report.fixed,
        "by_code": dict(sorted(by_code.items())),
        "paths_not_found": [d.path for d in report.missing],
    }


def _statistics(report: Report, options: RenderOptions) -> list[dict[str, Any]]:
    rows = []
    for code, count in code_counts(report):
        meta = options.rules.get(code)
        rows.append(
            {
                "code": code,
                "name": meta.name if meta else "",
                "count": count,
                "fixable": fixable(report, code, meta),
                "fixable_count": fixable_count(report, code, meta),
            }
        )
    return rows
