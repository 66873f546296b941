"""Reading LibCST nodes: dotted names, literals, slices, masks, affine dividends."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import libcst as cst

from zerolint.dataflow.library import VIEW_METHODS
from zerolint.dataflow.values import parameters
from zerolint.model import Op, OpKind
from zerolint.positions import NODE_TYPES, content_fields, is_node_type
from zerolint.project import ModuleInfo, fold_code

if TYPE_CHECKING:
    from zerolint.dataflow.frames import Frame


def dotted(node: cst.CSTNode | None) -> str | None:
    if type(node) is cst.Name:
        return node.value
    if type(node) is cst.Attribute:
        base = dotted(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None


def int_value(node: cst.CSTNode | None) -> int | None:
    """The value of an integer literal (``4``, ``-1``, ``(1)``), else None."""
    if type(node) is cst.Integer:
        try:
            return int(node.value.replace("_", ""), 0)
        except ValueError:
            return None
    if type(node) is cst.UnaryOperation and type(node.operator) is cst.Minus:
        inner = int_value(node.expression)
        return -inner if inner is not None else None
    if type(node) is cst.Float:
        try:
            f = float(node.value)
        except ValueError:
            return None
        return int(f) if f.is_integer() else None
    return None


def dict_key(node: cst.CSTNode | None) -> str | None:
    """A dict's key written as a literal, as a dict written out is keyed (``Val.keys``): a
    string's text (``"seq_lens"``), or an integer's value marked apart from any string's
    (``0``: ``"\\x00 0"``); None for any other key (a name: it may be any)."""
    text = string_value(node)
    if text is not None:
        return text
    value = int_value(node)
    return None if value is None else f"\x00 {value}"


def string_value(node: cst.CSTNode | None) -> str | None:
    """The text of a plain string literal (``"floor"``); None for anything else."""
    if type(node) is cst.SimpleString:
        prefix = node.prefix.lower()
        if "b" in prefix or "f" in prefix:
            return None
        body = node.value[len(node.prefix) :]
        quote = body[:3] if body[:3] in ('"""', "'''") else body[:1]
        inner = body[len(quote) : -len(quote)]
        return inner if "\\" not in inner else None
    return None


CONSTANT_TENSORS = {"ones": 1, "ones_like": 1, "new_ones": 1}
VALUE_TENSORS = ("tensor", "new_tensor", "as_tensor", "scalar_tensor")
FULL_TENSORS = ("full", "full_like", "new_full")


def tensor_constant(node: cst.CSTNode | None) -> int | None:
    """The value of a constant tensor written as a bound: torch.ones_like(x) -> 1,
    torch.tensor(4) -> 4, torch.full_like(x, 2) -> 2."""
    if type(node) is not cst.Call:
        return None
    name = (
        node.func.attr.value
        if type(node.func) is cst.Attribute
        else node.func.value
        if type(node.func) is cst.Name
        else ""
    )
    positional = [a.value for a in node.args if a.keyword is None]
    keywords = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
    if name in CONSTANT_TENSORS:
        return CONSTANT_TENSORS[name]
    if name in VALUE_TENSORS and positional:
        return int_value(positional[0])
    if name in FULL_TENSORS:
        fill = keywords.get("fill_value", positional[1] if len(positional) > 1 else None)
        return int_value(fill)
    return None


def operand(node: cst.CSTNode | None) -> int | str:
    """A divisor or bound as the SMT model takes it: a literal, or the expression's text."""
    value = int_value(node)
    if value is None:
        value = tensor_constant(node)
    if value is not None:
        return value
    text = dotted(node)
    if text is not None:
        return text
    return "<expr>"


def base_key(node: cst.CSTNode) -> str | None:
    """The storage a target expression writes: ``self.buf[:n].view(-1)`` -> ``self.buf``."""
    while True:
        if type(node) is cst.Subscript:
            node = node.value
        elif (
            type(node) is cst.Call
            and type(node.func) is cst.Attribute
            and (node.func.attr.value in VIEW_METHODS)
        ):
            node = node.func.value
        elif type(node) is cst.Attribute and node.attr.value in ("data", "T", "mT"):
            node = node.value
        else:
            break
    return dotted(node)


def slice_cell(frame: Frame, target: cst.CSTNode, key: str) -> str | None:
    """The state key of a slice written or read as a whole: ``self.buf[:n]``."""
    if type(target) is not cst.Subscript or dotted(target.value) != key:
        return None
    if not any(type(el.slice) is cst.Slice for el in target.slice):
        return None
    # A tree LibCST parsed itself keeps the source's spacing in what it prints: its keys
    # are printed (``buf[: n + 1]`` and ``buf[:n+1]`` stay two cells there, as before).
    text = key_text(target) if frame.mod.built else None
    return fold_code(text) if text is not None else frame.mod.code(target)


_KEY_OPERATORS = {
    cst.Add: "+",
    cst.Subtract: "-",
    cst.Multiply: "*",
    cst.FloorDivide: "//",
    cst.Divide: "/",
    cst.Modulo: "%",
}


