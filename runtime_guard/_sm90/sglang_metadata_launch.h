// SGLang 0.5.23's DeepSeek-V4 indexer schedule kernels (its JIT-compiled
// deepseek_v4/paged_mqa_metadata.cuh), launched as its host code launches them.
#pragma once

#include <cuda_runtime.h>

namespace rg_sglang {

// What IndexerMetadataKernel::run would allocate: bs + ceil(bs / 4096) ints past 2048 rows.
int workspace_ints(int batch_size);

cudaError_t launch_metadata(const int* seq_lens, int* schedule_metadata, int* workspace,
                            int batch_size, int num_sm, cudaStream_t stream);

}  // namespace rg_sglang
