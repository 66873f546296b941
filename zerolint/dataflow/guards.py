"""Path conditions: what a dominating ``if`` test, early exit or ``assert`` says about a path.

An atom is ``(subject, op, k)``: a scalar symbol (``num_decodes``) or the rows of a tensor
(``("#rows", key)``: ``x.numel()``, ``len(x)``, ``x.shape[0]``, ``x.size(0)``) compared with
an integer. ``atoms(test, True)`` holds in the body of ``if test:``; ``atoms(test, False)``
after it when the body always exits. A membership test against literal sizes
(``n in (1, 2, 4)``) bounds ``n`` by the smallest and the largest; ``x.any()`` or
``(x > 0).any()`` being true, or ``x.all()`` or ``(x > 0).all()`` false, says ``x`` has rows
(some element is or is not so). Only conjunctions are kept (``a and b`` when true,
``a or b`` when false); anything else says nothing, which is never unsound: a path with
fewer conditions can only be judged less safe.

A test on the values of a tensor's rows gives ``((EVERY_ROW, key), op, k)`` (every row of it
``op k``) or ``((SOME_ROW, key), op, k)``: ``(x > 0).all()``, ``(x == 0).any()`` (or
``torch.all``/``torch.any``), ``x.any()``, and ``x.max()``/``x.min()``/``x.sum()`` compared
with an integer (``.item()`` or ``int(...)`` around them; ``torch.max(x)``, ``amax``,
``amin``, ``torch.sum(x)``). A reduction gives what it implies: ``x.max() != 0`` says some
row is not 0, ``x.max() == 0`` that every row is <= 0 and some row is 0, ``x.sum() > 0``
that some row is above 0.
"""

from __future__ import annotations

import libcst as cst

from zerolint.dataflow.syntax import (
    COMPARISONS,
    MIRROR,
    compared_with_int,
    dotted,
    int_value,
    range_args,
)
from zerolint.dataflow.values import RawStep
from zerolint.model import EVERY_ROW, SOME_ROW, Op, OpKind
from zerolint.project import ModuleInfo

ROWS = "#rows"
_NEGATE = {">": "<=", ">=": "<", "<": ">=", "<=": ">", "==": "!=", "!=": "=="}

Subject = tuple[str, str]  # ("sym", name) or (ROWS, key of the tensor)
Atom = tuple[Subject, str, int]


def atoms(test: cst.BaseExpression, positive: bool, truthiness: bool = True) -> list[Atom]:
    """The conditions that hold where ``test`` is ``positive``; without ``truthiness``,
    not those a bare name's truth gives (``if n:``), which a list's truth gives too."""
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        return atoms(test.expression, not positive, truthiness)
    if type(test) is cst.NamedExpr:  # `if (n := len(x)):` tests the value and the name
        return atoms(test.value, positive, truthiness) + atoms(test.target, positive, truthiness)
    if type(test) is cst.Comparison and len(test.comparisons) == 1:
        target = test.comparisons[0]
        for side, field in ((test.left, "left"), (target.comparator, "comparator")):
            if type(side) is cst.NamedExpr:  # `(n := x.shape[0]) == 0`: of both
                named = [side.value, side.target]
                if field == "left":
                    tests = [test.with_changes(left=n) for n in named]
                else:
                    tests = [
                        test.with_changes(comparisons=[target.with_changes(comparator=n)])
                        for n in named
                    ]
                return [a for t in tests for a in atoms(t, positive, truthiness)]
    if type(test) is cst.BooleanOperation:
        conj = type(test.operator) is cst.And
        if conj == positive:  # a and b is true / a or b is false: both hold
            return atoms(test.left, positive, truthiness) + atoms(test.right, positive, truthiness)
        return []
    quantified = _quantified(test)
    if quantified is not None:
        return _row_values(*quantified, positive)
    reduction = reduced(test)
    if reduction is not None:  # `if x.max():` is `x.max() != 0`
        return reduction_atoms(*reduction, "!=" if positive else "==", 0)
    if type(test) is cst.Comparison and len(test.comparisons) == 1:
        target = test.comparisons[0]
        if isinstance(target.operator, (cst.In, cst.NotIn)):
            return _membership(test.left, target, positive)
        op = COMPARISONS.get(type(target.operator))
        if op is None:
            return []
        left, right = test.left, target.comparator
        for side, k, cmp in ((left, int_value(right), op), (right, int_value(left), MIRROR[op])):
            reduction = reduced(side)
            if reduction is not None:
                return reduction_atoms(*reduction, cmp if positive else _NEGATE[cmp], k)
        k, subject = int_value(right), _subject(left)
        if k is None or subject is None:
            k, subject, op = int_value(left), _subject(right), MIRROR[op]
        if k is None or subject is None:
            return []
        return [(subject, op if positive else _NEGATE[op], k)]
    subject = _subject(test)
    if subject is not None and (
        subject[0] == ROWS or (truthiness and isinstance(test, (cst.Name, cst.Attribute)))
    ):
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


