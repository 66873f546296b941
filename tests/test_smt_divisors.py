"""What the judge assumes of a divisor nobody configured: at least 2.

A divisor of 1 divides nothing, so a block size, a compress ratio or a page size is at least
2; configured values (``compress-ratios``) replace the assumption. The witness is the
smallest batch, then the smallest length, then the smallest divisor that faults.
"""

from __future__ import annotations

from typing import Any

import pytest

from zerolint import smt
from zerolint.model import Flow, Op, Step, Verdict
from zerolint.rules import rule_by_code

# ZL001's predicate and witness hints, as its rule file declares them: the judge holds none.
_RULE = rule_by_code("ZL001")
assert _RULE is not None
FAULT = _RULE.predicate
HINTS = _RULE.options["witness-hints"]


def judge_flow(f: Flow, **kw: Any) -> Verdict:
    return smt.judge_flow(f, FAULT, hints=HINTS, **kw)


def flow(*ops: Op) -> Flow:
    steps = [Step("blocks.py", 10, 4, "seq_lens = batch.seq_lens", "source")]
    steps += [Step("blocks.py", 11 + i, 4, op.describe(), "flow", op) for i, op in enumerate(ops)]
    steps.append(Step("blocks.py", 20, 4, "get_paged_mqa_logits_metadata(lens, 64, n)", "sink"))
    return Flow(tuple(steps))


@pytest.mark.parametrize(
    ("ops", "ratios", "witness"),
    [
        # the last block's index: (seq_lens - 1) // block_size is 0 for one-token requests
        ([Op("add", -1), Op("floordiv", "block_size")], None, {"block_size": 2}),
        ([Op("add", -1), Op("floordiv", "self.page_size")], None, {"page_size": 2}),
        ([Op("floordiv", "block_size")], None, {"block_size": 2}),
        ([Op("add", -1), Op("floordiv", "block_size")], {"block_size": (64,)}, {"block_size": 64}),
    ],
    ids=["last block index", "attribute divisor", "plain division", "configured"],
)
def test_an_unconfigured_divisor_is_at_least_2(
    ops: list[Op], ratios: dict | None, witness: dict[str, int]
) -> None:
    verdict = judge_flow(flow(*ops), ratios=ratios)
    assert verdict.status == "unsafe"
    assert verdict.witness == {"B": 32, "seq_len": 1, **witness}


def test_a_divisor_of_1_is_refused_where_configured() -> None:
    with pytest.raises(ValueError, match="must be >= 1"):
        judge_flow(flow(Op("floordiv", "block_size")), ratios={"block_size": (0,)})
