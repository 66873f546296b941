"""A CPU stand-in for DeepGEMM's compiled get_paged_mqa_logits_metadata on SM90."""

from __future__ import annotations

from collections.abc import Callable

import torch

from runtime_guard import reference


def make_metadata_function() -> Callable[..., torch.Tensor]:
    """A new function object each call: every DeepGEMM copy has its own."""

    def get_paged_mqa_logits_metadata(
        context_lens: torch.Tensor, block_kv: int, num_sms: int
    ) -> torch.Tensor:
        # The host-side checks DeepGEMM makes before launching.
        if context_lens.dim() != 2 or context_lens.dtype != torch.int32:
            raise RuntimeError("Assertion error: context_lens must be 2-D int32")
        if not context_lens.is_contiguous():
            raise RuntimeError("Assertion error: context_lens must be contiguous")
        result = reference.schedule(context_lens, num_sms)
        if result.fault is not None:
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        return result.as_tensor()

    return get_paged_mqa_logits_metadata
