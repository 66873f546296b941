"""Fake vllm.utils.deep_gemm, shaped like vLLM 0.27.1's wrapper module."""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

import torch

_get_paged_mqa_logits_metadata_impl: Callable[..., Any] | None = None


@functools.cache
def _import_deep_gemm() -> ModuleType | None:
    for name in ("deep_gemm", "vllm.third_party.deep_gemm"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


def _lazy_init() -> None:
    global _get_paged_mqa_logits_metadata_impl
    if _get_paged_mqa_logits_metadata_impl is not None:
        return
    module = _import_deep_gemm()
    if module is not None:
        _get_paged_mqa_logits_metadata_impl = getattr(module, "get_paged_mqa_logits_metadata", None)


def get_paged_mqa_logits_metadata(
    context_lens: torch.Tensor, block_size: int, num_sms: int
) -> torch.Tensor:
    _lazy_init()
    if _get_paged_mqa_logits_metadata_impl is None:
        raise RuntimeError("DeepGEMM backend is unavailable")
    return _get_paged_mqa_logits_metadata_impl(context_lens, block_size, num_sms)
