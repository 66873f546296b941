"""Library semantics: torch / numpy calls and tensor methods as effects on lengths.

A clamp becomes a sanitizer step here (``clamp``), a zero fill a source (``zero_source``),
a mask over the lengths a row replacement (``replace_rows``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeGuard

import libcst as cst

from zerolint.dataflow.frames import (
    Frame,
    FuncKey,
)
from zerolint.dataflow.library import (
    ARITH_METHODS,
)
from zerolint.dataflow.signatures import (
    DIM_REDUCTIONS,
    FLOORING_TRUNCATIONS,
    SHAPE_CHANGING,
    SHIFT_METHOD_ENDINGS,
    SHIFT_SUFFIXES,
    TRUE_DIVISION_METHODS,
    TRUE_DIVISIONS,
    Bound,
    LibEffect,
    Signature,
    bind,
    in_place,
)
from zerolint.dataflow.syntax import (
    assigned_values,
    base_key,
    bound_in,
    dict_key,
    dotted,
    fields_assigned,
    int_value,
    is_none,
    is_zero,
    mask_rows,
    own_assigned_values,
    peel_views,
    plain_values,
    read_names,
    replacement_op,
    scope_names,
    statements,
    string_value,
    written_as_zero,
)
from zerolint.dataflow.values import (
    EMPTY,
    ClassRef,
    Effect,
    ExtRef,
    FieldOrigin,
    FuncRef,
    GlobalOrigin,
    InstRef,
    LazyRef,
    ParamOrigin,
    PendingRef,
    Ref,
    SinkRef,
    Trace,
    Val,
    in_order,
    join_all,
    keyed,
    reshaped,
    without_row_counts,
)
from zerolint.model import ANY_ROWS, IDENTITY, ROWS_ADDED, Op, OpKind
from zerolint.project import ClassInfo, ModuleInfo, resolve_relative

Args = list[tuple[cst.Arg, Val]]
Target = cst.BaseExpression | None
# A prefix sum, and the difference of neighbouring ones: the values are unchanged under the
# row model (see scan), but the marks pair a cumsum with the differences that undo it.
_SCAN = Op(OpKind.IDENTITY, "cumsum")
_UNSCAN = Op(OpKind.IDENTITY, "diff")


# Tensors built from a Python list: a list of literals gives known rows.
_LITERAL_TENSORS = frozenset(
    {
        "torch.tensor",
        "torch.as_tensor",
        "torch.asarray",
        "torch.IntTensor",
        "torch.LongTensor",
        "torch.Tensor",
        "numpy.array",
        "numpy.asarray",
    }
)


def _pointer_base(node: cst.BaseExpression) -> cst.Name | None:
    """The pointer in ``ptr + offs`` (``ptr + pid * stride + offs``, ``offs + ptr``): the one
    name on an addition chain that is not an offset, taken as the leftmost name."""
    while type(node) is cst.BinaryOperation and type(node.operator) is cst.Add:
        node = node.left
    return node if type(node) is cst.Name else None


def _only_zero_fill(trace: Trace) -> bool:
    """A tensor that is all zero: a zero allocation, nothing since."""
    return trace.concrete and len(trace.steps) == 1 and trace.steps[0].op.kind == OpKind.FILL_ZERO


def _read_once(frame: Frame, name: str) -> bool:
    """Whether ``name`` is written once and read once in the function the frame runs (or
    the module): nothing the model does not follow (``one.scatter_(...)``, a call given
    it, ``out=one``) can have changed the rows it was filled with."""
    scope = frame.key.node if frame.key.node is not None else frame.mod.module
    field = f"{name}."
    return sum(n == name or n.startswith(field) for n in read_names(scope)) == 2


def _every_row(val: Val) -> int | None:
    """The value every row of ``val`` holds, where each of its traces is a tensor filled
    with that one known value (``torch.ones_like(x)``, ``torch.full(n, 2)``, ``torch.tensor(
    [1, 1])``), carried unchanged (copies, moves); else None."""
    values: set[str] = set()
    for t in val.traces:
        if t.origin is not None or not t.steps or t.steps[0].op.kind is not OpKind.KNOWN_ROWS:
            return None
        if any(s.op != IDENTITY for s in t.steps[1:]):
            return None
        values.update(str(t.steps[0].op.arg).strip("[]").split(","))
    if len(values) != 1:
        return None
    try:
        return int(values.pop())
    except ValueError:
        return None


def _scanned(trace: Trace) -> bool:
    """The trace's last scan mark is a prefix sum (not yet differenced)."""
    for step in reversed(trace.steps):
        if step.op == _SCAN:
            return True
        if step.op == _UNSCAN:
            return False
    return False


# Calls that keep a tensor's rows as they are (copies, casts, moves); any other view,
# join, broadcast or pad may change how many rows it has (values.reshaped).
_ROW_KEEPING_FUNCTIONS = _LITERAL_TENSORS | {
    "torch.clone",
    "torch.detach",
    "torch.from_numpy",
    "torch.atleast_1d",
    "list",
    "tuple",
    "copy.copy",
    "copy.deepcopy",
}
_ROW_KEEPING_METHODS = frozenset(
    {
        "to",
        "int",
        "long",
        "short",
        "float",
        "double",
        "half",
        "bfloat16",
        "type",
        "type_as",
        "contiguous",
        "contiguous_",
        "clone",
        "detach",
        "cuda",
        "cpu",
        "pin_memory",
        "copy",
        "astype",
        "numpy",
        "tolist",
    }
)
_RESHAPING = frozenset({LibEffect.VIEW, LibEffect.CONCAT, LibEffect.MASK, LibEffect.PAD})


def _counted(trace: Trace) -> bool:
    """Whether ``trace`` starts at a row count (a selection)."""
    return bool(trace.steps) and trace.steps[0].op.kind is OpKind.ROWS


def rounding(mode_text: str | None) -> tuple[OpKind, ...]:
    """The divisions a ``rounding_mode`` makes: toward 0 for ``"trunc"``, a floor for
    ``"floor"`` (or none, for a function that floors), either for a mode known only at
    run time (``"<any>"``), which the judge then answers for both."""
    if mode_text == "trunc":
        return (OpKind.TRUNCDIV,)
    if mode_text == "<any>":
        return (OpKind.FLOORDIV, OpKind.TRUNCDIV)
    return (OpKind.FLOORDIV,)


