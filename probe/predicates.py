"""From a process's result to an outcome, and from a kernel's outcomes to the predicate
they support. Pure functions of the report's raw rows: the CPU tests recompute both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from probe.cases import PREDICATES, Case, case_named

Row = dict[str, Any]

OUTCOMES = ("ok", "fault", "nan_inf", "wrong", "rejected", "hang")
"""``ok``; ``fault`` (a CUDA error, a crash, or memcheck errors); ``nan_inf`` (NaN or Inf in
a checked output, the rows listed; an empty row's lse of -inf is the convention, not one);
``wrong`` (differs from the declared reference); ``rejected`` (the host refused the input
with an error, no launch); ``hang`` (past the time limit)."""


def nonfinite(row: Row) -> list[int]:
    """Rows with NaN or Inf in the checked outputs (lse: NaN and +inf only)."""
    bad: set[int] = set()
    for key in ("nan", "+inf", "-inf"):
        bad.update(row.get("out_nonfinite", {}).get(key, []))
    for key in ("nan", "+inf"):
        bad.update(row.get("lse_nonfinite", {}).get(key, []))
    return sorted(bad)


def nonfinite_kinds(row: Row) -> list[str]:
    """Which checked outputs held which non-finite values, e.g. ``["out: nan"]``."""
    kinds = [f"out: {k}" for k in ("nan", "+inf", "-inf") if row.get("out_nonfinite", {}).get(k)]
    kinds += [f"lse: {k}" for k in ("nan", "+inf") if row.get("lse_nonfinite", {}).get(k)]
    return kinds


def outcome(result: Row) -> str:
    """The outcome of one run: ``result`` is what probe.run records for a process."""
    if result["ended"] == "timeout":
        return "hang"
    if result.get("memory_errors"):
        return "fault"
    row = result.get("row")
    if row is None:
        return "fault"  # died without a word: a signal or an abort
    if row["status"] in ("fault", "rejected"):
        return row["status"]
    if nonfinite(row):
        return "nan_inf"
    if row.get("wrong_rows") or row.get("matches_model") is False:
        return "wrong"
    return "ok"


def supported(cases: Sequence[Case], bad: Sequence[bool]) -> str:
    """The first of ``PREDICATES`` true on exactly the cases flagged ``bad``, or a list of
    the unexplained cases."""
    for name, predicate in PREDICATES.items():
        if all(predicate(c) == b for c, b in zip(cases, bad)):
            return name
    return "unexplained: " + ", ".join(c.name for c, b in zip(cases, bad) if b)


def kernel_predicates(next_n: Sequence[int], rows: Sequence[Row]) -> Row:
    """Per outcome other than ok, the predicate over the cases it happened on, plain and
    under memcheck (``rows`` are a kernel's case rows of the report)."""
    cases = [case_named(r["case"], next_n) for r in rows]
    result: Row = {}
    for mode in ("plain", "memcheck"):
        outcomes = [r[mode]["outcome"] if r.get(mode) else None for r in rows]
        ran = [(c, o) for c, o in zip(cases, outcomes) if o is not None]
        if not ran:
            continue
        by_outcome = {
            kind: supported([c for c, _ in ran], [o == kind for _, o in ran])
            for kind in OUTCOMES[1:]
            if any(o == kind for _, o in ran)
        }
        if len(by_outcome) > 1:
            # Several bad outcomes that no single predicate separates may still share one.
            by_outcome["not_ok"] = supported([c for c, _ in ran], [o != "ok" for _, o in ran])
        result[mode] = by_outcome or {"all": "ok"}
    nan_rows_exact = [
        set(r["plain"].get("nonfinite_rows", [])) == set(c.zero_rows)
        for c, r in zip(cases, rows)
        if r.get("plain", {}).get("outcome") == "nan_inf"
    ]
    if nan_rows_exact:
        result["nan_inf_rows_are_the_zero_rows"] = all(nan_rows_exact)
        result["nan_inf_kinds"] = sorted(
            {
                k
                for r in rows
                if r.get("plain", {}).get("row")
                for k in nonfinite_kinds(r["plain"]["row"])
            }
        )
    result["summary"] = summary(result)
    return result


def summary(predicates: Row) -> str:
    """One line a rule can be checked against: each bad outcome and when it happens."""
    parts = []
    for mode in ("plain", "memcheck"):
        outcomes = predicates.get(mode, {})
        for kind, when in outcomes.items():
            unexplained = any(w.startswith("unexplained") for w in outcomes.values())
            if kind == "all" or (
                kind == "not_ok" and (not unexplained or when.startswith("unexp"))
            ):
                continue
            if kind != "not_ok" and when.startswith("unexplained") and "not_ok" in outcomes:
                continue  # said once, by the predicate all the bad outcomes share
            text = f"{when} -> {'fault, NaN/Inf or rejected' if kind == 'not_ok' else kind}"
            if mode == "memcheck":
                text += " (memcheck)"
            if not any(text.split(" (")[0] == p.split(" (")[0] for p in parts):
                parts.append(text)
    return "; ".join(parts) if parts else "tolerates every case"
