"""Resolution: placeholders (parameters, call results, fields, globals) replaced by what
they hold, when a trace reaches a sink; without parsing first, then with."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from zerolint.dataflow.frames import (
    MAX_DEPTH,
    MAX_PARSES,
    RECURSION,
    CallSite,
    Frame,
    FuncKey,
    Summary,
    retired_trace,
)
from zerolint.dataflow.values import (
    EMPTY,
    MAX_TRACES,
    AttrOrigin,
    CallOrigin,
    ClassRef,
    EffectOrigin,
    FieldOrigin,
    FuncRef,
    GlobalOrigin,
    InstRef,
    LazyRef,
    Origin,
    ParamOrigin,
    PendingRef,
    RawStep,
    Ref,
    RenamedOrigin,
    Trace,
    Val,
    in_order,
    is_object_read,
    join_all,
    read_keys,
)
from zerolint.model import Op, OpKind
from zerolint.project import ClassInfo, ModuleInfo

# A class statement's name and the text of its bases (``class Sub(pkg.Base, Mixin):``).
_CLASS_STATEMENT = re.compile(r"^[ \t]*class[ \t]+(\w+)[ \t]*\(([^)]*)\)", re.MULTILINE)

R = TypeVar("R")


class Resolution:
    """Part of ``Analyzer`` (see analyzer.py); methods call each other through ``self``."""

    def resolve_in_rounds(
        self, vals: Sequence[Val], decide: Callable[[list[Trace], bool], R | None]
    ) -> R | None:
        """Resolve ``vals`` in two rounds: first through the modules already parsed; only
        when ``decide(traces, last_round)`` returns None, again through every module the
        paths lead into (parsing costs more than everything else). The first answer wins."""
        try:
            for allow_parse in (False, True):
                self.allow_parse = allow_parse
                if allow_parse:
                    self.forget_resolutions()
                    self.parse_limit = self.project.asked_count() + MAX_PARSES
                # Read by ``decide`` after this round's resolution.
                self.depth_cut = self.parse_cut = False
                traces = [t for v in vals for t in self.resolve(v)]
                found = decide(traces, allow_parse)
                if found is not None:
                    return found
            return None
        finally:
            self.allow_parse = False
            self.parse_limit = None

    # ------------------------------------------------------------------ resolution

    def origin_values(self, origin: Origin) -> list[Val]:
        """What a field (or a field of a field) may hold, from every write to it."""
        if isinstance(origin, FieldOrigin):
            return self.field_values(origin.cls, origin.attr)
        if isinstance(origin, AttrOrigin):
            out: list[Val] = []
            for val in self.origin_values(origin.base):
                for ref in in_order(val.refs):
                    for r in self.materialize(ref):
                        if isinstance(r, InstRef):
                            out += self.field_values(r.cls, origin.attr)
            return out
        return []

    def refs_through_fields(self, frame: Frame, receiver: Val, method: str) -> list[Ref]:
        """``self.ops.method(...)``: the objects stored in the field, and their method."""
        refs: list[Ref] = []
        reads = [t for t in receiver.traces if is_object_read(t)]
        if len(reads) > 1:  # resolving makes summaries: in the same order on every run
            reads.sort(key=Trace.keep_order)
        for t in reads:
            for val in self.origin_values(t.origin):
                held = [x for r in in_order(val.refs) for x in self.materialize(r)]
                refs += self.attribute(frame, Val((), held), method).refs
        return refs

    def resolved(self, refs: Iterable[Ref]) -> list[Ref]:
        """``refs`` with each placeholder in them replaced by what it resolves to
        (``resolve_refs``)."""
        return [x for r in refs for x in (self.resolve_refs(r) if type(r) is PendingRef else [r])]

    def resolve_refs(
        self, ref: PendingRef, depth: int = 0, done: dict[int, int] | None = None
    ) -> list[Ref]:
        """The objects ``ref`` may be: what the field, module-level name or call result it
        stands for holds, through the placeholders that holds in turn, at most MAX_DEPTH
        deep; each object once, in the order first found.

        ``done``: what this resolution resolved already, each at the least depth it was
        reached at. What it holds is in the answer already, so it is resolved again only
        from nearer the start (where the limit leaves it more depth). Resolving each of the
        placeholders again wherever it is reached is as many resolutions as there are
        paths to it: nine fields, each a list of six reads of the next, took 32 s, and a
        table of functions that call each other through it (``r = table[type(x)](x)``)
        hundreds of thousands of resolutions for a few calls."""
        if depth > MAX_DEPTH:
            self.depth_cut = True
            self.note(RECURSION)
            return []
        opened = self._resolving.get(id(ref.origin))
        if opened is not None:
            self.note(RECURSION)
            self.cut_since(opened)
            return []
        first = done is None
        if first:
            done = {}
        elif done.get(id(ref.origin), MAX_DEPTH + 1) <= depth:
            return []
        done[id(ref.origin)] = depth
        if self.recording:  # where it is being resolved, a replay would not ask
            self.record(("resolving", ref.origin, False))
        self._resolving[id(ref.origin)] = len(self._in_progress)
        try:
            origin = ref.origin
            vals: list[Val] = []
            if isinstance(origin, CallOrigin):
                if self.bind_site(origin.site):
                    returns = self.summary(origin.site.callee).returns  # type: ignore[arg-type]
                    vals.append(closures_bound(returns, origin.site))
            elif isinstance(origin, FieldOrigin):
                vals += self.field_values(origin.cls, origin.attr)
            elif isinstance(origin, GlobalOrigin):
                vals += self.global_values(origin.mod, origin.name)
            out: list[Ref] = []
            for v in vals:
                for r in in_order(v.refs):
                    if isinstance(r, PendingRef):
                        out += self.resolve_refs(r, depth + 1, done)
                    elif isinstance(r, LazyRef) and not self.allow_parse:
                        # A name of a module not parsed yet (a global that holds a class
                        # imported in two arms): the caller calls it as it calls a name
                        # imported once (``Calls.call_lazy``).
                        out.append(r)
                    else:
                        out += self.materialize(r, depth + 1)
            return list({id(r): r for r in out}.values()) if first else out
        finally:
            self._resolving.pop(id(ref.origin), None)
            if self.recording:  # what is made from here on is not made inside it
                self.record(("resolved", ref.origin, None))

    def class_info(self, cls: ClassInfo | str) -> ClassInfo | None:
        if isinstance(cls, ClassInfo):
            return cls
        for ref in self.materialize(LazyRef(cls)):
            if isinstance(ref, ClassRef):
                return ref.cls
        return None

    def lazy_property(self, origin: FieldOrigin) -> FuncKey | None:
        """The ``@property`` getter that ``origin``, a read on an object of a class named
        before its module was parsed, calls, where that module is parsed now."""
        if not isinstance(origin.cls, str):
            return None
        modname = self.project_module_of(origin.cls)
        if modname is None:
            return None
        if not self.project.is_parsed(modname):
            self.note(modname)  # an answer that may change once the module is parsed
            return None
        cls = self.class_info(origin.cls)
        return self.property_getter(cls, origin.attr) if cls is not None else None

    def may_write_field(self, qual: str, attr: str) -> bool:
        """Whether the unparsed class ``qual`` can have ``attr`` written: its module writes
        ``self.attr``, or a module calls its constructor or derives a class from it (whose
        writes are the field's too). Decided on text, so that a dataclass read through an
        annotation costs no parse when nobody builds it here.
        Only where the module's text defines the class: a module that imports it from
        another (``from .meta import Meta``) says nothing of its fields, and whether that
        module is parsed yet depends on the order of the check."""
        modname = self.project_module_of(qual)
        if modname is None:
            return False
        if self.project.is_parsed(modname):
            return True
        self.note(modname)  # an answer that may change once the module is parsed
        path = self.project.by_name.get(modname)
        text = self.project.text(path) if path is not None else None
        if text is None:
            return False
        name = qual.rsplit(".", 1)[-1]
        if f"self.{attr}" in text or "cls(" in text or f"class {name}" not in text:
            return True
        if self.project.files_containing(f"{name}("):
            return True
        return self._subclassed_elsewhere(name)

    def _subclassed_elsewhere(self, name: str) -> bool:
        """Whether a module's text has a class statement naming the class ``name`` among
        its bases. Such a subclass, or one of its own, may write the field (what parsing
        finds: the search for subclasses follows them, ``Expressions.subclasses``), which
        the text of the class's module does not say."""
        # Once per name and run where no question is recorded: a class read through many
        # annotations would scan every file naming it for each read. (A recording run, the
        # language server's, asks again: each making's replay checks the texts it read.)
        known = None if self.recording else self._subclassed_cache.get(name)
        if known is not None:
            return known
        named = re.compile(rf"(?<!\w){re.escape(name)}(?!\w)")
        found = any(
            named.search(m.group(2))
            for path in self.project.files_containing(name)
            for m in _CLASS_STATEMENT.finditer(self.project.text(path) or "")
        )
        self._subclassed_cache[name] = found
        return found

    def field_values(self, cls_or_name: ClassInfo | str, attr: str) -> list[Val]:
        """Everything written to ``attr`` on instances of ``cls`` (its bases and subclasses)."""
        if isinstance(cls_or_name, str) and not self.may_write_field(cls_or_name, attr):
            return []
        cls = self.class_info(cls_or_name)
        if cls is None:
            return []
        key = (id(cls), attr)
        vals = self._field_cache.get(key)
        if vals is not None:
            self.cached("field", key)
            opened = self._field_open.get(key)
            if opened is not None:  # being made: a field defined through itself
                self.cut_since(opened)
                if self.recording:
                    self.record(("field_open", (cls, attr), None))
                return vals
        else:
            self._field_cache[key] = []  # recursion: a field defined through itself is empty
            self._field_open[key] = len(self._in_progress)
            outer_seen, self._recursion_seen = self._recursion_seen, False
            try:
                if self.stored_fields:
                    vals = self.replay_field(cls, attr)
                if vals is None:
                    vals = self.made_from("field", key, lambda: self._field_values(cls, attr))
                    if self.recording:
                        self.field_made(cls, attr, vals)
            finally:
                del self._field_open[key]
                if self._recursion_seen:  # made from a partial summary: not kept past it
                    self._partial_fields.append(key)
                self._recursion_seen = self._recursion_seen or outer_seen
            self._field_cache[key] = vals
        if self.recording:
            self.record(("field", (cls, attr), vals))
        return vals

    def _field_values(self, cls: ClassInfo, attr: str) -> list[Val]:
        vals: list[Val] = []
        family = self.mro(cls) + self.subclasses(cls)
        summaries = [
            self.summary(self.func_key(c.module, m, c)) for c in family for m in c.methods.values()
        ]
        # A private method called on self writes through its callers, where the call's
        # line (and the arm of an if it is in) is on the path: not on its own as well.
        inner = {k for s in summaries for k in s.self_calls if _private(k)}
        for s in summaries:
            if attr in s.field_writes and s.key not in inner:
                vals.append(self.drop_params(s.field_writes[attr]))
        if self.whole_program:
            vals += self.constructor_writes(family, attr)
        return vals

    def constructor_writes(self, family: list[ClassInfo], attr: str) -> list[Val]:
        """Keyword or positional constructor arguments for dataclass-like fields."""
        out: list[Val] = []
        for c in family:
            # A construction of a class with an __init__ (its own or a base's) writes what that
            # __init__ writes (Calls.construct): no other field is worth a search. Only
            # an __init__ whose summary is final says so (not one being made, or to be
            # made again after a recursion).
            owner, init = self.initializer(c)
            if init is not None:
                init_key = self.func_key(owner.module, init, owner)
                if (
                    not self.making_now(init_key)
                    and attr not in self.summary(init_key).field_writes
                    and not self.to_make_again(init_key)
                ):
                    continue
            # Its own module too: a classmethod factory builds it as `cls(...)`.
            keys = read_keys(c)
            for mod in dict.fromkeys([c.module, *self.modules_mentioning(f"{c.name}(")]):
                for key in self.module_functions(mod):
                    built = self.summary(key).constructor_fields
                    for k in keys:  # this class's, and those of a class known by name only
                        v = built.get((k, attr))
                        if v is not None and (v.traces or v.refs):
                            out.append(self.drop_params(v))
        return out

    def modules_mentioning(self, text: str) -> list[ModuleInfo]:
        """Modules whose source contains ``text``: parsed now if parsing is allowed."""
        key = (text, self.allow_parse)
        cached = self._mention_cache.get(key)
        if cached is None:
            cached = self.made_from("mention", key, lambda: self._modules_mentioning(text))
            self._mention_cache[key] = cached
        else:
            self.cached("mention", key)
        if self.recording:
            self.record(("mention", key, cached))
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
        """What a module-level name may hold. Each read of the name is an origin of its own,
        so resolving guards (``_resolving``) cannot see that reading ``ops = ops.child()``
        while the module's summary is being made asks for these values again: asked again
        for the same name while they are being worked out, they are none (a recursion cut),
        not a recursion without end."""
        key = (id(mod), name)
        opened = self._globals_open.get(key)
        if opened is not None:
            self.note(RECURSION)
            self.cut_since(opened)
            return []
        self._globals_open[key] = len(self._in_progress)
        try:
            return self._global_values(mod, name)
        finally:
            del self._globals_open[key]

    def _global_values(self, mod: ModuleInfo, name: str) -> list[Val]:
        vals = [self.summary(self.func_key(mod, None)).global_writes.get(name, EMPTY)]
        # Only a function that declares the name `global` writes it (ModuleInfo.global_writers):
        # the others' summaries are not needed here, and asking for them from inside one of
        # them (a function reading a global) would count as recursion and interpret it again.
        writers = mod.global_writers.get(name, ())
        written_by = [
            self.func_key(mod, fn) for fn_name, fn in mod.functions.items() if fn_name in writers
        ] + [
            self.func_key(mod, m, ci)
            for ci in mod.classes.values()
            for m_name, m in ci.methods.items()
            if f"{ci.qualname}.{m_name}" in writers
        ]
        for key in written_by:
            s = self.summary(key)
            if name in s.global_writes:
                vals.append(self.drop_params(s.global_writes[name]))
        top = self.summaries.get(self.func_key(mod, None))
        if top is None or name not in top.global_writes:
            frame = Frame(self.func_key(mod, None), Summary(self.func_key(mod, None)))
            for value in mod.assigned.get(name, []):
                # Steps made here (a lambda's call of a sink) are on the assignment's line.
                frame.stmt = mod.assigned_in.get(id(value), frame.stmt)
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
            site.step.mod,
            site.step.stmt,
            site.step.node,
            "flow",
            Op(OpKind.OPAQUE, site.lazy or "call"),
        )
        out = []
        for _, v in site.raw or []:
            for t in self.resolve(v):
                out.append(t.extend(t.origin, (step,)))
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
                    out.append(at.extend(at.origin, (site.step, *site.rebind(t.steps))))
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
        # In a stable order: a placeholder being resolved is cut off where it recurs, and
        # what was resolved is cached, so the order of the walk decides which paths are
        # found; the set's own order follows hashes, which change between runs (issue 18).
        for t in sorted(val.traces, key=Trace.keep_order):
            out += self.resolve_trace(t, depth)
        unique = list(dict.fromkeys(out))
        if len(unique) > MAX_TRACES * 4:
            unique = sorted(unique, key=Trace.keep_order)[: MAX_TRACES * 4]
        return unique

    def resolve_trace(self, t: Trace, depth: int) -> list[Trace]:
        origin = t.origin
        if origin is None or isinstance(origin, ParamOrigin):
            return [t]
        if type(origin) is RenamedOrigin:
            # The call resolved as it is (cached, and a recursion where met inside its own
            # resolution), then with the names bound again since renamed.
            base = origin.base
            hit = self._renamed_cache.get(id(origin))
            if hit is not None and hit[0] is origin and id(base) in self._origin_cache:
                self.cached("origin", id(base))
                if id(base) in self._cut_origins:
                    self.depth_cut = True
                renamed = hit[1]
            else:
                made = self.resolve_trace(Trace(base, ()), depth)
                renamed = [retired_trace(m, origin.renames) for m in made]
                if id(base) in self._origin_cache:  # not cut short by a recursion
                    self._renamed_cache[id(origin)] = (origin, renamed)
            return [h.extend(h.origin, t.steps) for h in renamed]
        heads = self._origin_cache.get(id(origin))
        if heads is None:
            if depth > MAX_DEPTH:
                self.depth_cut = True  # a limit, not a recursion: the engine reports it
                self.note(RECURSION)
                return []
            if id(origin) in self._resolving:
                self.note(RECURSION)
                return []
            self._resolving[id(origin)] = len(self._in_progress)
            outer_cut, self.depth_cut = self.depth_cut, False
            try:
                heads = self.made_from(
                    "origin", id(origin), lambda: self.resolve_origin(origin, depth)
                )
            finally:
                self._resolving.pop(id(origin), None)
            if self.depth_cut:
                self._cut_origins.add(id(origin))
            self.depth_cut = self.depth_cut or outer_cut
            self._origin_cache[id(origin)] = heads
        else:
            self.cached("origin", id(origin))
            if id(origin) in self._cut_origins:
                self.depth_cut = True  # reusing a resolution that stopped at the limit
        return [h.extend(h.origin, t.steps) for h in heads]

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
                elif origin.index is not None:
                    # `return _split(...)`: the callee hands on another call's result as it
                    # is; the element asked for is that call's element, not all of it.
                    produced = produced.element(origin.index)
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
                        out.append(at.extend(at.origin, (site.step, *steps)))
                elif inner.origin is None:
                    # Made inside the callee: the path starts there and comes out here.
                    tail = (site.landing(),) if isinstance(origin, EffectOrigin) else ()
                    out.append(Trace(None, steps + tail))
            return out
        if isinstance(origin, FieldOrigin):
            out = []
            for v in self.field_values(origin.cls, origin.attr):
                out += [t for t in self.resolve(v, depth + 1) if t.origin is None]
            getter = self.lazy_property(origin)
            if getter is not None:
                # `meta.compressed` on an object of a class parsed since: its getter's
                # value (`return self.seq_lens // self.ratio`).
                returned = self.summary(getter).returns
                out += [t for t in self.resolve(returned, depth + 1) if t.origin is None]
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