class TorchModel:
    """Part of ``Analyzer`` (see analyzer.py); methods call each other through ``self``."""

    # ------------------------------------------------------------------ library semantics

    def kwarg(self, args: list[tuple[cst.Arg, Val]], name: str) -> tuple[cst.Arg, Val] | None:
        for a, v in args:
            if a.keyword is not None and a.keyword.value == name:
                return a, v
        return None

    def positional(self, args: list[tuple[cst.Arg, Val]]) -> list[tuple[cst.Arg, Val]]:
        """Positional arguments, with torch's operand keywords (``input=``, ``other=``)
        put back in their places."""
        out = [(a, v) for a, v in args if a.keyword is None and not a.star]
        for index, name in enumerate(("input", "other")):
            found = self.kwarg(args, name)
            if found is not None and len(out) >= index:
                out.insert(index, found)
        return out

    def clamp(
        self,
        frame: Frame,
        val: Val,
        low: cst.BaseExpression | int | None,
        high: cst.BaseExpression | int | None,
        note: str,
        effect: Effect,
    ) -> Val:
        """``val`` bounded below by ``low`` and above by ``high`` (an expression, or a value
        already known: ``bound``)."""
        out = val
        low = None if is_none(low) else low
        high = None if is_none(high) else high
        if low is not None:
            least = low if isinstance(low, int) else self.operand(frame, low)
            step_op = Op(OpKind.CLAMP_MIN, least)
            out = self.extend_role(frame, out, step_op, "sanitizer", note, effect)
        if high is not None:
            most = high if isinstance(high, int) else self.operand(frame, high)
            out = self.extend(frame, out, Op(OpKind.CLAMP_MAX, most))
        return out

    def bound(
        self, frame: Frame, given: tuple[cst.Arg, Val] | None
    ) -> cst.BaseExpression | int | None:
        """A clamp's bound as given: a tensor whose every row holds one known value (``one =
        torch.ones_like(x)``, passed by name) is that value; otherwise the expression."""
        if given is None:
            return None
        arg, val = given
        every = _every_row(val)
        if (
            every is not None
            and not self.python_int(frame, arg.value)
            and (type(arg.value) is not cst.Name or _read_once(frame, arg.value.value))
        ):
            return every
        return arg.value

    def extend_role(
        self, frame: Frame, val: Val, op: Op, role: str, note: str, effect: Effect
    ) -> Val:
        if not val.traces:
            return Val((), val.refs)
        step = self.step(frame, None, role, op, note, effect)
        return Val(t.then(step) for t in val.traces)

    def external(
        self, frame: Frame, node: cst.Call, name: str, args: list[tuple[cst.Arg, Val]]
    ) -> Val | None:
        """A call outside the checked tree: its row of the signature table (``signatures``)
        decides the effect; a call in no row returns None (the unknown-call rule)."""
        name = name.removeprefix("builtins.")  # builtins.max is max, for rules too
        if name in _SHUFFLES and args and args[0][1].elements is not None:
            # random.shuffle(parts): no element is at a known place after it, as after sort().
            self.reorder(frame, args[0][0].value, args[0][1], "sort", [])
        if name in self.names.get("empty_rows", ()):
            return self.empty_rows_call(frame, node, name, args, method=False)
        if name in _SET_ITEM and self.set_item(frame, args):  # operator.setitem(xs, i, v)
            return EMPTY
        sig = self.library.function(name)
        if sig is None:
            return None
        handler = getattr(self, f"call_{sig.effect.value}")
        out = handler(frame, node, name, sig, args)
        given = self.kwarg(args, "out")
        if out is not None and given is not None and type(given[0].value) in (cst.Tuple, cst.List):
            # `torch.max(x, 1, out=(values, indices))`: each tensor is written.
            step = self.step(frame, None, "flow", IDENTITY, "out=")
            for element in given[0].value.elements:
                if base_key(element.value) is not None:
                    self.write_whole(frame, element.value, out.then(step))
        if (
            out is not None
            and out.traces
            and "." in name
            and narrowing(name, args, self.dtype_texts(frame))
        ):
            out = self.extend(frame, out, Op(OpKind.OPAQUE, f"{name}(dtype=...): may wrap"))
        if out is not None and sig.effect in _RESHAPING and name not in _ROW_KEEPING_FUNCTIONS:
            return reshaped(out)
        return out

    def empty_rows_call(
        self, frame: Frame, node: cst.Call, name: str, args: Args, *, method: bool
    ) -> Val | None:
        """``torch.empty((0, ...))`` has no rows; ``index_select(0, idx)`` as many as
        ``idx`` (any number): a fresh trace whose row count the judge knows."""
        positional = [a for a, _ in args if a.keyword is None and not a.star]
        count: int | str | None = None
        if name.rsplit(".", 1)[-1] == "index_select":
            dims = positional[:1] if method else positional[1:2]
            if dims and int_value(dims[0].value) == 0:
                count = "<any>"
        elif positional:
            shape = positional[0].value
            first = (
                shape.elements[0].value
                if isinstance(shape, (cst.Tuple, cst.List)) and shape.elements
                else shape
            )
            if int_value(first) == 0:
                count = 0
        if count is None:
            return None
        note = f"{name} (can have no rows)"
        effect = ("empty_rows_methods" if method else "empty_rows", name)
        step = self.step(frame, None, "source", Op(OpKind.ROWS, count), note, effect)
        return Val([Trace(None, (step,))])

    def call_at_least_one(
        self, frame: Frame, node: cst.Call, name: str, sig: Signature, args: Args
    ) -> Val | None:
        val = join_all(v for _, v in args)
        return self.extend_role(
            frame, val, Op(OpKind.CLAMP_MIN, 1), "sanitizer", name, ("at_least_one", name)
        )

    def call_clamp(
        self, frame: Frame, node: cst.Call, name: str, sig: Signature, args: Args
    ) -> Val | None:
        clamped = self.external_clamp(frame, name, sig, args)
        self.out_target(frame, node, args, clamped)
        if name.endswith("_"):
            # torch.clamp_(x, min=1), torch.clamp_min_(x, 1): x itself is clamped.
            given = bind(args, ("input",)).get("input")
            if given is not None:
                self.write_whole(frame, given[0].value, clamped)
        return clamped

    def call_ceil_division(
        self, frame: Frame, node: cst.Call, name: str, sig: Signature, args: Args
    ) -> Val | None:
        b = sig.bind(args)
        value = b.get("input")
        if (
            name == "math.ceil"
            and value is not None
            and type(value[0].value) is cst.BinaryOperation
        ):
            div = value[0].value
            inner = self.eval(frame, div.left)
            return self.extend(
                frame, inner, Op(OpKind.CEILDIV, self.operand(frame, div.right)), "ceil division"
            )
        if value is not None and "other" in b:
            divisor = self.operand(frame, b["other"][0].value)
            return self.extend(frame, value[1], Op(OpKind.CEILDIV, divisor), "ceil division")
        return EMPTY

    def call_truncation(
        self, frame: Frame, node: cst.Call, name: str, sig: Signature, args: Args
    ) -> Val | None:
        """``math.floor(a / b)``: a floor division; ``int(a / b)``: a division rounded
        toward 0; of anything else, the value."""
        value = sig.bind(args).get("input")
        if value is None:
            return None
        inner = value[0].value
        if _true_division(inner):
            return self.truncated_division(frame, inner, ("floor_division", name))
        return value[1]

    def truncated_division(self, frame: Frame, div: cst.BinaryOperation, effect: Effect) -> Val:
        """``a / b`` made an integer: rounded down by a floor (``math.floor``, ``.floor()``),
        toward 0 by the others (``int``, ``.long()``, ``.to(torch.int32)``, ``trunc``). The
        two agree on lengths (>= 0), not on ``-(a / b)``."""
        floor = effect[1].rsplit(".", 1)[-1] in FLOORING_TRUNCATIONS
        return self.source(
            frame,
            self.eval(frame, div.left),
            Op(OpKind.FLOORDIV if floor else OpKind.TRUNCDIV, self.operand(frame, div.right)),
            div.left,
            note="floor division" if floor else "division rounded toward 0",
            effect=effect,
        )

    def call_floor_division(
        self, frame: Frame, node: cst.Call, name: str, sig: Signature, args: Args
    ) -> Val | None:
        return self.external_division(frame, node, name, sig, args)

    def call_zero_fill(
        self, frame: Frame, node: cst.Call, name: str, sig: Signature, args: Args
    ) -> Val | None:
        if in_place(name):  # torch.zero_(x): x itself
            given = sig.bind(args).get("input")
            target = given[0].value if given is not None else None
            return self.fill_in_place_with_zero(frame, name, target, "zero_fill")
        zeros = self.zero_source(frame, "zero-filled tensor", ("zero_alloc", name))
        self.out_target(frame, node, args, zeros)  # torch.zeros(n, out=lens) writes lens
        return zeros

    def call_fill(
        self, frame: Frame, node: cst.Call, name: str, sig: Signature, args: Args
    ) -> Val | None:
        chosen = sig.bind(args).get("fill_value")
        fill = self.operand(frame, chosen[0].value) if chosen is not None else None
        # torch.full((n,), 0.5, dtype=torch.int32) holds 0; without an integer dtype, 0.5.
        integer = any(
            a.keyword is not None and a.keyword.value == "dtype" and _integer_dtype(a)
            for a, _ in args
        )
        fill_zero = written_as_zero if integer else is_zero
        if chosen is not None and fill_zero(chosen[0].value):
            filled = self.zero_source(frame, "tensor filled with 0", ("full", name))
        elif isinstance(fill, int):
            filled = self.known_rows(frame, str(fill), f"every row {fill}")
        else:  # every row is the fill value: its lengths are the rows'
            filled = chosen[1].only_traces() if chosen is not None else EMPTY
        self.out_target(frame, node, args, filled)  # torch.full(n, 0, out=lens)
        return filled

    def call_constant(
        self, frame: Frame, node: cst.Call, name: str, sig: Signature, args: Args
    ) -> Val | None:
        if name in ("torch.ones", "torch.ones_like", "numpy.ones", "numpy.ones_like"):
            return self.known_rows(frame, "1", "every row 1")
        return EMPTY

    def known_rows(self, frame: Frame, values: str, note: str) -> Val:
        """A tensor whose rows are known (``"[4,8]"``: one per row; ``"8"``: every row):
        the judge takes these values instead of real lengths >= 1."""
        step = self.step(frame, None, "flow", Op(OpKind.KNOWN_ROWS, values), note)
        return Val([Trace(None, (step,))])

    def call_concat(
        self, frame: Frame, node: cst.Call, name: str, sig: Signature, args: Args
    ) -> Val | None:
        """``torch.cat([x, torch.zeros(n)])``: zero parts joined to other rows are padding
        rows after them (the rows before are the others'); without a zero part, every
        part's lengths."""
        joined = join_all(v for _, v in args).only_traces()
        parts = args[0][1].elements if args and args[0][0].keyword is None else None
        if not parts or len(parts) < 2:
            return joined
        zeros = [p for p in parts if p.traces and all(_only_zero_fill(t) for t in p.traces)]
        others = [p for p in parts if not any(p is z for z in zeros)]
        if not zeros or not others:
            # Several parts: a selection among them has more rows after, which a later
            # selection of the whole is not bounded by.
            step = self.step(frame, None, "flow", ROWS_ADDED, f"{name}: rows of its parts")
            return joined.with_traces(
                {t.then(step) if not t.concrete or _counted(t) else t for t in joined.traces}
            )
        return self.padding(frame, join_all(others).only_traces(), f"{name} with zeros")

    def padding(self, frame: Frame, val: Val, note: str) -> Val:
        """Rows of 0 after the rows of ``val`` (which come first, at least one): the
        ``"[n:]="`` form, a source only of the rules that count padding rows."""
        op = Op(OpKind.PAD_ZERO, "rows_before_padding")
        step = self.step(frame, None, "flow", op, note, ("zero_fill", "[n:]="))
        return Val([*val.then(step).traces, Trace(None, (step,))])

    def call_pad(
        self, frame: Frame, node: cst.Call, name: str, sig: Signature, args: Args
    ) -> Val | None:
        """``F.pad(x, (0, n))`` adds rows of 0 (its default ``value``); ``value=k`` with a
        literal ``k >= 1`` adds rows of ``k``, which are never 0; another value is opaque."""
        b = sig.bind(args)
        if "input" not in b:
            return None
        val = b["input"][1].only_traces()
        mode = string_value(b["mode"][0].value) if "mode" in b else "constant"
        value = int_value(b["value"][0].value) if "value" in b else 0
        if is_none(b["value"][0].value if "value" in b else None):
            value = 0
        if mode != "constant" or value is None or value < 0:
            return self.extend(frame, val, Op(OpKind.OPAQUE, name))
        if value == 0:
            return self.padding(frame, val, f"{name}: rows of 0 added")
        return self.extend(frame, val, IDENTITY, f"{name}: rows of {value} added")

    def call_view(
        self, frame: Frame, node: cst.Call, name: str, sig: Signature, args: Args
    ) -> Val | None:
        value = sig.bind(args).get("input")
        if value is not None and name in _LITERAL_TENSORS:
            rows = self.literal_rows(frame, value[0].value)
            every = self.repeated_literal(frame, value[0].value) if rows is None else None
            if rows is not None and any(rows) or every:
                values = f"[{','.join(map(str, rows))}]" if rows is not None else str(every)
                return self.known_rows(frame, values, "known values")
            if rows is not None or every is not None:
                # torch.tensor([0] * 32), torch.tensor([0] * batch_size): zeros, as
                # torch.zeros makes them (the "[0]" form of `zero_alloc`), of the rows
                # written where they are known.
                zeros = self.zero_source(frame, "list of zeros", ("zero_alloc", "[0]"))
                if rows is None:
                    return zeros
                known = Op(OpKind.KNOWN_ROWS, f"[{','.join(map(str, rows))}]")
                return zeros.then(self.step(frame, None, "flow", known, "known values"))
        return value[1].only_traces() if value is not None else EMPTY

    def literal_rows(self, frame: Frame, node: cst.BaseExpression) -> list[int] | None:
        """The values of a flat list or tuple of integer literals or module constants, or
        of one repeated a known number of times (``[0] * 32``)."""
        repeated = _repeated(node)
        if repeated is not None:
            rows, count = self.literal_rows(frame, repeated[0]), self.operand(frame, repeated[1])
            if rows is None or not isinstance(count, int) or not 0 < len(rows) * count <= 1024:
                return None
            return rows * count
        if not isinstance(node, (cst.List, cst.Tuple)) or not node.elements:
            return None
        out = []
        for el in node.elements:
            v = self.operand(frame, el.value) if type(el) is not cst.StarredElement else None
            if not isinstance(v, int):
                return None
            out.append(v)
        return out if len(out) <= 1024 else None

    def repeated_literal(self, frame: Frame, node: cst.BaseExpression) -> int | None:
        """``k`` of ``[k] * n`` (or ``[k, k] * n``), ``n`` any count: every row is ``k``."""
        repeated = _repeated(node)
        rows = self.literal_rows(frame, repeated[0]) if repeated is not None else None
        return rows[0] if rows and len(set(rows)) == 1 else None

    def call_mask(
        self, frame: Frame, node: cst.Call, name: str, sig: Signature, args: Args
    ) -> Val | None:
        """``torch.where(cond, x, y)``."""
        b = sig.bind(args)
        if len(b) != 3 or len([a for a, _ in args if a.keyword is None and not a.star]) > 3:
            return None
        pos = [b["condition"], b["input"], b["other"]]
        replaced = self.where_replacement(frame, node, pos)
        if replaced is not None:
            return replaced
        val = pos[1][1].join(pos[2][1]).only_traces()
        if is_zero(pos[2][0].value) or is_zero(pos[1][0].value):
            # The rows the mask does not keep become 0, and a mask may keep none.
            return self.mask_zero(frame, val, name)
        return val

    def call_attribute(
        self, frame: Frame, node: cst.Call, name: str, sig: Signature, args: Args
    ) -> Val | None:
        b = sig.bind(args)
        if "object" not in b or "name" not in b:
            return None
        attr = string_value(b["name"][0].value)
        found = self.attribute(frame, b["object"][1], attr) if attr is not None else EMPTY
        if "default" in b:  # getattr(ops, "kernel", fallback): either may come back
            found = found.join(b["default"][1])
        return found

    def call_import(
        self, frame: Frame, node: cst.Call, name: str, sig: Signature, args: Args
    ) -> Val | None:
        value = sig.bind(args).get("name")
        if value is None:
            return None
        target = string_value(value[0].value)
        if target is None:
            return EMPTY
        if target.startswith("."):
            level = len(target) - len(target.lstrip("."))
            target = resolve_relative(frame.mod.package, level, target.lstrip(".") or None)
        return Val((), self.lookup_qualified(frame.mod, target))

    def call_cast(
        self, frame: Frame, node: cst.Call, name: str, sig: Signature, args: Args
    ) -> Val | None:
        """``typing.cast(Meta, obj)``: ``obj`` itself, and an instance of ``Meta`` where it
        is a class of the project, as a parameter annotated ``Meta`` is."""
        b = sig.bind(args)
        if "val" not in b:
            return None
        val = b["val"][1]
        typ = b.get("typ")
        extra: list[Ref] = []
        for r in typ[1].refs if typ is not None else ():
            if isinstance(r, ClassRef):
                extra.append(InstRef(r.cls))
            elif isinstance(r, LazyRef):
                extra.append(InstRef(r.qual))
        return val.with_refs([*val.refs, *extra]) if extra else val

    def call_set_attribute(
        self, frame: Frame, node: cst.Call, name: str, sig: Signature, args: Args
    ) -> Val | None:
        """``setattr(obj, "name", v)`` is ``obj.name = v``. With a name not written out, any
        field may be the one written: each field of ``obj`` known here may hold ``v`` too.
        It gives None."""
        b = sig.bind(args)
        if "object" not in b or "value" not in b or base_key(b["object"][0].value) is None:
            return EMPTY
        obj, (value_arg, value) = b["object"][0].value, b["value"]
        attr = string_value(b["name"][0].value) if "name" in b else None
        if attr is not None and attr.isidentifier():
            target = cst.Attribute(value=obj, attr=cst.Name(attr))
            self.assign(frame, target, value, value_arg.value)
        elif attr is None and (key := dotted(obj)) is not None:
            prefix = f"{key}."
            for field in [k for k in frame.state if k.startswith(prefix)]:
                frame.state[field] = frame.state[field].join(value.only_traces_and_refs())
        return EMPTY

    def call_replace(
        self, frame: Frame, node: cst.Call, name: str, sig: Signature, args: Args
    ) -> Val | None:
        """``dataclasses.replace(obj, f=v)``: a new instance of ``obj``'s class holding what
        ``obj`` holds, but ``v`` in ``f``. A construction: ``v`` is recorded as the class's
        field (as ``Cls(f=v)`` is), and ``new = replace(obj, ...)`` reads ``new.f`` as ``v``
        and each field ``obj`` was known to hold here as ``obj``'s."""
        b = sig.bind(args)
        if "obj" not in b:
            return None
        obj_arg, obj = b.pop("obj")
        changed = [(field, val) for field, (_, val) in b.items()]
        for ref in obj.refs:
            if isinstance(ref, InstRef):
                for field, val in changed:
                    self.record_constructor_field(frame, node, ref.cls, field, val)
        key = base_key(obj_arg.value)
        kept: list[tuple[str, Val]] = []
        if key is not None and key == dotted(obj_arg.value):
            prefix = f"{key}."
            fields = (
                (k.removeprefix(prefix), v) for k, v in frame.state.items() if k.startswith(prefix)
            )
            kept = [(field, v) for field, v in fields if "." not in field and field not in b]
        frame.constructed[id(node)] = kept + changed
        return obj

    def call_mapping(
        self, frame: Frame, node: cst.Call, name: str, sig: Signature, args: Args
    ) -> Val | None:
        """``dict(raw=a, clamped=b)``: a dict written out with those keys, as ``{"raw": a,
        "clamped": b}``; ``dict(other)`` or ``dict(other, k=v)``: what they all hold."""
        if any(a.star for a, _ in args):
            return join_all(v for _, v in args).only_traces_and_refs()
        keywords = [(a.keyword.value, v) for a, v in args if a.keyword is not None]
        positional = [v for a, v in args if a.keyword is None]
        if positional:
            return join_all([*positional, *(v for _, v in keywords)]).only_traces_and_refs()
        return keyed(dict(keywords)) if keywords else EMPTY

    def call_wrap(
        self, frame: Frame, node: cst.Call, name: str, sig: Signature, args: Args
    ) -> Val | None:
        """``torch.compiler.disable(fn)``, ``torch.compile(fn)``, ``functools.lru_cache(fn)``:
        what ``fn`` refers to (a call of the result calls it). Given no function
        (``functools.lru_cache(maxsize=8)``, a decorator factory): nothing."""
        fn = sig.bind(args).get("fn")
        return Val((), fn[1].refs) if fn is not None else EMPTY

    def call_partial(
        self, frame: Frame, node: cst.Call, name: str, sig: Signature, args: Args
    ) -> Val | None:
        pos = self.positional(args)
        if not pos:
            return None
        kws = [(a, v) for a, v in args if a.keyword]
        return self.partial(frame, node, pos[0][1], pos[1:], kws)

    def call_reduce(
        self, frame: Frame, node: cst.Call, name: str, sig: Signature, args: Args
    ) -> Val | None:
        self.out_target(frame, node, args, EMPTY)
        return EMPTY

    def mask_zero(self, frame: Frame, val: Val, name: str, *, methods: bool = False) -> Val:
        """``torch.where(mask, x, 0)``, ``x.masked_fill(m, 0)``, ``x * mask``: the rows a
        mask does not keep become 0, and a mask may keep none (every row 0). A source of the
        rules that name it under ``mask_zero`` (``mask_zero_methods`` for a method); the
        lengths that flow in go through it as zero padding of any rows."""
        key = "mask_zero_methods" if methods else "mask_zero"
        op = Op(OpKind.PAD_ZERO, ANY_ROWS)
        step = self.step(frame, None, "source", op, "rows outside the mask set to 0", (key, name))
        return Val([*val.then(step).traces, Trace(None, (step,))])

    def subtract(
        self,
        frame: Frame,
        left: Val,
        right: Val,
        left_node: cst.BaseExpression | None,
        right_node: cst.BaseExpression | None,
        name: str,
        alpha: int | str = 1,
    ) -> Val:
        """``a - alpha * b``: a source of the rules that name it under ``subtraction`` (a
        difference of lengths >= 1 can be 0: ``seq_lens - query_lens`` on a first prefill
        chunk). The judge decides from what is known: ``x - k`` with a known ``k`` (a
        literal, a module constant) is ``x + (-k)``, so ``x - 0`` or a clamp to >= k + 1
        before it is safe; an unknown subtrahend is a symbol. ``alpha`` (``torch.sub(x, k,
        alpha=a)``, a literal or a module constant) multiplies the subtrahend; an unknown
        one, or one other than 1 times an unknown subtrahend, is outside the model. The
        difference of neighbouring prefix sums (``cu[1:] - cu[:-1]`` of a ``cumsum``) is
        the lengths that were summed."""
        if alpha == 0:
            return left.only_traces()  # x - 0 * b
        if not isinstance(alpha, int):
            return self.outside_model(frame, left, right, f"{name}(alpha={alpha})")
        shared = left.traces & right.traces
        scans = frozenset(t for t in shared if _scanned(t))
        if scans and alpha == 1:
            step = self.step(frame, None, "flow", _UNSCAN, "differences of the prefix sums")
            return Val(t.then(step) for t in scans)
        effect = ("subtraction", name)
        known = self.operand(frame, right_node) if right_node is not None else "<expr>"
        lk = self.operand(frame, left_node) if left_node is not None else "<expr>"
        if isinstance(lk, int) and not left.traces:
            # k - alpha * x: -alpha * x + k; a constant minuend minus lengths >= 1 can be 0.
            scaled = Op(OpKind.NEG) if alpha == 1 else Op(OpKind.MUL, -alpha)
            negated = self.extend(frame, right.only_traces(), scaled)
            fresh = Val([Trace(None, (self.step(frame, None, "flow", scaled),))])
            op = Op(OpKind.ADD, lk)
            step = self.step(frame, None, "source", op, "subtraction", effect)
            return Val(t.then(step) for t in negated.join(fresh).traces)
        if isinstance(known, int):
            return self.minus(frame, left, known * alpha, effect)
        if alpha != 1:
            return self.outside_model(frame, left, right, f"{name}(alpha={alpha})")
        return self.minus(frame, left, known if known != "<expr>" else "subtrahend", effect)

    def minus(self, frame: Frame, left: Val, known: int | str, effect: Effect) -> Val:
        """``left - known`` (a known integer or a symbol), a source of the rules that name
        ``effect`` under ``subtraction``; ``x - 0`` is ``x``."""
        if known == 0:
            return left.only_traces()
        if isinstance(known, int):
            op = Op(OpKind.ADD, -known)
        else:
            op = Op(OpKind.SUB, known)
        step = self.step(frame, None, "source", op, "subtraction", effect)
        # New zero-able rows start here from real lengths (>= 1) that went through what is
        # known of the minuend (a clamp before `- 1` counts); a concrete trace goes on.
        # A minuend that went through an operation outside the model starts nothing: the
        # judge could say nothing of it ((x + c - 1) // c is judged at its division).
        fresh = [
            Trace(None, t.steps).then(step)
            for t in left.traces
            # A parameter's lengths are real requests' (>= 1) wherever the caller is not
            # seen; a call's or a field's are resolved to what made them.
            if isinstance(t.origin, ParamOrigin)
            and all(s.op.kind != OpKind.OPAQUE for s in t.steps)
        ]
        if not left.traces:
            fresh.append(Trace(None, (step,)))
        return Val([*left.then(step).traces, *fresh])

    def plus(self, frame: Frame, val: Val, addend: int, name: str) -> Val:
        """``val + addend`` for a known integer: adding a negative one is a subtraction
        (``x + (-1)``, ``x.add(-1)``, ``torch.add(x, 1, alpha=-1)`` are ``x - 1``), a source
        of the rules that name ``name`` under ``subtraction``; adding 0 or more goes on."""
        if addend < 0 and val.traces:
            return self.minus(frame, val, -addend, ("subtraction", name))
        return self.extend(frame, val, Op(OpKind.ADD, addend))

    def outside_model(self, frame: Frame, left: Val, right: Val, name: str) -> Val:
        """An operation of two values the judge cannot follow: the lengths that go in come
        out marked outside the model (never proved), as ``x + y`` of unknowns does."""
        if not left.traces and not right.traces:
            return EMPTY
        traces = left.traces | right.traces
        if left.traces and right.traces:
            traces = without_row_counts(traces)  # broadcasting: whose rows is unknown
        return self.extend(frame, Val(traces), Op(OpKind.OPAQUE, name))

    def call_tl_load(
        self, frame: Frame, node: cst.Call, name: str, sig: Signature, args: Args
    ) -> Val | None:
        """``tl.load(ptr + offs, mask=...)`` in a Triton kernel: the values of the tensor the
        launch passed for ``ptr`` (offsets select rows; a masked-off row is ``other``). With
        ``other=0``, the lanes the mask leaves out read 0, maybe every lane: a mask's zero
        rows, where a rule names the load under ``mask_zero`` (padding lanes of a
        CUDA-graph batch reach the kernel as rows of length 0)."""
        b = sig.bind(args)
        pointer = b.get("pointer")
        if pointer is None:
            return None
        base = _pointer_base(pointer[0].value)
        if base is None:
            return self.extend(frame, pointer[1].only_traces(), Op(OpKind.OPAQUE, name))
        loaded = self.eval(frame, base).only_traces()
        other = b.get("other")
        if "mask" in b and other is not None and is_zero(other[0].value):
            return self.mask_zero(frame, loaded, name)
        return loaded

    def call_tl_store(
        self, frame: Frame, node: cst.Call, name: str, sig: Signature, args: Args
    ) -> Val | None:
        """``tl.store(ptr + offs, v, mask=...)``: ``v`` is written into rows of the tensor
        passed for ``ptr`` (a weak write: a mask or the grid may leave rows as they were)."""
        b = sig.bind(args)
        if "pointer" not in b or "value" not in b:
            return None
        base = _pointer_base(b["pointer"][0].value)
        if base is None:
            return EMPTY
        written = (
            b["value"][1].only_traces().then(self.step(frame, None, "flow", IDENTITY, "tl.store"))
        )
        self.write(frame, base, written, strong=False, in_place=True)
        return EMPTY

    def call_scan(
        self, frame: Frame, node: cst.Call, name: str, sig: Signature, args: Args
    ) -> Val | None:
        value = sig.bind(args).get("input")
        result = self.scan(frame, value[1] if value is not None else EMPTY, name)
        self.out_target(frame, node, args, result)
        return result

    def method_scan(
        self, frame: Frame, node: cst.Call, method: str, b: Bound, recv: Val, target: Target
    ) -> Val | None:
        return self.scan(frame, recv, method)

    def scan(self, frame: Frame, val: Val, name: str) -> Val:
        """``cumsum``: a prefix sum of lengths >= 0 has a 0 row exactly where every length
        up to it is 0, so under "every row 0" it keeps the lengths' zero-ability; the mark
        lets a difference of neighbouring sums give the lengths back."""
        return Val(
            t.then(self.step(frame, None, "flow", _SCAN, f"prefix sum ({name})"))
            for t in val.traces
        )

    def call_subtract(
        self, frame: Frame, node: cst.Call, name: str, sig: Signature, args: Args
    ) -> Val | None:
        b = sig.bind(args)
        if "input" not in b:
            return None
        if name.endswith("diff"):
            result = self.difference(frame, b["input"][1], name)
        elif "other" in b:
            (x_arg, x), (y_arg, y) = b["input"], b["other"]
            if name.endswith("rsub"):  # torch.rsub(x, y, alpha=a): y - a * x
                (x_arg, x), (y_arg, y) = (y_arg, y), (x_arg, x)
            alpha = self.alpha(frame, b)
            result = self.subtract(frame, x, y, x_arg.value, y_arg.value, name, alpha)
        else:
            return None
        self.out_target(frame, node, args, result)
        return result

    def call_arithmetic(
        self, frame: Frame, node: cst.Call, name: str, sig: Signature, args: Args
    ) -> Val | None:
        """``torch.add(x, k, alpha=a)``: ``x + a * k``, an addition of a known integer (a
        negative one is a subtraction); any other sum is outside the model."""
        b = sig.bind(args)
        if "input" not in b or "other" not in b:
            return None
        (x_arg, x), (k_arg, k) = b["input"], b["other"]
        addend, alpha = int_value(k_arg.value), self.alpha(frame, b)
        if not x.traces and k.traces and alpha == 1:  # torch.add(1, x)
            (x_arg, x), addend = (k_arg, k), int_value(x_arg.value)
        if addend is not None and isinstance(alpha, int):
            result = self.plus(frame, x, addend * alpha, name)
        else:
            result = self.outside_model(frame, x, k, name)
        self.out_target(frame, node, args, result)
        return result

    def alpha(self, frame: Frame, b: Bound) -> int | str:
        """The ``alpha=`` of an addition or a subtraction (1 where it is not given): a
        literal or a module constant, else its text (unknown)."""
        given = b.get("alpha")
        return 1 if given is None else self.operand(frame, given[0].value)

    def method_subtract(
        self, frame: Frame, node: cst.Call, method: str, b: Bound, recv: Val, target: Target
    ) -> Val | None:
        return self.difference(frame, recv, method)

    def difference(self, frame: Frame, val: Val, name: str) -> Val:
        """``torch.diff(x)``: neighbouring differences; of a prefix sum, the lengths."""
        return self.subtract(frame, val, val, None, None, name)

    def where_replacement(
        self, frame: Frame, node: cst.Call, pos: list[tuple[cst.Arg, Val]]
    ) -> Val | None:
        """``torch.where(x == 0, k, x)`` / ``torch.where(x > 0, x, k)``: rows set to ``k``."""
        (cond, _), (picked, picked_val), (other, other_val) = pos
        if int_value(picked.value) is not None:
            rows = mask_rows(frame.mod, cond.value, other.value)
            value, val = int_value(picked.value), other_val
        elif int_value(other.value) is not None:
            rows = mask_rows(frame.mod, cond.value, picked.value, keeps=True)
            value, val = int_value(other.value), picked_val
        else:
            return None
        if rows is None or value is None:
            return None
        return self.replace_rows(frame, val, rows, value, "torch.where")

    def replace_rows(self, frame: Frame, val: Val, rows: str, value: int, mask: str) -> Val:
        """The lengths after the ``rows`` a mask picked are set to ``value`` (a sanitizer
        when ``value >= 1``: no row can then be 0)."""
        op = replacement_op(rows, value)
        note = f"{'rows equal to 0' if rows == 'zero' else 'rows below 1'} set to {value}"
        if value >= 1:
            return self.extend_role(frame, val, op, "sanitizer", note, ("mask", mask))
        return self.extend(frame, val.only_traces(), op, note)

    def external_clamp(self, frame: Frame, name: str, sig: Signature, args: Args) -> Val:
        """``torch.clamp(x, min=1)`` (bounds by parameter) or ``max(x, 1)`` (the operand
        that carries no lengths is the bound)."""
        upper = name in ("min", "torch.min", "torch.minimum", "triton.language.minimum")
        keywords = {a.keyword.value for a, _ in args if a.keyword is not None}
        if "min" in sig.params or keywords & {"min", "max"}:
            b = bind(args, ("input", "min", "max"))
            val = b["input"][1] if "input" in b else EMPTY
            low, high = self.bound(frame, b.get("min")), self.bound(frame, b.get("max"))
            if name.endswith(("clamp_min", "clamp_min_")):
                high = None
            return self.clamp(frame, val, low, high, name, ("clamp", name))
        positional = [(a, v) for a, v in args if a.keyword is None and not a.star]
        if len(positional) > 2:
            if name == "max" and len(positional) == len(args):
                # max(0, n // 4, 1): at least its largest constant operand.
                known = [(a, self.operand(frame, a.value)) for a, _ in positional]
                least = [k for _, k in known if isinstance(k, int)]
                if least:
                    values = [
                        v for (_, v), (_, k) in zip(positional, known) if not isinstance(k, int)
                    ]
                    joined = join_all(values).only_traces()
                    return self.clamp(frame, joined, max(least), None, name, ("clamp", name))
            return join_all(v for _, v in positional).only_traces()
        b = sig.bind(args)
        if (
            name in DIM_REDUCTIONS
            and "input" in b
            and (
                keywords & {"dim", "keepdim"}
                or ("other" in b and self.python_int(frame, b["other"][0].value))
            )
        ):
            # torch.max(x, 1) reduces along dimension 1 (values and indices): no clamp.
            reduced = b["input"][1].only_traces()
            return self.extend(frame, reduced, Op(OpKind.OPAQUE, f"{name}(dim)"))
        if "input" not in b or "other" not in b:
            return EMPTY
        (a0, v0), (a1, v1) = b["input"], b["other"]
        b0: cst.BaseExpression | int = a0.value
        b1: cst.BaseExpression | int = a1.value
        if isinstance(self.operand(frame, a1.value), int):
            v1 = EMPTY  # a constant bound: torch.maximum(x, torch.ones_like(x))
        elif isinstance(self.operand(frame, a0.value), int):
            v0 = EMPTY
        elif isinstance(every := self.bound(frame, b["other"]), int) and v0.traces:
            b1, v1 = every, EMPTY  # one = torch.ones_like(x); torch.maximum(x, one)
        elif isinstance(every := self.bound(frame, b["input"]), int) and v1.traces:
            b0, v0 = every, EMPTY
        value, bound = (v0, b1) if v0.traces or not v1.traces else (v1, b0)
        if bound is not None and not (v0.traces and v1.traces):
            if upper:
                return self.clamp(frame, value, None, bound, name, ("clamp", name))
            return self.clamp(frame, value, bound, None, name, ("clamp", name))
        return self.extend(frame, v0.join(v1).only_traces(), Op(OpKind.OPAQUE, name))

    def python_int(self, frame: Frame, node: cst.BaseExpression) -> bool:
        """``node`` is an integer literal or a module constant assigned one (a tensor of
        ones, which ``operand`` also reads as 1, is not)."""
        if int_value(node) is not None:
            return True
        if type(node) is not cst.Name or node.value in frame.state:
            return False
        return int_value(self.module_constant(frame.mod, node.value)) is not None

    def external_division(
        self, frame: Frame, node: cst.Call, name: str, sig: Signature, args: Args
    ) -> Val:
        b = sig.bind(args)
        if "input" not in b or "other" not in b:
            return EMPTY
        pos = [b["input"], b["other"]]
        mode = b.get("rounding_mode")
        mode_text = rounding_mode(mode[0].value) if mode else None
        is_floor = name not in TRUE_DIVISIONS or mode_text in ("floor", "trunc", "<any>")
        if not is_floor:
            result = self.extend(frame, pos[0][1].only_traces(), Op(OpKind.OPAQUE, "true division"))
        else:
            divisor = self.operand(frame, pos[1][0].value)
            kinds = (OpKind.RSHIFT,) if name.endswith(SHIFT_SUFFIXES) else rounding(mode_text)
            result = join_all(
                self.source(
                    frame,
                    pos[0][1],
                    Op(kind, divisor),
                    pos[0][0].value,
                    note=f"{name}(rounding_mode={shown_mode(mode[0].value)})"
                    if mode_text
                    else name,
                    effect=("floor_division", name),
                )
                for kind in kinds
            )
        self.out_target(frame, node, args, result)
        if in_place(name) and base_key(pos[0][0].value) is not None:
            # operator.ifloordiv(x, 4) is `x //= 4`: a tensor is divided in place.
            self.write_whole(frame, pos[0][0].value, result)
        return result

    def out_target(
        self, frame: Frame, node: cst.Call, args: list[tuple[cst.Arg, Val]], val: Val
    ) -> None:
        """``out=`` writes the result into a buffer (a view of an attribute taints it)."""
        out = self.kwarg(args, "out")
        if out is None:
            return
        target = out[0].value
        if base_key(target) is not None:
            # out=x overwrites all of x; out=buf[:n] or a view writes part of a buffer.
            self.write_whole(
                frame, target, val.then(self.step(frame, None, "flow", IDENTITY, "out="))
            )

    def zero_source(self, frame: Frame, note: str, effect: Effect) -> Val:
        step = self.step(frame, None, "source", Op(OpKind.FILL_ZERO), note, effect)
        return Val([Trace(None, (step,))])

    def partial(
        self,
        frame: Frame,
        node: cst.Call,
        fn: Val,
        pos: list[tuple[cst.Arg, Val]],
        kws: list[tuple[cst.Arg, Val]],
    ) -> Val:
        """``functools.partial(f, ...)``: a callable with arguments bound. Lengths bound into
        a sink are reported here, where a clamp would go."""
        refs: list[Ref] = []
        for r in in_order(fn.refs):
            if isinstance(r, PendingRef):
                candidates = self.resolve_refs(r)
            else:
                candidates = [r]
            for c in candidates:
                if isinstance(c, SinkRef):
                    lens = None
                    for a, v in kws:
                        if a.keyword is not None and a.keyword.value == c.spec.keyword:
                            lens = (a, v)
                    if lens is None and c.spec.position is not None and c.spec.position < len(pos):
                        lens = pos[c.spec.position]
                    if lens is None:
                        refs.append(c)
                        continue
                    note = f"sink ({c.spec.keyword or 'argument'}), bound by partial"
                    self.record_sink(frame, node, c.spec, lens[0].value, lens[1], note)
                    refs.append(SinkRef(c.spec, EMPTY))
                elif isinstance(c, FuncRef):
                    refs.append(
                        FuncRef(
                            c.key,
                            c.self_val,
                            c.bound + tuple(v for _, v in pos),
                            c.bound_kw
                            + tuple((a.keyword.value, v) for a, v in kws if a.keyword is not None),
                        )
                    )
                elif isinstance(c, LazyRef) and (pos or kws):
                    refs.append(LazyRef(c.qual, bound_unknown=True))
                else:
                    refs.append(c)
        return Val((), refs)

    def set_item(self, frame: Frame, args: list[tuple[cst.Arg, Val]]) -> bool:
        """``operator.setitem(xs, i, v)`` (``xs.__setitem__(i, v)``) is ``xs[i] = v``: an
        element written, or rows (``Statements.assign``). False where the call is not
        given three arguments by position, or the container has no name (``base_key``)."""
        if len(args) != 3 or any(a.keyword is not None or a.star for a, _ in args):
            return False
        (container, _), (index, _), (value, val) = args
        if base_key(container.value) is None:
            return False
        element = cst.SubscriptElement(slice=cst.Index(value=index.value))
        self.assign(frame, cst.Subscript(value=container.value, slice=[element]), val, value.value)
        return True

    def tensor_method(
        self, frame: Frame, node: cst.Call, method: str, recv: Val, args: list[tuple[cst.Arg, Val]]
    ) -> Val | None:
        """``recv.method(args)``: its row of the signature table decides the effect; a method
        in no row (or a row that does not apply) gives the receiver's lengths, opaque."""
        if method in self.names.get("empty_rows_methods", ()):
            rows = self.empty_rows_call(frame, node, method, args, method=True)
            if rows is not None:
                return rows
        sig = self.library.methods.get(method)
        target = node.func.value if type(node.func) is cst.Attribute else None
        if (
            method == "__setitem__"  # xs.__setitem__(i, v)
            and target is not None
            and self.set_item(frame, [(cst.Arg(target), recv), *args])
        ):
            return EMPTY
        if recv.elements is not None and recv.keys is None and method in _REORDERING:
            self.reorder(frame, target, recv, method, args)
        elif recv.keys is not None and method in _REMOVING and target is not None:
            given = args[0][0].value if args and method == "pop" else None
            self.remove_key(frame, target, recv, given, every=method == "clear")
        if sig is not None:
            handler = getattr(self, f"method_{sig.effect.value}")
            out = handler(frame, node, method, sig.bind(args), recv, target)
            if out is not None:
                if out.traces and narrowing(method, args, self.dtype_texts(frame)):
                    # 256 as int8 is 0: what the rows were says nothing of them now.
                    wraps = "reads its bytes as another type" if method == "view" else "may wrap"
                    out = self.extend(frame, out, Op(OpKind.OPAQUE, f".{method}(): {wraps}"))
                if sig.effect in _RESHAPING and method not in _ROW_KEEPING_METHODS:
                    return reshaped(out)
                return out
        if recv.traces:
            out = self.extend(frame, recv.only_traces(), Op(OpKind.OPAQUE, f".{method}()"))
            if target is not None and in_place(method):
                self.changed_in_place(frame, target, out, method)
            return out
        return None

    def remove_key(
        self,
        frame: Frame,
        target: cst.BaseExpression,
        recv: Val,
        key: cst.BaseExpression | None,
        *,
        every: bool = False,
    ) -> None:
        """A dict written out (``recv``) loses a key in place: ``d.pop(0)`` or ``del d[0]``
        that key, ``d.clear()`` all of them; after ``popitem()`` or under a key that is no
        literal, which ones it holds is not known."""
        if base_key(target) is None or dotted(target) != base_key(target):
            return
        assert recv.elements is not None and recv.keys is not None
        name = dict_key(key) if key is not None else None
        if every:
            left: Val = Val(recv.traces, recv.refs, (), ())
        elif name is not None:
            kept = [(k, v) for k, v in zip(recv.keys, recv.elements) if k != name]
            left = Val(recv.traces, recv.refs, tuple(v for _, v in kept), tuple(k for k, _ in kept))
        else:
            left = recv.only_traces_and_refs()
        self.write(frame, target, left, strong=True)

    def reorder(self, frame: Frame, target: Target, recv: Val, method: str, args: Args) -> None:
        """A list written out (``recv``) changed in place: ``reverse()`` reverses its
        elements, ``pop()`` (``pop(k)`` with a literal ``k``, ``popleft()``) drops one;
        after ``sort()``, ``remove(x)`` or another ``pop`` an element's place says no more
        which it is, and the list holds them all at no known place."""
        if target is None or base_key(target) is None:
            return
        elements = recv.elements
        assert elements is not None
        new: tuple[Val, ...] | None = None
        given = [int_value(a.value) for a, _ in args if a.keyword is None]
        if method == "reverse":
            new = elements[::-1]
        elif method == "popleft" and elements:
            new = elements[1:]
        elif method == "pop" and elements and len(given) <= 1:
            k = given[0] if given else -1
            if k is not None and -len(elements) <= k < len(elements):
                k %= len(elements)
                new = elements[:k] + elements[k + 1 :]
        if new is not None and dotted(target) == base_key(target):
            self.write(frame, target, Val(recv.traces, recv.refs, new), strong=True)
        else:
            self.write(frame, target, recv.only_traces_and_refs(), strong=False, in_place=True)

    def changed_in_place(
        self, frame: Frame, target: cst.BaseExpression, val: Val, name: str
    ) -> None:
        """A call outside the signature table changed ``target`` in place (``x.scatter_(...)``,
        ``torch.zero_(x)``, ``x.__irshift__(8)``, ``out=x``): it holds ``val``, outside the
        model. One that may change its shape (``resize_``, ``set_``) also leaves its row
        count unknown."""
        if name.rsplit(".", 1)[-1] in SHAPE_CHANGING:
            step = self.step(frame, None, "flow", Op(OpKind.ROWS, "<any>"), f"{name}: rows unknown")
            self.write(frame, target, val.then(step), strong=dotted(target) is not None)
        else:
            self.write_whole(frame, target, val)

    def method_clamp(
        self, frame: Frame, node: cst.Call, method: str, b: Bound, recv: Val, target: Target
    ) -> Val | None:
        low, high = self.bound(frame, b.get("min")), self.bound(frame, b.get("max"))
        if method.startswith("clamp_min"):
            high = None
        result = self.clamp(frame, recv, low, high, f".{method}()", ("clamp_methods", method))
        if method.endswith("_") and target is not None:
            self.write_whole(frame, target, result)
        return result

    def method_floor_division(
        self, frame: Frame, node: cst.Call, method: str, b: Bound, recv: Val, target: Target
    ) -> Val | None:
        mode = b.get("rounding_mode")
        mode_text = rounding_mode(mode[0].value) if mode else None
        if method not in TRUE_DIVISION_METHODS or mode_text in ("floor", "trunc", "<any>"):
            if "other" not in b:
                return recv.only_traces()
            divisor = self.operand(frame, b["other"][0].value)
            result = join_all(
                self.source(
                    frame,
                    recv,
                    Op(kind, divisor),
                    target,
                    note=f".{method}()",
                    effect=("floor_division_methods", method),
                )
                for kind in (
                    (OpKind.RSHIFT,)
                    if method.endswith(SHIFT_METHOD_ENDINGS)
                    else rounding(mode_text)
                )
            )
        else:
            result = self.extend(frame, recv.only_traces(), Op(OpKind.OPAQUE, "true division"))
        if in_place(method) and target is not None:  # div_, __ifloordiv__: x itself
            self.write_whole(frame, target, result)
        if "out" in b:
            self.out_target(frame, node, [b["out"]], result)
        return result

    def method_zero_fill(
        self, frame: Frame, node: cst.Call, method: str, b: Bound, recv: Val, target: Target
    ) -> Val | None:
        if not method.endswith("_"):  # new_zeros: a new all-zero tensor
            return self.zero_source(frame, f".{method}()", ("zero_alloc_methods", method))
        return self.fill_in_place_with_zero(frame, method, target)

    def fill_in_place_with_zero(
        self, frame: Frame, method: str, target: Target, key: str = "zero_fill_methods"
    ) -> Val:
        """``x.zero_()``, ``x.fill_(0)`` (a method: ``key`` "zero_fill_methods") or
        ``torch.zero_(x)`` ("zero_fill"): every row of ``target`` is 0 now."""
        effect = (key, method)
        shown = f".{method}()" if key == "zero_fill_methods" else method
        if target is None:
            return self.zero_source(frame, shown, effect)
        if type(target) is cst.Subscript:
            self.zero_fill(frame, target, effect)
        else:
            zeros = self.zero_source(frame, shown, effect)
            self.write(frame, target, zeros, strong=False, in_place=True)
        return self.eval(frame, target)

    def method_fill(
        self, frame: Frame, node: cst.Call, method: str, b: Bound, recv: Val, target: Target
    ) -> Val | None:
        if method.endswith("_"):  # x.fill_(v): in place
            value = b.get("value")
            if value is not None and written_as_zero(value[0].value):
                return self.fill_in_place_with_zero(frame, method, target)
            result = self.extend(frame, recv.only_traces(), Op(OpKind.OPAQUE, ".fill_()"))
            if target is not None:
                self.write(frame, target, result, strong=False, in_place=True)
            return result
        fill = b.get("fill_value")  # x.new_full(size, v)
        dtype = b.get("dtype")  # x.new_full(size, 0.5): x's dtype, unless given another
        fill_zero = (
            is_zero if dtype is not None and not _integer_dtype(dtype[0]) else written_as_zero
        )
        if fill is not None and fill_zero(fill[0].value):
            return self.zero_source(frame, f".{method}()", ("full_methods", method))
        return fill[1].only_traces() if fill is not None else EMPTY

    def method_copy(
        self, frame: Frame, node: cst.Call, method: str, b: Bound, recv: Val, target: Target
    ) -> Val | None:
        if "src" not in b or target is None:
            return None
        src = b["src"][1].then(self.step(frame, None, "flow", IDENTITY, ".copy_()"))
        src = self.into_narrow(frame, target, src, ".copy_()")
        self.write_whole(frame, target, src)
        return src

    def method_scatter(
        self, frame: Frame, node: cst.Call, method: str, b: Bound, recv: Val, target: Target
    ) -> Val | None:
        """``buf.index_copy_(0, idx, src)``, ``buf.masked_scatter_(mask, src)``: ``src``
        written into some rows of ``buf``, which keeps the others (as ``buf[idx] = src``);
        without the underscore, a new tensor of the same rows."""
        if "source" not in b:
            return None
        how = f".{method}()"
        src = self.scattered(frame, b["source"][1], how)
        if not in_place(method) or target is None:
            return recv.only_traces().join(src)
        written = self.into_narrow(frame, target, src, how)
        self.write(frame, target, written, strong=False, in_place=True)
        return self.eval(frame, target)

    def call_scatter(
        self, frame: Frame, node: cst.Call, name: str, sig: Signature, args: Args
    ) -> Val | None:
        """``torch.index_copy(buf, 0, idx, src)``: a new tensor, ``buf`` with ``src`` in
        some of its rows (written into ``out=`` where one is given)."""
        b = sig.bind(args)
        if "input" not in b or "source" not in b:
            return None
        result = b["input"][1].only_traces().join(self.scattered(frame, b["source"][1], name))
        self.out_target(frame, node, args, result)  # torch.index_copy(..., out=buf)
        return result

    def scattered(self, frame: Frame, src: Val, how: str) -> Val:
        """What a scatter writes: ``src``'s values, not its row count (the rows are the
        receiver's)."""
        moved = src.only_traces().then(self.step(frame, None, "flow", IDENTITY, how))
        return moved.with_traces(without_row_counts(moved.traces))

    def into_narrow(self, frame: Frame, target: Target, val: Val, how: str) -> Val:
        """``val`` written into ``target`` (``buf.copy_(lens)``, ``buf[:n] = lens``) where the
        function made ``buf`` of a type too narrow for a length (``torch.empty(n,
        dtype=torch.int8)``): what it holds now is outside the model, as after a cast."""
        key = base_key(target) if target is not None else None
        if not val.traces or key is None or "." in key or frame.key.node is None:
            return val
        texts = self.dtype_texts(frame)
        if any(_made_narrow(v, texts) is not None for v in assigned_values(frame.key.node, key)):
            return self.extend(
                frame, val, Op(OpKind.OPAQUE, f"{how} into a tensor of a narrow type")
            )
        return val

    def dtype_texts(self, frame: Frame) -> DtypeTexts:
        """What a dtype argument may name, in ``frame``: its own text (``torch.int8``,
        ``"i1"``, either arm of a conditional expression) and what its value refers to here
        (``small = torch.uint8``, in any arm that reaches the cast; ``dt := torch.int8``; a
        field's, what the class's methods store in it), or the module's constant it reads
        (``INDEX_DTYPE = torch.int16``, also through a local, ``dt = INDEX_DTYPE``, or
        another constant); for the function's own local, any string it binds it to too
        (``code = "i1"``, which refers to nothing); for another name, what the function it
        is defined in binds it to (a closure's), else the module's constant of that name;
        ``flags.dtype`` and class-level names as ``written_dtype`` reads them. Given no
        value (``None``: a buffer's ``dtype=`` read back at a later write, not where it
        ran), a name may be anything any of its bindings is. A parameter's default is not
        read: a function's summary serves the calls that pass a wide type too."""

        def texts(node: cst.BaseExpression, val: Val | None) -> list[DtypeText]:
            key = frame.key
            if val is None:
                return self.written_dtype(key, node)
            found: list[DtypeText] = []
            for ref in val.refs:
                if isinstance(ref, ExtRef):
                    found.append((ref.name, False))
                elif isinstance(ref, PendingRef) and isinstance(ref.origin, GlobalOrigin):
                    named = self.module_dtype(ref.origin.mod, ref.origin.name, ())
                    found += named if named is not None else [(ref.origin.name, False)]
                elif isinstance(ref, PendingRef) and isinstance(ref.origin, FieldOrigin):
                    found += self.field_dtype(ref.origin)
            if type(node) is not cst.Name:
                # Its names are known by their values (above), not by every binding.
                return found + self.written_dtype(key, node, names=False)
            scope = key.node
            if scope is not None and node.value in scope_names(scope, self._scopes)[0]:
                # A string bound to it in any arm: a string refers to nothing. (Most names
                # of dtypes are bound to none: the function's own walk is spared them.)
                if any(_strings_in(v) for v in plain_values(scope, node.value)):
                    for v in own_assigned_values(scope, node.value):
                        found += [(t, True) for t in _strings_in(v)]
                return found or _own_text(node)
            return found or self.written_dtype(key, node)

        return texts

    def written_dtype(
        self, key: FuncKey, node: cst.BaseExpression, *, names: bool = True, seen: Seen = ()
    ) -> list[DtypeText]:
        """What a dtype written in ``key``'s function may name by the text alone: a string
        or a dotted name as written; either arm of a conditional expression; ``t.dtype``,
        the narrow type every binding of the local ``t`` makes it a tensor of
        (``made_narrow``); a class-level name read on ``self`` or on a class of the module
        (``class_level_dtype``); with ``names``, a name as any of the plain assignments of
        the nearest function whose own name it is (itself or one it is defined in; not a
        function defined in that), else the module's constant of that name; followed
        through other names as far as they go. ``seen``: the names being followed (a
        scope's id and the name), so that one that comes back to itself (``A = B; B =
        A``, ``buf = torch.zeros(n, dtype=buf.dtype)``) is not followed again."""
        kind = type(node)
        if kind is cst.IfExp:
            return self.written_dtype(key, node.body, names=names, seen=seen) + self.written_dtype(
                key, node.orelse, names=names, seen=seen
            )
        if kind is cst.Attribute and node.attr.value == "dtype" and type(node.value) is cst.Name:
            narrow = self.made_narrow(key, node.value.value, seen)
            return [(narrow, False)] if narrow is not None else _own_text(node)
        if kind is cst.Attribute and type(node.value) is cst.Name:
            cls, on_object = self.class_named(key, node.value.value)
            attr = node.attr.value
            if cls is not None and not (on_object and self.field_assignments(cls, attr)):
                return self.class_level_dtype(cls, attr, seen) or _own_text(node)
        if kind is not cst.Name or not names:
            return _own_text(node)
        name = node.value
        f: FuncKey | None = key
        while f is not None and f.node is not None:
            if name in scope_names(f.node, self._scopes)[0]:
                here = (id(f.node), name)
                found: list[DtypeText] = []
                if here not in seen:
                    for v in own_assigned_values(f.node, name):
                        found += self.written_dtype(f, v, seen=(*seen, here))
                return found or _own_text(node)
            f = self.enclosing(f)
        found = self.module_dtype(key.mod, name, seen)
        return found if found is not None else _own_text(node)

    def module_dtype(self, mod: ModuleInfo, name: str, seen: Seen) -> list[DtypeText] | None:
        """What the module's constant ``name`` may name (``written_dtype`` of its value,
        read at the module's top level); None where the module has no such constant, or
        it is being followed already."""
        here = (id(mod), name)
        constant = self.module_constant(mod, name) if here not in seen else None
        if constant is None:
            return None
        return self.written_dtype(self.func_key(mod, None), constant, seen=(*seen, here))

    def class_named(self, key: FuncKey, name: str) -> tuple[ClassInfo | None, bool]:
        """The class ``name`` stands for in ``key``'s function, and whether it stands for
        an object of it: a method's first parameter (``self``) its class, an object; else
        a class of the module the function does not bind the name in, itself."""
        params = key.params()
        if key.cls is not None and key.is_method and params and params[0].name.value == name:
            return key.cls, not key.is_classmethod
        cls = key.mod.classes.get(name)  # first: most names are no class (`torch`)
        if cls is None or key.node is not None and bound_in(key.node, name):
            return None, False
        return cls, False

    def field_dtype(self, origin: FieldOrigin) -> list[DtypeText]:
        """What a field holding a dtype may name (``self.index_dtype``): each value a method
        of the object's class or of a class it derives from stores in it, read by its text
        where that method runs (``written_dtype``: ``self.index_dtype = INDEX_DTYPE`` names
        the module's constant; a parameter names nothing known). Read by the text, not by
        resolving the field, which would make the class's methods here, in the middle of
        the summary being made."""
        if isinstance(origin.cls, str):
            return []
        found: list[DtypeText] = []
        for key, value in self.field_assignments(origin.cls, origin.attr):
            if value is not None:
                found += self.written_dtype(key, value)
        return found

    def field_assignments(
        self, cls: ClassInfo, attr: str
    ) -> list[tuple[FuncKey, cst.BaseExpression | None]]:
        """Each value a method of ``cls`` or of a class it derives from assigns to
        ``self.attr`` (None where not known: ``fields_assigned``), with the method. Where
        there is one, an object's field of that name hides the class's: what it holds is
        what those methods store (``field_dtype``), not the class-level value."""
        return [
            (self.func_key(c.module, method, c), value)
            for c in self.mro(cls)
            for method in c.methods.values()
            for value in fields_assigned(method).get(attr, ())
        ]

    def class_level_dtype(self, cls: ClassInfo, attr: str, seen: Seen) -> list[DtypeText]:
        """What a class-level name (``DTYPE = torch.int8`` in the class body) read on
        ``cls`` or one of its objects may name: the first class of the MRO that binds it,
        each of its assignments there; nothing for a method, or a name being followed
        already (``written_dtype``)."""
        c = self.defining_class(cls, attr)
        here = (id(c), attr)
        if c is None or attr in c.methods or here in seen:
            return []
        top = self.func_key(c.module, None)
        found: list[DtypeText] = []
        for _, value in c.assigned[attr]:
            found += self.written_dtype(top, value, seen=(*seen, here))
        return found

    def made_narrow(self, key: FuncKey, name: str, seen: Seen = ()) -> str | None:
        """The type too narrow for a length that ``key``'s function makes its local
        ``name`` a tensor of in every binding it makes (``flags = torch.zeros(n,
        dtype=torch.uint8)``; not after ``flags = flags.int()``); None otherwise, or where
        its type is being followed already (``written_dtype``)."""
        scope = key.node
        here = (id(scope), f"{name}.dtype")
        if scope is None or here in seen:
            return None

        def texts(node: cst.BaseExpression, _: Val | None) -> list[DtypeText]:
            return self.written_dtype(key, node, seen=(*seen, here))

        made = [_made_narrow(value, texts) for value in own_assigned_values(scope, name)]
        return made[0] if made and all(made) else None

    def method_arithmetic(
        self, frame: Frame, node: cst.Call, method: str, b: Bound, recv: Val, target: Target
    ) -> Val | None:
        kind = ARITH_METHODS[method]
        alpha = self.alpha(frame, b)
        if kind == "sub" and "other" in b:
            other_arg, other_val = b["other"]
            result = self.subtract(frame, recv, other_val, target, other_arg.value, method, alpha)
            if method.endswith("_") and target is not None:
                self.write_whole(frame, target, result)
            return result
        if kind == "neg":
            result = self.extend(frame, recv, Op(OpKind.NEG))
        else:
            other = b.get("other")
            k = int_value(other[0].value) if other is not None else None
            if k is None:
                other_val = other[1] if other is not None else EMPTY
                if not recv.traces and not other_val.traces:
                    return EMPTY
                result = self.extend(
                    frame, Val(recv.traces | other_val.traces), Op(OpKind.OPAQUE, method)
                )
            elif kind == "mul":
                result = self.extend(frame, recv, Op(OpKind.MUL, k))
            elif isinstance(alpha, int):
                # x.add(k, alpha=a): x + a * k (a negative addend is a subtraction).
                result = self.plus(frame, recv, k * alpha, method)
            else:
                result = self.outside_model(frame, recv, EMPTY, f"{method}(alpha={alpha})")
        if method.endswith("_") and target is not None:
            self.write_whole(frame, target, result)
        return result

    def method_mask(
        self, frame: Frame, node: cst.Call, method: str, b: Bound, recv: Val, target: Target
    ) -> Val | None:
        """``x.masked_fill(mask, k)``, ``x.where(cond, k)``, ``x.index_fill(dim, i, k)``: a
        mask over the lengths themselves sets rows to ``k`` (a sanitizer when ``k >= 1``);
        another mask with 0 may zero any rows."""
        if method == "where":
            other = b.get("other")
            k = int_value(other[0].value) if other is not None else None
            if target is None or "condition" not in b or k is None:
                return None
            rows = mask_rows(frame.mod, b["condition"][0].value, target, keeps=True)
            if rows is None and k == 0:
                return self.mask_zero(frame, recv, method, methods=True)
            return self.replace_rows(frame, recv, rows, k, "where") if rows is not None else None
        value = b.get("value")
        if method.startswith("masked_fill") and target is not None:
            mask = b.get("mask")
            k = int_value(value[0].value) if value is not None else None
            rows = mask_rows(frame.mod, mask[0].value, target) if mask and k else None
            if rows is not None and k is not None:
                result = self.replace_rows(frame, recv, rows, k, method)
                if method.endswith("_"):
                    self.write_whole(frame, target, result)
                return result
        value_node = value[0].value if value is not None else None
        over_itself = (
            method.startswith("masked_fill")
            and target is not None
            and "mask" in b
            and mask_rows(frame.mod, b["mask"][0].value, target) is not None
        )
        if written_as_zero(value_node) and over_itself:
            # x.masked_fill(x < 1, 0): the rows set to 0 were below 1 already; no new rows.
            result = self.extend(frame, recv, Op(OpKind.PAD_ZERO, ANY_ROWS))
        elif written_as_zero(value_node):
            result = self.mask_zero(frame, recv, method, methods=True)
            if method.endswith("_") and target is not None:
                # Every row is either kept or set to 0: the tensor holds only these values.
                self.write(frame, target, result, strong=True, in_place=True)
            return result
        else:
            result = self.extend(frame, recv, Op(OpKind.OPAQUE, method))
        if method.endswith("_") and target is not None:
            self.write(frame, target, result, strong=False, in_place=True)
        return result

    def method_view(
        self, frame: Frame, node: cst.Call, method: str, b: Bound, recv: Val, target: Target
    ) -> Val | None:
        if method in ("to", "type", "cuda", "cpu") or recv.traces:
            return recv.only_traces()
        return EMPTY

    def method_truncation(
        self, frame: Frame, node: cst.Call, method: str, b: Bound, recv: Val, target: Target
    ) -> Val | None:
        """``(a / b).floor()``, ``(a / b).int()``, ``(a / b).to(torch.int32)``: a floor division
        of ``a`` by ``b``, as ``int(a / b)``; of anything else (``.to(device)`` included) what
        a view gives."""
        dtype = b.get("dtype")
        if _true_division(target) and (
            method not in ("to", "type") or (dtype is not None and _integer_dtype(dtype[0]))
        ):
            return self.truncated_division(frame, target, ("floor_division_methods", method))
        return self.method_view(frame, node, method, b, recv, target)

    def method_collect(
        self, frame: Frame, node: cst.Call, method: str, b: Bound, recv: Val, target: Target
    ) -> Val | None:
        """``lens.append(v)`` (``extend``, ``insert``, ``appendleft``): what ``v`` carries
        joins what the container named by the receiver holds; the call gives None."""
        added = b.get("value")
        if added is None or target is None or base_key(target) is None:
            return EMPTY
        val = added[1]
        if val.traces or val.refs:
            self.write(frame, target, Val(val.traces, val.refs), strong=False, in_place=True)
        return EMPTY

    def method_mapping(
        self, frame: Frame, node: cst.Call, method: str, b: Bound, recv: Val, target: Target
    ) -> Val | None:
        """``d.get(k)`` (``pop``, ``setdefault``): the value at ``k`` of a dict written out
        with string keys, else all it holds, or the default; ``d.values()`` and
        ``d.items()``: containers whose elements a loop goes over (``for fn in
        table.values()`` calls each kernel the table holds). Nothing for a receiver that
        holds nothing (``config.get("x")``): the call is then read as any other."""
        key = dict_key(b["key"][0].value) if "key" in b else None
        if method in ("update", "setdefault") and target is not None and base_key(target):
            # What it puts in (``update``: a mapping and keywords): the dict is one value
            # from here on (its keys are not known).
            if method == "update":
                added = join_all(v for _, v in b.values()) if b else None
            else:
                added = b["default"][1] if "default" in b else None
            if added is not None and (method == "update" or recv.at_key(key or "") is None):
                self.write(frame, target, added.only_traces_and_refs(), strong=False)
        if method == "update":
            return EMPTY  # it gives None
        if recv.empty and recv.elements is None:
            return None
        held = recv.only_traces_and_refs()
        values = recv.elements if recv.keys is not None else (held,)
        if method == "values":
            return Val(recv.traces, recv.refs, values)
        if method == "items":
            pairs = tuple(Val(v.traces, v.refs, (EMPTY, v)) for v in values)
            return Val(recv.traces, recv.refs, pairs)
        found = recv.at_key(key) if key is not None else None
        out = found if found is not None else held
        if "default" in b and found is None:
            out = out.join(b["default"][1])
        return out

    def method_reduce(
        self, frame: Frame, node: cst.Call, method: str, b: Bound, recv: Val, target: Target
    ) -> Val | None:
        return EMPTY

    def view_bases(self, frame: Frame, value: cst.BaseExpression) -> frozenset[str]:
        """The buffers ``value`` is a view of: ``self.buf[:n]``, ``x.view(...)``, aliases."""
        key = view_root(value)
        if key is None:
            return frozenset()
        # `lens = self.seq_lens` names the same tensor: `lens //= 4` changes both.
        return frozenset({key}) | frame.aliases.get(key, frozenset())

    def field_views(self, cls: ClassInfo) -> dict[str, frozenset[str]]:
        """The fields of ``cls`` (its MRO's methods) assigned a view of another field
        (``self.lens_2d = self.lens_buf.unsqueeze(-1)``, a CUDA graph's persistent view),
        by the field they view: a write into that field's rows is seen through them."""
        known = self._field_views.get(id(cls))
        if known is not None and known[0] is cls:
            return known[1]
        found: dict[str, set[str]] = {}
        for c in self.mro(cls):
            for method in c.methods.values():
                for node in (n for stmt in method.body.body for n in statements(stmt)):
                    if type(node) is cst.Assign and len(node.targets) == 1:
                        view = _self_field(node.targets[0].target)
                        root = view_root(node.value)
                        base = _self_field_name(root)
                        if view is not None and base is not None and base != view:
                            found.setdefault(base, set()).add(view)
        out = {base: frozenset(views) for base, views in found.items()}
        self._field_views[id(cls)] = (cls, out)
        return out


