"""Path conditions from outside the sink's function, tried when a path is not proved safe.

Two kinds, both read from what the analysis recorded anyway (no module is parsed for them):

* **A caller's guards.** A helper whose callers are all known (a private or nested
  function, every mention of it in its module a call that was interpreted, and no other
  file naming it together with its module, or its class for a method) is reached only
  from its call sites: a path made inside it holds under the guards that dominate one of
  those calls. The path is tried once per call site, with the helper's parameters renamed
  to the caller's operands and its other names to names of their own (``_rename``); it is
  safe when it is safe from every call site. Callers of a helper that is itself closed are
  followed up to ``MAX_CALLER_DEPTH`` levels.
* **A guard on a field.** ``if meta.num == 0: return`` says what the field ``num`` of the
  object held, and the value the path carries was put into an object of that class at the
  last construction of the class on the path (``Meta(lens=lens, num=num_decodes)``): the
  guard holds for the operand written there, ``num_decodes != 0``. Fields are a property
  of the class here, as everywhere in the analysis (``resolution.field_values``): the guard
  is taken to be about the object the path's value was stored in.

A path that is safe on its own never gets here, so the output of a path is unchanged
unless these conditions prove it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

import libcst as cst

from zerolint.dataflow import guards
from zerolint.dataflow.frames import CallSite, Frame, FuncKey, rebound_steps
from zerolint.dataflow.values import SYMBOLIC_OPS, InstRef, RawStep, Trace, read_keys
from zerolint.model import OpKind

MAX_CALLER_DEPTH = 3
MAX_VARIANTS = 16

# A call site: the calling function, the call, and the conditions that held there
# (``Frame.guards`` entries: name, op, k, statement).
CallerContext = tuple[FuncKey, CallSite, tuple]


class Contexts:
    """Part of ``Analyzer`` (see analyzer.py); methods call each other through ``self``."""

    def note_call(
        self, key: FuncKey, caller: FuncKey, node_id: int, site: CallSite, conds: tuple
    ) -> None:
        """Remember a call of ``key`` (a later interpretation of the caller replaces it)."""
        where, context = (id(caller), node_id), (caller, site, conds)
        self.call_sites.setdefault(key, {})[where] = context
        if self.recording:
            self.record(("call", key, where, context))

    def note_construction(
        self, node_id: int, keys: tuple[str, ...], operands: dict[str, int | str]
    ) -> None:
        """What a construction wrote into each field, as operands (literals or names),
        under its class's keys (``construction_keys``)."""
        self.constructions[node_id] = (keys, operands)
        if self.recording:
            self.record(("built", node_id, (keys, operands)))

    def note_field_guard(self, frame: Frame, stmt: cst.CSTNode, name: str) -> None:
        """For a guard on ``obj.field``: the classes ``obj`` may be an instance of."""
        head, dot, _ = name.partition(".")
        if not dot or "." in name[len(head) + 1 :] or (id(stmt), name) in self.guard_classes:
            return
        val = frame.state.get(head) if head in frame.state else None
        refs = val.refs if val is not None else ()
        classes = frozenset(k for r in refs if isinstance(r, InstRef) for k in read_keys(r.cls))
        self.guard_classes[(id(stmt), name)] = classes
        if self.recording:
            self.record(("guard", (id(stmt), name), classes))

    # ------------------------------------------------------------------ refinement

    def refine(self, func: FuncKey, trace: Trace) -> list[Trace] | None:
        """The variants of ``trace`` with the conditions from outside ``func`` added, or
        None when there are none: the path is safe if every variant is."""
        variants = self.with_callers(func, trace, 0)
        changed = variants is not None
        out = []
        for v in variants or [trace]:
            translated = self.field_guards(v)
            changed = changed or translated is not v
            out.append(translated)
        return out if changed else None

    def with_callers(self, func: FuncKey, trace: Trace, depth: int) -> list[Trace] | None:
        if depth >= MAX_CALLER_DEPTH:
            return None
        contexts = self.closed_callers(func)
        if not contexts:
            return None
        out: list[Trace] = []
        for caller, site, conds in contexts:
            steps = tuple(guards.step(caller.mod, stmt, name, op, k) for name, op, k, stmt in conds)
            t = Trace(None, steps + (site.step,) + _rename(func, site, trace.steps))
            out += self.with_callers(caller, t, depth + 1) or [t]
            if len(out) > MAX_VARIANTS:
                return None
        return out

    def closed_callers(self, key: FuncKey) -> list[CallerContext] | None:
        """Every call of ``key``, when they are all known; else None (asked once a run:
        findings are made after every module's functions are interpreted)."""
        if key not in self.closed_cache:
            self.closed_cache[key] = self.made_from(
                "closed", key, lambda: self._closed_callers(key)
            )
        else:
            self.cached("closed", key)
        return self.closed_cache[key]

    def _closed_callers(self, key: FuncKey) -> list[CallerContext] | None:
        node = key.node
        if node is None:
            return None
        name = node.name.value
        nested = key.cls is None and key.mod.functions.get(name) is not node
        private = name.startswith("_") and not name.endswith("__")
        if not (nested or private):
            return None
        sites = self.call_sites.get(key)
        if not sites:
            return None
        mentions = len(re.findall(rf"\b{re.escape(name)}\b", key.mod.text))
        calls = {id(site.step.node) for _, site, _ in sites.values()}
        if mentions != 1 + len(calls):
            return None  # passed as a value, named in a string, or defined twice
        # Another file can call it only through its module (module-level: `from m import
        # _f`, `m._f`) or its class (a subclass, an instance it names).
        via = key.cls.name if key.cls is not None else key.mod.name.rpartition(".")[2]
        for path in self.project.files_containing(name):
            text = self.project.text(path) or ""
            if path != key.mod.path and re.search(rf"\b{re.escape(via)}\b", text):
                return None
        return list(sites.values())

    def field_guards(self, trace: Trace) -> Trace:
        """``trace`` with each guard on a field also read as a guard on the operand the last
        construction of the field's class on the path wrote into it."""
        built: dict[str, dict[str, int | str]] = {}
        steps: list[RawStep] = []
        changed = False
        for step in trace.steps:
            steps.append(step)
            made = self.constructions.get(id(step.node)) if step.node is not None else None
            if made is not None:
                for key in made[0]:  # construction_keys
                    built[key] = made[1]
                continue
            if step.op.kind != OpKind.GUARD:
                continue
            parsed = _field_guard(str(step.op.arg))
            if parsed is None:
                continue
            name, attr, op, k = parsed
            classes = self.guard_classes.get((id(step.stmt), name), frozenset())
            written = {built[c][attr] for c in classes if c in built and attr in built[c]}
            if len(written) != 1:
                continue
            operand = written.pop()
            note = f"guard: {operand} {op} {k} (set into {name})"
            steps.append(guards.step(step.mod, step.stmt, str(operand), op, k, note))
            changed = True
        return Trace(trace.origin, tuple(steps)) if changed else trace


