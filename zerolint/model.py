"""The objects every part of zerolint shares: a path step, a flow, a finding, a verdict.

The analyzer builds them, the SMT judge annotates them, and every output format renders
the same objects, so what a user reads in text, JSON or SARIF is one path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Literal

# An operand that the SMT model understands: an integer literal, or a symbol such as
# ``self.compress_ratio`` whose range comes from configuration.
Operand = int | str


# A guard op on the values of the rows its path carries at that step (``"#every > 0"``:
# every row is > 0 there; ``"#some != 0"``: some row is), rather than on a symbol or on the
# row count (``dataflow.guards``; the judge reads them in ``smt._FlowEncoding``).
EVERY_ROW = "#every"
SOME_ROW = "#some"
ROW_VALUES = (EVERY_ROW, SOME_ROW)


class OpKind(str, Enum):
    """What a step does to the lengths: the closed set the analysis emits, the judge
    encodes and the formats print (each is its own string value, so JSON, the cache and
    comparisons with plain strings see ``"floordiv"``)."""

    FLOORDIV = "floordiv"
    TRUNCDIV = "truncdiv"
    CEILDIV = "ceildiv"
    RSHIFT = "rshift"
    ADD = "add"
    MUL = "mul"
    SUB = "sub"
    NEG = "neg"
    CLAMP_MIN = "clamp_min"
    CLAMP_MAX = "clamp_max"
    ZERO_TO = "zero_to"
    BELOW1_TO = "below1_to"
    FILL_ZERO = "fill_zero"
    PAD_ZERO = "pad_zero"
    KNOWN_ROWS = "known_rows"
    IDENTITY = "identity"
    OPAQUE = "opaque"
    ROWS = "rows"
    GUARD = "guard"

    # Hash and print as the string value, so that sets and dicts of either spelling agree.
    __hash__ = str.__hash__

    def __str__(self) -> str:
        return self.value


_KINDS = {kind.value: kind for kind in OpKind}

# The row operations that take an operand (``row // arg``, ``max(row, arg)``): where it is
# not a literal, a symbol of the function the step was made in (``values.SYMBOLIC_OPS``),
# which the judge reads as a value (``smt``).
OPERAND_OPS = frozenset(
    {
        OpKind.FLOORDIV,
        OpKind.TRUNCDIV,
        OpKind.CEILDIV,
        OpKind.RSHIFT,
        OpKind.ADD,
        OpKind.MUL,
        OpKind.SUB,
        OpKind.CLAMP_MIN,
        OpKind.CLAMP_MAX,
        OpKind.ZERO_TO,
        OpKind.BELOW1_TO,
    }
)

ANY_ROWS = "<mask>"
"""The start of a ``pad_zero`` that a mask decides: any row, row 0 included."""


@dataclass(frozen=True, slots=True)
class Op:
    """What one step does to the length values that flow through it.

    kind is one of:
      floordiv  rows become ``row // arg``            (a // b, //=, torch.div floor, math.floor)
      truncdiv  rows become ``row / arg`` rounded toward 0 (torch.div trunc, int(a / b));
                the same as floordiv on a row >= 0, not on a negative one
      ceildiv   rows become ``ceil(row / arg)``       (cdiv, triton.cdiv)
      rshift    rows become ``row >> arg``
      add       rows become ``row + arg``             (``-`` is add of the negated literal)
      mul       rows become ``row * arg``
      sub       rows become ``row - arg``             (a - b: arg is the subtrahend's symbol)
      neg       rows become ``-row``
      clamp_min rows become ``max(row, arg)``         (clamp(min=), clamp_min, maximum, max)
      clamp_max rows become ``min(row, arg)``
      zero_to   rows equal to 0 become ``arg``       (torch.where(x == 0, k, x), x[x == 0] = k)
      below1_to rows below 1 become ``arg``          (x.masked_fill(x < 1, k), k != 1)
      fill_zero every row becomes 0                   (torch.zeros, .zero_(), buf[:] = 0)
      pad_zero  rows from ``arg`` on become 0         (buf[n:m] = 0: padding rows)
      known_rows every row becomes a known value     (torch.tensor([4, 8]): arg "4,8", one
                row each; torch.full((n,), 8) / torch.ones(n): arg "8" / "1", every row)
      rows      the tensor now has ``arg`` rows       (x[:n], x[a:b] as "b - a", x[mask] and
                                                  index_select as "<any>", torch.empty((0, ..)))
      guard     a path condition, ``arg`` is "name op k" (name "#rows": the rows so far)
                                                  (a dominating `if`, early exit, assert)
      identity  values unchanged                      (assignment, views, copies, casts)
      opaque    an operation outside the model        (arg names it)
    arg is an Operand; for clamp_min/clamp_max a non-literal bound is a str symbol.
    """

    kind: OpKind | str
    arg: Operand | None = None

    def __post_init__(self) -> None:
        # A kind read back from JSON is a plain string: make it the enum member. A kind
        # outside the set stays a string, and the judge calls it outside its model.
        object.__setattr__(self, "kind", _KINDS.get(self.kind, self.kind))

    def describe(self) -> str:
        if self.arg is None:
            return self.kind
        return f"{self.kind}({self.arg})"


IDENTITY = Op(OpKind.IDENTITY)
# The values are kept, and rows may be added to them (``torch.cat`` of a selection with
# other parts): a later selection is not bounded by the first one's count (smt._count).
ROWS_ADDED = Op(OpKind.IDENTITY, "rows may be added")


# A symbol bounded by Python's max or min with a constant: ``seq_lens // max(r, 1)`` divides
# by ``"max(r,1)"``, and ``r = max(ratio, 1)`` makes later operands ``r`` read ``"max(r,1)"``
# (the values r can take are exactly those of max(r, 1) over every r). The judge encodes
# the bound (``smt.Encoder``), the witness shows the inner symbol, the replay applies it.
BOUNDS = ("max", "min")


def bounded(fn: str, inner: Operand, k: int) -> Operand:
    """``fn(inner, k)`` as an operand: folded when ``inner`` is a literal."""
    if isinstance(inner, int):
        return max(inner, k) if fn == "max" else min(inner, k)
    return f"{fn}({inner},{k})"


def parse_bounded(arg: object) -> tuple[str, str, int] | None:
    """``"max(r,1)"`` -> ("max", "r", 1); None for any other operand."""
    if not isinstance(arg, str) or not arg.endswith(")"):
        return None
    for fn in BOUNDS:
        if arg.startswith(f"{fn}("):
            inner, sep, k = arg[len(fn) + 1 : -1].rpartition(",")
            if sep and inner and k.lstrip("-").isdigit():
                return fn, inner, int(k)
    return None


def count_terms(arg: str) -> tuple[str, list[str]]:
    """A symbolic row count's kind and terms: ``"end - start"`` a difference (``" - "``,
    none below 0), ``"t = n * k"`` a name bound to a product (``" = "``: ``[t, n, k]``),
    else ``("", [arg])``. ``join_count`` writes them back."""
    if " = " in arg:
        named, _, product = arg.partition(" = ")
        return " = ", [named, *product.split(" * ")]
    if " - " in arg:
        return " - ", arg.split(" - ")
    return "", [arg]


def join_count(kind: str, terms: Sequence[object]) -> str:
    """The count ``count_terms`` read (its terms maybe renamed)."""
    if kind == " = ":
        return product_count(*terms)
    return kind.join(map(str, terms))


def product_count(name: object, left: object, right: object) -> str:
    """The row count of ``x[:t]`` after ``t = left * right``: ``"t = left * right"``."""
    return f"{name} = {left} * {right}"


def symbol_names(arg: object) -> tuple[str, ...]:
    """The symbols an operand names: ``"max(r,1)"`` names ``r``; a literal none."""
    if not isinstance(arg, str):
        return ()
    parsed = parse_bounded(arg)
    return symbol_names(parsed[1]) if parsed is not None else (arg,)


def least_value(arg: object) -> int | None:
    """The smallest value an operand can take, when a literal or a ``max`` bound says it."""
    if isinstance(arg, int):
        return arg
    parsed = parse_bounded(arg)
    if parsed is None:
        return None
    fn, inner, k = parsed
    low = least_value(inner)
    if fn == "max":
        return k if low is None else max(low, k)
    return None if low is None else min(low, k)


def renamed(arg: str, name: str) -> str:
    """A bounded operand around another symbol: ``renamed("min(x,8)", "r") == "min(r,8)"``."""
    return str(with_symbol(arg, name))


def with_symbol(arg: str, inner: Operand) -> Operand:
    """A bounded operand around another operand, folded when that is a literal:
    ``with_symbol("max(ratio,1)", 4) == 4``, ``with_symbol("max(ratio,1)", "r") == "max(r,1)"``."""
    parsed = parse_bounded(arg)
    if parsed is None:
        return inner
    fn, within, k = parsed
    return bounded(fn, with_symbol(within, inner), k)


def bound_value(arg: str, inner_value: int) -> int:
    """A bounded operand's value when its innermost symbol is ``inner_value``."""
    parsed = parse_bounded(arg)
    if parsed is None:
        return inner_value
    fn, inner, k = parsed
    value = bound_value(inner, inner_value)
    return max(value, k) if fn == "max" else min(value, k)


