"""The language server's re-parse (zerolint/server_reparse.py) gives, after any edit, the
tree a full LibCST parse of the new text gives, node for node; and it parses only the
chunks the edit touched."""

from __future__ import annotations

import ast
import random
from pathlib import Path

import libcst as cst
import pytest

from zerolint.server_reparse import Reparser, chunks_of

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [
    ROOT / "zerolint" / "engine.py",
    ROOT / "zerolint" / "dataflow" / "calls.py",  # one class, methods: edited inside it
    ROOT / "zerolint" / "server_lsp.py",
    ROOT / "zerolint" / "project.py",
    ROOT / "tests" / "test_server.py",
]


def statements(module: cst.Module) -> list[cst.CSTNode]:
    out: list[cst.CSTNode] = []

    class Collect(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, (cst.BaseStatement, cst.BaseSmallStatement)):
                out.append(node)
            return True

    module.visit(Collect())
    return out


def parse_both(reparser: Reparser, path: Path, text: str) -> cst.Module:
    got = reparser(path, text, ast.parse(text))
    want = cst.parse_module(text)
    assert got.code == text
    assert got.deep_equals(want), path
    # Every statement is its own node: the analysis tells statements apart by identity.
    nodes = statements(got)
    assert len({id(n) for n in nodes}) == len(nodes)
    assert (got.default_indent, got.default_newline, got.has_trailing_newline) == (
        want.default_indent,
        want.default_newline,
        want.has_trailing_newline,
    )
    return got


EDITS = [
    lambda lines, i: lines[:i] + ["# a comment\n"] + lines[i:],
    lambda lines, i: lines[:i] + ["\n"] + lines[i:],
    lambda lines, i: lines[:i] + ["    # an indented comment\n"] + lines[i:],
    lambda lines, i: lines[:i] + ["    \n"] + lines[i:],
    lambda lines, i: lines[:i] + ["\n\ndef added(x):\n    return x // 4\n\n\n"] + lines[i:],
    lambda lines, i: lines[:i] + lines[i + 1 :],
    lambda lines, i: lines[:i] + [lines[i].replace("x", "y")] + lines[i + 1 :],
    lambda lines, i: lines[:i] + ["\n    def method(self):\n        return 1\n\n"] + lines[i:],
    lambda lines, i: lines[:i] + ["# c\n", "\n"] + lines[i:],
    lambda lines, i: lines[:i] + lines[i : i + 6] + lines[i:],  # a repeated piece
]


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_random_edits_give_the_full_parse(source: Path) -> None:
    rng = random.Random(source.name)
    reparser = Reparser()
    text = source.read_text()
    parse_both(reparser, source, text)
    done = reused = 0
    for _ in range(40):
        lines = text.splitlines(keepends=True)
        edit = rng.choice(EDITS)
        new = "".join(edit(lines, rng.randrange(len(lines))))
        try:
            ast.parse(new)
        except SyntaxError:
            continue  # the server stops at Python's parser, before LibCST
        parse_both(reparser, source, new)
        text = new
        done += 1
        reused += reparser.reused
    assert done >= 20
    assert reused > 0  # the edits did reuse statements


def test_crlf_file_edits_give_the_full_parse() -> None:
    text = (ROOT / "zerolint" / "project.py").read_text().replace("\n", "\r\n")
    reparser = Reparser()
    path = Path("crlf.py")
    parse_both(reparser, path, text)
    lines = text.splitlines(keepends=True)
    for i in (40, 300, len(lines) - 5):
        new = "".join(lines[:i] + ["# edit\r\n"] + lines[i:])
        parse_both(reparser, path, new)
    assert reparser.reused > 0


def test_only_the_edited_chunk_is_parsed_and_the_rest_are_the_same_nodes() -> None:
    text = "import torch\n\n\ndef f(x):\n    return x // 4\n\n\nclass C:\n    n = 1\n\n\ng = 2\n"
    reparser = Reparser()
    path = Path("m.py")
    old = parse_both(reparser, path, text)
    assert len(chunks_of(text, ast.parse(text))) == 4
    new = parse_both(reparser, path, text.replace("n = 1", "n = 2"))
    assert (reparser.parsed, reparser.reused) == (1, 3)
    assert new.body[1] is old.body[1]  # def f: the same object, not an equal copy
    assert new.body[2] is not old.body[2]


def test_an_edit_inside_a_class_parses_only_its_changed_method() -> None:
    text = (
        "import torch\n\n\n"
        "class C:\n    n = 1\n\n    def f(self, x):\n        return x // 4\n\n"
        "    def g(self, x):\n        return x\n\n\n"
        "def h():\n    pass\n"
    )
    reparser = Reparser()
    path = Path("m.py")
    old = parse_both(reparser, path, text)
    new = parse_both(reparser, path, text.replace("return x\n", "return x + 1\n"))
    assert (reparser.parsed, reparser.reused) == (1, 4)  # g; import, n = 1, f, h
    old_body, new_body = old.body[1].body.body, new.body[1].body.body
    assert new_body[1] is old_body[1] and new_body[2] is not old_body[2]
    # An empty line before g: only g's piece changed (it opens with the empty lines).
    edited = text.replace("return x\n", "return x + 1\n").replace("\n    def g", "\n\n    def g")
    again = parse_both(reparser, path, edited)
    assert (reparser.parsed, reparser.reused) == (1, 4)
    assert again.body[1].body.body[1] is new_body[1]
    # A comment before g joins f and g in one piece (it could belong to either): both.
    parse_both(reparser, path, edited.replace("\n    def g", "\n    # g\n    def g"))
    assert (reparser.parsed, reparser.reused) == (2, 3)


def test_a_comment_between_statements_allows_no_cut() -> None:
    # The indented comment belongs to the class's block, the other one to `g`: no cut at g.
    text = "class C:\n    n = 1\n    # c\n\n# d\ng = 2\n\n\nh = 3\n"
    assert chunks_of(text, ast.parse(text)) == [text[: text.index("\n\nh")], "\n\nh = 3\n"]
    parse_both(Reparser(), Path("m.py"), text)


def test_a_syntax_error_only_libcst_sees_is_reported_for_the_whole_file() -> None:
    reparser = Reparser()
    path = Path("m.py")
    text = "a = 1\n\n\ndef f():\n    return 1\n"
    parse_both(reparser, path, text)
    # Python accepts what LibCST 1.x rejects? Whatever it rejects, the error names the line
    # of the whole file, as libcst.parse_module does.
    bad = text + "\n\nprint(f'{1=}' f'{x!r:>{w}}')\n"
    try:
        want = cst.parse_module(bad)
    except cst.ParserSyntaxError as exc:
        with pytest.raises(cst.ParserSyntaxError) as got:
            reparser(path, bad, ast.parse(bad))
        assert (got.value.raw_line, got.value.raw_column) == (exc.raw_line, exc.raw_column)
    else:
        assert reparser(path, bad, ast.parse(bad)).deep_equals(want)
