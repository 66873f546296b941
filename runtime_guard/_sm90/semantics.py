"""Semantics: the clamp changes how DeepGEMM distributes work, never the logits.

Runs DeepGEMM 2.5.0 (the package vendored in the vLLM 0.26.0 wheel, whose ``_C`` loads on
torch 2.11) on mixed batches: ``fp8_paged_mqa_logits`` once with the schedule built from the
raw lengths and once with the schedule built from clamped lengths (through
``runtime_guard.get_paged_mqa_logits_metadata``), the logits kernel reading the raw lengths
both times, as vLLM's indexer does after the fix. Every row's valid region must be
bit-identical. The inputs follow DeepGEMM's paged layout: ``q`` (B, next_n, H, D) fp8,
a fused KV cache (blocks, block_kv, 1, D + 4) uint8 whose block holds block_kv * D fp8 values
followed by block_kv fp32 scales, ``weights`` (B * next_n, H) fp32, 2-D context lengths
(B, next_n) and an int32 block table (B, max_model_len / block_kv).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

from runtime_guard._sm90 import cases as C

NUM_HEADS = 64  # DeepSeek V3.2 / V4 indexer
HEAD_DIM = 128
MAX_MODEL_LEN = 16384
SHORT_MAX = 255  # one segment of SPLIT_KV 256
LONG_RANGE = (1000, 12000)

Row = dict[str, Any]


def semantics_batches() -> list[Row]:
    """Mixed batches (zero, short and long rows) with next_n 1 and 2, and an all-zero one."""
    return [
        {"id": "mixed B=64 next_n=1", "batch": 64, "next_n": 1, "mix": "mixed", "seed": 1},
        {"id": "mixed B=32 next_n=2", "batch": 32, "next_n": 2, "mix": "mixed", "seed": 2},
        {"id": "mixed B=50 next_n=1", "batch": 50, "next_n": 1, "mix": "mixed", "seed": 3},
        {"id": "all-zero B=64 next_n=1", "batch": 64, "next_n": 1, "mix": "all_zero", "seed": 4},
    ]


def import_deep_gemm(package_root: str) -> Any:
    """Import the prepared DeepGEMM 2.5.0 as ``deep_gemm`` (and make sure it is that one)."""
    if package_root not in sys.path:
        sys.path.insert(0, package_root)
    module = importlib.import_module("deep_gemm")
    if not Path(module.__file__).resolve().is_relative_to(Path(package_root).resolve()):
        raise RuntimeError(f"imported deep_gemm from {module.__file__}, not from {package_root}")
    return module


def row_lengths(batch: int, mix: str, generator: Any) -> list[int]:
    """Lengths of the last column: cycling zero / short / long rows, or all zero."""
    import torch

    if mix == "all_zero":
        return [0] * batch
    short = torch.randint(1, SHORT_MAX + 1, (batch,), generator=generator).tolist()
    long = torch.randint(*LONG_RANGE, (batch,), generator=generator).tolist()
    return [(0, short[i], long[i])[i % 3] for i in range(batch)]


def make_inputs(case: Row) -> Row:
    import torch

    generator = torch.Generator().manual_seed(case["seed"])
    batch, next_n = case["batch"], case["next_n"]
    last = row_lengths(batch, case["mix"], generator)
    # Speculative tokens see one token less context each, as vLLM's (B, next_n) lengths do.
    lens = [[max(value - (next_n - 1 - j), 0) for j in range(next_n)] for value in last]
    pages = [(value + C.BLOCK_KV - 1) // C.BLOCK_KV for value in last]
    num_blocks = sum(pages) + 1  # block 0 stays a valid filler for unused table entries
    block_table = torch.zeros(batch, MAX_MODEL_LEN // C.BLOCK_KV, dtype=torch.int32)
    physical = (torch.randperm(num_blocks - 1, generator=generator) + 1).tolist()
    for row, count in enumerate(pages):
        block_table[row, :count] = torch.tensor(physical[:count], dtype=torch.int32)
        physical = physical[count:]
    kv = torch.randn(num_blocks, C.BLOCK_KV, 1, HEAD_DIM, generator=generator)
    q = torch.randn(batch, next_n, NUM_HEADS, HEAD_DIM, generator=generator)
    weights = torch.randn(batch * next_n, NUM_HEADS, generator=generator)
    fused, kv_dequant = fp8_paged_cache(kv)
    q_fp8 = q.to(torch.float8_e4m3fn)
    cuda = {
        "q": q_fp8.cuda(),
        "kv": fused.cuda(),
        "weights": weights.cuda(),
        "lens": torch.tensor(lens, dtype=torch.int32).cuda(),
        "block_table": block_table.cuda(),
    }
    return {
        "lens": lens,
        "last": last,
        "cuda": cuda,
        "q_ref": q_fp8.float(),
        "kv_ref": kv_dequant,
        "weights_ref": weights,
        "block_table_ref": block_table,
    }


def fp8_paged_cache(kv: Any) -> tuple[Any, Any]:
    """DeepGEMM's fused fp8 cache of ``kv`` (blocks, block_kv, 1, D) and its dequantized value.

    Per token: scale = amax / 448, values = fp8(kv / scale); a block stores its block_kv * D
    fp8 bytes, then its block_kv fp32 scales.
    """
    import torch

    blocks, block_kv, _, dim = kv.shape
    scale = kv.abs().amax(dim=3, keepdim=True).clamp(min=1e-4) / 448.0
    values = (kv / scale).to(torch.float8_e4m3fn)
    fused = torch.empty(blocks, block_kv * (dim + 4), dtype=torch.uint8)
    fused[:, : block_kv * dim] = values.reshape(blocks, block_kv * dim).view(torch.uint8)
    fused[:, block_kv * dim :] = scale.reshape(blocks, block_kv).contiguous().view(torch.uint8)
    return fused.view(blocks, block_kv, 1, dim + 4), values.float() * scale


def reference_logits(inputs: Row) -> Any:
    """fp32 logits from the dequantized inputs: sum_h relu(q_h . k) * w_h, on valid positions."""
    import torch

    q, kv, weights, table = (
        inputs[k] for k in ("q_ref", "kv_ref", "weights_ref", "block_table_ref")
    )
    batch, next_n = q.shape[:2]
    out = torch.zeros(batch * next_n, MAX_MODEL_LEN)
    for row, length in enumerate(inputs["last"]):
        if length == 0:
            continue
        count = (length + C.BLOCK_KV - 1) // C.BLOCK_KV
        keys = kv[table[row, :count].long()].reshape(-1, kv.shape[-1])[:length]  # (L, D)
        scores = torch.relu(torch.einsum("nhd,ld->nhl", q[row], keys))
        scores = (scores * weights[row * next_n : (row + 1) * next_n, :, None]).sum(dim=1)
        out[row * next_n : (row + 1) * next_n, :length] = scores
    return out


def valid_mask(lens: list[list[int]]) -> Any:
    import torch

    per_token = torch.tensor([value for row in lens for value in row])
    return torch.arange(MAX_MODEL_LEN)[None, :] < per_token[:, None]


def similarity_gap(x: Any, y: Any) -> float:
    """DeepGEMM's ``calc_diff``: 1 - 2<x, y> / (|x|^2 + |y|^2); 0 when identical."""
    x, y = x.double(), y.double()
    denominator = (x * x + y * y).sum()
    return 0.0 if denominator == 0 else float(1 - 2 * (x * y).sum() / denominator)


