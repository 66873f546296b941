"""Fake indexer metadata builder: the decode path of vLLM 0.27.1, without a clamp."""

from __future__ import annotations

import torch

from vllm.utils.deep_gemm import get_paged_mqa_logits_metadata

STORAGE_BLOCK_SIZE = 64


def build_decode_schedule(
    seq_lens: torch.Tensor, compress_ratio: int = 4, num_sms: int = 132
) -> torch.Tensor:
    compressed = (seq_lens // compress_ratio).unsqueeze(-1)
    return get_paged_mqa_logits_metadata(compressed, STORAGE_BLOCK_SIZE, num_sms)
