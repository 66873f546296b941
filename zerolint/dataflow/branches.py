"""One run per function: a reported path never goes through both arms of one ``if``.

Every branch is followed, and fields and globals are read flow-insensitively (a read
resolves to every write of the field), so a resolved trace can join a write made in one
arm of an ``if``/``else`` (directly, or by a method called there) to a read in the other
arm, or a write to a read above it: a path that no single run of the function takes (the
write belongs to an earlier call). ``consistent`` keeps a trace only when the steps of
each run of a function agree on one arm of every ``if`` (and one case of every ``match``)
they are in, and come in source order. Code after an ``if`` whose body always returns or
raises is that ``if``'s other arm. A statement inside a loop of the same function is
exempt: each iteration may take another arm and go back up.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import libcst as cst

from zerolint.dataflow.values import RawStep, Trace
from zerolint.model import OpKind
from zerolint.project import ModuleInfo

Arm = tuple[int, int]  # (id of the if or match statement, which arm or case)


@dataclass(frozen=True, slots=True)
class Place:
    func: int  # id of the enclosing function (0: module level)
    arms: frozenset[Arm]
    order: int  # rank in source order
    in_loop: bool  # in a loop of the function, or a loop's own line
    name: str = ""  # the enclosing function's name


_NOWHERE = Place(0, frozenset(), -1, True)


def consistent(trace: Trace) -> bool:
    return consistent_steps(trace.steps)


def consistent_steps(steps: Sequence[RawStep]) -> bool:
    """Steps of one function belong to one run of it until the trace shows that run
    ended (its ``return``) or may be another (a call into a function whose steps came
    before: its next steps are a new run, or a recursion, and are not checked again). A
    field or a global read in the other arm of its write, or above it, with no call in
    between, is the same run: no path."""
    chosen: dict[tuple[int, int], dict[int, int]] = {}
    names: dict[tuple[int, int], str] = {}
    unchecked: set[tuple[int, int]] = set()
    last: dict[tuple[int, int], int] = {}
    for step in steps:
        where = place(step.mod, step.stmt)
        scope = (id(step.mod), where.func)
        names[scope] = where.name
        if scope not in unchecked:
            mine = chosen.setdefault(scope, {})
            for branch, arm in where.arms:
                if mine.setdefault(branch, arm) != arm:
                    return False
            # A guard is a condition placed where the sink is reached, not a step.
            if not where.in_loop and step.op.kind != OpKind.GUARD:
                if where.order < last.get(scope, -1):
                    return False
                last[scope] = where.order
        if step.role == "return":
            chosen.pop(scope, None)
            last.pop(scope, None)
        elif step.role == "call":
            callee = step.note.removeprefix("into ").rsplit(".", 1)[-1]
            unchecked.update(sc for sc, name in names.items() if name == callee)
            # The call may run code written anywhere (a lambda above it): order anew.
            last.clear()
    return True


def in_program_order(steps: Sequence[RawStep]) -> list[RawStep]:
    """The steps with each condition on a scalar (``guard: n > 0``, added where the sink
    is reached) moved up to where it is in its function: before the first step of that
    function that comes after it in the source, a condition on the rows included. Where a
    condition on a scalar stands on a path does not change what the judge makes of it;
    one on the rows counted so far (``#rows``) or on the rows' values (``#every``,
    ``#some``) stays where it is: it is about the values there (a loop's test, met again
    after the body's steps, is about what the body made)."""
    out = list(steps)
    scalar = [s for s in steps if s.op.kind == OpKind.GUARD and not str(s.op.arg).startswith("#")]
    for guard in scalar:
        at = place(guard.mod, guard.stmt)
        j = out.index(guard)
        for i in range(j):
            other = out[i]
            if other.mod is not guard.mod or (
                other.op.kind == OpKind.GUARD and not str(other.op.arg).startswith("#")
            ):
                continue
            there = place(other.mod, other.stmt)
            if there.func == at.func and there.order > at.order:
                out.insert(i, out.pop(j))
                break
    return out


def place(mod: ModuleInfo, stmt: cst.CSTNode) -> Place:
    index = mod.branch_index
    if index is None:
        index = mod.branch_index = _Index(mod.module).places
    return index.get(id(stmt), _NOWHERE)


class _Index:
    def __init__(self, module: cst.Module) -> None:
        self.places: dict[int, Place] = {}
        self.names: dict[int, str] = {0: ""}
        self.order = 0
        self.walk(module.body, 0, frozenset(), False)

    def mark(self, node: cst.CSTNode, func: int, arms: frozenset[Arm], in_loop: bool) -> None:
        self.places[id(node)] = Place(func, arms, self.order, in_loop, self.names[func])
        self.order += 1

    def walk(
        self, body: Iterable[cst.CSTNode], func: int, arms: frozenset[Arm], in_loop: bool
    ) -> None:
        for stmt in body:
            self.visit(stmt, func, arms, in_loop)
            if type(stmt) is cst.If and not in_loop:
                # if c: return ... / code after it: that code is the other arm.
                if _exits(stmt.body) and (stmt.orelse is None or not _exits_else(stmt)):
                    arms = arms | {(id(stmt), 1)}
                elif _exits_else(stmt) and not _exits(stmt.body):
                    arms = arms | {(id(stmt), 0)}

    def visit(self, stmt: cst.CSTNode, func: int, arms: frozenset[Arm], in_loop: bool) -> None:
        if type(stmt) is cst.FunctionDef:
            self.names[id(stmt)] = stmt.name.value
            self.mark(stmt, id(stmt), frozenset(), False)
            self.walk(stmt.body.body, id(stmt), frozenset(), False)
            return
        # A loop's own line runs on every iteration, after its body's lines.
        self.mark(stmt, func, arms, in_loop or isinstance(stmt, (cst.For, cst.While)))
        if type(stmt) is cst.SimpleStatementLine:
            for small in stmt.body:
                self.mark(small, func, arms, in_loop)
            return
        if type(stmt) is cst.If:

            def arm(i: int) -> frozenset[Arm]:
                return arms if in_loop else arms | {(id(stmt), i)}

            self.walk(stmt.body.body, func, arm(0), in_loop)
            if type(stmt.orelse) is cst.If:
                self.visit(stmt.orelse, func, arm(1), in_loop)
            elif stmt.orelse is not None:
                self.walk(stmt.orelse.body.body, func, arm(1), in_loop)
            return
        if type(stmt) is cst.Match:
            for i, case in enumerate(stmt.cases):
                case_arms = arms if in_loop else arms | {(id(stmt), i)}
                self.walk(case.body.body, func, case_arms, in_loop)
            return
        if isinstance(stmt, (cst.For, cst.While)):
            self.walk(stmt.body.body, func, arms, True)
            if stmt.orelse is not None:
                self.walk(stmt.orelse.body.body, func, arms, in_loop)
            return
        for name in ("body", "orelse", "finalbody"):  # with, try, class bodies
            part = getattr(stmt, name, None)
            if isinstance(part, cst.BaseSuite):
                self.walk(part.body, func, arms, in_loop)
            elif isinstance(part, (cst.Else, cst.Finally)):
                self.walk(part.body.body, func, arms, in_loop)
        for handler in getattr(stmt, "handlers", ()):
            self.walk(handler.body.body, func, arms, in_loop)


def _exits(suite: cst.BaseSuite) -> bool:
    """The block always ends in ``return`` or ``raise``."""
    body = suite.body
    if not body:
        return False
    last = body[-1]
    if type(last) is cst.SimpleStatementLine:
        last = last.body[-1] if last.body else last
    if isinstance(last, (cst.Return, cst.Raise)):
        return True
    if type(last) is cst.If:
        return _exits(last.body) and _exits_else(last)
    return False


def _exits_else(stmt: cst.If) -> bool:
    orelse = stmt.orelse
    if orelse is None:
        return False
    if type(orelse) is cst.If:
        return _exits(orelse.body) and _exits_else(orelse)
    return _exits(orelse.body)