def run_batch(ctx: Any, case: Row, options: Row) -> Row:
    """One batch: schedules from raw and clamped lengths, logits from both, compared."""
    import torch

    import runtime_guard
    from runtime_guard import fused

    deep_gemm = import_deep_gemm(options["deep_gemm_root"])
    num_sms = torch.cuda.get_device_properties(0).multi_processor_count
    inputs = make_inputs(case)
    t = inputs["cuda"]

    def logits(schedule: Any) -> Any:
        out = deep_gemm.fp8_paged_mqa_logits(
            t["q"],
            t["kv"],
            t["weights"],
            t["lens"],
            t["block_table"],
            schedule,
            MAX_MODEL_LEN,
            False,
        )
        torch.cuda.synchronize()
        return out.float().cpu()

    clamped_schedule = runtime_guard.get_paged_mqa_logits_metadata(t["lens"], C.BLOCK_KV, num_sms)
    clamped_logits = logits(clamped_schedule)
    # The schedule the fused guard gives (DeepGEMM 2.6.1's on clamped lengths), fed to 2.5.0's
    # logits kernel, which reads the same (q_atom_idx, kv_split_idx) table.
    fused_schedule = fused.schedule(t["lens"], num_sms)
    fused_logits = logits(fused_schedule)
    row: Row = {
        "status": "ok",
        "deep_gemm_version": deep_gemm.__version__,
        "row_kinds": _row_kinds(inputs["last"]),
        "num_sms": num_sms,
    }
    if options.get("clamped_only"):
        return row  # the compute-sanitizer run: only the clamped path is under test

    raw_schedule = deep_gemm.get_paged_mqa_logits_metadata(t["lens"], C.BLOCK_KV, num_sms)
    raw_logits = logits(raw_schedule)
    mask = valid_mask(inputs["lens"])
    row.update(
        {
            "valid_elements": int(mask.sum()),
            "schedules_differ": not torch.equal(raw_schedule, clamped_schedule),
            "logits_identical": torch.equal(raw_logits[mask], clamped_logits[mask]),
            "fused_logits_identical": torch.equal(raw_logits[mask], fused_logits[mask]),
            "fused_schedule_equals_clamped": torch.equal(fused_schedule, clamped_schedule),
            "gap_vs_fp32_reference": similarity_gap(
                clamped_logits[mask], reference_logits(inputs)[mask]
            ),
            "install_gives_clamped_schedule": _install_matches(
                deep_gemm, t["lens"], num_sms, clamped_schedule
            ),
        }
    )
    if ctx is not None and not C.fault_predicate(inputs["lens"]):
        sm90 = ctx.raw(t["lens"], C.BLOCK_KV, num_sms)
        row["raw_schedule_equals_2_6_1_kernel"] = torch.equal(sm90, raw_schedule)
    return row


def _install_matches(deep_gemm: Any, lens: Any, num_sms: int, clamped_schedule: Any) -> bool:
    """``runtime_guard.install()`` patches this DeepGEMM (its function then gives the clamped
    schedule) and ``uninstall()`` puts the original back."""
    import torch

    import runtime_guard

    runtime_guard.install()
    try:
        patched = deep_gemm.get_paged_mqa_logits_metadata(lens, C.BLOCK_KV, num_sms)
    finally:
        runtime_guard.uninstall()
    restored = not runtime_guard.is_guarded(deep_gemm.get_paged_mqa_logits_metadata)
    return restored and bool(torch.equal(patched, clamped_schedule))


def _row_kinds(last: list[int]) -> dict[str, int]:
    return {
        "zero": sum(1 for v in last if v == 0),
        "short": sum(1 for v in last if 0 < v <= SHORT_MAX),
        "long": sum(1 for v in last if v > SHORT_MAX),
    }