def key_text(node: cst.CSTNode) -> str | None:
    """The text LibCST prints for a built tree's ``self.buf[a:b + 1, 0]`` (names,
    attributes, integers, subscripts, slices, ``+ - * // / %``, unary minus, with its
    default formatting), made directly: printing goes through LibCST's code generator,
    which visits every node. None for anything else (a call, parentheses)."""
    if getattr(node, "lpar", None):
        return None
    kind = type(node)
    if kind is cst.Name or kind is cst.Integer:
        return node.value
    if kind is cst.Attribute:
        base = key_text(node.value)
        return None if base is None else f"{base}.{node.attr.value}"
    if kind is cst.Subscript:
        base = key_text(node.value)
        parts = []
        for element in node.slice:
            inner = element.slice
            if type(inner) is cst.Index and inner.star is None:
                part = key_text(inner.value)
            elif type(inner) is cst.Slice:
                bounds = [
                    "" if bound is None else key_text(bound)
                    for bound in (inner.lower, inner.upper, inner.step)
                ]
                if None in bounds:
                    return None
                part = ":".join(bounds if inner.step is not None else bounds[:2])  # type: ignore[arg-type]
            else:
                return None
            if part is None:
                return None
            parts.append(part)
        return None if base is None else f"{base}[{', '.join(parts)}]"
    if kind is cst.BinaryOperation:
        operator = _KEY_OPERATORS.get(type(node.operator))
        left, right = key_text(node.left), key_text(node.right)
        if operator is None or left is None or right is None:
            return None
        return f"{left} {operator} {right}"
    if kind is cst.UnaryOperation and type(node.operator) is cst.Minus:
        operand_text = key_text(node.expression)
        return None if operand_text is None else f"-{operand_text}"
    return None


def row_slice(target: cst.CSTNode, key: str) -> str | tuple | None:
    """How a subscript write to ``key`` covers its rows: "all" for ``buf[:]``/``buf[...]``,
    (lower, upper) for ``buf[:n]`` (rows from 0), None otherwise."""
    if type(target) is not cst.Subscript or dotted(target.value) != key or len(target.slice) != 1:
        return None
    part = target.slice[0].slice
    if type(part) is cst.Index and type(part.value) is cst.Ellipsis:
        return "all"
    if type(part) is cst.Slice and part.step is None:
        lower_zero = part.lower is None or is_zero(part.lower)
        if lower_zero and part.upper is None:
            return "all"
        if lower_zero:
            return (part.lower, part.upper)
    return None


def slice_bounds(
    node: cst.Subscript,
) -> tuple[cst.BaseExpression | None, cst.BaseExpression | None] | None:
    """(lower, upper) of a first-axis slice ``buf[a:b]``, or None when it is not a slice."""
    if not node.slice:
        return None
    first = node.slice[0].slice
    if type(first) is cst.Slice:
        return first.lower, first.upper
    return None


def drops_rows(node: cst.Subscript) -> bool:
    """Whether a first-axis slice has as many rows as it selects from, less some: a start
    that is not 0 with no end (``x[1:]``, ``x[1::2]``), or a bound counted from the end
    (``x[:-1]``). ``x[a:b]`` is taken to have ``b - a`` rows, as a slice within what it
    selects from (``Expressions.rows_source``); ``x[:]`` has all of them."""
    bounds = slice_bounds(node)
    if bounds is None:
        return False
    lower, upper = bounds
    if upper is None and not (lower is None or is_zero(lower)):
        return True
    return any(v is not None and v < 0 for v in (int_value(lower), int_value(upper)))


def range_args(node: cst.BaseExpression) -> list[cst.BaseExpression] | None:
    """The arguments of ``range(stop)``, ``range(start, stop)`` or ``range(start, stop,
    step)`` written out by position; None for anything else."""
    if type(node) is not cst.Call or type(node.func) is not cst.Name or node.func.value != "range":
        return None
    args = node.args
    if not 1 <= len(args) <= 3 or any(a.keyword is not None or a.star for a in args):
        return None
    return [a.value for a in args]


def less_a_constant(node: cst.BaseExpression) -> str:
    """``"n - 1"`` for ``n - 1``: a name less a positive literal, as the SMT judge reads a
    count (``smt._count``); ``"<expr>"`` for anything else."""
    if type(node) is not cst.BinaryOperation or type(node.operator) is not cst.Subtract:
        return "<expr>"
    name, k = operand(node.left), int_value(node.right)
    if not isinstance(name, str) or name == "<expr>" or k is None or k <= 0:
        return "<expr>"
    return f"{name} - {k}"


def window_width(
    lower: cst.BaseExpression | None, upper: cst.BaseExpression
) -> cst.BaseExpression | None:
    """``n`` for the slice ``x[a : a + n]`` (or ``x[a : n + a]``): how many rows it takes
    from ``a``; None for any other bounds."""
    if (
        lower is None
        or type(upper) is not cst.BinaryOperation
        or type(upper.operator) is not cst.Add
    ):
        return None
    start = operand(lower)
    if start == "<expr>":
        return None
    if operand(upper.left) == start:
        return upper.right
    if operand(upper.right) == start:
        return upper.left
    return None


def is_none(node: cst.CSTNode | None) -> bool:
    return type(node) is cst.Name and node.value == "None"


def is_zero(node: cst.CSTNode | None) -> bool:
    """A literal 0: ``0``, ``0.0``, ``False``."""
    return int_value(node) == 0 or (type(node) is cst.Name and node.value == "False")


def written_as_zero(node: cst.CSTNode | None) -> bool:
    """A literal that is 0 once written into a tensor of lengths, whose integer dtype
    truncates toward 0 (``buf[:] = 0.5``, ``x.fill_(0.5)``, ``x.masked_fill(m, 0.5)``):
    ``is_zero``, or a number between -1 and 1. Not where the result's dtype may become
    a float (``torch.where(m, x, 0.5)`` holds 0.5)."""
    if type(node) is cst.Float or (
        type(node) is cst.UnaryOperation
        and type(node.operator) is cst.Minus
        and type(node.expression) is cst.Float
    ):
        inner = node if type(node) is cst.Float else node.expression  # type: ignore[union-attr]
        try:
            return abs(float(inner.value)) < 1  # type: ignore[union-attr]
        except ValueError:
            return False
    return is_zero(node)