_VIEW_METHODS = frozenset(
    {
        "view",
        "unsqueeze",
        "squeeze",
        "reshape",
        "flatten",
        "narrow",
        "expand",
        "view_as",
        "select",
        "t",
        "transpose",
        "permute",
        "unflatten",
        "as_strided",
    }
)


def _repeated(node: cst.BaseExpression) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    """The list and the count of ``[k] * n`` or ``n * [k]``."""
    if type(node) is not cst.BinaryOperation or type(node.operator) is not cst.Multiply:
        return None
    if type(node.left) in (cst.List, cst.Tuple):
        return node.left, node.right
    if type(node.right) in (cst.List, cst.Tuple):
        return node.right, node.left
    return None


def view_root(value: cst.BaseExpression) -> str | None:
    """The name or field ``value`` is a view of, as written (``self.buf`` for
    ``self.buf[:n].unsqueeze(-1)``), or ``value`` itself."""
    return dotted(peel_views(value, _VIEW_METHODS))


def _self_field(node: cst.BaseExpression) -> str | None:
    """``x`` for ``self.x``."""
    return _self_field_name(dotted(node)) if type(node) is cst.Attribute else None


def _self_field_name(key: str | None) -> str | None:
    if key is None or not key.startswith("self.") or key.count(".") != 1:
        return None
    return key[5:]


