"""Guards for the attention and logits kernels the zero-length probe measured as hazardous.

Each sanitizer is the one the probe showed correct for its kernel (docs/zero-length-probe.md):

- vLLM's Triton MLA ``decode_attention_fwd`` writes NaN into exactly the rows whose length is
  0 and -inf into their LSE; every other row is exact. The NaN is its second stage's division
  of an empty sum by 0. Where vLLM's module is the one verified on the GPU
  (``triton_decode_structure``), the guard runs vLLM's first stage and then, instead of
  vLLM's second stage, its own (``runtime_guard.empty_rows.merge_splits``), which writes
  output 0 and LSE -inf into the rows of length 0 and the same bits as vLLM's everywhere
  else: the guarded call launches as many kernels as the unguarded one, so a CUDA graph gets
  no extra node (path ``"stage2"``). Elsewhere it runs the kernel, then writes 0 into those
  rows of the caller's ``o``, in place (path ``"mask"``: a comparison and a ``masked_fill_``).
  It never clamps the length to 1: a clamped row would attend to whatever its page 0 slot
  holds, which may be NaN, and would then still need masking.
- FlashMLA's dense ``flash_mla_with_kvcache`` (bf16) writes output 0 but LSE +inf for a row of
  length 0, and refuses B = 0 on the host. The guard writes -inf into those rows' LSE (path
  ``"lse-kernel"``: one Triton kernel while a CUDA graph is captured, one graph node, and a
  comparison and a ``masked_fill_`` eagerly, which launch sooner (the kernel runs eagerly
  once per LSE layout, so a capture never compiles it); path ``"mask"``, the latter
  always, where Triton cannot be imported or the tensors are not on a GPU) and, for an empty
  batch, returns empty outputs of the kernel's shapes and dtypes without calling it. The
  output needs nothing: the kernel writes 0 there itself (``FLASHMLA_ZERO_ROWS_MEASURED``).
- DeepGEMM's ``fp8_paged_mqa_logits`` (and ``fp8_fp4_paged_mqa_logits``) refuse B = 0 with a
  launch error: the guard returns the empty ``(0, max_context_len)`` logits instead, in the
  ``logits_dtype`` the caller asked sgl-deep-gemm's FP8/FP4 entry for (float32 otherwise).

Every decision is taken on shapes (host metadata), never on device values, and whatever a
guard writes is decided per row on the device: no host synchronisation, nothing that breaks
CUDA-graph capture, and a captured replay keeps the caller's addresses. Non-zero rows are
never written by a mask, and the own second stage computes them as vLLM's does, so they stay
bit-identical to the kernel's. Each guard logs at INFO which path it takes, and
``runtime_guard.guard_path(guard)`` says it. torch is imported inside the functions only,
Triton only by ``runtime_guard.empty_rows``, when a guard needs it.
"""

from __future__ import annotations

import functools

from runtime_guard.clamp import _ORIGINAL_ATTR, _PATH_ATTR, _require_torch, is_guarded, log

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


def _wrap(fn: Any, guarded: Any, path: str) -> Any:
    functools.update_wrapper(guarded, fn)
    setattr(guarded, _ORIGINAL_ATTR, fn)
    setattr(guarded, _PATH_ATTR, path)
    return guarded


def _empty_rows_kernels() -> tuple[Any, str]:
    """``runtime_guard.empty_rows`` (which imports Triton), or None and why not."""
    try:
        import importlib

        return importlib.import_module("runtime_guard.empty_rows"), ""
    except Exception as error:  # noqa: BLE001 - ImportError, or a Triton broken on import
        return None, f"Triton cannot be imported ({type(error).__name__}: {error})"


# -- vLLM's Triton MLA decode -------------------------------------------------------------------

TRITON_DECODE_REPLACED = (
    "decode_attention_fwd",
    "decode_attention_fwd_normal",
    "decode_attention_fwd_grouped",
    "_decode_softmax_reducev_fwd",
    "_fwd_kernel_stage2",
)
"""What the ``"stage2"`` path stands in for, in vLLM's ``triton_decode_attention`` module: the
entry point and its two dispatchers (whose choice of first stage the guard repeats) and the
second stage (which the guard replaces). Their source must be the verified one."""

TRITON_DECODE_STAGE1 = ("_decode_att_m_fwd", "_decode_grouped_att_m_fwd")
"""vLLM's first-stage launchers, which the guard calls as vLLM's dispatchers do."""