def _private(key: FuncKey) -> bool:
    name = key.node.name.value if key.node is not None else ""
    return name.startswith("_") and not name.endswith("__")


def closures_bound(val: Val, site: CallSite) -> Val:
    """``val`` (what a call gives back) with the closures it holds bound to this call's
    arguments: a decorator's ``inner`` keeps its parameter ``fn`` (``Statements.
    with_closures``), which is the function this call passed (``logged(kernel)``)."""
    if not any(isinstance(r, FuncRef) and r.bound_kw for r in val.refs):
        return val
    refs: list[Ref] = []
    for r in val.refs:
        if isinstance(r, FuncRef) and r.bound_kw:
            held = tuple((name, _argument(v, site)) for name, v in r.bound_kw)
            r = FuncRef(r.key, r.self_val, r.bound, held)
        refs.append(r)
    return val.with_refs(refs)


def _argument(val: Val, site: CallSite) -> Val:
    """What a parameter of the call's callee that ``val`` only carries is at this call."""
    if val.refs or not val.traces:
        return val
    names = set()
    for t in val.traces:
        if not isinstance(t.origin, ParamOrigin) or t.origin.func is not site.callee or t.steps:
            return val
        names.add(t.origin.name)
    return join_all(site.args.get(name, EMPTY) for name in sorted(names))