def _true_division(node: cst.CSTNode | None) -> TypeGuard[cst.BinaryOperation]:
    """``a / b``, as written (the receiver of ``.int()``, the argument of ``int()``)."""
    return type(node) is cst.BinaryOperation and type(node.operator) is cst.Divide


_INTEGER_DTYPES = frozenset(
    f"{m}.{t}"
    for m in ("torch", "numpy", "np")
    for t in ("int", "int8", "int16", "int32", "int64", "long", "short", "uint8")
) | {"int"}


# `xs[i] = v` as a function (a method's is `xs.__setitem__(i, v)`).
_SET_ITEM = frozenset({"operator.setitem", "operator.__setitem__"})
# Methods of a dict that drop what it holds in place.
_REMOVING = frozenset({"pop", "popitem", "clear"})
# Methods of a list that move or drop what it holds in place.
_REORDERING = frozenset({"pop", "reverse", "sort", "remove", "popleft"})
# Functions that reorder the list they are given in place.
_SHUFFLES = frozenset({"random.shuffle", "numpy.random.shuffle"})


# Integer types too narrow for a length: a cast to one may wrap a row to 0 (256 as int8).
_NARROW_TENSOR_TYPES = frozenset({"ByteTensor", "CharTensor", "ShortTensor"})
_NARROW = frozenset(
    {"int8", "uint8", "int16", "uint16", "short", "ushort", "char", "byte", "ubyte"}
    | _NARROW_TENSOR_TYPES  # x.type(torch.cuda.ByteTensor)
)
# numpy's type codes for them, as strings: x.astype("i1").
_NARROW_CODES = frozenset({"i1", "u1", "i2", "u2", "b", "B", "h", "H"})
# Casts that take a dtype as any positional argument (view: as its only one).
_CASTS = frozenset({"to", "type", "astype", "view"})
# Functions and methods that copy their data into a new tensor of the `dtype=` they get
# (numpy's two also of their second positional argument).
_CONVERTING = frozenset(
    {"torch.as_tensor", "torch.tensor", "torch.asarray", "numpy.asarray", "numpy.array"}
    | {"new_tensor"}
)


