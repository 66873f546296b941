"""What ``dataflow/syntax.py`` says a function assigns to a name (``is_mask`` and
``whole_view_of`` ask it) is what LibCST's visitor finds, name by name, for every name of
every function of real source: the scan is a plain walk of the nodes' fields, for speed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import libcst as cst
import pytest

from zerolint.dataflow import syntax

ROOT = Path(__file__).resolve().parent.parent


def visitor_scan(scope: cst.CSTNode, name: str) -> list[cst.BaseExpression]:
    """The reference: LibCST's visitor over the scope, once per name."""
    found: list[cst.BaseExpression] = []
    other = False

    def binds(target: cst.CSTNode | None) -> bool:
        """Whether ``target`` binds ``name``: it is the name, or holds it in an unpacking."""
        if isinstance(target, cst.Name):
            return target.value == name
        if isinstance(target, (cst.Tuple, cst.List)):
            return any(binds(e.value) for e in target.elements)
        if isinstance(target, cst.StarredElement):
            return binds(target.value)
        return False

    class Visitor(cst.CSTVisitor):
        def mark(self, target: cst.CSTNode | None) -> None:
            nonlocal other
            other = other or binds(target)

        def visit_Assign(self, node: cst.Assign) -> None:
            for t in node.targets:
                if isinstance(t.target, cst.Name):
                    if t.target.value == name:
                        found.append(node.value)
                else:
                    self.mark(t.target)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            if node.value is not None and binds(node.target):
                found.append(node.value)

        def visit_Param(self, node: cst.Param) -> None:
            self.mark(node.name)

        def mark_target(self, node: Any) -> None:
            self.mark(node.target)

        def mark_name(self, node: Any) -> None:
            self.mark(node.name)

        def mark_names(self, node: Any) -> None:
            for item in node.names:
                self.mark(item.name)

        # The visitor looks its methods up by name: one method serves the nodes alike.
        visit_AugAssign = visit_For = visit_CompFor = visit_Del = visit_NamedExpr = mark_target
        visit_AsName = visit_ClassDef = visit_MatchAs = visit_MatchStar = mark_name
        visit_Global = visit_Nonlocal = mark_names

        def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
            if node.asname is None:
                head = node.name
                while isinstance(head, cst.Attribute):
                    head = head.value
                self.mark(head)

        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            if node is not scope:
                self.mark(node.name)

        def visit_MatchMapping(self, node: cst.MatchMapping) -> None:
            self.mark(node.rest)

    scope.visit(Visitor())
    return [] if other else found


class Names(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)


class Functions(cst.CSTVisitor):
    def __init__(self) -> None:
        self.functions: list[cst.FunctionDef] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.functions.append(node)


def test_one_walk_matches_a_visitor_per_name() -> None:
    files = [ROOT / "zerolint" / "dataflow" / "statements.py"]
    files += sorted((ROOT / "tests" / "fixtures" / "ZL001").glob("*.py"))
    checked = 0
    for path in files:
        module = cst.parse_module(path.read_text())
        functions = Functions()
        module.visit(functions)
        for fn in functions.functions:
            names = Names()
            fn.visit(names)
            for name in sorted(names.names):
                got = syntax._assigned_values(fn, name)
                want = visitor_scan(fn, name)
                # The same values (in any order: every caller asks about all of them).
                assert sorted(map(id, got)) == sorted(map(id, want)), (path, fn.name.value, name)
                checked += bool(want)
    assert checked > 100  # the comparison saw many assigned names, not only empty answers


def test_a_parameter_or_augmented_assignment_hides_the_values() -> None:
    fn = cst.parse_module(
        "def f(a):\n"
        "    m = x > 0\n"
        "    m = y < 1\n"
        "    a = 3\n"
        "    k = 1\n"
        "    k += 1\n"
        "    g = lambda m2: m2\n"
        "    m2 = 0\n"
    ).body[0]
    values = syntax._assigned_values(fn, "m")
    assert sorted(cst.Module([]).code_for_node(v) for v in values) == ["x > 0", "y < 1"]
    assert syntax._assigned_values(fn, "a") == []
    assert syntax._assigned_values(fn, "k") == []
    assert syntax._assigned_values(fn, "m2") == []
    assert syntax._assigned_values(fn, "nothing") == []


