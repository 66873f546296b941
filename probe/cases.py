"""The probe's cases, as pure data: a batch of B rows and each row's length.

Shared by the GPU runner and the CPU tests that check the committed report: both rebuild
the same cases from the same names.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

NUM_SMS = 132
"""H100 and H200 (SXM): the sizes "around the SM count" are around this."""


@dataclass(frozen=True)
class Case:
    """``lens[i]`` is row i's length (for DeepGEMM: column ``next_n - 1``)."""

    name: str
    lens: tuple[int, ...]
    next_n: int = 1

    @property
    def batch(self) -> int:
        return len(self.lens)

    @property
    def zero_rows(self) -> list[int]:
        return [i for i, n in enumerate(self.lens) if n == 0]

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "batch": self.batch,
            "next_n": self.next_n,
            "zero_rows": len(self.zero_rows),
        }


def _lengths(seed: str, batch: int, low: int = 1, high: int = 2000) -> tuple[int, ...]:
    rng = random.Random(f"zerolint-probe:{seed}")
    return tuple(rng.randint(low, high) for _ in range(batch))


AROUND_32 = (31, 32, 33, 64, 128)
AROUND_SMS = (NUM_SMS - 1, NUM_SMS, NUM_SMS + 1, 2 * NUM_SMS)


def edge_cases(next_n_values: Sequence[int] = (1,)) -> list[Case]:
    """Every case of issue "rule library" item 1, in a fixed order.

    B = 0; every row 0 (B = 1, around multiples of 32 and of the SM count); one row 0 first
    and last; every row 1; and non-zero controls of the same sizes. For kernels with a
    ``next_n`` (DeepGEMM), ``next_n_values`` beyond the first add B = 0 and B = 32 all-zero.
    """
    first = next_n_values[0]
    out = [Case("B=0", (), first), Case("all 0 B=1", (0,), first)]
    out += [Case(f"all 0 B={b}", (0,) * b, first) for b in (*AROUND_32, *AROUND_SMS)]
    mixed = _lengths("one-zero", 8)
    out += [
        Case("one 0 first B=8", (0, *mixed[1:]), first),
        Case("one 0 last B=8", (*mixed[:-1], 0), first),
        Case("every row 1 B=32", (1,) * 32, first),
        Case("every row 1 B=132", (1,) * NUM_SMS, first),
    ]
    out += [Case(f"control B={b}", _lengths(f"control-{b}", b), first) for b in (1, 32, NUM_SMS)]
    for next_n in next_n_values[1:]:
        out += [
            Case(f"B=0 next_n={next_n}", (), next_n),
            Case(f"all 0 B=32 next_n={next_n}", (0,) * 32, next_n),
            Case(f"control B=32 next_n={next_n}", _lengths("control-32", 32), next_n),
        ]
    return out


def case_named(name: str, next_n_values: Sequence[int] = (1,)) -> Case:
    for case in edge_cases(next_n_values):
        if case.name == name:
            return case
    raise KeyError(name)


# -- the predicates a measurement can support --------------------------------------------------

PREDICATES: dict[str, Callable[[Case], bool]] = {
    "never": lambda c: False,
    "B == 0": lambda c: c.batch == 0,
    "every row 0 and B % 32 == 0": lambda c: c.batch > 0 and c.batch % 32 == 0 and not any(c.lens),
    "B == 0 or (every row 0 and B % 32 == 0)": lambda c: c.batch % 32 == 0 and not any(c.lens),
    "any row 0": lambda c: 0 in c.lens,
    "every row 0": lambda c: c.batch > 0 and not any(c.lens),
    "B == 0 or every row 0": lambda c: not any(c.lens),
    "B == 0 or any row 0": lambda c: c.batch == 0 or 0 in c.lens,
    "always": lambda c: True,
}
"""Candidate predicates over a case, simplest first. ``probe.predicates`` picks, for each
outcome, the first one that holds on exactly the cases with that outcome."""
