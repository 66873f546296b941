"""Functions, call sites, summaries and the frame state of one activation, with its join.

State keys are dotted names (``x``, ``self.buf``, ``buf[:n]`` for a slice cell); the
object a parameter was bound to is a ``ParamObject`` in the aliases of a frame.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property

import libcst as cst

from zerolint.dataflow.values import (
    EMPTY,
    SYMBOL_HEADS,
    SYMBOLIC_OPS,
    CallOrigin,
    EffectOrigin,
    Origin,
    RawStep,
    RenamedOrigin,
    Trace,
    Val,
    callee_own,
    is_callers_operand,
    join_all,
    parameters,
    symbol_prefixes,
)
from zerolint.model import Op, OpKind, count_terms, join_count, symbol_names, with_symbol
from zerolint.project import ClassInfo, ModuleInfo
from zerolint.rules import SinkSpec

# How deep name lookups, resolution and nested summaries go before giving up.
MAX_DEPTH = 8
# How many modules not parsed yet the paths into one sink call may parse (the second round
# of ``Resolution.resolve_in_rounds``): a tree whose imports are all followed (SGLang with
# its namespace packages) can lead a path into hundreds of modules.
MAX_PARSES = 16


# --------------------------------------------------------------------------- functions


@dataclass(frozen=True, slots=True)
class ParamObject:
    """The object parameter ``name`` was bound to, as the buffer a local name is a view of:
    writes through the name reach the caller's object until the name is rebound."""

    name: str


Alias = str | ParamObject
"""What a local name may be a view of: a state key (``self.buf``) or a parameter's object."""


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
        return parameters(self.node.params)

    @property
    def is_classmethod(self) -> bool:
        return self.node is not None and any(
            type(d.decorator) is cst.Name and d.decorator.value == "classmethod"
            for d in self.node.decorators
        )

    @property
    def is_method(self) -> bool:
        if self.cls is None or self.node is None:
            return False
        for d in self.node.decorators:
            if type(d.decorator) is cst.Name and d.decorator.value == "staticmethod":
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
    # The parameters the callee binds again, each with the ids of the nodes of the
    # statements that may run after (``syntax.rebinding_regions``).
    rebinding: dict[str, frozenset[int]] = field(default_factory=dict)
    # A call of a functools.partial of a lazily named callee: the partial's arguments are
    # not known here (no parameter the call leaves out holds its default).
    bound_unknown: bool = False
    # A lazily named callee's: each argument's operand at the call, by the id of its node,
    # for ``operands`` once the callee is known (``Calls.arg_operands``).
    arg_operands: dict[int, int | str] | None = None
    # The function the call is made in, whose names its operands are (a renaming of one
    # of its names renames them: ``frames._retired_origin``).
    caller: FuncKey | None = None

    @cached_property
    def heads(self) -> frozenset[str]:
        """The names the caller's operands may have as symbols (``symbol_prefixes``), of
        each argument's as taken at the call for a lazily named callee, and the symbols of
        the arguments' values; made once."""
        given = self.operands if self.arg_operands is None else self.arg_operands
        found: set[str] = set()
        for operand in given.values():
            if type(operand) is str and is_callers_operand(operand):
                found.update(symbol_prefixes(operand))
        # And the symbols of what it was handed (`same(buf[:n])`), which its result may be.
        for val in self.args.values() if self.raw is None else (v for _, v in self.raw):
            found |= val.heads()
        return frozenset(found)

    def rebind(self, steps: tuple[RawStep, ...]) -> tuple[RawStep, ...]:
        """The callee's steps (one trace's) with its parameter symbols replaced by this
        call's operands: an op's symbol, each term of a row count (``end - start``), and
        the subject of a path condition (``n > 0``, ``meta.num > 0``), so that a callee's
        guard constrains the caller's names. A parameter the trace may have seen bound
        again in the callee (a step where that may have happened: ``n = 0`` then
        ``buf[:n]``) is a name of its own instead, which no condition of the caller is
        about."""
        if not self.operands:
            return steps
        moved = self.rebound_on(steps)
        if not moved:
            return rebound_steps(steps, self.operands)
        return rebound_steps(steps, {**self.operands, **moved})

    def rebound_on(self, steps: tuple[RawStep, ...]) -> dict[str, str]:
        """The callee's parameters that a path through ``steps`` may have seen bound again
        there, each with the name of its own it takes (``_prep(n)``)."""
        if not self.rebinding or self.callee is None:
            return {}
        own = self.callee.name
        return {
            p: callee_own(own, p)
            for p, ids in self.rebinding.items()
            if any(id(step.stmt) in ids for step in steps)
        }

    def landing(self) -> RawStep:
        """The call's line as a plain step: where lengths made in the callee come out."""
        return RawStep(self.step.mod, self.step.stmt, self.step.node, "flow")