StepRole = Literal["source", "flow", "call", "return", "sanitizer", "sink"]


@dataclass(frozen=True, slots=True)
class Step:
    """One line of a path: where it is, the code, and what it does to the lengths."""

    path: str
    line: int
    col: int
    code: str
    role: StepRole
    op: Op = IDENTITY
    note: str = ""


@dataclass(frozen=True, slots=True)
class Flow:
    """One way a zero-able length reaches the sink: its steps in execution order."""

    steps: tuple[Step, ...]

    @property
    def source(self) -> Step:
        for step in self.steps:
            if step.role == "source":
                return step
        return self.steps[0]

    @property
    def ops(self) -> tuple[Op, ...]:
        return tuple(
            step.op for step in self.steps if step.op.kind != "identity" or step.op == ROWS_ADDED
        )


VerdictStatus = Literal["unsafe", "safe", "unknown"]


@dataclass(frozen=True, slots=True)
class Verdict:
    """The SMT judge's answer for a finding (the worst over its flows).

    witness maps names to values (``B``, ``seq_len``, ``compress_ratio`` ...) for an
    unsafe verdict; reason says why a path is safe or could not be decided.
    """

    status: VerdictStatus
    witness: dict[str, int] = field(default_factory=dict)
    reason: str = ""
    flow_index: int | None = None
    outcome: str = ""
    """What the witness makes the kernel see, in the rule's words (its predicate's
    ``outcome``): ``every context length 0``."""

    def witness_text(self) -> str:
        if not self.witness:
            return ""
        parts = ", ".join(f"{k}={v}" for k, v in self.witness.items())
        return f"{parts} -> {self.outcome}" if self.outcome else parts


