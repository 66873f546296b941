"""A compact copy of the pattern in vLLM 0.27.1's DeepSeek indexer metadata builder.

On a dummy decode batch every seq_len is 1; with DeepSeek-V4's compress ratio of 4,
1 // 4 == 0, so every context length handed to DeepGEMM's SM90 scheduler is 0. With a
batch that is a multiple of 32 the scheduler reads past its shared memory and the CUDA
graph capture dies with an illegal memory access. `zerolint check examples/` finds it.
"""

import torch

from vllm.utils.deep_gemm import get_paged_mqa_logits_metadata


class IndexerMetadataBuilder:
    def __init__(self, max_tokens: int, compress_ratio: int, num_sms: int, device: str) -> None:
        self.compress_ratio = compress_ratio
        self.num_sms = num_sms
        self.storage_block_size = 256 // compress_ratio
        self.expanded_seq_lens_buffer = torch.zeros(max_tokens, dtype=torch.int32, device=device)
        self.scheduler_metadata_buffer = torch.zeros((num_sms + 1, 2), dtype=torch.int32,
                                                     device=device)

    def build_decode(self, seq_lens: torch.Tensor, num_decodes: int, num_decode_tokens: int,
                     seq_lens_is_buffer_view: bool) -> torch.Tensor:
        if self.compress_ratio > 1:
            if seq_lens_is_buffer_view:
                seq_lens //= self.compress_ratio
            else:
                self.expanded_seq_lens_buffer[:num_decodes] = seq_lens // self.compress_ratio
                self.expanded_seq_lens_buffer[num_decodes:num_decode_tokens] = 0
                seq_lens = self.expanded_seq_lens_buffer[:num_decode_tokens]

        if seq_lens.dim() == 1:
            seq_lens = seq_lens.unsqueeze(-1)

        self.scheduler_metadata_buffer[:] = get_paged_mqa_logits_metadata(
            seq_lens, self.storage_block_size, self.num_sms
        )
        return seq_lens