# Which rows a mask over lengths ``x`` selects: ``x == 0`` the zero rows, ``x < 1`` the rows
# below 1; and the complements a ``torch.where(keep, x, k)`` keeps.
_MASK_PICKS = {("==", 0): "zero", ("<", 1): "below1", ("<=", 0): "below1"}
_MASK_KEEPS = {("!=", 0): "zero", (">", 0): "below1", (">=", 1): "below1"}
# The operator of each LibCST comparison, and a comparison turned around (k < n is n > k).
COMPARISONS = {
    cst.GreaterThan: ">",
    cst.GreaterThanEqual: ">=",
    cst.LessThan: "<",
    cst.LessThanEqual: "<=",
    cst.Equal: "==",
    cst.NotEqual: "!=",
}
MIRROR = {">": "<", ">=": "<=", "<": ">", "<=": ">=", "==": "==", "!=": "!="}


def compared_with_int(node: cst.BaseExpression) -> list[tuple[cst.BaseExpression, str, int]]:
    """The readings of ``node`` as ``x op k``, ``k`` an integer literal: ``x`` on the left,
    then ``x`` on the right (the operator turned around); none unless ``node`` is one
    ordered or equality comparison. The caller takes the first whose ``x`` it wants."""
    if type(node) is not cst.Comparison or len(node.comparisons) != 1:
        return []
    target = node.comparisons[0]
    op = COMPARISONS.get(type(target.operator))
    if op is None:
        return []
    left, right = node.left, target.comparator
    found = []
    k = int_value(right)
    if k is not None:
        found.append((left, op, k))
    k = int_value(left)
    if k is not None:
        found.append((right, MIRROR[op], k))
    return found


def mask_rows(
    mod: ModuleInfo, cond: cst.BaseExpression, subject: cst.BaseExpression, *, keeps: bool = False
) -> str | None:
    """``"zero"`` or ``"below1"`` when ``cond`` compares ``subject`` (same code) with a
    constant so as to pick (``keeps``: to keep) exactly those rows, else None."""
    readings = compared_with_int(cond)
    if not readings:
        return None
    subject_code = mod.code(subject)
    for side, op, k in readings:
        if mod.code(side) == subject_code:
            return (_MASK_KEEPS if keeps else _MASK_PICKS).get((op, k))
    return None


def replacement_op(rows: str, value: int) -> Op:
    """The row operation of setting the ``rows`` a mask picked to ``value``."""
    if rows == "below1" and value == 1:
        return Op(OpKind.CLAMP_MIN, 1)
    return Op(OpKind.ZERO_TO if rows == "zero" else "below1_to", value)


def affine_prefix(node: cst.BaseExpression) -> list[Op] | None:
    """Constant offsets, signs and scales applied to a length inside a dividend.

    ``x + 3`` -> [add 3]; ``x + c - 1`` -> [add c, add -1]; ``-x`` -> [neg]; a bare name or
    any other expression -> []; None when the dividend mixes two unknown lengths.
    """
    if type(node) is cst.BinaryOperation and isinstance(node.operator, (cst.Add, cst.Subtract)):
        sign = 1 if type(node.operator) is cst.Add else -1
        rv = int_value(node.right)
        inner = affine_prefix(node.left)
        if inner is None:
            return None
        if rv is not None:
            return inner + [Op(OpKind.ADD, sign * rv)]
        rtext = dotted(node.right)
        if rtext is not None and sign == 1:
            return inner + [Op(OpKind.ADD, rtext)]
        return None
    if type(node) is cst.UnaryOperation and type(node.operator) is cst.Minus:
        inner = affine_prefix(node.expression)
        return None if inner is None else inner + [Op(OpKind.NEG)]
    if type(node) is cst.BinaryOperation and type(node.operator) is cst.Multiply:
        rv = int_value(node.right)
        if rv is not None:
            inner = affine_prefix(node.left)
            return None if inner is None else inner + [Op(OpKind.MUL, rv)]
    return []


# Casts that keep a boolean mask a 0/1 mask: `(pos >= 0).int()`, `mask.to(torch.int32)`.
_MASK_CASTS = frozenset({"bool", "int", "long", "float", "half", "to", "type", "short", "byte"})
_MASK_FUNCTIONS = frozenset(
    {
        "logical_and",
        "logical_or",
        "logical_not",
        "logical_xor",
        "isin",
        "eq",
        "ne",
        "lt",
        "le",
        "gt",
        "ge",
    }
)


def is_mask(node: cst.BaseExpression | None, scope: cst.CSTNode | None, depth: int = 0) -> bool:
    """Whether ``node`` is a boolean (or 0/1) mask: a comparison, ``~m``, ``m & n``, a cast of
    one, ``torch.logical_and(...)``, or a name every assignment in ``scope`` (the enclosing
    function) binds to one."""
    if node is None or depth > 8:
        return False
    if type(node) is cst.Comparison:
        return True
    if type(node) is cst.UnaryOperation and type(node.operator) is cst.BitInvert:
        return is_mask(node.expression, scope, depth + 1)
    if type(node) is cst.BinaryOperation and isinstance(
        node.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)
    ):
        return is_mask(node.left, scope, depth + 1) and is_mask(node.right, scope, depth + 1)
    if type(node) is cst.Call and type(node.func) is cst.Attribute:
        attr = node.func.attr.value
        if attr in _MASK_CASTS:
            return is_mask(node.func.value, scope, depth + 1)
        return attr in _MASK_FUNCTIONS and (dotted(node.func.value) or "").endswith("torch")
    if type(node) is cst.Name and scope is not None:
        values = _assigned_values(scope, node.value)
        return bool(values) and all(is_mask(v, scope, depth + 1) for v in values)
    return False


