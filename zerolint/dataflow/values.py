"""Values and traces: what a length is while it flows, and where its path started.

A value (``Val``) is a set of traces and of refs (what the value may be when called).
A trace is the steps (``RawStep``) a length took, each with what it does to the lengths
(``model.Op``) and, for a source or a sanitizer, its effect: the rule-table key and name
that decide, at a sink, which rule it counts for.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from zerolint.model import IDENTITY, OPERAND_OPS, Op, OpKind, parse_bounded
from zerolint.project import ClassInfo, ModuleInfo, parameters
from zerolint.rules import SinkSpec

if TYPE_CHECKING:
    from zerolint.dataflow.frames import CallSite, Frame, FuncKey

MAX_TRACES = 64
# The ops whose argument is a symbol of the function they were made in (an opaque call's
# name, known rows and a mask's "<mask>" are not).
SYMBOLIC_OPS = OPERAND_OPS | {OpKind.ROWS, OpKind.GUARD, OpKind.PAD_ZERO}
# A symbol (``n``, ``meta.num``) as it may appear in an op's argument.
_SYMBOL = re.compile(r"(?<![\w.@])[A-Za-z_][\w.]*")


def symbol_prefixes(arg: str) -> set[str]:
    """The names an op's argument may have as a symbol, each with its heads (``meta`` and
    ``meta.num`` for ``meta.num > 0``), and maybe more (``max`` of ``max(r,1)``)."""
    found: set[str] = set()
    for symbol in _SYMBOL.findall(arg):
        dot = symbol.find(".")
        while dot != -1:
            found.add(symbol[:dot])
            dot = symbol.find(".", dot + 1)
        found.add(symbol)
    return found


# Every name an op made in this process may have as a symbol, with its heads
# (``symbol_prefixes``): a name not among them is no symbol of any value, and binding it
# again renames nothing (``frames.retire_in``). Only grows: a name is a few bytes, and
# one more name at most makes a rename look at values it then leaves as they are.
SYMBOL_HEADS: set[str] = set()
_SYMBOL_ARGS: set[str] = set()
LIVE_KINDS = frozenset(
    {OpKind.FLOORDIV, OpKind.TRUNCDIV, OpKind.RSHIFT, OpKind.FILL_ZERO, OpKind.ROWS}
)


def note_symbol(arg: str) -> None:
    """``arg``, an op's argument, may name symbols: put them in ``SYMBOL_HEADS`` (a call's
    operands are the calling frame's: ``frames.CallsMade``)."""
    if arg not in _SYMBOL_ARGS:
        _SYMBOL_ARGS.add(arg)
        SYMBOL_HEADS.update(symbol_prefixes(arg))


# --------------------------------------------------------------------------- values


class RawStep:
    """A step before positions are known: the node, its statement and module, what it does."""

    __slots__ = (
        "_hash",
        "_key",
        "_stable",
        "effect",
        "mod",
        "node",
        "note",
        "op",
        "role",
        "stmt",
    )

    def __init__(
        self,
        mod: ModuleInfo,
        stmt: cst.CSTNode,
        node: cst.CSTNode | None,
        role: str,
        op: Op = IDENTITY,
        note: str = "",
        effect: Effect | None = None,
    ) -> None:
        self.mod, self.stmt, self.node = mod, stmt, node
        self.role, self.op, self.note = role, op, note
        # (rule-table key, name) for a source or a sanitizer: which rules it counts for is
        # decided at the sink (rules.Rule.is_source / counts_sanitizer), not here.
        self.effect = effect
        arg = op.arg
        if type(arg) is str and arg not in _SYMBOL_ARGS and op.kind in SYMBOLIC_OPS:
            note_symbol(arg)
        self._key = (id(stmt), id(node), role, op, effect)
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
                # Steps of one statement that differ only in what they say: never left to
                # hash order when traces are cut.
                self.note,
                "" if self.effect is None else self.effect[1],
            )
        return self._stable

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"RawStep({self.mod.code(self.stmt)!r}, {self.role}, {self.op.describe()})"


Effect = tuple[str, str]


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


class RenamedOrigin(Origin):
    """A call's result (or what it wrote into an argument) made before a name among what
    the caller handed it was bound again (``frames._retired_origin``): resolved as ``base``
    is, then with ``renames`` applied in order, so that what the callee makes of the name
    is about its old value. ``heads``: the names it may still have as symbols (a later
    renaming of one renames it again)."""

    __slots__ = ("base", "heads", "renames")

    def __init__(
        self,
        base: CallOrigin | EffectOrigin,
        renames: tuple[Mapping[str, str], ...],
        heads: frozenset[str],
    ) -> None:
        self.base, self.renames, self.heads = base, renames, heads


