"""The CPU model of DeepGEMM's SM90 metadata scheduler, against docs/hazards/ZL001.md, "The fault".

Fault predicate (docs/hazards/ZL001.md): ``B % 32 == 0 and for all rows i: len_i == 0``, where for 2-D
lengths only column ``next_n - 1`` is read.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime_guard import clamp_context_lens, reference

H200_SMS = 132


def domain_fault_predicate(read_lens: list[int]) -> bool:
    return len(read_lens) % 32 == 0 and all(length == 0 for length in read_lens)


def segments_in_order(read_lens: list[int], atoms: int) -> list[tuple[int, int]]:
    """Every scheduling segment as ``(q_atom_idx, kv_split_idx)``, in the order SMs take them."""
    return [
        (q_idx * atoms + atom, split)
        for q_idx, length in enumerate(read_lens)
        for atom in range(atoms)
        for split in range(-(-length // reference.SPLIT_KV))
    ]


def expected_schedule(read_lens: list[int], num_sms: int, atoms: int = 1) -> list[tuple[int, int]]:
    """The scheduler's division of work (docs/hazards/ZL001.md, "The fault"), enumerated
    instead of binary-searched: of ``total`` segments, the first ``num_sms - total % num_sms``
    SMs take ``total // num_sms`` each and the rest one more; row ``i`` is SM ``i``'s first
    segment; the last row is the end."""
    segments = segments_in_order(read_lens, atoms)
    per_sm, remainder = divmod(len(segments), num_sms)
    sizes = [per_sm + (sm >= num_sms - remainder) for sm in range(num_sms)]
    starts = [sum(sizes[:sm]) for sm in range(num_sms)]
    return [segments[s] for s in starts] + [(len(read_lens) * atoms, 0)]


# --- hand-checked examples -------------------------------------------------------------

EXAMPLES = [
    # lens 300, 10, 1000 -> 2, 1, 4 segments (prefix 2, 3, 7); 7 over 4 SMs: 1, 2, 2, 2.
    pytest.param([300, 10, 1000], 4, [(0, 0), (0, 1), (2, 0), (2, 2), (3, 0)], id="3-rows"),
    # The same lengths as the last column of 2-D (B, 2) lens: next_n 2 is one atom.
    pytest.param(
        [[7, 300], [7, 10], [0, 1000]], 4, [(0, 0), (0, 1), (2, 0), (2, 2), (3, 0)], id="2d"
    ),
    # 256 is one segment, 257 two; 3 segments over 2 SMs: 1 then 2.
    pytest.param([256, 257], 2, [(0, 0), (1, 0), (2, 0)], id="split-boundary"),
    # 2 segments over 4 SMs: SMs 0 and 1 take none (and point at segment 0), 2 and 3 one.
    pytest.param([1, 1], 4, [(0, 0), (0, 0), (0, 0), (1, 0), (2, 0)], id="idle-sms"),
    # All zero, B = 33: every search ends at q_idx 33, still inside the 64-int buffer.
    pytest.param([0] * 33, 2, [(33, 0)] * 3, id="zero-in-bounds"),
]


@pytest.mark.parametrize(("lens", "num_sms", "rows"), EXAMPLES)
def test_schedule_examples(lens: list, num_sms: int, rows: list) -> None:
    result = reference.schedule(lens, num_sms)
    assert result.schedule == rows
    assert result.fault is None


def test_next_n_three_counts_two_atoms_per_row() -> None:
    # next_n 3 -> atoms of 2 tokens -> 2 atoms per row; 1 segment per atom.
    result = reference.schedule([[0, 0, 5], [0, 0, 5]], 4)
    assert result.schedule == [(0, 0), (1, 0), (2, 0), (3, 0), (4, 0)]


# --- the fault -------------------------------------------------------------------------


@pytest.mark.parametrize("batch", [32, 64, 96, 256, 1024])
def test_all_zero_multiple_of_32_reads_one_int_past_the_buffer(batch: int) -> None:
    result = reference.schedule([0] * batch, H200_SMS)
    assert result.faults
    assert (result.fault.index, result.fault.buffer_ints) == (batch, batch)
    assert result.fault.byte_offset == batch * 4
    assert f"prefix_sum[{batch}]" in str(result.fault)


@pytest.mark.parametrize(
    ("batch", "fill"), [(8, 0), (33, 0), (250, 0), (32, 1), (256, 1), (1024, 1), (256, 8192)]
)
def test_h200_cases_that_ran_clean(batch: int, fill: int) -> None:
    # docs/hazards/ZL001.md, "What was measured": these launches completed on the H200.
    assert not reference.faults([fill] * batch)


def test_empty_batch_reads_past_an_empty_buffer() -> None:
    result = reference.schedule([], H200_SMS)
    assert (result.fault.index, result.fault.buffer_ints) == (0, 0)
    assert not reference.schedule([], H200_SMS, guarded=True).faults


def patterns(batch: int) -> list[tuple[str, list[int] | list[list[int]]]]:
    """Zero/non-zero patterns for one batch size; 2-D ones put the non-zero lengths in
    columns the kernel does not read."""
    cases: list[tuple[str, list[int] | list[list[int]]]] = [
        ("all-zero", [0] * batch),
        ("all-one", [1] * batch),
        ("2d-unread-columns", [[9, 0]] * batch),
    ]
    for position in sorted({0, batch // 2, batch - 1}):
        lens = [0] * batch
        lens[position] = 257
        cases.append((f"one-at-{position}", lens))
    return cases


def read_column(lens: list) -> list[int]:
    return [row[-1] if isinstance(row, list) else row for row in lens]


def test_faults_exactly_on_the_domain_predicate_for_b_1_to_512() -> None:
    mismatches = [
        (batch, name)
        for batch in range(1, 513)
        for name, lens in patterns(batch)
        if reference.faults(lens) != domain_fault_predicate(read_column(lens))
    ]
    assert mismatches == []


def test_guarded_kernel_and_clamped_input_never_fault_for_b_1_to_512() -> None:
    faulting = [
        (batch, name)
        for batch in range(1, 513)
        for name, lens in patterns(batch)
        if reference.schedule(lens, H200_SMS, guarded=True).faults
        or reference.faults(clamp_context_lens(torch.tensor(lens, dtype=torch.int32)))
    ]
    assert faulting == []


# --- properties ------------------------------------------------------------------------

lengths = st.one_of(
    st.just(0),
    st.integers(1, 3),
    st.sampled_from([255, 256, 257, 512, 513]),
    st.integers(0, 70_000),
)
batches = st.lists(lengths, min_size=1, max_size=300)
sm_counts = st.sampled_from([1, 2, 3, 31, 32, 33, 78, 132])


@settings(max_examples=300, deadline=None)
@given(batches, sm_counts)
def test_model_faults_iff_the_domain_predicate(lens: list[int], num_sms: int) -> None:
    assert reference.schedule(lens, num_sms).faults == domain_fault_predicate(lens)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 40).map(lambda k: k * 32), sm_counts)
def test_every_all_zero_multiple_of_32_faults(batch: int, num_sms: int) -> None:
    assert reference.schedule([0] * batch, num_sms).faults


@settings(max_examples=300, deadline=None)
@given(batches.filter(any), sm_counts)
def test_schedule_is_the_even_split_of_segments(lens: list[int], num_sms: int) -> None:
    assert reference.schedule(lens, num_sms).schedule == expected_schedule(lens, num_sms)


@settings(max_examples=200, deadline=None)
@given(batches.filter(any), sm_counts, st.integers(3, 6))
def test_wide_next_n_splits_each_row_into_atoms(lens: list[int], num_sms: int, next_n: int) -> None:
    rows = [[0] * (next_n - 1) + [length] for length in lens]
    atoms = -(-next_n // 2)
    assert reference.schedule(rows, num_sms).schedule == expected_schedule(lens, num_sms, atoms)


@settings(max_examples=300, deadline=None)
@given(batches, sm_counts)
def test_guarded_kernel_never_faults_and_writes_the_same_table(
    lens: list[int], num_sms: int
) -> None:
    unguarded = reference.schedule(lens, num_sms)
    guarded = reference.schedule(lens, num_sms, guarded=True)
    assert guarded.fault is None
    # Where the unguarded kernel faults, the model completes its table with the guarded
    # kernel's end sentinels (documented in ScheduleResult).
    assert guarded.schedule == unguarded.schedule


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(1, 70_000), min_size=1, max_size=300), sm_counts)
def test_clamp_leaves_valid_lengths_and_their_schedule_unchanged(
    lens: list[int], num_sms: int
) -> None:
    tensor = torch.tensor(lens, dtype=torch.int32).unsqueeze(-1)
    clamped = clamp_context_lens(tensor)
    assert torch.equal(clamped, tensor)
    assert reference.schedule(clamped, num_sms) == reference.schedule(tensor, num_sms)


@settings(max_examples=300, deadline=None)
@given(batches, sm_counts)
def test_clamped_lengths_never_fault(lens: list[int], num_sms: int) -> None:
    clamped = clamp_context_lens(torch.tensor(lens, dtype=torch.int32))
    assert not reference.schedule(clamped, num_sms).faults


# --- inputs ----------------------------------------------------------------------------


def test_tensor_and_list_inputs_agree() -> None:
    lens = [[0, 5], [3, 700], [1, 0]]
    from_list = reference.schedule(lens, 7)
    assert reference.schedule(torch.tensor(lens, dtype=torch.int32), 7) == from_list
    assert reference.schedule(torch.tensor(lens, dtype=torch.int64), 7) == from_list


def test_schedule_converts_to_the_kernels_int32_table() -> None:
    table = reference.schedule([300, 10, 1000], 4).as_tensor()
    assert table.dtype == torch.int32
    assert table.shape == (5, 2)


def test_negative_lengths_are_read_as_uint32_like_the_kernel() -> None:
    # -1 is 0xFFFFFFFF; ceil_div wraps (0xFFFFFFFF + 255) to 254, which is 0 segments.
    assert reference.faults([-1] * 32)
    # -256 is 0xFFFFFF00: 16_777_215 segments.
    assert not reference.faults([-256] * 32)


@pytest.mark.parametrize(
    ("lens", "error", "message"),
    [
        (torch.zeros(4), TypeError, "integer tensor"),
        (torch.zeros(2, 2, 2, dtype=torch.int32), ValueError, "1-D or 2-D"),
        ([0.5, 1], TypeError, "list of ints"),
        ([[1, 2], [3]], ValueError, "same length"),
        ([2**31], ValueError, "int32"),
        ("1,2", TypeError, "tensor or a list"),
    ],
)
def test_bad_context_lens_are_refused(lens: object, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        reference.schedule(lens, 4)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_sms": 0}, "num_sms"),
        ({"num_sms": 4, "split_kv": 0}, "split_kv"),
        ({"num_sms": 4, "num_next_n_atoms": 0}, "num_next_n_atoms"),
    ],
)
def test_bad_parameters_are_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        reference.schedule([1, 2], **kwargs)
