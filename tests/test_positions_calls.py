"""``positions.statement_calls`` lists a statement's calls in the order LibCST's visitor meets
them (pairing them by rank with Python's calls gives each its position). It walks the
nodes' fields itself; a visitor, as before, is the reference here, on crafted code that
puts a call in every place an expression can be and on zerolint's own modules, built by
``cst_build`` and parsed by LibCST."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
from pathlib import Path

import libcst as cst
import pytest

import zerolint
from zerolint.cst_build import build_module
from zerolint.positions import content_fields, statement_calls, statements_in_order


class Reference(cst.CSTVisitor):
    def __init__(self) -> None:
        self.calls: list[cst.Call] = []

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.append(node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False


def reference(stmt: cst.CSTNode) -> list[cst.Call]:
    found = Reference()
    if isinstance(stmt, (cst.If, cst.While)):
        stmt.test.visit(found)
    elif type(stmt) is cst.For:
        stmt.target.visit(found)
        stmt.iter.visit(found)
    elif type(stmt) is cst.With:
        for item in stmt.items:
            item.visit(found)
    elif type(stmt) is cst.FunctionDef:  # its decorators, defaults, annotations run there
        for decorator in stmt.decorators:
            decorator.decorator.visit(found)
        stmt.params.visit(found)
        if stmt.returns is not None:
            stmt.returns.visit(found)
    elif type(stmt) is cst.ClassDef:  # its decorators, bases and keywords run there
        for decorator in stmt.decorators:
            decorator.decorator.visit(found)
        for arg in (*stmt.bases, *stmt.keywords):
            arg.visit(found)
    elif isinstance(stmt, (cst.Try, cst.TryStar)):  # its handlers' types
        for handler in stmt.handlers:
            if handler.type is not None:
                handler.type.visit(found)
    elif type(stmt) is cst.Match:
        stmt.subject.visit(found)
    else:
        stmt.visit(found)
    return found.calls


CRAFTED = """\
x = a(1) if b(2) else c(3)
y = [d(i) for i in e(4) if f(i)]
z = {g(k): h(v) for k, v in j()}
w = lambda p=q(): r(p)
t = (s(1), *u(2), {**v(3)}, w2(4)[x2(5) : y2(6) : z2(7)])
n = not m(1) and o(2) or p2(3) < q2(4) <= r2(5)
s2 = f"{t2(1)!r:>{u2(2)}}" "tail" f"{v3()}"
a.b(c(1)).d(e(2))(f3(3))
g3(h3(i3(j3())), k3=l3(), *m3(), **n3())
assert o3(1), p3(2)
raise q3() from r3()
del s3()[t3()]
u3 += v3(w3())
x3: y3() = z3()
if (a4 := b4()) and c4(a4):
    d4()
while e4(f4()):
    break
for g4 in h4(i4()):
    pass
with j4() as k4, l4(m4()) as n4:
    pass
async def o4():
    await p4(q4())
    async for r4 in s4():
        pass
    async with t4():
        pass
    return [u4(v) async for v in w4()]
def x4(y4=z4(), *, a5: b5() = c5()) -> d5():
    yield e5()
    yield from f5()
@g5(h5())
class i5(j5(), metaclass=k5()):
    l5 = m5()
print(n5()[o5() :], p5()[q5(), r5()], -s5(), ~t5(), +u5())
v5 = lambda a=w5(), /, b=x5(), *c, d=y5(), **e: z5()
try:
    pass
except a6() as b6:
    pass
except (c6(), d6(e6())):
    pass
@f6(g6())
@h6
def i6():
    pass
match j6(k6()):
    case _:
        l6()
@m6(n6())
def o6(a: p6() = q6(r6()), /, b=s6(), *c: t6(), d: u6() = v6(), **e: w6()) -> x6(y6()):
    z6()
@a7(b7())
class c7(d7(e7()), f7, metaclass=g7(), **h7()):
    i7()
"""
# A `type` statement: Python 3.12's grammar (LibCST parses it on any Python).
TYPE_ALIAS = "type X[T: f()] = g()\n"


def modules() -> list[tuple[str, str]]:
    package = Path(zerolint.__file__).parent
    own = sorted(package.rglob("*.py"))
    return [("crafted", CRAFTED), ("type alias", TYPE_ALIAS)] + [
        (str(p.relative_to(package)), p.read_text()) for p in own
    ]


@pytest.mark.parametrize(("name", "text"), modules(), ids=[n for n, _ in modules()])
def test_the_calls_come_as_libcsts_visitor_meets_them(name: str, text: str) -> None:
    trees = [cst.parse_module(text)]
    try:
        built = build_module(text, ast.parse(text))
    except SyntaxError:  # a `type` statement before Python 3.12
        built = None
    if built is not None:
        trees.append(built)
    seen = 0
    for tree in trees:
        for stmt in statements_in_order(tree):
            want = reference(stmt)
            assert [id(c) for c in statement_calls(stmt)] == [id(c) for c in want], (
                name,
                tree.code_for_node(stmt)[:80],
            )
            seen += len(want)
    if name == "crafted":
        assert seen > 2 * 70  # its calls (but those of the defs), in both trees


# Fields that hold formatting only: where LibCST visits them does not order any call.
FORMATTING = {
    "lbrace",
    "rbrace",
    "lbracket",
    "rbracket",
    "lpar",
    "rpar",
    "comma",
    "leading_lines",
    "lines_after_decorators",
    "header",
    "footer",
    "dot",
    "colon",
    "equal",
    "first_colon",
    "second_colon",
    "semicolon",
    "asynchronous",
    "relative",
    "trailing_comma",
    "operator",
    "star",
    "posonly_ind",
}


def libcst_visit_order(cls: type) -> list[str]:
    """The fields in the order LibCST's visitor takes them, read from its own code."""
    source = inspect.getsource(cls._visit_and_replace_children)
    return list(dict.fromkeys(re.findall(r'\(\s*self,\s*"(\w+)"', source)))


def test_the_walk_takes_every_node_types_fields_in_libcsts_order() -> None:
    """Wherever a class declares its fields in another order than LibCST's visitor takes
    them (a conditional expression, positional-only parameters, a `type` statement...),
    the walk's table says so; every other class is walked in its declared order."""
    checked = 0
    for name in dir(cst):
        cls = getattr(cst, name)
        if not (isinstance(cls, type) and issubclass(cls, cst.CSTNode)):
            continue
        if inspect.isabstract(cls) or "_visit_and_replace_children" not in vars(cls):
            continue
        visited = [f for f in libcst_visit_order(cls) if f not in FORMATTING]
        walked = [f for f in content_fields(cls) if f in visited]
        assert walked == [f for f in visited if f in walked], name
        assert set(visited) - {f.name for f in dataclasses.fields(cls)} == set(), name
        checked += 1
    assert checked > 100
