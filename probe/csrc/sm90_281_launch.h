// The launcher of DeepGEMM 2.8.1's SM90 metadata kernel, free of torch headers.
#pragma once

#include <cuda_runtime.h>

namespace probe_281 {

constexpr int kMaxBatch = 1024;
extern const int kNumSMs;

cudaError_t launch_metadata(const int* context_lens, int* schedule_metadata, int batch_size,
                            int next_n, cudaStream_t stream);

}  // namespace probe_281
