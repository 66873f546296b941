"""The GPU side of each declared kernel: load it, make inputs for a case, run, check.

Each class takes the prepared pieces (``Env``) and answers ``run(case) -> Row``. A CUDA
error propagates (the worker turns it into a fault); a host-side refusal (RuntimeError
with the kernel's message) is a "rejected" outcome.
"""

from __future__ import annotations

import importlib
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from probe.cases import Case

Row = dict[str, Any]

HEADS = 16
D_QK = 576
D_V = 512
PAGE = 64
TOLERANCE = 2e-2
LOGITS_GAP_LIMIT = 1e-3


@dataclass
class Env:
    """Where the prepared pieces and the built extensions are."""

    standins: Path  # the stand-in vllm tree (probe.standins.build)
    deep_gemm_root: Path  # .sm90/dg_2_5_0
    ext_261: Path | None
    ext_281: Path | None


def nonfinite_rows(tensor: Any) -> dict[str, list[int]]:
    """Rows (first dimension) holding NaN, +inf or -inf."""
    import torch

    if not tensor.shape[0]:
        return {"nan": [], "+inf": [], "-inf": []}
    flat = tensor.float().reshape(tensor.shape[0], -1)
    return {
        "nan": torch.isnan(flat).any(1).nonzero().flatten().tolist(),
        "+inf": torch.isposinf(flat).any(1).nonzero().flatten().tolist(),
        "-inf": torch.isneginf(flat).any(1).nonzero().flatten().tolist(),
    }


def _sync() -> None:
    import torch

    torch.cuda.synchronize()


# -- attention kernels ------------------------------------------------------------------------


class _Attention:
    """Shared by the three MLA decode kernels: paged inputs, a run, and the comparison."""

    def __init__(self, env: Env) -> None:
        import torch

        self.torch = torch
        if str(env.standins) not in sys.path:
            sys.path.insert(0, str(env.standins))

    def make(self, lens: tuple[int, ...], seed: int = 0) -> Row:
        torch = self.torch
        gen = torch.Generator().manual_seed(seed)
        batch = len(lens)
        pages = [max(1, math.ceil(n / PAGE)) for n in lens]
        width = max(pages, default=1)
        total = sum(pages) + 1
        table = torch.zeros(batch, width, dtype=torch.int32)
        physical = (torch.randperm(total - 1, generator=gen) + 1).tolist()
        for row, count in enumerate(pages):
            table[row, :count] = torch.tensor(physical[:count], dtype=torch.int32)
            physical = physical[count:]
        cache = torch.randn(total, PAGE, D_QK, generator=gen) * 0.5
        q = torch.randn(batch, HEADS, D_QK, generator=gen) * 0.5
        return {
            "q": q.to(torch.bfloat16).cuda(),
            "cache": cache.to(torch.bfloat16).cuda(),
            "table": table.cuda(),
            "lens": torch.tensor(lens, dtype=torch.int32).cuda(),
        }

    def call(self, inputs: Row) -> tuple[Any, Any]:
        raise NotImplementedError

    def run(self, case: Case) -> Row:
        inputs = self.make(case.lens)
        out, lse = self.call(inputs)
        _sync()
        row: Row = {
            "out_shape": list(out.shape),
            "out_nonfinite": nonfinite_rows(out),
            "lse_nonfinite": nonfinite_rows(lse),
        }
        zero = case.zero_rows
        if zero:
            zero_out = out[zero].float()
            row["zero_rows_out"] = (
                "nan"
                if bool(zero_out.isnan().any())
                else "zero"
                if bool((zero_out == 0).all())
                else "other"
            )
        keep = [i for i, n in enumerate(case.lens) if n > 0]
        if zero and keep:
            sub = {k: v[keep] if k != "cache" else v for k, v in inputs.items()}
            ref_out, _ = self.call(sub)
            _sync()
            diff = (out[keep].float() - ref_out.float()).abs()
            per_row = diff.reshape(len(keep), -1).amax(1)
            row["max_diff_vs_reference"] = float(per_row.max())
            row["wrong_rows"] = [
                keep[i] for i in (per_row > TOLERANCE).nonzero().flatten().tolist()
            ]
        return row


