"""The clamp itself: raise every context length to at least 1 before DeepGEMM schedules it.

The metadata kernel only distributes work; the logits kernel reads the true lengths, so
scheduling a 0-length row as 1 changes no logits. torch is imported inside the functions,
never at module import.
"""

from __future__ import annotations

import functools
import importlib

# Not typing.TYPE_CHECKING: importing typing would be most of the import budget.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    import torch

    F = TypeVar("F", bound=Callable[..., Any])

FUNCTION_NAME = "get_paged_mqa_logits_metadata"

DEEP_GEMM_MODULES = ("deep_gemm", "vllm.third_party.deep_gemm")
"""Where DeepGEMM lives, in the order vLLM tries them: a pip install first, then the copy
vendored in the vLLM wheel."""

_ORIGINAL_ATTR = "__zerolint_unguarded__"
_FUSED_ATTR = "__zerolint_fused__"
_PATH_ATTR = "__zerolint_path__"
"""On an attention guard (runtime_guard.attention): the path it takes, for guard_path()."""


def clamp_context_lens(lens: torch.Tensor, *, out: torch.Tensor | None = None) -> torch.Tensor:
    """Return ``lens`` with every element raised to at least 1.

    Same shape and dtype, always contiguous, computed on ``lens``'s device by one
    elementwise kernel: no host synchronisation, so it is safe inside CUDA-graph capture.
    ``out``, when given, must be a contiguous tensor of the same shape, dtype and device; the
    result is written there (a fixed address for graph replay) and ``out`` is returned.
    ``lens`` must be a 1-D or 2-D tensor of int8, int16, int32, int64 or uint8 (torch cannot
    clamp its other unsigned types), on any device. RuntimeError when torch is missing.
    """
    _check_lens(lens)
    import torch

    if out is None:
        return torch.clamp(lens, min=1).contiguous()
    _check_out(out, lens)
    return torch.clamp(lens, min=1, out=out)


def guard(fn: F, *, fused: bool = False) -> F:
    """Wrap a ``get_paged_mqa_logits_metadata``-like callable so it clamps its lengths.

    The wrapper clamps the first positional argument, or ``context_lens=`` when passed by
    keyword, and forwards every argument unchanged. Guarding a guarded callable returns it
    as it is. ``unguarded(wrapper)`` gives back ``fn``.

    An empty batch (``context_lens`` of shape ``(0, next_n)``) never reaches ``fn``: the
    wrapper returns the schedule DeepGEMM 2.8.1's guarded scheduler writes for it (see
    ``empty_schedule``), because DeepGEMM 2.5.0 and 2.6.1 read out of bounds on it.

    ``fused=True`` says ``fn`` is DeepGEMM 2.6.1's function: on an SM90 device the wrapper
    then computes the clamped schedule with one kernel of its own instead of a clamp kernel
    followed by ``fn`` (see ``runtime_guard.fused``), once it has matched ``fn`` on a live call.
    """
    if is_guarded(fn):
        return fn
    _require_torch()
    fast = None
    if fused:
        from runtime_guard.fused import FusedSchedule

        fast = FusedSchedule(fn)

    @functools.wraps(fn)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        empty = empty_batch_schedule(args, kwargs)
        if empty is not None:
            return empty  # DeepGEMM's scheduler faults on B = 0: never launch it
        if fast is not None:
            schedule = fast(args, kwargs)
            if schedule is not None:
                return schedule
        if args:
            args = (clamp_context_lens(args[0]), *args[1:])
        elif "context_lens" in kwargs:
            kwargs["context_lens"] = clamp_context_lens(kwargs["context_lens"])
        return fn(*args, **kwargs)

    setattr(guarded, _ORIGINAL_ATTR, fn)
    setattr(guarded, _FUSED_ATTR, fast)
    return guarded  # type: ignore[return-value]


def is_guarded(fn: object) -> bool:
    """Whether ``fn`` is a wrapper made by ``guard``."""
    return hasattr(fn, _ORIGINAL_ATTR)


def unguarded(fn: F) -> F:
    """The callable ``guard`` wrapped, or ``fn`` itself if it is not a guard."""
    return getattr(fn, _ORIGINAL_ATTR, fn)


def guard_path(fn: object, device: int = 0) -> str:
    """How ``fn`` schedules on CUDA device ``device`` now: ``"fused"`` (the clamp inside one
    kernel), ``"clamp"`` (a clamp kernel, then DeepGEMM) or ``"none"`` (not a guard). For an
    attention guard, the path it was given when it was made (``runtime_guard.attention``:
    ``"stage2"``, ``"mask"``, ``"lse-kernel"``, ``"empty-batch"``)."""
    if not is_guarded(fn):
        return "none"
    path = getattr(fn, _PATH_ATTR, None)
    if isinstance(path, str):
        return path
    fast = getattr(fn, _FUSED_ATTR, None)
    return "clamp" if fast is None else fast.path(device)


def log(level: str, message: str, *args: object) -> None:
    """Log on the ``runtime_guard`` logger (imported lazily: it is a third of the import)."""
    import logging

    getattr(logging.getLogger("runtime_guard"), level)(message, *args)


