"""The syntax tree the parser builds: expressions, statements, functions; and walks over it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(eq=False, slots=True)
class Name:
    id: str
    line: int


@dataclass(eq=False, slots=True)
class Num:
    value: int | None
    line: int


@dataclass(eq=False, slots=True)
class Call:
    func: Expr
    args: list[Expr]
    line: int


@dataclass(eq=False, slots=True)
class Index:
    base: Expr
    index: Expr
    line: int


@dataclass(eq=False, slots=True)
class Member:
    base: Expr
    name: str
    line: int


@dataclass(eq=False, slots=True)
class Unary:
    op: str
    operand: Expr
    line: int


@dataclass(eq=False, slots=True)
class Binary:
    op: str
    left: Expr
    right: Expr
    line: int


@dataclass(eq=False, slots=True)
class Ternary:
    cond: Expr
    then: Expr
    other: Expr
    line: int


@dataclass(eq=False, slots=True)
class Assign:
    op: str
    target: Expr
    value: Expr
    line: int


@dataclass(eq=False, slots=True)
class Lambda:
    body: Block
    line: int


@dataclass(eq=False, slots=True)
class Opaque:
    """Something outside the grammar this module reads; its line is reported."""

    line: int


Expr = Name | Num | Call | Index | Member | Unary | Binary | Ternary | Assign | Lambda | Opaque


@dataclass(eq=False, slots=True)
class Declarator:
    name: str
    init: Expr | None
    array: bool
    line: int


@dataclass(eq=False, slots=True)
class Decl:
    specifiers: tuple[str, ...]
    items: list[Declarator]
    line: int


@dataclass(eq=False, slots=True)
class ExprStmt:
    expr: Expr
    line: int


@dataclass(eq=False, slots=True)
class Block:
    body: list[Stmt]
    line: int


@dataclass(eq=False, slots=True)
class If:
    cond: Expr
    then: Stmt
    other: Stmt | None
    line: int


@dataclass(eq=False, slots=True)
class Loop:
    init: Stmt | None
    cond: Expr | None
    step: Expr | None
    body: Stmt
    line: int


@dataclass(eq=False, slots=True)
class Jump:
    kind: str  # return | continue | break
    value: Expr | None
    line: int


@dataclass(eq=False, slots=True)
class Skip:
    line: int
    unread: bool = False


Stmt = Decl | ExprStmt | Block | If | Loop | Jump | Skip


@dataclass(slots=True)
class Function:
    name: str
    kernel: bool
    params: list[str]
    body: Block
    line: int


# --------------------------------------------------------------------------- walks


def always_exits(stmt: Stmt) -> bool:
    """Whether every path through ``stmt`` ends in a return, continue or break."""
    if isinstance(stmt, Jump):
        return True
    if isinstance(stmt, Block):
        return any(always_exits(s) for s in stmt.body)
    if isinstance(stmt, If):
        return stmt.other is not None and always_exits(stmt.then) and always_exits(stmt.other)
    return False


def walk(expr: Expr) -> Iterator[Expr]:
    """``expr`` and every expression inside it, lambdas excluded."""
    yield expr
    if isinstance(expr, Index):
        yield from walk(expr.base)
        yield from walk(expr.index)
    elif isinstance(expr, Call):
        yield from walk(expr.func)
        for arg in expr.args:
            yield from walk(arg)
    elif isinstance(expr, Member):
        yield from walk(expr.base)
    elif isinstance(expr, Unary):
        yield from walk(expr.operand)
    elif isinstance(expr, Binary):
        yield from walk(expr.left)
        yield from walk(expr.right)
    elif isinstance(expr, Ternary):
        yield from walk(expr.cond)
        yield from walk(expr.then)
        yield from walk(expr.other)
    elif isinstance(expr, Assign):
        yield from walk(expr.target)
        yield from walk(expr.value)


def walk_stmt(stmt: Stmt | None) -> Iterator[Expr | Declarator]:
    """Every expression and declarator in a statement, lambdas excluded."""
    if stmt is None:
        return
    if isinstance(stmt, Block):
        for s in stmt.body:
            yield from walk_stmt(s)
    elif isinstance(stmt, Decl):
        for item in stmt.items:
            yield item
            if item.init is not None:
                yield from walk(item.init)
    elif isinstance(stmt, ExprStmt):
        yield from walk(stmt.expr)
    elif isinstance(stmt, If):
        yield from walk(stmt.cond)
        yield from walk_stmt(stmt.then)
        yield from walk_stmt(stmt.other)
    elif isinstance(stmt, Loop):
        yield from walk_stmt(stmt.init)
        for part in (stmt.cond, stmt.step):
            if part is not None:
                yield from walk(part)
        yield from walk_stmt(stmt.body)
    elif isinstance(stmt, Jump) and stmt.value is not None:
        yield from walk(stmt.value)


def names_of(expr: Expr) -> set[str]:
    """The spellings of the names ``expr`` mentions."""
    return {node.id for node in walk(expr) if isinstance(node, Name)}


def int_of(expr: Expr) -> int | None:
    """The value of an integer literal (or its negation), else None."""
    if isinstance(expr, Num):
        return expr.value
    if isinstance(expr, Unary) and expr.op == "-" and isinstance(expr.operand, Num):
        return None if expr.operand.value is None else -expr.operand.value
    return None


def callee(call: Call) -> str | None:
    """The unqualified name a call calls (``min`` for ``cute::min(...)``), if it has one."""
    func = call.func
    if isinstance(func, Name):
        return func.id.rsplit("::", 1)[-1]
    if isinstance(func, Member):
        return func.name
    return None


def spelling(expr: Expr) -> str:
    """A name or member chain as written (``a.b``), else ``<array>``."""
    if isinstance(expr, Name):
        return expr.id
    if isinstance(expr, Member):
        return f"{spelling(expr.base)}.{expr.name}"
    return "<array>"
