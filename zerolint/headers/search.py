"""Binary searches over a kernel's arrays, the part every scheduler recognizer starts from.

A *binary search* is a loop ``while (lo < hi)`` (or ``for (; lo < hi;)``, ``hi > lo``)
whose body sets a variable to a midpoint of ``lo`` and ``hi`` (``/ 2`` or ``>> 1``), reads
``array[mid]`` and moves one bound past the midpoint (``mid + 1``): that bound is the
search's *result*, the other bound's initial value its *limit*, ``array`` the searched
array, followed through aliases to its declaration.

:class:`SearchReader` is a :class:`~zerolint.headers.reader.Reader` that records every
search of the function it walks and hands each later read of a searched array to
:meth:`SearchReader.on_search_read`; it also knows the guards that make the searched
array's total non-zero (:meth:`SearchReader.total_guards`), which every scheduler hazard
that starts from an empty or all-zero input needs.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from zerolint.headers.reader import MIRROR, NEGATE, At, Binding, Fact, Reader, Scope
from zerolint.headers.results import Evidence
from zerolint.headers.syntax import (
    Assign,
    Binary,
    Declarator,
    Expr,
    Function,
    Index,
    Loop,
    Name,
    Stmt,
    Unary,
    int_of,
    names_of,
    spelling,
    walk,
    walk_stmt,
)


@dataclass(slots=True)
class Search:
    """One binary search: its result and limit, the array it searches, where it is."""

    result: Binding
    other_bound: Binding
    limit: At | None
    limit_key: object
    array: tuple[Binding, object]
    array_name: str
    line: int
    function: str
    kernel: bool  # declared __global__ (or with a launch-bounds / *_GLOBAL marker)
    start_key: object = None  # the result's value before the loop (canonical), if known
    loop: Loop | None = None


class SearchReader(Reader):
    """A reader that finds binary searches and the reads of their arrays after them."""

    def __init__(self, function: Function, lines: list[str]) -> None:
        super().__init__(function, lines)
        self.searches: list[Search] = []
        self.open_searches: list[Loop] = []  # the search loops being walked, innermost last

    def enter_loop(self, loop: Loop, scope: Scope) -> None:
        search = self.search(loop, scope)
        if search is not None:
            self.searches.append(search)
            self.open_searches.append(loop)

    def leave_loop(self, loop: Loop) -> None:
        if self.open_searches and self.open_searches[-1] is loop:
            self.open_searches.pop()

    def on_index(self, expr: Index, scope: Scope, facts: list[Fact]) -> None:
        root = self.root(expr.base, scope, 0) if self.searches else None
        for search in self.searches:
            if root == search.array:
                self.on_search_read(expr, scope, facts, search)

    def on_search_read(self, expr: Index, scope: Scope, facts: list[Fact], search: Search) -> None:
        """Called for every read of ``search``'s array once the search has been seen."""

    def inside(self, search: Search) -> bool:
        """Whether the walk is inside ``search``'s own loop."""
        return any(loop is search.loop for loop in self.open_searches)

    # -- the binary search
    def search(self, loop: Loop, scope: Scope) -> Search | None:
        sides = _comparison_sides(loop.cond)
        if sides is None:
            return None
        low, high = sides
        mid = _midpoint_name(loop.body, low, high)
        if mid is None:
            return None
        array = _indexed_by(loop.body, mid)
        if array is None:
            return None
        root = self.root(array, scope, 0)
        if root is None:
            return None
        result = _moved_past(loop.body, mid, low, high)
        limit_name = high if result == low else low
        limit_value = self.values.get(scope.lookup(limit_name))
        limit = limit_value if isinstance(limit_value, At) else None
        limit_key = (
            self.canon(limit.expr, limit.scope, 0) if limit is not None else ("no-limit", id(loop))
        )
        start = self.values.get(scope.lookup(result))
        start_key = self.canon(start.expr, start.scope, 0) if isinstance(start, At) else None
        return Search(
            result=scope.lookup(result),
            other_bound=scope.lookup(limit_name),
            limit=limit,
            limit_key=limit_key,
            array=root,
            array_name=spelling(array),
            line=loop.line,
            function=self.fn.name,
            kernel=self.fn.kernel,
            start_key=start_key,
            loop=loop,
        )

    def index_line(self, index: Expr, scope: Scope) -> int:
        if isinstance(index, Name):
            binding = scope.lookup(index.id)
            if binding.line and binding.assignments == 0:
                return binding.line
        return index.line

    # -- the total
    def total_guards(self, facts: list[Fact], search: Search) -> list[Evidence]:
        """Facts on the path that make the total of the searched array non-zero."""
        guards = []
        for fact in facts:
            for op, left, right in self._relations_at(fact.cond.at, fact.truth):
                subject = self._nonzero_subject(op, left, right)
                if subject is None:
                    continue
                expr, scope = subject
                if self.is_boolean(expr, scope, 0):  # a comparison holding is not a count
                    continue
                # The search's own bounds read the array too, but say nothing of the total.
                internal = {search.result, search.other_bound}
                if self.depends_on_array(expr, scope, search.array, 0, internal):
                    note = (
                        "returns early when the total is 0"
                        if fact.exit
                        else "runs only when the total is non-zero"
                    )
                    guards.append(self.evidence(fact.line, "zero-total", note))
                    break
        return guards

    def _relations_at(self, cond: At, truth: bool) -> Iterator[tuple[str, At, object]]:
        """Like :meth:`relations`, keeping the non-constant side as an expression."""
        expr = cond.expr
        if isinstance(expr, Unary) and expr.op == "!":
            yield from self._relations_at(At(expr.operand, cond.scope), not truth)
        elif isinstance(expr, Binary) and expr.op in ("&&", "||"):
            if (expr.op == "&&") == truth:
                yield from self._relations_at(At(expr.left, cond.scope), truth)
                yield from self._relations_at(At(expr.right, cond.scope), truth)
        elif isinstance(expr, Binary) and expr.op in NEGATE:
            op = expr.op if truth else NEGATE[expr.op]
            if int_of(expr.right) is not None:
                yield op, At(expr.left, cond.scope), int_of(expr.right)
            elif int_of(expr.left) is not None:
                yield MIRROR[op], At(expr.right, cond.scope), int_of(expr.left)
        else:
            yield ("!=" if truth else "=="), cond, 0

    @staticmethod
    def _nonzero_subject(op: str, left: At, right: object) -> tuple[Expr, Scope] | None:
        if not isinstance(right, int):
            return None
        nonzero = (
            (op == "!=" and right == 0) or (op == ">" and right >= 0) or (op == ">=" and right >= 1)
        )
        return (left.expr, left.scope) if nonzero else None


