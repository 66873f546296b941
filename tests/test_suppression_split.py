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
    assert suppression._keyword_lines(SOURCES["lone-cr"]) == {1}
    assert suppression._may_suppress(SOURCES["file-level-in-a-string"], [])