def callee_own(callee: str, name: str) -> str:
    """The symbol a callee's ``name`` takes in a caller's path where no name of the
    caller's stands for it (a local, a parameter bound again or handed an expression):
    ``helper(n)``, which no condition of the caller's is about (``Calls.operands``)."""
    return f"{callee}({name})"


def is_callers_operand(operand: int | str) -> bool:
    """A literal, a caller's name or a bound of one (``max(r,1)``), not a name of the
    callee's own (``callee_own``)."""
    return type(operand) is not str or "(" not in operand or parse_bounded(operand) is not None


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


def origin_key(origin: Origin | None) -> tuple:
    """Where a placeholder starts, as a key that is the same on every run (origins are
    compared by identity, and their hashes differ between runs)."""
    if origin is None:
        return ()
    if isinstance(origin, ParamOrigin):
        return ("param", origin.func.mod.name, origin.func.name, origin.name)
    if isinstance(origin, (CallOrigin, EffectOrigin)):
        step = origin.site.step
        node = step.mod.code(step.node) if step.node is not None else ""
        extra = origin.index if isinstance(origin, CallOrigin) else origin.param
        return ("call", type(origin).__name__, step.stable_key(), node, str(extra))
    if isinstance(origin, RenamedOrigin):
        names = tuple(r[r.name] for r in origin.renames)  # type: ignore[attr-defined]
        return ("renamed", *origin_key(origin.base), names)
    if isinstance(origin, FieldOrigin):
        cls = origin.cls
        where = (cls.module.name, cls.qualname) if isinstance(cls, ClassInfo) else ("", cls)
        return ("field", *where, origin.attr)
    if isinstance(origin, GlobalOrigin):
        return ("global", origin.mod.name, origin.name)
    if isinstance(origin, AttrOrigin):
        return ("attr", origin_key(origin.base), origin.attr)
    return (type(origin).__name__,)


class Trace:
    __slots__ = ("_chain", "_hash", "_heads", "_order", "live", "origin", "steps")

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
        if _live is None:
            _live = any(s.op.kind in LIVE_KINDS or s.role == "source" for s in steps)
        self.live = _live

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Trace) and self.origin is other.origin and self.steps == other.steps
        )

    def __hash__(self) -> int:
        return self._hash

    @property
    def concrete(self) -> bool:
        return self.origin is None

    def heads(self) -> frozenset[str]:
        """Every name an op of the trace may have as a symbol, with its heads (``n`` for
        ``n > 0``, ``a - n``, ``max(n,1)``; ``n`` and ``n.num`` for ``n.num``), and maybe
        more: a quick test that no op names one (``frames.retire_in``). Made once per trace,
        when first asked (the slot is left unset until then: most traces are never
        asked)."""
        try:
            return self._heads
        except AttributeError:
            found: set[str] = set()
            for step in self.steps:
                arg = step.op.arg
                if type(arg) is str and step.op.kind in SYMBOLIC_OPS:
                    found.update(symbol_prefixes(arg))
            origin = self.origin
            kind = type(origin)
            if kind is CallOrigin or kind is EffectOrigin:
                # The caller's operands the callee's ops will be given (``CallSite.rebind``).
                found |= origin.site.heads
            elif kind is RenamedOrigin:
                found |= origin.heads
            heads = self._heads = frozenset(found)
            return heads

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
            self.live or step.op.kind in LIVE_KINDS or step.role == "source",
        )

    def extend(self, origin: Origin | None, steps: tuple[RawStep, ...]) -> Trace:
        """``Trace(origin, self.steps + steps)``, with the hash folded on from this trace's
        rather than over every step again (resolving puts a callee's long paths in front of
        each use of them)."""
        chain, live = self._chain, self.live
        for s in steps:
            chain = hash((chain, s._hash))
            live = live or s.op.kind in LIVE_KINDS or s.role == "source"
        return Trace(origin, self.steps + steps, chain, live)

    def keep_order(self) -> tuple:
        """Which traces to keep when there are too many: live ones, short ones; ties broken
        by where the steps are and where the trace starts, never by hashes (which change
        from run to run). Also the order in which resolve() walks a set of traces. A trace
        does not change: worked out once (a trace is sorted again in every set it joins)."""
        try:
            return self._order
        except AttributeError:
            pass
        self._order = order = (
            not self.live,
            len(self.steps),
            tuple(s.stable_key() for s in self.steps),
            origin_key(self.origin),
        )
        return order

    def key_source(self) -> RawStep | None:
        for step in self.steps:
            if step.op.kind in LIVE_KINDS or step.role == "source":
                return step
        return None


