"""Expression interpretation: reads of names and fields, one ``eval_<Node>`` per node
kind, arithmetic, and the floor divisions that start zero-able lengths (``source``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import libcst as cst

from zerolint.dataflow import guards
from zerolint.dataflow.chunks import is_chunk
from zerolint.dataflow.frames import (
    MAX_DEPTH,
    RECURSION,
    CallSite,
    Frame,
    FuncKey,
    Summary,
    forget_cells_naming,
    retired_value,
)
from zerolint.dataflow.library import (
    BUILTIN_NAMES,
    DIVISIONS,
    OPERATOR_NAMES,
    SHAPE_ATTRS,
)
from zerolint.dataflow.statements import forget_facts, in_init
from zerolint.dataflow.syntax import (
    affine_prefix,
    compared_with_int,
    comprehension_targets,
    dict_key,
    dotted,
    drops_rows,
    int_value,
    is_boolean_index,
    is_mask,
    less_a_constant,
    operand,
    reads_what_it_binds,
    slice_bounds,
    slice_cell,
    target_names,
    window_width,
    writes_nothing,
)
from zerolint.dataflow.values import (
    EMPTY,
    AttrOrigin,
    CallOrigin,
    ClassRef,
    Effect,
    ExtRef,
    FieldOrigin,
    FuncRef,
    GlobalOrigin,
    InstRef,
    LambdaRef,
    LazyRef,
    ModRef,
    PendingRef,
    RawStep,
    Ref,
    SinkRef,
    Trace,
    Val,
    in_order,
    is_object_read,
    join_all,
    keyed,
    reshaped,
    without_row_counts,
)
from zerolint.model import EVERY_ROW, IDENTITY, Op, OpKind
from zerolint.project import ClassInfo, ModuleInfo

_UNKNOWN = object()
# Literals hold nothing to walk (LibCST's `children` rebuilds a node to list its children).
_LITERALS = frozenset({cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.Ellipsis})
# A default value of these kinds calls nothing (`block=64`, `dtype=torch.int32`): not evaluated.
_NO_CALL = _LITERALS | {cst.Name, cst.Attribute}


class Expressions:
    """Part of ``Analyzer`` (see analyzer.py); methods call each other through ``self``."""

    # The eval_ method of each node type, None for the generic walk (Analyzer.__init__).
    evaluators: dict[type, Callable[..., Val] | None]
    # project_module_of's answers, by dotted name (Analyzer.__init__).
    _module_of: dict[str, str | None]

    # ------------------------------------------------------------------ reads

    def read_key(self, frame: Frame, key: str) -> Val:
        if key in frame.state:
            return frame.state[key]
        head, _, rest = key.partition(".")
        if not rest:
            return self.read_name(frame, head)
        if head == "self" and "." not in rest and frame.key.cls is not None:
            cls = frame.key.cls
            own = self.instance_attribute(frame, cls, rest)
            # `self` may be of a subclass that overrides the name (Expressions.overriders).
            others = [
                self.instance_attribute(frame, c, rest, field=False)
                for c in self.overriders(cls, rest)
            ]
            return join_all([own, *others]) if others else own
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
            return Val((), self.module_function(mod, name))
        if name in mod.classes:
            return Val((), self.module_class(mod, name))
        if mod.read_through_code(name):
            origin = GlobalOrigin(mod, name)
            return Val([Trace(origin, ())], [PendingRef(origin)])
        if name in mod.imports:
            return Val((), self.lookup_qualified(mod, mod.imports[name]))
        if name in self.sinks_by_name:
            return Val((), [SinkRef(spec) for spec in self.sinks_by_name[name]])
        if name in BUILTIN_NAMES:
            return Val((), [ExtRef(name)])
        if mod.star_imports:
            return Val((), self.from_star_imports(mod, name, 0))
        return EMPTY

    def module_function(self, mod: ModuleInfo, name: str) -> list[Ref]:
        """A module-level def's name: the function, and what an assignment at module level
        or a function's `global` statement binds the name to as well (`_prep = _identity`
        under an `if`: a call of `_prep` may call either)."""
        ref = FuncRef(self.func_key(mod, mod.functions[name]))
        if not mod.read_through_code(name):
            return [ref]
        return [ref, PendingRef(GlobalOrigin(mod, name))]

    def module_class(self, mod: ModuleInfo, name: str) -> list[Ref]:
        """A module-level class's name: the class, and what an import in another arm binds
        the name to as well (``ModuleInfo.import_arms``: `from fast_impl import Meta` in a
        `try`, `class Meta` in its `except`)."""
        ref = ClassRef(mod.classes[name])
        if name not in mod.import_arms:
            return [ref]
        return [ref, PendingRef(GlobalOrigin(mod, name))]

    def from_star_imports(self, mod: ModuleInfo, name: str, depth: int) -> list[Ref]:
        """``name``, bound by none of ``mod``'s own statements, as its ``from m import *``
        lines may bind it: the last one that leads somewhere other than outside the tree
        (a later star import binds over an earlier one); else as the first one does."""
        refs: list[Ref] = []
        for star in reversed(mod.star_imports):
            refs = self.lookup_qualified(mod, f"{star}.{name}", depth)
            if any(not isinstance(r, ExtRef) for r in refs):
                return refs
        return refs

    def lookup_qualified(self, mod: ModuleInfo, qual: str, depth: int = 0) -> list[Ref]:
        """What a dotted name refers to: a sink, a project module/function/class, or outside."""
        if qual in self.guarded_quals:
            return [ExtRef(qual)]  # clamps its own input (runtime_guard's wrapper)
        specs = self.sinks_by_qual.get(qual)
        if specs is not None:
            return [SinkRef(spec) for spec in specs]
        if self.whole_program and depth >= MAX_DEPTH:
            self.note(RECURSION)
        if self.whole_program and depth < MAX_DEPTH:
            modname = self.project_module_of(qual)
            if modname is not None:
                if self.project.is_parsed(modname) or self.reaches_sink(modname):
                    found = self.resolve_in_project(qual, depth)
                    if found:
                        return found
                else:
                    self.note(modname)  # a placeholder until the module is parsed or capable
                    return [LazyRef(qual)]
        last = qual.rsplit(".", 1)[-1]
        if last in self.sinks_by_name:
            # Reached however it is: a re-export, a vendored copy, a module we cannot see.
            return [
                SinkRef(spec)
                for spec in self.sinks_by_name[last]
                if qual not in spec.guarded_qualnames()
            ]
        return [ExtRef(qual)]

    def project_module_of(self, qual: str) -> str | None:
        """The longest prefix of ``qual`` that is a module of the checked tree (the run's
        modules do not change while it runs: each answer is worked out once)."""
        known = self._module_of
        if qual in known:
            return known[qual]
        found = None
        parts = qual.split(".")
        for cut in range(len(parts), 0, -1):
            name = ".".join(parts[:cut])
            if self.project.has_module(name):
                found = name
                break
        known[qual] = found
        return found

    def materialize(self, ref: Ref, depth: int = 0, *, force: bool = False) -> list[Ref]:
        """What a lazy name is, parsing its module now (if parsing is allowed, or forced)."""
        if not isinstance(ref, LazyRef):
            return [ref]
        allow = self.allow_parse
        self.allow_parse = allow or force
        try:
            found: list[Ref] = []
            for r in self.resolve_in_project(ref.qual, depth):
                # A name its module imports from one not parsed yet (a re-export, `from
                # .impl import Meta`): that module is parsed now too, as this one was.
                if not isinstance(r, LazyRef):
                    found.append(r)
                elif depth < MAX_DEPTH:
                    found += self.materialize(r, depth + 1, force=force)
                else:
                    self.note(RECURSION)
        finally:
            self.allow_parse = allow
        return found

    def may_parse(self, modname: str) -> bool:
        """While summaries are built, only modules that mention a sink are parsed; once
        paths are resolved, any module a path leads into is, up to ``MAX_PARSES`` not
        parsed yet for one sink call (``parse_cut`` says the limit cut a path off)."""
        if self.allow_parse:
            if self.parse_limit is None or self.project.was_asked(modname):
                return True
            # Either way the answer depends on what this sink call parsed before it: it is
            # not one to replay in another run (``Analyzer.note``).
            self.note(RECURSION)
            if self.project.asked_count() < self.parse_limit:
                return True
            self.parse_cut = True
            self.parse_refusals += 1
            return False
        if self.reaches_sink(modname) or self.project.is_parsed(modname):
            return True
        self.note(modname)  # an answer that changes once the module is parsed or capable
        self.parse_refusals += 1
        return False

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
                refs = self.module_function(mod, name)
            elif name in mod.classes:
                refs = self.module_class(mod, name)
            elif name in mod.import_arms:  # imported in two arms: each arm's
                refs = self.lookup_dotted(mod, name, depth + 1)
            elif name in mod.imports:
                refs = self.lookup_qualified(mod, mod.imports[name], depth + 1)
            elif name in mod.assigned:
                origin = GlobalOrigin(mod, name)
                refs = [PendingRef(origin)]
            elif self.project.has_module(f"{modname}.{name}"):
                refs = [ModRef(f"{modname}.{name}")]
            elif mod.star_imports:
                # Re-exported by `from .kernels import *` (pkg/__init__.py): where the tree
                # binds it; a name from outside is left to the caller, as before.
                refs = self.from_star_imports(mod, name, depth + 1)
                if all(isinstance(r, ExtRef) for r in refs):
                    refs = []
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

    def property_value(self, frame: Frame, cls: ClassInfo, prop: FuncKey) -> Val:
        """``obj.x`` where ``x`` is a ``@property`` of ``obj``'s class: the value its getter
        returns (a placeholder, resolved where it matters), a callable included."""
        step = RawStep(frame.mod, frame.stmt, None, "call", IDENTITY, f"into {prop.name}")
        site = CallSite(prop, {prop.params()[0].name.value: Val((), [InstRef(cls)])}, step)
        origin = CallOrigin(site)
        return Val([Trace(origin, ())], [PendingRef(origin)])

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

    def class_attr_refs(self, cls: ClassInfo, attr: str, instance: bool = True) -> list[Ref]:
        """The callables that reading ``attr`` on ``cls`` (``instance``: on one of its
        objects) gives: the method, or what a class-level assignment binds, of the first
        class of the MRO that defines the name, as Python looks it up."""
        c = self.defining_class(cls, attr)
        if c is None:
            return []
        if attr in c.methods:
            return [FuncRef(self.func_key(c.module, c.methods[attr], c))]
        return self.class_level_refs(c, attr, cls if instance else None)

    def defining_class(self, cls: ClassInfo, attr: str) -> ClassInfo | None:
        """The first class of ``cls``'s MRO that binds ``attr`` in its body (a method or a
        class-level assignment), where Python finds it; None if none does."""
        return next((c for c in self.mro(cls) if attr in c.methods or attr in c.assigned), None)

    def class_level_refs(self, c: ClassInfo, attr: str, instance: ClassInfo | None) -> list[Ref]:
        """The callables a class-level assignment binds to ``attr``: a function, a kernel
        or a lambda named by its value (``kernel = _kernel``, ``run = lambda self, n: ...``,
        ``forward_cuda = forward_native``), also through ``staticmethod`` or
        ``classmethod``. Read on an object (``instance``), a function or a lambda bound
        without ``staticmethod`` gets the object as its first argument, as Python binds
        it; a value of any other shape (a call, a constant) gives nothing."""
        out: list[Ref] = []
        for wrapper, refs in self._class_level_values(c, attr, frozenset({attr})):
            receiver: Ref | None = None
            if wrapper == "classmethod":
                receiver = ClassRef(c)
            elif not wrapper and instance is not None:
                receiver = InstRef(instance)
            for r in refs:
                if receiver is not None and isinstance(r, LambdaRef):
                    r = LambdaRef(r.node, r.frame, r.stmt, (Val((), [receiver]), *r.bound))
                elif receiver is not None and isinstance(r, FuncRef) and not r.key.is_method:
                    r = FuncRef(r.key, r.self_val, (Val((), [receiver]), *r.bound), r.bound_kw)
                if isinstance(r, (SinkRef, FuncRef, LambdaRef, PendingRef)):
                    out.append(r)
        return out

    def _class_level_values(
        self, c: ClassInfo, attr: str, seen: frozenset[str]
    ) -> list[tuple[str, list[Ref]]]:
        """What the class body holds in ``attr``: for each assignment, the callables its
        value names, unbound, and the descriptor they are wrapped in (``"staticmethod"``,
        ``"classmethod"``, or ``""``). A name of the class body (``b = a``) holds what
        ``a`` holds, wrapper included; a name already being gathered (``seen``: a chain
        that comes back to itself) adds nothing new."""
        found: list[tuple[str, list[Ref]]] = []
        top = self.func_key(c.module, None)
        for stmt, whole in c.assigned[attr]:
            # Each arm of a conditional (`kernel = staticmethod(a) if X else None`) may be
            # what the name holds.
            pending: list[tuple[str, cst.BaseExpression]] = [("", whole)]
            while pending:
                wrapper, value = pending.pop()
                kind = type(value)
                if kind is cst.IfExp:
                    pending += [(wrapper, value.orelse), (wrapper, value.body)]
                elif (
                    not wrapper
                    and kind is cst.Call
                    and len(value.args) == 1
                    and type(value.func) is cst.Name
                    and value.func.value in ("staticmethod", "classmethod")
                ):
                    pending.append((value.func.value, value.args[0].value))
                elif kind is cst.Name and value.value in c.methods:
                    method = self.func_key(c.module, c.methods[value.value], c)
                    found.append((wrapper, [FuncRef(method)]))
                elif kind is cst.Name and value.value in c.assigned and value.value != attr:
                    # (`x = x` reads the module's `x`: the branch below.)
                    if value.value in seen:
                        continue
                    inner = self._class_level_values(c, value.value, seen | {value.value})
                    for held, refs in inner:
                        found.append((wrapper or held, refs))
                elif kind is cst.Name or kind is cst.Attribute or kind is cst.Lambda:
                    frame = Frame(top, Summary(top))
                    frame.stmt = stmt
                    found.append((wrapper, self.eval(frame, value).refs))
        return found

    def mro(self, cls: ClassInfo, depth: int = 0) -> list[ClassInfo]:
        cached = self._mro_cache.get(id(cls))
        if cached is not None:
            self.cached("mro", id(cls))
        else:
            self._mro_cache[id(cls)] = [cls]
            cached = self.made_from("mro", id(cls), lambda: self._mro(cls, depth))
            self._mro_cache[id(cls)] = cached
        if self.recording:
            self.record(("mro", (cls, depth), cached))
        return cached

    def _mro(self, cls: ClassInfo, depth: int) -> list[ClassInfo]:
        out = [cls]
        if depth > MAX_DEPTH:
            self.note(RECURSION)
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

    def initializer(self, cls: ClassInfo) -> tuple[ClassInfo, cst.FunctionDef | None]:
        """Where ``cls(...)`` is initialised: the first class of its MRO that defines
        ``__init__`` (with it), or that ``@dataclass`` gives one (with None: the dataclass
        fields are its parameters). ``cls`` and None where no class known here does (a
        NamedTuple, or a base not parsed): its annotated names are taken as the fields."""
        for c in self.mro(cls):
            init = c.methods.get("__init__")
            if init is not None:
                return c, init
            if c.is_dataclass:
                return c, None
        return cls, None

    def init_parameters(self, cls: ClassInfo) -> list[str]:
        """The names ``cls(...)``'s positional arguments bind, in order: its ``__init__``'s
        parameters after ``self``, or a generated one's, the fields of the dataclass and of
        its dataclass bases (the bases' first; a field declared again keeps its first
        place; one declared ``field(init=False)`` last is none)."""
        owner, init = self.initializer(cls)
        if init is not None:
            return [p.name.value for p in self.func_key(owner.module, init, owner).params()[1:]]
        if not owner.is_dataclass:
            return list(owner.fields)
        names: dict[str, bool] = {}
        for c in reversed(self.mro(owner)):
            if c.is_dataclass:
                for name in c.fields:
                    names[name] = in_init(c, name)
        return [name for name, in_init in names.items() if in_init]

    def lookup_dotted(self, mod: ModuleInfo, name: str, depth: int = 0) -> list[Ref]:
        """What a dotted name written in ``mod`` at module level refers to (an annotation, a
        base class). Where two arms bind its head (``ModuleInfo.import_arms``: `meta: Meta`,
        `Meta` imported from one module in a `try` and from another in its `except`), what
        each arm's import names, and the module's own class of that name; an assigned name
        (`Meta = fast.Meta` in an `except`) is a ``PendingRef`` of what the module binds."""
        head, _, rest = name.partition(".")
        arms = head in mod.import_arms
        own: list[Ref] = []
        if not rest:
            if head in mod.classes:
                own = [ClassRef(mod.classes[head])]
                if not arms:
                    return own
                # And each import of its name in another arm (`class Meta` in an `except`).
            elif head in mod.functions:
                return self.module_function(mod, head)
            elif not arms and mod.read_through_code(head):  # assigned (in an `except` too)
                return [PendingRef(GlobalOrigin(mod, head))]
        imported = mod.imports.get(head)
        if imported is None:
            return own
        quals = mod.top_imports[head] if arms else (imported,)
        return own + [
            ref
            for qual in quals
            for ref in self.lookup_qualified(mod, f"{qual}.{rest}" if rest else qual, depth)
        ]

    def subclasses(self, cls: ClassInfo) -> list[ClassInfo]:
        """Classes that derive from ``cls``: in the parsed modules, and, while paths are
        resolved, in every module that names it (parsed now)."""
        if self.recording:  # the answer, with how many modules were parsed (note_parsed)
            return self.asking("subclasses", cls, lambda: self._subclasses(cls))[0]
        return self._subclasses(cls)[0]

    def _subclasses(self, cls: ClassInfo) -> tuple[list[ClassInfo], int]:
        if self.allow_parse:
            # A subclass of a subclass names only its own base: its module is found by
            # that name (in order, each name once).
            asked = {cls.name}
            self.modules_mentioning(cls.name)
            while True:
                found = self.subclasses_in(cls, self.project.parsed())
                names = sorted({c.name for c in found} - asked)
                if not names:
                    break
                for name in names:
                    self.modules_mentioning(name)
                asked.update(names)
        parsed = self.project.parsed()
        out = self.subclasses_in(cls, parsed)
        self.note_parsed(cls, len(parsed), out)
        return out, len(parsed)

    def instance_attribute(
        self, frame: Frame, cls: ClassInfo, attr: str, *, field: bool = True
    ) -> Val:
        """``attr`` read on an object of ``cls``: a property's value, else what the class's
        MRO binds to the name and, with ``field``, the field (a subclass's override,
        ``overriders``, has no field of its own: its fields are its base's)."""
        prop = self.property_getter(cls, attr)
        if prop is not None:
            return self.property_value(frame, cls, prop)
        refs = self.class_attr_refs(cls, attr)
        if not field:
            return Val((), refs)
        origin = FieldOrigin(cls, attr)
        return Val([Trace(origin, ())], [PendingRef(origin), *refs])

    def overriders(self, cls: ClassInfo, attr: str) -> list[ClassInfo]:
        """The subclasses of ``cls`` in the parsed modules that override ``attr`` (a method,
        a property, a class-level name), themselves or through a mixin: an object that may
        be of any subclass (a method's ``self``) may read any of theirs (``self._prepare(x)``
        in the base's ``build``, overridden by a subclass)."""
        if self.recording:  # for a replay to ask again (Analyzer._replays)
            found, count = self.asking(
                "subclasses_parsed", cls, lambda: self.parsed_subclasses(cls)
            )
            self.note_parsed(cls, count, found)
            return self._overriding(cls, attr, found) if found else found
        found, ids, count = self._parsed_subclasses(cls)
        # The answer changes when a module parsed later holds another subclass.
        self.note_parsed(cls, count, found, ids)
        if not found:
            return found
        key = (id(cls), count, attr)
        out = self._overriders.get(key)
        if out is None:
            out = self._overriders[key] = self._overriding(cls, attr, found)
        return out

    def _overriding(self, cls: ClassInfo, attr: str, found: list[ClassInfo]) -> list[ClassInfo]:
        """Of ``found``, ``cls``'s subclasses, those whose MRO finds ``attr`` in a class
        outside ``cls``'s MRO: one that defines it, or a mixin it takes it from first
        (`class C(RawMixin, Base)`); once for each class it is found in."""
        own = self.mro(cls)
        out: list[ClassInfo] = []
        definers: list[ClassInfo] = []
        for sub in found:
            definer = self.defining_class(sub, attr)
            if definer is not None and definer not in own and definer not in definers:
                definers.append(definer)
                out.append(sub)
        return out

    def parsed_subclasses(self, cls: ClassInfo) -> tuple[list[ClassInfo], int]:
        """The subclasses of ``cls`` in the modules parsed now, and how many those are; no
        module is parsed to look for more."""
        parsed = self.project.parsed()
        return self.subclasses_in(cls, parsed), len(parsed)

    def _parsed_subclasses(self, cls: ClassInfo) -> tuple[list[ClassInfo], tuple, int]:
        """``parsed_subclasses``, with the subclasses' ids, worked out once for each count
        of the modules a check has parsed (a check's only grow; the language server's,
        which records, asks ``parsed_subclasses`` itself)."""
        key = (id(cls), self.project.parsed_count())
        known = self._subclasses_parsed.get(key)
        if known is None:
            found, count = self.parsed_subclasses(cls)
            known = self._subclasses_parsed[key] = (found, tuple(map(id, found)), count)
        return known

    def subclasses_in(self, cls: ClassInfo, modules: list[ModuleInfo]) -> list[ClassInfo]:
        """The classes of ``modules`` that derive from ``cls``."""
        out = []
        for mod in modules:
            for c in mod.classes.values():
                if c is not cls and cls in self.mro(c):
                    out.append(c)
        return out

    def attribute(self, frame: Frame, base: Val, attr: str) -> Val:
        if attr in SHAPE_ATTRS:
            return EMPTY
        refs: list[Ref] = []
        traces: list[Trace] = []
        for ref in in_order(base.refs):
            if isinstance(ref, (ModRef, ExtRef)):
                refs += self.lookup_qualified(frame.mod, f"{ref.name}.{attr}")
            elif isinstance(ref, LazyRef):
                refs += self.lookup_qualified(frame.mod, f"{ref.qual}.{attr}")
            elif isinstance(ref, InstRef) and isinstance(ref.cls, str):
                traces.append(Trace(FieldOrigin(ref.cls, attr), ()))
            elif isinstance(ref, InstRef):
                got = self.instance_attribute(frame, ref.cls, attr)
                traces += got.traces
                refs += got.refs
                for sub in self.overriders(ref.cls, attr) if ref.open else ():
                    got = self.instance_attribute(frame, sub, attr, field=False)
                    traces += got.traces
                    refs += got.refs
            elif isinstance(ref, ClassRef):
                refs += self.class_attr_refs(ref.cls, attr, instance=False)
            elif isinstance(ref, PendingRef) and not isinstance(ref.origin, FieldOrigin):
                # getattr(_dg, "name") where _dg = import_module(...): a module from a call;
                # `meta = build(...); meta.seq_lens`: a field of the object a call made.
                for r in self.resolve_refs(ref):
                    if not isinstance(r, PendingRef):
                        got = self.attribute(frame, Val((), [r]), attr)
                        refs += got.refs
                        traces += got.traces
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
            refs += [SinkRef(spec) for spec in self.sinks_by_name[attr]]
        return Val(traces, refs)

    # ------------------------------------------------------------------ expressions

    def eval(self, frame: Frame, node: cst.CSTNode | None) -> Val:
        if node is None:
            return EMPTY
        kind = type(node)
        method = self.evaluators.get(kind, _UNKNOWN)
        if method is _UNKNOWN:
            method = self.evaluators[kind] = getattr(type(self), f"eval_{kind.__name__}", None)
        if method is not None:
            return method(self, frame, node)
        if kind in _LITERALS:
            return EMPTY
        # F-strings, string concatenations...: no lengths, but evaluate children for calls
        # (an f-string's `{kernel(lens)}` among them, and a format spec's).
        for child in node.children:
            if isinstance(child, cst.BaseExpression):
                self.eval(frame, child)
            elif type(child) is cst.FormattedStringExpression:
                self.eval(frame, child.expression)
                for part in child.format_spec or ():
                    if type(part) is cst.FormattedStringExpression:
                        self.eval(frame, part.expression)
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
        if type(node.value) is cst.Call and id(node.value) in frame.constructed:
            # `Meta(seq_lens, r).ctx`: what this construction put in the field, as for
            # `m = Meta(...); m.ctx` (Statements.bind_fields), not what any other did.
            attr = node.attr.value
            for name, val in frame.constructed[id(node.value)]:
                if name == attr:
                    return val
        return self.attribute(frame, base, node.attr.value)

    def eval_Subscript(self, frame: Frame, node: cst.Subscript) -> Val:
        val = reshaped(self.selected(frame, node))  # a literal's rows, picked: any number
        kept = kept_by_mask(node)
        if kept is None or not val.traces:
            return val
        # `x[x > 0]`: every row kept passes the test (and there may be none: ZL002's).
        op, k = kept
        step = guards.step(
            frame.mod, frame.stmt, EVERY_ROW, op, k, f"rows kept: every row {op} {k}"
        )
        return val.with_traces({t.then(step) for t in val.traces})

    def selected(self, frame: Frame, node: cst.Subscript) -> Val:
        rows = self.rows_source(frame, node)
        if rows is None and drops_rows(node) and self.selects(frame, node):
            # x[1:], x[:-1], x[1::2] of a selection: fewer rows than it had, maybe none,
            # however many it was counted to have.
            val = self.eval_subscript(frame, node)
            step = self.step(frame, None, "flow", Op(OpKind.ROWS, "<any>"), "rows selected")
            return val.with_traces(
                {
                    t.then(step) if not t.concrete or t.steps[0].op.kind == OpKind.ROWS else t
                    for t in val.traces
                }
            )
        if rows is not None:
            val = self.eval_subscript(frame, node)
            # What was already a row count (or may resolve to one) has these rows now; of
            # a window `x[a : a + n]`, whose start may be past its end, any number.
            op = rows.steps[0].op
            lower, upper = slice_bounds(node) or (None, None)
            if upper is not None and window_width(lower, upper) is not None:
                op = Op(OpKind.ROWS, "<any>")
            step = self.step(frame, None, "flow", op, "rows selected")
            traces = {
                t.then(step) if not t.concrete or t.steps[0].op.kind == OpKind.ROWS else t
                for t in val.traces
            }
            return val.with_traces(traces | {rows})
        return self.eval_subscript(frame, node)

    def selects(self, frame: Frame, node: cst.Subscript) -> bool:
        """Whether ``node`` is a selection of rows that a rule counts (``empty_rows``):
        read, not a write target (``buf[n:m] = 0`` selects nothing)."""
        if not self.names.get("empty_rows"):
            return False
        stmt = frame.stmt
        if type(stmt) is cst.Assign and any(t.target is node for t in stmt.targets):
            return False
        return not (type(stmt) is cst.AugAssign and stmt.target is node)

    def rows_source(self, frame: Frame, node: cst.Subscript) -> Trace | None:
        """A selection that can have no rows, when a rule declares it (``empty_rows``):
        ``x[:n]`` has ``n`` rows, ``x[a:b]`` ``b - a``, ``x[a : a + n]`` ``n``, ``x[x > 0]``
        any number. A chunk of a loop over ``range(0, n, c)`` (``x[s : min(s + c, n)]``)
        has rows: ``s < n`` where a step above 0 yields ``s``, and where one below 0
        does, ``n < 0``, which a count is not (the judge takes every count to be >= 0)."""
        declared = self.names.get("empty_rows")
        if not declared or not self.selects(frame, node):
            return None
        bounds = slice_bounds(node)
        count: int | str | None = None
        if bounds is not None and "[:]" in declared and bounds[1] is not None:
            lower, upper = bounds
            if lower is not None and is_chunk(frame, lower, upper):
                return None
            high = operand(upper)
            low = 0 if lower is None else operand(lower)
            width = window_width(lower, upper) if high == "<expr>" else None
            if width is not None:  # x[a : a + n]: n rows (a module constant's value)
                n = self.operand(frame, width)
                high, low = (n if isinstance(n, int) else operand(width)), 0
            elif high == "<expr>" and low == 0:
                high = less_a_constant(upper)  # x[: n - 1]: n - 1 rows, none where n is 1
            if "<expr>" in (high, low):
                return None
            if any(isinstance(b, int) and b < 0 for b in (high, low)):
                count = "<any>"  # x[:-2]: counted from the end, as many rows as x has, less 2
            elif low == 0:
                product = frame.products.get(high) if isinstance(high, str) else None
                count = high if product is None else product[0]  # x[:t], t = n * k
                if isinstance(count, str) and count in frame.bounds:
                    count = frame.bounds[count]  # x[:r], r = max(k, 1): a row at least
            elif isinstance(high, int) and isinstance(low, int):
                count = max(high - low, 0)
            else:
                count = f"{high} - {low}"
            if isinstance(count, int) and count > 0:
                return None
            note, form = "slice (can have no rows)", "[:]"
            if isinstance(count, str) and " = " in count:
                note = f"slice of {count} rows (can have no rows)"
        elif bounds is None and "[mask]" in declared and len(node.slice) == 1:
            index = node.slice[0].slice
            if not (
                type(index) is cst.Index
                and (is_boolean_index(index.value) or is_mask(index.value, frame.key.node))
            ):  # x[x > 0], x[~m & n], x[mask] with a name every assignment makes a mask
                return None
            count, note, form = "<any>", "boolean-mask selection (can have no rows)", "[mask]"
        else:
            return None
        step = self.step(frame, None, "source", Op(OpKind.ROWS, count), note, ("empty_rows", form))
        return Trace(None, (step,))

    def eval_subscript(self, frame: Frame, node: cst.Subscript) -> Val:
        key = dotted(node.value)
        cell = slice_cell(frame, node, key) if key is not None else None
        if cell is not None and cell in frame.state:
            return frame.state[cell]
        base = self.eval(frame, node.value)
        for el in node.slice:
            if type(el.slice) is cst.Index:
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
                    and t.steps[0].op.kind == OpKind.PAD_ZERO
                    and t.steps[0].op.arg == upper
                )
            )
        if base.elements is not None:
            index = node.slice[0].slice.value if type(node.slice[0].slice) is cst.Index else None
            if base.keys is not None:  # a dict written out: d["seq_lens"]
                name = dict_key(index)
                found = base.at_key(name) if name is not None else None
                if found is not None:
                    return found
            else:
                idx = int_value(index)
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
        """The join of the values; for a dict whose keys are all string literals, also each
        key's value (the last one written), so that ``d["seq_lens"]`` reads only its own."""
        if not node.elements:  # `{}`: a dict whose keys are known, none yet
            return keyed({})
        vals = [
            self.eval(frame, el.value)
            for el in node.elements
            if isinstance(el, (cst.DictElement, cst.StarredDictElement))
        ]
        by_key: dict[str, Val] = {}
        for el, val in zip(node.elements, vals):
            key = dict_key(el.key) if type(el) is cst.DictElement else None
            if key is None:
                return join_all(vals)
            by_key[key] = val
        return keyed(by_key) if by_key else EMPTY

    def eval_StarredElement(self, frame: Frame, node: cst.StarredElement) -> Val:
        return self.eval(frame, node.value)

    def eval_NamedExpr(self, frame: Frame, node: cst.NamedExpr) -> Val:
        val = self.eval(frame, node.value)
        self.assign(frame, node.target, val, node.value)
        return val

    def eval_IfExp(self, frame: Frame, node: cst.IfExp) -> Val:
        self.eval(frame, node.test)
        if writes_nothing(node.body) and writes_nothing(node.orelse):
            return self.eval(frame, node.body).join(self.eval(frame, node.orelse))
        # One arm runs: what either writes (`lens.clamp_(min=1) if c else None`) may not
        # have happened, as after an if statement's arms.
        then, other = frame.fork(), frame.fork()
        value = self.eval(then, node.body).join(self.eval(other, node.orelse))
        frame.absorb(then, other)
        return value

    def eval_BooleanOperation(self, frame: Frame, node: cst.BooleanOperation) -> Val:
        # `x or default`, `a and b`: either operand may be the value.
        left = self.eval(frame, node.left)
        if writes_nothing(node.right):
            return left.join(self.eval(frame, node.right))
        # The right operand may not run: what it writes (`flag or lens.clamp_(min=1)`) may
        # not have happened.
        ran = frame.fork()
        value = left.join(self.eval(ran, node.right))
        frame.absorb(ran, frame.fork())
        return value

    def eval_Comparison(self, frame: Frame, node: cst.Comparison) -> Val:
        self.eval(frame, node.left)
        for c in node.comparisons:
            self.eval(frame, c.comparator)
        return EMPTY

    def eval_Await(self, frame: Frame, node: cst.Await) -> Val:
        return self.eval(frame, node.expression)

    def eval_Yield(self, frame: Frame, node: cst.Yield) -> Val:
        """``yield x`` hands ``x`` to the loop over the generator, as ``return x`` hands it
        to a call (a loop over the call takes the call's result); ``yield from g`` hands on
        what ``g`` gives. What the generator receives back (``send``) is unknown."""
        value = node.value
        if type(value) is cst.From:
            value = value.item
        if value is not None:
            self.hand_back(frame, self.eval(frame, value), frame.stmt)
        return EMPTY

    def eval_Lambda(self, frame: Frame, node: cst.Lambda) -> Val:
        self.eval_defaults(frame, node.params)  # `lambda m=kernel(lens): m` calls it here
        return Val((), [LambdaRef(node, frame, frame.stmt)])

    def eval_defaults(self, frame: Frame, params: cst.Parameters) -> None:
        """A def's or a lambda's default values, evaluated where it is written, in source
        order (positional-only parameters first). A name or a literal holds no call."""
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            default = param.default
            if default is not None and type(default) not in _NO_CALL:
                self.eval(frame, default)

    def _comprehension(
        self, frame: Frame, node: cst.CSTNode, elts: Sequence[cst.BaseExpression]
    ) -> Val:
        # Its own loop variables are names of its own: binding them binds nothing of the
        # function's (`[n * 2 for n in chunks]` leaves `n` and what was made from it).
        # The first iterable is read in the function (`[x for x in x]`), before them.
        own = comprehension_targets(node)
        inner = frame.fork()
        comp = node.for_in  # type: ignore[attr-defined]
        # What the iterable made of a name the comprehension binds is the function's
        # value of it, not the loop variable's (`[x for n, x in [f(buf, n)] if n > 0]`).
        it = retired_value(inner, self.eval(inner, comp.iter), sorted(own))
        for name in own:
            if inner.state.pop(name, None) is not None:
                forget_cells_naming(inner, name)
        while True:
            self.assign(inner, comp.target, it.iterated(), None)
            # The element is made only where the loop yields and its conditions hold, as
            # a `for` statement's body (Statements.exec_loop).
            runs = guards.loop_atoms(comp.iter)
            if runs and not reads_what_it_binds(comp.target, comp.iter):
                self.hold(inner, runs, lambda runs=runs: runs)
            for cond in comp.ifs:
                self.eval(inner, cond.test)
                self.constrain(inner, cond.test, True)
            comp = comp.inner_for_in
            if comp is None:
                break
            # A later clause's iterable is read before its target binds (`for n in ns
            # for n, x in [f(buf, n)]`): what it made of those names is their old value.
            bound = sorted(target_names(comp.target))
            it = retired_value(inner, self.eval(inner, comp.iter), bound)
        out = join_all(self.eval(inner, e) for e in elts)
        # What it wrote outside itself (a walrus binds in the function: `[(n := len(c))
        # for c in chunks]`; a call writes in place) holds after it where it ran at least
        # once, and nothing known of those names before it holds after it.
        state = frame.state
        changed = [k for k, v in inner.state.items() if k not in own and state.get(k) is not v]
        if changed:
            ran = frame.fork()
            for name in changed:
                ran.state[name] = inner.state[name]
                forget_facts(ran, name)
            frame.absorb(frame.fork(), ran)
        return out

    def eval_ListComp(self, frame: Frame, node: cst.ListComp) -> Val:
        return self._comprehension(frame, node, [node.elt])

    eval_SetComp = eval_ListComp
    eval_GeneratorExp = eval_ListComp

    def eval_DictComp(self, frame: Frame, node: cst.DictComp) -> Val:
        return self._comprehension(frame, node, [node.value])

    def eval_UnaryOperation(self, frame: Frame, node: cst.UnaryOperation) -> Val:
        val = self.eval(frame, node.expression)
        if type(node.operator) is cst.Minus:
            return self.extend(frame, val, Op(OpKind.NEG))
        if type(node.operator) is cst.Not:
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
            effect = ("floor_division", OPERATOR_NAMES[kind])
            return self.source(frame, left, op_, node.left, note=note, effect=effect)
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
        if name == "Subtract":
            return self.subtract(frame, left, right, left_node, right_node, "-")
        if name == "Add":
            # x + k, k + x; a negative k is a subtraction (`x + (-1)` is `x - 1`).
            if left.traces and rv is not None:
                return self.plus(frame, left, rv, "+")
            if right.traces and lv is not None:
                return self.plus(frame, right, lv, "+")
        if name == "Multiply":
            displays = (cst.List, cst.Tuple)
            if type(left_node) in displays or type(right_node) in displays:
                # `[x] * n` repeats the elements, n of them: no product of lengths.
                repeated = left if type(left_node) in displays else right
                return reshaped(repeated.only_traces_and_refs())
            scope = frame.key.node
            if left.traces and rv is None and is_mask(right_node, scope):
                return self.mask_zero(frame, left, "*")
            if right.traces and lv is None and left_node is not None and is_mask(left_node, scope):
                return self.mask_zero(frame, right, "*")
            if left.traces and rv is not None:
                return self.extend(frame, left, Op(OpKind.MUL, rv))
            if right.traces and lv is not None:
                return self.extend(frame, right, Op(OpKind.MUL, lv))
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
            traces = left.traces | right.traces
            if left.traces and right.traces:
                traces = without_row_counts(traces)  # broadcasting: whose rows is unknown
            return self.extend(frame, Val(traces), Op(OpKind.OPAQUE, name.lower()))
        return Val(left.traces | right.traces)

    def extend(self, frame: Frame, val: Val, op: Op, note: str = "") -> Val:
        if not val.traces:
            return Val((), val.refs)
        step = self.step(frame, None, "flow", op, note)
        return Val((t.then(step) for t in val.traces), val.refs)

    def source(
        self,
        frame: Frame,
        val: Val,
        op: Op,
        dividend: cst.BaseExpression | None,
        *,
        note: str,
        effect: Effect,
    ) -> Val:
        """A floor division or shift: existing traces go through it, and new zero-able rows
        start here (the dividend's constant offsets are recorded so ceil-division idioms
        such as ``(x + c - 1) // c`` are judged on what they compute)."""
        constant = int_value(dividend)
        # 256 // 4 is a constant; 1 // 4 is a constant 0, a zero fill.
        if constant is not None and not val.traces and isinstance(op.arg, int) and op.arg > 0:
            if op.kind == OpKind.RSHIFT:
                value = constant >> op.arg
            elif op.kind == OpKind.TRUNCDIV and constant < 0:
                value = -(-constant // op.arg)
            else:
                value = constant // op.arg
            return self.zero_source(frame, note, effect) if value == 0 else EMPTY
        step = self.step(frame, None, "source", op, note, effect)
        if val.traces and all(_known(t) for t in val.traces):
            # Every value the dividend can hold is known (torch.tensor([8, 12]) // 4).
            return Val(t.then(step) for t in val.traces)
        prefix = affine_prefix(dividend) if dividend is not None else []
        if prefix is None:
            prefix = [Op(OpKind.OPAQUE, "dividend")]
        fresh_steps = tuple(self.step(frame, None, "flow", p) for p in prefix) + (step,)
        traces = [t.then(step) for t in val.traces]
        traces.append(Trace(None, fresh_steps))
        return Val(traces)

    def eval_Call(self, frame: Frame, node: cst.Call) -> Val:
        return self.call(frame, node)


def kept_by_mask(node: cst.Subscript) -> tuple[str, int] | None:
    """``(op, k)`` for ``x[x op k]`` (or ``x[k op x]``): the rows a mask on the values of
    the tensor itself keeps, each of which is ``op k``."""
    if len(node.slice) != 1 or type(node.slice[0].slice) is not cst.Index:
        return None
    test = node.slice[0].slice.value
    key = dotted(node.value)
    if key is None:
        return None
    for side, op, k in compared_with_int(test):
        if dotted(side) == key:
            return op, k
    return None


def _known(trace: Trace) -> bool:
    """A concrete trace that starts at known rows (a literal tensor, a known fill)."""
    return (
        trace.concrete
        and bool(trace.steps)
        and any(s.op.kind == OpKind.KNOWN_ROWS for s in trace.steps)
        and all(s.op.kind != OpKind.OPAQUE for s in trace.steps)
    )
