"""A caller that imported DeepGEMM's function by name (SGLang-style)."""

from deep_gemm import get_paged_mqa_logits_metadata

__all__ = ["get_paged_mqa_logits_metadata"]
