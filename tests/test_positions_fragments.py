"""A module ``cst_build`` built whole keeps where each statement lies (``ModuleInfo.spans``),
and its positions parse a statement's own lines when a finding first shows it
(``positions.FragmentStatements``), not the whole module again. Whatever the statement
(sharing a line, decorated, an ``elif``, indented with tabs, after a multi-line string),
every answer is the one the whole module's tree gives: each statement's span, its text,
each call's place and each argument's text."""

from __future__ import annotations

from pathlib import Path

import pytest

from devtools.wheels import sglang_tree, vllm_tree
from zerolint import source_text
from zerolint.positions import (
    FragmentStatements,
    PositionIndex,
    index_of,
    statement_calls,
    statements_in_order,
)
from zerolint.project import ModuleInfo, parse_module

SHAPES = '''\
"""Module docstring."""
import os; import sys
from typing import (
    Any,
)

x = 1; y = f(x); z = g(y,
    h(2))

@decorate(1)
@other
def top(a, b=len("é"), *c, d: int = k(), **e) -> ret():
    """Doc
with a line at column 0
    """
    if a: return b(a)
    if (a and
            b):
        c = call(a)
    elif b(x) if a else c(y):
        pass
    elif (
        d
    ):
        e(1); f(2)
    else:
        g(3)
    for i in range(n(a)):
        continue
    else:
        h(i)
    while w(a): break
    with open(p(a)) as fh, ctx(b) as (u, v):
        fh.read(size=s(1))
    try:
        t(1)
    except (E1, e2()) as err:
        raise R(err) from err
    except E3:
        pass
    else:
        el(1)
    finally:
        fin(2)
    lam = lambda q: q(1)
    if (n := nn(a)) > 0:
        text = f"{n(1)!r:>{w(2)}} and {a}" "joined"
    total = a + \\
        b(c)
    return [k(v) for v in vs if v(1)]


class C(Base(1), metaclass=M):
    attr: int = at(1)

    @staticmethod
    async def run(self):
        async for x in aiter(s()):
            await go(x)
        async with lock(): done(1)

    def nested(self):
        @wraps(fn)
        def inner(*args):
            return fn(*args)
        return inner


if __name__ == "__main__": main(sys.argv)
elif other(1):
    alt()
'''

TABS = "def f(a):\n\tif a:\n\t\treturn g(a)\n\telif h(a):\n\t\tpass\n\tx = [\n1, k(2)]\n"


def compare(text: str, name: str) -> tuple[PositionIndex, int]:
    """Every answer of the module's positions against the whole tree's; how many
    statements were compared."""
    info = parse_module("m", Path("m.py"), "m.py", text)
    assert info.built and info.spans is not None, name
    placed = info.positions()
    assert isinstance(placed.stmts, FragmentStatements)
    whole = index_of(info.module, text)
    assert whole.exact is None, name  # a module built whole pairs its statements
    count = 0
    for stmt in statements_in_order(info.module):
        where = f"{name}: {whole.statement(stmt)}"
        assert placed.statement(stmt) == whole.statement(stmt), where
        assert placed.shown(stmt) == whole.shown(stmt), where
        mine, theirs = placed.stmts.get(id(stmt)), whole.stmts.get(id(stmt))
        assert mine is not None and theirs is not None, where
        assert source_text.header(placed.source, mine) == source_text.header(whole.source, theirs)
        for call in statement_calls(stmt):
            assert placed.call(stmt, call) == whole.call(stmt, call), where
            node_a, node_b = placed.call_node(stmt, call), whole.call_node(stmt, call)
            assert (node_a is None) == (node_b is None), where
            if node_a is not None and node_b is not None:
                for i in range(len(call.args)):
                    got = source_text.argument(placed.source, node_a, i)
                    assert got == source_text.argument(whole.source, node_b, i), where
        count += 1
    return placed, count


@pytest.mark.parametrize("text", [SHAPES, TABS], ids=["shapes", "tabs"])
def test_each_statement_parsed_alone_is_placed_as_in_the_whole_tree(text: str) -> None:
    placed, count = compare(text, "crafted")
    assert count > 10 or text is TABS
    # Every statement was parsed alone: none fell back to the whole module.
    assert isinstance(placed.stmts, FragmentStatements) and placed.placed is not None


def test_a_statement_that_does_not_come_out_where_it_was_built_falls_back_to_the_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Should a statement parsed alone not come out where the build placed it, the
    index answers from the whole module's tree from then on, as before."""
    info = parse_module("m", Path("m.py"), "m.py", SHAPES)
    placed = info.positions()
    stmts = statements_in_order(info.module)
    first = placed.stmts.get(id(stmts[1]))
    assert first is not None
    monkeypatch.setattr(FragmentStatements, "_parsed", lambda self, span: None)
    whole = index_of(info.module, SHAPES)
    later = placed.stmts.get(id(stmts[-1]))  # not parsed alone before: falls back
    assert later is not None and later.lineno == whole.stmts[id(stmts[-1])].lineno
    assert not isinstance(placed.stmts, FragmentStatements) and placed.placed is None
    for stmt in stmts:
        assert placed.statement(stmt) == whole.statement(stmt)
        for call in statement_calls(stmt):
            assert placed.call(stmt, call) == whole.call(stmt, call)


def test_a_statement_parsed_alone_warns_of_nothing() -> None:
    """Python warns of an invalid escape (``"\\d"``) where it parses the module; parsed
    alone, the statement would warn again with the line it has in its own lines."""
    import warnings

    info = parse_module("m", Path("m.py"), "m.py", 'def f(x):\n    return g(x, "\\d")\n')
    stmt = statements_in_order(info.module)[-1]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert info.positions().stmts.get(id(stmt)) is not None
        ast_warnings = [
            w for w in caught if issubclass(w.category, (SyntaxWarning, DeprecationWarning))
        ]
    assert ast_warnings == []
    assert isinstance(info.positions().stmts, FragmentStatements)


def test_a_module_not_built_whole_is_parsed_again_whole() -> None:
    """A module with a statement handed to LibCST's parser (a ``match`` at the top level)
    keeps no places: its statements nested in that one were not built."""
    text = "match x:\n    case 1:\n        y = f(2)\nz = g(3)\n"
    info: ModuleInfo = parse_module("m", Path("m.py"), "m.py", text)
    assert info.built and info.spans is None
    assert not isinstance(info.positions().stmts, FragmentStatements)


@pytest.mark.network
@pytest.mark.slow
def test_real_serving_modules_are_placed_as_in_the_whole_tree() -> None:
    compared = 0
    for root, folder in (
        (vllm_tree("0.33.0"), "vllm/v1/attention/backends"),
        (sglang_tree("0.5.23"), "sglang/srt/layers/attention"),
    ):
        for path in sorted((root / folder).rglob("*.py")):
            compared += compare(path.read_text(encoding="utf-8"), path.name)[1]
    assert compared > 20_000
