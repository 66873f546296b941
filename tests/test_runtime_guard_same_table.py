"""The fused path's self-check, on CPU: when are two schedule tables the same?

``FusedSchedule`` trusts its kernel on a device only when its table equals DeepGEMM's on a
live call (``fused._same_table``). The end-to-end self-check needs an SM90 GPU
(tests/test_runtime_guard_fused.py); the comparison itself is plain torch, so it is
specified here on real tables written by the scheduler model (``runtime_guard.reference``)
for real inputs: tables of different inputs, SM counts or dtypes are not the same.
"""

from __future__ import annotations

import pytest
import torch

from runtime_guard import fused, reference
from runtime_guard.clamp import clamp_context_lens

NUM_SMS = 132


def table(rows: list[int], num_sms: int = NUM_SMS, next_n: int = 1) -> torch.Tensor:
    lens = torch.tensor([[n] * next_n for n in rows], dtype=torch.int32)
    return reference.schedule(clamp_context_lens(lens), num_sms).as_tensor()


DECODE = [4096, 17, 1, 900] * 8  # 32 requests, one of them short


def test_a_table_and_its_copy_are_the_same() -> None:
    ours = table(DECODE)
    assert fused._same_table(ours, ours.clone())


def test_tables_of_equal_inputs_are_the_same() -> None:
    assert fused._same_table(table(DECODE), table(list(DECODE)))


DIFFERENT = [
    (table([*DECODE[:-1], 9000]), "one length ten times longer"),
    (table(DECODE[:-1]), "one request fewer"),
    (table(DECODE, num_sms=NUM_SMS - 1), "one SM fewer: another shape"),
    (table(DECODE).to(torch.int64), "int64, not the kernel's int32"),
    (table(DECODE).tolist(), "a list, not a tensor"),
    (None, "nothing"),
]


@pytest.mark.parametrize(("theirs", "why"), DIFFERENT, ids=[why for _, why in DIFFERENT])
def test_tables_that_differ_are_not_the_same(theirs: object, why: str) -> None:
    ours = table(DECODE)
    assert not fused._same_table(ours, theirs), why


def test_a_single_changed_entry_is_not_the_same() -> None:
    ours = table(DECODE)
    theirs = ours.clone()
    theirs[NUM_SMS // 2, 1] += 1
    assert not torch.equal(ours, theirs)
    assert not fused._same_table(ours, theirs)