BOUND_OTHERWISE = {
    "for": "for m in masks:\n        pass",
    "comprehension": "rows = [m for m in masks]",
    "with": "with ctx() as m:\n        pass",
    "except": "try:\n        pass\n    except E as m:\n        pass",
    "unpacked": "m, n = pair",
    "starred": "first, *m = rows",
    "nested unpacking": "(a, [b, m]) = nested",
    "walrus": "if (m := lens > 0):\n        pass",
    "import": "import m",
    "import dotted": "import m.sub",
    "import as": "import numpy as m",
    "from import": "from torch import m",
    "def": "def m():\n        pass",
    "class": "class m:\n        pass",
    "del": "del m",
    "global": "global m",
    "match": "match x:\n        case [m]:\n            pass",
    "match star": "match x:\n        case [*m]:\n            pass",
    "match rest": "match x:\n        case {**m}:\n            pass",
}


@pytest.mark.parametrize("how", sorted(BOUND_OTHERWISE))
def test_a_name_bound_any_other_way_hides_the_values(how: str) -> None:
    """``m = x > 0`` makes ``m`` a mask only if nothing else binds it: a loop, a ``with``,
    an unpacking ... may give it any value, so its values are not known."""
    source = f"def f(x):\n    m = x > 0\n    {BOUND_OTHERWISE[how]}\n    return m\n"
    fn = cst.parse_module(source).body[0]
    assert syntax._assigned_values(fn, "m") == [], how
    assert visitor_scan(fn, "m") == [], how
    # Without that binding the assignment's value is known.
    alone = cst.parse_module("def f(x):\n    m = x > 0\n    return m\n").body[0]
    assert len(syntax._assigned_values(alone, "m")) == 1


def test_an_annotated_assignment_is_a_plain_one() -> None:
    fn = cst.parse_module("def f(x):\n    m: Tensor = x > 0\n    k: int\n").body[0]
    values = syntax._assigned_values(fn, "m")
    assert [cst.Module([]).code_for_node(v) for v in values] == ["x > 0"]
    assert syntax._assigned_values(fn, "k") == []


# Where an expression can sit inside another, and what can bind a name inside an
# expression: the scan skips the fields that hold formatting (``positions.FORMATTING_FIELDS``),
# and must still reach every one of these.
CONTAINERS = [
    "f({})",
    "f(k={})",
    "f(*{})",
    "f(**{})",
    "({}).attr",
    "[{}]",
    "({},)",
    "{{{}}}",
    "{{1: {}}}",
    "{{{}: 1}}",
    "{{**{}}}",
    "x[{}]",
    "x[{}:1]",
    "x[1:{}]",
    "x[::{}]",
    "x[{}, 1]",
    "{} + 1",
    "1 * {}",
    "-{}",
    "not {}",
    "{} and y",
    "{} < 2",
    "1 < 2 < {}",
    "y if {} else 1",
    "[q for q in {}]",
    "[q for q in y if {}]",
    "{{q: {} for q in y}}",
    "f'{{{}}}'",
    "f'{{y:{{{}}}}}'",
    "(lambda: {})",
    "(lambda q={}: q)",
]
BINDERS = ["(m := 2)", "(lambda m: m)", "[m for m in y]"]


@pytest.mark.parametrize("container", CONTAINERS)
def test_a_binding_inside_any_expression_is_found(container: str) -> None:
    """A walrus, a lambda's parameter or a comprehension's target binds ``m`` wherever the
    expression holding it sits: in an argument, an element, a slice, an operand."""
    for binder in BINDERS:
        expr = container.format(binder)
        source = f"def fn(x, y):\n    m = x > 0\n    z = {expr}\n    return m\n"
        fn = cst.parse_module(source).body[0]
        assert visitor_scan(fn, "m") == [], expr  # the reference sees the binding
        assert syntax._assigned_values(fn, "m") == [], expr