_CONTAINERS = (cst.List, cst.Tuple, cst.Dict, cst.Set, cst.ListComp, cst.SetComp, cst.DictComp)
_CONTAINER_CALLS = frozenset({"list", "tuple", "dict", "set", "sorted", "reversed"})


_SPLITS = frozenset({"split", "chunk", "unbind", "tensor_split", "split_with_sizes"})


def bound_to_a_container(scope: cst.CSTNode | None, name: str) -> bool:
    """Whether ``scope`` may bind ``name`` to a container: assigns it a list, tuple, dict
    or set written out or built by a comprehension or ``list(...)``, or the parts of a
    tensor (``x.split(k)``, ``x.chunk(k)``), also where it binds the name otherwise too
    (``parts = []; parts += [x]``). Then ``len(name)`` may count its items, not a tensor's
    rows."""
    if scope is None:
        return False
    _, assigned, _ = _bindings_of(scope)
    return any(_a_container(v) for v in assigned.get(name, ()))


def _a_container(value: cst.BaseExpression) -> bool:
    if isinstance(value, _CONTAINERS):
        return True
    if type(value) is not cst.Call:
        return False
    func = value.func
    if dotted(func) in _CONTAINER_CALLS:
        return True
    return type(func) is cst.Attribute and func.attr.value in _SPLITS


Values = dict[str, list[cst.BaseExpression]]
_BINDINGS: dict[int, tuple[cst.CSTNode, Values, set[str]]] = {}


def bound_in(scope: cst.CSTNode, name: str) -> bool:
    """Whether ``scope`` (a function) binds ``name`` anywhere, which makes it local there:
    assigned, a parameter, a loop's target, imported ... (``_scan_bindings``)."""
    _, assigned, other = _bindings_of(scope)
    return name in assigned or name in other


def _bindings_of(scope: cst.CSTNode) -> tuple[cst.CSTNode, Values, set[str]]:
    cached = _BINDINGS.get(id(scope))
    if cached is None or cached[0] is not scope:
        if len(_BINDINGS) > 1024:
            _BINDINGS.clear()
        cached = _BINDINGS[id(scope)] = (scope, *_scan_bindings(scope))
    return cached


def rebound_params(fn: cst.FunctionDef) -> frozenset[str]:
    """The parameters of ``fn`` that its body binds again anywhere (``n = 0``, ``n -= 1``,
    ``n, m = sizes``, ``for n in ...``, ``(n := ...)``, ``with ... as n``, ``case n:``; a
    function or lambda inside it with a parameter of that name too): a symbol of that name
    in its steps is not always the value the caller passed."""
    params = {p.name.value for p in _all_params(fn.params)}
    _, assigned, _ = _bindings_of(fn)
    known = _REBINDERS.get(id(fn))
    if known is None or known[0] is not fn:  # dropped since the scan: scan again
        _scan_bindings(fn)
        known = _REBINDERS[id(fn)]
    return frozenset(p for p in params if p in assigned or p in known[1])


def local_names(fn: cst.FunctionDef) -> frozenset[str]:
    """The names ``fn`` binds that are not its parameters (its locals, those of the
    functions inside it too): a symbol of one of them in its steps is none of a caller's."""
    _, assigned, other = _bindings_of(fn)
    params = {p.name.value for p in _all_params(fn.params)}
    return frozenset(n for n in (*assigned, *other) if n not in params)


def _all_params(params: cst.Parameters) -> list[cst.Param]:
    out = [*params.posonly_params, *params.params, *params.kwonly_params]
    for star in (params.star_arg, params.star_kwarg):
        if type(star) is cst.Param:
            out.append(star)
    return out


def rebinding_regions(fn: cst.FunctionDef) -> dict[str, frozenset[int]]:
    """For each parameter ``fn`` binds again (``rebound_params``), the ids of the nodes of
    the statements that may run after such a binding: the rest of its block, and of each
    block around it unless the block ends in a ``return`` or ``raise`` first; a loop around
    it, and a ``try`` around it, whole. A path through one of them may carry the new value
    under the parameter's name. A binding not found in a statement of its own (a walrus, a
    comprehension) makes the whole function the region."""
    cached = _REGIONS.get(id(fn))
    if cached is not None and cached[0] is fn:
        return cached[1]
    rebound = rebound_params(fn)
    found: dict[str, set[int]] = {p: set() for p in rebound}
    located: set[str] = set()
    if rebound:
        _regions_in(_block_of(fn.body), [], rebound, found, located)
        whole = {id(n) for stmt in _block_of(fn.body) for n in statements(stmt)}
        for p in rebound - located:
            found[p] = whole
    out = {p: frozenset(ids) for p, ids in found.items()}
    if len(_REGIONS) > 1024:
        _REGIONS.clear()
    _REGIONS[id(fn)] = (fn, out)
    return out


_REGIONS: dict[int, tuple[cst.FunctionDef, dict[str, frozenset[int]]]] = {}
_ENDS = (cst.Return, cst.Raise)


def _block_of(suite: Any) -> list[Any]:
    """The statements of a suite: an indented block's, or a one-line suite's smalls."""
    return list(suite.body) if suite is not None else []


