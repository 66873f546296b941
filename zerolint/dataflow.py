"""The dataflow: how length tensors move from a floor division or zero fill to a kernel call.

Every function is interpreted once over its LibCST tree with its parameters bound to
placeholders, giving a summary: what it returns, what it writes into its arguments, its
``self`` fields and module globals, and which sink calls its values reach. A value is a
set of *traces*: the steps a length took, each step annotated with what it does to the
lengths (an ``Op``). A trace is

* concrete: it starts at a source inside the analysed code (``x // c``, ``torch.zeros``);
* a placeholder: it starts at a parameter, a call's result, a field or a global whose
  contents are not known yet.

Placeholders are resolved only when a trace reaches a sink, so calls into other modules
cost nothing unless their results matter; while bodies are interpreted, only modules that
mention a sink are parsed (``allow_parse`` is set only while paths are resolved). A
parameter placeholder that reaches a sink makes the function a *forwarding sink* (a
wrapper) for that parameter; a function, field or global that holds the sink callable is a
*provider*: both names make other files worth analysing.

Soundness choices (documented for users in the README):
* every branch is followed and joined; ``return``/``raise`` end a branch, ``break`` and
  ``continue`` carry their state to the end or the head of the loop;
* loops run their body twice, enough for lengths that are divided or filled once;
* recursive functions see each other's partial summaries, then are interpreted again;
* a field's value is what the methods leave in it when they return, joined over methods,
  constructor arguments and subclasses;
* an unknown call returns its arguments' traces marked ``opaque`` (the SMT judge then says
  "unknown", still reported) unless it is a known clamp;
* a tensor allocated with ``torch.zeros`` and stored on ``self`` in a constructor is a
  buffer whose rows are defined by later writes, not a zero source by itself;
* padding fills ``buf[n:m] = 0`` (a start that is not 0) only matter together with other
  zero-able rows: on their own they are not reported;
* reductions (``sum``, ``max()``, ``item``, sizes) end a length's path.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import libcst as cst

from zerolint.model import IDENTITY, Op
from zerolint.project import ClassInfo, ModuleInfo, Project, resolve_relative
from zerolint.rules import Rule, SinkSpec

MAX_TRACES = 64
PARAM_PREFIX = "<param>"  # state key standing for the object a parameter was bound to
# field_writes slot for constructor arguments, by the class's short name: <ctor>Class.field
CTOR_PREFIX = "<ctor>"
MAX_DEPTH = 8
# Operators that floor-divide the lengths, written `a // b` or `a //= b`: (op kind, note).
DIVISIONS: dict[type, tuple[str, str]] = {
    cst.FloorDivide: ("floordiv", "floor division"),
    cst.FloorDivideAssign: ("floordiv", "floor division"),
    cst.RightShift: ("rshift", "right shift"),
    cst.RightShiftAssign: ("rshift", "right shift"),
}
RECURSION_ROUNDS = 3
LIVE_KINDS = frozenset({"floordiv", "rshift", "fill_zero"})

VIEW_METHODS = frozenset(
    {
        "unsqueeze",
        "view",
        "reshape",
        "flatten",
        "squeeze",
        "to",
        "int",
        "long",
        "contiguous",
        "clone",
        "expand",
        "expand_as",
        "narrow",
        "view_as",
        "reshape_as",
        "permute",
        "transpose",
        "t",
        "detach",
        "cuda",
        "cpu",
        "type",
        "type_as",
        "select",
        "index_select",
        "repeat",
        "repeat_interleave",
        "tile",
        "flip",
        "roll",
        "unflatten",
        "movedim",
        "as_strided",
        "pin_memory",
        "tolist",
        "numpy",
        "short",
        "float",
        "double",
        "half",
        "bfloat16",
        "unbind",
        "split",
        "chunk",
        "tensor_split",
        "ravel",
        "swapaxes",
        "contiguous_",
        "mT",
        "T",
        "gather",
        "take",
        "masked_select",
        "copy",
        "astype",
        "squeeze_",
        "unsqueeze_",
        "resize_",
    }
)
VIEW_FUNCTIONS = frozenset(
    {
        "torch.unsqueeze",
        "torch.reshape",
        "torch.flatten",
        "torch.squeeze",
        "torch.narrow",
        "torch.clone",
        "torch.as_tensor",
        "torch.tensor",
        "torch.asarray",
        "torch.select",
        "torch.index_select",
        "torch.repeat_interleave",
        "torch.flip",
        "torch.roll",
        "torch.permute",
        "torch.transpose",
        "torch.t",
        "torch.movedim",
        "torch.ravel",
        "torch.from_numpy",
        "torch.atleast_1d",
        "torch.atleast_2d",
        "torch.gather",
        "torch.take",
        "torch.unbind",
        "torch.split",
        "torch.chunk",
        "numpy.asarray",
        "numpy.array",
        "list",
        "tuple",
        "torch.Tensor",
        "torch.IntTensor",
        "torch.LongTensor",
        "torch.detach",
        "copy.copy",
        "copy.deepcopy",
    }
)
CONCAT_FUNCTIONS = frozenset(
    {
        "torch.cat",
        "torch.concat",
        "torch.concatenate",
        "torch.stack",
        "torch.hstack",
        "torch.vstack",
        "torch.column_stack",
        "numpy.concatenate",
        "numpy.stack",
    }
)
# Tensors whose values do not come from their arguments' values.
CONSTANT_FUNCTIONS = frozenset(
    {
        "torch.ones",
        "torch.ones_like",
        "torch.empty",
        "torch.empty_like",
        "torch.arange",
        "torch.randint",
        "torch.rand",
        "torch.randn",
        "torch.eye",
        "torch.empty_strided",
    }
)
REDUCTIONS = frozenset(
    {
        "sum",
        "max",
        "min",
        "item",
        "numel",
        "size",
        "dim",
        "stride",
        "mean",
        "prod",
        "any",
        "all",
        "argmax",
        "argmin",
        "nonzero",
        "count_nonzero",
        "element_size",
        "data_ptr",
        "storage_offset",
        "is_contiguous",
        "__len__",
        "eq",
        "ne",
        "lt",
        "le",
        "gt",
        "ge",
        "equal",
        "isnan",
        "cumsum",
        "diff",
    }
)
SHAPE_ATTRS = frozenset(
    {
        "shape",
        "dtype",
        "device",
        "ndim",
        "is_cuda",
        "layout",
        "nbytes",
        "itemsize",
        "requires_grad",
        "grad",
        "names",
    }
)
ARITH_METHODS = {
    "add": "add",
    "add_": "add",
    "sub": "sub",
    "sub_": "sub",
    "subtract": "sub",
    "mul": "mul",
    "mul_": "mul",
    "multiply": "mul",
    "neg": "neg",
    "neg_": "neg",
    "negative": "neg",
}
BUILTIN_NAMES = frozenset(
    {
        "int",
        "float",
        "max",
        "min",
        "len",
        "range",
        "getattr",
        "setattr",
        "isinstance",
        "print",
        "list",
        "tuple",
        "dict",
        "set",
        "sorted",
        "zip",
        "enumerate",
        "abs",
        "sum",
        "bool",
        "str",
        "type",
        "super",
        "iter",
        "next",
        "map",
        "filter",
        "any",
        "all",
        "round",
        "divmod",
        "hasattr",
        "id",
        "repr",
        "callable",
        "object",
        "reversed",
        "vars",
        "format",
    }
)


# --------------------------------------------------------------------------- values


class RawStep:
    """A step before positions are known: the node, its statement and module, what it does."""

    __slots__ = ("_hash", "_key", "_stable", "mod", "node", "note", "op", "role", "stmt")

    def __init__(
        self,
        mod: ModuleInfo,
        stmt: cst.CSTNode,
        node: cst.CSTNode | None,
        role: str,
        op: Op = IDENTITY,
        note: str = "",
    ) -> None:
        self.mod, self.stmt, self.node = mod, stmt, node
        self.role, self.op, self.note = role, op, note
        self._key = (id(stmt), id(node), role, op)
        self._hash = hash(self._key)
        self._stable: tuple | None = None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RawStep) and self._key == other._key

    def stable_key(self) -> tuple:
        if self._stable is None:
            self._stable = (
                self.mod.name,
                self.mod.statement_order(self.stmt),
                self.role,
                self.op.kind,
                str(self.op.arg),
            )
        return self._stable

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"RawStep({self.mod.code(self.stmt)!r}, {self.role}, {self.op.describe()})"


class Origin:
    """Where a placeholder trace starts; compared by identity."""

    __slots__ = ()


class ParamOrigin(Origin):
    __slots__ = ("func", "name")

    def __init__(self, func: FuncKey, name: str) -> None:
        self.func, self.name = func, name


class CallOrigin(Origin):
    """The result of a call (``index`` selects one element of a returned tuple)."""

    __slots__ = ("index", "site")

    def __init__(self, site: CallSite, index: int | None = None) -> None:
        self.site, self.index = site, index


class EffectOrigin(Origin):
    """What a call wrote into one of its arguments (a parameter name, or an argument's
    position or keyword while the callee is not parsed yet)."""

    __slots__ = ("param", "site")

    def __init__(self, site: CallSite, param: str | int) -> None:
        self.site, self.param = site, param


class FieldOrigin(Origin):
    __slots__ = ("attr", "cls")

    def __init__(self, cls: ClassInfo | str, attr: str) -> None:
        self.cls, self.attr = cls, attr


class GlobalOrigin(Origin):
    __slots__ = ("mod", "name")

    def __init__(self, mod: ModuleInfo, name: str) -> None:
        self.mod, self.name = mod, name


class AttrOrigin(Origin):
    """A field of a value that is itself a field: ``metadata.decode.seq_lens``."""

    __slots__ = ("attr", "base")

    def __init__(self, base: Origin, attr: str) -> None:
        self.base, self.attr = base, attr


class Trace:
    __slots__ = ("_chain", "_hash", "live", "origin", "steps")

    def __init__(
        self,
        origin: Origin | None,
        steps: tuple[RawStep, ...],
        _chain: int | None = None,
        _live: bool | None = None,
    ) -> None:
        self.origin, self.steps = origin, steps
        if _chain is None:  # a hash folded step by step, so that then() extends it in O(1)
            _chain = 0
            for s in steps:
                _chain = hash((_chain, s._hash))
        self._chain = _chain
        self._hash = hash((id(origin), _chain))
        self.live = any(s.op.kind in LIVE_KINDS for s in steps) if _live is None else _live

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Trace) and self.origin is other.origin and self.steps == other.steps
        )

    def __hash__(self) -> int:
        return self._hash

    @property
    def concrete(self) -> bool:
        return self.origin is None

    def then(self, step: RawStep) -> Trace:
        last = self.steps[-1] if self.steps else None
        if (
            last is not None
            and last.stmt is step.stmt
            and (last == step or step.op is IDENTITY and step.role in ("flow", "return"))
        ):
            return self  # one line per statement unless the statement changes the values
        return Trace(
            self.origin,
            self.steps + (step,),
            hash((self._chain, step._hash)),
            self.live or step.op.kind in LIVE_KINDS,
        )

    def keep_order(self) -> tuple:
        """Which traces to keep when there are too many: live ones, short ones; ties broken
        by where the steps are, never by hashes (which change from run to run)."""
        return (not self.live, len(self.steps), tuple(s.stable_key() for s in self.steps))

    def key_source(self) -> RawStep | None:
        for step in self.steps:
            if step.op.kind in LIVE_KINDS:
                return step
        return None


# Refs: what a value may be when it is called or has attributes taken.


@dataclass(frozen=True, eq=False)
class SinkRef:
    spec: SinkSpec
    bound: Val | None = None  # lengths already bound by functools.partial


@dataclass(frozen=True, eq=False)
class FuncRef:
    key: FuncKey
    self_val: Val | None = None
    bound: tuple[Val, ...] = ()
    bound_kw: tuple[tuple[str, Val], ...] = ()


@dataclass(frozen=True, eq=False)
class ClassRef:
    cls: ClassInfo


@dataclass(frozen=True, eq=False)
class InstRef:
    cls: ClassInfo | str  # a qualified name until its module is parsed


@dataclass(frozen=True, eq=False)
class ModRef:
    name: str


@dataclass(frozen=True, eq=False)
class ExtRef:
    name: str  # a qualified name outside the checked tree: torch.clamp, max, getattr


@dataclass(frozen=True, eq=False)
class LambdaRef:
    node: cst.Lambda
    frame: Frame
    stmt: cst.CSTNode  # where the lambda is written


@dataclass(frozen=True, eq=False)
class LazyRef:
    """A name inside the checked tree whose module has not been parsed: parsing waits
    until a path needs to know what the name is."""

    qual: str


@dataclass(frozen=True, eq=False)
class PendingRef:
    """The callable returned by a call, a field or a global: resolved when called."""

    origin: Origin


Ref = SinkRef | FuncRef | ClassRef | InstRef | ModRef | ExtRef | LambdaRef | LazyRef | PendingRef


class Val:
    __slots__ = ("elements", "refs", "traces")

    def __init__(
        self,
        traces: Iterable[Trace] = (),
        refs: Iterable[Ref] = (),
        elements: tuple[Val, ...] | None = None,
    ) -> None:
        ts = frozenset(traces)
        if len(ts) > MAX_TRACES:
            # Keep the live ones first, then the shortest: enough to report and judge.
            ts = frozenset(sorted(ts, key=Trace.keep_order)[:MAX_TRACES])
        self.traces = ts
        self.refs = frozenset(refs)
        self.elements = elements

    @property
    def empty(self) -> bool:
        return not self.traces and not self.refs

    def join(self, other: Val) -> Val:
        if other is self or other.empty and other.elements is None:
            return self
        if self.empty and self.elements is None:
            return other
        elements = None
        if (
            self.elements is not None
            and other.elements is not None
            and len(self.elements) == len(other.elements)
        ):
            elements = tuple(a.join(b) for a, b in zip(self.elements, other.elements))
        return Val(self.traces | other.traces, self.refs | other.refs, elements)

    def then(self, step: RawStep) -> Val:
        elements = None if self.elements is None else tuple(e.then(step) for e in self.elements)
        if not self.traces:
            return Val((), self.refs, elements)
        return Val((t.then(step) for t in self.traces), self.refs, elements)

    def only_traces(self) -> Val:
        return Val(self.traces)

    def element(self, i: int) -> Val:
        if self.elements is not None and 0 <= i < len(self.elements):
            return self.elements[i]
        out = []
        for t in self.traces:
            if isinstance(t.origin, CallOrigin) and t.origin.index is None and not t.steps:
                out.append(Trace(CallOrigin(t.origin.site, i), ()))
            else:
                out.append(t)
        return Val(out, self.refs)


EMPTY = Val()


def join_all(vals: Iterable[Val]) -> Val:
    out = EMPTY
    for v in vals:
        out = out.join(v)
    return out


# --------------------------------------------------------------------------- functions


@dataclass(frozen=True, eq=False)
class FuncKey:
    mod: ModuleInfo
    node: cst.FunctionDef | None  # None: the module's top-level code
    cls: ClassInfo | None = None

    @property
    def name(self) -> str:
        if self.node is None:
            return "<module>"
        prefix = f"{self.cls.qualname}." if self.cls is not None else ""
        return prefix + self.node.name.value

    def params(self) -> list[cst.Param]:
        if self.node is None:
            return []
        p = self.node.params
        return [
            *p.posonly_params,
            *p.params,
            *([p.star_arg] if isinstance(p.star_arg, cst.Param) else []),
            *p.kwonly_params,
            *([p.star_kwarg] if p.star_kwarg else []),
        ]

    @property
    def is_classmethod(self) -> bool:
        return self.node is not None and any(
            isinstance(d.decorator, cst.Name) and d.decorator.value == "classmethod"
            for d in self.node.decorators
        )

    @property
    def is_method(self) -> bool:
        if self.cls is None or self.node is None:
            return False
        for d in self.node.decorators:
            if isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod":
                return False
        return True


@dataclass(eq=False)
class CallSite:
    callee: FuncKey | None  # None until a lazily named callee is parsed
    args: dict[str, Val]
    step: RawStep  # the call in the caller
    lazy: str | None = None
    raw: list[tuple[cst.Arg, Val]] | None = None
    bound: bool = True
    frame: Frame | None = None
    # The caller's operand for each parameter (a literal or a dotted name): a divisor the
    # callee names by its parameter is the caller's literal on this path.
    operands: dict[str, int | str] = field(default_factory=dict)

    def rebind(self, steps: tuple[RawStep, ...]) -> tuple[RawStep, ...]:
        """The callee's steps with its parameter symbols replaced by this call's operands."""
        if not self.operands:
            return steps
        out = []
        for step in steps:
            arg = step.op.arg
            if isinstance(arg, str) and arg in self.operands:
                step = RawStep(
                    step.mod,
                    step.stmt,
                    step.node,
                    step.role,
                    Op(step.op.kind, self.operands[arg]),
                    step.note,
                )
            out.append(step)
        return tuple(out)

    def landing(self) -> RawStep:
        """The call's line as a plain step: where lengths made in the callee come out."""
        return RawStep(self.step.mod, self.step.stmt, self.step.node, "flow")