@dataclass(slots=True)
class Finding:
    """A place where zero-able lengths reach a kernel-metadata call."""

    code: str
    path: str
    line: int
    col: int
    message: str
    sink: str
    argument: str
    flows: list[Flow]
    verdict: Verdict | None = None
    # End of the sink call, for SARIF regions and the autofix.
    end_line: int = 0
    end_col: int = 0
    # Whether --fix can clamp it here; None when not worked out (then the rule's default).
    fixable: bool | None = None

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.path, self.line, self.col, self.code)


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """A file that could not be checked (ZL9xx): one clear line, the run goes on."""

    code: str
    path: str
    message: str
    line: int = 0
    col: int = 0
    # Whether the analysis tried to parse the file (a candidate, or a module a path led
    # into): --touching keeps such a file's ZL901-ZL905, since a path through one of the
    # files it names may have been cut there. Not part of what the diagnostic says.
    analysed: bool = field(default=False, compare=False)

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.path, self.line, self.col, self.code)


@dataclass(slots=True)
class Report:
    """Everything one run found, sorted the same way whatever the worker count."""

    findings: list[Finding] = field(default_factory=list)
    proved: list[Finding] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    files_checked: int = 0
    fixed: int = 0  # findings --fix fixed in this run (they are no longer in ``findings``)
    # The option that applies the fixes ``[*]`` marks: ``--diff`` for text read from stdin.
    fix_with: str = "--fix"
    # Paths named on the command line that are not there (ZL902, an error: exit status 2).
    missing: list[Diagnostic] = field(default_factory=list)
    # Findings a suppression comment hid (for ZL920, unused suppressions); never shown.
    suppressed: list[Finding] = field(default_factory=list)

    def sort(self) -> None:
        self.findings.sort(key=Finding.sort_key)
        self.proved.sort(key=Finding.sort_key)
        self.diagnostics.sort(key=Diagnostic.sort_key)