def _sub_blocks(stmt: Any) -> list[list[Any]]:
    kind = type(stmt)
    if kind in (cst.FunctionDef, cst.ClassDef) or not isinstance(stmt, cst.BaseCompoundStatement):
        return []
    if kind is cst.Match:
        return [_block_of(c.body) for c in stmt.cases]
    blocks = [_block_of(stmt.body)]
    if kind is cst.If:
        other = stmt.orelse
        while type(other) is cst.If:
            blocks.append(_block_of(other.body))
            other = other.orelse
        if other is not None:
            blocks.append(_block_of(other.body))
    elif kind in (cst.For, cst.While):
        if stmt.orelse is not None:
            blocks.append(_block_of(stmt.orelse.body))
    elif kind in (cst.Try, cst.TryStar):
        blocks += [_block_of(h.body) for h in stmt.handlers]
        for part in (stmt.orelse, stmt.finalbody):
            if part is not None:
                blocks.append(_block_of(part.body))
    return blocks


def statements(node: Any) -> Iterator[Any]:
    """``node`` and the statements under it, small ones too (where a step is made: its
    ``stmt``), not the expressions in them nor a nested function's or class's body."""
    stack = [node]
    pop, push = stack.pop, stack.append
    while stack:
        current = pop()
        yield current
        if type(current) is cst.SimpleStatementLine:
            yield from current.body
        elif type(current) is cst.Match:
            yield from current.cases
        for block in _sub_blocks(current):
            for stmt in block:
                push(stmt)


def _binds_param(stmt: Any, params: frozenset[str]) -> set[str]:
    """The parameters a statement binds itself (not inside a block under it)."""
    out: set[str] = set()
    smalls = stmt.body if type(stmt) is cst.SimpleStatementLine else [stmt]
    for small in smalls:
        kind = type(small)
        if kind is cst.Assign:
            for t in small.targets:
                out.update(n for n in _target_names(t.target) if n in params)
        elif kind in (cst.AugAssign, cst.AnnAssign) and type(small.target) is cst.Name:
            if small.target.value in params and (kind is cst.AugAssign or small.value):
                out.add(small.target.value)
        elif kind is cst.For:
            out.update(n for n in _target_names(small.target) if n in params)
        elif kind is cst.With:
            for item in small.items:
                if item.asname is not None:
                    out.update(n for n in _target_names(item.asname.name) if n in params)
    return out


def _regions_in(
    block: list[Any],
    chain: list[tuple[list[Any], int, Any]],
    params: frozenset[str],
    found: dict[str, set[int]],
    located: set[str],
) -> None:
    """Walk ``block`` (``chain``: the blocks around it, each with the index and the
    statement that holds the next), adding each binding's region to ``found``."""
    for index, stmt in enumerate(block):
        for p in _binds_param(stmt, params):
            located.add(p)
            _region_after(block, index, chain, found[p])
        for sub in _sub_blocks(stmt):
            _regions_in(sub, [*chain, (block, index, stmt)], params, found, located)


_AGAIN = (cst.For, cst.While, cst.Try, cst.TryStar)  # run what is in them again, or on


def _region_after(
    block: list[Any], index: int, chain: list[tuple[list[Any], int, Any]], ids: set[int]
) -> None:
    """Add to ``ids`` the statements that may run after ``block[index]``: the rest of its
    block and of those around it, up to a ``return`` or ``raise`` that ends one (not
    inside a ``try``, whose handler may go on after it); a loop or a ``try`` around it,
    whole. A stretch added already (by a binding before this one) is not walked again."""
    in_try = any(type(holder) in (cst.Try, cst.TryStar) for _, _, holder in chain)
    current, at = block, index
    levels = list(reversed(chain))
    while True:
        rest = current[at:]
        if rest and id(rest[0]) in ids and id(rest[-1]) in ids:
            break
        for stmt in rest:
            ids.update(id(n) for n in statements(stmt))
        if not in_try and any(_ends(stmt) for stmt in rest):
            break
        if not levels:
            break
        current, at, holder = levels.pop(0)
        at += 1
    for _, _, holder in chain:  # a loop or a try around it runs it all again
        if type(holder) in _AGAIN and id(holder) not in ids:
            ids.update(id(n) for n in statements(holder))


def _ends(stmt: Any) -> bool:
    """A statement of a block after which the block's way on stops: a return or raise."""
    if type(stmt) is cst.SimpleStatementLine:
        return any(type(s) in _ENDS for s in stmt.body)
    return type(stmt) in _ENDS


def _assigned_values(scope: cst.CSTNode, name: str) -> list[cst.BaseExpression]:
    """Every value ``name`` is bound to by a plain assignment anywhere in ``scope``; a name
    bound any other way there (a parameter, also of a nested function or lambda, an
    augmented assignment, a ``for``, ``with``, ``except`` or ``match`` target, an unpacked
    or walrus assignment, an import, a nested ``def`` or ``class``, ``del``, ``global`` or
    ``nonlocal``) gives ``[]``: its values are not all known."""
    _, assigned, other = _bindings_of(scope)
    return [] if name in other else assigned.get(name, [])


def plain_values(scope: cst.CSTNode, name: str) -> list[cst.BaseExpression]:
    """Every value ``name`` is bound to by a plain assignment anywhere in ``scope``, nested
    functions included, however else it is bound: a superset of ``own_assigned_values``
    from the walk ``bound_in`` keeps, to spare that one its own walk."""
    return _bindings_of(scope)[1].get(name, [])


def assigned_values(scope: cst.CSTNode, name: str) -> list[cst.BaseExpression]:
    """Every value the local ``name`` is bound to in ``scope`` (``_assigned_values``); none
    where it is bound any other way too."""
    return _assigned_values(scope, name)