@dataclass(eq=False)
class SinkHit:
    """A value reaching a sink argument: where, through which call, with what traces."""

    spec: SinkSpec
    mod: ModuleInfo
    stmt: cst.CSTNode
    call: cst.Call
    arg_node: cst.BaseExpression | None
    val: Val
    func: FuncKey


@dataclass(eq=False)
class Summary:
    key: FuncKey
    returns: Val = EMPTY
    return_elements: tuple[Val, ...] | None = None
    hits: list[SinkHit] = field(default_factory=list)
    field_writes: dict[str, Val] = field(default_factory=dict)
    global_writes: dict[str, Val] = field(default_factory=dict)
    param_effects: dict[str, Val] = field(default_factory=dict)
    # Parameters that reach a sink: name -> the hits carrying their placeholder traces.
    forwards: dict[str, list[SinkHit]] = field(default_factory=dict)
    # Parameters called as functions: name -> (statement, call, evaluated arguments), so a
    # caller that passes a sink as that parameter can replay the call as a sink call.
    param_calls: dict[str, list[tuple[cst.CSTNode, cst.Call, list[tuple[cst.Arg, Val]]]]] = field(
        default_factory=dict
    )


class Frame:
    """The abstract state of one function activation."""

    def __init__(self, key: FuncKey, summary: Summary, parent: Frame | None = None) -> None:
        self.key = key
        self.mod = key.mod
        self.summary = summary
        self.parent = parent
        self.state: dict[str, Val] = {}
        self.aliases: dict[str, frozenset[str]] = {}  # name -> buffers it is a view of
        self.globals_declared: set[str] = set()
        self.local_funcs: dict[str, cst.FunctionDef] = {}
        self.dead = False
        self.returns: list[Val] = []
        # The states in which the function returns (for the fields it leaves behind), the
        # break/continue states of the loops being run, and the fields it writes.
        self.exits: list[dict[str, Val]] = []
        self.loops: list[tuple[list[Frame], list[Frame]]] = []
        self.fields: set[str] = set()
        # Constructor calls evaluated here: call node id -> (field, value) pairs.
        self.constructed: dict[int, list[tuple[str, Val]]] = {}
        self.stmt: cst.CSTNode = key.node if key.node is not None else key.mod.module

    def fork(self) -> Frame:
        f = Frame.__new__(Frame)
        f.key, f.mod, f.summary, f.parent = self.key, self.mod, self.summary, self.parent
        f.state = dict(self.state)
        f.aliases = dict(self.aliases)
        f.globals_declared = self.globals_declared
        f.local_funcs = self.local_funcs
        f.dead = self.dead
        f.returns = self.returns
        f.exits = self.exits
        f.loops = self.loops
        f.constructed = self.constructed
        f.fields = self.fields
        f.stmt = self.stmt
        return f

    def absorb(self, *branches: Frame) -> None:
        """Join the branches' states into this frame (dead branches contribute nothing)."""
        live = [b for b in branches if not b.dead]
        if not live:
            self.dead = True
            return
        self.dead = False
        keys: set[str] = set()
        for b in live:
            keys.update(b.state)
        merged: dict[str, Val] = {}
        for k in keys:
            vals = [b.state[k] for b in live if k in b.state]
            merged[k] = join_all(vals)
        self.state = merged
        aliases: dict[str, frozenset[str]] = {}
        for b in live:
            for k, v in b.aliases.items():
                aliases[k] = aliases.get(k, frozenset()) | v
        self.aliases = aliases


def dotted(node: cst.CSTNode | None) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None


def int_value(node: cst.CSTNode | None) -> int | None:
    """The value of an integer literal (``4``, ``-1``, ``(1)``), else None."""
    if isinstance(node, cst.Integer):
        try:
            return int(node.value.replace("_", ""), 0)
        except ValueError:
            return None
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = int_value(node.expression)
        return -inner if inner is not None else None
    if isinstance(node, cst.Float):
        try:
            f = float(node.value)
        except ValueError:
            return None
        return int(f) if f.is_integer() else None
    return None


