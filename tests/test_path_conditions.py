"""Path conditions on real runs: a rule's ``facts`` option is what the judge assumes.

vLLM's padded decode path slices ``buf[:num_decode_tokens]`` under ``if num_decodes > 0:``;
ZL002 proves it safe only with its default fact ``num_decode_tokens >= num_decodes``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from zerolint import smt
from zerolint.dataflow import guards
from zerolint.dataflow.frames import rebound
from zerolint.engine import check_paths
from zerolint.model import Flow, Op, OpKind, Step
from zerolint.rules import rule_by_code

CASE = Path(__file__).parent / "fixtures" / "ZL002" / "vllm_indexer_padded.py"


def run(tmp_path: Path, options: str) -> list[str]:
    shutil.copy(CASE, tmp_path / "indexer.py")
    (tmp_path / "pyproject.toml").write_text(f'[tool.zerolint]\nselect = ["ZL002"]\n{options}')
    report = check_paths([tmp_path / "indexer.py"])
    return [f.code for f in report.findings]


def test_the_default_fact_proves_the_padded_path(tmp_path: Path) -> None:
    assert run(tmp_path, "") == []


def test_without_the_fact_the_guard_on_num_decodes_proves_nothing(tmp_path: Path) -> None:
    assert run(tmp_path, "[tool.zerolint.options.ZL002]\nfacts = []\n") == ["ZL002"]


# --- the judge: guards as constraints, facts by short name -------------------------------

ZL002 = rule_by_code("ZL002")
assert ZL002 is not None
FACT = "num_decode_tokens >= num_decodes"


def judged(*ops: Op, facts: tuple[str, ...] = ()) -> str:
    steps = tuple(
        Step("indexer.py", 10 + i, 4, op.describe(), "flow", op) for i, op in enumerate(ops)
    )
    return smt.judge_flow(Flow(steps), ZL002.predicate, facts=facts).status


def test_a_fact_holds_for_every_symbol_of_its_short_name() -> None:
    # vLLM 0.33.0's update_draft_decode_metadata: the batch is num_decode_tokens, the path
    # is guarded by num_decodes > 0 (where the metadata was built) and by the field
    # metadata.num_decode_tokens != 0; both symbols are `num_decode_tokens` by short name.
    ops = (
        Op(OpKind.ROWS, "num_decode_tokens"),
        Op(OpKind.GUARD, "num_decodes > 0"),
        Op(OpKind.GUARD, "metadata.num_decode_tokens != 0"),
    )
    assert judged(*ops, facts=(FACT,)) == "safe"
    assert judged(*ops) == "unsafe"


def test_a_guard_on_a_literal_is_true_or_false() -> None:
    # A caller's literal bound to the guarded parameter: `_helper(x, 0)` under `if n > 0:`
    # in the helper makes the path impossible; `_helper(x, 5)` constrains nothing.
    assert judged(Op(OpKind.ROWS, "n"), Op(OpKind.GUARD, "0 > 0")) == "safe"
    assert judged(Op(OpKind.ROWS, "n"), Op(OpKind.GUARD, "5 > 0")) == "unsafe"


# --- renaming a callee's conditions into the caller's names ------------------------------


def test_rebound_renames_guard_subjects_row_terms_and_field_heads() -> None:
    operands: dict[str, int | str] = {"n": "num_decodes", "meta": "m", "k": 0, "end": "stop"}
    assert rebound(Op(OpKind.GUARD, "n > 0"), operands) == "num_decodes > 0"
    assert rebound(Op(OpKind.GUARD, "k > 0"), operands) == "0 > 0"
    assert rebound(Op(OpKind.GUARD, "meta.num != 0"), operands) == "m.num != 0"
    # A literal has no fields: the guard on `meta.num` stays as it was.
    assert rebound(Op(OpKind.GUARD, "k.num != 0"), operands) == "k.num != 0"
    assert rebound(Op(OpKind.ROWS, "end - start"), operands) == "stop - start"
    assert rebound(Op(OpKind.ROWS, "n"), operands) == "num_decodes"
    unchanged = Op(OpKind.GUARD, "other > 0")
    assert rebound(unchanged, operands) is unchanged.arg


def test_assigning_a_name_forgets_the_conditions_on_its_fields() -> None:
    conds = (("meta.num", "!=", 0, None), ("meta", "!=", 0, None), ("metadata.n", ">", 0, None))
    assert guards.forget(conds, "meta") == (("metadata.n", ">", 0, None),)
    assert guards.forget(conds, None) == conds


def test_what_a_sum_says_of_the_rows_holds_of_every_tensor() -> None:
    """``x.sum() op k`` gives only conditions on some row that hold of every list of rows
    whose sum passes the test, rows below 0 included (a path may subtract from lengths);
    and it says some row is not 0 where the sum is not 0 or is above 0."""
    import itertools
    import operator

    import libcst as cst

    compare = {
        "==": operator.eq,
        "!=": operator.ne,
        ">": operator.gt,
        ">=": operator.ge,
        "<": operator.lt,
        "<=": operator.le,
    }
    for op, k in itertools.product(compare, range(-2, 3)):
        for positive in (True, False):
            test = cst.parse_expression(f"x.sum() {op} {k}")
            got = guards.atoms(test, positive)
            assert all(subject == (guards.SOME_ROW, "x") for subject, _, _ in got)
            for rows in itertools.product(range(-2, 3), repeat=3):
                if compare[op](sum(rows), k) != positive:
                    continue
                for _, row_op, row_k in got:
                    assert any(compare[row_op](r, row_k) for r in rows), (op, k, positive, rows)
    assert guards.atoms(cst.parse_expression("x.sum() == 0"), False) == [
        ((guards.SOME_ROW, "x"), "!=", 0)
    ]
    assert guards.atoms(cst.parse_expression("torch.sum(x) > 0"), True) == [
        ((guards.SOME_ROW, "x"), ">", 0)
    ]
    assert guards.atoms(cst.parse_expression("x.sum() == 0"), True) == []
    assert guards.atoms(cst.parse_expression("x.sum(0) != 0"), True) == []
