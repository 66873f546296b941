"""Guards for the attention and logits kernels the zero-length probe measured as hazardous.

Each sanitizer is the one the probe showed correct for its kernel (docs/zero-length-probe.md):

- vLLM's Triton MLA ``decode_attention_fwd`` writes NaN into exactly the rows whose length is
  0 and -inf into their LSE; every other row is exact. The guard runs the kernel, then writes
  the empty row's identity (output 0) into those rows of the caller's ``o`` buffer, in place.
  It does not clamp the length to 1: a clamped row would attend to whatever its page 0 slot
  holds, which may be NaN, and would then still need masking.
- FlashMLA's dense ``flash_mla_with_kvcache`` (bf16) writes output 0 but LSE +inf for a row of
  length 0, and refuses B = 0 on the host. The guard writes -inf into those rows' LSE and, for
  an empty batch, returns empty outputs of the kernel's shapes and dtypes without calling it.
- DeepGEMM's ``fp8_paged_mqa_logits`` (and ``fp8_fp4_paged_mqa_logits``) refuse B = 0 with a
  launch error: the guard returns the empty ``(0, max_context_len)`` float32 logits instead.

Every decision is taken on shapes (host metadata), never on device values, and the masking is
one comparison and one ``masked_fill_`` on the device: no host synchronisation, nothing that
breaks CUDA-graph capture, and a captured replay keeps the caller's addresses. Non-zero rows
are never written by a guard, so they stay bit-identical to the kernel's. torch is imported
inside the functions only.
"""

from __future__ import annotations

import functools

from runtime_guard.clamp import _ORIGINAL_ATTR, _require_torch, is_guarded

TYPE_CHECKING = False  # not typing's: see clamp.py
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    import torch

    F = TypeVar("F", bound=Callable[..., Any])

_MISSING = object()


def fill_empty_rows_(
    tensor: torch.Tensor, lens: torch.Tensor, value: float, *, empty: torch.Tensor | None = None
) -> torch.Tensor:
    """Write ``value`` into every row ``i`` (first dimension) of ``tensor`` where
    ``lens[i] == 0``, in place; return ``tensor``.

    ``lens`` is 1-D with one length per row (``tensor.shape[0]`` of them), on the same device;
    ``empty``, when given, is ``lens == 0`` already computed (one comparison for several
    tensors). Rows with a non-zero length are not written. One comparison and one
    ``masked_fill_`` on the device: no host synchronisation, safe inside CUDA-graph capture.
    """
    if lens.dim() != 1 or lens.shape[0] != tensor.shape[0]:
        raise ValueError(
            f"lens must be 1-D with one length per row: got shape {tuple(lens.shape)} for "
            f"a tensor of shape {tuple(tensor.shape)}"
        )
    if empty is None:
        empty = lens == 0
    return tensor.masked_fill_(empty.view(lens.shape[0], *([1] * (tensor.dim() - 1))), value)


def _arg(args: tuple[Any, ...], kwargs: dict[str, Any], index: int, name: str) -> Any:
    if len(args) > index:
        return args[index]
    return kwargs.get(name, _MISSING)


def _wrap(fn: Any, guarded: Any) -> Any:
    functools.update_wrapper(guarded, fn)
    setattr(guarded, _ORIGINAL_ATTR, fn)
    return guarded


def guard_triton_mla_decode(fn: F) -> F:
    """Wrap vLLM's Triton ``decode_attention_fwd(q, k_buffer, v_buffer, o, lse,
    req_to_token, b_seq_len, attn_logits, num_kv_splits, sm_scale, ...)``.

    After the kernel, rows of ``o`` whose ``b_seq_len`` is 0 hold 0 (the kernel left NaN
    there; its LSE for them is already -inf, the empty row's identity, and is not touched).
    An empty batch returns without a launch: there is nothing to write. A call whose ``o`` or
    ``b_seq_len`` is not a tensor goes to the kernel unchanged.
    """
    if is_guarded(fn):
        return fn
    _require_torch()
    import torch

    def guarded(*args: Any, **kwargs: Any) -> Any:
        o = _arg(args, kwargs, 3, "o")
        lens = _arg(args, kwargs, 6, "b_seq_len")
        if not isinstance(o, torch.Tensor) or not isinstance(lens, torch.Tensor):
            return fn(*args, **kwargs)
        if o.shape[0] == 0:
            return None
        result = fn(*args, **kwargs)
        fill_empty_rows_(o, lens.reshape(-1), 0.0)
        return result

    return _wrap(fn, guarded)


