"""Statement interpretation: one ``exec_*`` per statement kind, and the writes they make.

``x //= c`` is ``exec_AugAssign``: the division is a source (``Expressions.source``), the
result written back in place (``write_whole``), so views and aliases of ``x`` change too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import libcst as cst

from zerolint.dataflow import guards
from zerolint.dataflow.chunks import record_chunk_end, record_chunk_start
from zerolint.dataflow.frames import (
    Caught,
    Frame,
    FuncKey,
    ParamObject,
    retire_in,
    retired_value,
)
from zerolint.dataflow.library import (
    DIVISIONS,
    OPERATOR_NAMES,
)
from zerolint.dataflow.signatures import LibEffect
from zerolint.dataflow.syntax import (
    base_key,
    bound_in,
    bound_to_a_container,
    dict_key,
    dotted,
    int_value,
    is_zero,
    mask_rows,
    operand,
    peel_views,
    read_names,
    reads_what_it_binds,
    row_slice,
    slice_bounds,
    slice_cell,
    statements,
    string_value,
    whole_view_of,
    writes_nothing,
    written_as_zero,
)
from zerolint.dataflow.values import (
    EMPTY,
    CallOrigin,
    ClassRef,
    Effect,
    FuncRef,
    InstRef,
    PendingRef,
    RawStep,
    Ref,
    Trace,
    Val,
    counts_rows,
    join_all,
    without_row_counts,
)
from zerolint.model import (
    ANY_ROWS,
    EVERY_ROW,
    IDENTITY,
    ROW_VALUES,
    SOME_ROW,
    Op,
    OpKind,
    product_count,
)
from zerolint.project import ClassInfo, ModuleInfo, namespace_key, record_import

_UNKNOWN = object()
# Statements that cannot raise, so that no exception is caught in the state before them.
_NEVER_RAISE = frozenset({cst.Pass, cst.Break, cst.Continue, cst.Global, cst.Nonlocal})


def _returns_a_name(stmt: cst.CSTNode) -> bool:
    """``return``, ``return None``, ``return x`` or ``return 0``: a return that cannot
    raise (reading a local that may be unbound aside)."""
    if type(stmt) is not cst.Return:
        return False
    value = stmt.value
    return value is None or type(value) in (cst.Name, cst.Integer, cst.SimpleString)


# Context managers that may swallow the exception their block raises (a stack may hold
# one that does), and subclasses of them (Statements.may_swallow, Statements.swallows).
SWALLOWING_MANAGERS = frozenset(
    {"contextlib.suppress", "contextlib.ExitStack", "contextlib.AsyncExitStack"}
)
# The decorators that make a generator a context manager (Statements.generator_swallows).
CONTEXT_MANAGER_DECORATORS = frozenset(
    {"contextlib.contextmanager", "contextlib.asynccontextmanager"}
)
# How many finally blocks, each run for the ways out of its try, may be run inside one
# another; deeper, the ways out join the way on (Statements.exec_Try).
MAX_EXIT_FINALLIES = 2


class Statements:
    """Part of ``Analyzer`` (see analyzer.py); methods call each other through ``self``."""

    # The exec_ method of each statement type, None for none (Analyzer.__init__).
    executors: dict[type, Callable[..., None] | None]

    # ------------------------------------------------------------------ statements

    def exec_block(self, frame: Frame, body: Sequence[cst.CSTNode]) -> None:
        for stmt in body:
            if frame.dead:
                return
            self.exec_stmt(frame, stmt)

    def exec_stmt(self, frame: Frame, stmt: cst.CSTNode) -> None:
        """One statement, dispatched to ``exec_<NodeType>`` as expressions are to
        ``eval_<NodeType>``; a statement kind without a method carries no lengths (a class
        defined inside a function, ``pass``, imports inside functions...)."""
        if type(stmt) is cst.SimpleStatementLine:
            for small in stmt.body:
                if frame.dead:
                    return
                frame.stmt = small
                self.exec_stmt(frame, small)
            return
        if frame.catching and type(stmt) not in _NEVER_RAISE and not _returns_a_name(stmt):
            # The statement may raise before it has done anything: the state before it is
            # one its exception may be caught in, joined into what each block holds.
            for caught in frame.catching:
                caught.take(frame)
        kind = type(stmt)
        frame.stmt = stmt
        method = self.executors.get(kind, _UNKNOWN)
        if method is _UNKNOWN:
            method = self.executors[kind] = getattr(type(self), f"exec_{kind.__name__}", None)
        if method is not None:
            method(self, frame, stmt)

    # ------------------------------------------------------------------ compound statements

    def exec_If(self, frame: Frame, stmt: cst.If) -> None:
        self.eval(frame, stmt.test)
        then = frame.fork()
        self.constrain(then, stmt.test, True)
        self.exec_suite(then, stmt.body)
        other = frame.fork()
        self.constrain(other, stmt.test, False)
        if type(stmt.orelse) is cst.If:
            self.exec_stmt(other, stmt.orelse)
        elif stmt.orelse is not None:
            self.exec_suite(other, stmt.orelse.body)
        frame.absorb(then, other)

    def exec_Assert(self, frame: Frame, stmt: cst.Assert) -> None:
        if writes_nothing(stmt.test):
            self.eval(frame, stmt.test)
        else:
            # `python -O` leaves the test out: what it writes may not have happened.
            ran = frame.fork()
            self.eval(ran, stmt.test)
            frame.absorb(ran, frame.fork())
        self.constrain(frame, stmt.test, True)

    def constrain(self, frame: Frame, test: cst.BaseExpression, positive: bool) -> None:
        """The path conditions ``test`` being ``positive`` adds: a scalar's go on the frame
        (``Frame.guards``), a tensor's row count or a condition on every row of it goes on
        the tensor's traces as a guard step, so what is computed from it later carries it;
        one on some row of it waits on the frame for a sink handed the tensor itself
        (``Frame.some_rows``)."""
        self.hold(
            frame,
            guards.atoms(test, positive),
            lambda: guards.atoms(test, positive, truthiness=False),
        )

    def hold(
        self,
        frame: Frame,
        found: list[guards.Atom],
        comparisons: Callable[[], list[guards.Atom]],
    ) -> None:
        """The conditions ``found`` hold on this path (``constrain``); ``comparisons()``
        gives those of them that say their scalar is one (a comparison with an integer,
        not a bare truth test)."""
        some = []
        compared: set[guards.Atom] | None = None  # what a comparison says, when asked
        for subject, op, k in found:
            kind, name = subject
            if kind == "sym":
                frame.guards = (*frame.guards, (name, op, k, frame.stmt))
                if k == 0 and op in ("!=", "=="):
                    named = frame.tests.get(name)
                    if named is not None:  # `has_decode = n > 0` then `if has_decode:`
                        del frame.tests[name]  # once: `t = not t` names itself
                        self.constrain(frame, named[0], op == "!=")
                        frame.tests[name] = named
                reduction = frame.reductions.get(name)
                if reduction is not None and frame.state.get(reduction[1]) is reduction[2]:
                    # `m = x.max()` then `if m == 0`: as `if x.max() == 0`
                    some += self.reduction_guarded(frame, reduction[:2], op, k)
                elif name in frame.state:
                    # A value compared with an integer is a scalar (a tensor of more than
                    # one element has no truth): the condition holds for every row it
                    # fills. Not a bare truth test, which a list of zeros passes.
                    if compared is None:
                        compared = set(comparisons())
                    if (subject, op, k) in compared:
                        note = f"guard: {name} {op} {k}"
                        self.every_row_guarded(frame, EVERY_ROW, name, op, k, note)
                continue
            if kind == SOME_ROW:
                some.append((name, op, k))  # once the value it is about is final, below
                continue
            self.every_row_guarded(frame, kind, name, op, k)
        for name, op, k in some:
            held = frame.state.get(name)
            if held is not None and held.traces:
                frame.some_rows = (*frame.some_rows, (name, op, k, frame.stmt, held))

    def reduction_guarded(
        self, frame: Frame, reduction: tuple[str, str], op: str, k: int
    ) -> list[tuple[str, str, int]]:
        """A test of a tensor's max or min (by the name it was assigned to): what it says
        of every row goes on the tensor now; what it says of some row is returned."""
        some = []
        fn, key = reduction
        for (kind, name), row_op, row_k in guards.reduction_atoms(fn, key, op, k):
            if kind == SOME_ROW:
                some.append((name, row_op, row_k))
            else:
                self.every_row_guarded(frame, kind, name, row_op, row_k)
        return some

    def every_row_guarded(
        self, frame: Frame, kind: str, name: str, op: str, k: int, note: str = ""
    ) -> None:
        """A condition on the row count of the tensor ``name`` (``guards.ROWS``) or on every
        row of it (``EVERY_ROW``), as a guard step on its traces; a name assigned its max
        or min (``Frame.reductions``) keeps up with the new value."""
        held = frame.state.get(name)
        val = self.read_key(frame, name) if held is not None else EMPTY
        if not val.traces:
            return
        if kind == guards.ROWS and (
            val.elements is not None or bound_to_a_container(frame.key.node, name)
        ):
            return  # `len(parts)` of a list counts its parts, not their rows
        rows = "rows of" if kind == guards.ROWS else "every row of"
        note = note or f"guard: {rows} {name} {op} {k}"
        step = guards.step(frame.mod, frame.stmt, kind, op, k, note)
        guarded = frame.state[name] = val.with_traces(val.then(step).traces)
        for local, (fn, key, value) in list(frame.reductions.items()):
            if key == name and value is held:
                frame.reductions[local] = (fn, key, guarded)

    def record_reduction(self, frame: Frame, name: str, value: cst.BaseExpression | None) -> None:
        """``m = int(x.max())`` or ``n = x.shape[0]``: until the name is written again, a
        test of it is one of x's rows or of its row count, while x holds the value it holds
        now (``Frame.reductions``)."""
        frame.reductions.pop(name, None)
        if type(value) is cst.Call:
            reduction = guards.reduced(value) or guards.counted(value)
        elif type(value) is cst.Subscript:
            reduction = guards.counted(value)
        else:
            reduction = None
        if reduction is None or name in frame.globals_declared:
            return
        fn, key = reduction
        held = frame.state.get(key)
        if held is not None and held.traces:
            frame.reductions[name] = (fn, key, held)

    def exec_For(self, frame: Frame, stmt: cst.For) -> None:
        self.exec_loop(frame, stmt)

    def exec_While(self, frame: Frame, stmt: cst.While) -> None:
        self.exec_loop(frame, stmt)

    def exec_Try(self, frame: Frame, stmt: cst.Try | cst.TryStar) -> None:
        start = frame.fork()
        body = frame.fork()
        # The ways out of the try through its finally: (kind, state, statement).
        exits: list[tuple[str, Frame, cst.CSTNode]] = []
        if stmt.finalbody is not None:
            frame.finally_exits.append((len(frame.loops), exits))
        raised: list[Frame] = []
        if stmt.handlers:
            raised = self.exec_catching(body, stmt.body)
        else:
            self.exec_suite(body, stmt.body)
        if stmt.orelse is not None:
            self.exec_suite(body, stmt.orelse.body)
        branches = [body]
        for handler in stmt.handlers:
            h = start.fork()
            h.absorb(start, body, *raised)
            h.dead = False
            self.eval(h, handler.type)  # `except (kernel(lens), E):` runs the call
            if handler.name is not None and type(handler.name.name) is cst.Name:
                h.state[handler.name.name.value] = EMPTY
            self.exec_suite(h, handler.body)
            branches.append(h)
        frame.absorb(*branches)
        if stmt.finalbody is None:
            return
        frame.finally_exits.pop()
        # Each kind of way out (return, raise, break, continue) runs the finally on its
        # states, then goes where it goes with what the finally left (`try: lens =
        # lens.clamp(min=1); break` / `finally: lens = lens - 1`: the loop is left with
        # lens - 1).
        kinds: dict[str, list[tuple[Frame, cst.CSTNode]]] = {}
        for kind, state, node in exits:
            kinds.setdefault(kind, []).append((state, node))
        deep = bool(exits) and self._exit_finallies >= MAX_EXIT_FINALLIES
        if deep:
            # Finally blocks inside finally blocks: each would run its own once more for
            # every one around it. The ways out join the way on instead (one run), and
            # each goes on from what that run leaves.
            frame.absorb(frame.fork(), *(state for _, state, _ in exits))
        else:
            for kind, left in kinds.items():
                out = left[0][0].fork()
                out.absorb(*(state for state, _ in left))
                before = out.fork() if kind == "return" else None
                self._exit_finallies += 1
                try:
                    self.exec_suite(out, stmt.finalbody.body)
                finally:
                    self._exit_finallies -= 1
                if not out.dead:
                    self.go_on(out, kind, [node for _, node in left], before)
        was_dead = frame.dead
        before = frame.fork() if deep and "return" in kinds else None
        frame.dead = False
        self.exec_suite(frame, stmt.finalbody.body)
        if deep and not frame.dead:
            for kind, left in kinds.items():
                self.go_on(frame.fork(), kind, [node for _, node in left], before)
        frame.dead = frame.dead or was_dead

    def go_on(
        self, frame: Frame, kind: str, nodes: list[cst.CSTNode], before: Frame | None
    ) -> None:
        """A return, raise, break or continue (``kind``; the statements: ``nodes``) goes on
        from ``frame``, the state a finally it left through left: to the finally of a try
        around it, if any, else where it goes (the loop's breaks or continues; for a return,
        the state the function returns in). A returned name the finally wrote (``return
        lens`` / ``finally: lens.sub_(1)``, in place) may hold what it wrote (``before``:
        the state the finally was run from)."""
        if kind == "return" and before is not None:
            for node in nodes:
                value = node.value if type(node) is cst.Return else None
                name = dotted(value) if value is not None else None
                if name is not None and frame.state.get(name) is not before.state.get(name):
                    self.hand_back(frame, self.read_key(frame, name), node)
        if self.leave(frame, kind, nodes[0]):
            return
        if kind == "return":
            frame.exits.append(exit_state(frame))
        elif kind in ("break", "continue") and frame.loops:
            breaks, continues = frame.loops[-1]
            (breaks if kind == "break" else continues).append(frame)

    def leave(self, frame: Frame, kind: str, node: cst.CSTNode) -> bool:
        """``frame`` leaves by a return, raise, break or continue (``kind``): whether the
        innermost ``try`` with a ``finally`` around it takes it (a return or a raise
        always, a break or a continue where that try is inside the loop it leaves), to run
        the finally on it first (``go_on``)."""
        if not frame.finally_exits:
            return False
        depth, exits = frame.finally_exits[-1]
        if kind in ("break", "continue") and depth != len(frame.loops):
            return False
        exits.append((kind, frame.fork(), node))
        return True

    exec_TryStar = exec_Try

    def exec_With(self, frame: Frame, stmt: cst.With) -> None:
        suppresses = False
        for item in stmt.items:
            val = self.eval(frame, item.item)
            if item.asname is not None:
                val = self.retire_targets(frame, [item.asname.name], val)
                self.assign(frame, item.asname.name, val, item.item)
            suppresses = suppresses or self.may_swallow(val)
        if not suppresses:
            self.exec_suite(frame, stmt.body)
            return
        # `with contextlib.suppress(E):` an exception raised in the body, a `raise` there
        # included, ends the body and the run goes on after it: no guard.
        entry = frame.fork()
        raised = self.exec_catching(frame, stmt.body)
        frame.absorb(frame.fork(), entry, *raised)

    def exec_catching(self, frame: Frame, suite: cst.BaseSuite) -> list[Frame]:
        """Run ``suite``, whose exception is caught: the states it may raise in (before
        each statement run in it that may raise, at any depth: ``exec_stmt``), joined in
        one (none where no statement may raise)."""
        caught = Caught()
        frame.catching.append(caught)
        try:
            self.exec_suite(frame, suite)
        finally:
            frame.catching.pop()
        return [] if caught.frame is None else [caught.frame]

    def may_swallow(self, val: Val) -> bool:
        """Whether the context manager ``val`` may swallow the exception its block raises,
        by what it holds, so that one made before (``cm = suppress(E)``) or on one arm of
        an ``if`` expression counts too: ``contextlib.suppress(...)``, an ``ExitStack`` or
        ``AsyncExitStack`` (what is entered into it is not followed: it may be entered
        anywhere it is handed, so it is taken to hold a manager that swallows), an object
        of a class of the project that swallows (``swallows``), or what a generator of the
        project made a context manager by ``@contextmanager`` gives
        (``generator_swallows``)."""
        for held in val.refs:
            if isinstance(held, PendingRef):
                origin = held.origin
                if (
                    isinstance(origin, CallOrigin)
                    and origin.site.callee is not None
                    and self.generator_swallows(origin.site.callee)
                ):
                    return True
                refs = self.resolve_refs(held)
            else:
                refs = [held]
            for r in refs:
                if isinstance(r, InstRef) and (
                    r.cls in SWALLOWING_MANAGERS if isinstance(r.cls, str) else self.swallows(r.cls)
                ):
                    return True
        return False

    def swallows(self, cls: ClassInfo) -> bool:
        """Whether a context manager of ``cls`` may swallow the exception its block
        raises: the ``__exit__`` (or ``__aexit__``) its MRO finds returns something other
        than ``None`` or ``False`` (``return True``, ``return self.quiet``), or it derives
        from ``contextlib.suppress``, ``ExitStack`` or ``AsyncExitStack``."""
        mro = self.mro(cls)
        for c in mro:  # a subclass of contextlib.suppress
            for base in c.bases:
                if qualified(c.module, base) in SWALLOWING_MANAGERS:
                    return True
        owner = next((c for c in mro if {"__exit__", "__aexit__"} & c.methods.keys()), None)
        if owner is None:
            return False
        exit_method = owner.methods.get("__exit__") or owner.methods["__aexit__"]
        for node in (n for stmt in exit_method.body.body for n in statements(stmt)):
            if type(node) is cst.Return:
                value = node.value
                if value is not None and not (
                    type(value) is cst.Name and value.value in ("None", "False")
                ):
                    return True
        return False

    def generator_swallows(self, key: FuncKey) -> bool:
        """Whether ``key``, a generator made a context manager (``@contextmanager``,
        ``@asynccontextmanager``), may swallow the exception raised in the block of the
        ``with`` it is entered by: that exception is raised at its ``yield``, so it is
        swallowed where a ``yield`` sits in a ``try`` with a handler that may end without
        raising (``except X: raise`` does not swallow; one that returns does) or with a
        ``finally`` that may return, break or continue, or in a ``with`` of a manager that
        swallows (``contextlib.suppress``, a class or such a generator of its module)."""
        node = key.node
        if node is None or not any(
            qualified(key.mod, d.decorator) in CONTEXT_MANAGER_DECORATORS for d in node.decorators
        ):
            return False
        found = self._swallowing.get(id(node))
        if found is None:
            self._swallowing[id(node)] = False  # a generator entering itself: not again
            found = self._swallowing[id(node)] = self._generator_swallows(key)
        return found

    def _generator_swallows(self, key: FuncKey) -> bool:
        mod = key.mod
        for top in key.node.body.body:  # type: ignore[union-attr]
            for stmt in statements(top):
                kind = type(stmt)
                if kind is cst.Try or kind is cst.TryStar:
                    if not _yields_in(stmt.body.body):
                        continue
                    if any(not _reraises(h.body.body) for h in stmt.handlers):
                        return True
                    if stmt.finalbody is not None and _leaves(stmt.finalbody.body.body):
                        return True
                elif kind is cst.With and _yields_in(stmt.body.body):
                    for item in stmt.items:
                        if type(item.item) is cst.Call and self._made_swallowing(mod, item.item):
                            return True
        return False

    def _made_swallowing(self, mod: ModuleInfo, call: cst.Call) -> bool:
        """Whether ``call``, a ``with`` item in a generator of ``mod``, makes a manager that
        swallows: ``contextlib.suppress(...)`` and the stacks, or a class or a generator of
        ``mod`` itself (no other module is looked into)."""
        name = dotted(call.func)
        if name is None:
            return False
        if qualified(mod, call.func) in SWALLOWING_MANAGERS:
            return True
        cls = mod.classes.get(name)
        if cls is not None:
            return self.swallows(cls)
        fn = mod.functions.get(name)
        return fn is not None and self.generator_swallows(self.func_key(mod, fn))

    def exec_Import(self, frame: Frame, stmt: cst.Import | cst.ImportFrom) -> None:
        """An import binds its names where it runs, as an assignment does, so that each arm
        of an ``if`` or a ``try`` keeps its own (``from deep_gemm import fp8_paged_mqa_logits
        as fn`` in one, ``fn = fallback`` in another; ``except ImportError: fn = None``). A
        name read without such a binding is looked up in the module's imports
        (``Expressions.read_name``), so at module level only the names that are assigned
        too, declared ``global`` by a function, or bound by another import or a ``def``
        (``ModuleInfo.read_through_code``), whose reads go through what the module's code
        writes, are bound here."""
        module_level = frame.key.node is None
        table: dict[str, str] = {}
        record_import(frame.mod, stmt, table)
        for local, qual in table.items():
            if local[:1] == "*":
                continue
            # What was made from the name's old value keeps it (`x = buf[:n]`, then `from
            # settings import n`), and what held of it (`if n == 0: return`) holds no more.
            if self.rebinds(frame, local, None):
                retire_in(frame, local)
            forget_facts(frame, local)
            if module_level and not frame.mod.read_through_code(local):
                continue
            val = Val((), self.lookup_qualified(frame.mod, qual))
            frame.state[local] = val
            if module_level or local in frame.globals_declared:
                prev = frame.summary.global_writes.get(local, EMPTY)
                frame.summary.global_writes[local] = prev.join(val)

    exec_ImportFrom = exec_Import

    def exec_FunctionDef(self, frame: Frame, stmt: cst.FunctionDef) -> None:
        for decorator in stmt.decorators:  # `@cache(kernel(lens))` runs where the def is
            if type(decorator.decorator) is cst.Call:
                self.eval(frame, decorator.decorator)
        self.eval_defaults(frame, stmt.params)  # so do its defaults, after them
        frame.local_funcs[stmt.name.value] = stmt
        frame.state[stmt.name.value] = Val((), [FuncRef(self.func_key(frame.mod, stmt))])

    def exec_ClassDef(self, frame: Frame, stmt: cst.ClassDef) -> None:
        """A class statement runs its decorators' calls and its bases' and keywords' where
        it is (`@register(kernel(lens))`); its body is not followed (README)."""
        for part in (*(d.decorator for d in stmt.decorators), *(a.value for a in stmt.bases)):
            if type(part) is cst.Call:
                self.eval(frame, part)
        for arg in stmt.keywords:
            if type(arg.value) is cst.Call:
                self.eval(frame, arg.value)
        name = stmt.name.value
        if frame.key.node is None and name in frame.mod.import_arms:
            # What the name holds from here on, where an import in another arm binds it too
            # (the module's last binding of it is its value: Analyzer._interpret).
            frame.state[name] = Val((), [ClassRef(frame.mod.classes[name])])

    def exec_Match(self, frame: Frame, stmt: cst.Match) -> None:
        """Each case runs where the cases before it did not match: ``case 0: return``
        is the test ``subject == 0``, and the cases after it run where it is false. A
        case that matches anything (``case _:``, ``case n:``) leaves no way past the
        ``match``. The names a case binds hold the parts of the subject they matched
        (``bind_pattern``)."""
        subject = self.eval(frame, stmt.subject)
        branches = []
        rest = frame.fork()  # where no case so far matched
        for case in stmt.cases:
            b = rest.fork()
            test = _case_test(stmt.subject, case.pattern)
            if test is not None:
                b.stmt = stmt  # a case has no line of its own in Python's tree
                self.constrain(b, test, True)
            for name in pattern_names(case.pattern):  # `case {"n": n}:` binds n again
                b.stmt = stmt
                retire_in(b, name)
                forget_facts(b, name)
            b.stmt = stmt
            self.bind_pattern(b, case.pattern, subject, stmt.subject)
            if case.guard is not None:
                b.stmt = stmt
                self.constrain(b, case.guard, True)
            self.exec_suite(b, case.body)
            branches.append(b)
            if case.guard is None:
                if test is not None:
                    rest.stmt = stmt
                    self.constrain(rest, test, False)
                elif type(case.pattern) is cst.MatchAs and case.pattern.pattern is None:
                    rest.dead = True
        frame.absorb(rest, *branches)

    def bind_pattern(
        self,
        frame: Frame,
        pattern: cst.MatchPattern,
        val: Val,
        node: cst.BaseExpression | None,
    ) -> None:
        """Bind what ``pattern`` captures, each name to the part of ``val`` it matched:
        the subject itself (``case n:``, ``case int(n):``, ``... as n``), an element
        (``case (lens, _):``), a literal key's value (``case {"lens": lens}:``), a
        keyword's field (``case Meta(seq_lens=lens):``) or a positional one as
        ``match_args`` names it (``case Meta(lens, _):``). ``node`` is the subject's
        expression while the pattern stands for all of it (``n = subject``). A part
        nothing is known of (a positional field ``match_args`` does not name) is bound to
        nothing known; the alternatives of ``a | b`` each bind their names, joined."""
        kind = type(pattern)
        if kind is cst.MatchAs:
            if pattern.pattern is not None:
                self.bind_pattern(frame, pattern.pattern, val, node)
            if pattern.name is not None:
                self.assign(frame, pattern.name, val, node)
        elif kind is cst.MatchOr:
            bound: dict[str, Val] = {}
            for alt in pattern.patterns:
                scratch = frame.fork()
                self.bind_pattern(scratch, alt.pattern, val, None)
                for name in pattern_names(alt.pattern):
                    part = scratch.state.get(name, EMPTY)
                    bound[name] = bound[name].join(part) if name in bound else part
            for name, part in bound.items():
                self.assign(frame, cst.Name(name), part, None)
        elif isinstance(pattern, cst.MatchSequence):  # MatchList, MatchTuple
            items = list(pattern.patterns)
            star = next((i for i, p in enumerate(items) if type(p) is cst.MatchStar), None)
            for i, item in enumerate(items):
                if type(item) is cst.MatchStar:
                    if item.name is not None:
                        self.assign(frame, item.name, val.only_traces_and_refs(), None)
                    continue
                if star is None or i < star:
                    part = val.element(i)
                elif val.elements is not None and len(val.elements) >= len(items) - 1:
                    part = val.elements[len(val.elements) - (len(items) - i)]
                else:
                    part = val.only_traces_and_refs()
                self.bind_pattern(frame, item.value, part, None)
        elif kind is cst.MatchMapping:
            for element in pattern.elements:
                key = dict_key(element.key)
                part = val.at_key(key) if key is not None else None
                if part is None:
                    part = join_all([val.only_traces_and_refs(), *(val.elements or ())])
                self.bind_pattern(frame, element.pattern, part, None)
            if pattern.rest is not None:
                self.assign(frame, pattern.rest, val.only_traces_and_refs(), None)
        elif kind is cst.MatchClass:
            whole = dotted(pattern.cls) in _SELF_MATCHING and len(pattern.patterns) == 1
            fields = [] if whole or not pattern.patterns else self.match_args(frame, pattern.cls)
            for i, arg in enumerate(pattern.patterns):
                if whole:
                    part = val
                elif i < len(fields):
                    part = self.attribute(frame, val, fields[i])
                else:
                    part = EMPTY
                self.bind_pattern(frame, arg.value, part, node if whole else None)
            for kwd in pattern.kwds:
                field = self.attribute(frame, val, kwd.key.value)
                self.bind_pattern(frame, kwd.pattern, field, None)

    def match_args(self, frame: Frame, cls: cst.BaseExpression) -> list[str]:
        """The fields a class pattern's positional patterns match, as ``__match_args__``
        names them for one of the project's classes: the strings the class (or a base)
        assigns it; else, for a dataclass, its fields and its dataclass bases' that the
        generated ``__init__`` takes (bases first, not ``field(init=False)``), whatever
        ``__init__`` it writes itself. None for another class, or a dataclass whose
        fields may be keyword-only (``kw_only``, ``KW_ONLY``), which it leaves out."""
        for ref in self.eval(frame, cls).refs:
            if not isinstance(ref, ClassRef):
                continue
            family = self.mro(ref.cls)
            for c in family:
                declared = c.assigned.get("__match_args__")
                if declared:
                    value = declared[-1][1]
                    texts = [
                        string_value(e.value)
                        for e in (value.elements if type(value) in (cst.Tuple, cst.List) else ())
                    ]
                    return [t for t in texts if t is not None] if None not in texts else []
            if not ref.cls.is_dataclass:
                return []
            names: dict[str, bool] = {}
            for c in reversed(family):
                if c.is_dataclass:
                    if _may_be_keyword_only(c):
                        return []
                    for name in c.fields:
                        names.setdefault(name, in_init(c, name))
            return [name for name, taken in names.items() if taken]
        return []

    def exec_suite(self, frame: Frame, suite: cst.BaseSuite) -> None:
        """A block: indented lines, or the small statements written on the compound
        statement's own line (``if c: x = y // 4``, ``def f(n): return kernel(n)``)."""
        self.exec_block(frame, suite.body)

    def alias_each(self, frame: Frame, name: str, literal: cst.List | cst.Tuple) -> None:
        """``for same in [meta, other]:`` binds ``name`` to each element in turn: another
        name for each of them, as ``same = meta`` is (``frame.aliases``), on some passes
        (a write through it may be into any, which ``write_through_aliases`` joins)."""
        views: set[str] = set()
        for element in literal.elements:
            if type(element) is cst.StarredElement:
                return
            views |= self.view_bases(frame, element.value)
        views.discard(name)
        if views:
            frame.aliases[name] = frozenset(views)

    def exec_loop(self, frame: Frame, stmt: cst.For | cst.While) -> None:
        before = frame.fork()
        body = frame.fork()
        breaks: list[Frame] = []
        for _ in range(2):  # a second pass carries values around the back edge
            continues: list[Frame] = []
            frame.loops.append((breaks, continues))
            if type(stmt) is cst.For:
                it = self.eval(body, stmt.iter).iterated().then(self.step(body, stmt, "flow"))
                it = self.retire_targets(body, [stmt.target], it)
                self.assign(body, stmt.target, it, stmt.iter)
                if type(stmt.target) is cst.Name and type(stmt.iter) in (cst.List, cst.Tuple):
                    self.alias_each(body, stmt.target.value, stmt.iter)
                # `for i in range(n)`: the body runs only where the range yields (n > 0).
                runs = guards.loop_atoms(stmt.iter)
                if runs and not reads_what_it_binds(stmt.target, stmt.iter):
                    body.stmt = stmt
                    self.hold(body, runs, lambda runs=runs: runs)
                record_chunk_start(body, stmt.target, stmt.iter)
            else:
                self.eval(body, stmt.test)
                body.stmt = stmt
                self.constrain(body, stmt.test, True)
            self.exec_suite(body, stmt.body)
            frame.loops.pop()
            merged = before.fork()
            merged.absorb(before, body, *continues)
            body = merged
        if type(stmt) is cst.While:  # left without a break: the test was false
            for left in (before, body):
                left.stmt = stmt
                self.constrain(left, stmt.test, False)
        if stmt.orelse is None:
            frame.absorb(before, body, *breaks)
            self.settle_loop_name(frame, stmt, breaks)
            return
        # The else runs where the loop ended without a break, and a break skips it.
        frame.absorb(before, body)
        self.settle_loop_name(frame, stmt, breaks)
        self.exec_suite(frame, stmt.orelse.body)
        if breaks:
            frame.absorb(frame.fork(), *breaks)

    def settle_loop_name(self, frame: Frame, stmt: cst.For | cst.While, breaks: list) -> None:
        """After a loop over a list or a tuple written out that no ``break`` left, its
        name is the last element's only (``alias_each`` made it another name for each);
        not where the body binds the name itself, or a name the elements read (the last
        element's name may stand for another object now)."""
        if (
            type(stmt) is not cst.For
            or type(stmt.target) is not cst.Name
            or type(stmt.iter) not in (cst.List, cst.Tuple)
            or breaks
            or not stmt.iter.elements
            or type(stmt.iter.elements[-1]) is cst.StarredElement
            or any(
                bound_in(stmt.body, name.split(".", 1)[0])
                for name in [stmt.target.value, *read_names(stmt.iter)]
            )
        ):
            return
        name = stmt.target.value
        views = self.view_bases(frame, stmt.iter.elements[-1].value) - {name}
        if views:
            frame.aliases[name] = views
        else:
            frame.aliases.pop(name, None)

    # ------------------------------------------------------------------ simple statements

    def exec_Assign(self, frame: Frame, stmt: cst.Assign) -> None:
        self.assign_all(frame, [target.target for target in stmt.targets], stmt.value)

    def exec_AnnAssign(self, frame: Frame, stmt: cst.AnnAssign) -> None:
        if stmt.value is not None:
            self.assign_all(frame, [stmt.target], stmt.value)

    def assign_all(
        self, frame: Frame, targets: list[cst.BaseExpression], value: cst.BaseExpression
    ) -> None:
        """``targets = value``: what is stored names the values the targets had before
        (``retired_value``)."""
        val = self.retire_targets(frame, targets, self.eval(frame, value))
        for target in targets:
            self.assign(frame, target, val, value)

    def retire_targets(self, frame: Frame, targets: list[cst.BaseExpression], val: Val) -> Val:
        """``val``, about to be bound to ``targets`` (by ``=``, a ``for`` or a ``with``),
        naming the values the names it binds had before (``retired_value``): ``for n, x in
        [f(buf, n)]`` binds ``n`` before ``x``, whose rows are the old ``n``'s."""
        if val.traces or val.elements is not None:  # else it names nothing to rename
            return retired_value(frame, val, self.rebound_names(frame, targets))
        return val

    def rebound_names(self, frame: Frame, targets: list[cst.BaseExpression]) -> list[str]:
        """The names and fields the targets bind again (``write`` renames their old values
        in what the frame holds): a plain name or field, in a tuple or a list too."""
        out: list[str] = []
        for target in targets:
            kind = type(target)
            if kind is cst.Tuple or kind is cst.List:
                out += self.rebound_names(frame, [e.value for e in target.elements])
            elif kind is cst.StarredElement:
                out += self.rebound_names(frame, [target.value])
            else:
                key = base_key(target)
                if key is not None and key == dotted(target) and self.rebinds(frame, key, target):
                    out.append(key)
        return out

    @staticmethod
    def rebinds(frame: Frame, key: str, target: cst.BaseExpression | None) -> bool:
        """Whether a write of all of ``key`` (through ``target``, None for an import)
        binds a name or field the frame may have made values from (``write``: its old
        values are renamed)."""
        return (
            key in frame.state
            or type(target) is cst.Attribute
            or key in frame.globals_declared
            or key in frame.nonlocals_declared
        )

    def exec_Expr(self, frame: Frame, stmt: cst.Expr) -> None:
        self.eval(frame, stmt.value)

    def exec_Return(self, frame: Frame, stmt: cst.Return) -> None:
        val = self.eval(frame, stmt.value) if stmt.value is not None else EMPTY
        self.hand_back(frame, val, stmt)
        if not self.leave(frame, "return", stmt):
            frame.exits.append(exit_state(frame))
        frame.dead = True

    def hand_back(self, frame: Frame, val: Val, stmt: cst.CSTNode) -> None:
        """``val`` is among what the function gives its caller (``return``, ``yield``).
        It was made where the path conditions hold (`if n == 0: raise` before `return
        x[:n]`): the caller's path carries them."""
        val = self.with_closures(frame, val)
        frame.returns.append(self.guarded(frame, val).then(self.step(frame, stmt, "return")))

    def with_closures(self, frame: Frame, val: Val) -> Val:
        """A function defined here and handed back (a decorator's ``return inner``) keeps
        what the names of its closure hold here: a call of it elsewhere binds them as
        arguments (``k = logged(kernel)``, then ``k(lens)`` calls ``kernel(lens)``)."""
        if not any(isinstance(r, FuncRef) and self.closure_names(r.key) for r in val.refs):
            return val
        refs: list[Ref] = []
        for r in val.refs:
            names = self.closure_names(r.key) if isinstance(r, FuncRef) else ()
            if names and self.encloses(frame, r.key):
                held = tuple((n, self.read_name(frame, n)) for n in names)
                r = FuncRef(r.key, r.self_val, r.bound, r.bound_kw + held)
            refs.append(r)
        return val.with_refs(refs)

    def exec_Raise(self, frame: Frame, stmt: cst.Raise) -> None:
        self.leave(frame, "raise", stmt)
        frame.dead = True

    def exec_Break(self, frame: Frame, stmt: cst.Break | cst.Continue) -> None:
        if frame.loops:
            kind = "break" if type(stmt) is cst.Break else "continue"
            if not self.leave(frame, kind, stmt):
                breaks, continues = frame.loops[-1]
                (breaks if kind == "break" else continues).append(frame.fork())
            frame.dead = True

    exec_Continue = exec_Break

    def exec_Global(self, frame: Frame, stmt: cst.Global) -> None:
        for n in stmt.names:
            frame.globals_declared.add(n.name.value)

    def exec_Nonlocal(self, frame: Frame, stmt: cst.Nonlocal) -> None:
        for n in stmt.names:
            frame.nonlocals_declared.add(n.name.value)

    def exec_Del(self, frame: Frame, stmt: cst.Del) -> None:
        target = stmt.target
        if type(target) is cst.Name:
            frame.state[target.value] = EMPTY
            frame.bounds.pop(target.value, None)
            frame.reductions.pop(target.value, None)
        elif type(target) is cst.Subscript and len(target.slice) == 1:
            # `del d[0]` on a dict written out: that key is gone.
            owner = self.eval(frame, target.value)
            index = target.slice[0].slice
            if owner.keys is not None and type(index) is cst.Index:
                self.remove_key(frame, target.value, owner, index.value)

    def exec_AugAssign(self, frame: Frame, stmt: cst.AugAssign) -> None:
        current = self.eval(frame, stmt.target)
        rhs = self.eval(frame, stmt.value)
        written = dotted(stmt.target)
        frame.guards = guards.forget(frame.guards, written)
        forget_named(frame, written)
        if written is not None:
            frame.bounds.pop(written, None)
            frame.reductions.pop(written, None)
        op = stmt.operator
        division = DIVISIONS.get(type(op))
        if division is not None:
            kind, note = division
            op_ = Op(kind, self.operand(frame, stmt.value))
            effect = ("floor_division", OPERATOR_NAMES[kind])
            new = self.source(frame, current, op_, stmt.target, note=note, effect=effect)
        else:
            new = self.arith(frame, current, rhs, op, stmt.value, left_node=stmt.target)
        # Tensors are updated in place: the buffers the target views change too.
        self.write_whole(frame, stmt.target, new)
        if type(stmt.target) is cst.Attribute:  # `same.n -= 1` with `same = meta`
            self.write_through_aliases(frame, stmt.target, new)

    # ------------------------------------------------------------------ writes

    def step(
        self,
        frame: Frame,
        node: cst.CSTNode | None,
        role: str,
        op: Op = IDENTITY,
        note: str = "",
        effect: Effect | None = None,
    ) -> RawStep:
        return RawStep(frame.mod, frame.stmt, node, role, op, note, effect)

    def assign(
        self,
        frame: Frame,
        target: cst.BaseExpression,
        val: Val,
        value_node: cst.BaseExpression | None,
    ) -> None:
        kind = type(target)
        if kind is cst.Tuple or kind is cst.List:
            # `a, b = x[:n], y`: each name views what its own element views.
            parts = (
                [e.value for e in value_node.elements]
                if type(value_node) in (cst.Tuple, cst.List)
                and len(value_node.elements) == len(target.elements)
                and not any(type(e) is cst.StarredElement for e in value_node.elements)
                else None
            )
            for i, el in enumerate(target.elements):
                sub = val.element(i) if type(el) is not cst.StarredElement else val
                part = (
                    parts[i] if parts is not None and type(el) is not cst.StarredElement else None
                )
                self.assign(frame, el.value, sub, part)
            return
        if type(target) is cst.StarredElement:
            self.assign(frame, target.value, val, value_node)
            return
        if kind is cst.Subscript:
            name = namespace_key(target)
            if name is not None:
                # `globals()["NAME"] = v` binds the module's NAME, as `global NAME` would;
                # a local of that name stays as it was.
                if frame.key.node is not None and name in frame.state:
                    if name not in frame.globals_declared:
                        prev = frame.summary.global_writes.get(name, EMPTY)
                        frame.summary.global_writes[name] = prev.join(val)
                        return
                elif frame.key.node is not None:
                    frame.globals_declared.add(name)
                self.assign(frame, cst.Name(name), val, value_node)
                return
        # val.then(step), keeping val's elements as they are.
        if val.traces:
            step = self.step(frame, None, "flow")
            flowed = val.with_traces([t.then(step) for t in val.traces])
        else:
            flowed = val.with_traces(())
        written = dotted(target) if kind is cst.Name or kind is cst.Attribute else None
        if frame.guards and type(target) is cst.Attribute and (written or "").startswith("self."):
            # A field keeps what held where it was written, for reads elsewhere.
            flowed = self.guarded(frame, flowed, skip=written)
        if (frame.tests or frame.chunks or frame.products) and (
            kind is cst.Name or kind is cst.Attribute
        ):
            forget_named(frame, dotted(target))
        if type(target) is cst.Name:
            self.record_bound(frame, target.value, value_node)
            self.record_reduction(frame, target.value, value_node)
            record_test(frame, target.value, value_node)
            if frame.chunks:
                record_chunk_end(frame, target.value, value_node)
            if type(value_node) is cst.BinaryOperation:
                record_product(frame, target.value, value_node)
            if value_node is None:
                # Rebound to something unknown (an element of a call's result): no longer
                # a view of what it viewed before.
                frame.aliases.pop(target.value, None)
            else:
                views = self.view_bases(frame, value_node)
                if views:
                    frame.aliases[target.value] = views - {target.value}
                else:
                    frame.aliases.pop(target.value, None)
                if self.is_constructor_alloc(frame, value_node):
                    flowed = Val((), flowed.refs)
            self.write(frame, target, flowed, strong=True)
            # A condition on the name says nothing about its next value (one on the old
            # value was renamed with it: frames.retire_in).
            frame.guards = guards.forget(frame.guards, written)
            if value_node is not None:
                self.bind_fields(frame, target.value, value_node)
            return
        if kind is cst.Subscript and self.write_element(frame, target, flowed):
            return
        if type(target) is cst.Subscript and written_as_zero(value_node):
            self.zero_fill(frame, target)
            return
        if type(target) is cst.Subscript and self.mask_assign(frame, target, value_node):
            return
        if (
            type(target) is cst.Attribute
            and value_node is not None
            and self.is_constructor_alloc(frame, value_node)
        ):
            flowed = Val((), flowed.refs)
        if kind is cst.Subscript:
            flowed = self.into_narrow(frame, target, flowed, "an assignment")
        self.write(frame, target, flowed, strong=kind is cst.Name or kind is cst.Attribute)
        frame.guards = guards.forget(frame.guards, written)  # and on its fields
        if kind is cst.Attribute:
            self.write_through_aliases(frame, target, flowed)

    def write_element(self, frame: Frame, target: cst.Subscript, val: Val) -> bool:
        """``parts[0] = x`` (``d["a"] = x``) into a list or dict written out: that element
        is ``x`` now, its rows included; under an index or key that is no literal
        (``parts[i] = x``) any element may be. Another name for the container (``alias =
        parts``) sees the write too, as either value. False where the target is no
        element of a container whose elements are known."""
        owner = target.value
        key = dotted(owner)
        if key is None or len(target.slice) != 1 or type(target.slice[0].slice) is not cst.Index:
            return False
        current = frame.state.get(key) if key not in frame.globals_declared else None
        if current is None or current.elements is None:
            return False
        index = target.slice[0].slice.value
        others = {n for n, views in frame.aliases.items() if key in views}
        others |= {b for b in frame.aliases.get(key, ()) if type(b) is str}
        forget_facts(frame, key)
        frame.state[key] = _with_element(current, index, val, strong=True)
        for other in sorted(others - {key}):
            held = frame.state.get(other)
            # Another name for the container (`alias = parts`); not one for an element
            # of it (`first = parts[0]`), which keeps what it was given.
            if held is not None and held.elements is not None:
                frame.state[other] = _with_element(held, index, val, strong=False)
        self.record_write(frame, key, frame.state[key])
        return True

    def write_through_aliases(self, frame: Frame, target: cst.Attribute, val: Val) -> None:
        """``same = meta; same.lens = v`` writes ``meta.lens`` too (``me = self; me.n = 0``
        writes ``self.n``). ``same`` may name ``meta`` on some paths only, so the field
        may hold either value; what was made from its old value keeps that value's name,
        and a test of it no longer holds of the field."""
        owner = dotted(target.value)
        if owner is None:
            return
        head, _, inner = owner.partition(".")  # `same.inner.n = 0`: meta.inner.n
        others = {b for b in frame.aliases.get(head, ()) if type(b) is str}
        # And the other way: `same = meta`, then `meta.n = 0` writes same.n.
        others |= {n for n, views in frame.aliases.items() if head in views}
        for base in sorted(others - {head}):
            key = ".".join(p for p in (base, inner, target.attr.value) if p)
            retire_in(frame, key)
            forget_facts(frame, key)
            first, *parts = key.split(".")
            node: cst.BaseExpression = cst.Name(first)
            for part in parts:
                node = cst.Attribute(value=node, attr=cst.Name(part))
            self.write(frame, node, val, strong=False)

    def mask_assign(
        self, frame: Frame, target: cst.Subscript, value_node: cst.BaseExpression | None
    ) -> bool:
        """``x[x == 0] = k`` / ``x[x < 1] = k``: in place, the rows a mask picks become ``k``."""
        value = int_value(value_node)
        if value is None or len(target.slice) != 1:
            return False
        index = target.slice[0].slice
        if type(index) is not cst.Index:
            return False
        rows = mask_rows(frame.mod, index.value, target.value)
        if rows is None:
            return False
        result = self.replace_rows(frame, self.eval(frame, target.value), rows, value, "[]=")
        self.write_whole(frame, target.value, result)
        return True

    def write_whole(self, frame: Frame, target: cst.BaseExpression, val: Val) -> None:
        """An in-place operation replaced every row of ``target``: the old value is gone
        when ``target`` names a variable or an attribute, or is a view of every element of
        one (``out=meta.seq_lens.view(-1)``, not ``reshape``, which may copy); a slice or
        another call is joined."""
        whole = whole_view_root(target)
        if whole is not None:
            # The tensor keeps its rows: how many it had (a slice's count) holds on, and
            # so does a placeholder, which may resolve to one.
            old = self.eval(frame.fork(), whole)
            rows = [
                t
                for t in old.traces
                if not t.concrete or t.steps and t.steps[0].op.kind is OpKind.ROWS
            ]
            written = without_row_counts(val.traces)
            val = val.with_traces([*written, *(t for t in rows if t not in written)])
            target = whole
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
        if type(value) is not cst.Call:
            return False
        name = self.qualname(frame, value.func) or ""
        sig = self.library.functions.get(name)
        if sig is not None and sig.effect in (LibEffect.ZERO_FILL, LibEffect.FILL):
            return True
        short = name.rsplit(".", 1)[-1]
        method = self.library.methods.get(short)  # x.new_zeros(...)
        return method is not None and method.effect is LibEffect.ZERO_FILL and short[-1] != "_"

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
        if type(target) is cst.Subscript and counts_rows(val):
            # A buffer keeps its own rows: what is written into some of them, by an
            # assignment or in place (`lens[:n].add_(1)`), brings no row count.
            val = val.with_traces(without_row_counts(val.traces))
        exact = key == dotted(target)
        through_slice = not exact  # buf[:] = x writes into buf's storage, as in place
        storage = in_place or through_slice
        rows = row_slice(target, key)
        if rows == "all":
            exact, strong = True, True  # buf[:] = x writes every row
        cell = slice_cell(frame, target, key)
        if strong and exact:
            if self.rebinds(frame, key, target):
                retire_in(frame, key)
            frame.state[key] = val
        else:
            current = self.read_key(frame, key)
            if isinstance(rows, tuple):
                current = self.overwrite_zero_rows(frame, current, rows[1])
            frame.state[key] = current.join(val)
        # What is in `buf[:n]` after writing exactly `buf[:n]`, for reads of the same slice;
        # any other write to the buffer may overlap it, so it forgets the slices it knew.
        for known in frame.cells.pop(key, ()):
            if known != cell:
                frame.state.pop(known, None)
        if cell is not None:
            frame.state[cell] = val
            frame.cells[key] = frozenset((cell,))
        self.record_write(frame, key, frame.state[key] if strong and exact else val)
        bases = frame.aliases.get(key) if in_place or not exact or through_slice else None
        if bases:
            # A view's rows are some of its base's: what is written through the view
            # brings the base no row count (`head = buf[:n]; head.copy_(x)`).
            into_base = val.with_traces(without_row_counts(val.traces)) if counts_rows(val) else val
            for base in bases:
                if isinstance(base, ParamObject):
                    pname = base.name
                    prev = frame.summary.param_effects.get(pname, EMPTY)
                    frame.summary.param_effects[pname] = prev.join(into_base.only_traces())
                    continue
                if strong and exact and whole_view_of(frame.key.node, key, base):
                    # `view = buf.view(-1); view[:] = x`: every row of buf is written.
                    frame.state[base] = val
                    for known in [k for k in frame.state if k.startswith(base + "[")]:
                        del frame.state[known]
                    self.record_write(frame, base, val)
                else:
                    frame.state[base] = self.read_key(frame, base).join(into_base)
                    self.record_write(frame, base, into_base)
        if storage and (frame.aliases or key.startswith("self.")):
            self.write_views(frame, key, bases or frozenset(), val)
        owner, dot, attr = key.partition(".")
        if dot and "." not in attr and exact and owner in self.plain_params(frame):
            # `meta.lens = v` in a helper: the caller's `m.lens` after `shrink(m)`.
            prev = frame.summary.param_fields.get((owner, attr), EMPTY)
            frame.summary.param_fields[(owner, attr)] = prev.join(val.only_traces())
        if "." not in key and (
            key in frame.globals_declared
            or frame.key.node is None
            or (through_slice or in_place)
            and self.writes_a_global(frame, key)
        ):
            prev = frame.summary.global_writes.get(key, EMPTY)
            frame.summary.global_writes[key] = prev.join(val)

    def write_views(self, frame: Frame, key: str, bases: frozenset, val: Val) -> None:
        """A write into ``key``'s storage (a slice of it, or in place) is seen through every
        other name that views the same storage (``lens = buf[:n]`` before ``buf[:n] =
        seq_lens // 4``): each may now hold ``val`` in some of its rows, and what was known
        of its old value holds no more."""
        written = {key, *bases}
        into = val.with_traces(without_row_counts(val.traces)) if counts_rows(val) else val
        seen = [name for name, views in frame.aliases.items() if written & views]
        cls = frame.key.cls
        if cls is not None:
            for base in written:
                if type(base) is str and base.startswith("self.") and base.count(".") == 1:
                    seen += [f"self.{v}" for v in self.field_views(cls).get(base[5:], ())]
        for name in dict.fromkeys(seen):
            if name in written:
                continue
            old = frame.state.get(name)
            if old is None:
                old = self.read_key(frame, name)
            elif frame.some_rows:  # `if not lens.any(): return` was about the old rows
                old = self.some_rows_of(frame, name, old, old)
            frame.state[name] = old.join(into)
            for known in frame.cells.pop(name, ()):
                frame.state.pop(known, None)
            forget_facts(frame, name)
            self.record_write(frame, name, into)

    def plain_params(self, frame: Frame) -> list[str]:
        """The parameters a caller's arguments bind, but a method's ``self`` or ``cls``
        (whose fields are the class's, ``Summary.field_writes``)."""
        names = [p.name.value for p in frame.key.params()]
        return names[1:] if frame.key.is_method else names

    def writes_a_global(self, frame: Frame, key: str) -> bool:
        """Whether a write into ``key``'s rows (``BUF[:n] = x``, ``BUF.zero_()``) in this
        function changes the module's tensor: a module-level name the function does not
        bind (so needs no ``global``), written by a top-level function or a method, as
        ``ModuleInfo.global_writers`` lists it."""
        node, cls = frame.key.node, frame.key.cls
        if node is None:
            return False
        writer = f"{cls.qualname}.{node.name.value}" if cls is not None else node.name.value
        return (
            key in frame.key.mod.assigned
            and writer in frame.key.mod.global_writers.get(key, ())
            and not bound_in(node, key)
        )

    def overwrite_zero_rows(self, frame: Frame, current: Val, upper: cst.BaseExpression) -> Val:
        """``lens = torch.zeros(m); lens[:n] = real``: the zeros left are padding from n on."""
        traces = []
        for t in current.traces:
            if t.origin is None and len(t.steps) == 1 and t.steps[0].op.kind == OpKind.FILL_ZERO:
                step = self.step(
                    frame, None, "flow", Op(OpKind.PAD_ZERO, operand(upper)), "padding rows stay 0"
                )
                traces.append(Trace(None, (step,)))
            else:
                traces.append(t)
        return current.with_traces(traces)

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
    ) -> Iterator[tuple[str, Val, cst.Arg]]:
        """(field, value, argument) for each evaluated constructor argument: by keyword, or
        by position among the dataclass fields or ``__init__``'s parameters, inherited
        ones too (``Expressions.init_parameters``)."""
        positional = self.init_parameters(cls)
        i = 0
        for arg, val in args:
            if arg.star:
                continue
            if arg.keyword is not None:
                yield arg.keyword.value, val, arg
            elif i < len(positional):
                yield positional[i], val, arg
                i += 1

    def zero_fill(
        self, frame: Frame, target: cst.BaseExpression, effect: Effect = ("zero_fill", "[]=")
    ) -> None:
        """``buf[a:b] = 0`` (or ``.zero_()``/``.fill_(0)`` on a slice); ``buf[...] = 0`` sets
        every row, ``buf[k] = 0`` with a literal ``k`` the rows from ``k`` on at most, and
        with an index that is no literal (a mask, an index tensor, a name) any rows, row 0
        included."""
        lower = None
        whole = True
        current_of: cst.BaseExpression = target
        if type(target) is cst.Subscript:
            bounds = slice_bounds(target)
            if bounds is None:
                whole = False  # buf[i] = 0: one row
                lower = target.slice[0].slice if target.slice else None
                if type(lower) is cst.Index and type(lower.value) is cst.Ellipsis:
                    whole = True
            else:
                lower = bounds[0]
                whole = lower is None or is_zero(lower)
        if whole:
            step = self.step(frame, None, "source", Op(OpKind.FILL_ZERO), "rows set to 0", effect)
            self.write(frame, target, Val([Trace(None, (step,))]), strong=False)
            return
        start = operand(lower) if type(lower) is not cst.Index else operand(lower.value)
        if type(lower) is cst.Index and not isinstance(start, int):
            # An index that is no literal may be a mask or an index tensor, which picks
            # any rows, every one too (a name of an int picks one, taken as any too). What
            # they held is the buffer's, not the rows a mask would select if read.
            start = ANY_ROWS
            current_of = target.value  # type: ignore[attr-defined]
        # A source only of rules that count padding rows (ZL001 needs every row 0).
        step = self.step(
            frame,
            None,
            "flow",
            Op(OpKind.PAD_ZERO, start),
            "rows the index picks set to 0" if start == ANY_ROWS else "padding rows set to 0",
            ("zero_fill", "[n:]="),
        )
        current = self.eval(frame, current_of)
        padded = Val([*current.then(step).traces, Trace(None, (step,))], current.refs)
        self.write(frame, target, padded, strong=False)


