"""Suppression comments, read from real comment tokens (never from inside a string):

    call(...)  # noqa: ZL001            one line of a finding's call (a bare ``# noqa`` too)
    call(...)  # zerolint: ignore[ZL001]
    # zerolint: noqa                    on a line of its own: the whole file
    # zerolint: noqa: ZL001             the whole file, for these codes

as ``# noqa`` and ``# ruff: noqa`` work in Ruff. :func:`unused` finds the ones that
suppress nothing (ZL920, opt-in like Ruff's RUF100).
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from zerolint.codes import UNUSED
from zerolint.model import Finding

NOQA = re.compile(r"#[^\S\r\n]*noqa", re.IGNORECASE)
"""Where a noqa comment starts (the first in a comment decides, as in Ruff); what follows
the word is read by :func:`read_noqa`."""
# A whole word: `# zerolint: ignored upstream` is a remark, not a suppression of every code.
IGNORE = re.compile(r"#\s*zerolint:\s*ignore(?![\w-])(?:\[(?P<codes>[^\]]*)\])?", re.IGNORECASE)
FILE_NOQA = re.compile(r"^#\s*zerolint:\s*noqa", re.IGNORECASE)
"""A whole-file comment: what follows the word is read by :func:`read_noqa`, as Ruff reads
its ``# ruff: noqa``."""
_CODE = re.compile(r"[A-Za-z]+[0-9]+")  # in any case (`NOQA: zl001`); ASCII, as Ruff's
_REST = re.compile(r"[^\r\n]*")


@dataclass(frozen=True, slots=True)
class Noqa:
    """What a noqa comment says, read from the text after its word ``noqa``: the codes it
    names, in order and in capitals (None: every code), or that it is invalid and
    suppresses nothing (``codes``: those read before it failed); ``end``: where (in that
    text) the last code read ends, or where reading failed, for an invalid one."""

    codes: tuple[str, ...] | None
    valid: bool
    end: int


def read_noqa(rest: str) -> Noqa:
    """A noqa comment read as Ruff reads one, from ``rest``, the comment's text after the
    word ``noqa``:

    - nothing, another comment (``#``), or a space and words that start with no colon
      (``# noqa because ...``): every code;
    - a colon (spaces may come before it) and a list of codes, separated by spaces or
      commas; the first word after a code that is no code (``# noqa: ZL001 the kernel
      clamps``, ``# noqa: ZL001, see #12``) starts a remark, and reading stops there;
    - invalid, suppressing nothing: any other character after the word (``# noqa;ZL001``),
      a colon followed by no code (``# noqa:``, ``# noqa: ZL-001``), or a code followed by
      anything but a space, a comma, a ``#``, the end or another code run into it
      (``# noqa: ZL001: the kernel clamps``, ``# noqa: ZL001x``)."""
    if not rest or rest[0] == "#":
        return Noqa(ALL, True, 0)
    at = 0
    if rest[0].isspace():
        at = len(rest) - len(rest.lstrip())
        if rest[at : at + 1] != ":":
            return Noqa(ALL, True, 0)
    elif rest[0] != ":":
        return Noqa((), False, 0)
    at += 1
    codes: list[str] = []
    end, joined = at, False
    while at < len(rest):
        if rest[at].isspace() or rest[at] == ",":
            at += 1
            continue
        m = _CODE.match(rest, at)
        if m is None:
            if joined:  # `ZL001ZLx`: a code run into the one before must be whole
                return Noqa(tuple(codes), False, at)
            break  # the first word that is no code starts a remark
        codes.append(m[0].upper())
        at = end = m.end()
        after = rest[at : at + 1]
        joined = after.isascii() and after.isalpha()  # `ZL001ZL004`, as Ruff takes it
        if not (joined or after in ("", ",", "#") or after.isspace()):
            return Noqa(tuple(codes), False, at)  # `ZL001:`, `ZL001-x`, `ZL001é`
    return Noqa(tuple(codes), bool(codes), end if codes else at)