def rebound_steps(
    steps: tuple[RawStep, ...],
    operands: Mapping[str, int | str],
    kinds: frozenset[OpKind] | None = None,
) -> tuple[RawStep, ...]:
    """``steps`` with their ops' arguments ``rebound`` to ``operands`` (only the ops of
    ``kinds``, when given); a step that changes nothing is kept as it is."""
    out = []
    for step in steps:
        if kinds is None or step.op.kind in kinds:
            arg = rebound(step.op, operands)
            if arg is not step.op.arg:
                step = RawStep(
                    step.mod,
                    step.stmt,
                    step.node,
                    step.role,
                    Op(step.op.kind, arg),
                    step.note,
                    step.effect,
                )
        out.append(step)
    return tuple(out)


def rebound(op: Op, operands: Mapping[str, int | str]) -> object:
    """``op``'s argument with the parameters in ``operands`` replaced (the same object when
    nothing is replaced)."""
    arg = op.arg
    if not isinstance(arg, str):
        return arg
    if arg in operands:
        return operands[arg]
    names = symbol_names(arg)
    if names and names[0] != arg and names[0] in operands:
        # x // max(ratio, 1) with ratio=4 at this call: x // 4.
        return with_symbol(arg, operands[names[0]])  # type: ignore[arg-type]
    if op.kind == OpKind.GUARD:
        parts = arg.split()
        if len(parts) == 3:
            head, dot, rest = parts[0].partition(".")
            value = operands.get(head)
            if value is not None and (not dot or isinstance(value, str)):
                parts[0] = f"{value}{dot}{rest}"
                return " ".join(parts)
            if dot and parts[0] in operands:  # a field bound again on its own (`self.n`)
                parts[0] = str(operands[parts[0]])
                return " ".join(parts)
        return arg
    if op.kind == OpKind.ROWS:
        kind, terms = count_terms(arg)
        if kind:
            joined = join_count(kind, [rebound(Op(OpKind.ROWS, t), operands) for t in terms])
            return arg if joined == arg else joined
    return arg


class _Retired(Mapping[str, str]):
    """``name`` and its fields (``name.num``) as ``rebound`` asks for them, under the name
    ``fresh()`` gives (asked once, where an op names it)."""

    def __init__(self, name: str, fresh: Callable[[], str] | str, caller: FuncKey) -> None:
        self.name, self.prefix = name, name + "."
        self.made: str | None = fresh if isinstance(fresh, str) else None
        self.make = fresh if callable(fresh) else None
        # The function whose name this is (only its calls' operands are its names), and
        # what each call origin met in this renaming became (``_retired_origin``), by id,
        # beside the origin itself: a renaming a ``RenamedOrigin`` keeps is used again
        # when it is resolved, and an id is another object's once its own is freed.
        self.caller = caller
        self.origins: dict[int, tuple[Origin, Origin]] = {}
        # What a call origin's renaming holds (``_retired_origin``): one for every origin
        # of this renaming, and the heads it leaves, by the heads it had (the origins of one
        # call share them).
        self._detached: _Retired | None = None
        self.heads_after: dict[frozenset[str], frozenset[str]] = {}

    def detached(self) -> _Retired:
        """This renaming without what it met (for a ``RenamedOrigin`` to keep)."""
        if self._detached is None:
            self._detached = _Retired(self.name, self.fresh, self.caller)
        return self._detached

    @property
    def fresh(self) -> str:
        if self.made is None:
            assert self.make is not None
            self.made = self.make()
        return self.made

    def __iter__(self) -> Iterator[str]:
        return iter((self.name,))

    def __len__(self) -> int:
        return 1

    def __contains__(self, key: object) -> bool:
        return key == self.name or (isinstance(key, str) and key.startswith(self.prefix))

    def __getitem__(self, key: str) -> str:
        if key == self.name:
            return self.fresh
        if key.startswith(self.prefix):
            return self.fresh + key[len(self.name) :]
        raise KeyError(key)