def record_test(frame: Frame, name: str, value: cst.BaseExpression | None) -> None:
    """``has_decode = num_decodes > 0``: until the name, or a name the condition reads, is
    written again, a test of the name is a test of the condition (``Frame.tests``). Only
    a condition on scalars and row counts: one on a tensor's values would also need the
    tensor unchanged in place."""
    if not isinstance(value, (cst.Comparison, cst.BooleanOperation, cst.UnaryOperation)):
        return
    if name in frame.globals_declared:
        return
    found = guards.atoms(value, True) + guards.atoms(value, False)
    if not found or any(kind in ROW_VALUES for (kind, _), _, _ in found):
        return
    reads = frozenset(read_names(value))
    if any(r == name or r.startswith(name + ".") for r in reads):
        return  # `ok = not ok`: about the name's old value
    frame.tests[name] = (value, reads)


def qualified(mod: ModuleInfo, node: cst.BaseExpression) -> str | None:
    """The dotted name ``node`` writes, its head through ``mod``'s imports
    (``contextlib.suppress`` for ``suppress`` imported from contextlib)."""
    name = dotted(node)
    if name is None:
        return None
    head, dot, rest = name.partition(".")
    return f"{mod.imports.get(head, head)}{dot}{rest}"


def _yields_in(block: Sequence[cst.CSTNode]) -> bool:
    """Whether a statement of ``block`` (or under it, not in a nested function) yields:
    ``yield``, ``x = yield``, ``yield from ...``."""
    for top in block:
        for stmt in statements(top):
            if type(getattr(stmt, "value", None)) is cst.Yield:
                return True
    return False