def own_assigned_values(fn: cst.FunctionDef, name: str) -> list[cst.BaseExpression]:
    """The values ``fn`` itself binds its local ``name`` to, by plain assignments (not
    those of a function, a lambda or a class defined in it, whose names are their own);
    none where ``fn`` binds the name any other way too (a loop, a tuple, a parameter)."""
    cached = _OWN_BINDINGS.get(id(fn))
    if cached is None or cached[0] is not fn:
        if len(_OWN_BINDINGS) > 1024:
            _OWN_BINDINGS.clear()
        cached = _OWN_BINDINGS[id(fn)] = (fn, *_own_bindings(fn))
    _, assigned, other = cached
    return [] if name in other else assigned.get(name, [])


_OWN_BINDINGS: dict[int, tuple[cst.FunctionDef, Values, set[str]]] = {}


def _own_bindings(fn: cst.FunctionDef) -> tuple[Values, set[str]]:
    """One walk of ``fn``'s own scope (``own_assigned_values``): each name's plain
    assignments, and the names it binds otherwise."""
    assigned: Values = {}
    other: set[str] = {p.name.value for p in parameters(fn.params)}
    stack: list[Any] = [fn.body]
    pop, push = stack.pop, stack.append
    while stack:
        node = pop()
        kind = type(node)
        if kind is cst.FunctionDef or kind is cst.ClassDef:
            other.add(node.name.value)
            continue
        if kind is cst.Lambda:
            continue
        if kind is cst.Assign:
            for t in node.targets:
                if type(t.target) is cst.Name:
                    assigned.setdefault(t.target.value, []).append(node.value)
                else:
                    other.update(_target_names(t.target))
        elif kind is cst.AnnAssign:
            target = node.target
            if node.value is not None and type(target) is cst.Name:
                assigned.setdefault(target.value, []).append(node.value)
        elif kind in _BINDS and kind is not cst.CompFor:  # a comprehension's are its own
            other.update(_bound_otherwise(node, kind))
        _push_children(node, kind, push)
    return assigned, other


def _scan_bindings(scope: cst.CSTNode) -> tuple[Values, set[str]]:
    """One walk of ``scope``: the values of each name's plain assignments, and the names
    bound otherwise. A plain walk of the nodes' fields (``_push_children``), not a
    CSTVisitor: that rebuilds every node it passes and costs ten times as much."""
    assigned: Values = {}
    other: set[str] = set()
    rebinders: set[str] = set()  # bound other than as a parameter
    stack = [scope]
    pop, push = stack.pop, stack.append
    while stack:
        node = pop()
        # type() is: these classes have no subclasses, and isinstance() would go through ABCMeta.
        kind = type(node)
        if kind is cst.Assign:
            for t in node.targets:
                if type(t.target) is cst.Name:
                    assigned.setdefault(t.target.value, []).append(node.value)
                else:
                    names = list(_target_names(t.target))
                    other.update(names)
                    rebinders.update(names)
        elif kind is cst.AnnAssign:
            if node.value is not None and type(node.target) is cst.Name:
                assigned.setdefault(node.target.value, []).append(node.value)
        elif kind is cst.Param:
            other.add(node.name.value)
        elif kind in _BINDS and node is not scope:
            names = list(_bound_otherwise(node, kind))
            other.update(names)
            rebinders.update(names)
        _push_children(node, kind, push)
    if len(_REBINDERS) > 4096:
        _REBINDERS.clear()
    _REBINDERS[id(scope)] = (scope, frozenset(rebinders))
    return assigned, other


_REBINDERS: dict[int, tuple[cst.CSTNode, frozenset[str]]] = {}


def _push_children(node: Any, kind: type, push: Callable[[Any], None]) -> None:
    """Push the child nodes of ``node`` (of type ``kind``) that may bind or read a name:
    those in its content fields, not its formatting (``_binding_fields``)."""
    names = _BINDING_FIELDS.get(kind)
    if names is None:
        names = _BINDING_FIELDS[kind] = _binding_fields(kind)
    node_kinds = _IS_NODE
    for name in names:
        value = getattr(node, name)
        value_kind = type(value)
        if value_kind is tuple or value_kind is list:
            for v in value:
                is_one = node_kinds.get(type(v))
                if is_one or (is_one is None and is_node(v)):
                    push(v)
        else:
            is_one = node_kinds.get(value_kind)
            if is_one or (is_one is None and is_node(value)):
                push(value)


def peel_views(
    node: cst.BaseExpression,
    methods: frozenset[str],
    *,
    slices: bool | Callable[[cst.Subscript], bool] = True,
) -> cst.BaseExpression:
    """What ``node`` is a view of, as written: the calls of ``methods`` on it taken off
    (``x.view(-1).unsqueeze(0)`` -> ``x``), and its subscripts: every one (``slices``
    true), none, or those ``slices`` accepts."""
    while True:
        if type(node) is cst.Subscript and (slices is True or callable(slices) and slices(node)):
            node = node.value
        elif (
            type(node) is cst.Call
            and type(node.func) is cst.Attribute
            and node.func.attr.value in methods
        ):
            node = node.func.value
        else:
            return node


def read_names(node: cst.CSTNode) -> list[str]:
    """The longest dotted names ``node`` reads (``meta.num_decodes``, ``x.shape``, ``len``),
    each once for each place it is read."""
    out: list[str] = []
    stack = [node]
    while stack:
        n = stack.pop()
        name = dotted(n) if type(n) is cst.Name or type(n) is cst.Attribute else None
        if name is not None:
            out.append(name)
            continue
        _push_children(n, type(n), stack.append)
    return out


