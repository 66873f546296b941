"""The terminal format, shaped like Ruff's: one block per finding, then a summary line.

    vllm/v1/attention/backends/mla/indexer.py:951:53: ZL001 <message>
      path 1:
        934: seq_lens //= self.compress_ratio   floor division
        ...
      witness: B=32, seq_len=1, compress_ratio=4 -> every context length 0

Colour is added only when asked for; without it the output holds no escape codes, and
none can come from the checked code: control characters in source lines, file names and
messages are shown as control pictures (``␛``), as Ruff does.
"""

from __future__ import annotations

from collections.abc import Sequence

from zerolint.formats import (
    RenderOptions,
    code_counts,
    display_path,
    fixable,
    fixable_count,
    limits_reached,
    plural,
    printable,
    sorted_findings,
    step_code,
    step_note,
    unchecked_files,
    unfixed_files,
    verdict_line,
    visible_proved,
)
from zerolint.model import Diagnostic, Finding, Report, Step

# ANSI SGR codes.
_BOLD = "1"
_DIM = "2"
_RED = "31"
_GREEN = "32"
_YELLOW = "33"
_CYAN = "36"

# Notes line up in one column unless a step is longer than this.
_NOTE_COLUMN_LIMIT = 72
_NOTE_GAP = 3


class _Painter:
    """Wraps text in ANSI codes when colour is on, returns it unchanged otherwise."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, text: str, *codes: str) -> str:
        if not self.enabled or not text:
            return text
        return f"\x1b[{';'.join(codes)}m{text}\x1b[0m"


def render(report: Report, options: RenderOptions) -> str:
    """The whole text output for ``report``; see :func:`zerolint.formats.render`."""
    paint = _Painter(options.color)
    if options.statistics:
        lines = _statistics(report, options, paint)
    else:
        lines = _body(report, options, paint)
        if lines and not options.quiet:
            lines.append("")  # as Ruff: a blank line between the last block and the summary
    if not options.quiet:
        lines.append(_summary(report, paint))
    return "".join(line + "\n" for line in lines)


def render_concise(report: Report, options: RenderOptions) -> str:
    """Ruff's ``concise`` format: each finding's ``path:line:col: CODE message`` line, each
    file that could not be checked, the proved ones under their heading
    (``--show-proved``), then the summary line; without the paths and verdicts."""
    paint = _Painter(options.color)
    if options.statistics:
        lines = _statistics(report, options, paint)
    else:
        lines = [_header(f, options, paint) for f in sorted_findings(report.findings)]
        ordered = sorted(report.diagnostics, key=Diagnostic.sort_key)
        lines += [_diagnostic_line(d, options, paint) for d in ordered]
        proved = visible_proved(report, options)
        if proved:
            lines.append(paint("Proved safe by the SMT judge:", _BOLD, _GREEN))
            lines += [_header(f, options, paint, mark=False) for f in proved]
    if not options.quiet:
        lines.append(_summary(report, paint))
    return "".join(line + "\n" for line in lines)


def _body(report: Report, options: RenderOptions, paint: _Painter) -> list[str]:
    blocks = [finding_lines(f, options) for f in sorted_findings(report.findings)]
    proved = visible_proved(report, options)
    if proved:
        proved_blocks = [finding_lines(f, options, mark=False) for f in proved]
        proved_blocks[0].insert(0, paint("Proved safe by the SMT judge:", _BOLD, _GREEN))
        blocks.extend(proved_blocks)
    ordered = sorted(report.diagnostics, key=Diagnostic.sort_key)
    diagnostics = [_diagnostic_line(d, options, paint) for d in ordered]
    if diagnostics:
        blocks.append(diagnostics)
    lines: list[str] = []
    for block in blocks:
        if lines:
            lines.append("")
        lines.extend(block)
    return lines


def _location(path: str, line: int, col: int, options: RenderOptions, paint: _Painter) -> str:
    shown = paint(printable(display_path(path, options.root)), _BOLD)
    if line <= 0:
        return f"{shown}:"
    if col <= 0:
        return f"{shown}:{line}:"
    return f"{shown}:{line}:{col}:"


def finding_lines(finding: Finding, options: RenderOptions, *, mark: bool = True) -> list[str]:
    """One finding's block: the ``path:line:col: CODE [*] message`` line (``[*]`` where
    ``--fix`` would clamp it, unless ``mark`` is off: a finding proved safe), each path's
    steps indented, and the verdict; coloured when ``options.color`` is set."""
    paint = _Painter(options.color)
    lines = [_header(finding, options, paint, mark=mark)]
    labelled = [
        [(_step_label(step, finding, options), step) for step in _one_per_line(flow.steps)]
        for flow in finding.flows
    ]
    column = _note_column(labelled)
    for number, flow_steps in enumerate(labelled, start=1):
        if len(labelled) > 1:
            lines.append(f"  {paint(f'path {number}:', _BOLD)}")
        lines.extend(_step_line(label, step, column, paint) for label, step in flow_steps)
    verdict = printable(verdict_line(finding))
    if verdict:
        lines.append(f"  {_paint_verdict(verdict, finding, paint)}")
    return lines


def _header(finding: Finding, options: RenderOptions, paint: _Painter, *, mark: bool = True) -> str:
    # As Ruff marks what `--fix` would change; only a finding the analysis marked is.
    shown = f"{paint('[*]', _CYAN)} " if mark and finding.fixable else ""
    return (
        f"{_location(finding.path, finding.line, finding.col, options, paint)} "
        f"{paint(finding.code, _BOLD, _RED)} {shown}{printable(finding.message)}"
    )


def _one_per_line(steps: Sequence[Step]) -> list[Step]:
    """A step that repeats the line before it with nothing to say is not shown again: in
    ``lens = (x + 3) // 4`` the offset and the division are one line, "floor division"."""
    merged: list[Step] = []
    for step in steps:
        same_line = merged and (merged[-1].path, merged[-1].line) == (step.path, step.line)
        if same_line and not step_note(step):
            continue
        if same_line and not step_note(merged[-1]):
            merged[-1] = step
            continue
        merged.append(step)
    return merged


