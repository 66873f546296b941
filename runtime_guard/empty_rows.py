"""Triton kernels that write the empty row's identity where a kernel leaves something else.

Imported only by a guard that needs them (``runtime_guard.attention``), never by
``import runtime_guard``: it imports Triton, which a process that guards nothing need not load.

- ``merge_splits``: the second half of a split-KV decode (flash-decoding). The first half
  left, for each row, head and split ``s``, that split's softmax-normalised partial output
  ``p_s`` (``dv`` values) and its log-sum-exp ``l_s`` (one value after them). The merge is
  the softmax over splits: with ``m = max_s l_s``, ``w_s = exp(l_s - m)``, the output is
  ``sum_s w_s p_s / sum_s w_s`` and the LSE ``m + log(sum_s w_s)``, accumulated one split
  at a time with the running maximum rescaling what came before (so each ``exp`` sees a
  non-positive argument). A split holds tokens only when its share
  ``[s * ceil(n / S), min((s + 1) * ceil(n / S), n))`` of the row's ``n`` tokens is not empty;
  the others were never written and are not read. A row of length 0 has no split with
  tokens: its sum is 0, and where the plain formula would divide 0 by 0 this kernel writes
  the empty row's identity, output 0 and LSE -inf. Every other row gets the formula above,
  evaluated in the order a split-KV reduction evaluates it, so that the guard can stand in
  for vLLM's reduction and give the same bits (the GPU probe checks that with ``torch.equal``).
- ``fill_empty_lse_``: -inf into the LSE of every row of length 0, one launch (on SM90 a
  programmatic dependent launch), rows of non-zero length not written (FlashMLA's dense
  decode writes +inf there).

Both take their lengths on the device and decide per row on the device: no host
synchronisation, one graph node each, captured like any kernel.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: see clamp.py
if TYPE_CHECKING:
    import torch

import triton
import triton.language as tl

MERGE_WARPS = 4
"""Warps per (row, head) program of ``merge_splits``: vLLM 0.26.0 launches its own
reduction with 4 (and 2 stages), and the guard's stands in for it, at the same speed."""


