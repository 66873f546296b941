"""The GitHub Actions format: one workflow command per finding, shown as an annotation.

    ::error file=F,line=L,col=C,endLine=L2,endColumn=C2,title=ZL001::<the text block>

The message is the finding's text block (header, every path step, the verdict) with its
newlines escaped, so the annotation and the job log show the same trace as the terminal.
Files that could not be checked become ``::warning``; proved-safe findings, with
--show-proved, ``::notice``. In a workflow (``GITHUB_WORKSPACE`` set), ``file=`` is relative
to the repository's checkout, which is what the runner reads it against, also for a step
run in a subfolder (``working-directory: backend``). Properties are escaped as the runner
reads them back (``%``, CR, LF, ``:``, ``,``): a file whose name holds a line break is
named as it is; other controls in a name are shown as pictures (``␛``), as in the text
format.
"""

from __future__ import annotations

import os
from dataclasses import replace

from zerolint.formats import (
    RenderOptions,
    display_path,
    printable,
    sorted_findings,
    visible_proved,
)
from zerolint.formats.text import finding_lines
from zerolint.model import Diagnostic, Finding, Report


def render(report: Report, options: RenderOptions) -> str:
    """The workflow commands for ``report``; see :func:`zerolint.formats.render`."""
    plain = replace(options, color=False)
    commands = [_finding_command("error", f, plain) for f in sorted_findings(report.findings)]
    commands += [_finding_command("notice", f, plain) for f in visible_proved(report, plain)]
    commands += [
        _diagnostic_command(d, plain) for d in sorted(report.diagnostics, key=Diagnostic.sort_key)
    ]
    return "".join(command + "\n" for command in commands)


def escape_data(text: str) -> str:
    """Escape a command's message as the Actions runner expects (``%``, CR, LF)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a property value: as :func:`escape_data`, plus ``:`` and ``,``."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _command(name: str, properties: list[tuple[str, object]], message: str) -> str:
    props = ",".join(f"{key}={escape_property(str(value))}" for key, value in properties)
    return f"::{name} {props}::{escape_data(message)}"


def _finding_command(name: str, finding: Finding, options: RenderOptions) -> str:
    properties: list[tuple[str, object]] = [
        ("file", _annotated(finding.path, options)),
        ("line", finding.line),
    ]
    properties += _columns(finding)
    title = finding.code if name == "error" else f"{finding.code} proved safe"
    properties.append(("title", title))
    # No `[*]`: an annotation has no summary line to say what it means (nor has Ruff's).
    lines = finding_lines(finding, options, mark=False)
    return _command(name, properties, "\n".join(lines))


def _annotated(path: str, options: RenderOptions) -> str:
    """The file an annotation is on: as shown, or, in a workflow, from the checkout."""
    shown = display_path(path, options.root)
    workspace = os.environ.get("GITHUB_WORKSPACE")
    if workspace and path != "-":  # text read from stdin is no file of the checkout
        full = os.path.abspath(path)  # a relative path is from the current folder
        inside = os.path.relpath(full, os.path.abspath(workspace))
        shown = full if inside == ".." or inside.startswith(".." + os.sep) else inside
        shown = shown.replace(os.sep, "/")
    return _printable_but_line_breaks(shown)


def _printable_but_line_breaks(name: str) -> str:
    """``name`` with the controls a terminal would act on made visible, but CR and LF, which
    ``escape_property`` writes as ``%0D`` and ``%0A`` and the runner reads back: the file
    property names the file (``a\\nb.py``), not a picture of it (``a␊b.py``), and still
    holds no line break."""
    return "\n".join("\r".join(map(printable, line.split("\r"))) for line in name.split("\n"))


def _columns(finding: Finding) -> list[tuple[str, object]]:
    # The runner drops an annotation that has col/endColumn on a span of several lines, or
    # an endColumn before col: a multi-line call gets lines only.
    if finding.end_line > finding.line:
        return [("endLine", finding.end_line)]
    columns: list[tuple[str, object]] = [("col", finding.col)] if finding.col > 0 else []
    if finding.end_line == finding.line:
        columns.append(("endLine", finding.end_line))
        if finding.end_col > finding.col > 0:
            columns.append(("endColumn", finding.end_col))
    return columns


def _diagnostic_command(diagnostic: Diagnostic, options: RenderOptions) -> str:
    properties: list[tuple[str, object]] = [("file", _annotated(diagnostic.path, options))]
    if diagnostic.line > 0:
        properties.append(("line", diagnostic.line))
        if diagnostic.col > 0:
            properties.append(("col", diagnostic.col))
    properties.append(("title", diagnostic.code))
    message = f"{diagnostic.code} {printable(diagnostic.message)}"
    return _command("warning", properties, message)
