"""What ``dataflow/syntax.py`` says a function assigns to a name (``is_mask`` and
``whole_view_of`` ask it) is what LibCST's visitor finds, name by name, for every name of
every function of real source: the scan is a plain walk of the nodes' fields, for speed."""

from __future__ import annotations

from pathlib import Path

import libcst as cst

from zerolint.dataflow import syntax

ROOT = Path(__file__).resolve().parent.parent


def visitor_scan(scope: cst.CSTNode, name: str) -> list[cst.BaseExpression]:
    """The reference: LibCST's visitor over the scope, once per name."""
    found: list[cst.BaseExpression] = []
    other = False

    class Visitor(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            for t in node.targets:
                if isinstance(t.target, cst.Name) and t.target.value == name:
                    found.append(node.value)

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            nonlocal other
            if isinstance(node.target, cst.Name) and node.target.value == name:
                other = True

        def visit_Param(self, node: cst.Param) -> None:
            nonlocal other
            if node.name.value == name:
                other = True

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