def _step_label(step: Step, finding: Finding, options: RenderOptions) -> str:
    # The finding's own file goes without saying; a step elsewhere names its file.
    line = str(step.line) if step.line > 0 else "?"
    if step.path == finding.path:
        return line
    return f"{printable(display_path(step.path, options.root))}:{line}"


def _note_column(labelled: list[list[tuple[str, Step]]]) -> int:
    # Notes line up in one column when every step is short enough; otherwise each note
    # just follows its code, so one long line does not push all the others far right.
    widths = [
        len(f"{label}: {printable(step_code(step))}") for flow in labelled for label, step in flow
    ]
    if max(widths, default=0) > _NOTE_COLUMN_LIMIT:
        return 0
    return max(widths, default=0) + _NOTE_GAP


def _step_line(label: str, step: Step, column: int, paint: _Painter) -> str:
    code = printable(step_code(step))
    line = f"    {paint(label, _CYAN)}: {code}"
    note = printable(step_note(step))
    if note:
        gap = max(column - len(f"{label}: {code}"), _NOTE_GAP)
        line += " " * gap + paint(note, _DIM)
    return line


def _paint_verdict(text: str, finding: Finding, paint: _Painter) -> str:
    label, _, rest = text.partition(":")
    status = finding.verdict.status if finding.verdict else "unknown"
    colour = {"unsafe": _RED, "safe": _GREEN}.get(status, _YELLOW)
    return f"{paint(label + ':', _BOLD, colour)}{rest}"


def diagnostic_line(diagnostic: Diagnostic, options: RenderOptions) -> str:
    """One ``path:line:col: CODE message`` line, as the report prints it."""
    return _diagnostic_line(diagnostic, options, _Painter(options.color))


def _diagnostic_line(diagnostic: Diagnostic, options: RenderOptions, paint: _Painter) -> str:
    location = _location(diagnostic.path, diagnostic.line, diagnostic.col, options, paint)
    return f"{location} {paint(diagnostic.code, _BOLD, _YELLOW)} {printable(diagnostic.message)}"


def _statistics(report: Report, options: RenderOptions, paint: _Painter) -> list[str]:
    counts = code_counts(report)
    count_width = max((len(str(n)) for _, n in counts), default=0)
    code_width = max((len(code) for code, _ in counts), default=0)
    lines = []
    for code, count in counts:
        meta = options.rules.get(code)
        # As Ruff: every finding fixable, some of them, or none.
        fixes = fixable_count(report, code, meta)
        mark = "[*]" if fixable(report, code, meta) else "[~]" if fixes else "[ ]"
        name = f"{mark} {meta.name}" if meta else ""
        row = f"{count:>{count_width}}\t{paint(code.ljust(code_width), _BOLD, _RED)}\t{name}"
        lines.append(row.rstrip())
    return lines


def _summary(report: Report, paint: _Painter) -> str:
    errors = len(report.findings)
    unchecked = unchecked_files(report)
    unfixed = unfixed_files(report)
    limits = limits_reached(report)
    if report.fixed:  # as Ruff says it: what there was, what --fix did, what is left
        found = plural(errors + report.fixed, "error")
        parts = [f"Found {found} ({report.fixed} fixed, {errors} remaining)."]
    elif errors:
        parts = [f"Found {plural(errors, 'error')}."]
    elif unchecked or unfixed or limits or report.missing:
        parts = ["No errors found."]
    else:
        parts = [paint("All checks passed!", _GREEN)]
    if report.proved:
        parts.append(f"{len(report.proved)} proved safe by the SMT judge.")
    if unchecked:
        parts.append(f"{plural(unchecked, 'file')} could not be checked.")
    if unfixed:
        parts.append(f"{plural(unfixed, 'file')} could not be fixed.")
    if limits:  # ZL930: a finding may be missing there
        parts.append(f"{plural(limits, 'analysis limit')} reached.")
    if report.missing:  # named on stderr
        parts.append(f"{plural(len(report.missing), 'path')} not found.")
    summary = " ".join(parts)
    fixable = sum(1 for f in report.findings if f.fixable)
    if fixable:  # as Ruff: on a line of its own
        summary += f"\n{paint('[*]', _CYAN)} {fixable} fixable with `{report.fix_with}`."
    return summary