def _rename(func: FuncKey, site: CallSite, steps: tuple[RawStep, ...]) -> tuple[RawStep, ...]:
    """The callee's steps in the caller's names: each parameter becomes the caller's
    operand; a parameter the caller passed an expression for (or nothing), and every other
    name of the callee (its locals), becomes a name of its own that no condition of the
    caller can be about (``_helper(k)``)."""
    params = [p.name.value for p in func.params()]
    known: dict[str, int | str] = {p: f"{func.name}({p})" for p in params}
    known.update(site.operands)
    known.update(site.rebound_on(steps))  # `n = 0` in the helper: not the caller's n
    call = site.step.node
    if (
        func.is_method
        and params
        and type(call) is cst.Call
        and type(call.func) is cst.Attribute
        and type(call.func.value) is cst.Name
        and call.func.value.value == "self"
    ):
        known[params[0]] = "self"  # self.helper(...): the same object
    names = _CalleeNames(func.name, known)
    return rebound_steps(steps, names, SYMBOLIC_OPS)


_SYMBOL = re.compile(r"[A-Za-z_][\w.]*")


class _CalleeNames(Mapping[str, "int | str"]):
    """Every symbol of a callee, as ``rebound`` asks for it: a parameter's operand, else
    a fresh name; ``head.field`` follows its head (a literal has no fields)."""

    def __init__(self, func: str, known: dict[str, int | str]) -> None:
        self.func, self.known = func, known

    def __iter__(self) -> Iterator[str]:
        return iter(self.known)

    def __len__(self) -> int:
        return len(self.known)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and _SYMBOL.fullmatch(key) is not None

    def __getitem__(self, key: str) -> int | str:
        head, dot, rest = key.partition(".")
        value = self.known.get(head, f"{self.func}({head})")
        if not dot:
            return value
        return f"{value}.{rest}" if isinstance(value, str) else f"{self.func}({head}).{rest}"

    def get(self, key: str, default: object = None) -> object:  # type: ignore[override]
        return self[key] if _SYMBOL.fullmatch(key) else default


def _field_guard(arg: str) -> tuple[str, str, str, int] | None:
    """``"meta.num != 0"`` -> ("meta.num", "num", "!=", 0); None for a plain name."""
    parts = arg.split()
    if len(parts) != 3 or parts[0].count(".") != 1:
        return None
    try:
        k = int(parts[2])
    except ValueError:
        return None
    return parts[0], parts[0].split(".")[1], parts[1], k