_TARGETS = (cst.AugAssign, cst.For, cst.CompFor, cst.Del, cst.NamedExpr)  # bind .target
_NAMED = (cst.FunctionDef, cst.ClassDef, cst.MatchAs, cst.MatchStar)  # bind .name (or none)
# Every node type _bound_otherwise names something for.
_BINDS = frozenset(
    {*_TARGETS, *_NAMED, cst.AsName, cst.ImportAlias, cst.Global, cst.Nonlocal, cst.MatchMapping}
)


def _bound_otherwise(node: Any, kind: type) -> Iterator[str]:
    """The names ``node`` binds other than by a plain assignment (see _assigned_values)."""
    if kind in _TARGETS:
        yield from _target_names(node.target)
    elif kind is cst.AsName:  # with ... as x, except E as x, import a as x
        yield from _target_names(node.name)
    elif kind is cst.ImportAlias and node.asname is None:
        head = node.name
        while type(head) is cst.Attribute:  # import a.b binds a
            head = head.value
        yield from _target_names(head)
    elif kind in _NAMED and node.name is not None:
        yield node.name.value
    elif kind is cst.Global or kind is cst.Nonlocal:
        yield from (item.name.value for item in node.names)
    elif kind is cst.MatchMapping and node.rest is not None:
        yield node.rest.value


def comprehension_targets(node: cst.CSTNode) -> frozenset[str]:
    """The names a comprehension's own ``for`` clauses bind (not visible after it)."""
    names: set[str] = set()
    comp = node.for_in  # type: ignore[attr-defined]
    while comp is not None:
        names.update(_target_names(comp.target))
        comp = comp.inner_for_in
    return frozenset(names)


def target_names(target: cst.BaseExpression) -> frozenset[str]:
    """The names a ``for`` or comprehension target binds (``n, (x, *rest)``)."""
    return frozenset(_target_names(target))


def reads_what_it_binds(target: cst.BaseExpression, source: cst.CSTNode) -> bool:
    """Whether ``source`` reads a name ``target`` binds (``for n in range(n)``): what
    holds of the loop's runs is about the name's old value."""
    bound = set(target_names(target))
    if type(target) is cst.Attribute:  # `for self.n in range(self.n)`
        bound.add(dotted(target) or "")
    return any(name in bound or name.split(".", 1)[0] in bound for name in read_names(source))


def _target_names(target: Any) -> Iterator[str]:
    """The names a target binds: itself, or the names inside an unpacking (``a, (b, *c)``);
    none for an attribute or a subscript (they bind no name)."""
    kind = type(target)
    if kind is cst.Name:
        yield target.value
    elif kind is cst.Tuple or kind is cst.List:
        for element in target.elements:
            yield from _target_names(element.value)
    elif kind is cst.StarredElement:
        yield from _target_names(target.value)


def fields_assigned(fn: cst.FunctionDef) -> dict[str, list[cst.BaseExpression | None]]:
    """The attributes a method assigns on its first parameter, anywhere in its body, each
    with the values it assigns: ``self.x = v`` and ``self.x: T = v`` give ``v``; an
    unpacking (``self.x, self.y = ...``) or ``self.x += ...`` gives None (not known).
    Worked out once per method."""
    cached = _FIELDS_ASSIGNED.get(id(fn))
    if cached is not None and cached[0] is fn:
        return cached[1]
    params = parameters(fn.params)
    found: dict[str, list[cst.BaseExpression | None]] = {}
    if params:
        me = params[0].name.value
        stack: list[Any] = [fn.body]
        pop, push = stack.pop, stack.append
        while stack:
            node = pop()
            kind = type(node)
            if kind is cst.Assign or kind is cst.AnnAssign or kind is cst.AugAssign:
                targets = [t.target for t in node.targets] if kind is cst.Assign else [node.target]
                value = node.value if kind is not cst.AugAssign else None
                for target in targets:
                    plain = type(target) is cst.Attribute
                    for attr in _attributes_of(target, me):
                        found.setdefault(attr, []).append(value if plain else None)
            _push_children(node, kind, push)
    if len(_FIELDS_ASSIGNED) > 4096:
        _FIELDS_ASSIGNED.clear()
    _FIELDS_ASSIGNED[id(fn)] = (fn, found)
    return found


_FIELDS_ASSIGNED: dict[int, tuple[cst.FunctionDef, dict[str, list[cst.BaseExpression | None]]]] = {}


def _attributes_of(target: Any, me: str) -> Iterator[str]:
    """The attributes of the name ``me`` a target assigns (``me.x``, inside an unpacking)."""
    kind = type(target)
    if kind is cst.Attribute and type(target.value) is cst.Name and target.value.value == me:
        yield target.attr.value
    elif kind is cst.Tuple or kind is cst.List:
        for element in target.elements:
            yield from _attributes_of(element.value, me)
    elif kind is cst.StarredElement:
        yield from _attributes_of(target.value, me)


_BINDING_FIELDS: dict[type, tuple[str, ...]] = {}


def _binding_fields(kind: type) -> tuple[str, ...]:
    """The fields of a node type that may hold a node binding a name (``_scan_bindings``):
    not its formatting (``positions.FORMATTING_FIELDS``)."""
    if kind is cst.Name:
        return ()  # its value is a string
    return content_fields(kind)


# Whether a type is a LibCST node's, one table with positions' walk: isinstance() against
# LibCST's abstract base goes through ABCMeta in Python, a third of a walk's time.
_IS_NODE = NODE_TYPES


def is_node(value: object) -> bool:
    return is_node_type(type(value))


# Views that cover every element of what they view (a slice does not).
_WHOLE_VIEWS = frozenset(
    {
        "view",
        "reshape",
        "flatten",
        "view_as",
        "reshape_as",
        "unsqueeze",
        "squeeze",
        "t",
        "transpose",
        "permute",
        "detach",
        "unflatten",
        "ravel",
        "movedim",
    }
)


