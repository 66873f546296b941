"""``syntax.key_text`` makes the text that names a slice in the analysis's state
(``self.buf[:n]``) without LibCST's code generator: it must be exactly what that generator
prints for a tree ``cst_build`` made, or None where it does not know the expression."""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

import libcst as cst
import pytest

from zerolint.cst_build import build_module
from zerolint.dataflow.syntax import key_text, slice_cell
from zerolint.project import parse_module

KNOWN = [
    "buf[:n]",
    "self.buf[:n]",
    "self.meta.seq_lens[start:end]",
    "buf[a:b:2]",
    "buf[::2]",
    "buf[:, 0]",
    "buf[1:, :-1]",
    "buf[: n + 1]",
    "buf[i * 2 : (i + 1) * 2]",
    "x[a // 4 : b % 3, c - d]",
    "x[-1:]",
    "x[a / b :]",
    "lens[num_decodes:num_decode_tokens]",
    "self.expanded_seq_lens_buffer[:num_decodes]",
    "x[0][1:]",
    "(buf)[:n]",  # cst_build keeps no parentheses that mean nothing
    "buf[:(n)]",
]
UNKNOWN = [
    "buf[: len(x)]",
    "buf[*idx, :]",
    "f()[1:]",
    "buf[: n ** 2]",
    "buf[: ~n]",
    "buf['a':]",
]


def subscript(source: str) -> tuple[cst.Module, cst.Subscript]:
    text = f"y = {source}\n"
    module = build_module(text, ast.parse(text))
    value = module.body[0].body[0].value
    assert type(value) is cst.Subscript
    return module, value


@pytest.mark.parametrize("source", KNOWN)
def test_the_text_is_what_libcst_prints(source: str) -> None:
    module, node = subscript(source)
    assert key_text(node) == module.code_for_node(node)


@pytest.mark.parametrize("source", UNKNOWN)
def test_what_it_does_not_know_is_left_to_libcst(source: str) -> None:
    _, node = subscript(source)
    assert key_text(node) is None


def test_parentheses_kept_by_libcsts_parser_are_left_to_it() -> None:
    """A tree LibCST parsed itself (a file cst_build cannot build) keeps parentheses:
    its printer shows them, which this text would not."""
    for source in ("(buf)[:n]", "buf[:(n)]", "buf[(a + b) :]"):
        assert key_text(cst.parse_expression(source)) is None, source


def test_a_tree_libcst_parsed_keeps_its_printed_keys(tmp_path: Path) -> None:
    """``slice_cell`` makes its own text only for trees ``cst_build`` made: a module LibCST
    parsed itself (the language server's, a file ``cst_build`` cannot build) keeps the
    source's spelling, so ``buf[:n+1]`` and ``buf[: n + 1]`` stay two cells there."""
    text = "def f(buf, n):\n    a = buf[:n+1]\n    b = buf[: n + 1]\n"
    path = tmp_path / "m.py"
    parsed = parse_module("m", path, "m.py", text, lambda p, t, tree: cst.parse_module(t))
    built = parse_module("m", path, "m.py", text)
    assert not parsed.built and built.built
    for info, want in ((parsed, ["buf[:n+1]", "buf[: n + 1]"]), (built, ["buf[:n + 1]"] * 2)):
        body = info.functions["f"].body.body
        targets = [line.body[0].value for line in body]
        keys = [slice_cell(SimpleNamespace(mod=info), t, "buf") for t in targets]
        assert keys == want