def _num_kv_splits(lens: tuple[int, ...], sm_count: int) -> int:
    """vLLM 0.26.0's _compute_num_kv_splits(max_seq_len, sm_count)."""
    ideal = 1 << (max(1, max(lens, default=0) // 512) - 1).bit_length()
    return min(ideal, sm_count * 2)


class TritonMlaDecode(_Attention):
    def __init__(self, env: Env) -> None:
        super().__init__(env)
        module = importlib.import_module("vllm.v1.attention.ops.triton_decode_attention")
        self.fwd = module.decode_attention_fwd
        self.sm_count = self.torch.cuda.get_device_properties(0).multi_processor_count

    def call(self, inputs: Row) -> tuple[Any, Any]:
        torch = self.torch
        q, lens = inputs["q"], inputs["lens"]
        batch = q.shape[0]
        splits = _num_kv_splits(tuple(lens.tolist()), self.sm_count)
        o = torch.zeros(batch, HEADS, D_V, dtype=q.dtype, device=q.device)
        lse = torch.zeros(batch, HEADS, dtype=q.dtype, device=q.device)
        logits = torch.empty(batch, HEADS, splits, D_V + 1, dtype=torch.float32, device=q.device)
        cache = inputs["cache"].unsqueeze(2)  # (pages, PAGE, 1, 576), as forward_mqa does
        self.fwd(
            q,
            cache,
            cache[..., :D_V],
            o,
            lse,
            inputs["table"],
            lens,
            logits,
            splits,
            D_QK**-0.5,
            PAGE,
            is_mla=True,
        )
        return o, lse


class FlashMlaDense(_Attention):
    def __init__(self, env: Env) -> None:
        super().__init__(env)
        module = importlib.import_module("vllm.third_party.flashmla.flash_mla_interface")
        self.module = module

    def call(self, inputs: Row) -> tuple[Any, Any]:
        meta, _ = self.module.get_mla_metadata()
        q = inputs["q"].unsqueeze(1)
        cache = inputs["cache"].unsqueeze(2)
        return self.module.flash_mla_with_kvcache(
            q, cache, inputs["table"], inputs["lens"], D_V, meta, causal=True
        )


class FlashMlaFp8(_Attention):
    def __init__(self, env: Env) -> None:
        super().__init__(env)
        importlib.import_module("vllm._flashmla_extension_C")
        self.ops = self.torch.ops._flashmla_extension_C

    def call(self, inputs: Row) -> tuple[Any, Any]:
        torch = self.torch
        fp8 = torch.float8_e4m3fn
        q = inputs["q"].unsqueeze(1).to(fp8)
        cache = inputs["cache"].unsqueeze(2).to(fp8)
        lens = inputs["lens"]
        tiles, splits = self.ops.get_mla_decoding_metadata_dense_fp8(lens, HEADS, 1)
        one = torch.ones(1, dtype=torch.float32, device=lens.device)
        out, lse = self.ops.fwd_kvcache_mla_fp8(
            q, cache, D_V, lens, inputs["table"], D_QK**-0.5, True, tiles, splits, one, one
        )
        return out, lse


# -- DeepGEMM --------------------------------------------------------------------------------


def context_lens(case: Case) -> Any:
    """(B, next_n) int32 on the GPU: row i is (len_i - next_n + 1, ..., len_i), floored at 0."""
    import torch

    rows = [[max(n - (case.next_n - 1 - j), 0) for j in range(case.next_n)] for n in case.lens]
    return torch.tensor(rows, dtype=torch.int32).reshape(case.batch, case.next_n).cuda()


class _Scheduler:
    guarded_model = False

    def __init__(self, env: Env) -> None:
        import torch

        self.torch = torch
        self.num_sms = torch.cuda.get_device_properties(0).multi_processor_count
        self.fn = self.load(env)

    def load(self, env: Env) -> Any:
        raise NotImplementedError

    def expected(self, case: Case, modelled: list[tuple[int, int]]) -> list[tuple[int, int]]:
        return modelled

    def run(self, case: Case) -> Row:
        from runtime_guard import reference
        from runtime_guard._sm90.cases import schedule_digest

        lens = context_lens(case)
        schedule = self.fn(lens, 64, self.num_sms)
        _sync()
        got = [tuple(pair) for pair in schedule.tolist()]
        model = reference.schedule(
            lens.cpu().tolist() if case.batch else [], self.num_sms, guarded=self.guarded_model
        )
        want = self.expected(case, [tuple(pair) for pair in model.schedule])
        return {
            "out_shape": list(schedule.shape),
            "digest": schedule_digest(got),
            "model_faults": model.faults,
            "matches_model": got == want,
        }


def _import_deep_gemm(root: Path) -> Any:
    from runtime_guard._sm90.semantics import import_deep_gemm

    return import_deep_gemm(str(root))


class DeepGemm250Metadata(_Scheduler):
    def load(self, env: Env) -> Any:
        return _import_deep_gemm(env.deep_gemm_root).get_paged_mqa_logits_metadata

    def expected(self, case: Case, modelled: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """2.5.0's header (scheduler/paged_mqa_logits.cuh) clamps the search result to
        ``min(lo, B - 1)``: where every length read is 0 (the only inputs where the search
        ends at B), each SM's row is ``((B - 1) * atoms, 0)`` instead of 2.6.1's read past
        the buffer. Everywhere else it is 2.6.1's schedule."""
        if case.batch == 0 or any(case.lens):
            return modelled
        atoms = (case.next_n + 1) // 2 if case.next_n >= 2 else 1
        return [((case.batch - 1) * atoms, 0)] * self.num_sms + [modelled[-1]]


def _load_ext(path: Path | None, what: str) -> Any:
    from runtime_guard._sm90.build import load_built

    if path is None:
        raise RuntimeError(f"the {what} extension was not built")
    return load_built(path)


class Scheduler261(_Scheduler):
    def load(self, env: Env) -> Any:
        return _load_ext(env.ext_261, "DeepGEMM 2.6.1").get_paged_mqa_logits_metadata


class Scheduler281(_Scheduler):
    guarded_model = True

    def load(self, env: Env) -> Any:
        return _load_ext(env.ext_281, "DeepGEMM 2.8.1").get_paged_mqa_logits_metadata


class DeepGemm250Logits:
    def __init__(self, env: Env) -> None:
        import torch

        self.torch = torch
        self.deep_gemm = _import_deep_gemm(env.deep_gemm_root)
        self.num_sms = torch.cuda.get_device_properties(0).multi_processor_count

    def run(self, case: Case) -> Row:
        import runtime_guard
        from runtime_guard._sm90 import semantics as S

        torch = self.torch
        gen = torch.Generator().manual_seed(7)
        batch, next_n = case.batch, case.next_n
        lens = context_lens(case)
        pages = [math.ceil(n / 64) for n in case.lens]
        blocks = sum(pages) + 1
        table = torch.zeros(batch, S.MAX_MODEL_LEN // 64, dtype=torch.int32)
        physical = (torch.randperm(blocks - 1, generator=gen) + 1).tolist()
        for row, count in enumerate(pages):
            table[row, :count] = torch.tensor(physical[:count], dtype=torch.int32)
            physical = physical[count:]
        kv = torch.randn(blocks, 64, 1, S.HEAD_DIM, generator=gen)
        q = torch.randn(batch, next_n, S.NUM_HEADS, S.HEAD_DIM, generator=gen)
        weights = torch.randn(batch * next_n, S.NUM_HEADS, generator=gen)
        fused, kv_ref = S.fp8_paged_cache(kv)
        q_fp8 = q.to(torch.float8_e4m3fn)
        schedule = runtime_guard.get_paged_mqa_logits_metadata(lens, 64, self.num_sms)
        logits = self.deep_gemm.fp8_paged_mqa_logits(
            q_fp8.cuda(),
            fused.cuda(),
            weights.cuda(),
            lens,
            table.cuda(),
            schedule,
            S.MAX_MODEL_LEN,
            False,
        )
        _sync()
        logits = logits.float().cpu()
        raw = lens.cpu().tolist()
        mask = S.valid_mask(raw) if batch else torch.zeros(0, S.MAX_MODEL_LEN, dtype=torch.bool)
        valid = torch.where(mask, logits, torch.zeros_like(logits))
        row: Row = {"out_shape": list(logits.shape), "out_nonfinite": nonfinite_rows(valid)}
        if int(mask.sum()):
            reference = S.reference_logits(
                {
                    "q_ref": q_fp8.float(),
                    "kv_ref": kv_ref,
                    "weights_ref": weights,
                    "block_table_ref": table,
                    "last": list(case.lens),
                }
            )
            gap = S.similarity_gap(logits[mask], reference[mask])
            row["gap_vs_fp32_reference"] = gap
            row["wrong_rows"] = [] if gap < LOGITS_GAP_LIMIT else ["all"]
        return row