def _reraises(block: Sequence[cst.CSTNode]) -> bool:
    """Whether an exception handler's ``block`` ends every way by raising: its last
    statement is a ``raise``, and it holds no ``return``, ``break`` or ``continue``."""
    if not block:
        return False
    last = block[-1]
    if type(last) is cst.SimpleStatementLine:
        last = last.body[-1]
    return type(last) is cst.Raise and not _leaves(block)


def _leaves(block: Sequence[cst.CSTNode]) -> bool:
    """Whether ``block`` holds a ``return``, ``break`` or ``continue``."""
    return any(
        type(stmt) in (cst.Return, cst.Break, cst.Continue)
        for top in block
        for stmt in statements(top)
    )


def exit_state(frame: Frame) -> dict[str, Val]:
    """What the function leaves where it returns: its fields, and the names of the
    function around it it declares ``nonlocal``."""
    keys = frame.fields | frame.nonlocals_declared if frame.nonlocals_declared else frame.fields
    return {k: frame.state[k] for k in keys if k in frame.state}


# Views that hold every element of the tensor they are taken of, in another shape.
# (`reshape` and `flatten` copy a tensor that is not contiguous: not here.)
_WHOLE_VIEWS = frozenset({"view", "view_as", "unsqueeze", "squeeze", "t", "transpose", "permute"})