@triton.jit
def _merge_splits_kernel(
    partial,
    out,
    lse,
    lens,
    partial_row_stride,
    partial_head_stride,
    partial_split_stride,
    out_row_stride,
    out_head_stride,
    lse_row_stride,
    SPLITS: tl.constexpr,
    DV: tl.constexpr,
    DV_BLOCK: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    head = tl.program_id(1)
    length = tl.load(lens + row)
    cols = tl.arange(0, DV_BLOCK)
    valid = cols < DV
    here = partial + row * partial_row_stride + head * partial_head_stride
    share = tl.cdiv(length, SPLITS)

    best = -float("inf")  # running maximum of the splits' LSEs
    weight_sum = 0.0  # sum of exp(l_s - best) over the splits seen
    weighted = tl.zeros([DV_BLOCK], dtype=tl.float32)  # sum of exp(l_s - best) * p_s
    for split in range(SPLITS):
        first = share * split
        stop = tl.minimum(first + share, length)
        if stop > first:
            values = tl.load(here + split * partial_split_stride + cols, mask=valid, other=0.0)
            split_lse = tl.load(here + split * partial_split_stride + DV)
            new_best = tl.maximum(split_lse, best)
            rescale = tl.exp(best - new_best)
            weighted *= rescale
            weight = tl.exp(split_lse - new_best)
            weighted += weight * values
            weight_sum = weight_sum * rescale + weight
            best = new_best

    empty = length == 0
    merged = tl.where(empty, 0.0, weighted / weight_sum)
    tl.store(out + row * out_row_stride + head * out_head_stride + cols, merged, mask=valid)
    total = tl.where(empty, -float("inf"), best + tl.log(weight_sum))
    tl.store(lse + row * lse_row_stride + head, total)


def merge_splits(
    partial: torch.Tensor,
    q: torch.Tensor,
    out: torch.Tensor,
    lse: torch.Tensor,
    lens: torch.Tensor,
    splits: int,
    dv: int,
) -> None:
    """Merge ``partial`` (``(B, H, splits, >= dv + 1)`` float32, each split's normalised
    output then its LSE at index ``dv``) into ``out`` (``(B, H, >= dv)``, written in its
    dtype) and ``lse`` (``(B, H)``), in place; rows whose ``lens`` is 0 get output 0 and LSE
    -inf. ``B`` and ``H`` are ``q``'s first two sizes, as for the first stage. One launch of
    ``B * H`` programs on the current stream."""
    batch, heads = q.shape[0], q.shape[1]
    _merge_splits_kernel[(batch, heads)](
        partial,
        out,
        lse,
        lens,
        partial.stride(0),
        partial.stride(1),
        partial.stride(2),
        out.stride(0),
        out.stride(1),
        lse.stride(0),
        SPLITS=splits,
        DV=dv,
        DV_BLOCK=triton.next_power_of_2(dv),
        num_warps=MERGE_WARPS,
        num_stages=2,
    )


FILL_BLOCK = 256
"""LSE cells per program of ``fill_empty_lse_``, one warp each: on the H200 the fewest
microseconds added in CUDA-graph replay among the 128 to 1024 cells and 1 to 4 warps tried
(bench/sink_guard_cost.py measures the one chosen)."""


def _dependent_launch() -> bool:
    """Whether this Triton can launch a kernel as a programmatic dependent launch."""
    cuda = getattr(getattr(tl, "extra", None), "cuda", None)
    return hasattr(cuda, "gdc_wait") and hasattr(cuda, "gdc_launch_dependents")


DEPENDENT_LAUNCH = _dependent_launch()


@triton.jit
def _fill_empty_lse_kernel(
    lse,
    lens,
    total,
    row_stride,
    head_stride,
    query_stride,
    queries,
    cells,
    BLOCK: tl.constexpr,
    DEPENDENT: tl.constexpr,
):
    if DEPENDENT:
        # Launched as a programmatic dependent of the kernel before it: wait until that grid
        # has finished and its writes are visible, before reading or writing anything. Then
        # let the next kernel be scheduled: it waits for this grid the same way if it reads
        # what this one writes.
        tl.extra.cuda.gdc_wait()
        tl.extra.cuda.gdc_launch_dependents()
    index = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    inside = index < total
    row = index // cells
    cell = index % cells
    empty = tl.load(lens + row, mask=inside, other=1) == 0
    where = (
        lse + row * row_stride + (cell // queries) * head_stride + (cell % queries) * query_stride
    )
    tl.store(where, tl.full([BLOCK], float("-inf"), tl.float32), mask=inside & empty)


def fill_empty_lse_(lse: torch.Tensor, lens: torch.Tensor) -> torch.Tensor:
    """Write -inf into ``lse[b]`` (``(B, H, S)``, any strides) for every ``b`` with
    ``lens[b] == 0`` (``lens`` of ``B`` elements, contiguous), in place; cells of rows of
    non-zero length are not written. One launch of ``ceil(B * H * S / FILL_BLOCK)``
    programs; returns ``lse``.

    On a GPU of compute capability 9.0 or later it is a programmatic dependent launch: the
    GPU schedules its programs while the kernel before it (the one that wrote ``lse``)
    finishes, each program waits for that kernel's grid before it touches memory, and it lets
    the kernel after it be scheduled early too. One graph node either way.
    """
    batch, heads, queries = lse.shape
    cells = heads * queries
    total = batch * cells
    dependent = DEPENDENT_LAUNCH and lse.is_cuda and _capability(lse.device.index or 0) >= (9, 0)
    _fill_empty_lse_kernel[(triton.cdiv(total, FILL_BLOCK),)](
        lse,
        lens,
        total,
        lse.stride(0),
        lse.stride(1),
        lse.stride(2),
        queries,
        cells,
        BLOCK=FILL_BLOCK,
        DEPENDENT=dependent,
        num_warps=1,
        **({"launch_pdl": True} if dependent else {}),
    )
    return lse


_CAPABILITIES: dict[int, tuple[int, int]] = {}


def _capability(device: int) -> tuple[int, int]:
    """The compute capability of CUDA device ``device``, asked once."""
    known = _CAPABILITIES.get(device)
    if known is None:
        import torch

        known = _CAPABILITIES[device] = tuple(torch.cuda.get_device_capability(device))
    return known