def retire_in(frame: Frame, name: str) -> None:
    """``name`` (a name, a field) is bound again at ``frame``'s statement, here or by a
    call: in the values the frame holds, the symbol ``name`` (and its fields) in their ops
    takes a name of its own, so that what was computed from its old value keeps that
    value under it, and no condition on the new value is about it (``x = buf[:n]``, then
    ``n = 5``, then ``if n > 0:`` says nothing of ``x``'s rows). The name is
    ``name@M:K``, M the module (its dots as slashes) and K the statement's rank in it:
    the same on every run, and for every pass of a loop. The slice cells whose bounds
    name it are forgotten. Values that name no such symbol are left as they are; what
    the frame keeps about a value it held (``reductions``, ``some_rows``, which compare
    by identity) follows the renamed value."""
    if frame.cells:
        forget_cells_naming(frame, name)
    if name not in SYMBOL_HEADS and name not in frame.calls.heads():
        return
    names = _Retired(name, _fresh_name(frame, name), frame.key)
    state = frame.state
    moved: dict[int, Val] = {}
    for key, val in state.items():
        if (val.traces or val.elements is not None) and name in val.heads():
            renamed = _retired(val, names)
            if renamed is not val:
                state[key] = moved[id(val)] = renamed
    if not moved:
        return
    for k, (fn, key, held) in list(frame.reductions.items()):
        if id(held) in moved:
            frame.reductions[k] = (fn, key, moved[id(held)])
    if frame.some_rows:
        frame.some_rows = tuple((*g[:4], moved.get(id(g[4]), g[4])) for g in frame.some_rows)
    # A condition on the old value holds of it still (`if n > 0: x = buf[:n]; n = m`):
    # it takes the old value's name, as what was made from it did.
    if any(g[0] in names for g in frame.guards):
        frame.guards = tuple((names[g[0]], *g[1:]) if g[0] in names else g for g in frame.guards)


def _fresh_name(frame: Frame, name: str) -> Callable[[], str]:
    """The name ``name``'s value before ``frame``'s statement takes (``retire_in``), made
    when first asked."""
    stmt = frame.stmt

    def fresh() -> str:
        module = frame.mod.name.replace(".", "/")
        return f"{name}@{module}:{frame.mod.statement_order(stmt)}"

    return fresh


def retired_value(frame: Frame, val: Val, names: Iterable[str]) -> Val:
    """``val``, which ``frame``'s statement computed and now stores, with ``names`` (those
    the statement binds) renamed as ``retire_in`` renames them in the values the frame
    holds: what it made of them is their values before the statement. The names are bound
    one after another, so without this a value stored after another name was bound
    would name that name's new value (``n, x = f(buf, n)``: ``x``'s rows are the old
    ``n``'s, not the one ``if n > 0:`` then tests)."""
    for name in names:
        if (name in SYMBOL_HEADS or name in frame.calls.heads()) and name in val.heads():
            val = _retired(val, _Retired(name, _fresh_name(frame, name), frame.key))
    return val


def forget_cells_naming(frame: Frame, name: str) -> None:
    """``name`` is bound again: a slice cell whose bounds name it (``buf[:n]``) would be
    read back for another slice (``buf[:n]`` with the new ``n``), so it is forgotten."""
    word = None
    for base, cells in list(frame.cells.items()):
        stale = set()
        for cell in cells:
            if name in cell:  # the exact test only where the text holds it at all
                word = word or re.compile(rf"(?<![\w.]){re.escape(name)}(?!\w)")
                if word.search(cell, len(base)):
                    stale.add(cell)
        if stale:
            for cell in stale:
                frame.state.pop(cell, None)
            frame.cells[base] = cells - stale


def _retired(val: Val, names: _Retired) -> Val:
    traces, changed = [], False
    for trace in val.traces:
        if names.name in trace.heads():
            renamed = _retired_trace(trace, names)
            trace, changed = renamed, changed or renamed is not trace
        traces.append(trace)
    elements = val.elements
    if elements is not None:
        inner = tuple(_retired(e, names) for e in elements)
        if any(a is not b for a, b in zip(inner, elements)):
            elements, changed = inner, True
    if not changed:
        return val
    return Val(traces, val.refs, elements, val.keys)