def whole_view_of(scope: cst.CSTNode | None, alias: str, base: object) -> bool:
    """Whether every binding of the local ``alias`` in ``scope`` is ``base`` itself or a
    view of all of it (``buf``, ``buf.view(-1)``, ``buf.data``), so that a write of every
    row of the alias writes every row of ``base``."""
    if scope is None or not isinstance(base, str) or "." in alias or "[" in alias:
        return False
    values = _assigned_values(scope, alias)
    if not values:
        return False
    for value in values:
        node = value
        while True:
            if (
                type(node) is cst.Call
                and type(node.func) is cst.Attribute
                and node.func.attr.value in _WHOLE_VIEWS
            ):
                node = node.func.value
            elif type(node) is cst.Attribute and node.attr.value in ("data", "T", "mT"):
                node = node.value
            else:
                break
        if dotted(node) != base:
            return False
    return True


def is_boolean_index(node: cst.BaseExpression) -> bool:
    """A boolean index: a comparison, or ``~`` / ``&`` / ``|`` of them."""
    if type(node) is cst.Comparison:
        return True
    if type(node) is cst.UnaryOperation and type(node.operator) is cst.BitInvert:
        return is_boolean_index(node.expression)
    if type(node) is cst.BinaryOperation and isinstance(node.operator, (cst.BitAnd, cst.BitOr)):
        return is_boolean_index(node.left) or is_boolean_index(node.right)
    return False


def scope_names(
    fn: cst.FunctionDef | cst.Lambda, memo: dict[int, tuple[frozenset[str], frozenset[str]]]
) -> tuple[frozenset[str], frozenset[str]]:
    """The names a function binds (its parameters and locals) and the names it reads
    without binding them (global, builtin, or a closure's: an enclosing function's), the
    reads of the functions and lambdas defined in it included, less what they bind.
    Approximations: a comprehension's variables and a nested class's names count as the
    function's own, and a name read as an attribute (``obj.lens``) or a keyword is not a
    read. ``memo`` keeps the answers by node, the nested functions' included."""
    found = memo.get(id(fn))
    if found is None:
        found = memo[id(fn)] = _scope_names(fn, memo)
    return found


def _scope_names(
    fn: cst.FunctionDef | cst.Lambda, memo: dict[int, tuple[frozenset[str], frozenset[str]]]
) -> tuple[frozenset[str], frozenset[str]]:
    binds: set[str] = {p.name.value for p in parameters(fn.params)}
    reads: set[str] = set()
    nonlocal_names: set[str] = set()
    # Defaults and annotations are read where fn is made: close enough to inside it.
    stack: list[Any] = [fn.body, *parameters(fn.params)]
    pop, push = stack.pop, stack.append
    while stack:
        node = pop()
        kind = type(node)
        if kind is cst.Name:
            reads.add(node.value)
            continue
        if kind is cst.Attribute:
            push(node.value)
            continue
        if kind is cst.Arg:
            push(node.value)
            continue
        if kind is cst.Param:
            if node.default is not None:
                push(node.default)
            if node.annotation is not None:
                push(node.annotation)
            continue
        if kind is cst.FunctionDef or kind is cst.Lambda:
            if kind is cst.FunctionDef:
                binds.add(node.name.value)
                for d in node.decorators:
                    push(d)
            reads.update(scope_names(node, memo)[1])
            continue
        if kind is cst.Assign:
            for t in node.targets:
                binds.update(_target_names(t.target))
        elif kind is cst.AnnAssign and node.value is not None:
            binds.update(_target_names(node.target))
        elif kind is cst.Nonlocal:
            nonlocal_names.update(item.name.value for item in node.names)
            continue
        elif kind in _BINDS:
            binds.update(_bound_otherwise(node, kind))
        _push_children(node, kind, push)
    binds -= nonlocal_names
    return frozenset(binds), frozenset(reads - binds)


# Expressions that write nothing when evaluated (a property is taken not to).
_PLAIN = frozenset(
    {cst.Name, cst.Attribute, cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString}
)


def writes_nothing(node: cst.BaseExpression) -> bool:
    """Whether evaluating ``node`` writes nothing, so that an operand of ``and``/``or``, an
    arm of a conditional expression or an assert's test that may not run needs no fork of
    the frame: a name, an attribute, a literal, a comparison or negation of those."""
    kind = type(node)
    if kind is cst.Comparison:
        return _plain(node.left) and all(_plain(c.comparator) for c in node.comparisons)
    if kind is cst.UnaryOperation:
        return _plain(node.expression)
    return _plain(node)


# Builtins, and methods of tensors, dicts and strings, that write nothing when called on
# plain operands (`len(x) > 0 and ...`, `x.numel() > 0 and ...`, `cfg.get("k") or d`).
_PURE_BUILTINS = frozenset(
    {"len", "isinstance", "hasattr", "getattr", "callable", "bool", "int", "abs"}
)
_PURE_METHODS = frozenset(
    {"numel", "dim", "size", "item", "is_contiguous", "get", "startswith", "endswith"}
)


def _plain(node: cst.BaseExpression) -> bool:
    kind = type(node)
    if kind is cst.Call:
        func = node.func
        if type(func) is cst.Name:
            pure = func.value in _PURE_BUILTINS
        else:
            pure = (
                type(func) is cst.Attribute
                and func.attr.value in _PURE_METHODS
                and type(func.value) in _PLAIN
            )
        return pure and all(type(a.value) in _PLAIN and not a.star for a in node.args)
    return kind in _PLAIN