ALL = None  # a comment that names no code suppresses every code
KEYWORD = re.compile(r"noqa|zerolint", re.IGNORECASE)
"""Every suppression comment holds one of these words: a line without either has none."""


@dataclass(frozen=True, slots=True)
class Comment:
    """One suppression comment: where it is, which codes it names (None: all), its kind."""

    line: int
    col: int
    codes: frozenset[str] | None
    kind: str  # "noqa", "ignore" or "file"

    def covers(self, code: str) -> bool:
        return self.codes is None or code in self.codes


@dataclass(slots=True)
class Suppressions:
    """The suppression comments of one file."""

    by_line: dict[int, list[Comment]] = field(default_factory=dict)
    file_level: list[Comment] = field(default_factory=list)
    # Comments that mean to suppress but are invalid (``read_noqa``): (line, the
    # directive, whether it is a whole-file one). They suppress nothing.
    invalid: list[tuple[int, str, bool]] = field(default_factory=list)

    def matching(self, finding: Finding) -> list[Comment]:
        """The comments that suppress ``finding``: file-level ones naming its code, or one
        on a line of its call."""
        found = [c for c in self.file_level if c.covers(finding.code)]
        last = max(finding.line, finding.end_line)
        for line in range(finding.line, last + 1):
            found += [c for c in self.by_line.get(line, ()) if c.covers(finding.code)]
        return found

    def comments(self) -> list[Comment]:
        return sorted(
            [*self.file_level, *(c for cs in self.by_line.values() for c in cs)],
            key=lambda c: (c.line, c.col),
        )


def _codes(text: str | None, split: str) -> frozenset[str] | None:
    if text is None:
        return ALL
    return frozenset(c.strip().upper() for c in re.split(split, text) if c.strip())


def _set(codes: tuple[str, ...] | None) -> frozenset[str] | None:
    return ALL if codes is None else frozenset(codes)


def universal(text: str) -> str:
    """``text`` with its lines ended by ``\\n`` alone: a lone ``\\r`` ends a line for
    Python's parser (the findings' lines) as ``\\r\\n`` does, but not for ``tokenize`` fed
    lines split at ``\\n``. Columns do not change."""
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def parse(text: str) -> Suppressions:
    """The suppression comments in ``text`` (Python source); a file that cannot be
    tokenized has none (it cannot have findings either)."""
    out = Suppressions()
    if not KEYWORD.search(text):  # in any case, as the comments' own patterns read them
        return out
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(universal(text)).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return out
    own_line: set[int] = set()
    code_lines: set[int] = set()
    for tok in tokens:
        if tok.type not in (
            tokenize.COMMENT,
            tokenize.NL,
            tokenize.NEWLINE,
            tokenize.INDENT,
            tokenize.DEDENT,
            tokenize.ENDMARKER,
        ):
            code_lines.add(tok.start[0])
    for tok in tokens:
        if tok.type != tokenize.COMMENT:
            continue
        line, col = tok.start
        comment = tok.string
        whole = FILE_NOQA.match(comment)
        if whole is not None and line not in code_lines:
            read = read_noqa(comment[whole.end() :])
            if read.valid:
                own_line.add(line)
                out.file_level.append(Comment(line, col + 1, _set(read.codes), "file"))
            else:
                out.invalid.append((line, "# zerolint: noqa", True))
            continue
        m = NOQA.search(comment)  # the first decides, as in Ruff
        if m is not None:
            read = read_noqa(comment[m.end() :])
            if read.valid:
                out.by_line.setdefault(line, []).append(
                    Comment(line, col + m.start() + 1, _set(read.codes), "noqa")
                )
            else:
                out.invalid.append((line, "# noqa", False))
        m = IGNORE.search(comment)
        if m is not None:
            codes = _codes(m["codes"], r",")
            out.by_line.setdefault(line, []).append(
                Comment(line, col + m.start() + 1, codes, "ignore")
            )
    return out


FILE_LINE = re.compile(r"^\s*#\s*zerolint:\s*noqa", re.IGNORECASE | re.MULTILINE)
"""Where a whole-file comment may start (a line that is only a comment)."""


