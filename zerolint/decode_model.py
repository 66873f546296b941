"""The vLLM capture questions for ZL001's kernel, as Z3 formulas over decode batches.

``capture.py`` asks them: which CUDA-graph capture sizes give a dummy decode batch the
kernel faults on, whether live traffic or an idle data-parallel rank can. The batches are
uniform decode batches (docs/hazards/ZL001.md); the fault is ZL001's predicate, given by
the caller. The encoding (symbols, witness search, replay) is the judge's, ``smt.py``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from zerolint import smt
from zerolint.hazards import Predicate
from zerolint.model import Op, Verdict
from zerolint.smt import Ratios


@dataclass(frozen=True, slots=True)
class DecodeShape:
    """How a uniform decode batch reaches the kernel (docs/hazards/ZL001.md, "How vLLM feeds it").

    Each request has ``next_n`` query tokens; token ``j`` of a request with ``seq_len L``
    has context length ``L - next_n + j + 1``. ``native``: 2-D ``(requests, next_n)``
    lens of which the kernel reads the last column (``L``), kernel batch = requests.
    Otherwise flattened: one row per token, kernel batch = requests * next_n.
    """

    next_n: int
    native: bool

    def kernel_batch(self, requests: int) -> int:
        return requests if self.native else requests * self.next_n

    def read_lengths(self, seq_len: int) -> tuple[int, ...]:
        """The lengths the kernel reads for one request, before the builder's ops."""
        if self.native:
            return (seq_len,)
        return tuple(seq_len - self.next_n + j + 1 for j in range(self.next_n))


SIZES_PER_QUESTION = 64
"""How many capture sizes one solver question asks about (``faulting_sizes``)."""


def faulting_sizes(
    shape: DecodeShape,
    ops: Sequence[Op],
    sizes: Iterable[int],
    *,
    seq_len: int,
    predicate: Predicate,
    ratios: Ratios | None = None,
) -> list[int]:
    """The capture sizes (tokens) whose dummy decode batch faults, ascending.

    A size N is a batch of ``N // next_n`` requests, each of length ``seq_len``, whose
    lengths go through ``ops``. Each returned size is a model Z3 found (enumerated with
    blocking clauses); sizes not returned are proved not to fault. Raises SolverGaveUp on
    its work limit and OutsideModel for ops the model cannot express.
    """
    z3 = smt.z3_module()
    enc = smt.Encoder(z3, smt.freeze_ratios(ratios))
    size = z3.Int("size")
    requests = size / shape.next_n
    _, fault = _decode_fault(
        enc, predicate, shape, ops, seq_len=z3.IntVal(seq_len), requests=requests
    )
    solver = enc.solver()
    solver.add(size % shape.next_n == 0, fault)
    found = []
    # A few sizes at a time: each check then carries the blocking clauses of its part only
    # (one per faulting size), where one question over thousands of sizes grew a clause
    # per answer and took time growing with the square of the faulting sizes.
    values = sorted(set(sizes))
    for start in range(0, len(values), SIZES_PER_QUESTION):
        solver.push()
        solver.add(_member(z3, size, values[start : start + SIZES_PER_QUESTION]))
        while (answer := solver.check()) == z3.sat:
            value = solver.model().eval(size).as_long()
            found.append(value)
            solver.add(size != value)
        if answer != z3.unsat:
            raise smt.SolverGaveUp(f"capture sizes: solver gave up ({smt.why_unknown(solver)})")
        solver.pop()
    return sorted(found)


def live_decode_verdict(
    shape: DecodeShape,
    ops: Sequence[Op],
    *,
    min_seq_len: int,
    max_requests: int,
    predicate: Predicate,
    ratios: Ratios | None = None,
) -> Verdict:
    """Can live decode traffic fault: 1..max_requests requests, each ``>= min_seq_len``?

    The witness has the kernel batch ``B``, ``requests``, ``seq_len`` and each symbol.
    """
    z3 = smt.z3_module()
    enc = smt.Encoder(z3, smt.freeze_ratios(ratios))
    requests, seq_len = z3.Int("requests"), z3.Int("seq_len")
    batch, fault = _decode_fault(enc, predicate, shape, ops, seq_len=seq_len, requests=requests)
    solver = enc.solver()
    solver.add(requests >= 1, requests <= max_requests, seq_len >= min_seq_len, fault)

    def replay(w: dict[str, int]) -> bool:
        batch = shape.kernel_batch(w["requests"])
        rows = [shape.read_lengths(w["seq_len"])] * w["requests"]
        return batch == w["B"] and _faults(predicate, batch, rows, ops, w)

    order = [("B", batch, None), ("requests", requests, None), ("seq_len", seq_len, None)]
    return smt.decide(
        enc,
        solver,
        order,
        replay,
        "no decode batch of this shape is all 0",
        outcome=predicate.text(),
    )


