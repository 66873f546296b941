"""Calls: binding arguments, sink hits, constructors, and inter-procedural summaries
(what a callee returns, writes and forwards to a sink)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

import libcst as cst

from zerolint.dataflow import guards
from zerolint.dataflow.frames import (
    CallSite,
    Frame,
    FuncKey,
    SinkHit,
    Summary,
    retire_in,
)
from zerolint.dataflow.library import (
    BOUND_FUNCTIONS,
    BUILTIN_NAMES,
)
from zerolint.dataflow.signatures import in_place
from zerolint.dataflow.statements import SWALLOWING_MANAGERS, forget_facts, forget_named
from zerolint.dataflow.syntax import (
    base_key,
    dotted,
    int_value,
    local_names,
    operand,
    rebinding_regions,
    scope_names,
    statements,
)
from zerolint.dataflow.values import (
    EMPTY,
    CallOrigin,
    ClassRef,
    EffectOrigin,
    ExtRef,
    FuncRef,
    InstRef,
    LambdaRef,
    LazyRef,
    ModRef,
    ParamOrigin,
    PendingRef,
    RawStep,
    Ref,
    SinkRef,
    Trace,
    Val,
    callee_own,
    class_name,
    construction_keys,
    in_order,
    join_all,
    parameters,
    ref_key,
)
from zerolint.model import IDENTITY, SOME_ROW, Op, OpKind, bounded, renamed, symbol_names
from zerolint.positions import statement_calls
from zerolint.project import ClassInfo, ModuleInfo
from zerolint.rules import SinkSpec


class Calls:
    """Part of ``Analyzer`` (see analyzer.py); methods call each other through ``self``."""

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
        if type(func) is cst.Name and func.value == "super" and frame.key.cls is not None:
            # super().m(...): the methods of the classes after this one in the MRO.
            bases = self.mro(frame.key.cls)[1:]
            return Val((), [InstRef(bases[0])] if bases else [])
        method = func.attr.value if type(func) is cst.Attribute else None
        receiver: Val | None = None
        if type(func) is cst.Attribute:
            receiver = self.eval(frame, func.value)
            namespace = any(isinstance(r, (ExtRef, ModRef, ClassRef)) for r in receiver.refs)
            if not namespace and method in self.tensor_methods:
                # x.clamp(min=1), x.unsqueeze(-1), buf.copy_(src): the receiver is a tensor.
                args = [(a, self.eval(frame, a.value)) for a in node.args]
                out = self.tensor_method(frame, node, method, receiver, args)
                if out is not None:
                    return out
                return EMPTY
            refs = in_order(self.attribute(frame, receiver, method).refs)
            # A method of an object of a class whose module is not parsed (`meta =
            # DecodeMeta(seq_lens, r)`, imported): called as that module's name is.
            refs += [
                LazyRef(f"{r.cls}.{method}")
                for r in in_order(receiver.refs)
                if isinstance(r, InstRef) and isinstance(r.cls, str)
            ]
            if not refs:
                self.note_wrapper(method)
            if not refs and (method in self.sinks_by_name or self.wraps_sink(method)):
                refs = self.refs_through_fields(frame, receiver, method)
        else:
            refs = in_order(self.eval(frame, func).refs)
        refs = self.resolved(refs)
        args = [(a, self.eval(frame, a.value)) for a in node.args]
        lazy = [r for r in refs if isinstance(r, LazyRef)]
        result = EMPTY
        handled = False
        if lazy:
            refs = [r for r in refs if not isinstance(r, LazyRef)]
            passes_sink = any(isinstance(r, SinkRef) for _, v in args for r in v.refs)
            # By name: a value that may be one of several functions holds them in a set
            # ordered by memory address, and each is called, in the same order every run.
            # One call per name: each lookup of a name makes a LazyRef of its own.
            by_qual: dict[str, LazyRef] = {}
            for r in lazy:  # a partial of the name wins: it may bind what the call leaves out
                if r.qual not in by_qual or r.bound_unknown:
                    by_qual[r.qual] = r
            for r in sorted(by_qual.values(), key=lambda r: r.qual):
                home = self.project_module_of(r.qual)
                if home is not None:
                    self.note_capable(home)
                if (home is not None and self.reaches_sink(home)) or passes_sink:
                    # A callee given a sink may call it: it must be analysed now.
                    found = self.materialize(r, force=passes_sink)
                    refs += [_through_partial(x) for x in found] if r.bound_unknown else found
                else:
                    result = result.join(self.call_lazy(frame, node, r, args))
                    handled = True
        if len(refs) > 1:  # called in the same order on every run (see ref_key)
            refs.sort(key=ref_key)
        unknown = False  # a function outside the tree that no row of the model describes
        for ref in refs:
            out = self.call_ref(frame, node, ref, args)
            if out is not None:
                result = result.join(out)
                handled = True
            elif type(ref) is ExtRef:
                unknown = True
        if frame.mod.global_writers:
            self.callbacks_written(frame, func, refs, args)
        if frame.mod.enclosing and frame.mod.declares_nonlocal():  # a closure handed over
            for _, v in args:
                if v.refs:
                    self.handed_nonlocal_writes(frame, v)
        if handled:
            tainted = [v for _, v in args if v.traces] if unknown else []
            if tainted:
                # The name may be that unknown function too (`maximum` from `mylib` in a
                # `try`, from `triton.language` in its `except`): what goes in may come
                # back, unmodelled, beside what the known one makes of it.
                name = dotted(func) or method or "call"
                opaque = self.extend(
                    frame, join_all(tainted).only_traces(), Op(OpKind.OPAQUE, name)
                )
                result = result.join(opaque)
            return result
        self.record_param_call(frame, node, args)
        namespace = receiver is not None and any(
            isinstance(r, (ExtRef, ModRef, ClassRef)) for r in receiver.refs
        )
        if method is not None and receiver is not None and not namespace:
            # mod.max(x, 1) is no tensor's .max(): an unknown function of a module.
            out = self.tensor_method(frame, node, method, receiver, args)
            if out is not None:
                return out
        # Unknown callee: lengths that go in come back, marked as outside the model.
        tainted = [v for _, v in args if v.traces]
        if receiver is not None and receiver.traces:
            tainted.append(receiver)
        if tainted:
            name = dotted(func) or method or "call"
            out = self.extend(frame, join_all(tainted).only_traces(), Op(OpKind.OPAQUE, name))
            # `from operator import isub; isub(x, 1)`: in place by the name it is imported as.
            qualified = next((r.name for r in refs if isinstance(r, ExtRef)), name)
            # What it may have changed in place: its `out=`, or the tensor an in-place
            # function is given first (`torch.zero_(x)`).
            changed = next(
                (a.value for a, _ in args if a.keyword and a.keyword.value == "out"), None
            )
            if changed is None and (method is None or namespace) and in_place(qualified) and args:
                first = args[0][0]
                changed = first.value if first.keyword is None and not first.star else None
            # `out=(values, indices)`: each is written.
            kind = type(changed)
            tuple_out = kind is cst.Tuple or kind is cst.List
            for one in [e.value for e in changed.elements] if tuple_out else [changed]:
                if one is not None and base_key(one) is not None:
                    self.changed_in_place(frame, one, out, name)
            return out
        return EMPTY

    def callbacks_written(
        self,
        frame: Frame,
        func: cst.BaseExpression,
        refs: list[Ref],
        args: list[tuple[cst.Arg, Val]],
    ) -> None:
        """A function of the module handed to a call (`map(reset, xs)`) may be called by
        it; an unknown callable (a parameter, one of a list of hooks) may be any function
        of the module that is named other than to be called: what they write ends what
        held of it."""
        written: set[str] = set()
        for _, v in args:
            if v.refs:
                written |= self.handed_writes(frame.mod, v)
        if not refs and type(func) is cst.Name:
            mod = frame.mod
            written |= mod.escaping_globals()
            for name in sorted(mod.escaping_functions()):
                written |= self.writes_through_calls(self.func_key(mod, mod.functions[name]))
        if written:
            _globals_written(frame, written)

    def handed_writes(self, mod: ModuleInfo, val: Val) -> set[str]:
        """What a function of the module handed to a call (``map(reset, xs)``) writes of
        the module's names, or one a lambda handed to it calls (``key=lambda r:
        reset(r)``): itself, or through the functions it calls (its summary's, as a call
        of it by name would take them: ``map(step, xs)`` where ``step`` calls ``reset``)."""
        writes = mod.writes_by_function()
        out: set[str] = set()
        for r in val.refs:
            if isinstance(r, FuncRef) and r.key.mod is mod and r.key.node is not None:
                out |= writes.get(r.key.node.name.value, frozenset())
                out |= self.writes_through_calls(r.key)
            elif isinstance(r, LambdaRef):
                for call in statement_calls(r.node.body):
                    name = dotted(call.func) or ""
                    out |= writes.get(name.rsplit(".", 1)[-1], frozenset())
                    fn = mod.functions.get(name)
                    if fn is not None:
                        out |= self.writes_through_calls(self.func_key(mod, fn))
        return out

    def handed_nonlocal_writes(self, frame: Frame, val: Val) -> None:
        """A closure handed to a call where it is defined (``map(reset, xs)``) may be
        called by it: the names it writes (``nonlocal n``) are bound again there, so
        what was made of their old values keeps them under names of their own, and a
        test of them holds no more. So does a closure a lambda handed over calls by name
        (``key=lambda r: reset(r)``)."""
        refs = list(val.refs)
        for r in val.refs:
            if isinstance(r, LambdaRef):
                own = {p.name.value for p in parameters(r.node.params)}
                for call in statement_calls(r.node.body):
                    func = call.func
                    if (
                        type(func) is cst.Name
                        and func.value in frame.state
                        and func.value not in own
                    ):
                        refs += frame.state[func.value].refs
        for r in refs:
            if (
                isinstance(r, FuncRef)
                and r.key.mod is frame.mod
                and id(r.key.node) in frame.mod.enclosing
                and self.encloses(frame, r.key)
                and _holds_nonlocal(frame.key.node)  # else no summary to make
            ):
                for name in self.summary(r.key).nonlocal_writes:
                    retire_in(frame, name)
                    forget_facts(frame, name)

    def writes_through_calls(self, key: FuncKey) -> set[str]:
        """The module's names a function writes, itself or through its calls (its
        summary)."""
        summary = self.summary(key)
        return summary.globals_written_by_calls.union(summary.global_writes)

    def record_param_call(
        self, frame: Frame, node: cst.Call, args: list[tuple[cst.Arg, Val]]
    ) -> None:
        if type(node.func) is not cst.Name or frame.key.node is None:
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
            refs = self.resolved(in_order(actual.refs))
            for ref in refs:
                if not isinstance(ref, SinkRef):
                    continue
                for stmt, inner, inner_args in calls:
                    lens = self.sink_argument(ref, inner_args)
                    if lens is None:
                        continue
                    shown = (
                        self.arg_node_for(node, key, lens[0].value)
                        if type(lens[0]) is cst.Name
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
                    via = None
                    if shown is None:
                        own = SinkHit(ref.spec, key.mod, stmt, inner, lens[0], lens[1], key)
                        via = (own, key.name)
                    frame.summary.hits.append(
                        SinkHit(ref.spec, frame.mod, frame.stmt, node, shown, val, frame.key, via)
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
        positional = args[: _leading_positional(a for a, _ in args)]
        if spec.position is not None and spec.position < len(positional):
            a, v = positional[spec.position]
            return (a.value, v)
        starred = [(a, v) for a, v in args if a.star]
        if not starred:
            return None
        # f(*args, **kwargs): the lengths may be in either (shown: the first that carries any),
        # or, after `*args`, in a positional argument whose place it leaves unknown.
        after = [(a, v) for a, v in args[len(positional) :] if a.keyword is None and not a.star]
        shown = next((a for a, v in starred if v.traces), starred[0][0])
        return (shown.value, join_all(v for _, v in [*starred, *after]))

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
            if ref.name in SWALLOWING_MANAGERS:  # `cm = suppress(E)`, entered later
                return Val((), [InstRef(ref.name)])
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
        written = list(self.constructor_fields(cls, args))
        fields = [(name, val) for name, val, _ in written]
        frame.constructed[id(node)] = fields
        self.note_construction(
            id(node),
            construction_keys(cls),
            {name: self.operand(frame, arg.value) for name, _, arg in written},
        )
        owner, init = self.initializer(cls)
        if init is None:
            for field_name, arg_val in fields:
                self.record_constructor_field(frame, node, cls, field_name, arg_val)
            post = next((c for c in self.mro(cls) if "__post_init__" in c.methods), None)
            if post is not None:
                # A field __post_init__ writes holds what it wrote, not the argument: read
                # back here as any field is (`self.seq_lens = self.seq_lens // self.ratio`).
                key = self.func_key(post.module, post.methods["__post_init__"], post)
                rewritten = self.summary(key).field_writes
                frame.constructed[id(node)] = [f for f in fields if f[0] not in rewritten]
            return
        ref = FuncRef(self.func_key(owner.module, init, owner), Val((), [InstRef(cls)]))
        self.call_function(frame, node, ref, args)
        bound = self.bind_args(ref.key, ref, args)
        site = CallSite(
            ref.key,
            bound,
            RawStep(frame.mod, frame.stmt, node, "call", IDENTITY, f"into {owner.name}.__init__"),
        )
        by_init: dict[str, Val] = {}
        for attr, val in self.summary(ref.key).field_writes.items():
            by_init[attr] = self.substitute(val, ref.key, site, 0)
            self.record_constructor_field(frame, node, cls, attr, by_init[attr], step=False)
        if by_init:
            # Read back here (`m = Meta(seq_lens, r); m.seq_lens`): what __init__ wrote, not
            # the argument its parameter of that name was given; joined with it where the
            # __init__ hands on to another (`super().__init__(seq_lens)`), whose writes
            # its own summary does not hold.
            hands_on = self._hands_on.get(id(init))
            if hands_on is None:
                hands_on = self._hands_on[id(init)] = _calls_another_init(init)
            merged = [
                (name, val.join(by_init[name]) if hands_on and name in by_init else val)
                for name, val in fields
                if hands_on or name not in by_init
            ]
            named = {name for name, _ in fields}
            merged += [(n, v) for n, v in by_init.items() if not hands_on or n not in named]
            frame.constructed[id(node)] = merged

    def record_constructor_field(
        self,
        frame: Frame,
        node: cst.Call,
        cls: ClassInfo | str,
        attr: str,
        val: Val,
        step: bool = True,
    ) -> None:
        """What a construction of ``cls`` puts in a field (an object or a callable counts
        too), for reads of that field anywhere (``Summary.constructor_fields``, under the
        class's own key: ``construction_keys``)."""
        if not (val.traces or val.refs):
            return
        # The object is built where these conditions hold: what is read back from the
        # field carries them (vLLM builds its decode metadata under `if num_decodes > 0:`).
        val = self.guarded(frame, val)
        if step:
            shown = f"{class_name(cls)}({attr}=...)"
            val = val.then(self.step(frame, node, "flow", IDENTITY, shown))
        slots = frame.summary.constructor_fields
        key = (construction_keys(cls)[0], attr)
        slots[key] = slots.get(key, EMPTY).join(val)

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
        if frame.guards:
            val = self.guarded(frame, val)
        if frame.some_rows and arg_node is not None:
            val = self.some_rows_guarded(frame, arg_node, val)
        step = self.step(frame, node, "sink", IDENTITY, note)
        frame.summary.hits.append(
            SinkHit(spec, frame.mod, frame.stmt, node, arg_node, val.then(step), frame.key)
        )

    def some_rows_guarded(self, frame: Frame, arg_node: cst.BaseExpression, val: Val) -> Val:
        """The conditions on some row of the tensor a sink call is handed by name, where it
        still holds the value they were about (``Frame.some_rows``): as guard steps."""
        name = dotted(arg_node)
        held = frame.state.get(name) if name is not None else None
        if name is None or held is None:
            return val
        return self.some_rows_of(frame, name, held, val)

    def some_rows_of(self, frame: Frame, name: str, held: Val, val: Val) -> Val:
        """``val`` with the conditions on some row of ``name`` that were about its value
        ``held`` as guard steps."""
        for guarded, op, k, stmt, value in frame.some_rows:
            if guarded == name and value is held:
                note = f"guard: some row of {name} {op} {k}"
                step = guards.step(frame.mod, stmt, SOME_ROW, op, k, note)
                val = val.with_traces(val.then(step).traces)
        return val

    def guarded(self, frame: Frame, val: Val, skip: str | None = None) -> Val:
        """The path conditions that hold here (at a sink, or where a value leaves the
        function: a return, a field), as guard steps on each trace they can matter to:
        every one on a trace that starts at a row count (an empty batch is decided by the
        path, not by one value), else those on a symbol of the trace. ``skip``: a name
        being written, whose conditions were about its old value."""
        conditions = [g for g in frame.guards if g[0] != skip]
        if not conditions:
            return val
        elements = None
        if val.elements is not None:
            elements = tuple(self.guarded(frame, e, skip) for e in val.elements)
        out = []
        for trace in val.traces:
            # A placeholder may resolve to a trace that starts at a row count.
            starts_rows = not trace.concrete or (
                bool(trace.steps) and trace.steps[0].op.kind == OpKind.ROWS
            )
            symbols = {n for s in trace.steps for n in symbol_names(s.op.arg)}
            for name, op, k, stmt in conditions:
                if starts_rows or name in symbols:
                    self.note_field_guard(frame, stmt, name)
                    trace = trace.then(guards.step(frame.mod, stmt, name, op, k))
            out.append(trace)
        return Val(out, val.refs, elements, val.keys)

    def bind_args(
        self, key: FuncKey, ref: FuncRef, args: list[tuple[cst.Arg, Val]]
    ) -> dict[str, Val]:
        params = key.params()
        node = key.node
        bound: dict[str, Val] = {}
        names = [p.name.value for p in params]
        star = node.params.star_arg if node is not None else None
        star_name = star.name.value if type(star) is cst.Param else None
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
        encloses = key.mod is frame.mod and self.encloses(frame, key)
        # Called from a function defined beside it (or inside such a one): `clear()` in
        # `guard`, both defined in one function, share the names neither binds.
        beside = (
            not encloses
            and key.mod is frame.mod
            and id(frame.key.node) in frame.mod.enclosing
            and id(key.node) in key.mod.enclosing
        )
        if encloses:
            # A closure called where it is defined: its free names hold what they hold here.
            for name in self.closure_names(key):
                bound[name] = self.read_name(frame, name)
        elif beside:
            for name in self.closure_names(key):
                if name in frame.state and self.same_variable(frame, key, name):
                    bound[name] = frame.state[name]
        call_step = RawStep(frame.mod, frame.stmt, node, "call", IDENTITY, f"into {key.name}")
        site = CallSite(
            key,
            bound,
            call_step,
            operands=self.operands(frame, node, key, ref),
            rebinding=rebinding_regions(key.node) if key.node is not None else {},
            caller=frame.key,
        )
        frame.calls.add(site)
        self.note_call(key, frame.key, id(node), site, frame.guards)
        passes_sink = any(isinstance(r, SinkRef) for _, v in args for r in v.refs)
        self.note_capable(key.mod.name)
        eager = key.mod is frame.mod or self.reaches_sink(key.mod.name) or passes_sink
        if eager:
            summary = self.summary(key)
            self.replay_param_calls(frame, node, key, summary, site)
            kwstar = key.node.params.star_kwarg if key.node is not None else None
            kwargs = kwstar.name.value if kwstar is not None else None
            for pname, hits in summary.forwards.items():
                arg = bound.get(pname)
                if arg is None or not arg.traces:
                    continue
                for hit in hits:
                    # Only what the caller passed: lengths made inside the callee are
                    # reported at the callee's own sink call.
                    through, shown = site, self.arg_node_for(node, key, pname, ref)
                    if kwargs is not None and kwargs in bound:
                        # `def w(*args, **kwargs): kernel(*args, **kwargs)`: of the keywords
                        # gathered in **kwargs, only the sink's own reaches its argument.
                        passed = [(a, v) for a, v in args if _by_keyword(a, hit.spec.keyword)]
                        given = join_all(v for _, v in passed)
                        through = dataclasses.replace(site, args={**bound, kwargs: given})
                        if pname == kwargs:
                            shown = passed[0][0].value if passed else None
                    val = self.substitute(
                        hit.val, key, through, 0, keep_unresolved=True, params_only=True
                    )
                    via = (hit, key.name) if shown is None else None
                    frame.summary.hits.append(
                        SinkHit(hit.spec, frame.mod, frame.stmt, node, shown, val, frame.key, via)
                    )
            self.take_field_writes(frame, node, key, summary, site)
            if summary.nonlocal_writes and (encloses or beside):
                self.take_nonlocal_writes(frame, key, summary, site, beside=beside)
            if key.mod is frame.mod and (summary.global_writes or summary.globals_written_by_calls):
                # A condition on a global of the module says nothing of what the callee
                # wrote into it (`if NUM == 0: return; set_num(n)`, `global NUM` there), or
                # a function it calls did: this function's callers forget it too.
                written = summary.globals_written_by_calls.union(summary.global_writes)
                _globals_written(frame, written)
            # What the callee wrote into its arguments flows back into the caller's names.
            for pname, effect in summary.param_effects.items():
                target = self.arg_node_for(node, key, pname, ref)
                if target is not None and base_key(target) is not None:
                    val = self.substitute(effect, key, site, 0, keep_unresolved=True)
                    if val.traces:
                        self.write(frame, target, val, strong=False, in_place=True)
            # And into its arguments' fields: `shrink(m)` assigning `meta.lens`.
            for (pname, attr), effect in summary.param_fields.items():
                target = self.arg_node_for(node, key, pname, ref)
                if target is not None and dotted(target) is not None:
                    # A condition on the field says nothing of what the helper wrote.
                    written = f"{dotted(target)}.{attr}"
                    retire_in(frame, written)
                    frame.guards = guards.forget(frame.guards, written)
                    forget_named(frame, written)
                    val = self.substitute(effect, key, site, 0, keep_unresolved=True)
                    if val.traces:
                        owned = cst.Attribute(value=target, attr=cst.Name(attr))
                        self.write(frame, owned, val, strong=False)
        else:
            for pname, v in bound.items():
                target = self.arg_node_for(node, key, pname, ref)
                if target is not None and base_key(target) is not None and v.traces:
                    effect = Trace(EffectOrigin(site, pname), ())
                    self.write(frame, target, Val([effect]), strong=False, in_place=True)
        origin = CallOrigin(site)
        return Val([Trace(origin, ())], [PendingRef(origin)])

    def take_nonlocal_writes(
        self, frame: Frame, key: FuncKey, summary: Summary, site: CallSite, *, beside: bool
    ) -> None:
        """``def reset(): nonlocal n; n = m``, called where it is defined or from a
        function beside it that shares ``n``: ``n`` may hold what it wrote. A name this
        function does not bind itself is a variable further out: the write is this
        function's too (``Summary.nonlocal_writes``), for its callers."""
        node = frame.key.node
        own = scope_names(node, self._scopes)[0] if node is not None else frozenset()
        for name, (written, every) in summary.nonlocal_writes.items():
            if beside and not self.same_variable(frame, key, name):
                continue
            if name in frame.state or name in own:
                old = self.read_name(frame, name)
            else:  # a variable further out this function neither reads nor writes
                old = Val([Trace(ParamOrigin(frame.key, name), ())])
            if name not in site.args:  # what the callee's write may be made of
                site.args[name] = old
            val = self.substitute(written, key, site, 0, keep_unresolved=True)
            retire_in(frame, name)
            forget_facts(frame, name)  # the tests of its old value
            frame.state[name] = val if every else old.join(val)
            if name not in own and node is not None:
                frame.nonlocals_declared.add(name)

    def take_field_writes(
        self, frame: Frame, node: cst.Call, key: FuncKey, summary: Summary, site: CallSite
    ) -> None:
        """``self._fill(x)``: the fields the method writes hold its values here, through
        this call's line (so a write made by a call in one arm of an ``if`` is seen as
        that arm's), and are this function's field writes too. ``meta.shrink()`` on an
        object the function holds under a name: its fields, as this function reads them
        (``meta.lens``), hold what the method wrote too. Either joins what the field held
        (a method may not write it on every call)."""
        func = node.func
        if key.cls is None or not key.is_method or type(func) is not cst.Attribute:
            return
        receiver = dotted(func.value)
        if receiver is None or receiver != "self" and receiver.startswith("self."):
            return  # an object in a field: the class-wide view of that field holds it
        if receiver == "self":
            if frame.key.cls is None:
                return
            frame.summary.self_calls.add(key)
        writes = summary.field_writes
        for attr in writes:
            # A condition on the field (or a name standing for one) says nothing of what
            # the method may have written (`if self.n == 0: return; self._prepare(n)`),
            # and what was made from its old value keeps that value, renamed. Every field
            # is renamed before any is given what the method wrote, which may name
            # another (`self.buf = lens // self.ratio`): renaming one after another was
            # given its value renamed what the method made, in the order its writes
            # happened to be known (on vLLM 0.27.1, the hash seed's).
            name = f"{receiver}.{attr}"
            retire_in(frame, name)
            forget_facts(frame, name)
        for attr, written in writes.items():
            name = f"{receiver}.{attr}"
            val = self.substitute(written, key, site, 0, keep_unresolved=True)
            if not val.traces:
                continue
            frame.state[name] = self.read_key(frame, name).join(val)
            self.record_write(frame, name, frame.state[name])

    def call_lazy(
        self, frame: Frame, node: cst.Call, ref: LazyRef, args: list[tuple[cst.Arg, Val]]
    ) -> Val:
        """A call into a module nobody has parsed: its result and its effects on the
        arguments stay placeholders until a path reaching a sink needs them."""
        call_step = RawStep(
            frame.mod, frame.stmt, node, "call", IDENTITY, f"into {ref.qual.rsplit('.', 1)[-1]}"
        )
        site = CallSite(None, {}, call_step, lazy=ref.qual, raw=args, bound=False, frame=frame)
        site.bound_unknown = ref.bound_unknown
        # Each argument's operand as it is here, for the parameters it is bound to later:
        # a name bound again after the call is not the one the callee was handed.
        site.arg_operands = self.arg_operands(frame, node)
        site.caller = frame.key
        frame.calls.add(site)
        if self.recording:  # a replay makes it unbound again (bind_site)
            self.record(("lazy_site", site, None))
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
            self.note_construction(
                id(node),
                construction_keys(ref.qual),
                {a.keyword.value: self.operand(frame, a.value) for a, _ in args if a.keyword},
            )
            for attr, val in fields:
                self.record_constructor_field(frame, node, ref.qual, attr, val)
            result = Val([Trace(CallOrigin(site), ())], [InstRef(ref.qual)])
        else:
            result = Val([Trace(CallOrigin(site), ())], [PendingRef(CallOrigin(site))])
        return result

    def bind_site(self, site: CallSite) -> bool:
        """Parse a lazily named callee and bind the call's arguments to its parameters."""
        if not self.recording:
            return self._bind_site(site)
        bound = self.asking("bind", site, lambda: (self._bind_site(site), site.callee))
        return bound[0]

    def _bind_site(self, site: CallSite) -> bool:
        if site.bound:
            return site.callee is not None
        modname = self.project_module_of(site.lazy or "")
        if modname is not None and not self.may_parse(modname):
            return False  # not now: resolution may be asked again with parsing allowed
        site.bound = True
        refused = self.parse_refusals
        for ref in self.materialize(LazyRef(site.lazy or "")):
            if isinstance(ref, ClassRef):
                owner, init = self.initializer(ref.cls)
                ref = (
                    FuncRef(self.func_key(owner.module, init, owner), Val((), [InstRef(ref.cls)]))
                    if init is not None
                    else ref
                )
            if isinstance(ref, FuncRef):
                site.callee = ref.key
                site.args = self.bind_args(ref.key, ref, site.raw or [])
                if type(site.step.node) is cst.Call and site.frame is not None:
                    given = _through_partial(ref) if site.bound_unknown else ref
                    site.operands = self.operands(
                        site.frame, site.step.node, ref.key, given, site.arg_operands
                    )
                    if ref.key.node is not None:
                        site.rebinding = rebinding_regions(ref.key.node)
                return True
        if self.parse_refusals != refused:
            # The name leads through a module parsed (a re-export) into one not parsed now:
            # asked again once it may be, as where the first module was not parsed yet.
            site.bound = False
        return False

    def operand(self, frame: Frame, node: cst.CSTNode | None) -> int | str:
        """A divisor or bound: a literal, a module-level constant (``RATIO = 4``), a symbol
        bounded by ``max``/``min`` with a constant (``max(r, 1)``, or a name assigned one),
        or the expression's text as a symbol."""
        if type(node) is cst.Name and node.value not in frame.state:
            value = self.module_constant(frame.mod, node.value)
            if value is not None:
                constant = int_value(value)
                if constant is not None:
                    return constant
        if type(node) is cst.Name:
            scope: Frame | None = frame
            while scope is not None:
                if node.value in scope.bounds:
                    return scope.bounds[node.value]
                if node.value in scope.state:
                    break
                scope = scope.parent
        if type(node) is cst.Call:
            found = self.bound_call(frame, node)
            if found is not None:
                fn, inner, k = found
                return bounded(fn, self.operand(frame, inner), k)
        return operand(node)

    def bound_call(
        self, frame: Frame, node: cst.Call
    ) -> tuple[str, cst.BaseExpression, int] | None:
        """``max(x, k)`` / ``min(k, x)`` (also ``builtins.max``, ``tl.maximum``) with ``k`` a
        literal or a module-level constant: ("max" or "min", x, k)."""
        fn = BOUND_FUNCTIONS.get(self.qualname(frame, node.func) or "")
        args = [a.value for a in node.args if a.keyword is None and not a.star]
        if fn is None or len(args) != 2 or len(node.args) != 2:
            return None
        for value, other in (args, args[::-1]):
            k = self.operand(frame, other)
            if isinstance(k, int) and not isinstance(self.operand(frame, value), int):
                return fn, value, k
        return None

    def record_bound(self, frame: Frame, name: str, value: cst.BaseExpression | None) -> None:
        """``r = max(ratio, 1)``: until ``r`` is written again, it is >= 1 wherever it is
        an operand (a divisor, a clamp bound...): ``max(r,1)`` to the judge."""
        frame.bounds.pop(name, None)
        if type(value) is not cst.Call or name in frame.globals_declared:
            return
        found = self.bound_call(frame, value)
        if found is None:
            return
        fn, inner, k = found
        inner_operand = self.operand(frame, inner)
        if isinstance(inner_operand, str):
            # A bound of a bound (``max(min(x, 8), 1)``) keeps both, around the name.
            frame.bounds[name] = str(bounded(fn, renamed(inner_operand, name), k))

    def module_constant(self, mod: ModuleInfo, name: str) -> cst.BaseExpression | None:
        """``mod.constant(name)``, unless one of the module's star imports may bind the name
        again: one from outside the checked tree, or a module whose text names it or
        star-imports in turn (`RATIO = 1` then `from .cfg import *`)."""
        value = mod.constant(name)
        if value is None or not mod.star_imports:
            return value
        key = (mod.name, name)
        kept = self._star_kept.get(key)
        if kept is None:  # asked per operand: the texts are searched once per name
            word = re.compile(rf"\b{re.escape(name)}\b")
            kept = True
            for star in mod.star_imports:
                path = self.project.by_name.get(star)
                text = self.project.text(path) if path is not None else None
                if text is None or word.search(text) or "import *" in text:
                    kept = False
                    break
            self._star_kept[key] = kept
        return value if kept else None

    def arg_operands(self, frame: Frame, node: cst.Call) -> dict[int, int | str]:
        """The operand of each argument of ``node`` that is one (``operand``), by the id
        of the argument's node, as it is in ``frame`` now."""
        out: dict[int, int | str] = {}
        for a in node.args:
            if not a.star:
                value = self.operand(frame, a.value)
                if value != "<expr>":
                    out[id(a.value)] = value
        return out

    def operands(
        self,
        frame: Frame,
        node: cst.Call,
        key: FuncKey,
        ref: FuncRef | None = None,
        known: dict[int, int | str] | None = None,
    ) -> dict[str, int | str]:
        """The caller's operand for each parameter of ``key`` that ``node`` binds, read in
        ``frame``, or from ``known`` (``arg_operands``, taken at the call) where given."""
        out: dict[str, int | str] = {}
        starred = [a.value for a in node.args if a.star]
        if key.node is not None:
            # Its locals (`n = m - m; return buf[:n]`, called under the caller's `if n >
            # 0:`) are names of their own, that no condition of the caller is about.
            for name in local_names(key.node):
                out[name] = callee_own(key.name, name)
        params = key.params()
        for p in params:
            name = p.name.value
            # A parameter given no operand the caller names (`n - 1`, `*args`, a default
            # that is not a literal) is a name of the callee's own, as its locals are: the
            # caller's `n` is not the callee's `n` (the method's `self` aside).
            own = callee_own(key.name, name)
            arg = self.arg_node_for(node, key, name, ref)
            if arg is None:
                default = self.default_operand(node, key, p, ref)
                if default is not None:
                    out[name] = default
                elif not (key.is_method and p is params[0]):
                    out[name] = own
                continue
            if any(arg is s for s in starred):
                # `f(*args)`: which element a parameter takes is not known, and two
                # parameters taking the same `args` are not one symbol.
                out[name] = own
                continue
            if known is not None:
                out[name] = known.get(id(arg), own)
                continue
            value = self.operand(frame, arg)
            if value == "<expr>":
                out[name] = own
                continue
            out[name] = value
        return out

    def default_operand(
        self, node: cst.Call, key: FuncKey, param: cst.Param, ref: FuncRef | None
    ) -> int | None:
        """The default of a parameter the call ``node`` leaves out, where it is an integer
        literal or a module constant of the callee's module (``floor=1``: a clamp to
        ``floor`` in the callee is a clamp to 1 at this call). None where the call may give
        it after all (``*args``, ``**kwargs``) or ``ref`` binds it (``functools.partial``)."""
        default = param.default
        if default is None or any(a.star for a in node.args):
            return None
        name = param.name.value
        if ref is not None:
            if ref.bound_unknown:
                return None
            if any(kw == name for kw, _ in ref.bound_kw):
                return None
            if ref.bound:
                params = [p.name.value for p in key.params()]
                taken = params[: len(ref.bound) + (1 if key.is_method else 0)]
                if name in taken:
                    return None
        value = int_value(default)
        if value is None and type(default) is cst.Name:
            constant = self.module_constant(key.mod, default.value)
            value = int_value(constant) if constant is not None else None
        return value

    def arg_node_for(
        self, node: cst.Call, key: FuncKey, pname: str, ref: FuncRef | None = None
    ) -> cst.BaseExpression | None:
        """The argument of the call ``node`` that parameter ``pname`` of ``key`` takes;
        None where none of this call's does (a default, or one ``ref`` bound already, as
        ``functools.partial(f, a)`` binds f's first parameter)."""
        params = [p.name.value for p in key.params()]
        # A method call binds self (obj.m(x), an instance's __call__, Cls(x) into __init__),
        # except the unbound form Cls.m(obj, x).
        func = node.func
        unbound = (
            type(func) is cst.Attribute
            and type(func.value) is cst.Name
            and func.value.value[:1].isupper()
        )
        if key.is_method and not unbound:
            params = params[1:]
        positional = node.args[: _leading_positional(node.args)]
        for a in node.args:
            if a.keyword is not None and a.keyword.value == pname:
                return a.value
        if ref is not None:
            if any(name == pname for name, _ in ref.bound_kw):
                return None
            params = params[len(ref.bound) :]  # the call's arguments come after those
        if pname in params:
            i = params.index(pname)
            if i < len(positional):
                return positional[i].value
            star = next((a for a in node.args if a.star == "*"), None)
            if star is not None:  # after `*args`, the argument's place is unknown
                return star.value
        return None

    def call_lambda(
        self, frame: Frame, node: cst.Call, ref: LambdaRef, args: list[tuple[cst.Arg, Val]]
    ) -> Val:
        """Evaluate the lambda's body with the call's arguments; a sink it calls is reported
        at this call, its path going through the lambda's line."""
        scratch = Summary(ref.frame.key)
        inner = Frame(ref.frame.key, scratch, parent=ref.frame)
        inner.stmt = ref.stmt
        call_step = RawStep(
            frame.mod, frame.stmt, node, "call", IDENTITY, f"into {dotted(node.func) or 'lambda'}"
        )
        params = [p.name.value for p in (*ref.node.params.posonly_params, *ref.node.params.params)]
        for name, v in zip(params, ref.bound):  # `self`, where it is read as a method
            inner.state[name] = v
        params = params[len(ref.bound) :]
        bound_nodes: dict[str, cst.BaseExpression] = {}
        positional = [(a, v) for a, v in args if a.keyword is None and not a.star]
        # What the call hands the body goes into it: the body's steps, on the lambda's
        # line (above the call, maybe), come after the call's (branches.consistent).
        for name, (a, v) in zip(params, positional):
            inner.state[name] = v.then(call_step)
            bound_nodes[name] = a.value
        for a, v in args:
            if a.keyword is not None:
                inner.state[a.keyword.value] = v.then(call_step)
                bound_nodes[a.keyword.value] = a.value
        for p in ref.node.params.params + ref.node.params.kwonly_params:
            # `lambda lens=lens: kernel(lens)`: a parameter the call leaves out holds its
            # default, made where the lambda is.
            if p.default is not None and p.name.value not in inner.state:
                made = ref.frame.fork()
                made.stmt = ref.stmt
                inner.state[p.name.value] = self.eval(made, p.default)
        result = self.eval(inner, ref.node.body)
        written = scratch.globals_written_by_calls.union(scratch.global_writes)
        if written and ref.frame.mod is frame.mod:  # `lambda: set_num(0)` writes NUM
            _globals_written(frame, written)
        for hit in scratch.hits:
            traces = [
                t  # what the call handed the body went into it already
                if call_step in t.steps
                else Trace(t.origin, t.steps[:-1] + (call_step,) + t.steps[-1:])
                for t in hit.val.traces
            ]
            shown = bound_nodes.get(hit.arg_node.value) if type(hit.arg_node) is cst.Name else None
            via = (hit, "<lambda>") if shown is None else None
            frame.summary.hits.append(
                SinkHit(hit.spec, frame.mod, frame.stmt, node, shown, Val(traces), frame.key, via)
            )
        return result


_NONLOCAL: dict[int, tuple[cst.CSTNode, bool]] = {}


def _holds_nonlocal(fn: cst.CSTNode | None) -> bool:
    """Whether a function nested in ``fn``, however deep, declares ``nonlocal``: only
    then can a closure of ``fn`` write one of its names. Worked out once per function."""
    if fn is None:
        return False
    cached = _NONLOCAL.get(id(fn))
    if cached is None or cached[0] is not fn:
        if len(_NONLOCAL) > 1024:
            _NONLOCAL.clear()
        found = False
        stack = list(fn.body.body) if type(fn) is cst.FunctionDef else []
        while stack and not found:
            for small in statements(stack.pop()):
                if type(small) is cst.Nonlocal:
                    found = True
                elif type(small) is cst.FunctionDef:
                    stack += small.body.body
        cached = _NONLOCAL[id(fn)] = (fn, found)
    return cached[1]


def _globals_written(frame: Frame, written: set[str] | frozenset[str]) -> None:
    """A call wrote the module's globals ``written``: what was made of their old values
    keeps them under names of their own, and a condition on them holds no more; this
    function's callers forget them too."""
    frame.summary.globals_written_by_calls |= written
    for name in written:
        if (
            name not in frame.state  # not a local of the same name
            or name in frame.globals_declared
            or frame.key.node is None
        ):
            retire_in(frame, name)
            forget_facts(frame, name)


def _through_partial(ref: Ref) -> Ref:
    """``ref`` called through a ``functools.partial`` whose arguments are not known (one
    of a lazily named callee): a function's parameters may be given by it."""
    if isinstance(ref, FuncRef):
        return FuncRef(ref.key, ref.self_val, ref.bound, ref.bound_kw, bound_unknown=True)
    return ref


def _by_keyword(arg: cst.Arg, keyword: str | None) -> bool:
    """Whether ``arg`` is passed by the keyword ``keyword`` (none for None)."""
    return keyword is not None and arg.keyword is not None and arg.keyword.value == keyword


def _calls_another_init(init: cst.FunctionDef) -> bool:
    """Whether an ``__init__`` calls another (``super().__init__(...)``,
    ``Base.__init__(self, ...)``) or a method on ``self``, or writes fields another way
    (``self.__dict__``, ``setattr``), which its own summary's ``field_writes`` may not
    hold. Its statements' calls are looked at (``statement_calls``), not every node."""
    stack: list[cst.CSTNode] = list(init.body.body)
    while stack:
        stmt = stack.pop()
        if type(stmt) is cst.SimpleStatementLine:
            stack.extend(stmt.body)
            continue
        if type(stmt) is cst.Assign and any(
            "__dict__" in (dotted(t.target.value) or "")
            for t in stmt.targets
            if type(t.target) is cst.Subscript
        ):
            return True
        for call in statement_calls(stmt):
            func = call.func
            name = dotted(func) or ""
            if name in ("setattr", "object.__setattr__") or name.startswith("self.__dict__"):
                return True
            if type(func) is cst.Attribute:
                owner = func.value
                if func.attr.value == "__init__" or dotted(owner) == "self":
                    return True
                if type(owner) is cst.Call and dotted(owner.func) == "super":
                    return True
        for field_name in ("body", "orelse", "finalbody"):
            part = getattr(stmt, field_name, None)
            if type(part) is cst.If:  # elif
                stack.append(part)
            elif isinstance(part, (cst.Else, cst.Finally)):
                stack.extend(part.body.body)
            elif isinstance(part, cst.BaseSuite):
                stack.extend(part.body)
        for block in [h.body for h in getattr(stmt, "handlers", ())] + [
            c.body for c in getattr(stmt, "cases", ())
        ]:
            stack.extend(block.body)
    return False


def _leading_positional(args: Iterable[cst.Arg]) -> int:
    """How many of a call's arguments come by position before any keyword, ``*args`` or
    ``**kwargs``: the only ones whose place is known (Python allows no plain positional
    argument after a keyword, and after ``*args`` no argument's place is known:
    ``f(*args, 64, n)`` passes ``64`` first only where ``args`` is empty)."""
    n = 0
    for a in args:
        if a.keyword is not None or a.star:
            break
        n += 1
    return n
