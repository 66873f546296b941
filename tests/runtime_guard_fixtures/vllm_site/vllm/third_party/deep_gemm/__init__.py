"""Fake DeepGEMM vendored in the vLLM wheel."""

from vllm.third_party.deep_gemm._C import get_paged_mqa_logits_metadata

__all__ = ["get_paged_mqa_logits_metadata"]