def _dtype_args(method: str, args: list[tuple[cst.Arg, Val]]) -> list[tuple[cst.Arg, Val]]:
    """The arguments of a cast or a conversion that name a dtype, with their values."""
    given = [(a, v) for a, v in args if a.keyword is not None and a.keyword.value == "dtype"]
    positional = [(a, v) for a, v in args if a.keyword is None and not a.star]
    if method == "view":
        return given + positional if len(positional) == 1 else given
    if method in _CASTS:
        return given + positional
    if method in ("numpy.asarray", "numpy.array"):
        return given + positional[1:2]
    return given


DtypeText = tuple[str, bool]
"""A dtype's text (``torch.int8``, ``i1``) and whether it is a string literal (``"i1"``)."""
DtypeTexts = Callable[[cst.BaseExpression, Val | None], list[DtypeText]]
"""What a dtype argument may name, given its value if known (``TorchModel.dtype_texts``)."""
Seen = tuple[tuple[int, str], ...]
"""The names a dtype's text is being followed through (``TorchModel.written_dtype``)."""


def _own_text(node: cst.BaseExpression, val: Val | None = EMPTY) -> list[DtypeText]:
    """What the argument's own text names, whatever its value (``val``, unread: this is a
    ``DtypeTexts`` that knows no names)."""
    literal = string_value(node)
    return [(literal, True) if literal is not None else (dotted(node) or "", False)]