VERIFIED_TRITON_DECODE = {
    "1c96df226e081af63f226f7ab16dc4c86c67720e29439ba8c1c70513e02fd246": "vLLM 0.26.0",
}
"""sha256 of ``triton_decode_source(TRITON_DECODE_REPLACED)`` for the modules whose second
stage the guard's own was checked against on an H200 (docs/zero-length-probe.md,
``triton_mla_decode_guarded``: every non-zero row ``torch.equal`` to vLLM's). vLLM 0.27.1 and
0.28.0 ship the same file as 0.26.0; 0.33.0 changed the second stage (64-bit row offsets)
and gets the mask."""


def triton_decode_source(namespace: dict[str, Any]) -> str:
    """The source text of ``TRITON_DECODE_REPLACED`` in ``namespace`` (a module's globals),
    each part headed by its name; raises LookupError naming a part that is missing and
    OSError where a part's source cannot be read."""
    import inspect

    parts = []
    for name in TRITON_DECODE_REPLACED:
        obj = namespace.get(name)
        if obj is None:
            raise LookupError(f"the module has no {name}")
        function = getattr(obj, "fn", obj)  # a Triton kernel keeps its Python function in .fn
        try:
            parts.append(f"# {name}\n{inspect.getsource(function)}")
        except TypeError as error:
            raise OSError(f"{name} has no readable source ({error})") from error
    return "".join(parts)


def triton_decode_structure(fn: Any) -> tuple[dict[str, Any] | None, str]:
    """Whether ``fn`` (``decode_attention_fwd``) comes from a vLLM Triton decode module whose
    structure is the verified one: ``(the first-stage launchers by name, "")`` if so, else
    ``(None, why not)``. Decided from what the module exposes: the parts of
    ``TRITON_DECODE_REPLACED`` with the verified source (``VERIFIED_TRITON_DECODE``), the
    launchers of ``TRITON_DECODE_STAGE1``, and ``is_hip_`` False (a CUDA build)."""
    import hashlib

    namespace = getattr(fn, "__globals__", None)
    if not isinstance(namespace, dict):
        return None, "not a Python function, so its module cannot be read"
    if namespace.get("decode_attention_fwd") is not fn:
        return None, "its module's decode_attention_fwd is another object"
    try:
        source = triton_decode_source(namespace)
    except (LookupError, OSError) as error:
        return None, str(error)
    digest = hashlib.sha256(source.encode()).hexdigest()
    if digest not in VERIFIED_TRITON_DECODE:
        return None, f"its second stage is not the verified one (sha256 {digest[:16]}...)"
    if namespace.get("is_hip_") is not False:
        return None, "its module is not a CUDA build (is_hip_ is not False)"
    launchers = {name: namespace.get(name) for name in TRITON_DECODE_STAGE1}
    missing = [name for name, launcher in launchers.items() if not callable(launcher)]
    if missing:
        return None, f"the module has no {', '.join(missing)}"
    return launchers, ""


def guard_triton_mla_decode(fn: F) -> F:
    """Wrap vLLM's Triton ``decode_attention_fwd(q, k_buffer, v_buffer, o, lse,
    req_to_token, b_seq_len, attn_logits, num_kv_splits, sm_scale, ...)``.

    Rows of ``o`` whose ``b_seq_len`` is 0 end up 0 and their LSE -inf (the empty row's
    identity); every other row and LSE is what the kernel writes. Where ``fn``'s module is
    the verified one (``triton_decode_structure``) the guard calls vLLM's first stage, then
    its own second stage (path ``"stage2"``, no extra kernel); elsewhere the kernel, then a
    mask of ``o`` (path ``"mask"``). An empty batch returns without a launch: there is
    nothing to write. A call whose tensors are not tensors goes to the kernel unchanged.
    """
    if is_guarded(fn):
        return fn
    _require_torch()
    launchers, why = triton_decode_structure(fn)
    kernels = None
    if launchers is not None:
        kernels, why = _empty_rows_kernels()
    where = f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__name__', '?')}"
    if launchers is None or kernels is None:
        log(
            "info",
            "runtime_guard: %s: masking the rows of length 0 after the kernel (%s)",
            where,
            why,
        )
        return _mask_triton_mla_decode(fn)
    log(
        "info",
        "runtime_guard: %s: vLLM's first stage, then the guard's own second stage, which "
        "writes the empty row's identity (no extra kernel)",
        where,
    )
    return _stage2_triton_mla_decode(fn, launchers, kernels.merge_splits)


def _mask_triton_mla_decode(fn: F) -> F:
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

    return _wrap(fn, guarded, "mask")


