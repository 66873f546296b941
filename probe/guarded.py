"""The guarded variants of the hazardous kernels: the same kernels and inputs as
``probe.impl``, called through the guard ``runtime_guard.install()`` puts in front of them.

Each ``run(case)`` checks, on the GPU, what issue #15 asks of a guard:

- ``zero_rows_identity``: rows of length 0 hold the empty row's identity (output 0, LSE -inf);
- ``nonzero_rows_identical``: every other row is bit-identical to the unguarded kernel's on
  the same inputs (``torch.equal``);
- ``empty_like_kernel``: for B = 0, the outputs have the kernel's dtypes and trailing shape
  (from an unguarded call on one row) with no launch;
- ``graph_identical``: the guarded call captured in a CUDA graph, its outputs overwritten
  with NaN, then replayed, gives exactly the eager guarded outputs.

Each row also records ``guard_path``, the path the guard took (``runtime_guard.guard_path``):
for Triton MLA ``"stage2"`` is the guard's own second stage, ``"mask"`` the fallback.

A failed check is listed in ``wrong_rows`` (the probe's "wrong" outcome); NaN/Inf in the
guarded outputs is the probe's "nan_inf" outcome, a fault or memcheck error its "fault".
"""

from __future__ import annotations

from typing import Any

from probe.cases import Case
from probe.impl import (
    D_QK,
    D_V,
    HEADS,
    PAGE,
    Env,
    FlashMlaDense,
    Row,
    TritonMlaDecode,
    _import_deep_gemm,
    _num_kv_splits,
    _sync,
    context_lens,
    nonfinite_rows,
)