def whole_view_root(node: cst.BaseExpression) -> cst.BaseExpression | None:
    """The variable or attribute ``node`` is a whole view of (``x`` for
    ``x.view(-1).unsqueeze(0)``), or None where ``node`` is no such view."""
    current = peel_views(node, _WHOLE_VIEWS, slices=False)
    if current is node or dotted(current) is None:
        return None
    return current


def in_init(cls: ClassInfo, name: str) -> bool:
    """Whether a dataclass field is a parameter of the generated ``__init__``: not where
    its last declaration is ``field(init=False)`` (or ``dataclasses.field(...)``)."""
    declared = cls.assigned.get(name)
    if not declared:
        return True
    value = declared[-1][1]
    if type(value) is not cst.Call or (dotted(value.func) or "").rsplit(".", 1)[-1] != "field":
        return True
    return not any(
        arg.keyword is not None
        and arg.keyword.value == "init"
        and type(arg.value) is cst.Name
        and arg.value.value == "False"
        for arg in value.args
    )


def _may_be_keyword_only(cls: ClassInfo) -> bool:
    """Whether a dataclass's fields may be keyword-only: its decorator or a field says
    ``kw_only``, or a field is ``KW_ONLY``."""
    calls = [d.decorator for d in cls.node.decorators]
    calls += [value for declared in cls.assigned.values() for _, value in declared]
    if any(
        type(call) is cst.Call
        and any(a.keyword is not None and a.keyword.value == "kw_only" for a in call.args)
        for call in calls
    ):
        return True
    return any(
        type(small) is cst.AnnAssign
        and (dotted(small.annotation.annotation) or "").endswith("KW_ONLY")
        for line in cls.node.body.body
        if type(line) is cst.SimpleStatementLine
        for small in line.body
    )