def _retired_origin(origin: Origin | None, names: _Retired) -> Origin | None:
    """A call's result (or what it wrote into an argument) made here before ``names.name``
    was bound again, where the call's operands or arguments name it (``CallSite.heads``):
    the same call with the name renamed (``RenamedOrigin``), so that what the callee makes
    of it is about the old value (``x = _rows(buf, n)``, then ``n = m``, then ``if n > 0:``
    says nothing of ``x``)."""
    kind = type(origin)
    if kind is RenamedOrigin:
        base, renames, heads = origin.base, origin.renames, origin.heads  # type: ignore[union-attr]
    elif kind is CallOrigin or kind is EffectOrigin:
        base, renames, heads = origin, (), origin.site.heads  # type: ignore[union-attr]
    else:
        return origin
    if names.name not in heads or base.site.caller is not names.caller:  # type: ignore[union-attr]
        return origin  # another function's call names that function's names
    met = names.origins.get(id(origin))  # values of one frame share their calls
    if met is not None:
        return met[1]
    fixed = names.detached()  # not the frame, the name
    after = names.heads_after.get(heads)
    if after is None:
        name, prefix = names.name, names.prefix
        moved = {h for h in heads if h == name or h.startswith(prefix)}
        after = heads.difference(moved).union(fixed[h] for h in moved)
        names.heads_after[heads] = after
    done = RenamedOrigin(base, (*renames, fixed), after)  # type: ignore[arg-type]
    names.origins[id(origin)] = (origin, done)  # type: ignore[assignment]
    return done


def retired_trace(trace: Trace, renames: tuple[Mapping[str, str], ...]) -> Trace:
    """``trace`` (a resolution of a ``RenamedOrigin``'s call) with its names renamed."""
    for names in renames:
        trace = _retired_trace(trace, names)  # type: ignore[arg-type]
    return trace


def _retired_trace(trace: Trace, names: _Retired) -> Trace:
    """``trace`` with ``names.name`` renamed in its ops and its call origin (the same
    trace where neither names it)."""
    steps = rebound_steps(trace.steps, names, SYMBOLIC_OPS)
    origin = _retired_origin(trace.origin, names)
    if origin is trace.origin and all(a is b for a, b in zip(steps, trace.steps)):
        return trace
    return Trace(origin, steps)


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
    # Where no argument of this call carries the lengths (a closure's free name, a
    # ``**kwargs`` dict, a partial's bound argument): the callee's own sink call and the
    # callee's name, which the message shows instead.
    via: tuple[SinkHit, str] | None = None


@dataclass(eq=False)
class Summary:
    key: FuncKey
    returns: Val = EMPTY
    return_elements: tuple[Val, ...] | None = None
    hits: list[SinkHit] = field(default_factory=list)
    field_writes: dict[str, Val] = field(default_factory=dict)
    # What constructions here put in a field: (the class's key, field) -> value, for reads
    # of that field anywhere (``construction_keys``).
    constructor_fields: dict[tuple[str, str], Val] = field(default_factory=dict)
    global_writes: dict[str, Val] = field(default_factory=dict)
    # The module's globals the functions of its module it calls write, themselves or
    # through the functions they call (``global NUM`` one call away): a condition on one
    # says nothing after the call (``Calls.call_function``).
    globals_written_by_calls: set[str] = field(default_factory=set)
    # What a closure leaves in names of the function around it (``nonlocal n``), for a
    # call of it where it is defined: the values it wrote, and whether every return
    # comes after a write.
    nonlocal_writes: dict[str, tuple[Val, bool]] = field(default_factory=dict)
    # A module's summary: the class-level names of its classes bound to a callable that
    # holds a sink or forwards to one (``run = staticmethod(kernel)``), for
    # ``Analyzer.note_providers``.
    class_attrs: dict[str, Val] = field(default_factory=dict)
    # Methods called here on ``self``: their field writes are in ``field_writes`` too,
    # through the call's line (a write a call makes in one arm belongs to that arm).
    self_calls: set[FuncKey] = field(default_factory=set)
    param_effects: dict[str, Val] = field(default_factory=dict)
    # What this function assigns to a field of a parameter (``meta.lens = v``):
    # (parameter, field) -> the value, which a caller's argument's field then holds.
    param_fields: dict[tuple[str, str], Val] = field(default_factory=dict)
    # Parameters that reach a sink: name -> the hits carrying their placeholder traces.
    forwards: dict[str, list[SinkHit]] = field(default_factory=dict)
    # Parameters called as functions: name -> (statement, call, evaluated arguments), so a
    # caller that passes a sink as that parameter can replay the call as a sink call.
    param_calls: dict[str, list[tuple[cst.CSTNode, cst.Call, list[tuple[cst.Arg, Val]]]]] = field(
        default_factory=dict
    )


