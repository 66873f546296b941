"""Hazard predicates: what a kernel does wrong with the lengths it is given, as objects.

A rule file names its predicate (``[predicate] kind = ...``) and its parameters; the judge
(``smt.py``) knows no kernel and asks the predicate for everything rule-specific:

* ``fault(z3, batch, groups)``: the Z3 formula over the batch ``B`` and its row groups
  (each a length expression and a condition saying whether the group is in the batch);
* ``replay(batch, rows)``: the same predicate on concrete rows, to check every witness;
* ``clears(op)``: whether one operation leaves no row that can fault, whatever it was
  given (a clamp to >= 1 at the sink proves a path whose start is unknown);
* ``suffix_fault(z3, value)``: the formula asked of what follows the last operation
  outside the model ("a clean suffix proves the path safe" when it is unsatisfiable);
* the wording: ``safe_reason``, ``suffix_safe_reason`` and ``outcome`` (the witness's
  "-> ..." text, which a rule file may reword).

Adding a kernel with another failure mode is one more class here, registered in
``PREDICATES``; a rule file then names it. See docs/architecture.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from zerolint.model import Op, OpKind, least_value


class PredicateError(ValueError):
    """A predicate table that cannot be used; the message names the key."""


@dataclass(frozen=True, slots=True)
class Predicate:
    """A hazard on the rows one kernel call receives (subclasses say which)."""

    KIND: ClassVar[str] = ""
    PARAMS: ClassVar[Mapping[str, type]] = {}
    DEFAULT_OUTCOME: ClassVar[str] = ""

    outcome: str = ""
    """The witness's consequence, e.g. ``every context length 0`` (the rule's words)."""

    # Whether a witness shows the batch size B (a count has a batch of one row).
    shows_batch: ClassVar[bool] = True
    start_name: ClassVar[str] = "seq_len"
    """The witness's name for the length every real row starts from."""
    uses_values: ClassVar[bool] = True
    """Whether the rows' values matter (not for a predicate on the row count alone)."""
    needs_every_row: ClassVar[bool] = False
    """Whether the fault needs every row of the batch: then a condition that some row is
    harmless (``x.max() > 0``) rules it out (``smt._FlowEncoding.value_guards``)."""

    def fault(self, z3: Any, batch: Any, groups: Sequence[tuple[Any, Any]]) -> Any:
        raise NotImplementedError

    def replay(self, batch: int, rows: Sequence[int]) -> bool:
        raise NotImplementedError

    @property
    def safe_reason(self) -> str:
        raise NotImplementedError

    # The zero-row family below shares what makes a row harmless: it is not 0.

    def clears(self, op: Op) -> bool:
        """``op`` leaves every row >= 1 whatever it was given (a clamp to a constant >= 1,
        or a mask setting zero rows to one)."""
        raises = op.kind in (OpKind.CLAMP_MIN, OpKind.ZERO_TO, OpKind.BELOW1_TO)
        least = least_value(op.arg)  # a literal, or a bound such as max(m, 1)
        return raises and least is not None and least >= 1

    def suffix_fault(self, z3: Any, value: Any) -> Any:
        return value == 0

    suffix_safe_reason: ClassVar[str] = "no row can be 0 after the clamp, whatever came before it"

    def text(self) -> str:
        return self.outcome or self.DEFAULT_OUTCOME


@dataclass(frozen=True, slots=True)
class EveryRowZero(Predicate):
    """Every row of the batch is 0 and ``B`` is a multiple of ``batch-multiple``
    (DeepGEMM's SM90 paged-MQA scheduler: docs/hazards/ZL001.md)."""

    KIND: ClassVar[str] = "every-row-zero"
    PARAMS: ClassVar[Mapping[str, type]] = {"batch-multiple": int}
    DEFAULT_OUTCOME: ClassVar[str] = "every length 0"
    needs_every_row: ClassVar[bool] = True

    batch_multiple: int = 1

    def fault(self, z3: Any, batch: Any, groups: Sequence[tuple[Any, Any]]) -> Any:
        k = self.batch_multiple
        every_row_zero = [z3.Implies(present, value == 0) for value, present in groups]
        return z3.And(batch >= k, batch % k == 0, *every_row_zero)

    def replay(self, batch: int, rows: Sequence[int]) -> bool:
        k = self.batch_multiple
        return batch >= k and batch % k == 0 and not any(rows)

    @property
    def safe_reason(self) -> str:
        return f"no batch of B % {self.batch_multiple} == 0 rows has every length 0"