def _strings_in(node: cst.BaseExpression) -> list[str]:
    """The string literals ``node`` may be: itself, or either arm of a conditional
    expression (``"i1" if small else "i4"``)."""
    if type(node) is cst.IfExp:
        return _strings_in(node.body) + _strings_in(node.orelse)
    text = string_value(node)
    return [text] if text is not None else []


def _made_narrow(value: cst.BaseExpression, texts: DtypeTexts) -> str | None:
    """``torch.empty(n, dtype=torch.int8)``, ``x.short()``, ``torch.cuda.ByteTensor(n)``:
    a tensor made of a type too narrow for a length, and that type's text; None for
    anything else. Its ``dtype=`` is read by its text alone (``texts`` given no value)."""
    if type(value) is not cst.Call:
        return None
    func = dotted(value.func) or ""
    if func.rsplit(".", 1)[-1] in _NARROW_TENSOR_TYPES:
        return func
    args: list[tuple[cst.Arg, Val | None]] = [(a, None) for a in value.args]
    for arg, val in args:  # dtype=torch.int8, or a name for it (not another tensor's type)
        if arg.keyword is not None and arg.keyword.value == "dtype":
            for text, _ in texts(arg.value, val):
                if text.rsplit(".", 1)[-1] in _NARROW:
                    return text
    if type(value.func) is cst.Attribute:
        return narrowing(value.func.attr.value, args, texts)
    return None