def graph_replay(torch: Any, call: Any, outputs: Any) -> Any:
    """Capture ``call()`` (after one warm-up on a side stream) in a CUDA graph, overwrite
    what it returns or ``outputs`` with NaN, replay, and return the tensors."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        call()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = call()
    tensors = outputs if outputs is not None else captured
    for tensor in tensors:
        if tensor.is_floating_point():
            tensor.fill_(float("nan"))
    graph.replay()
    _sync()
    return tensors, graph


def _finish(row: Row, checks: dict[str, bool]) -> Row:
    row["checks"] = checks
    row["wrong_rows"] = [name for name, ok in checks.items() if not ok]
    return row


class _GuardedAttention:
    """Shared by the guarded Triton MLA and FlashMLA variants."""

    torch: Any

    def guard(self) -> Any:
        """The guarded function under test."""
        raise NotImplementedError

    def plain(self, inputs: Row) -> tuple[Any, Any]:
        raise NotImplementedError

    def guarded(self, inputs: Row) -> tuple[Any, Any]:
        raise NotImplementedError

    def graph(self, inputs: Row) -> tuple[Any, Any]:
        raise NotImplementedError

    def unguarded_on_nan_buffer(self, inputs: Row, zero: list[int]) -> str | None:
        """What the unguarded kernel leaves in the zero rows of an output buffer that held
        NaN (``zero``/``nan``/``other``), where the kernel takes one; informational."""
        return None

    def run(self, case: Case) -> Row:
        from runtime_guard import guard_path

        torch = self.torch
        inputs = self.make(case.lens)  # type: ignore[attr-defined]
        out, lse = self.guarded(inputs)
        _sync()
        row: Row = {
            "guard_path": guard_path(self.guard()),
            "out_shape": list(out.shape),
            "out_nonfinite": nonfinite_rows(out),
            "lse_nonfinite": nonfinite_rows(lse),
        }
        checks: dict[str, bool] = {}
        zero = case.zero_rows
        keep = [i for i, n in enumerate(case.lens) if n > 0]
        if zero:
            checks["zero_rows_identity"] = bool((out[zero] == 0).all()) and bool(
                torch.isneginf(lse[zero]).all()
            )
        if case.batch:
            plain_out, plain_lse = self.plain(inputs)
            _sync()
            checks["nonzero_rows_identical"] = torch.equal(
                out[keep], plain_out[keep]
            ) and torch.equal(lse[keep], plain_lse[keep])
        else:
            one_out, one_lse = self.plain(self.make((5,)))  # type: ignore[attr-defined]
            _sync()
            checks["empty_like_kernel"] = (
                out.shape[0] == 0
                and lse.shape[0] == 0
                and out.dtype == one_out.dtype
                and lse.dtype == one_lse.dtype
                and out.shape[1:] == one_out.shape[1:]
                and lse.shape[1:] == one_lse.shape[1:]
                and out.device == one_out.device
            )
        extra = self.unguarded_on_nan_buffer(inputs, zero)
        if extra is not None:
            row["unguarded_zero_rows_out_on_nan_buffer"] = extra
        g_out, g_lse = self.graph(inputs)
        checks["graph_identical"] = torch.equal(g_out, out) and torch.equal(g_lse, lse)
        return _finish(row, checks)


class GuardedTritonMla(_GuardedAttention, TritonMlaDecode):
    def __init__(self, env: Env) -> None:
        super().__init__(env)
        from runtime_guard.attention import guard_triton_mla_decode

        self.guarded_fwd = guard_triton_mla_decode(self.fwd)

    def guard(self) -> Any:
        return self.guarded_fwd

    def _buffers(self, inputs: Row) -> Row:
        torch = self.torch
        q = inputs["q"]
        batch = q.shape[0]
        splits = _num_kv_splits(tuple(inputs["lens"].tolist()), self.sm_count)
        return {
            "o": torch.zeros(batch, HEADS, D_V, dtype=q.dtype, device=q.device),
            "lse": torch.zeros(batch, HEADS, dtype=q.dtype, device=q.device),
            "logits": torch.empty(
                batch, HEADS, splits, D_V + 1, dtype=torch.float32, device=q.device
            ),
            "splits": splits,
            "scale": torch.ones((), dtype=torch.float32, device=q.device),
        }

    def _launch(self, fn: Any, inputs: Row, b: Row) -> tuple[Any, Any]:
        cache = inputs["cache"].unsqueeze(2)
        fn(
            inputs["q"],
            cache,
            cache[..., :D_V],
            b["o"],
            b["lse"],
            inputs["table"],
            inputs["lens"],
            b["logits"],
            b["splits"],
            D_QK**-0.5,
            PAGE,
            k_scale=b["scale"],
            v_scale=b["scale"],
            is_mla=True,
        )
        return b["o"], b["lse"]

    def plain(self, inputs: Row) -> tuple[Any, Any]:
        return self._launch(self.fwd, inputs, self._buffers(inputs))

    def guarded(self, inputs: Row) -> tuple[Any, Any]:
        return self._launch(self.guarded_fwd, inputs, self._buffers(inputs))

    def graph(self, inputs: Row) -> tuple[Any, Any]:
        b = self._buffers(inputs)
        (out, lse), self._graph = graph_replay(
            self.torch, lambda: self._launch(self.guarded_fwd, inputs, b), (b["o"], b["lse"])
        )
        return out, lse


class GuardedFlashMla(_GuardedAttention, FlashMlaDense):
    def __init__(self, env: Env) -> None:
        super().__init__(env)
        from runtime_guard.attention import guard_flash_mla_with_kvcache

        self.guarded_fn = guard_flash_mla_with_kvcache(self.module.flash_mla_with_kvcache)

    def guard(self) -> Any:
        return self.guarded_fn

    def _launch(self, fn: Any, inputs: Row, meta: Any) -> tuple[Any, Any]:
        q = inputs["q"].unsqueeze(1)
        cache = inputs["cache"].unsqueeze(2)
        return fn(q, cache, inputs["table"], inputs["lens"], D_V, meta, causal=True)

    def plain(self, inputs: Row) -> tuple[Any, Any]:
        return self._launch(self.module.flash_mla_with_kvcache, inputs, self.meta())

    def guarded(self, inputs: Row) -> tuple[Any, Any]:
        return self._launch(self.guarded_fn, inputs, self.meta())

    def meta(self) -> Any:
        return self.module.get_mla_metadata()[0]

    def unguarded_on_nan_buffer(self, inputs: Row, zero: list[int]) -> str | None:
        if not zero:
            return None
        torch = self.torch
        q = inputs["q"].unsqueeze(1)
        buffer = torch.full(
            (q.shape[0], 1, HEADS, D_V), float("nan"), dtype=q.dtype, device=q.device
        )
        out, _ = self.module.flash_mla_with_kvcache(
            q, inputs["cache"].unsqueeze(2), inputs["table"], inputs["lens"], D_V, self.meta(),
            causal=True, out=buffer,
        )  # fmt: skip
        _sync()
        rows = out[zero].float()
        return "nan" if bool(rows.isnan().any()) else "zero" if bool((rows == 0).all()) else "other"

    def graph(self, inputs: Row) -> tuple[Any, Any]:
        meta = self.meta()
        (out, lse), self._graph = graph_replay(
            self.torch, lambda: self._launch(self.guarded_fn, inputs, meta), None
        )
        return out, lse


class GuardedDeepGemmLogits:
    """DeepGEMM 2.5.0 ``fp8_paged_mqa_logits`` behind its empty-batch guard, its schedule from
    the metadata guard, both captured together in the graph check."""

    def __init__(self, env: Env) -> None:
        import torch

        from runtime_guard.attention import guard_paged_mqa_logits

        self.torch = torch
        self.deep_gemm = _import_deep_gemm(env.deep_gemm_root)
        self.num_sms = torch.cuda.get_device_properties(0).multi_processor_count
        self.fn = self.deep_gemm.fp8_paged_mqa_logits
        self.guarded_fn = guard_paged_mqa_logits(self.fn)

    def make(self, case: Case) -> Row:
        import math

        from runtime_guard._sm90 import semantics as S

        torch = self.torch
        gen = torch.Generator().manual_seed(7)
        batch, next_n = case.batch, case.next_n
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
        fused, _ = S.fp8_paged_cache(kv)
        lens = context_lens(case)
        mask = (
            S.valid_mask(lens.cpu().tolist())
            if batch
            else torch.zeros(0, S.MAX_MODEL_LEN, dtype=torch.bool)
        )
        return {
            "q": q.to(torch.float8_e4m3fn).cuda(),
            "kv": fused.cuda(),
            "weights": weights.cuda(),
            "lens": lens,
            "table": table.cuda(),
            "mask": mask.cuda(),
            "max_len": S.MAX_MODEL_LEN,
        }

    def _launch(self, fn: Any, x: Row) -> Any:
        import runtime_guard

        schedule = runtime_guard.get_paged_mqa_logits_metadata(x["lens"], 64, self.num_sms)
        return fn(
            x["q"], x["kv"], x["weights"], x["lens"], x["table"], schedule, x["max_len"], False
        )

    def run(self, case: Case) -> Row:
        import runtime_guard

        torch = self.torch
        x = self.make(case)
        logits = self._launch(self.guarded_fn, x)
        _sync()
        valid = torch.where(x["mask"], logits, torch.zeros_like(logits))
        row: Row = {
            "guard_path": runtime_guard.guard_path(self.guarded_fn),
            "out_shape": list(logits.shape),
            "out_nonfinite": nonfinite_rows(valid),
        }
        checks: dict[str, bool] = {}
        if case.batch:
            plain = self._launch(self.fn, x)
            _sync()
            checks["nonzero_rows_identical"] = torch.equal(logits[x["mask"]], plain[x["mask"]])
        else:
            from probe.cases import Case as _Case

            one = self._launch(self.fn, self.make(_Case("one", (100,), case.next_n)))
            _sync()
            checks["empty_like_kernel"] = (
                logits.shape == (0, one.shape[1])
                and logits.dtype == one.dtype
                and logits.device == one.device
            )
        (g_logits,), self._graph = graph_replay(
            torch, lambda: (self._launch(self.guarded_fn, x),), None
        )
        checks["graph_identical"] = g_logits.shape == logits.shape and torch.equal(
            g_logits[x["mask"]], logits[x["mask"]]
        )
        return _finish(row, checks)