def flash_mla_empty_outputs(
    q: torch.Tensor, head_dim_v: int, out: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """What FlashMLA's dense decode returns for a batch of 0 rows: ``out`` of shape
    ``(0, s_q, h_q, head_dim_v)`` in ``q``'s dtype (or the caller's ``out``) and the LSE of
    shape ``(0, h_q, s_q)`` in float32, on ``q``'s device, with no launch."""
    import torch

    _, s_q, h_q, _ = q.shape
    if out is None:
        out = torch.empty((0, s_q, h_q, head_dim_v), dtype=q.dtype, device=q.device)
    lse = torch.empty((0, h_q, s_q), dtype=torch.float32, device=q.device)
    return out, lse


def guard_flash_mla_with_kvcache(fn: F) -> F:
    """Wrap FlashMLA's ``flash_mla_with_kvcache(q, k_cache, block_table, cache_seqlens,
    head_dim_v, tile_scheduler_metadata, ...)`` for its dense bf16 path.

    After the kernel, rows whose ``cache_seqlens`` is 0 hold the empty row's identity: LSE
    -inf (the kernel wrote +inf) and output 0 (what the kernel wrote on fresh memory). An empty batch returns
    ``flash_mla_empty_outputs`` without calling the kernel (which refuses it). The sparse path
    (``indices`` given) and the FP8 KV cache (``is_fp8_kvcache=True``) were not measured safe
    to guard and go to the kernel unchanged.
    """
    if is_guarded(fn):
        return fn
    _require_torch()
    import torch

    def guarded(*args: Any, **kwargs: Any) -> Any:
        q = _arg(args, kwargs, 0, "q")
        lens = _arg(args, kwargs, 3, "cache_seqlens")
        fp8 = _arg(args, kwargs, 9, "is_fp8_kvcache")
        indices = _arg(args, kwargs, 10, "indices")
        if (
            not isinstance(q, torch.Tensor)
            or q.dim() != 4
            or not isinstance(lens, torch.Tensor)
            or fp8 not in (_MISSING, False)
            or indices not in (_MISSING, None)
        ):
            return fn(*args, **kwargs)
        if q.shape[0] == 0:
            head_dim_v = _arg(args, kwargs, 4, "head_dim_v")
            out = _arg(args, kwargs, 16, "out")
            if isinstance(head_dim_v, int) and out in (_MISSING, None):
                return flash_mla_empty_outputs(q, head_dim_v)
            return fn(*args, **kwargs)
        out, lse = fn(*args, **kwargs)
        lens = lens.reshape(-1)
        empty = lens == 0
        # The probe saw output 0 in these rows on fresh memory; writing it costs one fill and
        # does not depend on what the buffer held before (the caller's ``out=``, a replay).
        fill_empty_rows_(out, lens, 0.0, empty=empty)
        fill_empty_rows_(lse, lens, float("-inf"), empty=empty)
        return out, lse

    return _wrap(fn, guarded)


def paged_mqa_logits_empty(q: Any, max_context_len: int) -> torch.Tensor:
    """DeepGEMM's paged MQA logits for a batch of 0 rows: ``(0, max_context_len)`` float32 on
    ``q``'s device (``q`` a tensor, or the ``(values, scales)`` tuple of the FP8/FP4 entry)."""
    import torch

    values = q[0] if isinstance(q, tuple) else q
    return torch.empty((0, max_context_len), dtype=torch.float32, device=values.device)


def guard_paged_mqa_logits(fn: F) -> F:
    """Wrap DeepGEMM's ``fp8_paged_mqa_logits`` / ``fp8_fp4_paged_mqa_logits(q, kv_cache,
    weights, context_lens, block_table, schedule_meta, max_context_len, clean_logits)``.

    An empty batch (``q`` with 0 rows) returns ``paged_mqa_logits_empty`` without a launch
    (DeepGEMM 2.5.0 fails it with CUDA_ERROR_INVALID_VALUE). Every other call goes to DeepGEMM
    unchanged: its zero-length rows are handled by the clamped schedule (``guard``).
    """
    if is_guarded(fn):
        return fn
    _require_torch()
    import torch

    def guarded(*args: Any, **kwargs: Any) -> Any:
        q = _arg(args, kwargs, 0, "q")
        values = q[0] if isinstance(q, tuple) and q else q
        if isinstance(values, torch.Tensor) and values.dim() >= 1 and values.shape[0] == 0:
            length = _arg(args, kwargs, 6, "max_context_len")
            if length is _MISSING:
                length = kwargs.get("max_model_len", _MISSING)
            if isinstance(length, int) and not isinstance(length, bool) and length >= 0:
                return paged_mqa_logits_empty(q, length)
        return fn(*args, **kwargs)

    return _wrap(fn, guarded)