def string_value(node: cst.CSTNode | None) -> str | None:
    """The text of a plain string literal (``"floor"``); None for anything else."""
    if isinstance(node, cst.SimpleString):
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
    if not isinstance(node, cst.Call):
        return None
    name = (
        node.func.attr.value
        if isinstance(node.func, cst.Attribute)
        else node.func.value
        if isinstance(node.func, cst.Name)
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
        if isinstance(node, cst.Subscript):
            node = node.value
        elif (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and (node.func.attr.value in VIEW_METHODS)
        ):
            node = node.func.value
        elif isinstance(node, cst.Attribute) and node.attr.value in ("data", "T", "mT"):
            node = node.value
        else:
            break
    return dotted(node)


def slice_cell(frame: Frame, target: cst.CSTNode, key: str) -> str | None:
    """The state key of a slice written or read as a whole: ``self.buf[:n]``."""
    if not isinstance(target, cst.Subscript) or dotted(target.value) != key:
        return None
    if not any(isinstance(el.slice, cst.Slice) for el in target.slice):
        return None
    return frame.mod.code(target)


def row_slice(target: cst.CSTNode, key: str) -> str | tuple | None:
    """How a subscript write to ``key`` covers its rows: "all" for ``buf[:]``/``buf[...]``,
    (lower, upper) for ``buf[:n]`` (rows from 0), None otherwise."""
    if (
        not isinstance(target, cst.Subscript)
        or dotted(target.value) != key
        or len(target.slice) != 1
    ):
        return None
    part = target.slice[0].slice
    if isinstance(part, cst.Index) and isinstance(part.value, cst.Ellipsis):
        return "all"
    if isinstance(part, cst.Slice) and part.step is None:
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
    if isinstance(first, cst.Slice):
        return first.lower, first.upper
    return None


def is_none(node: cst.CSTNode | None) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def is_zero(node: cst.CSTNode | None) -> bool:
    return int_value(node) == 0


# Which rows a mask over lengths ``x`` selects: ``x == 0`` the zero rows, ``x < 1`` the rows
# below 1; and the complements a ``torch.where(keep, x, k)`` keeps.
_MASK_PICKS = {("==", 0): "zero", ("<", 1): "below1", ("<=", 0): "below1"}
_MASK_KEEPS = {("!=", 0): "zero", (">", 0): "below1", (">=", 1): "below1"}
_MIRRORED = {"==": "==", "!=": "!=", "<": ">", ">": "<", "<=": ">=", ">=": "<="}
_COMPARISON_TEXT = {
    cst.Equal: "==",
    cst.NotEqual: "!=",
    cst.LessThan: "<",
    cst.GreaterThan: ">",
    cst.LessThanEqual: "<=",
    cst.GreaterThanEqual: ">=",
}


def mask_rows(
    mod: ModuleInfo, cond: cst.BaseExpression, subject: cst.BaseExpression, *, keeps: bool = False
) -> str | None:
    """``"zero"`` or ``"below1"`` when ``cond`` compares ``subject`` (same code) with a
    constant so as to pick (``keeps``: to keep) exactly those rows, else None."""
    if not isinstance(cond, cst.Comparison) or len(cond.comparisons) != 1:
        return None
    target = cond.comparisons[0]
    operator = _COMPARISON_TEXT.get(type(target.operator))
    if operator is None:
        return None
    subject_code = mod.code(subject)
    left, right = cond.left, target.comparator
    if int_value(right) is not None and mod.code(left) == subject_code:
        key = (operator, int_value(right))
    elif int_value(left) is not None and mod.code(right) == subject_code:
        key = (_MIRRORED[operator], int_value(left))
    else:
        return None
    return (_MASK_KEEPS if keeps else _MASK_PICKS).get(key)  # type: ignore[arg-type]


def replacement_op(rows: str, value: int) -> Op:
    """The row operation of setting the ``rows`` a mask picked to ``value``."""
    if rows == "below1" and value == 1:
        return Op("clamp_min", 1)
    return Op("zero_to" if rows == "zero" else "below1_to", value)


class Analyzer:
    """Interprets functions into summaries and collects the values reaching sinks."""

    def __init__(
        self,
        project: Project,
        rules: Sequence[Rule],
        *,
        extra_sinks: Sequence[SinkSpec] = (),
        extra_sanitizers: Sequence[str] = (),
        whole_program: bool = True,
    ) -> None:
        self.project = project
        self.rules = tuple(rules)
        specs = [s for r in self.rules for s in r.sinks] + list(extra_sinks)
        self.sinks_by_name: dict[str, SinkSpec] = {}
        self.sinks_by_qual: dict[str, SinkSpec] = {}
        for s in specs:
            self.sinks_by_name.setdefault(s.function, s)
            for q in s.qualnames():
                self.sinks_by_qual[q] = s
        self.guarded_quals = frozenset(q for s in specs for q in s.guarded_qualnames())
        merged: dict[str, set[str]] = {}
        for r in self.rules:
            for table in (r.sources, r.sanitizers):
                for k, v in table.items():
                    merged.setdefault(k, set()).update(v)
        self.names = {k: frozenset(v) for k, v in merged.items()}
        self.extra_sanitizers = frozenset(extra_sanitizers) | self.names.get(
            "at_least_one", frozenset()
        )
        self.tensor_methods = (
            VIEW_METHODS
            | REDUCTIONS
            | frozenset(ARITH_METHODS)
            | self.names.get("clamp_methods", frozenset())
            | self.names.get("floor_division_methods", frozenset())
            | self.names.get("zero_alloc_methods", frozenset())
            | self.names.get("full_methods", frozenset())
            | {
                "copy_",
                "zero_",
                "fill_",
                "masked_fill",
                "masked_fill_",
                "where",
                "index_fill",
                "index_fill_",
            }
        )
        self.whole_program = whole_program
        self.summaries: dict[FuncKey, Summary] = {}
        self._provisional: dict[FuncKey, Summary] = {}
        self._mention_cache: dict[tuple[str, bool], list[ModuleInfo]] = {}
        self._recursion_seen = False
        self._rerun: list[FuncKey] = []
        self.allow_parse = False
        self._field_cache: dict[tuple[int, str], list[Val]] = {}
        self._mro_cache: dict[int, list[ClassInfo]] = {}
        self._origin_cache: dict[int, list[Trace]] = {}
        self._keys: dict[int, FuncKey] = {}
        self._in_progress: set[FuncKey] = set()
        self._resolving: set[int] = set()
        # Modules whose functions may forward to a sink: analysed eagerly when called.
        self.sink_capable: set[str] = set()
        self.wrapper_names: set[str] = set()

    # ------------------------------------------------------------------ entry points

    def func_key(
        self, mod: ModuleInfo, node: cst.FunctionDef | None, cls: ClassInfo | None = None
    ) -> FuncKey:
        ident = id(node) if node is not None else id(mod)
        key = self._keys.get(ident)
        if key is None:
            key = FuncKey(mod, node, cls)
            self._keys[ident] = key
        return key

    def module_functions(self, mod: ModuleInfo) -> Iterator[FuncKey]:
        yield self.func_key(mod, None)
        for fn in mod.functions.values():
            yield self.func_key(mod, fn)
        for ci in mod.classes.values():
            for m in ci.methods.values():
                yield self.func_key(mod, m, ci)

    def summary(self, key: FuncKey) -> Summary:
        """What ``key`` does to lengths. Recursive functions (directly or across modules)
        first see each other's partial summaries, then are interpreted again until their
        summaries stop changing (a few rounds: enough for wrappers calling each other)."""
        found = self.summaries.get(key)
        if found is not None:
            return found
        if key in self._in_progress or len(self._in_progress) > MAX_DEPTH * 4:
            self._recursion_seen = True
            return self._provisional.get(key) or Summary(key)
        outer_seen, self._recursion_seen = self._recursion_seen, False
        self._summarise(key)
        if self._recursion_seen:
            self._rerun.append(key)
        self._recursion_seen = self._recursion_seen or outer_seen
        if not self._in_progress:
            for _ in range(RECURSION_ROUNDS):
                again, self._rerun = self._rerun, []
                if not again:
                    break
                for k in again:
                    self.summaries.pop(k, None)
                    self._summarise(k)
            self._rerun = []
            self._recursion_seen = False
        return self.summaries[key]

    def _summarise(self, key: FuncKey) -> Summary:
        self._in_progress.add(key)
        # Interpreting a body never parses modules that cannot reach a sink; only paths
        # being resolved do (allow_parse), and only for what they need.
        allow, self.allow_parse = self.allow_parse, False
        try:
            summary = self._interpret(key)
        finally:
            self._in_progress.discard(key)
            self.allow_parse = allow
        self.summaries[key] = summary
        self._provisional[key] = summary
        self.note_providers(summary)
        return summary

    def note_providers(self, summary: Summary) -> None:
        """Names through which other files can reach a sink without naming it: wrappers
        (forward a parameter to it), resolvers (return it), fields and globals (hold it)."""
        key = summary.key
        found = []
        if key.node is not None and (
            any(summary.forwards.values()) or _holds_sink(summary.returns)
        ):
            found.append(key.node.name.value)
        for table in (summary.field_writes, summary.global_writes):
            for name, val in table.items():
                if not name.startswith(CTOR_PREFIX) and _holds_sink(val):
                    found.append(name)
        # A private module global (`_impl`) is used where it is defined, not imported: no
        # other file needs reading for it.
        self.wrapper_names.update(
            n
            for n in found
            if not (
                n.startswith("_")
                and key.node is None
                or n.startswith("_")
                and n in key.mod.declared_globals
            )
        )

    def forget_resolutions(self) -> None:
        """Drop what was resolved without parsing, before resolving again with parsing."""
        self._field_cache.clear()
        self._origin_cache.clear()
        self._mro_cache.clear()

    def reset_summaries(self) -> None:
        self.summaries.clear()
        self._provisional.clear()
        self._field_cache.clear()
        self._mro_cache.clear()
        self._origin_cache.clear()

    # ------------------------------------------------------------------ interpretation

    def _interpret(self, key: FuncKey) -> Summary:
        summary = Summary(key)
        frame = Frame(key, summary)
        if key.node is None:
            body: Sequence[cst.CSTNode] = key.mod.module.body
        else:
            for p in key.params():
                name = p.name.value
                frame.state[name] = Val(
                    [Trace(ParamOrigin(key, name), ())], self._param_refs(key, p)
                )
                # Writes through this name reach the caller's object until it is rebound.
                frame.aliases[name] = frozenset({PARAM_PREFIX + name})
            body = key.node.body.body
        self.exec_block(frame, body)
        if not frame.dead:
            frame.exits.append({k: frame.state[k] for k in frame.fields if k in frame.state})
        for exit_state in frame.exits:
            for k, val in exit_state.items():
                attr = k.split(".", 1)[1]
                summary.field_writes[attr] = summary.field_writes.get(attr, EMPTY).join(val)
        summary.returns = join_all(frame.returns)
        elems = [v.elements for v in frame.returns]
        if elems and all(e is not None for e in elems) and len({len(e) for e in elems}) == 1:  # type: ignore[arg-type]
            summary.return_elements = tuple(
                join_all(e[i] for e in elems)
                for i in range(len(elems[0]))  # type: ignore[index]
            )
        for hit in summary.hits:
            for t in hit.val.traces:
                if isinstance(t.origin, ParamOrigin) and t.origin.func is key:
                    summary.forwards.setdefault(t.origin.name, []).append(hit)
        return summary

    def _param_refs(self, key: FuncKey, p: cst.Param) -> list[Ref]:
        name = p.name.value
        refs: list[Ref] = []
        if name in self.sinks_by_name:
            refs.append(SinkRef(self.sinks_by_name[name]))
        if key.is_method and key.params() and key.params()[0] is p and key.cls is not None:
            refs.append(ClassRef(key.cls) if key.is_classmethod else InstRef(key.cls))
        elif p.annotation is not None:
            ann = p.annotation.annotation
            if isinstance(ann, cst.SimpleString):
                ann_name = string_value(ann)
            else:
                ann_name = dotted(ann)
            if ann_name:
                for ref in self.lookup_dotted(key.mod, ann_name):
                    if isinstance(ref, ClassRef):
                        refs.append(InstRef(ref.cls))
                    elif isinstance(ref, LazyRef):
                        refs.append(InstRef(ref.qual))
        return refs

    # ------------------------------------------------------------------ statements

    def exec_block(self, frame: Frame, body: Sequence[cst.CSTNode]) -> None:
        for stmt in body:
            if frame.dead:
                return
            self.exec_stmt(frame, stmt)

    def exec_stmt(self, frame: Frame, stmt: cst.CSTNode) -> None:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if frame.dead:
                    return
                frame.stmt = small
                self.exec_small(frame, small)
            return
        frame.stmt = stmt
        if isinstance(stmt, cst.If):
            self.eval(frame, stmt.test)
            then = frame.fork()
            self.exec_suite(then, stmt.body)
            other = frame.fork()
            if isinstance(stmt.orelse, cst.If):
                self.exec_stmt(other, stmt.orelse)
            elif stmt.orelse is not None:
                self.exec_suite(other, stmt.orelse.body)
            frame.absorb(then, other)
        elif isinstance(stmt, (cst.For, cst.While)):
            self.exec_loop(frame, stmt)
        elif isinstance(stmt, (cst.Try, cst.TryStar)):
            start = frame.fork()
            body = frame.fork()
            self.exec_suite(body, stmt.body)
            if stmt.orelse is not None:
                self.exec_suite(body, stmt.orelse.body)
            branches = [body]
            for handler in stmt.handlers:
                h = start.fork()
                h.absorb(start, body)
                h.dead = False
                if handler.name is not None and isinstance(handler.name.name, cst.Name):
                    h.state[handler.name.name.value] = EMPTY
                self.exec_suite(h, handler.body)
                branches.append(h)
            frame.absorb(*branches)
            if stmt.finalbody is not None:
                was_dead = frame.dead
                frame.dead = False
                self.exec_suite(frame, stmt.finalbody.body)
                frame.dead = frame.dead or was_dead
        elif isinstance(stmt, cst.With):
            for item in stmt.items:
                val = self.eval(frame, item.item)
                if item.asname is not None:
                    self.assign(frame, item.asname.name, val, item.item)
            self.exec_suite(frame, stmt.body)
        elif isinstance(stmt, cst.FunctionDef):
            frame.local_funcs[stmt.name.value] = stmt
            frame.state[stmt.name.value] = Val((), [FuncRef(self.func_key(frame.mod, stmt))])
        elif isinstance(stmt, cst.Match):
            self.eval(frame, stmt.subject)
            branches = []
            for case in stmt.cases:
                b = frame.fork()
                self.exec_suite(b, case.body)
                branches.append(b)
            frame.absorb(frame.fork(), *branches)
        # ClassDef inside a function and other statements carry no lengths.

    def exec_suite(self, frame: Frame, suite: cst.BaseSuite) -> None:
        self.exec_block(frame, suite.body)

    def exec_loop(self, frame: Frame, stmt: cst.For | cst.While) -> None:
        before = frame.fork()
        body = frame.fork()
        breaks: list[Frame] = []
        for _ in range(2):  # a second pass carries values around the back edge
            continues: list[Frame] = []
            frame.loops.append((breaks, continues))
            if isinstance(stmt, cst.For):
                it = self.eval(body, stmt.iter)
                self.assign(
                    body,
                    stmt.target,
                    it.only_traces().then(self.step(body, stmt, "flow")),
                    stmt.iter,
                )
            else:
                self.eval(body, stmt.test)
            self.exec_suite(body, stmt.body)
            frame.loops.pop()
            merged = before.fork()
            merged.absorb(before, body, *continues)
            body = merged
        frame.absorb(before, body, *breaks)
        if stmt.orelse is not None:
            self.exec_suite(frame, stmt.orelse.body)

    def exec_small(self, frame: Frame, stmt: cst.CSTNode) -> None:
        if isinstance(stmt, cst.Assign):
            val = self.eval(frame, stmt.value)
            for target in stmt.targets:
                self.assign(frame, target.target, val, stmt.value)
        elif isinstance(stmt, cst.AnnAssign):
            if stmt.value is not None:
                self.assign(frame, stmt.target, self.eval(frame, stmt.value), stmt.value)
        elif isinstance(stmt, cst.AugAssign):
            self.exec_augassign(frame, stmt)
        elif isinstance(stmt, cst.Expr):
            self.eval(frame, stmt.value)
        elif isinstance(stmt, cst.Return):
            val = self.eval(frame, stmt.value) if stmt.value is not None else EMPTY
            frame.returns.append(val.then(self.step(frame, stmt, "return")))
            frame.exits.append({k: frame.state[k] for k in frame.fields if k in frame.state})
            frame.dead = True
        elif isinstance(stmt, cst.Raise):
            frame.dead = True
        elif isinstance(stmt, (cst.Break, cst.Continue)) and frame.loops:
            breaks, continues = frame.loops[-1]
            (breaks if isinstance(stmt, cst.Break) else continues).append(frame.fork())
            frame.dead = True
        elif isinstance(stmt, cst.Global):
            for n in stmt.names:
                frame.globals_declared.add(n.name.value)
        elif isinstance(stmt, cst.Del):
            target = stmt.target
            if isinstance(target, cst.Name):
                frame.state[target.value] = EMPTY

    def exec_augassign(self, frame: Frame, stmt: cst.AugAssign) -> None:
        current = self.eval(frame, stmt.target)
        rhs = self.eval(frame, stmt.value)
        op = stmt.operator
        division = DIVISIONS.get(type(op))
        if division is not None:
            kind, note = division
            op_ = Op(kind, self.operand(frame, stmt.value))
            new = self.source(frame, current, op_, stmt.target, note=note)
        else:
            new = self.arith(frame, current, rhs, op, stmt.value, left_node=stmt.target)
        # Tensors are updated in place: the buffers the target views change too.
        self.write_whole(frame, stmt.target, new)

    # ------------------------------------------------------------------ writes

    def step(
        self, frame: Frame, node: cst.CSTNode | None, role: str, op: Op = IDENTITY, note: str = ""
    ) -> RawStep:
        return RawStep(frame.mod, frame.stmt, node, role, op, note)

    def assign(
        self,
        frame: Frame,
        target: cst.BaseExpression,
        val: Val,
        value_node: cst.BaseExpression | None,
    ) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            for i, el in enumerate(target.elements):
                sub = val.element(i) if not isinstance(el, cst.StarredElement) else val
                self.assign(frame, el.value, sub, None)
            return
        if isinstance(target, cst.StarredElement):
            self.assign(frame, target.value, val, value_node)
            return
        flowed = val.then(self.step(frame, None, "flow"))
        flowed = Val(flowed.traces, flowed.refs, val.elements)
        if isinstance(target, cst.Name):
            if value_node is not None:
                views = self.view_bases(frame, value_node)
                if views:
                    frame.aliases[target.value] = views - {target.value}
                else:
                    frame.aliases.pop(target.value, None)
                if self.is_constructor_alloc(frame, value_node):
                    flowed = Val((), flowed.refs)
            self.write(frame, target, flowed, strong=True)
            if value_node is not None:
                self.bind_fields(frame, target.value, value_node)
            return
        if isinstance(target, cst.Subscript) and is_zero(value_node):
            self.zero_fill(frame, target)
            return
        if isinstance(target, cst.Subscript) and self.mask_assign(frame, target, value_node):
            return
        if (
            isinstance(target, cst.Attribute)
            and value_node is not None
            and self.is_constructor_alloc(frame, value_node)
        ):
            flowed = Val((), flowed.refs)
        self.write(frame, target, flowed, strong=isinstance(target, (cst.Name, cst.Attribute)))

    def mask_assign(
        self, frame: Frame, target: cst.Subscript, value_node: cst.BaseExpression | None
    ) -> bool:
        """``x[x == 0] = k`` / ``x[x < 1] = k``: in place, the rows a mask picks become ``k``."""
        value = int_value(value_node)
        if value is None or len(target.slice) != 1:
            return False
        index = target.slice[0].slice
        if not isinstance(index, cst.Index):
            return False
        rows = mask_rows(frame.mod, index.value, target.value)
        if rows is None:
            return False
        result = self.replace_rows(frame, self.eval(frame, target.value), rows, value)
        self.write_whole(frame, target.value, result)
        return True

    def write_whole(self, frame: Frame, target: cst.BaseExpression, val: Val) -> None:
        """An in-place operation replaced every row of ``target``: the old value is gone
        when ``target`` names a variable or an attribute (a slice or a call is joined)."""
        self.write(frame, target, val, strong=dotted(target) is not None, in_place=True)

    def is_constructor_alloc(self, frame: Frame, value: cst.BaseExpression) -> bool:
        """``self.buf = torch.zeros(...)`` in a constructor allocates a buffer, fills nothing."""
        node = frame.key.node
        if node is None or node.name.value not in (
            "__init__",
            "__post_init__",
            "__new__",
            "setup",
            "_init_buffers",
        ):
            return False
        if not isinstance(value, cst.Call):
            return False
        name = self.qualname(frame, value.func) or ""
        alloc = self.names.get("zero_alloc", frozenset()) | self.names.get("full", frozenset())
        return name in alloc or name.rsplit(".", 1)[-1] in self.names.get("zero_alloc_methods", ())

    def write(
        self,
        frame: Frame,
        target: cst.BaseExpression,
        val: Val,
        *,
        strong: bool,
        in_place: bool = False,
    ) -> None:
        """Store ``val`` into what ``target`` names; slices and in-place updates also change
        the buffers the target is a view of, and the objects parameters were bound to."""
        key = base_key(target)
        if key is None:
            return
        exact = key == dotted(target)
        rows = row_slice(target, key)
        if rows == "all":
            exact, strong = True, True  # buf[:] = x writes every row
        cell = slice_cell(frame, target, key)
        if strong and exact:
            frame.state[key] = val
        else:
            current = self.read_key(frame, key)
            if isinstance(rows, tuple):
                current = self.overwrite_zero_rows(frame, current, rows[1])
            frame.state[key] = current.join(val)
        # What is in `buf[:n]` after writing exactly `buf[:n]`, for reads of the same slice;
        # any other write to the buffer may overlap it, so it forgets the slices it knew.
        for known in [k for k in frame.state if k.startswith(key + "[") and k != cell]:
            del frame.state[known]
        if cell is not None:
            frame.state[cell] = val
        self.record_write(frame, key, frame.state[key] if strong and exact else val)
        if in_place or not exact:
            for base in frame.aliases.get(key, frozenset()):
                if base.startswith(PARAM_PREFIX):
                    pname = base[len(PARAM_PREFIX) :]
                    prev = frame.summary.param_effects.get(pname, EMPTY)
                    frame.summary.param_effects[pname] = prev.join(val.only_traces())
                    continue
                frame.state[base] = self.read_key(frame, base).join(val)
                self.record_write(frame, base, val)
        if "." not in key and (key in frame.globals_declared or frame.key.node is None):
            prev = frame.summary.global_writes.get(key, EMPTY)
            frame.summary.global_writes[key] = prev.join(val)

    def overwrite_zero_rows(self, frame: Frame, current: Val, upper: cst.BaseExpression) -> Val:
        """``lens = torch.zeros(m); lens[:n] = real``: the zeros left are padding from n on."""
        traces = []
        for t in current.traces:
            if t.origin is None and len(t.steps) == 1 and t.steps[0].op.kind == "fill_zero":
                step = self.step(
                    frame, None, "flow", Op("pad_zero", operand(upper)), "padding rows stay 0"
                )
                traces.append(Trace(None, (step,)))
            else:
                traces.append(t)
        return Val(traces, current.refs, current.elements)

    def record_write(self, frame: Frame, key: str, val: Val) -> None:
        if key.startswith("self.") and key.count(".") == 1 and frame.key.cls is not None:
            frame.fields.add(key)

    def bind_fields(self, frame: Frame, name: str, value: cst.BaseExpression) -> None:
        """``m = Meta(seq_lens=x)``: remember ``m.seq_lens`` for reads in this function (the
        constructor call, evaluated already, left its fields in ``frame.constructed``)."""
        for field_name, arg_val in frame.constructed.get(id(value), ()):
            frame.state[f"{name}.{field_name}"] = arg_val

    def constructor_fields(
        self, cls: ClassInfo, args: list[tuple[cst.Arg, Val]]
    ) -> Iterator[tuple[str, Val]]:
        """(field, value) for each evaluated constructor argument: by keyword, or by
        position among the dataclass fields (or ``__init__``'s parameters)."""
        positional = list(cls.fields)
        init = cls.methods.get("__init__")
        if init is not None:
            params = self.func_key(cls.module, init, cls).params()[1:]
            positional = [p.name.value for p in params]
        i = 0
        for arg, val in args:
            if arg.star:
                continue
            if arg.keyword is not None:
                yield arg.keyword.value, val
            elif i < len(positional):
                yield positional[i], val
                i += 1

    def zero_fill(self, frame: Frame, target: cst.BaseExpression) -> None:
        """``buf[a:b] = 0`` (or ``.zero_()``/``.fill_(0)`` on a slice)."""
        lower = None
        whole = True
        if isinstance(target, cst.Subscript):
            bounds = slice_bounds(target)
            if bounds is None:
                whole = False  # buf[i] = 0: one row
                lower = target.slice[0].slice if target.slice else None
            else:
                lower = bounds[0]
                whole = lower is None or is_zero(lower)
        if whole:
            step = self.step(frame, None, "source", Op("fill_zero"), "rows set to 0")
            self.write(frame, target, Val([Trace(None, (step,))]), strong=False)
            return
        start = operand(lower) if not isinstance(lower, cst.Index) else operand(lower.value)
        step = self.step(frame, None, "flow", Op("pad_zero", start), "padding rows set to 0")
        current = self.eval(frame, target)
        padded = Val([*current.then(step).traces, Trace(None, (step,))], current.refs)
        self.write(frame, target, padded, strong=False)

    # ------------------------------------------------------------------ reads

    def read_key(self, frame: Frame, key: str) -> Val:
        if key in frame.state:
            return frame.state[key]
        head, _, rest = key.partition(".")
        if not rest:
            return self.read_name(frame, head)
        if head == "self" and "." not in rest and frame.key.cls is not None:
            prop = self.property_getter(frame.key.cls, rest)
            if prop is not None:
                # self.x where x is a @property: the value its getter returns.
                step = RawStep(frame.mod, frame.stmt, None, "call", IDENTITY, f"into {prop.name}")
                site = CallSite(
                    prop, {prop.params()[0].name.value: Val((), [InstRef(frame.key.cls)])}, step
                )
                return Val([Trace(CallOrigin(site), ())])
            return Val(
                [Trace(FieldOrigin(frame.key.cls, rest), ())],
                [PendingRef(FieldOrigin(frame.key.cls, rest))]
                + self.class_attr_refs(frame.key.cls, rest),
            )
        base = self.read_key(frame, key.rsplit(".", 1)[0])
        return self.attribute(frame, base, key.rsplit(".", 1)[1])

    def read_name(self, frame: Frame, name: str) -> Val:
        if name in frame.state and name not in frame.globals_declared:
            return frame.state[name]
        if frame.parent is not None:
            return self.read_name(frame.parent, name)
        mod = frame.mod
        if name in frame.local_funcs:
            return Val((), [FuncRef(self.func_key(mod, frame.local_funcs[name]))])
        if name in mod.functions:
            return Val((), [FuncRef(self.func_key(mod, mod.functions[name]))])
        if name in mod.classes:
            return Val((), [ClassRef(mod.classes[name])])
        if name in mod.assigned or name in mod.declared_globals:
            origin = GlobalOrigin(mod, name)
            return Val([Trace(origin, ())], [PendingRef(origin)])
        if name in mod.imports:
            return Val((), self.lookup_qualified(mod, mod.imports[name]))
        if name in self.sinks_by_name:
            return Val((), [SinkRef(self.sinks_by_name[name])])
        if name in BUILTIN_NAMES:
            return Val((), [ExtRef(name)])
        for star, base in mod.imports.items():
            if star.startswith("*"):
                return Val((), self.lookup_qualified(mod, f"{base}.{name}"))
        return EMPTY

    def lookup_qualified(self, mod: ModuleInfo, qual: str, depth: int = 0) -> list[Ref]:
        """What a dotted name refers to: a sink, a project module/function/class, or outside."""
        if qual in self.guarded_quals:
            return [ExtRef(qual)]  # clamps its own input (runtime_guard's wrapper)
        spec = self.sinks_by_qual.get(qual)
        if spec is not None:
            return [SinkRef(spec)]
        if self.whole_program and depth < MAX_DEPTH:
            modname = self.project_module_of(qual)
            if modname is not None:
                if self.project.is_parsed(modname) or modname in self.sink_capable:
                    found = self.resolve_in_project(qual, depth)
                    if found:
                        return found
                else:
                    return [LazyRef(qual)]
        last = qual.rsplit(".", 1)[-1]
        if last in self.sinks_by_name:
            # Reached however it is: a re-export, a vendored copy, a module we cannot see.
            return [SinkRef(self.sinks_by_name[last])]
        return [ExtRef(qual)]

    def project_module_of(self, qual: str) -> str | None:
        """The longest prefix of ``qual`` that is a module of the checked tree."""
        parts = qual.split(".")
        for cut in range(len(parts), 0, -1):
            name = ".".join(parts[:cut])
            if self.project.has_module(name):
                return name
        return None

    def materialize(self, ref: Ref, depth: int = 0, *, force: bool = False) -> list[Ref]:
        """What a lazy name is, parsing its module now (if parsing is allowed, or forced)."""
        if not isinstance(ref, LazyRef):
            return [ref]
        allow = self.allow_parse
        self.allow_parse = allow or force
        try:
            found = self.resolve_in_project(ref.qual, depth)
        finally:
            self.allow_parse = allow
        return [r for r in found if not isinstance(r, LazyRef)]

    def may_parse(self, modname: str) -> bool:
        """While summaries are built, only modules that mention a sink are parsed; once
        paths are resolved, any module a path leads into is."""
        return self.allow_parse or modname in self.sink_capable or self.project.is_parsed(modname)

    def resolve_in_project(self, qual: str, depth: int) -> list[Ref]:
        parts = qual.split(".")
        for cut in range(len(parts), 0, -1):
            modname = ".".join(parts[:cut])
            if not self.project.has_module(modname):
                continue
            if not self.may_parse(modname):
                return []
            rest = parts[cut:]
            if not rest:
                return [ModRef(modname)]
            mod = self.project.module(modname)
            if mod is None:
                return []
            name = rest[0]
            refs: list[Ref] = []
            if name in mod.functions:
                refs = [FuncRef(self.func_key(mod, mod.functions[name]))]
            elif name in mod.classes:
                refs = [ClassRef(mod.classes[name])]
            elif name in mod.imports:
                refs = self.lookup_qualified(mod, mod.imports[name], depth + 1)
            elif name in mod.assigned:
                origin = GlobalOrigin(mod, name)
                refs = [PendingRef(origin)]
            elif self.project.has_module(f"{modname}.{name}"):
                refs = [ModRef(f"{modname}.{name}")]
            if len(rest) > 1 and refs:
                out: list[Ref] = []
                for r in refs:
                    if isinstance(r, ModRef):
                        out += self.lookup_qualified(mod, ".".join([r.name, *rest[1:]]), depth + 1)
                    elif isinstance(r, ClassRef) and rest[1] in r.cls.methods:
                        out.append(
                            FuncRef(self.func_key(r.cls.module, r.cls.methods[rest[1]], r.cls))
                        )
                return out
            return refs
        return []

    def property_getter(self, cls: ClassInfo, attr: str) -> FuncKey | None:
        for c in self.mro(cls):
            node = c.methods.get(attr)
            if node is not None:
                decorated = any(
                    dotted(d.decorator)
                    in ("property", "functools.cached_property", "cached_property")
                    for d in node.decorators
                )
                return (
                    self.func_key(c.module, node, c) if decorated and node.params.params else None
                )
        return None

    def class_attr_refs(self, cls: ClassInfo, attr: str) -> list[Ref]:
        for c in self.mro(cls):
            if attr in c.methods:
                return [FuncRef(self.func_key(c.module, c.methods[attr], c))]
        return []

    def mro(self, cls: ClassInfo, depth: int = 0) -> list[ClassInfo]:
        cached = self._mro_cache.get(id(cls))
        if cached is not None:
            return cached
        self._mro_cache[id(cls)] = [cls]
        result = self._mro(cls, depth)
        self._mro_cache[id(cls)] = result
        return result

    def _mro(self, cls: ClassInfo, depth: int) -> list[ClassInfo]:
        out = [cls]
        if depth > MAX_DEPTH:
            return out
        for base in cls.bases:
            name = dotted(base)
            if not name:
                continue
            for ref in (
                x
                for r in self.lookup_dotted(cls.module, name, depth + 1)
                for x in self.materialize(r)
            ):
                if isinstance(ref, ClassRef) and ref.cls is not cls:
                    for c in self.mro(ref.cls, depth + 1):
                        if c not in out:
                            out.append(c)
        return out

    def lookup_dotted(self, mod: ModuleInfo, name: str, depth: int = 0) -> list[Ref]:
        """What a dotted name written in ``mod`` at module level refers to."""
        head, _, rest = name.partition(".")
        if head in mod.classes and not rest:
            return [ClassRef(mod.classes[head])]
        if head in mod.functions and not rest:
            return [FuncRef(self.func_key(mod, mod.functions[head]))]
        imported = mod.imports.get(head)
        if imported is None:
            return []
        return self.lookup_qualified(mod, f"{imported}.{rest}" if rest else imported, depth)

    def subclasses(self, cls: ClassInfo) -> list[ClassInfo]:
        """Classes that derive from ``cls``: in the parsed modules, and, while paths are
        resolved, in every module that names it (parsed now)."""
        out = []
        if self.allow_parse:
            self.modules_mentioning(cls.name)
        for mod in self.project.parsed():
            for c in mod.classes.values():
                if c is not cls and cls in self.mro(c):
                    out.append(c)
        return out

    def attribute(self, frame: Frame, base: Val, attr: str) -> Val:
        if attr in SHAPE_ATTRS:
            return EMPTY
        refs: list[Ref] = []
        traces: list[Trace] = []
        for ref in base.refs:
            if isinstance(ref, (ModRef, ExtRef)):
                refs += self.lookup_qualified(frame.mod, f"{ref.name}.{attr}")
            elif isinstance(ref, LazyRef):
                refs += self.lookup_qualified(frame.mod, f"{ref.qual}.{attr}")
            elif isinstance(ref, InstRef) and isinstance(ref.cls, str):
                traces.append(Trace(FieldOrigin(ref.cls, attr), ()))
            elif isinstance(ref, InstRef):
                refs += self.class_attr_refs(ref.cls, attr)
                traces.append(Trace(FieldOrigin(ref.cls, attr), ()))
                refs.append(PendingRef(FieldOrigin(ref.cls, attr)))
            elif isinstance(ref, ClassRef):
                refs += self.class_attr_refs(ref.cls, attr)
            elif isinstance(ref, PendingRef) and not isinstance(ref.origin, FieldOrigin):
                # getattr(_dg, "name") where _dg = import_module(...): a module from a call.
                for r in self.resolve_refs(ref):
                    if not isinstance(r, PendingRef):
                        refs += self.attribute(frame, Val((), [r]), attr).refs
        if attr in ("data", "T", "mT"):
            traces += base.traces
        elif attr not in self.tensor_methods:
            for t in base.traces:
                if is_object_read(t):
                    traces.append(Trace(AttrOrigin(t.origin, attr), ()))
        if attr in self.sinks_by_name and not any(
            isinstance(r, (SinkRef, FuncRef))
            or (isinstance(r, ExtRef) and r.name in self.guarded_quals)
            for r in refs
        ):
            refs.append(SinkRef(self.sinks_by_name[attr]))
        return Val(traces, refs)

    # ------------------------------------------------------------------ expressions

    def eval(self, frame: Frame, node: cst.CSTNode | None) -> Val:
        if node is None:
            return EMPTY
        method = getattr(self, f"eval_{type(node).__name__}", None)
        if method is not None:
            return method(frame, node)
        # Literals, comparisons, f-strings...: no lengths, but evaluate children for calls.
        for child in node.children:
            if isinstance(child, cst.BaseExpression):
                self.eval(frame, child)
        return EMPTY

    def eval_Name(self, frame: Frame, node: cst.Name) -> Val:
        return self.read_name(frame, node.value)

    def eval_Attribute(self, frame: Frame, node: cst.Attribute) -> Val:
        key = dotted(node)
        if key is not None and key in frame.state:
            return frame.state[key]
        if key is not None and key.startswith("self.") and key.count(".") == 1:
            return self.read_key(frame, key)
        base = self.eval(frame, node.value)
        return self.attribute(frame, base, node.attr.value)

    def eval_Subscript(self, frame: Frame, node: cst.Subscript) -> Val:
        key = dotted(node.value)
        cell = slice_cell(frame, node, key) if key is not None else None
        if cell is not None and cell in frame.state:
            return frame.state[cell]
        base = self.eval(frame, node.value)
        for el in node.slice:
            if isinstance(el.slice, cst.Index):
                self.eval(frame, el.slice.value)
        bounds = slice_bounds(node)
        traces = base.traces
        if bounds is not None and bounds[1] is not None and bounds[0] is None:
            upper = operand(bounds[1])
            # buf[n:] = 0 then buf[:n]: the padding rows are outside what is read.
            traces = frozenset(
                t
                for t in traces
                if not (
                    len(t.steps) == 1
                    and t.steps[0].op.kind == "pad_zero"
                    and t.steps[0].op.arg == upper
                )
            )
        if base.elements is not None:
            idx = (
                int_value(node.slice[0].slice.value)
                if isinstance(node.slice[0].slice, cst.Index)
                else None
            )
            if idx is not None and -len(base.elements) <= idx < len(base.elements):
                return base.elements[idx]
        return Val(
            traces,
            [r for r in base.refs if isinstance(r, (SinkRef, FuncRef, LambdaRef, PendingRef))],
        )

    def eval_Tuple(self, frame: Frame, node: cst.Tuple) -> Val:
        vals = [self.eval(frame, el.value) for el in node.elements]
        joined = join_all(vals)
        return Val(joined.traces, joined.refs, tuple(vals))

    eval_List = eval_Tuple

    def eval_Set(self, frame: Frame, node: cst.Set) -> Val:
        return join_all(self.eval(frame, el.value) for el in node.elements).only_traces()

    def eval_Dict(self, frame: Frame, node: cst.Dict) -> Val:
        vals = [
            self.eval(frame, el.value)
            for el in node.elements
            if isinstance(el, (cst.DictElement, cst.StarredDictElement))
        ]
        return join_all(vals)

    def eval_StarredElement(self, frame: Frame, node: cst.StarredElement) -> Val:
        return self.eval(frame, node.value)

    def eval_NamedExpr(self, frame: Frame, node: cst.NamedExpr) -> Val:
        val = self.eval(frame, node.value)
        self.assign(frame, node.target, val, node.value)
        return val

    def eval_IfExp(self, frame: Frame, node: cst.IfExp) -> Val:
        self.eval(frame, node.test)
        return self.eval(frame, node.body).join(self.eval(frame, node.orelse))

    def eval_BooleanOperation(self, frame: Frame, node: cst.BooleanOperation) -> Val:
        # `x or default`, `a and b`: either operand may be the value.
        return self.eval(frame, node.left).join(self.eval(frame, node.right))

    def eval_Comparison(self, frame: Frame, node: cst.Comparison) -> Val:
        self.eval(frame, node.left)
        for c in node.comparisons:
            self.eval(frame, c.comparator)
        return EMPTY

    def eval_Await(self, frame: Frame, node: cst.Await) -> Val:
        return self.eval(frame, node.expression)

    def eval_Lambda(self, frame: Frame, node: cst.Lambda) -> Val:
        return Val((), [LambdaRef(node, frame, frame.stmt)])

    def _comprehension(
        self, frame: Frame, node: cst.CSTNode, elts: Sequence[cst.BaseExpression]
    ) -> Val:
        inner = frame.fork()
        comp = node.for_in  # type: ignore[attr-defined]
        while comp is not None:
            it = self.eval(inner, comp.iter)
            self.assign(inner, comp.target, it.only_traces(), None)
            for cond in comp.ifs:
                self.eval(inner, cond.test)
            comp = comp.inner_for_in
        out = join_all(self.eval(inner, e) for e in elts)
        return out

    def eval_ListComp(self, frame: Frame, node: cst.ListComp) -> Val:
        return self._comprehension(frame, node, [node.elt])

    eval_SetComp = eval_ListComp
    eval_GeneratorExp = eval_ListComp

    def eval_DictComp(self, frame: Frame, node: cst.DictComp) -> Val:
        return self._comprehension(frame, node, [node.value])

    def eval_UnaryOperation(self, frame: Frame, node: cst.UnaryOperation) -> Val:
        val = self.eval(frame, node.expression)
        if isinstance(node.operator, cst.Minus):
            return self.extend(frame, val, Op("neg"))
        if isinstance(node.operator, cst.Not):
            return EMPTY
        return val

    def eval_BinaryOperation(self, frame: Frame, node: cst.BinaryOperation) -> Val:
        left = self.eval(frame, node.left)
        right = self.eval(frame, node.right)
        op = node.operator
        division = DIVISIONS.get(type(op))
        if division is not None:
            kind, note = division
            op_ = Op(kind, self.operand(frame, node.right))
            return self.source(frame, left, op_, node.left, note=note)
        return self.arith(frame, left, right, op, node.right, left_node=node.left)

    def arith(
        self,
        frame: Frame,
        left: Val,
        right: Val,
        op: cst.BaseBinaryOp | cst.BaseAugOp,
        right_node: cst.BaseExpression,
        *,
        left_node: cst.BaseExpression | None = None,
    ) -> Val:
        name = type(op).__name__.replace("Assign", "")
        rv = int_value(right_node)
        lv = int_value(left_node)
        if name in ("Add", "Subtract"):
            sign = 1 if name == "Add" else -1
            if left.traces and rv is not None:
                return self.extend(frame, left, Op("add", sign * rv))
            if right.traces and lv is not None and name == "Add":
                return self.extend(frame, right, Op("add", lv))
        if name == "Multiply":
            if left.traces and rv is not None:
                return self.extend(frame, left, Op("mul", rv))
            if right.traces and lv is not None:
                return self.extend(frame, right, Op("mul", lv))
        if name in (
            "Divide",
            "Modulo",
            "Power",
            "Add",
            "Subtract",
            "Multiply",
            "BitAnd",
            "BitOr",
            "BitXor",
            "LeftShift",
            "MatrixMultiply",
        ):
            if not left.traces and not right.traces:
                return EMPTY
            return self.extend(frame, Val(left.traces | right.traces), Op("opaque", name.lower()))
        return Val(left.traces | right.traces)

    def extend(self, frame: Frame, val: Val, op: Op, note: str = "") -> Val:
        if not val.traces:
            return Val((), val.refs)
        step = self.step(frame, None, "flow", op, note)
        return Val((t.then(step) for t in val.traces), val.refs)

    def source(
        self, frame: Frame, val: Val, op: Op, dividend: cst.BaseExpression | None, *, note: str
    ) -> Val:
        """A floor division or shift: existing traces go through it, and new zero-able rows
        start here (the dividend's constant offsets are recorded so ceil-division idioms
        such as ``(x + c - 1) // c`` are judged on what they compute)."""
        constant = int_value(dividend)
        # 256 // 4 is a constant; 1 // 4 is a constant 0, a zero fill.
        if constant is not None and not val.traces and isinstance(op.arg, int) and op.arg > 0:
            value = constant // op.arg if op.kind == "floordiv" else constant >> op.arg
            return self.zero_source(frame, note) if value == 0 else EMPTY
        step = self.step(frame, None, "source", op, note)
        prefix = affine_prefix(dividend) if dividend is not None else []
        if prefix is None:
            prefix = [Op("opaque", "dividend")]
        fresh_steps = tuple(self.step(frame, None, "flow", p) for p in prefix) + (step,)
        traces = [t.then(step) for t in val.traces]
        traces.append(Trace(None, fresh_steps))
        return Val(traces)

    def eval_Call(self, frame: Frame, node: cst.Call) -> Val:
        return self.call(frame, node)

    # ------------------------------------------------------------------ calls

    def qualname(self, frame: Frame, func: cst.BaseExpression) -> str | None:
        """The qualified name of a callee written as a dotted name (via imports)."""
        text = dotted(func)
        if text is None:
            return None
        head, _, rest = text.partition(".")
        if head in frame.state or frame.parent is not None and head in frame.parent.state:
            return None
        imported = frame.mod.imports.get(head)
        if imported is not None:
            return f"{imported}.{rest}" if rest else imported
        if head in BUILTIN_NAMES and not rest:
            return head
        return None

    def call(self, frame: Frame, node: cst.Call) -> Val:
        func = node.func
        if isinstance(func, cst.Name) and func.value == "super" and frame.key.cls is not None:
            # super().m(...): the methods of the classes after this one in the MRO.
            bases = self.mro(frame.key.cls)[1:]
            return Val((), [InstRef(bases[0])] if bases else [])
        method = func.attr.value if isinstance(func, cst.Attribute) else None
        receiver: Val | None = None
        if isinstance(func, cst.Attribute):
            receiver = self.eval(frame, func.value)
            namespace = any(isinstance(r, (ExtRef, ModRef, ClassRef)) for r in receiver.refs)
            if not namespace and method in self.tensor_methods:
                # x.clamp(min=1), x.unsqueeze(-1), buf.copy_(src): the receiver is a tensor.
                args = [(a, self.eval(frame, a.value)) for a in node.args]
                out = self.tensor_method(frame, node, method, receiver, args)
                if out is not None:
                    return out
                return EMPTY
            refs = list(self.attribute(frame, receiver, method).refs)
            if not refs and method in self.wrapper_names | set(self.sinks_by_name):
                refs = self.refs_through_fields(frame, receiver, method)
        else:
            refs = list(self.eval(frame, func).refs)
        refs = [
            x for r in refs for x in (self.resolve_refs(r) if isinstance(r, PendingRef) else [r])
        ]
        args = [(a, self.eval(frame, a.value)) for a in node.args]
        lazy = [r for r in refs if isinstance(r, LazyRef)]
        if lazy:
            refs = [r for r in refs if not isinstance(r, LazyRef)]
            passes_sink = any(isinstance(r, SinkRef) for _, v in args for r in v.refs)
            for r in lazy:
                if self.project_module_of(r.qual) in self.sink_capable or passes_sink:
                    # A callee given a sink may call it: it must be analysed now.
                    refs += self.materialize(r, force=passes_sink)
                else:
                    return self.call_lazy(frame, node, r, args)
        result = EMPTY
        handled = False
        for ref in refs:
            out = self.call_ref(frame, node, ref, args)
            if out is not None:
                result = result.join(out)
                handled = True
        if handled:
            return result
        self.record_param_call(frame, node, args)
        if method is not None and receiver is not None:
            out = self.tensor_method(frame, node, method, receiver, args)
            if out is not None:
                return out
        # Unknown callee: lengths that go in come back, marked as outside the model.
        tainted = [v for _, v in args if v.traces]
        if receiver is not None and receiver.traces:
            tainted.append(receiver)
        if tainted:
            name = dotted(func) or method or "call"
            return self.extend(frame, join_all(tainted).only_traces(), Op("opaque", name))
        return EMPTY

    def record_param_call(
        self, frame: Frame, node: cst.Call, args: list[tuple[cst.Arg, Val]]
    ) -> None:
        if not isinstance(node.func, cst.Name) or frame.key.node is None:
            return
        val = frame.state.get(node.func.value)
        if val is None:
            return
        for t in val.traces:
            if isinstance(t.origin, ParamOrigin) and t.origin.func is frame.key:
                calls = frame.summary.param_calls.setdefault(t.origin.name, [])
                calls.append((frame.stmt, node, args))

    def replay_param_calls(
        self, frame: Frame, node: cst.Call, key: FuncKey, summary: Summary, site: CallSite
    ) -> None:
        """The callee calls a parameter that this call binds to a sink: a sink call here."""
        for pname, calls in summary.param_calls.items():
            actual = site.args.get(pname)
            if actual is None:
                continue
            refs = [
                x
                for r in actual.refs
                for x in (self.resolve_refs(r) if isinstance(r, PendingRef) else [r])
            ]
            for ref in refs:
                if not isinstance(ref, SinkRef):
                    continue
                for stmt, inner, inner_args in calls:
                    lens = self.sink_argument(ref, inner_args)
                    if lens is None:
                        continue
                    shown = (
                        self.arg_node_for(node, key, lens[0].value)
                        if isinstance(lens[0], cst.Name)
                        else None
                    )
                    sink_step = RawStep(
                        key.mod,
                        stmt,
                        inner,
                        "sink",
                        IDENTITY,
                        f"sink ({ref.spec.keyword or 'argument'})",
                    )
                    val = self.substitute(
                        lens[1].then(sink_step), key, site, 0, keep_unresolved=True
                    )
                    frame.summary.hits.append(
                        SinkHit(ref.spec, frame.mod, frame.stmt, node, shown, val, frame.key)
                    )

    def sink_argument(
        self, ref: SinkRef, args: list[tuple[cst.Arg, Val]]
    ) -> tuple[cst.BaseExpression | None, Val] | None:
        """The argument carrying the lengths in a call of the sink ``ref``."""
        spec = ref.spec
        if ref.bound is not None:
            return (None, ref.bound)
        for a, v in args:
            if a.keyword is not None and a.keyword.value == spec.keyword:
                return (a.value, v)
        positional = [(a, v) for a, v in args if a.keyword is None and not a.star]
        if spec.position is not None and spec.position < len(positional):
            a, v = positional[spec.position]
            return (a.value, v)
        starred = [(a, v) for a, v in args if a.star]
        return (starred[0][0].value, starred[0][1]) if starred else None

    def call_ref(
        self, frame: Frame, node: cst.Call, ref: Ref, args: list[tuple[cst.Arg, Val]]
    ) -> Val | None:
        if isinstance(ref, SinkRef):
            self.sink_hit(frame, node, ref, args)
            return EMPTY
        if isinstance(ref, FuncRef):
            return self.call_function(frame, node, ref, args)
        if isinstance(ref, ClassRef):
            self.construct(frame, node, ref.cls, args)
            return Val((), [InstRef(ref.cls)])
        if isinstance(ref, LambdaRef):
            return self.call_lambda(frame, node, ref, args)
        if isinstance(ref, ExtRef):
            return self.external(frame, node, ref.name, args)
        if isinstance(ref, InstRef) and isinstance(ref.cls, ClassInfo):
            call = ref.cls.methods.get("__call__")
            if call is not None:
                return self.call_function(
                    frame,
                    node,
                    FuncRef(self.func_key(ref.cls.module, call, ref.cls), Val((), [ref])),
                    args,
                )
        return None

    def construct(
        self, frame: Frame, node: cst.Call, cls: ClassInfo, args: list[tuple[cst.Arg, Val]]
    ) -> None:
        """``Cls(...)``: record what the new instance's fields hold, for reads elsewhere."""
        fields = list(self.constructor_fields(cls, args))
        frame.constructed[id(node)] = fields
        init = cls.methods.get("__init__")
        if init is None:
            for field_name, arg_val in fields:
                self.record_constructor_field(frame, node, cls.name, field_name, arg_val)
            return
        ref = FuncRef(self.func_key(cls.module, init, cls), Val((), [InstRef(cls)]))
        self.call_function(frame, node, ref, args)
        bound = self.bind_args(ref.key, ref, args)
        site = CallSite(
            ref.key,
            bound,
            RawStep(frame.mod, frame.stmt, node, "call", IDENTITY, f"into {cls.name}.__init__"),
        )
        for attr, val in self.summary(ref.key).field_writes.items():
            if not attr.startswith(CTOR_PREFIX):
                self.record_constructor_field(
                    frame, node, cls.name, attr, self.substitute(val, ref.key, site, 0), step=False
                )

    def record_constructor_field(
        self, frame: Frame, node: cst.Call, cls_name: str, attr: str, val: Val, step: bool = True
    ) -> None:
        """What a construction puts in a field (an object or a callable counts too), for
        reads of that field anywhere (the ``<ctor>Class.field`` slot of field_writes)."""
        if not (val.traces or val.refs):
            return
        if step:
            val = val.then(self.step(frame, node, "flow", IDENTITY, f"{cls_name}({attr}=...)"))
        slot = f"{CTOR_PREFIX}{cls_name}.{attr}"
        frame.summary.field_writes[slot] = frame.summary.field_writes.get(slot, EMPTY).join(val)

    def sink_hit(
        self, frame: Frame, node: cst.Call, ref: SinkRef, args: list[tuple[cst.Arg, Val]]
    ) -> None:
        spec = ref.spec
        chosen = self.sink_argument(ref, args)
        if chosen is None:
            return
        arg_node, val = chosen
        note = f"sink ({spec.keyword or f'argument {spec.position}'})"
        self.record_sink(frame, node, spec, arg_node, val, note)

    def record_sink(
        self,
        frame: Frame,
        node: cst.Call,
        spec: SinkSpec,
        arg_node: cst.BaseExpression | None,
        val: Val,
        note: str,
    ) -> None:
        """The lengths ``val`` reach ``spec`` at ``node``: a hit of this function's summary."""
        step = self.step(frame, node, "sink", IDENTITY, note)
        frame.summary.hits.append(
            SinkHit(spec, frame.mod, frame.stmt, node, arg_node, val.then(step), frame.key)
        )

    def bind_args(
        self, key: FuncKey, ref: FuncRef, args: list[tuple[cst.Arg, Val]]
    ) -> dict[str, Val]:
        params = key.params()
        node = key.node
        bound: dict[str, Val] = {}
        names = [p.name.value for p in params]
        star = node.params.star_arg if node is not None else None
        star_name = star.name.value if isinstance(star, cst.Param) else None
        kwstar = (
            node.params.star_kwarg.name.value
            if node is not None and node.params.star_kwarg
            else None
        )
        positional_names = (
            [p.name.value for p in (node.params.posonly_params + node.params.params)]
            if node
            else []
        )
        pos_vals: list[Val] = list(ref.bound)
        if key.is_method and ref.self_val is not None:
            pos_vals = [ref.self_val, *pos_vals]
        elif key.is_method and positional_names:
            pos_vals = [Val((), [InstRef(key.cls)]) if key.cls else EMPTY, *pos_vals]
        for a, v in args:
            if a.keyword is None and a.star == "":
                pos_vals.append(v)
        for name, v in zip(positional_names, pos_vals):
            bound[name] = v
        if star_name and len(pos_vals) > len(positional_names):
            bound[star_name] = join_all(pos_vals[len(positional_names) :])
        for kname, v in ref.bound_kw:
            bound[kname] = v
        for a, v in args:
            if a.keyword is not None:
                if a.keyword.value in names:
                    bound[a.keyword.value] = v
                elif kwstar:
                    bound[kwstar] = bound.get(kwstar, EMPTY).join(v)
            elif a.star:
                # f(*xs) / f(**kw): any parameter may receive it.
                for n in names:
                    bound[n] = bound.get(n, EMPTY).join(v)
        return bound

    def call_function(
        self, frame: Frame, node: cst.Call, ref: FuncRef, args: list[tuple[cst.Arg, Val]]
    ) -> Val:
        key = ref.key
        bound = self.bind_args(key, ref, args)
        call_step = RawStep(frame.mod, frame.stmt, node, "call", IDENTITY, f"into {key.name}")
        site = CallSite(key, bound, call_step, operands=self.operands(frame, node, key))
        passes_sink = any(isinstance(r, SinkRef) for _, v in args for r in v.refs)
        eager = key.mod is frame.mod or key.mod.name in self.sink_capable or passes_sink
        if eager:
            summary = self.summary(key)
            self.replay_param_calls(frame, node, key, summary, site)
            for pname, hits in summary.forwards.items():
                arg = bound.get(pname)
                if arg is None or not arg.traces:
                    continue
                for hit in hits:
                    # Only what the caller passed: lengths made inside the callee are
                    # reported at the callee's own sink call.
                    val = self.substitute(
                        hit.val, key, site, 0, keep_unresolved=True, params_only=True
                    )
                    frame.summary.hits.append(
                        SinkHit(
                            hit.spec,
                            frame.mod,
                            frame.stmt,
                            node,
                            self.arg_node_for(node, key, pname),
                            val,
                            frame.key,
                        )
                    )
            # What the callee wrote into its arguments flows back into the caller's names.
            for pname, effect in summary.param_effects.items():
                target = self.arg_node_for(node, key, pname)
                if target is not None and base_key(target) is not None:
                    val = self.substitute(effect, key, site, 0, keep_unresolved=True)
                    if val.traces:
                        self.write(frame, target, val, strong=False, in_place=True)
        else:
            for pname, v in bound.items():
                target = self.arg_node_for(node, key, pname)
                if target is not None and base_key(target) is not None and v.traces:
                    effect = Trace(EffectOrigin(site, pname), ())
                    self.write(frame, target, Val([effect]), strong=False, in_place=True)
        origin = CallOrigin(site)
        return Val([Trace(origin, ())], [PendingRef(origin)])

    def call_lazy(
        self, frame: Frame, node: cst.Call, ref: LazyRef, args: list[tuple[cst.Arg, Val]]
    ) -> Val:
        """A call into a module nobody has parsed: its result and its effects on the
        arguments stay placeholders until a path reaching a sink needs them."""
        call_step = RawStep(
            frame.mod, frame.stmt, node, "call", IDENTITY, f"into {ref.qual.rsplit('.', 1)[-1]}"
        )
        site = CallSite(None, {}, call_step, lazy=ref.qual, raw=args, bound=False, frame=frame)
        position = 0
        for a, v in args:
            which: str | int = a.keyword.value if a.keyword is not None else position
            if a.keyword is None:
                position += 1
            if v.traces and not a.star and base_key(a.value) is not None:
                self.write(
                    frame,
                    a.value,
                    Val([Trace(EffectOrigin(site, which), ())]),
                    strong=False,
                    in_place=True,
                )
        short = ref.qual.rsplit(".", 1)[-1]
        if short[:1].isupper():
            # Probably a constructor: its keyword arguments are the instance's fields.
            fields = [(a.keyword.value, v) for a, v in args if a.keyword is not None]
            frame.constructed[id(node)] = fields
            for attr, val in fields:
                self.record_constructor_field(frame, node, short, attr, val)
            result = Val([Trace(CallOrigin(site), ())], [InstRef(ref.qual)])
        else:
            result = Val([Trace(CallOrigin(site), ())], [PendingRef(CallOrigin(site))])
        return result

    def bind_site(self, site: CallSite) -> bool:
        """Parse a lazily named callee and bind the call's arguments to its parameters."""
        if site.bound:
            return site.callee is not None
        modname = self.project_module_of(site.lazy or "")
        if modname is not None and not self.may_parse(modname):
            return False  # not now: resolution may be asked again with parsing allowed
        site.bound = True
        for ref in self.materialize(LazyRef(site.lazy or "")):
            if isinstance(ref, ClassRef):
                init = ref.cls.methods.get("__init__")
                ref = (
                    FuncRef(
                        self.func_key(ref.cls.module, init, ref.cls), Val((), [InstRef(ref.cls)])
                    )
                    if init is not None
                    else ref
                )
            if isinstance(ref, FuncRef):
                site.callee = ref.key
                site.args = self.bind_args(ref.key, ref, site.raw or [])
                if isinstance(site.step.node, cst.Call) and site.frame is not None:
                    site.operands = self.operands(site.frame, site.step.node, ref.key)
                return True
        return False

    def operand(self, frame: Frame, node: cst.CSTNode | None) -> int | str:
        """A divisor or bound: a literal, a module-level constant (``RATIO = 4``), or the
        expression's text as a symbol."""
        if isinstance(node, cst.Name) and node.value not in frame.state:
            values = frame.mod.assigned.get(node.value, [])
            if len(values) == 1 and node.value not in frame.mod.declared_globals:
                constant = int_value(values[0])
                if constant is not None:
                    return constant
        return operand(node)

    def operands(self, frame: Frame, node: cst.Call, key: FuncKey) -> dict[str, int | str]:
        out: dict[str, int | str] = {}
        for p in key.params():
            arg = self.arg_node_for(node, key, p.name.value)
            if arg is None:
                continue
            value = self.operand(frame, arg)
            if value != "<expr>":
                out[p.name.value] = value
        return out

    def arg_node_for(self, node: cst.Call, key: FuncKey, pname: str) -> cst.BaseExpression | None:
        params = [p.name.value for p in key.params()]
        # A method call binds self (obj.m(x), an instance's __call__, Cls(x) into __init__),
        # except the unbound form Cls.m(obj, x).
        func = node.func
        unbound = (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value[:1].isupper()
        )
        if key.is_method and not unbound:
            params = params[1:]
        positional = [a for a in node.args if a.keyword is None and not a.star]
        for a in node.args:
            if a.keyword is not None and a.keyword.value == pname:
                return a.value
        if pname in params:
            i = params.index(pname)
            if i < len(positional):
                return positional[i].value
        return None

    def call_lambda(
        self, frame: Frame, node: cst.Call, ref: LambdaRef, args: list[tuple[cst.Arg, Val]]
    ) -> Val:
        """Evaluate the lambda's body with the call's arguments; a sink it calls is reported
        at this call, its path going through the lambda's line."""
        scratch = Summary(ref.frame.key)
        inner = Frame(ref.frame.key, scratch, parent=ref.frame)
        inner.stmt = ref.stmt
        params = [p.name.value for p in ref.node.params.params]
        bound_nodes: dict[str, cst.BaseExpression] = {}
        positional = [(a, v) for a, v in args if a.keyword is None and not a.star]
        for name, (a, v) in zip(params, positional):
            inner.state[name] = v
            bound_nodes[name] = a.value
        for a, v in args:
            if a.keyword is not None:
                inner.state[a.keyword.value] = v
                bound_nodes[a.keyword.value] = a.value
        result = self.eval(inner, ref.node.body)
        call_step = RawStep(
            frame.mod, frame.stmt, node, "call", IDENTITY, f"into {dotted(node.func) or 'lambda'}"
        )
        for hit in scratch.hits:
            traces = [
                Trace(t.origin, t.steps[:-1] + (call_step,) + t.steps[-1:]) for t in hit.val.traces
            ]
            shown = (
                bound_nodes.get(hit.arg_node.value) if isinstance(hit.arg_node, cst.Name) else None
            )
            frame.summary.hits.append(
                SinkHit(hit.spec, frame.mod, frame.stmt, node, shown, Val(traces), frame.key)
            )
        return result

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
        low: cst.BaseExpression | None,
        high: cst.BaseExpression | None,
        note: str,
    ) -> Val:
        out = val
        low = None if is_none(low) else low
        high = None if is_none(high) else high
        if low is not None:
            step_op = Op("clamp_min", self.operand(frame, low))
            out = self.extend_role(frame, out, step_op, "sanitizer", note)
        if high is not None:
            out = self.extend(frame, out, Op("clamp_max", self.operand(frame, high)))
        return out

    def extend_role(self, frame: Frame, val: Val, op: Op, role: str, note: str) -> Val:
        if not val.traces:
            return Val((), val.refs)
        step = self.step(frame, None, role, op, note)
        return Val(t.then(step) for t in val.traces)

    def external(
        self, frame: Frame, node: cst.Call, name: str, args: list[tuple[cst.Arg, Val]]
    ) -> Val | None:
        short = name.rsplit(".", 1)[-1]
        pos = self.positional(args)
        names = self.names
        if name in self.extra_sanitizers:
            val = join_all(v for _, v in args)
            return self.extend_role(frame, val, Op("clamp_min", 1), "sanitizer", name)
        if name in names.get("clamp", ()) or name in ("min", "torch.min", "torch.minimum"):
            clamped = self.external_clamp(frame, name, args)
            self.out_target(frame, node, args, clamped)
            return clamped
        if name in names.get("ceil_division", ()) or short == "cdiv" or name == "math.ceil":
            if name == "math.ceil" and pos and isinstance(pos[0][0].value, cst.BinaryOperation):
                div = pos[0][0].value
                inner = self.eval(frame, div.left)
                return self.extend(
                    frame, inner, Op("ceildiv", self.operand(frame, div.right)), "ceil division"
                )
            if len(pos) >= 2:
                return self.extend(
                    frame,
                    pos[0][1],
                    Op("ceildiv", self.operand(frame, pos[1][0].value)),
                    "ceil division",
                )
            return EMPTY
        if name in ("int", "math.floor", "math.trunc") and pos:
            inner = pos[0][0].value
            if isinstance(inner, cst.BinaryOperation) and isinstance(inner.operator, cst.Divide):
                val = self.eval(frame, inner.left)
                return self.source(
                    frame,
                    val,
                    Op("floordiv", self.operand(frame, inner.right)),
                    inner.left,
                    note="floor division",
                )
            return pos[0][1]
        if name in names.get("floor_division", ()):
            return self.external_division(frame, node, name, args)
        if name in names.get("zero_alloc", ()):
            return self.zero_source(frame, "zero-filled tensor")
        if name in names.get("full", ()):
            fill = self.kwarg(args, "fill_value")
            chosen = fill or (pos[1] if len(pos) > 1 else None)
            if chosen is not None and is_zero(chosen[0].value if fill is None else fill[0].value):
                return self.zero_source(frame, "tensor filled with 0")
            # Every row is the fill value: its lengths are the rows'.
            return chosen[1].only_traces() if chosen is not None else EMPTY
        if name in CONSTANT_FUNCTIONS:
            return EMPTY
        if name in CONCAT_FUNCTIONS:
            return join_all(v for _, v in args).only_traces()
        if name in VIEW_FUNCTIONS:
            return pos[0][1].only_traces() if pos else EMPTY
        if name == "torch.where" and len(pos) == 3:
            replaced = self.where_replacement(frame, node, pos)
            if replaced is not None:
                return replaced
            val = pos[1][1].join(pos[2][1]).only_traces()
            if is_zero(pos[2][0].value) or is_zero(pos[1][0].value):
                return self.extend(frame, val, Op("opaque", "where"))
            return val
        if name in ("getattr",) and len(pos) >= 2:
            attr = string_value(pos[1][0].value)
            if attr is not None:
                return self.attribute(frame, pos[0][1], attr)
            return EMPTY
        if name in ("importlib.import_module", "__import__") and pos:
            target = string_value(pos[0][0].value)
            if target is not None:
                if target.startswith("."):
                    level = len(target) - len(target.lstrip("."))
                    target = resolve_relative(frame.mod.package, level, target.lstrip(".") or None)
                return Val((), self.lookup_qualified(frame.mod, target))
            return EMPTY
        if name == "functools.partial" and pos:
            return self.partial(
                frame, node, pos[0][1], pos[1:], [(a, v) for a, v in args if a.keyword]
            )
        if name in (
            "torch.diff",
            "torch.cumsum",
            "torch.sum",
            "len",
            "isinstance",
            "print",
            "torch.numel",
            "torch.max",
            "torch.min",
            "range",
            "sum",
            "any",
            "all",
        ):
            self.out_target(frame, node, args, EMPTY)
            return EMPTY
        if name.startswith(("torch.", "numpy.", "math.", "triton.")) or name in BUILTIN_NAMES:
            return None  # falls back to the unknown-call rule in call()
        return None

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
        return self.replace_rows(frame, val, rows, value)

    def replace_rows(self, frame: Frame, val: Val, rows: str, value: int) -> Val:
        """The lengths after the ``rows`` a mask picked are set to ``value`` (a sanitizer
        when ``value >= 1``: no row can then be 0)."""
        op = replacement_op(rows, value)
        note = f"{'rows equal to 0' if rows == 'zero' else 'rows below 1'} set to {value}"
        if value >= 1:
            return self.extend_role(frame, val, op, "sanitizer", note)
        return self.extend(frame, val.only_traces(), op, note)

    def external_clamp(self, frame: Frame, name: str, args: list[tuple[cst.Arg, Val]]) -> Val:
        pos = self.positional(args)
        upper = name in ("min", "torch.min", "torch.minimum")
        low_kw = self.kwarg(args, "min")
        high_kw = self.kwarg(args, "max")
        if name.endswith("clamp_min"):
            low_kw = low_kw or (pos[1] if len(pos) > 1 else None)
        if low_kw is not None or high_kw is not None or name.endswith(("clamp", "clip")):
            val = pos[0][1] if pos else EMPTY
            low = low_kw[0].value if low_kw else (pos[1][0].value if len(pos) > 1 else None)
            high = high_kw[0].value if high_kw else (pos[2][0].value if len(pos) > 2 else None)
            return self.clamp(frame, val, low, high, name)
        # max(x, k) / torch.maximum(x, k): the traced operand is the value, the other the bound.
        if len(pos) == 2:
            (a0, v0), (a1, v1) = pos
            if isinstance(self.operand(frame, a1.value), int):
                v1 = EMPTY  # a constant bound: torch.maximum(x, torch.ones_like(x))
            elif isinstance(self.operand(frame, a0.value), int):
                v0 = EMPTY
            value, bound = (v0, a1.value) if v0.traces or not v1.traces else (v1, a0.value)
            if bound is not None and not (v0.traces and v1.traces):
                if upper:
                    return self.clamp(frame, value, None, bound, name)
                return self.clamp(frame, value, bound, None, name)
            return self.extend(frame, v0.join(v1).only_traces(), Op("opaque", name))
        return join_all(v for _, v in pos).only_traces() if len(pos) > 2 else EMPTY

    def external_division(
        self, frame: Frame, node: cst.Call, name: str, args: list[tuple[cst.Arg, Val]]
    ) -> Val:
        pos = self.positional(args)
        if len(pos) < 2:
            return EMPTY
        mode = self.kwarg(args, "rounding_mode")
        mode_text = string_value(mode[0].value) if mode else None
        is_floor = name.endswith(("floor_divide", "bitwise_right_shift")) or mode_text in (
            "floor",
            "trunc",
        )
        kind = "rshift" if name.endswith("right_shift") else "floordiv"
        if not is_floor:
            result = self.extend(frame, pos[0][1].only_traces(), Op("opaque", "true division"))
        else:
            result = self.source(
                frame,
                pos[0][1],
                Op(kind, self.operand(frame, pos[1][0].value)),
                pos[0][0].value,
                note=f"{name}(rounding_mode={mode_text!r})" if mode_text else name,
            )
        self.out_target(frame, node, args, result)
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

    def zero_source(self, frame: Frame, note: str) -> Val:
        step = self.step(frame, None, "source", Op("fill_zero"), note)
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
        for r in fn.refs:
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
                else:
                    refs.append(c)
        return Val((), refs)

    def tensor_method(
        self, frame: Frame, node: cst.Call, method: str, recv: Val, args: list[tuple[cst.Arg, Val]]
    ) -> Val | None:
        names = self.names
        pos = self.positional(args)
        target = node.func.value if isinstance(node.func, cst.Attribute) else None
        if method in names.get("clamp_methods", ()):
            low = self.kwarg(args, "min")
            high = self.kwarg(args, "max")
            low_node = low[0].value if low else (pos[0][0].value if pos else None)
            high_node = high[0].value if high else (pos[1][0].value if len(pos) > 1 else None)
            if method.startswith("clamp_min"):
                high_node = None
            result = self.clamp(frame, recv, low_node, high_node, f".{method}()")
            if method.endswith("_") and target is not None:
                self.write_whole(frame, target, result)
            return result
        if method in names.get("floor_division_methods", ()):
            mode = self.kwarg(args, "rounding_mode")
            mode_text = string_value(mode[0].value) if mode else None
            if method.startswith("floor_divide") or mode_text in ("floor", "trunc"):
                if not pos:
                    return recv.only_traces()
                result = self.source(
                    frame,
                    recv,
                    Op("floordiv", self.operand(frame, pos[0][0].value)),
                    target,
                    note=f".{method}()",
                )
            else:
                result = self.extend(frame, recv.only_traces(), Op("opaque", "true division"))
            if method.endswith("_") and target is not None:
                self.write_whole(frame, target, result)
            self.out_target(frame, node, args, result)
            return result
        if method in ("zero_",) or (method == "fill_" and pos and is_zero(pos[0][0].value)):
            if target is not None:
                self.zero_fill(frame, target) if isinstance(target, cst.Subscript) else self.write(
                    frame,
                    target,
                    self.zero_source(frame, f".{method}()"),
                    strong=False,
                    in_place=True,
                )
                return self.eval(frame, target)
            return self.zero_source(frame, f".{method}()")
        if method in names.get("zero_alloc_methods", ()):
            return self.zero_source(frame, f".{method}()")
        if method in names.get("full_methods", ()):
            fill = self.kwarg(args, "fill_value") or (pos[1] if len(pos) > 1 else None)
            if fill is not None and is_zero(fill[0].value):
                return self.zero_source(frame, f".{method}()")
            return fill[1].only_traces() if fill is not None else EMPTY
        if method == "copy_" and pos and target is not None:
            src = pos[0][1].then(self.step(frame, None, "flow", IDENTITY, ".copy_()"))
            self.write_whole(frame, target, src)
            return src
        if method in ARITH_METHODS:
            kind = ARITH_METHODS[method]
            if kind == "neg":
                result = self.extend(frame, recv, Op("neg"))
            else:
                k = int_value(pos[0][0].value) if pos else None
                if k is None:
                    other = pos[0][1] if pos else EMPTY
                    if not recv.traces and not other.traces:
                        return EMPTY
                    result = self.extend(
                        frame, Val(recv.traces | other.traces), Op("opaque", method)
                    )
                else:
                    result = self.extend(
                        frame,
                        recv,
                        Op("mul", k) if kind == "mul" else Op("add", k if kind == "add" else -k),
                    )
            if method.endswith("_") and target is not None:
                self.write_whole(frame, target, result)
            return result
        if method in ("masked_fill", "masked_fill_") and target is not None:
            value = self.kwarg(args, "value") or (pos[1] if len(pos) > 1 else None)
            mask = self.kwarg(args, "mask") or (pos[0] if pos else None)
            k = int_value(value[0].value) if value is not None else None
            rows = mask_rows(frame.mod, mask[0].value, target) if mask and k else None
            if rows is not None and k is not None:
                result = self.replace_rows(frame, recv, rows, k)
                if method.endswith("_"):
                    self.write_whole(frame, target, result)
                return result
        if method == "where" and target is not None and pos:
            other = self.kwarg(args, "other") or (pos[1] if len(pos) > 1 else None)
            k = int_value(other[0].value) if other is not None else None
            rows = mask_rows(frame.mod, pos[0][0].value, target, keeps=True)
            if rows is not None and k is not None:
                return self.replace_rows(frame, recv, rows, k)
        if method in ("masked_fill", "masked_fill_", "index_fill", "index_fill_"):
            value_node = pos[-1][0].value if pos else None
            op = Op("pad_zero", "<mask>") if is_zero(value_node) else Op("opaque", method)
            result = self.extend(frame, recv, op)
            if method.endswith("_") and target is not None:
                self.write(frame, target, result, strong=False, in_place=True)
            return result
        if method in VIEW_METHODS:
            if method in ("to", "type", "cuda", "cpu") or recv.traces:
                return recv.only_traces()
            return EMPTY
        if method in REDUCTIONS:
            return EMPTY
        if method == "fill_":
            result = self.extend(frame, recv.only_traces(), Op("opaque", ".fill_()"))
            if target is not None:
                self.write(frame, target, result, strong=False, in_place=True)
            return result
        if recv.traces:
            return self.extend(frame, recv.only_traces(), Op("opaque", f".{method}()"))
        return None

    def view_bases(self, frame: Frame, value: cst.BaseExpression) -> frozenset[str]:
        """The buffers ``value`` is a view of: ``self.buf[:n]``, ``x.view(...)``, aliases."""
        node = value
        while True:
            if isinstance(node, cst.Subscript):
                node = node.value
            elif (
                isinstance(node, cst.Call)
                and isinstance(node.func, cst.Attribute)
                and node.func.attr.value
                in (
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
                )
            ):
                node = node.func.value
            else:
                break
        key = dotted(node)
        if key is None:
            return frozenset()
        # `lens = self.seq_lens` names the same tensor: `lens //= 4` changes both.
        return frozenset({key}) | frame.aliases.get(key, frozenset())

    # ------------------------------------------------------------------ resolution

    def origin_values(self, origin: Origin) -> list[Val]:
        """What a field (or a field of a field) may hold, from every write to it."""
        if isinstance(origin, FieldOrigin):
            return self.field_values(origin.cls, origin.attr)
        if isinstance(origin, AttrOrigin):
            out: list[Val] = []
            for val in self.origin_values(origin.base):
                for ref in val.refs:
                    for r in self.materialize(ref):
                        if isinstance(r, InstRef):
                            out += self.field_values(r.cls, origin.attr)
            return out
        return []

    def refs_through_fields(self, frame: Frame, receiver: Val, method: str) -> list[Ref]:
        """``self.ops.method(...)``: the objects stored in the field, and their method."""
        refs: list[Ref] = []
        for t in receiver.traces:
            if not is_object_read(t):
                continue
            for val in self.origin_values(t.origin):
                held = [x for r in val.refs for x in self.materialize(r)]
                refs += self.attribute(frame, Val((), held), method).refs
        return refs

    def resolve_refs(self, ref: PendingRef, depth: int = 0) -> list[Ref]:
        if depth > MAX_DEPTH or id(ref.origin) in self._resolving:
            return []
        self._resolving.add(id(ref.origin))
        try:
            origin = ref.origin
            vals: list[Val] = []
            if isinstance(origin, CallOrigin):
                if self.bind_site(origin.site):
                    vals.append(self.summary(origin.site.callee).returns)  # type: ignore[arg-type]
            elif isinstance(origin, FieldOrigin):
                vals += self.field_values(origin.cls, origin.attr)
            elif isinstance(origin, GlobalOrigin):
                vals += self.global_values(origin.mod, origin.name)
            out: list[Ref] = []
            for v in vals:
                for r in v.refs:
                    if isinstance(r, PendingRef):
                        out += self.resolve_refs(r, depth + 1)
                    else:
                        out += self.materialize(r, depth + 1)
            return out
        finally:
            self._resolving.discard(id(ref.origin))

    def class_info(self, cls: ClassInfo | str) -> ClassInfo | None:
        if isinstance(cls, ClassInfo):
            return cls
        for ref in self.materialize(LazyRef(cls)):
            if isinstance(ref, ClassRef):
                return ref.cls
        return None

    def may_write_field(self, qual: str, attr: str) -> bool:
        """Whether the unparsed class ``qual`` can have ``attr`` written: its module writes
        ``self.attr``, or a parsed module calls its constructor. Decided on text, so that a
        dataclass read through an annotation costs no parse when nobody builds it here."""
        modname = self.project_module_of(qual)
        if modname is None:
            return False
        if self.project.is_parsed(modname):
            return True
        path = self.project.by_name.get(modname)
        text = self.project.text(path) if path is not None else None
        if text is None:
            return False
        if f"self.{attr}" in text or "cls(" in text:
            return True
        short = f"{qual.rsplit('.', 1)[-1]}("
        return bool(self.project.files_containing(short))

    def field_values(self, cls_or_name: ClassInfo | str, attr: str) -> list[Val]:
        """Everything written to ``attr`` on instances of ``cls`` (its bases and subclasses)."""
        if isinstance(cls_or_name, str) and not self.may_write_field(cls_or_name, attr):
            return []
        cls = self.class_info(cls_or_name)
        if cls is None:
            return []
        key = (id(cls), attr)
        cached = self._field_cache.get(key)
        if cached is not None:
            return cached
        self._field_cache[key] = []  # recursion: a field defined through itself is empty
        vals = self._field_values(cls, attr)
        self._field_cache[key] = vals
        return vals

    def _field_values(self, cls: ClassInfo, attr: str) -> list[Val]:
        vals: list[Val] = []
        family = self.mro(cls) + self.subclasses(cls)
        for c in family:
            for m in c.methods.values():
                s = self.summary(self.func_key(c.module, m, c))
                if attr in s.field_writes:
                    vals.append(self.drop_params(s.field_writes[attr]))
        if self.whole_program:
            vals += self.constructor_writes(family, attr)
        return vals

    def constructor_writes(self, family: list[ClassInfo], attr: str) -> list[Val]:
        """Keyword or positional constructor arguments for dataclass-like fields."""
        out: list[Val] = []
        for c in family:
            slot = f"{CTOR_PREFIX}{c.name}.{attr}"
            # Its own module too: a classmethod factory builds it as `cls(...)`.
            for mod in dict.fromkeys([c.module, *self.modules_mentioning(f"{c.name}(")]):
                for key in self.module_functions(mod):
                    v = self.summary(key).field_writes.get(slot)
                    if v is not None and (v.traces or v.refs):
                        out.append(self.drop_params(v))
        return out

    def modules_mentioning(self, text: str) -> list[ModuleInfo]:
        """Modules whose source contains ``text``: parsed now if parsing is allowed."""
        key = (text, self.allow_parse)
        cached = self._mention_cache.get(key)
        if cached is None:
            cached = self._mention_cache[key] = self._modules_mentioning(text)
        return cached

    def _modules_mentioning(self, text: str) -> list[ModuleInfo]:
        out = []
        for path in self.project.files_containing(text):
            name = self.project.name_of.get(path, "")
            if not self.may_parse(name):
                continue
            mod = self.project.module_at(path)
            if mod is not None:
                out.append(mod)
        return out

    def global_values(self, mod: ModuleInfo, name: str) -> list[Val]:
        vals = [self.summary(self.func_key(mod, None)).global_writes.get(name, EMPTY)]
        for fn in mod.functions.values():
            s = self.summary(self.func_key(mod, fn))
            if name in s.global_writes:
                vals.append(self.drop_params(s.global_writes[name]))
        top = self.summaries.get(self.func_key(mod, None))
        if top is None or name not in top.global_writes:
            frame = Frame(self.func_key(mod, None), Summary(self.func_key(mod, None)))
            for value in mod.assigned.get(name, []):
                vals.append(self.eval(frame, value))
        return vals

    def param_at(self, key: FuncKey, position: int) -> str | None:
        names = [p.name.value for p in key.params()]
        if key.is_method:
            names = names[1:]
        return names[position] if position < len(names) else None

    def opaque_call(self, site: CallSite, origin: Origin) -> list[Trace]:
        """A callee that turned out not to be analysable: what went in may come back."""
        if isinstance(origin, EffectOrigin):
            return []
        step = RawStep(
            site.step.mod, site.step.stmt, site.step.node, "flow", Op("opaque", site.lazy or "call")
        )
        out = []
        for _, v in site.raw or []:
            for t in self.resolve(v):
                out.append(Trace(t.origin, t.steps + (step,)))
        return out

    def drop_params(self, val: Val) -> Val:
        return Val((t for t in val.traces if not isinstance(t.origin, ParamOrigin)), val.refs)

    def substitute(
        self,
        val: Val,
        callee: FuncKey,
        site: CallSite,
        depth: int,
        *,
        keep_unresolved: bool = False,
        params_only: bool = False,
    ) -> Val:
        """Replace the callee's parameter placeholders by the caller's argument values."""
        out: list[Trace] = []
        for t in val.traces:
            if isinstance(t.origin, ParamOrigin) and t.origin.func is callee:
                actual = site.args.get(t.origin.name, EMPTY)
                for at in actual.traces:
                    out.append(Trace(at.origin, at.steps + (site.step,) + site.rebind(t.steps)))
            elif params_only:
                continue
            elif t.origin is None:
                out.append(Trace(None, site.rebind(t.steps) + (site.landing(),)))
            elif keep_unresolved:
                out.append(t)
        return Val(out, val.refs)

    def resolve(self, val: Val, depth: int = 0) -> list[Trace]:
        """Concrete and parameter traces of ``val``: placeholders of calls, fields and
        globals replaced by what the code they stand for produces."""
        out: list[Trace] = []
        for t in val.traces:
            out += self.resolve_trace(t, depth)
        unique = list(dict.fromkeys(out))
        if len(unique) > MAX_TRACES * 4:
            unique = sorted(unique, key=Trace.keep_order)[: MAX_TRACES * 4]
        return unique

    def resolve_trace(self, t: Trace, depth: int) -> list[Trace]:
        origin = t.origin
        if origin is None or isinstance(origin, ParamOrigin):
            return [t]
        heads = self._origin_cache.get(id(origin))
        if heads is None:
            if depth > MAX_DEPTH or id(origin) in self._resolving:
                return []
            self._resolving.add(id(origin))
            try:
                heads = self.resolve_origin(origin, depth)
            finally:
                self._resolving.discard(id(origin))
            self._origin_cache[id(origin)] = heads
        return [Trace(h.origin, h.steps + t.steps) for h in heads]

    def resolve_origin(self, origin: Origin, depth: int) -> list[Trace]:
        if isinstance(origin, (CallOrigin, EffectOrigin)):
            site = origin.site
            if not self.bind_site(site):
                return self.opaque_call(site, origin)
            assert site.callee is not None
            summary = self.summary(site.callee)
            if isinstance(origin, CallOrigin):
                produced = summary.returns
                if (
                    origin.index is not None
                    and summary.return_elements is not None
                    and origin.index < len(summary.return_elements)
                ):
                    produced = summary.return_elements[origin.index]
            else:
                param = origin.param
                if isinstance(param, int):
                    param = self.param_at(site.callee, param)
                produced = summary.param_effects.get(param, EMPTY) if param else EMPTY
            out: list[Trace] = []
            for inner in self.resolve(produced, depth + 1):
                steps = site.rebind(inner.steps)
                if isinstance(inner.origin, ParamOrigin) and inner.origin.func is site.callee:
                    actual = site.args.get(inner.origin.name, EMPTY)
                    for at in self.resolve(actual, depth + 1):
                        out.append(Trace(at.origin, at.steps + (site.step,) + steps))
                elif inner.origin is None:
                    # Made inside the callee: the path starts there and comes out here.
                    tail = (site.landing(),) if isinstance(origin, EffectOrigin) else ()
                    out.append(Trace(None, steps + tail))
            return out
        if isinstance(origin, FieldOrigin):
            out = []
            for v in self.field_values(origin.cls, origin.attr):
                out += [t for t in self.resolve(v, depth + 1) if t.origin is None]
            return out
        if isinstance(origin, GlobalOrigin):
            out = []
            for v in self.global_values(origin.mod, origin.name):
                out += [t for t in self.resolve(v, depth + 1) if t.origin is None]
            return out
        if isinstance(origin, AttrOrigin):
            out = []
            for v in self.origin_values(origin):
                out += [t for t in self.resolve(v, depth + 1) if t.origin is None]
            return out
        return []


