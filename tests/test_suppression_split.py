"""``suppression.split`` tokenizes a file only where a comment can suppress one of its
findings: a line of a finding's call holding ``noqa`` or ``zerolint``, or a line that may
hold a whole-file comment. It must decide exactly as tokenizing every file does."""

from __future__ import annotations

import itertools

from zerolint import suppression
from zerolint.model import Finding

SOURCES = {
    "plain": "x = f(a)\ny = f(b)\n",
    "noqa-elsewhere": "import os  # noqa: F401\nx = f(a)\ny = f(b)  # noqa: E501\n",
    "noqa-on-call": "x = f(a)  # noqa: ZL001\ny = f(b)\n",
    "bare-noqa": "x = f(a)  # NOQA\n",
    "ignore": "x = f(\n    a,  # zerolint: ignore[ZL001]\n)\n",
    "file-level": "# zerolint: noqa: ZL001\nx = f(a)\n",
    "file-level-indented": "if True:\n    # zerolint: noqa\n    x = f(a)\n",
    "in-a-string": 's = "# noqa: ZL001"\nx = f(a)\n',
    "file-level-in-a-string": 's = """\n# zerolint: noqa\n"""\nx = f(a)\n',
    "crlf": "import os  # noqa\r\nx = f(a)  # noqa: ZL001\r\ny = f(b)\r\n",
    "lone-cr": "x = 1\ry = f(a)  # noqa: ZL001\nz = f(b)\n",
    "other-code-only": "x = f(a)  # noqa: E501\n",
    "multi-line-call": "x = f(\n    a,\n)  # noqa: ZL001\n",
}


def findings_for(path: str, text: str) -> list[Finding]:
    """A ZL001 finding on every line, one line long and three lines long."""
    count = text.count("\n") + 1
    out = []
    for line, length in itertools.product(range(1, count + 1), (0, 2)):
        out.append(
            Finding("ZL001", path, line, 1, "m", "f", "a", [], end_line=line + length, end_col=2)
        )
    return out


def test_split_decides_as_tokenizing_every_file_does() -> None:
    texts = dict(SOURCES)
    findings = [f for path, text in texts.items() for f in findings_for(path, text)]
    kept, dropped = suppression.split(findings, texts)
    parsed = {path: suppression.parse(text) for path, text in texts.items()}
    expected = [f for f in findings if parsed[f.path].matching(f)]
    assert dropped == expected
    assert kept == [f for f in findings if f not in expected]
    # The cases suppress something, and something is kept: the comparison is not empty.
    assert {f.path for f in dropped} >= {
        "noqa-on-call",
        "bare-noqa",
        "ignore",
        "file-level",
        "file-level-indented",
        "crlf",
        "lone-cr",
        "multi-line-call",
    }
    assert {"plain", "in-a-string", "other-code-only"} <= {f.path for f in kept}


def test_a_file_whose_keywords_are_elsewhere_is_not_tokenized() -> None:
    text = SOURCES["noqa-elsewhere"]
    on_line_2 = [f for f in findings_for("p", text) if f.line == 2 and f.end_line == 2]
    assert not suppression._may_suppress(text, on_line_2)
    assert suppression._may_suppress(text, [f for f in findings_for("p", text) if f.line == 3])
    assert suppression._keyword_lines(SOURCES["crlf"]) == {1, 2}
    # Numbered as Python's parser numbers the findings' lines: a lone \r ends a line.
    assert suppression._keyword_lines(SOURCES["lone-cr"]) == {2}
    assert suppression._may_suppress(SOURCES["file-level-in-a-string"], [])


UNUSED_SOURCES = {
    **SOURCES,
    "upper-noqa": "x = f(a)  # NOQA: zl001\n",
    "codes-on-next-line": "x = f(a)  # noqa: E501\nZL001 = 1\n",
    "two-comments": "x = 1  # noqa: E501  # noqa: ZL001\n",
    "ignore-upper": "x = f(a)  # ZEROLINT: IGNORE\n",
    "mixed-codes": "x = f(a)  # noqa: E501, ZL004\n",
    # Python's case-blind matching takes a dotless i (and a dotted capital I) for an i.
    "dotless-i": "x = f(a)  # zerol\u0131nt: ignore\n",
    "dotted-capital-i": "x = f(a)  # ZEROL\u0130NT: IGNORE\n",
    "other-non-ascii": "x = f(a)  # caf\u00e9 noqa: E501\n",
}


def test_unused_reports_what_tokenizing_every_file_reports() -> None:
    """``unused`` skips tokenizing a file with no comment that can be ours; the result is
    what tokenizing it gives (every comment of these sources suppresses nothing)."""
    reported = set()
    for path, text in UNUSED_SOURCES.items():
        expected = []
        for comment in suppression.parse(text).comments():
            ours = comment.kind != "noqa" or any(c.startswith("ZL") for c in comment.codes or ())
            if ours:
                expected.append((comment.line, comment.col))
        got = [(f.line, f.col) for f in suppression.unused(path, text, ())]
        assert got == expected, path
        if got:
            reported.add(path)
    # Not an empty comparison: ours are reported, other tools' comments are not.
    assert {
        "noqa-on-call",
        "upper-noqa",
        "ignore-upper",
        "mixed-codes",
        "dotless-i",
        "dotted-capital-i",
    } <= reported
    assert not {"other-code-only", "noqa-elsewhere", "codes-on-next-line", "in-a-string"} & reported


def test_the_bytes_prefilter_passes_every_file_the_text_one_does() -> None:
    for path, text in UNUSED_SOURCES.items():
        if suppression._may_hold_ours(text):
            assert suppression.may_hold_ours(text.encode()), path
    assert not suppression.may_hold_ours(SOURCES["plain"].encode())
    assert suppression.may_hold_ours(b"x = 1  # NoQa: ZL001\n")
    assert not suppression.may_hold_ours("caf\u00e9 = 1\n".encode())


def test_a_file_with_only_other_tools_comments_is_not_tokenized() -> None:
    assert not suppression._may_hold_ours(SOURCES["noqa-elsewhere"])
    assert not suppression._may_hold_ours(SOURCES["bare-noqa"])
    assert suppression._may_hold_ours(UNUSED_SOURCES["upper-noqa"])
    assert suppression._may_hold_ours(SOURCES["ignore"])
    assert suppression._may_hold_ours(UNUSED_SOURCES["mixed-codes"])