def reshaped(val: Val) -> Val:
    """``val`` after an operation that may change how many rows it has (``repeat``,
    ``expand``, ``torch.cat``, an index): a literal tensor's rows (``torch.tensor([1])``,
    the op ``"[1]"``) no longer say the batch size. Where they all hold one value, every
    row still holds it (``"1"``); otherwise which values are where is outside the model."""
    for t in val.traces:  # most have none: a plain loop, no call per trace
        if t.origin is None and t.steps and t.steps[0].op.kind is OpKind.KNOWN_ROWS:
            break
    else:
        return val
    out = []
    for t in val.traces:
        if not _literal_rows(t):
            out.append(t)
            continue
        first = t.steps[0]
        values = set(str(first.op.arg)[1:-1].split(","))
        op = Op(OpKind.KNOWN_ROWS, values.pop()) if len(values) == 1 else None
        if op is None:
            op = Op(OpKind.OPAQUE, "the rows of a literal, rearranged")
        step = RawStep(first.mod, first.stmt, first.node, first.role, op, first.note, first.effect)
        out.append(Trace(None, (step, *t.steps[1:])))
    return val.with_traces(out)


def _literal_rows(trace: Trace) -> bool:
    """Whether ``trace`` starts at a literal tensor whose rows are known one by one."""
    if trace.origin is not None or not trace.steps:
        return False
    op = trace.steps[0].op
    return op.kind is OpKind.KNOWN_ROWS and str(op.arg).startswith("[")


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
    # Called through a functools.partial whose arguments are not known (one made of a
    # lazily named callee, LazyRef.bound_unknown): any parameter may be given by it.
    bound_unknown: bool = False


@dataclass(frozen=True, eq=False)
class ClassRef:
    cls: ClassInfo


@dataclass(frozen=True, eq=False)
class InstRef:
    cls: ClassInfo | str  # a qualified name until its module is parsed
    # An object that may be of a subclass too (a method's `self`): what it reads may be a
    # subclass's override. One a call made (`Meta(...)`, `super()`) is of this class.
    open: bool = False

    def short_name(self) -> str:
        """The class's own name (the last part of its qualified name)."""
        return class_name(self.cls)


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
    bound: tuple[Val, ...] = ()  # its first parameters' values: a lambda read as a method


@dataclass(frozen=True, eq=False)
class LazyRef:
    """A name inside the checked tree whose module has not been parsed: parsing waits
    until a path needs to know what the name is."""

    qual: str
    # Made by functools.partial(name, ...): a call of it is given arguments it does not
    # show, so no parameter it leaves out can be taken to hold its default.
    bound_unknown: bool = False


@dataclass(frozen=True, eq=False)
class PendingRef:
    """The callable returned by a call, a field or a global: resolved when called."""

    origin: Origin


Ref = SinkRef | FuncRef | ClassRef | InstRef | ModRef | ExtRef | LambdaRef | LazyRef | PendingRef


def ref_key(ref: Ref) -> tuple:
    """Where a ref points, as a key that is the same on every run (refs are compared by
    identity, and a set of them is ordered by memory address)."""
    if isinstance(ref, SinkRef):
        return (0, repr(ref.spec))
    if isinstance(ref, FuncRef):
        key = ref.key
        place = key.mod.statement_order(key.node) if key.node is not None else -1
        return (1, key.mod.name, place, key.name)
    if isinstance(ref, ClassRef):
        return (2, ref.cls.module.name, ref.cls.qualname)
    if isinstance(ref, InstRef):
        cls = ref.cls
        return (3, *((cls.module.name, cls.qualname) if isinstance(cls, ClassInfo) else ("", cls)))
    if isinstance(ref, (ModRef, ExtRef)):
        return (4, type(ref).__name__, ref.name)
    if isinstance(ref, LazyRef):
        return (5, ref.qual)
    if isinstance(ref, LambdaRef):
        mod = ref.frame.mod
        return (6, mod.name, mod.statement_order(ref.stmt), mod.code(ref.node))
    return (7, origin_key(ref.origin))


def class_name(cls: ClassInfo | str) -> str:
    """A class's own name: the last part of the qualified name it is known by until its
    module is parsed, or the project's class's name."""
    return cls.rsplit(".", 1)[-1] if isinstance(cls, str) else cls.name


def _class_key(cls: ClassInfo) -> str:
    """The project's class by its module and qualified name (``construction_keys``)."""
    return f"{cls.module.name}:{cls.qualname}"