def narrowing(method: str, args: list[tuple[cst.Arg, Val | None]], texts: DtypeTexts) -> str | None:
    """``x.short()``, ``x.byte()``, ``x.to(torch.int8)``, ``x.type(torch.ByteTensor)``,
    ``x.astype("i1")``, ``torch.as_tensor(x, dtype=torch.uint8)``: a cast to an integer
    type too narrow for a length; ``x.view(torch.uint8)``: its bytes read as one (int32
    lengths of 1 are [1, 0, 0, 0]). The narrow type's text, or None. A dtype held in a
    name is what ``texts`` says the name was bound to. A cast or a view to int32 or
    wider, or to another tensor's type (``x.to(other.dtype)``, which lengths are cast to
    all the time), is taken to keep them, unless the function made that tensor narrow."""
    if method in ("short", "char", "byte"):
        return f"torch.{method}"
    if method not in _CASTS and method not in _CONVERTING:
        return None
    for arg, val in _dtype_args(method, args):
        for text, literal in texts(arg.value, val):
            last = text.rsplit(".", 1)[-1]
            if method == "view":
                if last in _NARROW and "." in text:  # `torch.uint8`, not a size named `short`
                    return text
            elif last in _NARROW or literal and text in _NARROW_CODES:
                return text
    return None


def _integer_dtype(arg: cst.Arg) -> bool:
    """``.to(torch.int32)``, ``.to(dtype=torch.long)``, ``.type(torch.int64)``: an integer
    dtype, written out (a device, a tensor or a name holding a dtype is not known to be)."""
    return dotted(arg.value) in _INTEGER_DTYPES


def shown_mode(node: cst.BaseExpression) -> str:
    """A ``rounding_mode`` argument as a path step shows it: ``'floor'``, or the name
    (``mode``, which may floor)."""
    text = string_value(node)
    return repr(text) if text is not None else f"{dotted(node) or '...'}, which may floor"


def rounding_mode(node: cst.BaseExpression) -> str | None:
    """A division's ``rounding_mode``: its string, None for ``None`` (true division), and
    ``"<any>"`` for anything else (a name, a call): it may be ``"floor"``, so the
    division is taken to floor."""
    text = string_value(node)
    if text is not None:
        return text
    if type(node) is cst.Name and node.value == "None":
        return None
    return "<any>"
