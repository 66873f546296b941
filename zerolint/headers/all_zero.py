"""ZL001's recognizer: does the scheduler read one past its data when every length is 0?

In every function of the header (see :mod:`zerolint.headers.search` for what a binary
search is):

1. every read of the searched array after the search whose index is the search result
   (directly or through copies, ``q_idx = lo``) is a read of ``array[limit]`` when every
   length is 0: the search saturates at its limit, one past the data;
2. such a read is *guarded* when the path to it proves the index below the limit
   (``min(lo, limit - 1)``, a ternary or ``if`` on ``lo < limit``) or proves the total
   non-zero (an early ``return``/``continue`` on a zero total, or an enclosing test),
   where the total is any value computed from what the kernel stored into the array.

``guarded`` when every such read is guarded, ``unguarded`` when one is not, ``unknown``
when no search or no such read is found, or guards were found but a line of that function
could not be parsed. The fault itself is described in docs/hazards/ZL001.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from zerolint.headers.parser import CppSyntaxError, functions
from zerolint.headers.reader import (
    MAX_DEPTH,
    MIRROR,
    At,
    Choose,
    Either,
    Fact,
    Scope,
    Value,
    is_minus,
)
from zerolint.headers.registry import SCHEDULER_DIR, SCHEDULER_HEADERS, Recognizer
from zerolint.headers.results import Evidence, HeaderCheck
from zerolint.headers.search import Search, SearchReader
from zerolint.headers.syntax import (
    Binary,
    Call,
    Expr,
    Function,
    Index,
    Member,
    Name,
    Ternary,
    callee,
    int_of,
    spelling,
)
from zerolint.headers.tokens import tokenize

NAME = "all-zero-search"
HAZARD = "ZL001"
LABEL = "all rows 0, B % 32 == 0"
TITLE = "every length 0 and B % 32 == 0: the search reads prefix_sum[B], one past the data"


def check_source(source: str, path: str = "<header>") -> HeaderCheck:
    """Decide whether the all-zero case is guarded in the header text ``source``."""
    lines = source.split("\n")  # as the tokenizer counts lines
    try:
        found = list(functions(tokenize(source)))
        readings = [r for fn in found for r in AllZeroReader(fn, lines).read()]
    except (CppSyntaxError, RecursionError) as exc:
        return HeaderCheck(path, "unknown", f"could not read the header: {exc}")
    return _decide(path, readings, found, lines)


RECOGNIZER = Recognizer(
    name=NAME,
    hazard=HAZARD,
    label=LABEL,
    title=TITLE,
    headers=tuple(f"{SCHEDULER_DIR}/{name}" for name in SCHEDULER_HEADERS),
    check_source=check_source,
)


@dataclass(slots=True)
class _Read:
    search: Search
    line: int
    index: str  # the index as written: the result itself or a copy of it
    index_line: int
    guards: list[Evidence]


@dataclass(slots=True)
class _Reading:
    """What one function says: its searches and the reads of their results."""

    searches: list[Search] = field(default_factory=list)
    reads: list[_Read] = field(default_factory=list)
    unread_lines: list[int] = field(default_factory=list)


_RAW, _SAFE, _OTHER = "raw", "safe", "other"
_MIN_FUNCTIONS = {"min", "umin", "__umin", "imin", "__min"}


class AllZeroReader(SearchReader):
    """Classify each read of a searched array: at the raw result, bounded, or neither."""

    def __init__(self, function: Function, lines: list[str]) -> None:
        super().__init__(function, lines)
        self.reads: list[_Read] = []

    def read(self) -> list[_Reading]:
        self.walk()
        if not self.searches:
            return []
        return [_Reading(self.searches, self.reads, self.unread_lines)]

    def on_search_read(self, expr: Index, scope: Scope, facts: list[Fact], search: Search) -> None:
        kind, guards = self.classify(expr.index, scope, facts, search, 0)
        if kind == _OTHER:
            return
        guards = guards + self.total_guards(facts, search)
        if kind == _RAW or guards:
            index = expr.index.id if isinstance(expr.index, Name) else search.result.name
            line = self.index_line(expr.index, scope)
            self.reads.append(_Read(search, expr.line, index, line, guards))

    def classify(
        self, expr: Expr, scope: Scope, facts: list[Fact], search: Search, depth: int
    ) -> tuple[str, list[Evidence]]:
        """Is ``expr`` the search result (raw), proved below the limit (safe), or neither?"""
        if depth > MAX_DEPTH:
            return _OTHER, []
        kind, guards = self._classify_shape(expr, scope, facts, search, depth)
        if kind == _RAW:
            bound = self.fact_bound(expr, scope, facts, search)
            if bound is not None:
                return _SAFE, [bound]
        return kind, guards

    def _classify_shape(
        self, expr: Expr, scope: Scope, facts: list[Fact], search: Search, depth: int
    ) -> tuple[str, list[Evidence]]:
        if isinstance(expr, Name):
            binding = scope.lookup(expr.id)
            if binding is search.result:
                return _RAW, []
            return self.classify_value(self.values.get(binding), facts, search, depth + 1)
        if isinstance(expr, Binary) and expr.op in ("+", "-"):
            if self.below_limit(expr, scope, search):
                return _SAFE, [self.evidence(expr.line, "bound", "index kept below the limit")]
            left, _ = self.classify(expr.left, scope, facts, search, depth + 1)
            step = int_of(expr.right)
            if left == _RAW and step is not None and (step >= 0) == (expr.op == "+"):
                return _RAW, []
            return _OTHER, []
        if isinstance(expr, Call) and callee(expr) in _MIN_FUNCTIONS and len(expr.args) >= 2:
            kinds = [self.classify(a, scope, facts, search, depth + 1) for a in expr.args]
            if any(k == _SAFE for k, _ in kinds):
                note = "index bounded by min() below the search limit"
                return _SAFE, [self.evidence(expr.line, "bound", note)]
            return (_RAW if any(k == _RAW for k, _ in kinds) else _OTHER), []
        if isinstance(expr, Ternary):
            cond = self.cond(expr.cond, scope, expr.line)
            return self._choose(
                [
                    self.classify(expr.then, scope, facts + [Fact(cond, True)], search, depth + 1),
                    self.classify(
                        expr.other, scope, facts + [Fact(cond, False)], search, depth + 1
                    ),
                ]
            )
        return _OTHER, []

    def classify_value(
        self, value: Value, facts: list[Fact], search: Search, depth: int
    ) -> tuple[str, list[Evidence]]:
        if depth > MAX_DEPTH or value is None:
            return _OTHER, []
        if isinstance(value, At):
            return self.classify(value.expr, value.scope, facts, search, depth)
        if isinstance(value, Choose):
            when_true, when_false = Fact(value.cond, True), Fact(value.cond, False)
            return self._choose(
                [
                    self.classify_value(value.then, facts + [when_true], search, depth + 1),
                    self.classify_value(value.other, facts + [when_false], search, depth + 1),
                ]
            )
        if isinstance(value, Either):
            return self._choose(
                [
                    self.classify_value(value.first, facts, search, depth + 1),
                    self.classify_value(value.second, facts, search, depth + 1),
                ]
            )
        # A compound update of a value (x += ..., x -= ...): the result of the search is
        # only ever read through plain copies and bounds, so an update is not that result.
        return _OTHER, []

    @staticmethod
    def _choose(kinds: list[tuple[str, list[Evidence]]]) -> tuple[str, list[Evidence]]:
        """Either of two values: raw if either may be raw, safe if one is and neither raw."""
        if any(k == _RAW for k, _ in kinds):
            return _RAW, []
        safe = [g for k, gs in kinds if k == _SAFE for g in gs]
        if safe:
            return _SAFE, safe
        return _OTHER, []

    def below_limit(self, expr: Binary, scope: Scope, search: Search) -> bool:
        """``limit - k`` for a literal k >= 1."""
        if expr.op != "-":
            return False
        step = int_of(expr.right)
        if step is None or step < 1:
            return False
        return self.canon(expr.left, scope, 0) == search.limit_key

    def fact_bound(
        self, expr: Expr, scope: Scope, facts: list[Fact], search: Search
    ) -> Evidence | None:
        key = self.canon(expr, scope, 0)
        limit = search.limit_key
        for fact in facts:
            for op, left, right in fact.relations:
                if left != key and right == key:
                    op, left, right = MIRROR[op], right, left
                if left != key:
                    continue
                if op in ("<", "!=") and right == limit:
                    return self.evidence(fact.line, "bound", "index tested below the limit")
                if op in ("<", "<=") and is_minus(right, limit):
                    return self.evidence(fact.line, "bound", "index tested below the limit")
        return None


# --------------------------------------------------------------------------- verdict


def _decide(
    path: str, readings: list[_Reading], functions: list[Function], lines: list[str]
) -> HeaderCheck:
    if not functions:
        return HeaderCheck(path, "unknown", "no function definition found in the header")
    relevant = [r for r in readings if r.reads]
    if not relevant:
        found = (
            "a binary search but no read of its array at its result"
            if readings
            else "no binary search over an array in any function"
        )
        return HeaderCheck(path, "unknown", f"could not find the scheduler's search: {found}")
    reads = [read for r in relevant for read in r.reads]
    hazards = [read for read in reads if not read.guards]
    chosen = hazards[0] if hazards else reads[0]
    search = chosen.search
    found = HeaderCheck(
        path,
        "unknown",
        "",
        function=search.function,
        array=search.array_name,
        result=search.result.name,
        limit=_render_limit(search),
        search=Evidence(
            search.line,
            "search",
            _code(lines, search.line),
            f"binary search over {search.array_name} in "
            f"{'kernel' if search.kernel else 'function'} {search.function}; "
            f"result {search.result.name}",
        ),
    )
    if hazards:
        return _unguarded(found, search, hazards, lines)
    guards = tuple(_unique(g for read in reads for g in read.guards))
    reading = next(r for r in relevant if chosen in r.reads)
    unread = sorted(set(reading.unread_lines))
    if unread:
        reason = f"guards found, but lines {', '.join(map(str, unread))} could not be read"
        return replace(found, reason=reason, guards=guards)
    reason = f"every read of {search.array_name} at the search result is guarded: " + "; ".join(
        f"{g.note} (line {g.line})" for g in guards
    )
    return replace(found, status="guarded", reason=reason, guards=guards)


def _unguarded(
    found: HeaderCheck, search: Search, hazards: list[_Read], lines: list[str]
) -> HeaderCheck:
    evidence = []
    for read in hazards:
        code = _code(lines, read.line)
        evidence.append(
            Evidence(read.line, "read", code, f"{search.array_name}[{read.index}] read")
        )
        if read.index_line and read.index_line != read.line:
            note = f"{read.index} is the search result, unbounded"
            evidence.append(Evidence(read.index_line, "index", _code(lines, read.index_line), note))
    first, result, limit = hazards[0], search.result.name, found.limit
    details = [f"{first.index} = {result}"] if first.index != result else []
    details += [_storage(search)] if search.array[0].shared else []
    detail = f" ({', '.join(details)})" if details else ""
    reason = (
        f"reads {search.array_name}[{first.index}]{detail} at the result of the binary "
        f"search on line {search.line}, with no bound below {limit} and no early return on "
        f"a zero total: when every length is 0 the search ends at {result} == {limit}, "
        "one past the data"
    )
    return replace(found, status="unguarded", reason=reason, hazards=tuple(_unique(evidence)))


def _code(lines: list[str], line: int) -> str:
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def _storage(search: Search) -> str:
    root = search.array[0].name
    return "in shared memory" if root == search.array_name else f"in __shared__ {root}"


def _render_limit(search: Search) -> str:
    if search.limit is None:
        return "the search limit"
    expr = search.limit.expr
    return spelling(expr) if isinstance(expr, (Name, Member)) else "the search limit"


def _unique(evidence) -> list[Evidence]:
    seen: set[tuple[int, str]] = set()
    out = []
    for e in evidence:
        if (e.line, e.kind) not in seen:
            seen.add((e.line, e.kind))
            out.append(e)
    return out