def _quantified(node: cst.BaseExpression) -> tuple[str, cst.BaseExpression] | None:
    """``("all" or "any", x)`` for ``x.all()``, ``x.any()``, ``torch.all(x)``, ``torch.any(x)``."""
    if type(node) is not cst.Call or type(node.func) is not cst.Attribute:
        return None
    func = node.func
    quantifier = func.attr.value
    if quantifier not in ("all", "any"):
        return None
    if not node.args:
        return quantifier, func.value
    if dotted(func.value) == "torch" and len(node.args) == 1 and node.args[0].keyword is None:
        return quantifier, node.args[0].value
    return None


def _row_values(quantifier: str, inner: cst.BaseExpression, positive: bool) -> list[Atom]:
    """What ``inner.all()`` or ``inner.any()`` being ``positive`` says of the rows of the
    tensor that ``inner`` names or compares with an integer."""
    key, op, k = dotted(inner), "!=", 0  # a tensor's truth: not 0
    if key is None:
        compared = _compared(inner)
        if compared is None:
            return []
        key, op, k = compared
    # Every row holds (`all` true, `any` false: no rows at all pass too), or some row
    # does (`any` true, `all` false), which needs a row: then the tensor has rows.
    if quantifier == "all" and positive:
        return [((EVERY_ROW, key), op, k)]
    if quantifier == "any" and not positive:
        return [((EVERY_ROW, key), _NEGATE[op], k)]
    some_op = op if positive else _NEGATE[op]
    return [((ROWS, key), "!=", 0), ((SOME_ROW, key), some_op, k)]


def _compared(node: cst.BaseExpression) -> tuple[str, str, int] | None:
    """``(x, op, k)`` for the comparison ``x op k`` (or ``k op x``) of a named tensor."""
    for side, op, k in compared_with_int(node):
        key = dotted(side)
        if key is not None:
            return key, op, k
    return None


_REDUCTIONS = {"max": "max", "amax": "max", "min": "min", "amin": "min", "sum": "sum"}


def reduced(node: cst.BaseExpression) -> tuple[str, str] | None:
    """``("max", "min" or "sum", x)`` for ``x.max()``, ``torch.max(x)``, ``x.amin()``,
    ``x.sum()`` ...; an ``.item()`` or ``int(...)`` around it changes nothing."""
    while type(node) is cst.Call:
        func, args = node.func, node.args
        if type(func) is cst.Name and func.value == "int" and len(args) == 1:
            node = args[0].value
            continue
        if type(func) is not cst.Attribute:
            return None
        name = func.attr.value
        if name == "item" and not args:
            node = func.value
            continue
        fn = _REDUCTIONS.get(name)
        if fn is None:
            return None
        if not args:
            key = dotted(func.value)
        elif dotted(func.value) == "torch" and len(args) == 1 and args[0].keyword is None:
            key = dotted(args[0].value)
        else:
            return None  # along a dimension: one value per row, not the tensor's
        return (fn, key) if key is not None else None
    return None


def counted(node: cst.BaseExpression) -> tuple[str, str] | None:
    """``(ROWS, x)`` for a row count of the named tensor ``x`` (``x.shape[0]``, ``len(x)``,
    ``x.size(0)``, ``x.numel()``); an ``int(...)`` around it changes nothing."""
    while (
        type(node) is cst.Call
        and type(node.func) is cst.Name
        and node.func.value == "int"
        and len(node.args) == 1
    ):
        node = node.args[0].value
    subject = _subject(node)
    return subject if subject is not None and subject[0] == ROWS else None