def is_object_read(trace: Trace) -> bool:
    """A field read that only moved (no arithmetic): it may hold an object with fields."""
    return isinstance(trace.origin, (FieldOrigin, AttrOrigin)) and all(
        s.op is IDENTITY for s in trace.steps
    )


def _holds_sink(val: Val) -> bool:
    # A lambda may call a sink: its name is worth looking for in other files too.
    return any(isinstance(r, (SinkRef, LambdaRef)) for r in val.refs)


def affine_prefix(node: cst.BaseExpression) -> list[Op] | None:
    """Constant offsets, signs and scales applied to a length inside a dividend.

    ``x + 3`` -> [add 3]; ``x + c - 1`` -> [add c, add -1]; ``-x`` -> [neg]; a bare name or
    any other expression -> []; None when the dividend mixes two unknown lengths.
    """
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Add, cst.Subtract)):
        sign = 1 if isinstance(node.operator, cst.Add) else -1
        rv = int_value(node.right)
        inner = affine_prefix(node.left)
        if inner is None:
            return None
        if rv is not None:
            return inner + [Op("add", sign * rv)]
        rtext = dotted(node.right)
        if rtext is not None and sign == 1:
            return inner + [Op("add", rtext)]
        return None
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = affine_prefix(node.expression)
        return None if inner is None else inner + [Op("neg")]
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
        rv = int_value(node.right)
        if rv is not None:
            inner = affine_prefix(node.left)
            return None if inner is None else inner + [Op("mul", rv)]
    return []