def _keyword_lines(text: str) -> set[int]:
    """The numbers of the lines (from 1) of ``text`` holding ``KEYWORD``, numbered as
    ``parse`` and Python's parser number them (``universal``)."""
    lines: set[int] = set()
    line, counted = 1, 0
    text = universal(text)
    for match in KEYWORD.finditer(text):
        line += text.count("\n", counted, match.start())
        counted = match.start()
        lines.add(line)
    return lines


def _may_suppress(text: str, findings: list[Finding]) -> bool:
    """Whether a comment of ``text`` can suppress one of ``findings`` (all of that file):
    a line that may hold a whole-file comment, or a keyword on a line of a finding's call.
    When not, tokenizing the file would find nothing that matters to them."""
    text = universal(text)  # a line may start after a lone \r too
    if FILE_LINE.search(text):
        return True
    lines = _keyword_lines(text)
    return any(
        line in lines
        for finding in findings
        for line in range(finding.line, max(finding.line, finding.end_line) + 1)
    )


def split(
    findings: Iterable[Finding], texts: Mapping[str, str]
) -> tuple[list[Finding], list[Finding]]:
    """(kept, suppressed): ``findings`` whose file (``texts`` maps a finding's path to its
    source) carries no comment suppressing them, and the others. A file is tokenized only
    where a comment can suppress one of its findings (``_may_suppress``)."""
    by_path: dict[str, list[Finding]] = {}
    for finding in findings:
        by_path.setdefault(finding.path, []).append(finding)
    cache: dict[str, Suppressions] = {}
    for path, mine in by_path.items():
        text = texts.get(path, "")
        cache[path] = parse(text) if _may_suppress(text, mine) else Suppressions()
    kept, dropped = [], []
    for finding in findings:
        (dropped if cache[finding.path].matching(finding) else kept).append(finding)
    return kept, dropped


def _may_hold_ours(text: str) -> bool:
    """Whether ``text`` may hold a comment that :func:`unused` reports: one with the word
    ``zerolint``, or a ``# noqa`` naming a ZL code. Each comment is a slice of the text
    that runs to its line's end, and ``NOQA`` finds in the text every start it finds in a
    comment (a match holds one ``#``, so two never overlap), with the same rest of the
    line after it, so a text without either has no such comment; most files with a
    ``noqa`` name only other tools' codes and need no tokenizing."""
    # Plain substring tests: a case-blind regex search is slow. Python's case-blind match
    # takes two non-ASCII letters for an ASCII one of these words (U+0130 and the dotless
    # U+0131 for i), and lowercasing makes no other non-ASCII letter one of theirs.
    folded = text if text.isascii() else text.replace("\u0130", "i").replace("\u0131", "i")
    folded = folded.lower()
    if "zerolint" in folded:
        return True
    return "noqa" in folded and any(
        c.startswith("ZL")
        for m in NOQA.finditer(text)
        for c in read_noqa(_REST.match(text, m.end())[0]).codes or ()  # a bare noqa: not ours
    )


def may_hold_ours(data: bytes) -> bool:
    """Whether a file of these bytes may hold a comment :func:`unused` reports: False for
    bytes with neither ``zerolint`` nor ``noqa`` in any case, without decoding the file
    (``_may_hold_ours`` decides the others). A non-ASCII letter Python's case-blind match
    takes for the i of ``zerolint`` (U+0130, U+0131) starts with the byte 0xC4 in UTF-8."""
    folded = data.lower()
    if b"zerolint" in folded or b"noqa" in folded:
        return True
    return b"\xc4" in data and b"zerol" in folded


def text_of(data: bytes) -> str:
    """A file's text as ZL920 reads it: UTF-8 (UnicodeDecodeError otherwise), with
    universal newlines, as ``read_text`` gives it."""
    return universal(data.decode("utf-8"))


