"""The meaning of a parsed function: a walk in program order over values, facts and scopes.

:class:`Reader` walks one :class:`~zerolint.headers.syntax.Function` the way it runs:
each variable is a :class:`Binding` (by object, not by spelling), its value the expression
last assigned to it (joined at ``if``/loop merges), and every statement is reached with the
:class:`Fact` list that holds on the path to it (enclosing conditions, early exits). It
knows no kernel: a recognizer subclasses it and reacts to loops (:meth:`Reader.enter_loop`)
and to array reads (:meth:`Reader.on_index`), asking it for canonical keys
(:meth:`Reader.canon`), the array a pointer points into (:meth:`Reader.root`) and the
comparisons a condition implies (:meth:`Reader.relations`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from zerolint.headers.results import Evidence
from zerolint.headers.syntax import (
    Assign,
    Binary,
    Block,
    Call,
    Decl,
    Expr,
    ExprStmt,
    Function,
    If,
    Index,
    Jump,
    Lambda,
    Loop,
    Member,
    Name,
    Num,
    Opaque,
    Skip,
    Stmt,
    Ternary,
    Unary,
    always_exits,
    callee,
    names_of,
    walk,
)


class Binding:
    """A variable, parameter or outside name, identified by object, not by spelling."""

    __slots__ = ("array", "assignments", "line", "name", "shared")

    def __init__(self, name: str, line: int, *, array: bool = False, shared: bool = False):
        self.name = name
        self.line = line
        self.array = array
        self.shared = shared
        self.assignments = 0


class Scope:
    __slots__ = ("names", "parent")

    def __init__(self, parent: Scope | None = None) -> None:
        self.names: dict[str, Binding] = {}
        self.parent = parent

    def lookup(self, name: str) -> Binding:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.names:
                return scope.names[name]
            if scope.parent is None:
                break
            scope = scope.parent
        # Template parameters, globals, macros: one binding per spelling, at the root.
        binding = Binding(name, 0)
        scope.names[name] = binding  # type: ignore[union-attr]
        return binding


@dataclass(frozen=True, slots=True)
class At:
    """An expression together with the scope its names resolve in."""

    expr: Expr
    scope: Scope


# A comparison as canonical keys: (op, left, right).
Relation = tuple[str, object, object]


@dataclass(frozen=True, slots=True)
class Cond:
    """A condition, with the comparisons it implies read when it was evaluated.

    Reading them there matters: ``if (i >= n) i = n - 1;`` speaks of ``i`` before the
    assignment, and a later reading of ``i`` would see the new value.
    """

    at: At
    line: int
    when_true: tuple[Relation, ...]
    when_false: tuple[Relation, ...]


@dataclass(frozen=True, slots=True)
class Choose:
    cond: Cond
    then: Value
    other: Value


@dataclass(frozen=True, slots=True)
class Either:
    first: Value
    second: Value


@dataclass(frozen=True, slots=True)
class Update:
    op: str
    old: Value
    rhs: At


Value = At | Choose | Either | Update | None


@dataclass(frozen=True, slots=True)
class Fact:
    """A condition known to be ``truth`` on the path to a statement."""

    cond: Cond
    truth: bool
    exit: bool = False  # from an early return/continue/break, not an enclosing branch

    @property
    def line(self) -> int:
        return self.cond.line

    @property
    def relations(self) -> tuple[Relation, ...]:
        return self.cond.when_true if self.truth else self.cond.when_false


MAX_DEPTH = 40
NEGATE = {"<": ">=", ">=": "<", ">": "<=", "<=": ">", "==": "!=", "!=": "=="}
MIRROR = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "==": "==", "!=": "!="}


def is_minus(key: object, limit: object) -> bool:
    return (
        isinstance(key, tuple)
        and len(key) == 3
        and key[0] == "-"
        and key[1] == limit
        and isinstance(key[2], tuple)
        and key[2][0] == "num"
        and isinstance(key[2][1], int)
        and key[2][1] >= 1
    )


def merge(a: dict[Binding, Value], b: dict[Binding, Value], join) -> dict[Binding, Value]:
    merged = dict(a)
    for binding, value in b.items():
        if binding not in merged:
            merged[binding] = value
        elif merged[binding] is not value:
            merged[binding] = join(merged[binding], value)
    return merged


def value_parts(value: Value) -> Iterator[At]:
    if isinstance(value, At):
        yield value
    elif isinstance(value, Choose):
        yield value.cond.at
        yield from value_parts(value.then)
        yield from value_parts(value.other)
    elif isinstance(value, Either):
        yield from value_parts(value.first)
        yield from value_parts(value.second)
    elif isinstance(value, Update):
        yield from value_parts(value.old)
        yield value.rhs


class Reader:
    """Walk one function in program order, tracking values, facts and stores.

    Subclasses override :meth:`enter_loop`, :meth:`leave_loop` and :meth:`on_index`.
    """

    def __init__(self, function: Function, lines: list[str]) -> None:
        self.fn = function
        self.lines = lines
        self.values: dict[Binding, Value] = {}
        self.stores: dict[tuple[Binding, object], set[Binding]] = {}
        self.conds: dict[If, Cond] = {}  # each if's condition, read before its branches
        self.unread_lines: list[int] = []  # lines outside the grammar on the walked path

    def walk(self) -> None:
        """Walk the whole function body once."""
        scope = Scope()
        for param in self.fn.params:
            scope.names[param] = Binding(param, self.fn.line)
        self.block(self.fn.body, Scope(scope), [])

    def code(self, line: int) -> str:
        return self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""

    # -- hooks
    def enter_loop(self, loop: Loop, scope: Scope) -> None:
        """Called after a loop's init statement, before its condition and body."""

    def leave_loop(self, loop: Loop) -> None:
        """Called after a loop's body and step."""

    def on_index(self, expr: Index, scope: Scope, facts: list[Fact]) -> None:
        """Called for every read ``base[index]``, after its parts were walked."""

    # -- statements
    def block(self, block: Block, scope: Scope, facts: list[Fact]) -> bool:
        """Walk a block; True when it always leaves (return/continue/break) before its end."""
        facts = list(facts)
        for stmt in block.body:
            if self.stmt(stmt, scope, facts):
                return True
            if isinstance(stmt, If):
                facts.extend(self.exit_facts(stmt))
        return False

    def exit_facts(self, stmt: If) -> list[Fact]:
        """What the rest of a block knows after an ``if`` one of whose branches leaves."""
        then_exits = always_exits(stmt.then)
        other_exits = stmt.other is not None and always_exits(stmt.other)
        if then_exits == other_exits:
            return []
        return [Fact(self.conds[stmt], not then_exits, exit=True)]

    def stmt(self, stmt: Stmt, scope: Scope, facts: list[Fact]) -> bool:
        if isinstance(stmt, Block):
            return self.block(stmt, Scope(scope), facts)
        if isinstance(stmt, Decl):
            self.decl(stmt, scope, facts)
        elif isinstance(stmt, ExprStmt):
            self.expr(stmt.expr, scope, facts)
        elif isinstance(stmt, If):
            return self.if_(stmt, scope, facts)
        elif isinstance(stmt, Loop):
            self.loop(stmt, scope, facts)
        elif isinstance(stmt, Jump):
            if stmt.value is not None:
                self.expr(stmt.value, scope, facts)
            return True
        elif isinstance(stmt, Skip) and stmt.unread:
            self.unread_lines.append(stmt.line)
        return False

    def decl(self, decl: Decl, scope: Scope, facts: list[Fact]) -> None:
        shared = "__shared__" in decl.specifiers
        for item in decl.items:
            if item.init is not None:
                self.expr(item.init, scope, facts)
            binding = Binding(item.name, item.line, array=item.array or shared, shared=shared)
            scope.names[item.name] = binding
            self.values[binding] = At(item.init, scope) if item.init is not None else None

    def if_(self, stmt: If, scope: Scope, facts: list[Fact]) -> bool:
        self.expr(stmt.cond, scope, facts)
        cond = self.conds[stmt] = self.cond(stmt.cond, scope, stmt.line)
        before = dict(self.values)
        then_exits = self.stmt(stmt.then, Scope(scope), facts + [Fact(cond, True)])
        after_then = self.values
        self.values = dict(before)
        other_exits = False
        if stmt.other is not None:
            other_exits = self.stmt(stmt.other, Scope(scope), facts + [Fact(cond, False)])
        after_other = self.values
        if then_exits and not other_exits:
            self.values = after_other
        elif other_exits and not then_exits:
            self.values = after_then
        else:
            self.values = merge(after_then, after_other, lambda a, b: Choose(cond, a, b))
        return then_exits and other_exits

    def loop(self, loop: Loop, scope: Scope, facts: list[Fact]) -> None:
        inner = Scope(scope)
        if loop.init is not None:
            self.stmt(loop.init, inner, facts)
        self.enter_loop(loop, inner)
        before = dict(self.values)
        body_facts = list(facts)
        if loop.cond is not None:
            self.expr(loop.cond, inner, facts)
            body_facts.append(Fact(self.cond(loop.cond, inner, loop.line), True))
        self.stmt(loop.body, Scope(inner), body_facts)
        if loop.step is not None:
            self.expr(loop.step, inner, body_facts)
        self.values = merge(before, self.values, Either)
        self.leave_loop(loop)

    # -- expressions
    def expr(self, expr: Expr, scope: Scope, facts: list[Fact]) -> None:
        if isinstance(expr, Index):
            self.expr(expr.base, scope, facts)
            self.expr(expr.index, scope, facts)
            self.on_index(expr, scope, facts)
        elif isinstance(expr, Ternary):
            self.expr(expr.cond, scope, facts)
            cond = self.cond(expr.cond, scope, expr.line)
            self.expr(expr.then, scope, facts + [Fact(cond, True)])
            self.expr(expr.other, scope, facts + [Fact(cond, False)])
        elif isinstance(expr, Binary) and expr.op in ("&&", "||"):
            self.expr(expr.left, scope, facts)
            fact = Fact(self.cond(expr.left, scope, expr.line), expr.op == "&&")
            self.expr(expr.right, scope, facts + [fact])
        elif isinstance(expr, Binary):
            self.expr(expr.left, scope, facts)
            self.expr(expr.right, scope, facts)
        elif isinstance(expr, Assign):
            self.expr(expr.value, scope, facts)
            if isinstance(expr.target, Index):
                self.expr(expr.target.base, scope, facts)
                self.expr(expr.target.index, scope, facts)
            self.assign(expr, scope)
        elif isinstance(expr, Unary):
            self.expr(expr.operand, scope, facts)
            if expr.op in ("++", "--", "post++", "post--") and isinstance(expr.operand, Name):
                binding = scope.lookup(expr.operand.id)
                binding.assignments += 1
                self.values[binding] = None
        elif isinstance(expr, Call):
            self.expr(expr.func, scope, facts)
            for arg in expr.args:
                self.expr(arg, scope, facts)
        elif isinstance(expr, Member):
            self.expr(expr.base, scope, facts)
        elif isinstance(expr, Lambda):
            self.block(expr.body, Scope(scope), facts)
        elif isinstance(expr, Opaque):
            self.unread_lines.append(expr.line)

    def assign(self, expr: Assign, scope: Scope) -> None:
        target = expr.target
        if isinstance(target, Name):
            binding = scope.lookup(target.id)
            binding.assignments += 1
            rhs = At(expr.value, scope)
            if expr.op == "=":
                self.values[binding] = rhs
            else:
                self.values[binding] = Update(expr.op[:-1], self.values.get(binding), rhs)
        elif isinstance(target, Index):
            root = self.root(target.base, scope, 0)
            if root is not None:
                names = self.stores.setdefault(root, set())
                names.update(scope.lookup(n) for n in names_of(expr.value))

    def root(self, expr: Expr, scope: Scope, depth: int) -> tuple[Binding, object] | None:
        """The array a pointer expression points into, with its offset (canonical)."""
        if depth > MAX_DEPTH:
            return None
        if isinstance(expr, Name):
            binding = scope.lookup(expr.id)
            value = self.values.get(binding)
            if binding.array or binding.assignments or not isinstance(value, At):
                return binding, ("num", 0)
            inner = self.root(value.expr, value.scope, depth + 1)
            return inner if inner is not None else (binding, ("num", 0))
        if isinstance(expr, Binary) and expr.op == "+":
            base = self.root(expr.left, scope, depth + 1)
            if base is None:
                return None
            offset = self.canon(expr.right, scope, depth + 1)
            return base[0], ("+", base[1], offset)
        return None

    def cond(self, expr: Expr, scope: Scope, line: int) -> Cond:
        at = At(expr, scope)
        return Cond(at, line, tuple(self.relations(at, True)), tuple(self.relations(at, False)))

    def relations(self, cond: At, truth: bool) -> Iterator[Relation]:
        """The comparisons ``cond == truth`` implies, as (op, left key, right key)."""
        expr = cond.expr
        if isinstance(expr, Unary) and expr.op == "!":
            yield from self.relations(At(expr.operand, cond.scope), not truth)
        elif isinstance(expr, Binary) and expr.op in ("&&", "||"):
            if (expr.op == "&&") == truth:  # a && b true, or a || b false: both hold
                yield from self.relations(At(expr.left, cond.scope), truth)
                yield from self.relations(At(expr.right, cond.scope), truth)
        elif isinstance(expr, Binary) and expr.op in NEGATE:
            op = expr.op if truth else NEGATE[expr.op]
            yield op, self.canon(expr.left, cond.scope, 0), self.canon(expr.right, cond.scope, 0)
        else:  # a bare value: true means non-zero
            yield ("!=" if truth else "=="), self.canon(expr, cond.scope, 0), ("num", 0)

    def is_boolean(self, expr: Expr, scope: Scope, depth: int) -> bool:
        """A comparison or logical value, directly or through a copy."""
        if depth > MAX_DEPTH:
            return False
        if isinstance(expr, Name):
            binding = scope.lookup(expr.id)
            value = self.values.get(binding)
            if binding.assignments == 0 and isinstance(value, At):
                return self.is_boolean(value.expr, value.scope, depth + 1)
            return False
        if isinstance(expr, Binary):
            return expr.op in NEGATE or expr.op in ("&&", "||")
        return isinstance(expr, Unary) and expr.op == "!"

    def depends_on_array(
        self,
        expr: Expr,
        scope: Scope,
        array: tuple[Binding, object],
        depth: int,
        seen: set[Binding],
    ) -> bool:
        """Whether ``expr`` is computed from what the kernel stored into (or reads from) array."""
        if depth > MAX_DEPTH:
            return False
        stored = self.stores.get(array, set())
        for node in walk(expr):
            if isinstance(node, Index) and self.root(node.base, scope, 0) == array:
                return True
            if not isinstance(node, Name):
                continue
            binding = scope.lookup(node.id)
            if binding in seen:
                continue
            if binding in stored:
                return True
            seen.add(binding)
            for at in value_parts(self.values.get(binding)):
                if self.depends_on_array(at.expr, at.scope, array, depth + 1, seen):
                    return True
        return False

    # -- canonical keys: structural equality through copies and single assignments
    def canon(self, expr: Expr, scope: Scope, depth: int) -> object:
        """A key equal for equal values: copies and not-yet-reassigned variables are
        replaced by their definitions; anything else is its own variable."""
        if depth > MAX_DEPTH:
            return ("deep", id(expr))
        if isinstance(expr, Name):
            binding = scope.lookup(expr.id)
            value = self.values.get(binding)
            if binding.assignments == 0 and isinstance(value, At) and not binding.array:
                return self.canon(value.expr, value.scope, depth + 1)
            return ("var", id(binding))
        if isinstance(expr, Num):  # an unknown constant (sizeof, a literal) equals only itself
            return ("num", expr.value if expr.value is not None else id(expr))
        if isinstance(expr, Binary):
            return (
                expr.op,
                self.canon(expr.left, scope, depth + 1),
                self.canon(expr.right, scope, depth + 1),
            )
        if isinstance(expr, Unary):
            return (expr.op, self.canon(expr.operand, scope, depth + 1))
        if isinstance(expr, Call):
            return (
                "call",
                callee(expr) or id(expr),
                tuple(self.canon(a, scope, depth + 1) for a in expr.args),
            )
        if isinstance(expr, Member):
            return ("member", self.canon(expr.base, scope, depth + 1), expr.name)
        return ("expr", id(expr))

    def evidence(self, line: int, kind: str, note: str) -> Evidence:
        return Evidence(line, kind, self.code(line), note)
