"""Output sanitizers: after a sink call, the rows of its output that a zero length spoils
are masked, or the output is never used.

For an attention kernel that writes NaN (or an LSE of +inf) into exactly the rows whose
length is 0, the right fix is often not to change the lengths (a clamp to 1 reads a KV slot
that may hold anything) but to overwrite those rows of the output with the empty row's
value. A rule says so with the sanitizer key ``output_mask`` and, on each sink, the
``outputs`` the kernel spoils (rules/ZL004.toml). This module decides, from the syntax of
the function that makes the call, whether every declared output is

* **discarded**: bound to ``_`` (``o, _ = f(...)``), or a local name that nothing else in
  the function mentions; or
* **masked**: a later statement of the same block sets the rows picked by a mask of the
  *same lengths expression* the call was given to a constant the output accepts:
  ``out[lens == 0] = 0``, ``out.masked_fill_((lens == 0)[:, None], 0)``,
  ``out = out.masked_fill(lens.eq(0).unsqueeze(-1), 0)``,
  ``out = torch.where((lens > 0)[:, None], out, 0)``, ``out = out.where(lens > 0, 0)``,
  or the same with a mask bound to a name between the call and the mask
  (``empty = lens == 0``; a mask made before the call may be of older lengths).

It is sound in the way the rest of the analysis is, and no further: the mask must follow
the call in the same block (so it runs whenever the call did), and every statement in
between must be a simple statement that neither exits (``return``, ``raise``, ``break``,
``continue``) nor mentions the output or the lengths (a read would see the spoiled rows, a
write to the lengths would change which rows the mask picks). Aliases of the output made
before the call (a view read in between) are not followed: a documented limit.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import libcst as cst

from zerolint.dataflow.syntax import bound_in, compared_with_int, dotted, int_value
from zerolint.dataflow.values import parameters
from zerolint.rules import OutputSpec, SinkSpec

_ZERO = {"==": 0, "<=": 0, "<": 1}  # lens OP k picks the rows whose length is 0
_KEEP = {">": 0, ">=": 1, "!=": 0}  # lens OP k keeps the rows whose length is not 0
_METHOD_OPS = {"eq": "==", "le": "<=", "lt": "<", "gt": ">", "ge": ">=", "ne": "!="}
_VIEWS = frozenset({"unsqueeze", "view", "reshape", "expand", "expand_as", "bool"})
_EXITS = (cst.Return, cst.Raise, cst.Break, cst.Continue)
# Methods whose result shares the tensor's memory: a name bound to one is the tensor.
_ALIASING = frozenset(
    {
        "view",
        "view_as",
        "reshape",
        "reshape_as",
        "flatten",
        "unsqueeze",
        "squeeze",
        "expand",
        "expand_as",
        "narrow",
        "select",
        "t",
        "transpose",
        "permute",
        "movedim",
        "unflatten",
        "detach",
        "as_strided",
    }
)


@dataclass(frozen=True, slots=True)
class Handled:
    """How one output is made safe: the statement that masks it (None: discarded)."""

    output: OutputSpec
    stmt: cst.CSTNode | None
    how: str


def outputs_handled(
    module: cst.Module,
    func: cst.FunctionDef | None,
    stmt: cst.CSTNode,
    call: cst.Call,
    spec: SinkSpec,
    forms: frozenset[str],
) -> list[Handled] | None:
    """How every output of ``spec`` at ``call`` is masked or discarded, or None when one is
    not (or the call is not the sink itself, e.g. a wrapper's call)."""
    name = dotted(call.func)
    if not forms or not spec.outputs or name is None or name.rsplit(".", 1)[-1] != spec.function:
        return None
    lens = _argument(call, spec.position, spec.keyword)
    if lens is None or dotted(lens) is None:
        return None
    body = func.body.body if func is not None else module.body
    rest = _following(body, stmt)
    if rest is None:
        return None
    code = _Code(module)
    out: list[Handled] = []
    for output in spec.outputs:
        picked = _other_elements_only(func, stmt, call, output)
        if picked is not None:  # `res = f(...); return res[0]`: the LSE is never read
            out.append(Handled(output, None, f"{output.text()} is discarded (only `{picked}`)"))
            continue
        target = _output_target(call, stmt, output)
        if target is None:
            return None
        # A name of this function's own: not the caller's object (a parameter, vLLM's
        # `output=` buffer) nor one outside (a global, a closure's), which others read.
        own = func is not None and "." not in target and _local(func, target)
        if (target == "_" and func is None) or (own and _unused(func, target, stmt)):
            out.append(Handled(output, None, f"{output.text()} is discarded (`{target}`)"))
            continue
        aliases = _aliases(func if func is not None else module, {target, dotted(lens) or ""})
        # A copy masked and bound to the name masks the object only where the name is the
        # only way to it (a local, a field, a module's global), not a parameter's object,
        # and no other name of the function holds it or a view of it (`flat = o.view(...)`
        # before the call, read after it; one bound between the call and the mask is a
        # mention `_find_mask` refuses).
        scope = func if func is not None else module
        held, roots = _views_of(scope, target, stmt)
        # A buffer the output is a slice of (`o = self.o_buf[:n]`, a CUDA graph's) counts
        # where this function reads it again; a view another name took, wherever it may be.
        rebinds = (own or "." in target or func is None) and not (
            held
            and _read_after(scope, rest, held)
            or roots
            and _read_after(scope, rest, roots, fields=False)
        )
        found = _find_mask(rest, target, code.of(lens), output.fill, forms, code, aliases, rebinds)
        if found is None:
            return None
        out.append(Handled(output, found, f"the zero rows of `{target}` are masked"))
    return out


class _Code:
    """Expressions compared by their source text, whitespace removed."""

    def __init__(self, module: cst.Module) -> None:
        self.module = module

    def of(self, node: cst.CSTNode) -> str:
        return re.sub(r"\s+", "", self.module.code_for_node(node))


def _argument(
    call: cst.Call, position: int | None, keyword: str | None
) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and keyword is not None and arg.keyword.value == keyword:
            return arg.value
    positional = [a for a in call.args if a.keyword is None and not a.star]
    if position is not None and position < len(positional):
        return positional[position].value
    return None


def _output_target(call: cst.Call, stmt: cst.CSTNode, output: OutputSpec) -> str | None:
    """The name the output is reached by after the call ("_" when it is thrown away)."""
    if output.result is None:
        arg = _argument(call, output.position, output.keyword)
        return dotted(arg) if arg is not None else None
    if type(stmt) is not cst.Assign or stmt.value is not call or len(stmt.targets) != 1:
        return None
    target = stmt.targets[0].target
    if output.result < 0:
        return dotted(target)
    if isinstance(target, (cst.Tuple, cst.List)):
        elements = target.elements
        if output.result < len(elements) and not any(
            type(e) is cst.StarredElement for e in elements
        ):
            return dotted(elements[output.result].value)
    return None


def _following(body: Sequence[cst.BaseStatement], stmt: cst.CSTNode) -> list[cst.CSTNode] | None:
    """The statements after ``stmt`` in its own block, in order (small statements of a
    line each on their own), or None when ``stmt`` is not found."""
    for i, s in enumerate(body):
        if type(s) is cst.SimpleStatementLine:
            for j, small in enumerate(s.body):
                if small is stmt:
                    return [*s.body[j + 1 :], *_flatten(body[i + 1 :])]
            continue
        for block in _blocks(s):
            found = _following(block, stmt)
            if found is not None:
                return found
    return None


def _flatten(body: Sequence[cst.BaseStatement]) -> list[cst.CSTNode]:
    out: list[cst.CSTNode] = []
    for s in body:
        out.extend(s.body if type(s) is cst.SimpleStatementLine else [s])
    return out


def _blocks(stmt: cst.CSTNode) -> Iterator[Sequence[cst.BaseStatement]]:
    """The statement lists nested in a compound statement (not in nested functions)."""
    if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
        return
    for child in stmt.children:
        if type(child) is cst.IndentedBlock:
            yield child.body
        elif isinstance(child, (cst.If, cst.Else, cst.ExceptHandler, cst.Finally)):
            yield from _blocks(child)
        elif isinstance(child, cst.BaseSuite) and type(child) is not cst.IndentedBlock:
            continue  # a one-line suite holds small statements only
        elif isinstance(child, (cst.ExceptStarHandler, cst.MatchCase)):
            yield from _blocks(child)


def _mentions(node: cst.CSTNode, names: set[str]) -> bool:
    """Whether ``node`` reads or writes one of ``names`` (a dotted name or a prefix of it)."""
    for sub in _walk(node):
        if isinstance(sub, (cst.Name, cst.Attribute)):
            text = dotted(sub)
            if text is not None and any(text == n or n.startswith(text + ".") for n in names):
                return True
    return False


def _walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(n.children)


def _other_elements_only(
    func: cst.FunctionDef | None, stmt: cst.CSTNode, call: cst.Call, output: OutputSpec
) -> str | None:
    """Where only other elements of the call's result are read (never element
    ``output.result``): ``f(...)[0]``, or ``res = f(...)`` with every other mention of
    ``res`` in the function an element by a literal index (``res[0]``), shown as such;
    else None."""
    if output.result is None or output.result < 0:
        return None

    def element(node: cst.CSTNode) -> int | None:
        if type(node) is not cst.Subscript or len(node.slice) != 1:
            return None
        index = node.slice[0].slice
        return int_value(index.value) if type(index) is cst.Index else None

    for n in _walk(stmt):
        if type(n) is cst.Subscript and n.value is call:
            k = element(n)
            return f"[{k}]" if k is not None and k >= 0 and k != output.result else None
    if (
        func is None
        or type(stmt) is not cst.Assign
        or stmt.value is not call
        or len(stmt.targets) != 1
        or type(stmt.targets[0].target) is not cst.Name
    ):
        return None
    name = stmt.targets[0].target.value
    own = {id(n) for n in _walk(stmt)}
    read: list[cst.Name] = []  # the name's mentions but its binding's
    picked: dict[int, int | None] = {}  # a mention's element index, where it is `name[k]`
    for n in _walk(func.body):
        if type(n) is cst.Name and n.value == name and id(n) not in own:
            read.append(n)
        elif type(n) is cst.Subscript and type(n.value) is cst.Name and n.value.value == name:
            picked[id(n.value)] = element(n)
    if not read or any(
        picked.get(id(m)) is None or picked[id(m)] < 0 or picked[id(m)] == output.result
        for m in read
    ):
        return None
    return f"{name}[{picked[id(read[0])]}]"


def _viewed(node: cst.BaseExpression, *, unnamed_fields: bool) -> str | None:
    """The dotted name ``node`` is a view of (``o.view(n, -1)[:k]``: ``o``); with
    ``unnamed_fields``, also through a field of what has no name (``make(o).x``)."""
    while True:
        if (
            type(node) is cst.Call
            and type(node.func) is cst.Attribute
            and node.func.attr.value in _ALIASING
        ):
            node = node.func.value
        elif type(node) is cst.Subscript or (
            unnamed_fields and type(node) is cst.Attribute and dotted(node) is None
        ):
            node = node.value
        else:
            return dotted(node)


def _aliases(scope: cst.CSTNode, roots: set[str]) -> frozenset[str]:
    """The names ``scope`` binds to a view of one of ``roots`` or of such a name
    (``alias = seq_lens.view(-1)``, ``head = o[:n]``): a write through one between the
    call and the mask changes the output or the rows the mask picks."""

    bound = [
        (s.targets[0].target.value, s.value)
        for s in _walk(scope)
        if type(s) is cst.Assign and len(s.targets) == 1 and type(s.targets[0].target) is cst.Name
    ]
    found: set[str] = set()
    known = set(roots)
    changed = True
    while changed:  # a view of a view
        changed = False
        for name, value in bound:
            root = _viewed(value, unnamed_fields=True)
            if (
                name not in known
                and root is not None
                and any(root == r or root.startswith(r + ".") for r in known)
            ):
                found.add(name)
                known.add(name)
                changed = True
    return frozenset(found)


def _views_of(
    scope: cst.CSTNode, target: str, before: cst.CSTNode
) -> tuple[frozenset[str], frozenset[str]]:
    """The names ``scope`` binds, in the statements before ``before`` (not in a function
    or class written in it), to ``target``'s tensor or a view of it (``res = o``, ``flat:
    Tensor = o.view(n, -1)``, ``head, n = o[:n], n``, and views of those); not to what is
    read from it (``o.shape[0]``); and, apart, the tensors ``target`` is itself a view of
    (``o = out.view(...)``)."""

    bound: list[tuple[str, cst.BaseExpression]] = []
    named: list[tuple[str, cst.BaseExpression]] = []  # what names (not fields) are bound to

    def pair(t: cst.BaseExpression, value: cst.BaseExpression) -> None:
        kind = type(t)
        if kind is cst.Name:
            bound.append((t.value, value))
            named.append((t.value, value))
            for element in _elements(value):  # `views = [o.view(...)]`: the list holds it
                bound.append((t.value, element))
        elif kind is cst.Attribute or kind is cst.Subscript:
            # `self.flat = o.view(...)`, `views["o"] = o`: the field, the container, holds it.
            holder = dotted(t) if kind is cst.Attribute else dotted(t.value)  # type: ignore[attr-defined]
            if holder is not None:
                bound.append((holder, value))
        elif type(t) in (cst.Tuple, cst.List) and type(value) in (cst.Tuple, cst.List):
            ts, vs = t.elements, value.elements  # type: ignore[attr-defined]
            if len(ts) == len(vs):
                for te, ve in zip(ts, vs):
                    pair(te.value, ve.value)

    def visit(node: cst.CSTNode) -> bool:  # False once `before` is met
        if node is before:
            return False
        if node is not scope and type(node) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            return True
        if type(node) is cst.Assign:
            for t in node.targets:
                pair(t.target, node.value)
        elif type(node) in (cst.AnnAssign, cst.NamedExpr) and node.value is not None:
            pair(node.target, node.value)  # `flat: T = o.view(...)`, `(flat := o.view(...))`
        elif type(node) is cst.Call and type(node.func) is cst.Attribute:
            holder = dotted(node.func.value)  # `cache.append(o)`: the list holds it
            if node.func.attr.value in _STORING and holder is not None:
                bound.extend((holder, a.value) for a in node.args)
        return all(visit(child) for child in node.children)

    visit(scope)
    known, found, roots = {target}, set(), set()
    # The target bound to another tensor or a view of it (`o = out.view(...)`): that
    # tensor is the same storage, under another name.
    for name, value in named:
        root = _viewed(value, unnamed_fields=False) if name == target else None
        if root is not None and root != target:
            roots.add(root)
            known.add(root)
    changed = True
    while changed:  # a view of a view
        changed = False
        for name, value in bound:
            if name not in known and _viewed(value, unnamed_fields=False) in known:
                found.add(name)
                known.add(name)
                changed = True
    return frozenset(found), frozenset(roots)


# Methods that keep what they are given in their receiver (a list, a dict, a set).
_STORING = frozenset({"append", "appendleft", "extend", "insert", "add", "setdefault", "update"})


def _elements(value: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The values a list, tuple, set or dict written out holds."""
    if type(value) in (cst.List, cst.Tuple, cst.Set, cst.Dict):
        return [e.value for e in value.elements]  # type: ignore[attr-defined]
    return []


def _read_after(
    scope: cst.CSTNode, rest: list[cst.CSTNode], held: frozenset[str], *, fields: bool = True
) -> bool:
    """Whether one of ``held`` (names holding the output or its storage) may be read after
    the call: a field that took a view of it (any method may read it: ``fields``), or a
    name that a statement after the call, or a function written in ``scope``, mentions."""
    if fields and any("." in name for name in held):
        return True
    nested = [
        n for n in _walk(scope) if n is not scope and type(n) in (cst.FunctionDef, cst.Lambda)
    ]
    for node in (n for part in (*rest, *nested) for n in _walk(part)):
        kind = type(node)
        if (kind is cst.Name or kind is cst.Attribute) and dotted(node) in held:
            return True
    return False


def _local(func: cst.FunctionDef, name: str) -> bool:
    """Whether ``name`` is a local of ``func``: bound in it, and neither one of its
    parameters nor declared ``global`` or ``nonlocal``."""
    if any(p.name.value == name for p in parameters(func.params)) or not bound_in(func, name):
        return False
    return not any(
        type(n) in (cst.Global, cst.Nonlocal) and any(a.name.value == name for a in n.names)
        for n in _walk(func.body)
    )


def _unused(func: cst.FunctionDef, name: str, stmt: cst.CSTNode) -> bool:
    """A local name bound at ``stmt`` that nothing else in the function mentions."""
    own = {id(n) for n in _walk(stmt) if type(n) is cst.Name and n.value == name}
    for n in _walk(func.body):
        if type(n) is cst.Name and n.value == name and id(n) not in own:
            return False
    return True


def _find_mask(
    rest: list[cst.CSTNode],
    target: str,
    lens: str,
    fill: str,
    forms: frozenset[str],
    code: _Code,
    aliases: frozenset[str] = frozenset(),
    rebinds: bool = True,
) -> cst.CSTNode | None:
    # Both dotted names (a mention of a prefix counts too), and the names of their views.
    roots = {target, lens} | aliases
    masks = _Masks(lens, code)
    for s in rest:
        if _masks_output(s, target, fill, forms, masks, code, rebinds):
            return s
        if not isinstance(s, cst.BaseSmallStatement) or isinstance(s, _EXITS):
            return None
        bound = _mask_binding(s, masks)
        if (
            bound is not None and bound[0] not in roots and not _mentions(cst.Name(bound[0]), roots)
        ):  # `empty = lens == 0`, after the call: a mask of these rows
            masks.names[bound[0]] = bound[1]
            continue
        for name in [n for n in masks.names if _mentions(s, {n})]:
            del masks.names[name]  # rebound or changed in place: no longer known
        if _mentions(s, roots):
            return None
    return None


def _mask_binding(s: cst.CSTNode, masks: _Masks) -> tuple[str, cst.BaseExpression] | None:
    if (
        type(s) is cst.Assign
        and len(s.targets) == 1
        and type(s.targets[0].target) is cst.Name
        and masks.picks(s.value) is not None
    ):
        return s.targets[0].target.value, s.value
    return None


def _masks_output(
    s: cst.CSTNode,
    target: str,
    fill: str,
    forms: frozenset[str],
    masks: _Masks,
    code: _Code,
    rebinds: bool = True,
) -> bool:
    # out[mask] = c
    if type(s) is cst.Assign and len(s.targets) == 1:
        t = s.targets[0].target
        if (
            "[]=" in forms
            and type(t) is cst.Subscript
            and dotted(t.value) == target
            and len(t.slice) == 1
            and type(t.slice[0].slice) is cst.Index
            and masks.picks(t.slice[0].slice.value) == "zero"
            and _fills(s.value, fill)
        ):
            return True
        if dotted(t) == target:  # `out = out.masked_fill(...)`: only `masked_fill_` in place
            kept = forms if rebinds else forms & {"masked_fill_"}
            return _masked_value(s.value, target, fill, kept, masks)
    # out.masked_fill_(mask, c)
    if type(s) is cst.Expr and type(s.value) is cst.Call:
        call = s.value
        if (
            "masked_fill_" in forms
            and type(call.func) is cst.Attribute
            and call.func.attr.value == "masked_fill_"
            and dotted(call.func.value) == target
        ):
            return _mask_and_fill(call, masks, fill, "zero")
    return False


def _masked_value(
    value: cst.BaseExpression, target: str, fill: str, forms: frozenset[str], masks: _Masks
) -> bool:
    if type(value) is not cst.Call:
        return False
    func = value.func
    if type(func) is cst.Attribute and dotted(func.value) == target:
        method = func.attr.value
        if method in ("masked_fill", "masked_fill_") and method in forms:
            return _mask_and_fill(value, masks, fill, "zero")
        if method == "where" and "where" in forms:  # out.where(keep, c)
            return _mask_and_fill(value, masks, fill, "keep")
        return False
    if dotted(func) == "torch.where" and "torch.where" in forms and len(value.args) == 3:
        cond, a, b = (arg.value for arg in value.args)
        picked = masks.picks(cond)
        if picked == "keep":  # torch.where(keep, out, c)
            return dotted(a) == target and _fills(b, fill)
        if picked == "zero":  # torch.where(zero, c, out)
            return dotted(b) == target and _fills(a, fill)
    return False


def _mask_and_fill(call: cst.Call, masks: _Masks, fill: str, want: str) -> bool:
    args = [a.value for a in call.args]
    return len(args) == 2 and masks.picks(args[0]) == want and _fills(args[1], fill)


class _Masks:
    """Which rows a boolean expression over the lengths picks: "zero" (the rows whose
    length is 0), "keep" (the others), or None (anything else). ``names`` are masks bound
    to a name after the call (the lengths cannot have changed since)."""

    def __init__(self, lens: str, code: _Code) -> None:
        self.lens, self.code = lens, code
        self.names: dict[str, cst.BaseExpression] = {}

    def picks(self, node: cst.BaseExpression, depth: int = 0) -> str | None:
        if depth > 8:
            return None
        node = self._unview(node)
        if type(node) is cst.UnaryOperation and type(node.operator) is cst.BitInvert:
            return _flip(self.picks(node.expression, depth + 1))
        if type(node) is cst.Comparison and len(node.comparisons) == 1:
            for side, op, k in compared_with_int(node):
                if self._is_lens(side):
                    return _classify(op, k)
            return None
        if type(node) is cst.Call:
            func = node.func
            args = [a.value for a in node.args]
            if dotted(func) in ("torch.logical_not",) and len(args) == 1:
                return _flip(self.picks(args[0], depth + 1))
            if type(func) is cst.Attribute:
                method = func.attr.value
                if method == "logical_not" and not args:
                    return _flip(self.picks(func.value, depth + 1))
                op = _METHOD_OPS.get(method)
                if op is not None and len(args) == 1 and self._is_lens(func.value):
                    k = int_value(args[0])
                    return _classify(op, k) if k is not None else None
            return None
        if type(node) is cst.Name and node.value in self.names:
            return self.picks(self.names[node.value], depth + 1)
        return None

    def _is_lens(self, node: cst.BaseExpression) -> bool:
        return self.code.of(node) == self.lens

    def _unview(self, node: cst.BaseExpression) -> cst.BaseExpression:
        """``m[:, None]``, ``m[..., None]``, ``m.unsqueeze(-1)``, ``m.view(-1, 1)``: ``m``,
        where the views keep the batch on the first axis, followed from ``m`` (a mask of the
        lengths, one axis) out. One that moves it (``m.view(1, -1, 1)``, ``m[None, :,
        None]``, ``m.unsqueeze(0)``, ``m.expand(1, -1)``) masks other elements of the output:
        the node is then no view of a mask of the batch's rows, and is given back as it is."""
        views: list[cst.BaseExpression] = []
        base = node
        while True:
            if type(base) is cst.Subscript:
                views.append(base)
                base = base.value
            elif (
                type(base) is cst.Call
                and type(base.func) is cst.Attribute
                and base.func.attr.value in _VIEWS
            ):
                views.append(base)
                base = base.func.value
            else:
                break
        rank: int | None = 1
        axis = 0
        for view in reversed(views):
            moved = _view_axes(view, rank, axis)
            if moved is None:
                return node
            rank, axis = moved
        return base if axis == 0 else node


def _view_axes(
    view: cst.BaseExpression, rank: int | None, axis: int
) -> tuple[int | None, int] | None:
    """The rank of ``view``'s result and the axis the batch is on in it, given those of
    what it views (a rank of None: not known); None where it does not keep every element
    or the batch's place is not known."""
    if type(view) is cst.Subscript:
        return _subscript_axes(view, rank, axis)
    call: cst.Call = view  # type: ignore[assignment]
    method = call.func.attr.value  # type: ignore[attr-defined]
    if method == "bool":
        return rank, axis
    positional = [a for a in call.args if a.keyword is None]
    sizes = [a.value for a in positional]
    if len(positional) == 1 and type(sizes[0]) in (cst.Tuple, cst.List) and method != "unsqueeze":
        sizes = [e.value for e in sizes[0].elements]  # type: ignore[attr-defined]
    starred = any(a.star for a in positional) or any(type(s) is cst.StarredElement for s in sizes)
    if method == "unsqueeze":
        given = sizes[0] if sizes else next((a.value for a in call.args if a.keyword), None)
        dim = int_value(given)
        if dim is None or rank is None:
            return None
        if dim < 0:
            dim += rank + 1
        if not 0 <= dim <= rank:
            return None
        return rank + 1, axis + 1 if dim <= axis else axis
    if method == "expand_as":  # broadcast against the output: its axes line up from the last
        return (rank, axis) if rank is not None and rank >= 2 and axis == 0 else None
    if not sizes:
        return None
    if method == "expand":
        if starred or rank is None or len(sizes) < rank:
            return None
        return len(sizes), axis + len(sizes) - rank
    # view / reshape: the batch stays first where the first size is -1, or no literal
    # (the batch's size), unless it is a name and another size is -1: `.view(one, -1, 1)`
    # may put it second.
    first = int_value(sizes[0]) if type(sizes[0]) is not cst.StarredElement else 1
    if first is not None and first != -1:
        return None
    if type(sizes[0]) is cst.Name and any(int_value(s) == -1 for s in sizes[1:]):
        return None  # not `x.shape[0]` or `len(x)`, the batch's size as it is written
    return (None if starred else len(sizes)), 0


def _subscript_axes(
    node: cst.Subscript, rank: int | None, axis: int
) -> tuple[int | None, int] | None:
    """``m[:, None]``, ``m[..., None]``, ``m[None, :]``: a subscript that keeps every
    element (full slices, ``...`` and ``None`` only), with the batch's new axis."""
    items = [e.slice for e in node.slice]
    consuming = sum(1 for s in items if type(s) is cst.Slice)
    out = 0  # the output's axes so far
    seen = 0  # the input's axes consumed so far
    found: int | None = None
    for s in items:
        if type(s) is cst.Slice:
            if s.lower is not None or s.upper is not None or s.step is not None:
                return None
            if seen == axis:
                found = out
            seen += 1
            out += 1
        elif type(s) is cst.Index and type(s.value) is cst.Ellipsis:
            if rank is None:
                return None
            spans = rank - consuming
            if spans < 0:
                return None
            if seen <= axis < seen + spans:
                found = out + axis - seen
            seen += spans
            out += spans
        elif type(s) is cst.Index and type(s.value) is cst.Name and s.value.value == "None":
            out += 1
        else:
            return None
    if rank is not None:
        if seen > rank:
            return None
        if found is None and axis >= seen:  # trailing axes not written out
            found = out + axis - seen
        out += rank - seen
    elif found is None:
        return None
    return (out if rank is not None else None), found


def _classify(op: str, k: int | None) -> str | None:
    if k is None:
        return None
    if _ZERO.get(op) == k:
        return "zero"
    if _KEEP.get(op) == k:
        return "keep"
    return None


def _flip(picked: str | None) -> str | None:
    return {"zero": "keep", "keep": "zero"}.get(picked or "")


def _fills(node: cst.BaseExpression, fill: str) -> bool:
    """Whether ``node`` is a constant that a masked row of this output may hold."""
    value = _constant(node)
    if value is None:
        return False
    if fill == "-inf":
        return value == -math.inf
    return math.isfinite(value)


def _constant(node: cst.BaseExpression) -> float | None:
    if isinstance(node, (cst.Integer, cst.Float)):
        try:
            return float(node.value.replace("_", ""))
        except ValueError:
            return None
    if type(node) is cst.UnaryOperation and type(node.operator) is cst.Minus:
        inner = _constant(node.expression)
        return -inner if inner is not None else None
    if type(node) is cst.Call and dotted(node.func) == "float" and len(node.args) == 1:
        arg = node.args[0].value
        if type(arg) is cst.SimpleString:
            text = arg.evaluated_value
            if isinstance(text, str) and text.strip().lower() in ("inf", "-inf", "+inf"):
                return float(text)
        return None
    if dotted(node) in ("math.inf", "torch.inf", "numpy.inf", "np.inf"):
        return math.inf
    return None