def file_may_hold_ours(data: bytes) -> bool:
    """Whether :func:`unused` may report a comment of a file of these bytes: what it
    decides before tokenizing (:func:`may_hold_ours`, then ``_may_hold_ours`` of the
    text). True for bytes that are not UTF-8: the caller decides about those."""
    if not may_hold_ours(data):
        return False
    try:
        return _may_hold_ours(text_of(data))
    except UnicodeDecodeError:
        return True


# The bytes of every comment `parse` finds invalid (a line or a whole-file one: both are
# read by `read_noqa` from after the word) hold this: the word noqa (in any case) followed
# by a byte that is no ASCII space (\x1c-\x1f are spaces to Python), `#` or `:`, or by
# spaces (any non-ASCII byte may be part of one) and a colon that no plain list of codes
# follows, separated by spaces, tabs or commas and ended by the line or a `#`. Trailing
# words after the codes, which `read_noqa` takes, make a file pass too: it is decoded.
_INVALID_BYTES = re.compile(
    rb"(?i)noqa(?:(?![\s\x1c-\x1f#:])|[\s\x1c-\x1f\x80-\xff]*:"
    rb"(?![ \t,]*[a-z]+[0-9]+(?:[ \t,]+[a-z]+[0-9]+)*[ \t,]*(?:[#\r\n]|\Z)))"
)


def may_hold_invalid(data: bytes) -> bool:
    """Whether a file of these bytes may hold a suppression comment that names no valid
    code (``Suppressions.invalid``): False for most files whose noqa comments all name
    codes (`# noqa: E501`), without decoding them."""
    return _INVALID_BYTES.search(data) is not None


def invalid_reason(directive: str) -> str:
    """What the warning of an invalid ``directive`` (``# noqa``, ``# zerolint: noqa``) says
    after where it is, on the command line and in an editor alike."""
    return (
        f"expected a comma-separated list of codes (e.g. `{directive}: ZL001, ZL004`); "
        "it suppresses nothing"
    )


def invalid_directives(text: str, findings: Iterable[Finding]) -> list[tuple[int, str]]:
    """The suppression comments of ``text`` that name no valid code and so did not
    suppress one of ``findings`` (all of that file), as (line, the directive): a whole-file
    one anywhere, one on a line of a finding's call. Ruff warns of such a comment; zerolint
    does where it left a finding in the report."""
    findings = list(findings)
    if not findings or not _may_suppress(text, findings):
        return []
    lines = {n for f in findings for n in range(f.line, max(f.line, f.end_line) + 1)}
    return [
        (line, directive)
        for line, directive, whole in parse(text).invalid
        if whole or line in lines
    ]


def unused(path: str, text: str, suppressed: Iterable[Finding]) -> list[Finding]:
    """ZL920 for each comment in ``text`` that names a zerolint code (ZL...) or is a
    zerolint comment, and suppressed none of ``suppressed`` (this file's suppressed
    findings). A bare ``# noqa`` or one naming only other tools' codes is not ours."""
    if not _may_hold_ours(text):
        return []
    sup = parse(text)
    used: set[tuple[int, int]] = set()
    for finding in suppressed:
        for comment in sup.matching(finding):
            used.add((comment.line, comment.col))
    out = []
    for comment in sup.comments():
        if (comment.line, comment.col) in used:
            continue
        if comment.kind == "noqa":
            ours = sorted(c for c in comment.codes or () if c.startswith("ZL"))
            if not ours:
                continue
            what = f"`# noqa: {', '.join(ours)}`"
        elif comment.kind == "ignore":
            what = "`# zerolint: ignore" + (  # `ignore[]` names no code: it hides nothing
                f"[{', '.join(sorted(comment.codes))}]`" if comment.codes is not None else "`"
            )
        else:
            what = "`# zerolint: noqa" + (
                f": {', '.join(sorted(comment.codes))}`" if comment.codes else "`"
            )
        out.append(
            Finding(
                code=UNUSED,
                path=path,
                line=comment.line,
                col=comment.col,
                message=f"unused suppression {what}: it suppresses no finding",
                sink="",
                argument="",
                flows=[],
            )
        )
    return out