def get_paged_mqa_logits_metadata(
    context_lens: torch.Tensor, block_kv: int, num_sms: int, **kwargs: Any
) -> torch.Tensor:
    """DeepGEMM's ``get_paged_mqa_logits_metadata`` on clamped lengths.

    Resolves DeepGEMM as vLLM does (``deep_gemm``, then ``vllm.third_party.deep_gemm``),
    clamps ``context_lens`` once (also when ``install()`` has patched DeepGEMM) and forwards
    ``block_kv``, ``num_sms`` and every keyword; an empty batch gets ``empty_schedule``
    without a DeepGEMM launch. ``context_lens`` must be a CUDA tensor, as
    DeepGEMM requires; RuntimeError when no DeepGEMM can be imported.
    """
    _check_lens(context_lens)
    kernel = unguarded(resolve_deep_gemm_function())
    if context_lens.device.type != "cuda":
        raise ValueError(
            f"context_lens must be a CUDA tensor for DeepGEMM, got a tensor on "
            f"{context_lens.device}"
        )
    empty = empty_batch_schedule((context_lens, block_kv, num_sms), kwargs)
    if empty is not None:
        return empty
    return kernel(clamp_context_lens(context_lens), block_kv, num_sms, **kwargs)


def empty_schedule(context_lens: torch.Tensor, num_sms: int) -> torch.Tensor:
    """The schedule of an empty batch: a ``(num_sms + 1, 2)`` table of zeros.

    What DeepGEMM 2.8.1's guarded SM90 scheduler writes when the batch holds no work (every
    SM's start and the end sentinel are ``(batch_size * atoms, 0)``, which is ``(0, 0)`` for
    B = 0; docs/hazards/empty-batch-ZL001.md), so the logits kernel that follows gives every
    SM an empty range. Same dtype (int32) and device as ``context_lens``, written by one fill
    on that device's current stream: no host synchronisation, safe inside graph capture.
    """
    import torch

    return torch.zeros((num_sms + 1, 2), dtype=context_lens.dtype, device=context_lens.device)


def empty_batch_schedule(args: tuple[Any, ...], kwargs: dict[str, Any]) -> torch.Tensor | None:
    """``empty_schedule`` for a call DeepGEMM would accept on an empty batch, else None.

    The call must bind as ``(context_lens, block_kv, num_sms[, indices=None])`` with a 2-D
    int32 ``context_lens`` of 0 rows and an int ``num_sms`` >= 1. Anything else goes on to
    DeepGEMM, whose host checks reject it before any launch. Decided on shapes only (host
    metadata), never on device values.
    """
    import torch

    lens = args[0] if args else kwargs.get("context_lens")
    if not isinstance(lens, torch.Tensor) or lens.dim() != 2 or lens.shape[0] != 0:
        return None
    if lens.dtype != torch.int32:
        return None
    names = ("context_lens", "block_kv", "num_sms", "indices")
    if len(args) > len(names) or any(name not in names for name in kwargs):
        return None
    bound = dict(zip(names, args))
    for name, value in kwargs.items():
        if name in bound:
            return None  # given twice: let the callee raise its TypeError
        bound[name] = value
    num_sms = bound.get("num_sms")
    if not isinstance(num_sms, int) or isinstance(num_sms, bool) or num_sms < 1:
        return None
    if bound.get("indices") is not None or "block_kv" not in bound:
        return None
    return empty_schedule(lens, num_sms)


def resolve_deep_gemm_function() -> Callable[..., Any]:
    """DeepGEMM's ``get_paged_mqa_logits_metadata`` from the first importable DeepGEMM."""
    for name in DEEP_GEMM_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        function = getattr(module, FUNCTION_NAME, None)
        if function is None:
            raise RuntimeError(f"{name} has no {FUNCTION_NAME}; DeepGEMM is too old or too new")
        return function
    raise RuntimeError(
        f"DeepGEMM not found: none of {', '.join(DEEP_GEMM_MODULES)} can be imported"
    )


def _require_torch() -> None:
    """Raise a RuntimeError that says what is missing when torch cannot be imported."""
    try:
        import torch  # noqa: F401
    except ImportError as error:
        raise RuntimeError(
            f"runtime_guard needs PyTorch, which cannot be imported here ({error})"
        ) from None


def _signed_or_uint8(dtype: torch.dtype) -> bool:
    import torch

    # torch's unsigned 16/32/64-bit types are shell dtypes: clamp is not implemented for them.
    return dtype in (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)


def _check_lens(lens: object) -> None:
    _require_torch()
    import torch

    if not isinstance(lens, torch.Tensor):
        raise TypeError(f"context_lens must be a torch.Tensor, got {type(lens).__name__}")
    if not _signed_or_uint8(lens.dtype):
        raise TypeError(
            f"context_lens must have an integer dtype, got {lens.dtype} (accepted: int8, "
            "int16, int32, int64, uint8; DeepGEMM takes int32)"
        )
    if lens.dim() not in (1, 2):
        raise ValueError(
            f"context_lens must be 1-D (batch,) or 2-D (batch, next_n), got shape "
            f"{tuple(lens.shape)}"
        )


def _check_out(out: object, lens: torch.Tensor) -> None:
    import torch

    if not isinstance(out, torch.Tensor):
        raise TypeError(f"out must be a torch.Tensor, got {type(out).__name__}")
    for what, got, want in (
        ("shape", tuple(out.shape), tuple(lens.shape)),
        ("dtype", out.dtype, lens.dtype),
        ("device", out.device, lens.device),
    ):
        if got != want:
            raise ValueError(f"out has {what} {got}, context_lens has {want}")
    if not out.is_contiguous():
        raise ValueError("out must be contiguous")
