"""Where the name a sink call uses is the kernel only in one arm of an ``if``.

SGLang's DeepSeek-V4 indexer imports ``get_paged_mqa_logits_metadata`` from its own kernels
where ``use_jit_indexer`` is true and from ``deep_gemm`` where it is false, then calls it.
The analysis follows both arms, so the finding stands; its message says which arm makes the
call the kernel's and what the name is otherwise, so that a reader can tell whether their
setting takes that arm. This reads the syntax only: the bindings of the callee's name in
the calling function (else at module level) before the call.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass

import libcst as cst

from zerolint.dataflow.values import parameters
from zerolint.project import ModuleInfo, fold_code, record_import

Condition = tuple[cst.BaseExpression, bool]
"""An ``if``'s test and the arm taken: True for its body, False for its ``else``."""


@dataclass(frozen=True)
class Binding:
    """One statement that binds the name: ``qual`` for an import, else the code bound."""

    stmt: cst.CSTNode
    conditions: tuple[Condition, ...]
    qual: str | None
    shown: str


def callee_note(
    mod: ModuleInfo,
    func: cst.FunctionDef | None,
    stmt: cst.CSTNode,
    call: cst.Call,
    kernel_quals: Collection[str],
) -> str | None:
    """``(`fn` is `deep_gemm.fn` only where `flag` is false, line 12; otherwise `other`)``
    for a call ``fn(...)`` whose name is imported as the kernel (a qualified name in
    ``kernel_quals``) in one arm and bound to something else in another; None for any
    other call."""
    if type(call.func) is not cst.Name:
        return None
    name = call.func.value
    found = _bindings_before(mod, func.body.body if func else mod.module.body, name, stmt)
    if found is None:
        return None
    bindings, at_call = found
    if func is not None and not bindings:
        if any(p.name.value == name for p in parameters(func.params)):
            return None
        # Not bound in the function: the module's binding (imports run first).
        bindings, at_call = _bindings_before(mod, mod.module.body, name, None) or ([], ())
    kernel = [b for b in bindings if b.qual is not None and b.qual in kernel_quals]
    others = [b for b in bindings if b.qual is None or b.qual not in kernel_quals]
    if len(kernel) != 1 or not others:
        return None
    (binding,) = kernel
    shared = 0
    while (
        shared < min(len(at_call), len(binding.conditions))
        and at_call[shared][0] is binding.conditions[shared][0]
        and at_call[shared][1] == binding.conditions[shared][1]
    ):
        shared += 1
    extra = binding.conditions[shared:]
    if not extra:
        return None
    where = " and ".join(
        f"`{fold_code(cst.Module([]).code_for_node(test))}` is {'true' if arm else 'false'}"
        for test, arm in extra
    )
    span = mod.positions().statement(binding.stmt)
    line = f", line {span[0]}" if span is not None else ""
    otherwise = ", ".join(dict.fromkeys(f"`{b.shown}`" for b in others))
    return f"`{name}` is `{binding.qual}` only where {where}{line}; otherwise {otherwise}"


def _bindings_before(
    mod: ModuleInfo,
    body: Sequence[cst.CSTNode],
    name: str,
    target: cst.CSTNode | None,
) -> tuple[list[Binding], tuple[Condition, ...]] | None:
    """The bindings of ``name`` in ``body`` (nested functions and classes left out) before
    the statement ``target``, and the conditions ``target`` is under; None when ``target``
    is not in ``body`` (with ``target`` None: every binding, and no conditions)."""
    out: list[Binding] = []
    found: list[tuple[Condition, ...]] = []

    def walk(stmts: Sequence[cst.CSTNode], conditions: tuple[Condition, ...]) -> bool:
        for stmt in stmts:
            if stmt is target:
                found.append(conditions)
                return True
            if type(stmt) is cst.SimpleStatementLine:
                for small in stmt.body:
                    if small is target:
                        found.append(conditions)
                        return True
                    _bind(mod, small, name, conditions, out)
                continue
            if isinstance(stmt, cst.BaseSmallStatement):  # a one-line body: `def f(): ...`
                _bind(mod, stmt, name, conditions, out)
                continue
            if type(stmt) in (cst.FunctionDef, cst.ClassDef):
                if stmt.name.value == name:
                    out.append(Binding(stmt, conditions, None, stmt.name.value))
                continue
            if type(stmt) is cst.If:
                if walk(stmt.body.body, (*conditions, (stmt.test, True))):
                    return True
                orelse = stmt.orelse
                if orelse is not None:
                    arm = (*conditions, (stmt.test, False))
                    inner = [orelse] if type(orelse) is cst.If else orelse.body.body
                    if walk(inner, arm):
                        return True
                continue
            for block in _blocks(stmt):
                if walk(block, conditions):
                    return True
        return False

    walk(body, ())
    if target is not None and not found:
        return None
    return out, (found[0] if found else ())


def _blocks(stmt: cst.CSTNode) -> Iterator[Sequence[cst.CSTNode]]:
    """The statement lists of a compound statement other than ``if`` (in source order)."""
    for part in ("body", "handlers", "orelse", "finalbody", "cases"):
        value = getattr(stmt, part, None)
        if value is None:
            continue
        for item in value if isinstance(value, (tuple, list)) else (value,):
            inner = getattr(item, "body", None)
            if isinstance(inner, cst.BaseSuite):
                inner = inner.body
            if isinstance(inner, (tuple, list)):
                yield inner


def _bind(
    mod: ModuleInfo,
    small: cst.CSTNode,
    name: str,
    conditions: tuple[Condition, ...],
    out: list[Binding],
) -> None:
    if type(small) in (cst.Import, cst.ImportFrom):
        table: dict[str, str] = {}
        record_import(mod, small, table)
        if name in table:
            out.append(Binding(small, conditions, table[name], table[name]))
        return
    if type(small) is cst.Assign:
        for target in small.targets:
            if type(target.target) is cst.Name and target.target.value == name:
                shown = fold_code(cst.Module([]).code_for_node(small.value))
                out.append(Binding(small, conditions, None, shown))
        return
    if (
        type(small) is cst.AnnAssign
        and small.value is not None
        and type(small.target) is cst.Name
        and small.target.value == name
    ):
        shown = fold_code(cst.Module([]).code_for_node(small.value))
        out.append(Binding(small, conditions, None, shown))
