"""The empty-batch recognizer: does the scheduler read its buffer when the batch has 0 rows?

DeepGEMM's host code sizes the scheduler's shared buffer by the batch: ``align(B, 32)``
ints, so for ``B == 0`` the buffer holds nothing and every read of it is out of bounds.
The kernel still runs (the host launches it for any ``B``, see docs/hazards/README.md), the
prefix-sum loop does no iteration and the binary search does none either (its limit is the
batch size, 0), so its result keeps its initial value 0. What follows decides:

1. every read of the searched array after the search (outside the search's own loop) is
   a read of an empty buffer when ``B == 0``, whatever its index (``prefix_sum[0]`` too);
2. such a read is *not reached* at ``B == 0`` when the path to it proves
   - the total non-zero (an early ``return`` on a zero total, an enclosing
     ``if (total > 0)``: with no rows the total is 0), or
   - the result below the limit (``lo < batch_size`` is false for ``0 < 0``), or
   - the result non-zero (``q_idx == 0 ? ... : prefix_sum[q_idx - 1]``: at ``B == 0`` the
     result is 0, through copies and ``min(result, ...)``), when it starts at 0.

   A bound such as ``min(lo, batch_size - 1)`` does not help: ``batch_size - 1`` wraps.

``guarded`` when every such read is not reached, ``unguarded`` (with the first read) when
one is, ``unknown`` when no search or no read after it is found, or when a line of that
function could not be parsed. Each read is judged against the nearest search before it
on that array.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from zerolint.headers.parser import CppSyntaxError, functions
from zerolint.headers.reader import MIRROR, Fact, Scope
from zerolint.headers.registry import SCHEDULER_DIR, SCHEDULER_HEADERS, Recognizer
from zerolint.headers.results import Evidence, HeaderCheck
from zerolint.headers.search import Search, SearchReader
from zerolint.headers.syntax import Function, Index, spelling
from zerolint.headers.tokens import tokenize

NAME = "empty-batch"
HAZARD = "empty-batch"
LABEL = "B == 0"
TITLE = "a batch of 0 rows: the scheduler reads its buffer of align(0, 32) = 0 ints"
_MIN_FUNCTIONS = {"min", "umin", "__umin", "imin", "__min"}


def check_source(source: str, path: str = "<header>") -> HeaderCheck:
    """Decide whether the header text ``source`` reads its scheduler buffer when B == 0."""
    lines = source.split("\n")  # as the tokenizer counts lines
    try:
        found = list(functions(tokenize(source)))
        readings = [r for fn in found if (r := _EmptyBatchReader(fn, lines).read())]
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
    guards: list[Evidence]  # why it is not reached at B == 0; empty: it is


@dataclass(slots=True)
class _Reading:
    searches: list[Search]
    reads: list[_Read] = field(default_factory=list)
    unread_lines: list[int] = field(default_factory=list)


class _EmptyBatchReader(SearchReader):
    """Record each read of a searched array after its search, with what keeps B == 0 off it."""

    def __init__(self, function: Function, lines: list[str]) -> None:
        super().__init__(function, lines)
        self.reads: list[_Read] = []

    def read(self) -> _Reading | None:
        self.walk()
        if not self.searches:
            return None
        return _Reading(self.searches, self.reads, self.unread_lines)

    def on_search_read(self, expr: Index, scope: Scope, facts: list[Fact], search: Search) -> None:
        nearest = [s for s in self.searches if s.array == search.array][-1]
        if search is not nearest or self.inside(search):
            return
        guards = self.total_guards(facts, search) or self.unreached(facts, search)
        self.reads.append(_Read(search, expr.line, guards))

    def unreached(self, facts: list[Fact], search: Search) -> list[Evidence]:
        """A fact on the path that is false when the search ran over 0 rows."""
        result = self.result_key(search)
        for fact in facts:
            for op, left, right in fact.relations:
                if not self.zero_when_empty(left, result):
                    if not self.zero_when_empty(right, result):
                        continue
                    op, left, right = MIRROR[op], right, left
                if op in ("<", "!=") and right == search.limit_key:
                    return [self.evidence(fact.line, "bound", "reached only below the limit")]
                if search.start_key == ("num", 0) and _positive(op, right):
                    return [self.evidence(fact.line, "bound", "reached only past the first row")]
        return []

    @staticmethod
    def result_key(search: Search) -> object:
        return ("var", id(search.result))

    def zero_when_empty(self, key: object, result: object) -> bool:
        """The search result, or ``min()`` of it: 0 when the search ran over 0 rows."""
        if key == result:
            return True
        return (
            isinstance(key, tuple)
            and len(key) == 3
            and key[0] == "call"
            and key[1] in _MIN_FUNCTIONS
            and any(self.zero_when_empty(arg, result) for arg in key[2])
        )


def _positive(op: str, right: object) -> bool:
    """``x != 0``, ``x > 0`` (or more), ``x >= 1`` (or more): false for x == 0."""
    if not (isinstance(right, tuple) and right[0] == "num" and isinstance(right[1], int)):
        return False
    value = right[1]
    return (op == "!=" and value == 0) or (op == ">" and value >= 0) or (op == ">=" and value >= 1)


def _decide(
    path: str, readings: list[_Reading], found: list[Function], lines: list[str]
) -> HeaderCheck:
    if not found:
        return HeaderCheck(path, "unknown", "no function definition found in the header")
    if not readings:
        reason = "could not find the scheduler's search: no binary search over an array"
        return HeaderCheck(path, "unknown", reason)
    relevant = [r for r in readings if r.reads]
    if not relevant:
        reason = "could not find a read of the searched array after the search"
        return HeaderCheck(path, "unknown", reason)
    reads = [read for r in relevant for read in r.reads]
    hazards = [read for read in reads if not read.guards]
    # Name the search the verdict rests on: the first unguarded read's, else the one read most.
    searches = [read.search for read in reads]
    search = hazards[0].search if hazards else max(searches, key=searches.count)
    found_check = HeaderCheck(
        path,
        "unknown",
        "",
        function=search.function,
        array=search.array_name,
        result=search.result.name,
        limit=_limit(search),
        search=Evidence(
            search.line,
            "search",
            _code(lines, search.line),
            f"binary search over {search.array_name} in function {search.function}; "
            f"result {search.result.name}",
        ),
    )
    if hazards:
        first = hazards[0]
        evidence = tuple(
            _unique(
                Evidence(r.line, "read", _code(lines, r.line), f"{search.array_name} read")
                for r in hazards
            )
        )
        reason = (
            f"reads {search.array_name} on line {first.line} after the binary search on line "
            f"{search.line} with no early return on a zero total and no test that fails when "
            f"{_limit(search)} == 0: with 0 rows the buffer holds align(0, 32) = 0 ints"
        )
        return replace(found_check, status="unguarded", reason=reason, hazards=evidence)
    guards = tuple(_unique(g for read in reads for g in read.guards))
    unread = sorted({line for r in relevant for line in r.unread_lines})
    if unread:
        reason = f"guards found, but lines {', '.join(map(str, unread))} could not be read"
        return replace(found_check, reason=reason, guards=guards)
    reason = (
        f"no read of {search.array_name} after the search is reached with 0 rows: "
        + "; ".join(f"{g.note} (line {g.line})" for g in guards)
    )
    return replace(found_check, status="guarded", reason=reason, guards=guards)


def _limit(search: Search) -> str:
    if search.limit is None:
        return "the search limit"
    return spelling(search.limit.expr).replace("<array>", "the search limit")


def _code(lines: list[str], line: int) -> str:
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def _unique(evidence) -> list[Evidence]:
    seen: set[tuple[int, str]] = set()
    out = []
    for e in evidence:
        if (e.line, e.kind) not in seen:
            seen.add((e.line, e.kind))
            out.append(e)
    return out