class CallsMade:
    """The calls a function activation made, shared by its branches, and the names they
    were handed (``CallSite.heads``), gathered when first asked for."""

    __slots__ = ("_gathered", "_heads", "_sites")

    def __init__(self) -> None:
        self._sites: list[CallSite] = []
        self._heads: set[str] = set()
        self._gathered = 0  # how many of the sites are in _heads

    def add(self, site: CallSite) -> None:
        self._sites.append(site)

    def heads(self) -> set[str]:
        for site in self._sites[self._gathered :]:
            self._heads |= site.heads
        self._gathered = len(self._sites)
        return self._heads


class Caught:
    """A block whose exception is caught, being run (``Frame.catching``): the states before
    its statements that may raise, joined in one frame as they are met (``frame``, None
    before the first), and the value last joined for each name (``seen``), so that a name
    no statement wrote since is not joined again."""

    __slots__ = ("frame", "seen")

    def __init__(self) -> None:
        self.frame: Frame | None = None
        self.seen: dict[str, Val] = {}

    def take(self, frame: Frame) -> None:
        """``frame``'s state, before a statement that may raise."""
        if self.frame is None:
            self.frame = frame.fork()
            self.seen = dict(frame.state)
        else:
            self.frame.absorb(self.frame, frame, seen=self.seen)