def idle_rank_verdict(
    shape: DecodeShape,
    ops: Sequence[Op],
    sizes: Iterable[int],
    *,
    seq_len: int,
    predicate: Predicate,
    ratios: Ratios | None = None,
) -> Verdict:
    """Can one request of ``seq_len``, padded with empty requests to a size, fault?

    This is the data-parallel dummy batch: padding requests have length 0. The witness
    has ``B``, the padded ``size`` in tokens, ``seq_len`` and each symbol.
    """
    z3 = smt.z3_module()
    enc = smt.Encoder(z3, smt.freeze_ratios(ratios))
    size = z3.Int("size")
    padded = size / shape.next_n
    batch, fault = _decode_fault(
        enc, predicate, shape, ops, seq_len=z3.IntVal(seq_len), requests=z3.IntVal(1), padded=padded
    )
    solver = enc.solver()
    solver.add(_member(z3, size, sizes), size % shape.next_n == 0, padded >= 1, fault)

    def replay(w: dict[str, int]) -> bool:
        batch = shape.kernel_batch(w["size"] // shape.next_n)
        rows = [shape.read_lengths(seq_len)] + [(0,)] * (batch - shape.kernel_batch(1))
        return batch == w["B"] and _faults(predicate, batch, rows, ops, w)

    order = [("B", batch, None), ("size", size, None), ("seq_len", z3.IntVal(seq_len), None)]
    return smt.decide(
        enc, solver, order, replay, "no padded dummy batch is all 0", outcome=predicate.text()
    )


def _decode_fault(
    enc: smt.Encoder,
    predicate: Predicate,
    shape: DecodeShape,
    ops: Sequence[Op],
    *,
    seq_len: Any,
    requests: Any,
    padded: Any = None,
) -> tuple[Any, Any]:
    """(kernel batch, fault) for ``requests`` equal requests, padded to ``padded`` ones."""
    z3 = enc.z3
    if smt.outside_model(ops) or any(op.kind in smt.RESET_OPS for op in ops):
        raise smt.OutsideModel(f"decode batches take row operations only: {ops}")
    token_lens = [seq_len - shape.next_n + j + 1 for j in range(shape.next_n)]
    read = token_lens[-1:] if shape.native else token_lens
    groups = [(smt.apply_all(enc, ops, length), z3.BoolVal(True)) for length in read]
    total = requests if padded is None else padded
    if padded is not None:  # padding requests: length 0 on every row the kernel reads
        groups.append((smt.apply_all(enc, ops, z3.IntVal(0)), padded > requests))
    batch = total if shape.native else total * shape.next_n
    return batch, predicate.fault(z3, batch, groups)


def _member(z3: Any, var: Any, values: Iterable[int]) -> Any:
    """``var`` in ``values``, as a few arithmetic runs (lo, hi, step) instead of one
    equality per value: vLLM's size lists are a handful of strided ranges."""
    clauses = []
    for lo, hi, step in _runs(sorted(set(values))):
        if lo == hi:
            clauses.append(var == lo)
        else:
            clauses.append(z3.And(var >= lo, var <= hi, (var - lo) % step == 0))
    return z3.Or(clauses) if clauses else z3.BoolVal(False)


def _runs(values: list[int]) -> list[tuple[int, int, int]]:
    runs: list[tuple[int, int, int]] = []
    i = 0
    while i < len(values):
        lo = values[i]
        if i + 1 == len(values):
            runs.append((lo, lo, 1))
            break
        step, j = values[i + 1] - lo, i + 1
        while j + 1 < len(values) and values[j + 1] - values[j] == step:
            j += 1
        runs.append((lo, values[j], step))
        i = j + 1
    return runs


def _faults(
    predicate: Predicate,
    batch: int,
    rows: Sequence[Sequence[int]],
    ops: Sequence[Op],
    env: Mapping[str, int],
) -> bool:
    """The fault predicate on concrete rows (each a group of lengths, all read)."""
    values = [smt.evaluate(ops, length, env) for row in rows for length in row]
    return predicate.replay(batch, values)