_SELF_MATCHING = frozenset(
    (
        "bool",
        "bytearray",
        "bytes",
        "dict",
        "float",
        "frozenset",
        "int",
        "list",
        "set",
        "str",
        "tuple",
    )
)
"""The classes whose one positional pattern matches the subject itself (``case int(n):``)."""


def _case_test(subject: cst.BaseExpression, pattern: cst.MatchPattern) -> cst.Comparison | None:
    """``subject == value`` for ``case value:``, a literal or a dotted name."""
    if type(pattern) is not cst.MatchValue:
        return None
    equal = cst.ComparisonTarget(operator=cst.Equal(), comparator=pattern.value)
    return cst.Comparison(left=subject, comparisons=[equal])


def forget_facts(frame: Frame, name: str) -> None:
    """``name`` is bound again to a value nothing is known of: the conditions, bounds and
    named tests that were about its old value are dropped."""
    frame.guards = guards.forget(frame.guards, name)
    forget_named(frame, name)
    frame.bounds.pop(name, None)
    frame.reductions.pop(name, None)


def pattern_names(pattern: cst.CSTNode) -> Iterator[str]:
    """The names a ``case`` pattern binds (``n`` in ``{"n": n}``, ``[first, *rest]``,
    ``Point(x=px) as p``)."""
    stack = [pattern]
    while stack:
        node = stack.pop()
        if type(node) in (cst.MatchAs, cst.MatchStar) and node.name is not None:
            yield node.name.value
        elif type(node) is cst.MatchMapping and node.rest is not None:
            yield node.rest.value
        stack.extend(c for c in node.children if isinstance(c, cst.CSTNode))