def construction_keys(cls: ClassInfo | str) -> tuple[str, str]:
    """The keys a construction of ``cls`` is recorded under: what it put in each field
    (``Summary.constructor_fields``) under the first, the operands it wrote
    (``Contexts.constructions``) under both. ``read_keys`` are those a read looks under.
    The project's class goes by its module and qualified name, so that two modules'
    classes named ``Meta`` are two; a class known only by a name (its module not parsed
    then) by that name (``?Meta``), which a read of any class of that name looks under
    too; and every construction also by its class's name (``*Meta``), which a guard on an
    object whose class is known only by name looks under."""
    short = class_name(cls)
    if isinstance(cls, str):
        return (f"?{short}", f"*{short}")
    return (_class_key(cls), f"*{short}")


def read_keys(cls: ClassInfo | str) -> tuple[str, ...]:
    """The keys a read of a field of ``cls``'s objects, or a guard on one, looks under
    (``construction_keys``): a class known only by a name, every construction of a class
    of that name; the project's class, its own and those made by its name only."""
    if isinstance(cls, str):
        return (f"*{class_name(cls)}",)
    return (_class_key(cls), f"?{cls.name}")


def in_order(refs: Iterable[Ref]) -> list[Ref]:
    """``refs`` in the same order on every run: by ``ref_key`` where there are several
    (calling, resolving or reading through them makes summaries, in this order)."""
    out = list(refs)
    if len(out) > 1:
        out.sort(key=ref_key)
    return out


class Val:
    """What an expression may hold: the traces of lengths it carries, the callables and
    objects it refers to, and, where they are known, its elements (a tuple or a list
    written out) with, for a dict written out with literal keys (``syntax.dict_key``), the key
    of each."""

    __slots__ = ("_heads", "elements", "keys", "refs", "traces")

    def __init__(
        self,
        traces: Iterable[Trace] = (),
        refs: Iterable[Ref] = (),
        elements: tuple[Val, ...] | None = None,
        keys: tuple[str, ...] | None = None,
    ) -> None:
        ts = frozenset(traces)
        if len(ts) > MAX_TRACES:
            # Keep the live ones first, then the shortest: enough to report and judge.
            ts = frozenset(sorted(ts, key=Trace.keep_order)[:MAX_TRACES])
        self.traces = ts
        self.refs = frozenset(refs)
        self.elements = elements
        self.keys = keys if elements is not None else None

    def heads(self) -> frozenset[str]:
        """``Trace.heads`` of every trace and element: made once per value, when first
        asked."""
        try:
            return self._heads
        except AttributeError:
            found: set[str] = set()
            for trace in self.traces:
                found |= trace.heads()
            for element in self.elements or ():
                found |= element.heads()
            heads = self._heads = frozenset(found)
            return heads

    @property
    def empty(self) -> bool:
        return not self.traces and not self.refs

    def join(self, other: Val) -> Val:
        if other is self or other.empty and other.elements is None:
            return self
        if self.empty and self.elements is None:
            return other
        elements = keys = None
        if self.elements is None or other.elements is None:
            pass
        elif self.keys == other.keys and len(self.elements) == len(other.elements):
            elements = tuple(a.join(b) for a, b in zip(self.elements, other.elements))
            keys = self.keys
        elif self.keys is not None and other.keys is not None:
            # Dicts written out with their keys in another order, or other keys: joined
            # key by key (a list's places are not a dict's keys).
            by_key = dict(zip(self.keys, self.elements))
            for key, value in zip(other.keys, other.elements):
                by_key[key] = by_key[key].join(value) if key in by_key else value
            elements, keys = tuple(by_key.values()), tuple(by_key)
        return Val(self.traces | other.traces, self.refs | other.refs, elements, keys)

    def then(self, step: RawStep) -> Val:
        elements = None if self.elements is None else tuple(e.then(step) for e in self.elements)
        if not self.traces:
            return Val((), self.refs, elements, self.keys)
        return Val((t.then(step) for t in self.traces), self.refs, elements, self.keys)

    def iterated(self) -> Val:
        """What a loop over the value binds: its traces, and where its elements are known
        (a tuple or a list written out, ``for fn in (kernel_a, kernel_b)``) what they refer
        to; not what the container itself refers to. A dict written out gives its keys:
        nothing to follow. Where every element is a pair (``d.items()``, ``[(a, b), ...]``)
        the loop's target unpacks their joined parts."""
        if self.keys is not None:
            return EMPTY  # the keys: strings
        if self.elements is None:
            return self.only_traces()
        refs = [r for e in self.elements for r in e.refs]
        parts = {len(e.elements) if e.elements is not None else None for e in self.elements}
        if len(parts) == 1 and None not in parts and self.elements:
            joined = join_all(e.only_parts() for e in self.elements)
            return Val(self.traces, refs, joined.elements)
        return Val(self.traces, refs)

    def with_traces(self, traces: Iterable[Trace]) -> Val:
        """The same container (refs, elements, keys) carrying ``traces`` instead."""
        return Val(traces, self.refs, self.elements, self.keys)

    def with_refs(self, refs: Iterable[Ref]) -> Val:
        """The same value (traces, elements, keys) referring to ``refs`` instead."""
        return Val(self.traces, refs, self.elements, self.keys)

    def only_traces_and_refs(self) -> Val:
        """The value less what is known of its elements (and keys)."""
        return Val(self.traces, self.refs)

    def only_parts(self) -> Val:
        """The value less its own traces and refs: what its elements hold (for a join that
        keeps only them)."""
        return Val((), (), self.elements)

    def at_key(self, key: str) -> Val | None:
        """The value at ``key`` of a dict written out with literal keys; None where the
        keys are not known or ``key`` is not one of them."""
        if self.keys is None or self.elements is None or key not in self.keys:
            return None
        return self.elements[self.keys.index(key)]

    def only_traces(self) -> Val:
        return Val(self.traces)

    def element(self, i: int) -> Val:
        """Element ``i``: of the elements where they are known; else a call's result that
        only moved since the call (assigned, returned: no op on the way) stands for that
        call's element ``i``, resolved later (``Resolution.resolve_origin``)."""
        if self.elements is not None and 0 <= i < len(self.elements):
            return self.elements[i]
        out = []
        for t in self.traces:
            origin = t.origin
            renamed = origin if type(origin) is RenamedOrigin else None
            if renamed is not None:
                origin = renamed.base
            if (
                isinstance(origin, CallOrigin)
                and origin.index is None
                and all(s.op is IDENTITY for s in t.steps)
            ):
                picked: Origin = CallOrigin(origin.site, i)
                if renamed is not None:
                    picked = RenamedOrigin(picked, renamed.renames, renamed.heads)
                out.append(Trace(picked, t.steps))
            else:
                out.append(t)
        return Val(out, self.refs)


