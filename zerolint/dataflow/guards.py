"""Path conditions: what a dominating ``if`` test, early exit or ``assert`` says about a path.

An atom is ``(subject, op, k)``: a scalar symbol (``num_decodes``) or the rows of a tensor
(``("#rows", key)``: ``x.numel()``, ``len(x)``, ``x.shape[0]``, ``x.size(0)``) compared with
an integer. ``atoms(test, True)`` holds in the body of ``if test:``; ``atoms(test, False)``
after it when the body always exits. A membership test against literal sizes
(``n in (1, 2, 4)``) bounds ``n`` by the smallest and the largest; ``x.any()`` being true
says ``x`` has rows. Only conjunctions are kept (``a and b`` when true,
``a or b`` when false); anything else says nothing, which is never unsound: a path with
fewer conditions can only be judged less safe.
"""

from __future__ import annotations

import libcst as cst

from zerolint.dataflow.syntax import dotted, int_value

ROWS = "#rows"
_NEGATE = {">": "<=", ">=": "<", "<": ">=", "<=": ">", "==": "!=", "!=": "=="}
# A comparison turned around (k < n is n > k), and the operator of each LibCST comparison.
MIRROR = {">": "<", ">=": "<=", "<": ">", "<=": ">=", "==": "==", "!=": "!="}
COMPARISONS = {
    cst.GreaterThan: ">",
    cst.GreaterThanEqual: ">=",
    cst.LessThan: "<",
    cst.LessThanEqual: "<=",
    cst.Equal: "==",
    cst.NotEqual: "!=",
}

Subject = tuple[str, str]  # ("sym", name) or (ROWS, key of the tensor)
Atom = tuple[Subject, str, int]


def atoms(test: cst.BaseExpression, positive: bool) -> list[Atom]:
    """The conditions that hold where ``test`` is ``positive``."""
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        return atoms(test.expression, not positive)
    if type(test) is cst.BooleanOperation:
        conj = type(test.operator) is cst.And
        if conj == positive:  # a and b is true / a or b is false: both hold
            return atoms(test.left, positive) + atoms(test.right, positive)
        return []
    rows_any = _any_of(test)
    if rows_any is not None:
        # x.any() / torch.any(x) is true only if x has an element: it has rows. Being
        # false says nothing (all zeros, or no rows).
        return [((ROWS, rows_any), "!=", 0)] if positive else []
    if type(test) is cst.Comparison and len(test.comparisons) == 1:
        target = test.comparisons[0]
        if isinstance(target.operator, (cst.In, cst.NotIn)):
            return _membership(test.left, target, positive)
        op = COMPARISONS.get(type(target.operator))
        if op is None:
            return []
        left, right = test.left, target.comparator
        k, subject = int_value(right), _subject(left)
        if k is None or subject is None:
            k, subject, op = int_value(left), _subject(right), MIRROR[op]
        if k is None or subject is None:
            return []
        return [(subject, op if positive else _NEGATE[op], k)]
    subject = _subject(test)
    if subject is not None and (subject[0] == ROWS or isinstance(test, (cst.Name, cst.Attribute))):
        return [(subject, "!=" if positive else "==", 0)]
    return []


def _membership(
    left: cst.BaseExpression, target: cst.ComparisonTarget, positive: bool
) -> list[Atom]:
    """``n in (1, 2, 4)`` (or ``n not in ...`` being false): ``n`` lies between the
    smallest and the largest literal. The other way round says nothing."""
    holds_in = (type(target.operator) is cst.In) == positive
    subject = _subject(left)
    choices = target.comparator
    if not holds_in or subject is None or not isinstance(choices, (cst.Tuple, cst.List, cst.Set)):
        return []
    values = [int_value(e.value) for e in choices.elements]
    if not values or any(v is None for v in values):
        return []
    known = [v for v in values if v is not None]
    return [(subject, ">=", min(known)), (subject, "<=", max(known))]


def _any_of(node: cst.BaseExpression) -> str | None:
    """The tensor ``x`` of ``x.any()`` or ``torch.any(x)``."""
    if type(node) is not cst.Call:
        return None
    func = node.func
    if type(func) is cst.Attribute and func.attr.value == "any":
        if not node.args:
            return dotted(func.value)
        if dotted(func.value) == "torch" and len(node.args) == 1:
            return dotted(node.args[0].value)
    return None


def _subject(node: cst.BaseExpression) -> Subject | None:
    """A scalar name, or the row count of a named tensor."""
    if isinstance(node, (cst.Name, cst.Attribute)):
        name = dotted(node)
        return ("sym", name) if name is not None else None
    if type(node) is cst.Call:
        func, args = node.func, node.args
        if type(func) is cst.Name and func.value == "len" and len(args) == 1:
            key = dotted(args[0].value)
            return (ROWS, key) if key is not None else None
        if type(func) is cst.Attribute:
            key = dotted(func.value)
            if key is None:
                return None
            method = func.attr.value
            if method == "numel" and not args:
                return (ROWS, key)
            if method in ("size", "shape") and len(args) == 1 and int_value(args[0].value) == 0:
                return (ROWS, key)
        return None
    if (
        type(node) is cst.Subscript
        and type(node.value) is cst.Attribute
        and node.value.attr.value == "shape"
        and len(node.slice) == 1
    ):
        index = node.slice[0].slice
        if type(index) is cst.Index and int_value(index.value) == 0:
            key = dotted(node.value.value)
            return (ROWS, key) if key is not None else None
    return None


def forget(conditions: tuple, written: str | None) -> tuple:
    """The conditions that still hold after ``written`` is assigned: none on that name,
    nor on a field of it (``meta = other`` ends ``meta.num > 0``)."""
    if written is None:
        return conditions
    prefix = written + "."
    return tuple(g for g in conditions if g[0] != written and not g[0].startswith(prefix))


def text(name: str, op: str, k: int) -> str:
    """The guard op's argument, as the judge reads it back (``smt.parse_guard``)."""
    return f"{name} {op} {k}"


def holds(op: str, value: int, k: int) -> bool:
    return {
        ">": value > k,
        ">=": value >= k,
        "<": value < k,
        "<=": value <= k,
        "==": value == k,
        "!=": value != k,
    }[op]
