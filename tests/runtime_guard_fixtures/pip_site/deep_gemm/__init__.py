"""Fake pip-installed DeepGEMM: re-exports the compiled function, as DeepGEMM does."""

from deep_gemm._C import get_paged_mqa_logits_metadata

__all__ = ["get_paged_mqa_logits_metadata"]
