"""Render a :class:`~zerolint.model.Report` as text, concise text, JSON, SARIF or GitHub
annotations.

Every format renders the same objects (findings, their flows and steps, the verdict), so
what a user reads in a terminal, in a JSON file and in code scanning is one path. This
module holds what the formats share: the options, rule metadata, how a path and a step are
shown, the sort order and the fingerprint; each format lives in its own module, imported
only when asked for.

Conventions every format follows (the analyzer produces them): lines are 1-based, columns
are 1-based, ``end_col`` is the column just past the end of the sink call (exclusive, as in
SARIF and Ruff), and ``end_line == 0`` means the end is unknown.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import re
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import TYPE_CHECKING, TextIO

from zerolint import __version__
from zerolint.codes import LIMIT, NOT_CHECKED, NOT_FIXED
from zerolint.model import Finding, Report, Step

if TYPE_CHECKING:
    from zerolint.rules import Rule

FORMATS: tuple[str, ...] = ("text", "concise", "json", "sarif", "github")
# Formats whose --statistics output is defined (as in Ruff: a table, or a JSON list).
STATISTICS_FORMATS: tuple[str, ...] = ("text", "concise", "json")
# Formats that colour their output on a terminal.
COLOR_FORMATS: tuple[str, ...] = ("text", "concise")

_MODULES = {
    "text": "zerolint.formats.text",
    "concise": "zerolint.formats.concise",
    "json": "zerolint.formats.json_format",
    "sarif": "zerolint.formats.sarif",
    "github": "zerolint.formats.github",
}


@dataclass(frozen=True, slots=True)
class RuleMeta:
    """What the formats say about a rule: its name, a one-line summary and its docs.

    ``doc`` is the rule's Markdown documentation (what it does, why, example, fix); SARIF
    carries it as the rule's help, the other formats only use the name.
    """

    code: str
    name: str
    summary: str
    doc: str = ""
    help_uri: str | None = None  # None: the installed distribution's (``uri()``)
    fixable: bool = False
    # For code scanning: how sure a result is (SARIF's precision), how bad (problem.severity)
    # and what it is about (tags).
    precision: str = "high"
    severity: str = "error"
    tags: tuple[str, ...] = ()

    def uri(self) -> str:
        """Where the documentation is on the web (worked out only when a format asks:
        reading the distribution's metadata costs more than a cached run)."""
        return help_uri(self.code) if self.help_uri is None else self.help_uri


def rule_metadata(rules: Iterable[Rule]) -> dict[str, RuleMeta]:
    """The formats' view of the rules shipped in ``rules/`` (see ``zerolint.rules``)."""
    return {
        rule.code: RuleMeta(
            code=rule.code,
            name=rule.name,
            summary=rule.summary,
            doc=rule.doc,
            fixable=bool(rule.fix),
            # Every result comes with a path, and Z3 either gives a witness or says why not.
            precision="high",
            severity="error",
            tags=("correctness", "reliability", "gpu", "zero-length", rule.name),
        )
        for rule in rules
    }


def code_metadata() -> dict[str, RuleMeta]:
    """The formats' view of the ZL9xx codes (see ``zerolint.codes``)."""
    from zerolint.codes import CODES

    return {
        c.code: RuleMeta(
            code=c.code,
            name=c.name,
            summary=c.summary,
            doc=c.doc,
            precision="very-high",
            severity="recommendation" if c.opt_in else "warning",
            tags=("maintainability",) if c.opt_in else ("tool-execution",),
        )
        for c in CODES
    }


def help_uri(code: str) -> str:
    """Where a rule's documentation is on the web: the ``Documentation`` URL the installed
    distribution declares (``[project.urls]``), with the code as its anchor; empty when it
    declares none (the full text is still in each rule's ``help``)."""
    base = _documentation_url()
    return f"{base}#{code.lower()}" if base else ""


_DOC_URL: list[str] = []


def _documentation_url() -> str:
    if not _DOC_URL:
        url = ""
        try:
            from importlib.metadata import PackageNotFoundError, metadata

            for entry in metadata("zerolint").get_all("Project-URL") or ():
                label, _, value = entry.partition(",")
                if label.strip().lower() in ("documentation", "docs", "homepage"):
                    url = value.strip()
                    break
        except (PackageNotFoundError, ValueError):  # pragma: no cover - not installed
            url = ""
        _DOC_URL.append(url)
    return _DOC_URL[0]


@dataclass(frozen=True, slots=True)
class RenderOptions:
    """The choices the CLI makes for one rendering (see :func:`render`)."""

    color: bool = False
    show_proved: bool = False
    statistics: bool = False
    quiet: bool = False
    root: str | None = None
    rules: Mapping[str, RuleMeta] = field(default_factory=dict)
    tool_version: str = ""


def render(
    report: Report,
    fmt: str,
    *,
    color: bool = False,
    show_proved: bool = False,
    statistics: bool = False,
    quiet: bool = False,
    root: str | None = None,
    rules: Mapping[str, RuleMeta] | None = None,
    tool_version: str | None = None,
) -> str:
    """Return ``report`` rendered in ``fmt`` (one of :data:`FORMATS`): lines that each end
    in a newline, or nothing when there is nothing to say (github, or text and concise
    with --quiet).

    The output depends only on the arguments, the current directory (when ``root`` is
    None) and nothing else: findings are sorted by path, line, column and code whatever
    order the report holds them in, so two runs print the same bytes. The report is not
    modified.

    ``color`` adds ANSI colours (text and concise only; the caller decides, see
    :func:`use_color`).
    ``show_proved`` includes the findings the SMT judge proved safe. ``statistics``
    replaces the findings by counts per code (text, concise and json only). ``quiet``
    drops the summary line of text and concise. ``root`` is the directory paths are shown
    relative to (default: the current directory). ``rules`` maps codes to their metadata
    (names for --statistics, descriptions and help for SARIF). ``tool_version`` defaults
    to zerolint's version.

    Raises ValueError for an unknown format, or --statistics with sarif or github.
    """
    if fmt not in _MODULES:
        raise ValueError(f"unknown output format {fmt!r} (choose from {', '.join(FORMATS)})")
    if statistics and fmt not in STATISTICS_FORMATS:
        raise ValueError(f"--statistics works with --format text, concise or json, not {fmt}")
    options = RenderOptions(
        color=color,
        show_proved=show_proved,
        statistics=statistics,
        quiet=quiet,
        root=root,
        rules=dict(rules or {}),
        tool_version=__version__ if tool_version is None else tool_version,
    )
    module = importlib.import_module(_MODULES[fmt])
    text: str = module.render(report, options)
    return text


def reads_rules(fmt: str, statistics: bool) -> bool:
    """Whether ``render`` reads the ``rules`` it is given (the rules' names for
    --statistics, their descriptions for SARIF): else the caller need not load them."""
    return statistics or fmt == "sarif"


def use_color(stream: TextIO | None = None, environ: Mapping[str, str] | None = None) -> bool:
    """Whether output written to ``stream`` (default stdout) should be coloured.

    ``FORCE_COLOR`` (set and not empty or ``0``) forces colour on, even through a pipe;
    otherwise ``NO_COLOR`` (set and not empty) or ``TERM=dumb`` turns it off; otherwise
    colour is on exactly when the stream is a terminal.
    """
    env = os.environ if environ is None else environ
    stream = sys.stdout if stream is None else stream
    if env.get("FORCE_COLOR", "") not in ("", "0"):
        return True
    if env.get("NO_COLOR", "") or env.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


# What a terminal would act on rather than show: C0 controls but tab (ESC starts escape
# sequences, CR and BS overwrite what was printed), DEL, C1 controls (0x9B is a CSI on
# its own) and the bidirectional overrides ("Trojan Source", CVE-2021-42574).
_UNPRINTABLE = re.compile(
    "[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)


def _shown(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)  # the Unicode control picture: ESC reads ␛, as in Ruff
    if code == 0x7F:
        return "\u2421"
    return f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every character a terminal would act on made visible (control
    pictures such as ``␛`` for C0 controls, ``\\u202e`` for C1 and bidi controls), so that a
    source line or a file name cannot move the cursor, clear the screen or reorder what
    follows. Tab stays."""
    return _UNPRINTABLE.sub(_shown, text)


def escape_json_text(text: str) -> str:
    """JSON text (already valid) with C1 and bidi controls written as ``\\uXXXX``: the same
    data, but safe to print to a terminal (``json.dumps`` escapes only C0 controls). So are
    lone surrogates, which stand for the bytes of a file name that is not UTF-8
    (``os.fsdecode``): the JSON stays UTF-8, and the name reads back as Python holds it."""
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


_JSON_UNSAFE = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def display_path(path: str, root: str | None = None) -> str:
    """``path`` as users see it: relative to ``root`` (default: the current directory) with
    ``/`` separators when it lies under it, otherwise exactly as given.

    A relative ``path`` is taken relative to the current directory, where it was given.
    """
    relative = relative_to_root(path, root)
    return path if relative is None else relative


def relative_to_root(path: str, root: str | None = None) -> str | None:
    """``path`` relative to ``root`` (default: the current directory) with ``/`` separators,
    or None when it does not lie under ``root``."""
    base = root_dir(root)
    absolute = os.path.abspath(path)
    try:
        under = os.path.commonpath([absolute, base]) == base
    except ValueError:  # different drives on Windows
        return None
    if not under:
        return None
    return PurePath(os.path.relpath(absolute, base)).as_posix()


def root_dir(root: str | None) -> str:
    """The absolute directory paths are shown relative to."""
    return os.path.abspath(root if root is not None else os.getcwd())


def sorted_findings(findings: list[Finding]) -> list[Finding]:
    """Findings in output order: path, line, column, code."""
    return sorted(findings, key=Finding.sort_key)


def visible_proved(report: Report, options: RenderOptions) -> list[Finding]:
    """The proved-safe findings a format shows: all of them with --show-proved, else none."""
    return sorted_findings(report.proved) if options.show_proved else []


# What a step does, in words, when the analyzer left no note of its own.
_OP_NOTES = {
    "floordiv": "floor division",
    "truncdiv": "division rounded toward 0",
    "rshift": "right shift",
    "ceildiv": "ceil division",
    "fill_zero": "zero fill",
    "pad_zero": "zero padding",
    "clamp_min": "clamp (min)",
    "clamp_max": "clamp (max)",
    "zero_to": "zero rows replaced",
    "below1_to": "rows below 1 replaced",
    "opaque": "not modelled",
}
_ROLE_NOTES = {
    "sink": "sink",
    "call": "call",
    "return": "return",
    "sanitizer": "sanitizer",
    "source": "source",
}


def step_note(step: Step) -> str:
    """The short annotation shown after a step's code: the analyzer's note, else what its
    operation or its role is called; empty for a plain flow step."""
    if step.note:
        return step.note
    return _OP_NOTES.get(step.op.kind) or _ROLE_NOTES.get(step.role, "")


def step_code(step: Step, limit: int = 120) -> str:
    r"""A step's source code on one line, cut with ``...`` past ``limit`` characters (the
    JSON output keeps the full text). Continuation lines are joined by one space, or none
    inside brackets: ``f(\n    x,\n)`` reads ``f(x,)``."""
    code = ""
    for piece in (line.strip() for line in step.code.strip().splitlines()):
        if code and not code.endswith(("(", "[", "{")) and not piece.startswith((")", "]", "}")):
            code += " "
        code += piece
    if len(code) > limit:
        return code[: limit - 3].rstrip() + "..."
    return code


Fingerprinted = list[tuple[Finding, str]]


def with_fingerprints(
    report: Report, options: RenderOptions
) -> tuple[Fingerprinted, Fingerprinted]:
    """The findings and the proved findings a format shows (see :func:`visible_proved`),
    in output order, each with a fingerprint that is stable across runs and across edits
    that only move lines.

    The fingerprint hashes the code, the shown path, the sink and its argument, plus the
    rank among findings with those same four in the file (in line order, proved ones
    counted too, so a finding's fingerprint does not change when another one is proved).
    """
    seen: Counter[tuple[str, str, str, str]] = Counter()
    prints: dict[int, str] = {}
    for finding in sorted_findings([*report.findings, *report.proved]):
        key = (
            finding.code,
            display_path(finding.path, options.root),
            finding.sink,
            finding.argument,
        )
        rank = seen[key]
        seen[key] += 1
        # A path that is not UTF-8 holds its bytes as surrogates (os.fsdecode).
        text = "\0".join((*key, str(rank))).encode("utf-8", "surrogateescape")
        digest = hashlib.sha256(text).hexdigest()
        prints[id(finding)] = digest[:32]
    # Keyed by identity: a Finding is a mutable dataclass, so it has no hash.
    findings = [(f, prints[id(f)]) for f in sorted_findings(report.findings)]
    proved = [(f, prints[id(f)]) for f in visible_proved(report, options)]
    return findings, proved


def verdict_line(finding: Finding) -> str:
    """The judge's answer in one line (empty when no judge ran): the witness of an unsafe
    finding, why it is unproved, or why it is safe; names the path when there are several."""
    verdict = finding.verdict
    if verdict is None:
        return ""
    which = ""
    if len(finding.flows) > 1 and verdict.flow_index is not None:
        which = f" (path {verdict.flow_index + 1})"
    if verdict.status == "unsafe":
        if verdict.witness:
            return f"witness{which}: {verdict.witness_text()}"
        return f"unsafe{which}: {verdict.reason or 'no witness recorded'}"
    if verdict.status == "safe":
        return f"proved safe{which}: {verdict.reason or 'no witness exists'}"
    return f"unproved{which}: {verdict.reason or 'the judge could not decide'}"


def code_counts(report: Report) -> list[tuple[str, int]]:
    """(code, count) over findings and diagnostics, most frequent first, then by code, as
    ``ruff --statistics`` orders them."""
    counts = Counter(f.code for f in report.findings)
    counts.update(d.code for d in report.diagnostics)
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


"""The one diagnostic about a checked file: a --fix that could not be applied."""


def unchecked_files(report: Report) -> int:
    """How many distinct files could not be checked (ZL901-ZL905); ZL910 and ZL930 are
    about files that were, and so is a diagnostic of another kind."""
    return len({d.path for d in report.diagnostics if d.code in NOT_CHECKED})


def limits_reached(report: Report) -> int:
    """How many sink calls a limit of the analysis was reached at (ZL930)."""
    return sum(d.code == LIMIT for d in report.diagnostics)


def unfixed_files(report: Report) -> int:
    """How many distinct files have a finding --fix could not fix (ZL910)."""
    return len({d.path for d in report.diagnostics if d.code == NOT_FIXED})


def fixable(report: Report, code: str, meta: RuleMeta | None) -> bool:
    """Whether ``--fix`` fixes every finding of ``code`` (``fixable_count``)."""
    count = sum(1 for f in report.findings if f.code == code)
    return 0 < fixable_count(report, code, meta) == count


def fixable_count(report: Report, code: str, meta: RuleMeta | None) -> int:
    """How many findings of ``code`` ``--fix`` fixes: those marked so where the analysis
    worked it out (``Finding.fixable``), else all of them if the rule has a fix at all."""
    findings = [f for f in report.findings if f.code == code]
    if any(f.fixable is not None for f in findings):
        return sum(1 for f in findings if f.fixable)
    return len(findings) if meta and meta.fixable else 0


def plural(count: int, noun: str) -> str:
    """``1 error``, ``2 errors``."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
