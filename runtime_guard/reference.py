"""A CPU model of DeepGEMM's SM90 paged-MQA metadata scheduler.

``schedule()`` reproduces, integer for integer, what the scheduler kernel behind
``get_paged_mqa_logits_metadata(context_lens, block_kv, num_sms)`` writes on SM90: the
``(num_sms + 1, 2)`` int32 table of ``(q_atom_idx, kv_split_idx)`` start points, one row per
SM plus a final end row. It models two kernel versions:

- unguarded (DeepGEMM 2.6.1, vendored by vLLM 0.27.1): when every length read is 0 and the
  batch is a multiple of 32, each SM's search ends at ``q_idx == batch_size`` and reads
  ``prefix_sum[batch_size]``, one int past the shared-memory buffer. The model reports that
  read as a ``SharedMemoryFault`` instead of crashing.
- guarded (DeepGEMM 2.8.1, vendored by vLLM 0.33.0): a zero total writes end sentinels only.

Written from the fault as docs/hazards/ZL001.md describes it and the public scheduler headers. Arithmetic is
``uint32`` as on the device, so negative int32 lengths and wrap-around are modelled too.
Pure Python: it needs torch only to read a tensor argument.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

SPLIT_KV = 256
"""KV tokens per scheduling segment (the kernel's ``SPLIT_KV``)."""

WARP_SIZE = 32
"""The scheduler is one warp; its shared buffer holds ``align(batch_size, 32)`` ints."""

H100_H200_NUM_SMS = 132

_U32 = 0xFFFFFFFF
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


@dataclass(frozen=True)
class SharedMemoryFault:
    """An out-of-bounds ``prefix_sum`` read of the unguarded kernel.

    ``index`` is the int index read, ``buffer_ints`` the size of the dynamic shared buffer
    (``align(batch_size, 32)``), ``sm_idx`` the first SM row whose computation reads it.
    """

    index: int
    buffer_ints: int
    sm_idx: int

    @property
    def byte_offset(self) -> int:
        """Offset of the read from the start of the dynamic shared buffer, in bytes."""
        return self.index * 4

    def __str__(self) -> str:
        return (
            f"shared-memory read of prefix_sum[{self.index}] past a {self.buffer_ints}-int "
            f"buffer (SM {self.sm_idx}); on the device: cudaErrorIllegalAddress"
        )


@dataclass(frozen=True)
class ScheduleResult:
    """What the scheduler kernel writes for one input.

    ``schedule`` holds ``num_sms + 1`` pairs ``(q_atom_idx, kv_split_idx)`` as the int32
    values the kernel stores. ``fault`` is the first out-of-bounds shared read, or None.
    When there is a fault the device output is undefined; the model then reads the padded
    buffer's running total in place of the missing int and completes the table.
    """

    schedule: list[tuple[int, int]]
    fault: SharedMemoryFault | None

    @property
    def faults(self) -> bool:
        return self.fault is not None

    def as_tensor(self) -> torch.Tensor:
        """The schedule as a ``(num_sms + 1, 2)`` int32 CPU tensor."""
        import torch

        return torch.tensor(self.schedule, dtype=torch.int32)


@dataclass(frozen=True)
class _Lens:
    """The kernel's view of ``context_lens``: batch size, next_n, and the lengths it reads."""

    batch_size: int
    next_n: int
    read: list[int]  # uint32 value of column next_n - 1 of each row


def schedule(
    context_lens: torch.Tensor | Sequence[Any],
    num_sms: int,
    *,
    guarded: bool = False,
    split_kv: int = SPLIT_KV,
    num_next_n_atoms: int | None = None,
) -> ScheduleResult:
    """Model the SM90 metadata kernel on ``context_lens`` for ``num_sms`` SMs.

    ``context_lens`` is an integer tensor or nested list, 1-D ``(B,)`` or 2-D ``(B, next_n)``;
    for 2-D only column ``next_n - 1`` is read. ``guarded`` selects the DeepGEMM 2.8.1 kernel
    instead of 2.6.1. ``num_next_n_atoms`` defaults to what the 2.6.1 kernel derives from
    next_n (``ceil(next_n / 2)`` for next_n >= 2, else 1); the 2.8.1 host passes its own.
    Raises ValueError or TypeError on input the kernel would not accept.
    """
    lens = _read_context_lens(context_lens)
    if num_sms < 1:
        raise ValueError(f"num_sms must be >= 1, got {num_sms}")
    if split_kv < 1:
        raise ValueError(f"split_kv must be >= 1, got {split_kv}")
    atoms = _next_n_atoms(lens.next_n) if num_next_n_atoms is None else num_next_n_atoms
    if atoms < 1:
        raise ValueError(f"num_next_n_atoms must be >= 1, got {atoms}")
    return _Scheduler(lens, num_sms, split_kv, atoms, guarded).run()


def faults(context_lens: torch.Tensor | Sequence[Any], num_sms: int = H100_H200_NUM_SMS) -> bool:
    """Whether the unguarded (DeepGEMM 2.6.1) kernel reads out of bounds on this input."""
    return schedule(context_lens, num_sms).faults


class _Scheduler:
    """One run of the kernel's single warp, computed row by row."""

    def __init__(self, lens: _Lens, num_sms: int, split_kv: int, atoms: int, guarded: bool) -> None:
        self.batch_size = lens.batch_size
        self.num_sms = num_sms
        self.atoms = atoms
        self.guarded = guarded
        self.buffer_ints = _align(lens.batch_size, WARP_SIZE)
        self.prefix_sum = _prefix_sums(lens.read, self.buffer_ints, split_kv)
        self.total = _u32((self.prefix_sum[-1] if self.prefix_sum else 0) * atoms)
        self.fault: SharedMemoryFault | None = None

    def run(self) -> ScheduleResult:
        end_row = (_u32(self.batch_size * self.atoms), 0)
        if self.guarded and self.total == 0:
            rows = [end_row] * (self.num_sms + 1)
        else:
            rows = [self._sm_row(sm_idx) for sm_idx in range(self.num_sms)] + [end_row]
        return ScheduleResult([(_i32(q), _i32(kv)) for q, kv in rows], self.fault)

    def _sm_row(self, sm_idx: int) -> tuple[int, int]:
        seg_start = _segment_start(sm_idx, self.total, self.num_sms)
        # 2.8.1 also clamps q_idx to batch_size - 1. Not modelled: with a non-zero total
        # every seg_start is below it, so the search never reaches batch_size.
        q_idx = self._search(seg_start)
        before = 0 if q_idx == 0 else self._scaled(q_idx - 1)
        offset_in_q = _u32(seg_start - before)
        if q_idx == 0:
            num_segs_q = self._read(0, sm_idx)
        else:
            num_segs_q = _u32(self._read(q_idx, sm_idx) - self.prefix_sum[q_idx - 1])
        atom_idx, kv_split_idx = divmod(offset_in_q, num_segs_q) if num_segs_q else (0, 0)
        return _u32(q_idx * self.atoms + atom_idx), kv_split_idx

    def _search(self, seg_start: int) -> int:
        """The kernel's binary search: first q_idx whose scaled prefix sum exceeds seg_start."""
        lo, hi = 0, self.batch_size
        while lo < hi:
            mid = (lo + hi) // 2
            if self._scaled(mid) <= seg_start:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def _scaled(self, idx: int) -> int:
        return _u32(self.prefix_sum[idx] * self.atoms)

    def _read(self, idx: int, sm_idx: int) -> int:
        """``prefix_sum[idx]``, recording the first read past the buffer."""
        if idx < self.buffer_ints:
            return self.prefix_sum[idx]
        if self.fault is None:
            self.fault = SharedMemoryFault(idx, self.buffer_ints, sm_idx)
        # Undefined on the device; continue as if the buffer were one int longer.
        return self.prefix_sum[-1] if self.prefix_sum else 0


def _segment_start(sm_idx: int, total: int, num_sms: int) -> int:
    """First segment of an SM: the first ``num_sms - total % num_sms`` SMs take
    ``total // num_sms`` segments each, the remaining ones one more."""
    per_sm, remainder = divmod(total, num_sms)
    pivot = num_sms - remainder
    return _u32(sm_idx * per_sm + (sm_idx - pivot if sm_idx > pivot else 0))


def _prefix_sums(read: list[int], buffer_ints: int, split_kv: int) -> list[int]:
    """Inclusive prefix sums of ``ceil(len / split_kv)`` over the padded buffer (pad rows are 0)."""
    sums: list[int] = []
    running = 0
    for length in read:
        running = _u32(running + _u32(length + split_kv - 1) // split_kv)
        sums.append(running)
    sums.extend([running] * (buffer_ints - len(read)))
    return sums


def _next_n_atoms(next_n: int) -> int:
    atom = 2 if next_n >= 2 else 1
    return (next_n + atom - 1) // atom


def _read_context_lens(context_lens: torch.Tensor | Sequence[Any]) -> _Lens:
    rows = _as_nested_list(context_lens)
    if not rows:
        return _Lens(0, 1, [])
    if all(_is_int(v) for v in rows):
        return _Lens(len(rows), 1, [_to_u32(v) for v in rows])
    if not all(isinstance(row, (list, tuple)) for row in rows):
        raise TypeError("context_lens must be a 1-D or 2-D list of ints")
    next_n = len(rows[0])
    if next_n < 1 or any(len(row) != next_n for row in rows):
        raise ValueError(f"context_lens rows must all have the same length >= 1, got {next_n}")
    if not all(_is_int(v) for row in rows for v in row):
        raise TypeError("context_lens must hold ints")
    return _Lens(len(rows), next_n, [_to_u32(row[-1]) for row in rows])


def _as_nested_list(context_lens: torch.Tensor | Sequence[Any]) -> list[Any]:
    tolist = getattr(context_lens, "tolist", None)
    if hasattr(context_lens, "dtype") and callable(tolist):
        dtype = context_lens.dtype
        if dtype.is_floating_point or dtype.is_complex or str(dtype) == "torch.bool":
            raise TypeError(f"context_lens must be an integer tensor, got {dtype}")
        if context_lens.dim() not in (1, 2):
            raise ValueError(f"context_lens must be 1-D or 2-D, got {context_lens.dim()}-D")
        return tolist()
    if isinstance(context_lens, (list, tuple)):
        return list(context_lens)
    raise TypeError(f"context_lens must be a tensor or a list, got {type(context_lens).__name__}")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _to_u32(value: int) -> int:
    if not _INT32_MIN <= value <= _INT32_MAX:
        raise ValueError(f"context length {value} does not fit in int32")
    return value & _U32


def _align(value: int, multiple: int) -> int:
    return (value + multiple - 1) // multiple * multiple


def _u32(value: int) -> int:
    return value & _U32


def _i32(value: int) -> int:
    return value - (1 << 32) if value > _INT32_MAX else value