def _stage2_triton_mla_decode(fn: F, launchers: dict[str, Any], merge_splits: Any) -> F:
    """The ``"stage2"`` guard: ``fn``'s signature (checked by ``triton_decode_structure``),
    vLLM's dispatch to its first stage, the guard's second stage."""
    import torch

    normal, grouped = (launchers[name] for name in TRITON_DECODE_STAGE1)

    def guarded(
        q: Any,
        k_buffer: Any,
        v_buffer: Any,
        o: Any,
        lse: Any,
        req_to_token: Any,
        b_seq_len: Any,
        attn_logits: Any,
        num_kv_splits: Any,
        sm_scale: Any,
        page_size: Any = 1,
        logit_cap: Any = 0.0,
        k_scale: Any = None,
        v_scale: Any = None,
        is_mla: Any = False,
    ) -> Any:
        tensors = (q, v_buffer, o, lse, b_seq_len, attn_logits)
        if not all(isinstance(t, torch.Tensor) for t in tensors) or (
            o.shape[0] and num_kv_splits != attn_logits.shape[2]  # vLLM's assertion says why
        ):
            return fn(q, k_buffer, v_buffer, o, lse, req_to_token, b_seq_len, attn_logits,
                      num_kv_splits, sm_scale, page_size, logit_cap, k_scale, v_scale,
                      is_mla)  # fmt: skip
        if o.shape[0] == 0:
            return None
        # What vLLM's entry point does before its first stage, in the same order.
        if k_scale is None:
            k_scale = torch.tensor(1.0, dtype=torch.float32, device=q.device)
        if v_scale is None:
            v_scale = torch.tensor(1.0, dtype=torch.float32, device=q.device)
        first = (q, k_buffer, v_buffer, attn_logits, req_to_token, b_seq_len, num_kv_splits,
                 sm_scale, page_size, logit_cap, k_scale, v_scale)  # fmt: skip
        if q.shape[1] // v_buffer.shape[-2] == 1:
            normal(*first)
        else:
            grouped(*first, is_mla=is_mla)
        merge_splits(attn_logits, q, o, lse, b_seq_len, num_kv_splits, v_buffer.shape[-1])
        return None

    return _wrap(fn, guarded, "stage2")


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


FLASHMLA_ZERO_ROWS_MEASURED = "unguarded_zero_rows_out_on_nan_buffer"
"""Why the FlashMLA guard writes no output: the probe's guarded variant records, under this
key of each case with rows of length 0, what the unguarded dense decode leaves in those rows
of an ``out=`` buffer that held NaN. On the H200 it was ``"zero"`` for every such case
(docs/probe-report.json; tests/test_probe_guarded.py keeps the code and that measurement
together), and the probe's graph check replays the guarded call over outputs set to NaN."""


def guard_flash_mla_with_kvcache(fn: F) -> F:
    """Wrap FlashMLA's ``flash_mla_with_kvcache(q, k_cache, block_table, cache_seqlens,
    head_dim_v, tile_scheduler_metadata, ...)`` for its dense bf16 path.

    After the kernel, rows whose ``cache_seqlens`` is 0 hold the empty row's identity: LSE
    -inf (the kernel wrote +inf; while a CUDA graph is captured, the guard's one Triton
    kernel, ``runtime_guard.empty_rows``, one graph node; otherwise, and without Triton, a
    comparison and a ``masked_fill_``, which launch faster than a Triton kernel) and output 0
    (the kernel writes it itself, ``FLASHMLA_ZERO_ROWS_MEASURED``). An empty batch returns
    ``flash_mla_empty_outputs`` without calling the kernel (which refuses it). The sparse path
    (``indices`` given) and the FP8 KV cache (``is_fp8_kvcache=True``) were not measured safe
    to guard and go to the kernel unchanged.
    """
    if is_guarded(fn):
        return fn
    _require_torch()
    import torch

    kernels, why = _empty_rows_kernels()
    where = f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__name__', '?')}"
    if kernels is None:
        log("info", "runtime_guard: %s: LSE of the rows of length 0 masked (%s)", where, why)
    else:
        log(
            "info",
            "runtime_guard: %s: LSE of the rows of length 0 by one kernel in CUDA graphs,"
            " masked eagerly",
            where,
        )
    fill_lse = None if kernels is None else kernels.fill_empty_lse_
    # The LSE layouts the kernel has run for eagerly: each new one runs it once outside a
    # capture, so that Triton compiles and loads it there (vLLM's warm-up runs each batch
    # size eagerly before capturing it), never inside one.
    compiled: set[tuple[Any, ...]] = set()

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
            if isinstance(head_dim_v, int):  # the caller's `out=` (0 rows) is returned
                return flash_mla_empty_outputs(q, head_dim_v, None if out is _MISSING else out)
            return fn(*args, **kwargs)
        out, lse = fn(*args, **kwargs)
        lens = lens.reshape(-1)
        if (
            fill_lse is not None
            and lse.is_cuda
            and lse.dim() == 3
            and lens.is_contiguous()
            and lens.shape[0] == lse.shape[0]
        ):
            layout = (lse.device, tuple(lse.shape), lse.stride())
            capturing = torch.cuda.is_current_stream_capturing()
            if capturing or layout not in compiled:
                fill_lse(lse, lens)  # one graph node where two would be captured
                if not capturing:
                    compiled.add(layout)
                return out, lse
        # Eagerly, two torch ops are launched faster than one Triton kernel is.
        fill_empty_rows_(lse, lens, float("-inf"))
        return out, lse

    return _wrap(fn, guarded, "mask" if fill_lse is None else "lse-kernel")