@dataclass(frozen=True, slots=True)
class AnyRowZero(Predicate):
    """Some row of a non-empty batch is 0 (a padded decode row with seq_len 0)."""

    KIND: ClassVar[str] = "any-row-zero"
    DEFAULT_OUTCOME: ClassVar[str] = "a length 0"

    def fault(self, z3: Any, batch: Any, groups: Sequence[tuple[Any, Any]]) -> Any:
        some_row_zero = [z3.And(present, value == 0) for value, present in groups]
        return z3.And(batch >= 1, z3.Or(some_row_zero))

    def replay(self, batch: int, rows: Sequence[int]) -> bool:
        return batch >= 1 and any(r == 0 for r in rows)

    @property
    def safe_reason(self) -> str:
        return "no row of any batch can be 0"


@dataclass(frozen=True, slots=True)
class EmptyBatch(Predicate):
    """The value the kernel receives is its batch size (a token or request count), and it
    can be 0: an empty batch, as on an idle data-parallel rank."""

    KIND: ClassVar[str] = "empty-batch"
    DEFAULT_OUTCOME: ClassVar[str] = "empty batch (B == 0)"
    shows_batch: ClassVar[bool] = False
    start_name: ClassVar[str] = "count"

    def fault(self, z3: Any, batch: Any, groups: Sequence[tuple[Any, Any]]) -> Any:
        # One row: the count itself. Padding writes cannot start inside a batch of one.
        count_zero = [z3.And(present, value == 0) for value, present in groups]
        return z3.And(batch == 1, z3.Or(count_zero))

    def replay(self, batch: int, rows: Sequence[int]) -> bool:
        return batch == 1 and rows[0] == 0

    @property
    def safe_reason(self) -> str:
        return "the count cannot be 0"

    suffix_safe_reason: ClassVar[str] = "the count cannot be 0 after the clamp"


@dataclass(frozen=True, slots=True)
class NoRows(Predicate):
    """The tensor the kernel receives has no rows: ``B == 0`` (DeepGEMM 2.5.0 and 2.6.1's
    paged-MQA scheduler read one int past an empty buffer: docs/hazards/empty-batch-ZL001.md).
    The row count comes from the path's selections (``x[:n]``, a mask, ``index_select``)
    and its guards; the values of the rows do not matter."""

    KIND: ClassVar[str] = "no-rows"
    DEFAULT_OUTCOME: ClassVar[str] = "empty batch (B = 0)"
    uses_values: ClassVar[bool] = False

    def fault(self, z3: Any, batch: Any, groups: Sequence[tuple[Any, Any]]) -> Any:
        return batch == 0

    def replay(self, batch: int, rows: Sequence[int]) -> bool:
        return batch == 0 and not rows

    @property
    def safe_reason(self) -> str:
        return "the batch cannot be empty on this path (its guards hold)"

    def clears(self, op: Op) -> bool:
        return False  # no clamp of the values adds a row

    suffix_safe_reason: ClassVar[str] = "the batch cannot be empty"


PREDICATES: dict[str, type[Predicate]] = {
    cls.KIND: cls for cls in (EveryRowZero, AnyRowZero, EmptyBatch, NoRows)
}


def predicate_from_table(table: Mapping[str, Any]) -> Predicate:
    """Build a predicate from a ``[predicate]`` table: ``kind``, ``outcome`` and the kind's
    parameters. Raises PredicateError naming the key that is wrong."""
    kind = table.get("kind")
    if not isinstance(kind, str):
        raise PredicateError("kind: must name a predicate (" + ", ".join(sorted(PREDICATES)) + ")")
    cls = PREDICATES.get(kind)
    if cls is None:
        raise PredicateError(
            f"kind: unknown predicate {kind!r} (known: {', '.join(sorted(PREDICATES))})"
        )
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key == "kind":
            continue
        if key == "outcome":
            if not isinstance(value, str):
                raise PredicateError("outcome: must be a string")
            values["outcome"] = value
            continue
        want = cls.PARAMS.get(key)
        if want is None:
            raise PredicateError(f"{key}: not a parameter of {kind}")
        if not isinstance(value, want) or isinstance(value, bool):
            raise PredicateError(f"{key}: must be {want.__name__}")
        if want is int and value < 1:
            raise PredicateError(f"{key}: must be >= 1")
        values[key.replace("-", "_")] = value
    return cls(**values)