def loop_atoms(iterated: cst.BaseExpression) -> list[Atom]:
    """What holds in the body of ``for ... in iterated``: it yields something.
    ``range(n)`` and ``range(a, n)`` yield only where ``n > a`` (``a`` an integer literal),
    as with a positive literal step; ``range(0, n, step)`` where ``n != 0``, for either sign
    of the step. ``enumerate`` and ``reversed`` of them yield where they do. A loop over a
    name says nothing: its value may be a tuple of tensors, whose rows are not its
    length."""
    while (
        type(iterated) is cst.Call
        and type(iterated.func) is cst.Name
        and iterated.func.value in ("enumerate", "reversed")
        and iterated.args
        and iterated.args[0].keyword is None
        and not iterated.args[0].star
    ):
        iterated = iterated.args[0].value
    args = range_args(iterated)
    if args is None:
        return []
    start = 0 if len(args) == 1 else int_value(args[0])
    subject = _subject(args[-1] if len(args) == 1 else args[1])
    if start is None or subject is None:
        return []
    step = int_value(args[2]) if len(args) == 3 else 1
    if step is not None and step > 0:
        return [(subject, ">", start)]
    return [(subject, "!=", 0)] if start == 0 else []  # counting down from 0 to n


def reduction_atoms(fn: str, key: str, op: str, k: int | None) -> list[Atom]:
    """What ``x.max() op k`` (or ``x.min() op k``) says of every row or some row of x;
    ``fn`` ``ROWS`` (a name assigned ``x.shape[0]``, ``Statements.record_reduction``):
    what it says of x's row count."""
    if k is None:
        return []
    if fn == ROWS:
        return [((ROWS, key), op, k)]
    if fn == "sum":
        return _sum_atoms(key, op, k)
    # max > k: some row > k; max < k: every row < k; min the other way round.
    upper, lower = (SOME_ROW, EVERY_ROW) if fn == "max" else (EVERY_ROW, SOME_ROW)
    if op in (">", ">="):
        return [((upper, key), op, k)]
    if op in ("<", "<="):
        return [((lower, key), op, k)]
    if op == "==":
        bound = "<=" if fn == "max" else ">="
        return [((EVERY_ROW, key), bound, k), ((SOME_ROW, key), "==", k)]
    return [((SOME_ROW, key), "!=", k)]  # not every row is k


def _sum_atoms(key: str, op: str, k: int) -> list[Atom]:
    """What ``x.sum() op k`` says of some row of x, whatever the signs of its rows: a sum
    that is not 0 has a row that is not 0, one above 0 a row above 0, one below 0 a row
    below 0. ``x.sum() == 0`` says nothing (rows of -1 and 1); lengths are not negative,
    but a path may subtract from them."""
    if op == "!=" and k == 0:
        return [((SOME_ROW, key), "!=", 0)]
    if op == ">" and k >= 0 or op in (">=", "==") and k >= 1:
        return [((SOME_ROW, key), ">", 0)]
    if op == "<" and k <= 0 or op in ("<=", "==") and k <= -1:
        return [((SOME_ROW, key), "<", 0)]
    return []


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


def step(
    mod: ModuleInfo, stmt: cst.CSTNode, subject: str, op: str, k: int, note: str = ""
) -> RawStep:
    """The path step that says ``subject op k`` holds at ``stmt`` (a scalar's name,
    ``ROWS``, ``EVERY_ROW`` or ``SOME_ROW``), shown as ``note`` or as the condition."""
    note = note or f"guard: {subject} {op} {k}"
    return RawStep(mod, stmt, None, "flow", Op(OpKind.GUARD, text(subject, op, k)), note)


def holds(op: str, value: int, k: int) -> bool:
    return {
        ">": value > k,
        ">=": value >= k,
        "<": value < k,
        "<=": value <= k,
        "==": value == k,
        "!=": value != k,
    }[op]