LOGITS_DTYPE_POSITION = 8
"""Where ``logits_dtype`` sits among the positional arguments of sgl-deep-gemm 0.2.3.post2's
``fp8_fp4_paged_mqa_logits(q, kv_cache, weights, context_lens, block_table, schedule_meta,
max_context_len, clean_logits=False, logits_dtype=torch.float, indices=None)``; taken for a
kernel whose signature Python cannot read (a compiled function)."""


def paged_mqa_logits_empty(
    q: Any, max_context_len: int, logits_dtype: torch.dtype | None = None
) -> torch.Tensor:
    """DeepGEMM's paged MQA logits for a batch of 0 rows: ``(0, max_context_len)`` in
    ``logits_dtype`` (float32, the kernel's default, when None) on ``q``'s device (``q`` a
    tensor, or the ``(values, scales)`` tuple or list of the FP8/FP4 entry)."""
    import torch

    values = q[0] if isinstance(q, (tuple, list)) else q
    dtype = torch.float32 if logits_dtype is None else logits_dtype
    return torch.empty((0, max_context_len), dtype=dtype, device=values.device)


def _logits_dtype_position(fn: Any) -> int | None:
    """The position of ``fn``'s ``logits_dtype`` parameter among its positional arguments:
    read from its signature (None when it has none: ``fp8_paged_mqa_logits``, whose ninth
    argument is ``indices``, and DeepGEMM 2.8.1's ``fp8_fp4_paged_mqa_logits``), else
    ``LOGITS_DTYPE_POSITION``."""
    import inspect

    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # a compiled function without a signature
        return LOGITS_DTYPE_POSITION
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    for index, parameter in enumerate(parameters):
        if parameter.kind not in positional:
            return None
        if parameter.name == "logits_dtype":
            return index
    return None


def guard_paged_mqa_logits(fn: F) -> F:
    """Wrap DeepGEMM's ``fp8_paged_mqa_logits`` / ``fp8_fp4_paged_mqa_logits(q, kv_cache,
    weights, context_lens, block_table, schedule_meta, max_context_len, clean_logits, ...)``
    (sgl-deep-gemm's FP8/FP4 entry also takes ``logits_dtype``, ninth, and ``indices``).

    An empty batch (``q`` with 0 rows) returns ``paged_mqa_logits_empty`` without a launch
    (DeepGEMM 2.5.0 fails it with CUDA_ERROR_INVALID_VALUE), in the ``logits_dtype`` the
    caller passed (by keyword, or in the position ``fn``'s signature gives it), float32
    otherwise. Every other call goes to DeepGEMM unchanged: its zero-length rows are handled
    by the clamped schedule (``guard``).
    """
    if is_guarded(fn):
        return fn
    _require_torch()
    import torch

    dtype_position = _logits_dtype_position(fn)

    def guarded(*args: Any, **kwargs: Any) -> Any:
        q = _arg(args, kwargs, 0, "q")
        values = q[0] if isinstance(q, (tuple, list)) and q else q
        if isinstance(values, torch.Tensor) and values.dim() >= 1 and values.shape[0] == 0:
            length = _arg(args, kwargs, 6, "max_context_len")
            if length is _MISSING:
                length = kwargs.get("max_model_len", _MISSING)
            if dtype_position is None:
                dtype = kwargs.get("logits_dtype")
            else:
                dtype = _arg(args, kwargs, dtype_position, "logits_dtype")
            if not isinstance(dtype, torch.dtype):  # not given: the kernel's default
                dtype = None
            if isinstance(length, int) and not isinstance(length, bool) and length >= 0:
                return paged_mqa_logits_empty(q, length, dtype)
        return fn(*args, **kwargs)

    return _wrap(fn, guarded, "empty-batch")