def record_product(frame: Frame, name: str, value: cst.BinaryOperation) -> None:
    """``t = n * k`` (a name or field by a name, field or integer): until ``t``, ``n`` or
    ``k`` is written again, ``x[:t]`` has ``n * k`` rows (``Frame.products``), which the
    judge knows to have rows where conditions make both factors positive (vLLM's
    ``num_decode_tokens = num_decodes * max_decode_len``)."""
    if type(value.operator) is not cst.Multiply or name in frame.globals_declared:
        return
    factors = (operand(value.left), operand(value.right))
    names = frozenset(f for f in factors if isinstance(f, str))
    if not names or "<expr>" in names:
        return
    prefix = name + "."
    if any(f == name or f.startswith(prefix) for f in names):
        return  # `t = t * 2`: of the old value
    # A factor bound by a max or min of a constant (`r = max(ratio, 1)`) as the operand it
    # stands for (`max(r,1)`).
    shown = [frame.bounds.get(f, f) if isinstance(f, str) else f for f in factors]
    frame.products[name] = (product_count(name, *shown), names)


def _with_element(container: Val, index: cst.BaseExpression, val: Val, *, strong: bool) -> Val:
    """``container`` (its elements known) after ``container[index] = val``: the element at
    a literal index or string key replaced (joined where ``strong`` is False), a new key
    added; under any other index every element may be ``val``."""
    elements, keys = list(container.elements or ()), container.keys
    if keys is not None:
        name = dict_key(index)
        place = keys.index(name) if name is not None and name in keys else None
        if name is not None and place is None:
            elements.append(val)
            keys = (*keys, name)
            place = len(elements) - 1
            strong = True
    else:
        i = int_value(index)
        place = i % len(elements) if i is not None and -len(elements) <= i < len(elements) else None
    if place is not None:
        elements[place] = val if strong else elements[place].join(val)
    else:
        elements = [e.join(val) for e in elements]
    traces = container.traces | val.traces
    return Val(traces, container.refs, tuple(elements), keys)


def forget_named(frame: Frame, written: str | None) -> None:
    """``written`` is assigned: a name standing for a condition on it, or the name
    itself, stands for nothing now (``Frame.tests``), nor does a chunked loop's name
    (``Frame.chunks``)."""
    if written is None:
        return
    prefix = written + "."
    for named in (frame.tests, frame.chunks, frame.products):
        for name, fact in list(named.items()):
            reads = fact[-1]
            if (
                name == written
                or name.startswith(prefix)
                or any(r == written or r.startswith(prefix) for r in reads)
            ):
                del named[name]