def _comparison_sides(cond: Expr | None) -> tuple[str, str] | None:
    """``lo < hi``, ``hi > lo`` or ``lo != hi`` over two variables: (lo, hi)."""
    if not isinstance(cond, Binary) or cond.op not in ("<", ">", "!="):
        return None
    if not (isinstance(cond.left, Name) and isinstance(cond.right, Name)):
        return None
    if cond.op == ">":
        return cond.right.id, cond.left.id
    return cond.left.id, cond.right.id


def _is_midpoint(expr: Expr, low: str, high: str) -> bool:
    """An expression of ``low`` and ``high`` only that halves something: (lo+hi)/2 and kin."""
    names = names_of(expr)
    if names != {low, high}:
        return False
    for node in walk(expr):
        if isinstance(node, Binary) and (
            (node.op == "/" and int_of(node.right) == 2)
            or (node.op == ">>" and int_of(node.right) == 1)
        ):
            return True
    return False


def _midpoint_name(body: Stmt, low: str, high: str) -> str | None:
    """The variable the loop body sets to the midpoint of ``low`` and ``high``."""
    for node in walk_stmt(body):
        if isinstance(node, Declarator) and node.init is not None:
            name, value = node.name, node.init
        elif isinstance(node, Assign) and node.op == "=" and isinstance(node.target, Name):
            name, value = node.target.id, node.value
        else:
            continue
        if _is_midpoint(value, low, high):
            return name
    return None


def _indexed_by(body: Stmt, mid: str) -> Expr | None:
    """The array expression read at ``[mid]`` inside the loop body."""
    for node in walk_stmt(body):
        if isinstance(node, Index) and isinstance(node.index, Name) and node.index.id == mid:
            return node.base
    return None


def _moved_past(body: Stmt, mid: str, low: str, high: str) -> str:
    """Which bound the loop sets to ``mid + 1``: that bound is the search result."""
    for node in walk_stmt(body):
        if not (isinstance(node, Assign) and isinstance(node.target, Name)):
            continue
        if node.target.id in (low, high) and any(_is_successor(n, mid) for n in walk(node.value)):
            return node.target.id
    return low


def _is_successor(expr: Expr, name: str) -> bool:
    """``name + 1``."""
    return (
        isinstance(expr, Binary)
        and expr.op == "+"
        and isinstance(expr.left, Name)
        and expr.left.id == name
        and int_of(expr.right) == 1
    )
