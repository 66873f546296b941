"""Concrete evaluation of a path's row operations: the oracle the SMT judge is checked
against (tests) and timed against (benchmarks). It shares no code with zerolint/smt.py."""

from __future__ import annotations

import numpy as np

from zerolint.model import Op


def rows_after(ops: list[Op], batch: int, env: dict[str, int], lengths: np.ndarray) -> np.ndarray:
    """The kernel's lens after ``ops``: one row per batch row, one column per seq_len in
    ``lengths``; symbols take their values from ``env``."""
    rows = np.tile(lengths, (batch, 1))
    for op in ops:
        arg = env[op.arg] if isinstance(op.arg, str) else op.arg
        if op.kind == "floordiv":
            rows = rows // arg
        elif op.kind == "truncdiv":
            rows = np.sign(rows) * (np.abs(rows) // arg)
        elif op.kind == "ceildiv":
            rows = -((-rows) // arg)
        elif op.kind == "rshift":
            rows = rows >> arg
        elif op.kind == "add":
            rows = rows + arg
        elif op.kind == "mul":
            rows = rows * arg
        elif op.kind == "neg":
            rows = -rows
        elif op.kind == "clamp_min":
            rows = np.maximum(rows, arg)
        elif op.kind == "clamp_max":
            rows = np.minimum(rows, arg)
        elif op.kind == "zero_to":
            rows = np.where(rows == 0, arg, rows)
        elif op.kind == "below1_to":
            rows = np.where(rows >= 1, rows, arg)
        elif op.kind == "fill_zero":
            rows[:] = 0
        elif op.kind == "pad_zero":
            rows[arg:] = 0
    return rows