EMPTY = Val()


def join_all(vals: Iterable[Val]) -> Val:
    out = EMPTY
    for v in vals:
        out = out.join(v)
    return out


def keyed(by_key: dict[str, Val]) -> Val:
    """A dict written out with string keys (``{"raw": a}``, ``dict(raw=a)``): what all its
    values hold, and each key's value."""
    joined = join_all(by_key.values())
    return Val(joined.traces, joined.refs, tuple(by_key.values()), tuple(by_key))


def is_object_read(trace: Trace) -> bool:
    """A field read that only moved (no arithmetic): it may hold an object with fields."""
    return isinstance(trace.origin, (FieldOrigin, AttrOrigin)) and all(
        s.op is IDENTITY for s in trace.steps
    )


def holds_sink(val: Val) -> bool:
    # A lambda may call a sink: its name is worth looking for in other files too. Not one
    # that only gives back a parameter (`lambda name: fn` in `def register(fn)`): a sink
    # comes out of it only where the caller passed one in, and the caller names it.
    return any(
        isinstance(r, SinkRef) or isinstance(r, LambdaRef) and not _gives_back_a_parameter(r)
        for r in val.refs
    )


def _gives_back_a_parameter(ref: LambdaRef) -> bool:
    """The lambda's body is one of its parameters, or a parameter of the function it is
    written in that nothing there bound to a callable (``fn = sink`` would)."""
    body = ref.node.body
    if type(body) is not cst.Name:
        return False
    if any(p.name.value == body.value for p in parameters(ref.node.params)):
        return True
    if not any(p.name.value == body.value for p in ref.frame.key.params()):
        return False
    held = ref.frame.state.get(body.value)
    return held is not None and not held.refs


def without_row_counts(traces: Iterable[Trace]) -> frozenset[Trace]:
    """The traces that do not start at a row count: where a value's rows come from
    something else (a broadcast with another tensor, a write into a buffer)."""
    return frozenset(t for t in traces if not (t.steps and t.steps[0].op.kind == OpKind.ROWS))


def counts_rows(val: Val) -> bool:
    """Whether a trace of ``val`` starts at a row count (``without_row_counts`` would drop
    it)."""
    return any(t.steps and t.steps[0].op.kind is OpKind.ROWS for t in val.traces)
