"""Guards on the rows' values (``assert (x > 0).all()``, ``x.max() != 0``) against a brute
force over batches whose rows have lengths of their own.

The judge gives every real row one shared length. A guard on every row keeps that sound;
one on some row does only where the fault needs every row too (``smt._FlowEncoding.
value_guards``). The reference below gives each row its own length, so it is the check of
that argument: every batch of up to ``MAX_B`` rows, each of a length from 1
to ``MAX_LEN``. It shares no code with smt.py.

For each random op chain with a guard on the rows' values somewhere in it:
  * Z3 safe  => no batch faults with every guard holding;
  * a batch faults with every guard holding => Z3 is not safe.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zerolint import smt
from zerolint.hazards import AnyRowZero, EveryRowZero, Predicate
from zerolint.model import EVERY_ROW, SOME_ROW, Flow, Op, Step

MAX_B = 3
MAX_LEN = 7
COMPARE = {
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}

row_ops = st.one_of(
    st.builds(Op, st.just("floordiv"), st.integers(2, 4)),
    st.builds(Op, st.just("add"), st.integers(-2, 2)),
    st.builds(Op, st.just("sub"), st.integers(0, 2)),
    st.builds(Op, st.just("clamp_min"), st.integers(-1, 2)),
    st.builds(Op, st.just("clamp_max"), st.integers(0, 3)),
    st.builds(Op, st.just("pad_zero"), st.integers(1, 2)),
)
guards = st.builds(
    lambda quantifier, op, k: Op("guard", f"{quantifier} {op} {k}"),
    st.sampled_from([EVERY_ROW, SOME_ROW]),
    st.sampled_from(sorted(COMPARE)),
    st.integers(-1, 1),
)
# Rows that can differ before the guard (a division), a guard, what may change them after.
chains = st.builds(
    lambda first, before, guard, after: [first, *before, guard, *after],
    st.builds(Op, st.just("floordiv"), st.integers(2, 4)),
    st.lists(row_ops, max_size=2),
    guards,
    st.lists(row_ops | guards, max_size=3),
)
predicates = st.sampled_from(
    [EveryRowZero(batch_multiple=1), EveryRowZero(batch_multiple=2), AnyRowZero()]
)


def run(chain: list[Op], lengths: tuple[int, ...]) -> tuple[list[int], bool]:
    """The rows at the kernel, and whether every guard held where it was met."""
    rows = list(lengths)
    held = True
    for op in chain:
        if op.kind == "guard":
            quantifier, cmp, k = op.arg.split()
            tests = [COMPARE[cmp](r, int(k)) for r in rows]
            held = held and (all(tests) if quantifier == EVERY_ROW else any(tests))
        elif op.kind == "floordiv":
            rows = [r // op.arg for r in rows]
        elif op.kind == "add":
            rows = [r + op.arg for r in rows]
        elif op.kind == "sub":
            rows = [r - op.arg for r in rows]
        elif op.kind == "clamp_min":
            rows = [max(r, op.arg) for r in rows]
        elif op.kind == "clamp_max":
            rows = [min(r, op.arg) for r in rows]
        elif op.kind == "pad_zero":
            rows = [0 if i >= op.arg else r for i, r in enumerate(rows)]
    return rows, held


def brute_fault(chain: list[Op], predicate: Predicate) -> tuple[int, ...] | None:
    for batch in range(1, MAX_B + 1):
        for lengths in itertools.product(range(1, MAX_LEN + 1), repeat=batch):
            rows, held = run(chain, lengths)
            if held and predicate.replay(batch, rows):
                return lengths
    return None


def judged(chain: list[Op], predicate: Predicate):
    steps = tuple(Step("f.py", i + 1, 0, op.describe(), "flow", op) for i, op in enumerate(chain))
    return smt.judge_flow(Flow(steps), predicate)


def agrees_with_the_brute_force(chain: list[Op], predicate: Predicate) -> None:
    """Proved safe: no batch faults with every guard holding; a batch faults: not safe."""
    verdict = judged(chain, predicate)
    fault = brute_fault(chain, predicate)
    if verdict.status == "safe":
        assert fault is None, f"proved safe, but rows of lengths {fault} fault"
    if fault is not None:
        assert verdict.status != "safe"


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chains, predicates)
def test_guards_on_the_rows_values_match_a_brute_force_of_rows_of_their_own(chain, predicate):
    agrees_with_the_brute_force(chain, predicate)


some_row_guards = st.builds(
    lambda op, k: Op("guard", f"{SOME_ROW} {op} {k}"),
    st.sampled_from(sorted(COMPARE)),
    st.integers(-1, 2),
)
# Two guards, at least one on some row, with row operations between and after them.
chains_of_two_guards = st.builds(
    lambda first, before, one, between, other, after: [
        first,
        *before,
        one,
        *between,
        other,
        *after,
    ],
    st.builds(Op, st.just("floordiv"), st.integers(2, 4)),
    st.lists(row_ops, max_size=2),
    some_row_guards,
    st.lists(row_ops | guards, max_size=2),
    some_row_guards | guards,
    st.lists(row_ops | guards, max_size=3),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chains_of_two_guards, predicates)
def test_two_guards_on_some_rows_match_a_brute_force(chain, predicate):
    """Two guards on some row may be about two rows: the judge's one length must not
    make them hold together where a halving after them makes both rows 0."""
    agrees_with_the_brute_force(chain, predicate)


@pytest.mark.parametrize(
    ("chain", "every_row", "any_row"),
    [
        # floor(L / 2) > 0 for some row: not every row is 0, but one of them may be.
        ([Op("floordiv", 2), Op("guard", f"{SOME_ROW} > 0")], "safe", "unsafe"),
        # every row > 0: no row is 0.
        ([Op("floordiv", 2), Op("guard", f"{EVERY_ROW} > 0")], "safe", "safe"),
        # every row > 0 before subtracting 1: a row of 1 is 0 after it.
        ([Op("floordiv", 2), Op("guard", f"{EVERY_ROW} > 0"), Op("sub", 1)], "unsafe", "unsafe"),
        # some row != 1 and some row != 0 may be two rows: lengths (1, 2) halve to (0, 1),
        # which holds both, then to (0, 0). One length cannot hold both and halve to 0 twice.
        (
            [
                Op("floordiv", 2),
                Op("guard", f"{SOME_ROW} != 1"),
                Op("guard", f"{SOME_ROW} != 0"),
                Op("floordiv", 2),
            ],
            "unsafe",
            "unsafe",
        ),
        # some row != 0 and some row != 5 where the kernel gets the rows as they are: every
        # row is 0 in a fault, so the first alone excludes it, whichever comes last.
        (
            [Op("floordiv", 2), Op("guard", f"{SOME_ROW} != 0"), Op("guard", f"{SOME_ROW} != 5")],
            "safe",
            "unsafe",
        ),
        # some row != 0, then padding rows from row 1 on: the row that was not 0 may be one.
        (
            [Op("floordiv", 2), Op("guard", f"{SOME_ROW} != 0"), Op("pad_zero", 1)],
            "unsafe",
            "unsafe",
        ),
    ],
)
def test_what_a_guard_on_the_rows_values_proves(chain, every_row, any_row):
    assert judged(chain, EveryRowZero(batch_multiple=1)).status == every_row
    assert judged(chain, AnyRowZero()).status == any_row