class Frame:
    """The abstract state of one function activation."""

    def __init__(self, key: FuncKey, summary: Summary, parent: Frame | None = None) -> None:
        self.key = key
        self.mod = key.mod
        self.summary = summary
        self.parent = parent
        self.state: dict[str, Val] = {}
        # Slice cells in ``state`` by the key they slice (``buf`` -> {``buf[:n]``}), so that a
        # write to ``buf`` forgets them without scanning every key of the state: that scan
        # made each assignment cost as much as the function had names (issue 18).
        self.cells: dict[str, frozenset[str]] = {}
        self.aliases: dict[str, frozenset[Alias]] = {}  # name -> buffers it is a view of
        self.globals_declared: set[str] = set()
        self.nonlocals_declared: set[str] = set()
        self.local_funcs: dict[str, cst.FunctionDef] = {}
        self.dead = False
        self.returns: list[Val] = []
        # The states in which the function returns (for the fields it leaves behind), the
        # break/continue states of the loops being run, and the fields it writes.
        self.exits: list[dict[str, Val]] = []
        self.loops: list[tuple[list[Frame], list[Frame]]] = []
        # For each `try` with a `finally` being run, innermost last: how many loops were
        # being run at it, and the returns, raises, breaks and continues that leave it,
        # each as (kind, state, statement): its `finally` runs on them before they go on
        # (``Statements.exec_Try``).
        self.finally_exits: list[tuple[int, list[tuple[str, Frame, cst.CSTNode]]]] = []
        # For each block being run whose exception is caught and run on from (a `try`'s
        # body with handlers, the block of a `with` whose manager may swallow), innermost
        # last: the states before each statement run in it that may raise, at any depth,
        # joined in one frame (none until the first: ``Statements.exec_stmt``).
        self.catching: list[Caught] = []
        # The calls made here, in every branch (``retire_in`` asks for their names).
        self.calls = CallsMade()
        self.fields: set[str] = set()
        # Constructor calls evaluated here: call node id -> (field, value) pairs.
        self.constructed: dict[int, list[tuple[str, Val]]] = {}
        self.stmt: cst.CSTNode = key.node if key.node is not None else key.mod.module
        # The path conditions on scalars that hold here (guards.Atom: a dominating `if`,
        # an early exit, an assert), in the order they were met.
        self.guards: tuple = ()
        # "Some row of x op k" conditions that hold here: (x, op, k, statement, the value x
        # held then). Unlike a condition on every row, a selection of x's rows can lose the
        # row it is about, and selections leave no step, so it goes on a path only at a
        # sink call handed x itself, still holding that value (``Calls.record_sink``).
        self.some_rows: tuple = ()
        # Names assigned a max/min bound of a constant (``r = max(x, 1)``): the operand
        # they stand for as a divisor or bound (``"max(r,1)"``), until written again.
        self.bounds: dict[str, str] = {}
        # Names assigned a tensor's max or min (``m = int(x.max())``) or its row count
        # (``n = x.shape[0]``): (``"max"``, ``"min"`` or ``guards.ROWS``, x, the value x
        # held then), until written again, so that a test of the name is one of x's rows
        # while x still holds that value (``Statements.constrain``).
        self.reductions: dict[str, tuple[str, str, Val]] = {}
        # Names assigned a condition on scalars or row counts (``has_decode = n > 0``):
        # the condition and the names it reads, until the name or one of those is
        # written again, so that a test of the name is a test of the condition
        # (``statements.record_test``).
        self.tests: dict[str, tuple[cst.BaseExpression, frozenset[str]]] = {}
        # A chunked loop's names (``for s in range(0, n, c)``, ``e = min(s + c, n)``): the
        # loop's variable as ``("start", "n", "c", reads)``, its chunk's end as ``("end",
        # "s", "", reads)``, until one of the names is written, so that ``x[s:e]`` is a
        # chunk of rows, never empty (``chunks.record_chunk_start``).
        self.chunks: dict[str, tuple[str, str, str, frozenset[str]]] = {}
        # Names assigned a product of two operands (``t = n * k``): the product as a row
        # count (``"t = n * k"``) and the names it reads, until the name or one of those is
        # written again, so that ``x[:t]`` has ``n * k`` rows (``record_product``).
        self.products: dict[str, tuple[str, frozenset[str]]] = {}

    def fork(self) -> Frame:
        f = Frame.__new__(Frame)
        f.key, f.mod, f.summary, f.parent = self.key, self.mod, self.summary, self.parent
        f.state = dict(self.state)
        f.cells = dict(self.cells)
        f.aliases = dict(self.aliases)
        f.globals_declared = self.globals_declared
        f.nonlocals_declared = self.nonlocals_declared
        f.local_funcs = self.local_funcs
        f.dead = self.dead
        f.returns = self.returns
        f.exits = self.exits
        f.loops = self.loops
        f.finally_exits = self.finally_exits
        f.catching = self.catching
        f.calls = self.calls
        f.constructed = self.constructed
        f.fields = self.fields
        f.stmt = self.stmt
        f.guards = self.guards
        f.some_rows = self.some_rows
        f.bounds = dict(self.bounds)
        f.reductions = dict(self.reductions)
        f.tests = dict(self.tests)
        f.chunks = dict(self.chunks)
        f.products = dict(self.products)
        return f

    def absorb(self, *branches: Frame, seen: dict[str, Val] | None = None) -> None:
        """Join the branches' states into this frame (dead branches contribute nothing).
        With ``seen`` (``Caught``), the branches are this frame and one more, whose values
        are joined in place, each only when it is not the one last joined for its name."""
        live = [b for b in branches if not b.dead]
        if not live:
            self.dead = True
            return
        self.dead = False
        # A condition holds after the join only if it holds on every branch that gets here:
        # checked before the branches, or in each of them on its own (then it is shown
        # where the first branch checked it, once).
        kept = [g for g in live[0].guards if all(g in b.guards for b in live[1:])]
        held = {g[:3] for g in kept}
        for g in live[0].guards:
            if g[:3] not in held and all(any(h[:3] == g[:3] for h in b.guards) for b in live[1:]):
                kept.append(g)
                held.add(g[:3])
        self.guards = tuple(kept)
        if self.some_rows or any(b.some_rows for b in live):
            self.some_rows = tuple(
                g
                for g in live[0].some_rows
                if all(any(h is g for h in b.some_rows) for b in live[1:])
            )
        self.bounds = {
            k: v for k, v in live[0].bounds.items() if all(b.bounds.get(k) == v for b in live[1:])
        }
        states = [b.state for b in live]
        first, rest = states[0], states[1:]
        merged: dict[str, Val] = {}
        if seen is not None:
            merged = self.state
            for k, w in (rest[0] if rest else {}).items():
                if seen.get(k) is not w:
                    seen[k] = w
                    v = merged.get(k)
                    merged[k] = join_all([w]) if v is None else v.join(w)
        elif len(rest) == 1:  # an if and its else, the commonest join: one pass over each
            other = rest[0]
            for k, v in first.items():
                w = other.get(k)
                if w is v:
                    # One value on both branches (most names): what joining it with itself gives.
                    merged[k] = v if v.traces or v.refs or v.elements is not None else EMPTY
                else:
                    merged[k] = join_all([v] if w is None else [v, w])
            for k, w in other.items():
                if k not in first:
                    merged[k] = join_all([w])
        else:
            keys: set[str] = set(first)
            for state in rest:
                keys.update(state)
            for k in keys:
                v = first.get(k)
                if v is not None and all(state.get(k) is v for state in rest):
                    merged[k] = v if v.traces or v.refs or v.elements is not None else EMPTY
                else:
                    merged[k] = join_all([state[k] for state in states if k in state])
        self.tests = {
            k: v for k, v in live[0].tests.items() if all(b.tests.get(k) is v for b in live[1:])
        }
        self.chunks = {
            k: v for k, v in live[0].chunks.items() if all(b.chunks.get(k) == v for b in live[1:])
        }
        self.products = {
            k: v
            for k, v in live[0].products.items()
            if all(b.products.get(k) == v for b in live[1:])
        }
        self.state = merged
        # A name that stands for x's max or row count on every branch, x holding there
        # what it held when the name was assigned, stands for the joined x's.
        reductions: dict[str, tuple[str, str, Val]] = {}
        for k, (fn, key, _) in live[0].reductions.items():
            for b in live:
                held = b.reductions.get(k)
                if held is None or held[:2] != (fn, key) or b.state.get(key) is not held[2]:
                    break
            else:
                if key in merged:
                    reductions[k] = (fn, key, merged[key])
        self.reductions = reductions
        cells: dict[str, frozenset[str]] = {}
        for b in live:  # a superset is harmless: forgetting pops only the cells still there
            for k, v in b.cells.items():
                cells[k] = cells.get(k, frozenset()) | v
        self.cells = cells
        aliases: dict[str, frozenset[Alias]] = {}
        for b in live:
            for k, v in b.aliases.items():
                aliases[k] = aliases.get(k, frozenset()) | v
        self.aliases = aliases


# ---------------------------------------------------------------- what a summary was made from

# A token, with a class, how many modules were parsed and what was found: the answer
# listed the class's subclasses in the parsed modules.
PARSED = "*parsed"
RECURSION = "*recursion"  # a token: the answer met a depth limit or a value being resolved
CYCLE = "*cycle"  # a token: the answer used a summary or answer still being made
CAPABLE = "*capable"  # a token, with a module: the module was not known to reach a sink
WRAPPER = "*wrapper"  # a token, with a name: the name was not known to be a sink's wrapper


class DepNode:
    """What one summary, or one cached answer, was made from: the answers that may still
    change within a run (``tokens``: a module neither parsed nor known to reach a sink, or
    only not known to reach one (``CAPABLE``); a name not known to wrap a sink
    (``WRAPPER``); the subclasses of a class found in the modules parsed then (``PARSED``,
    changed only by a module parsed since that holds another); an answer that depended on
    where a depth limit or a value being resolved was met (``RECURSION``); a summary or an
    answer read while it was being made (``CYCLE``, never changed itself: the read is an
    edge, so the reader is made again with it)), and the summaries and cached answers it
    used (``edges``). A summary can be kept for the next round of ``Engine.analyse`` when
    no node it reaches holds a token that changed: interpreting it again at the start of
    that round would ask the same questions, get the same answers, and give the same
    summary. (Within a round, as in the first, a name found to wrap a sink is seen by the
    summaries made after it; a new wrapper makes another round where files name it, and
    that round checks the tokens again.)

    ``events``, kept only where summaries outlive a run (the language server's warm index),
    is every question the making asked of what another run can change, in order, with its
    answer, and what it recorded for others (``Analyzer.replay``). None where the making
    cannot be replayed: it used an answer the replay cannot check (an origin's resolution,
    a call's contexts), or met a limit or a value being resolved (``Analyzer.note``)."""

    __slots__ = ("edges", "events", "open", "read", "tokens")

    def __init__(self, events: list[tuple] | None = None) -> None:
        self.tokens: set[object] = set()
        self.edges: set[DepNode] = set()
        self.open = False  # being made: a use now is a recursion
        # A summary's making: the functions whose summaries it read, made or being made,
        # in any making of it this run (None: a cached answer's making).
        self.read: set | None = None
        self.events = events
