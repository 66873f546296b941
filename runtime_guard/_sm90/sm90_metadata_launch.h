// The launcher of DeepGEMM 2.6.1's SM90 metadata kernel (sm90_metadata_launch.cu), kept free
// of torch headers so that nvcc and the C++ compiler build the two halves in parallel.
#pragma once

#include <cuda_runtime.h>

namespace rg_sm90 {

constexpr int kMaxBatch = 1024;  // largest batch this build instantiates a kernel for

extern const int kNumSMs;        // the kNumSMs template argument this build was made with
extern const int kSplitKVValue;  // SPLIT_KV, as DeepGEMM's host passes it

// Launch on `stream`; `context_lens` is (batch_size, next_n) int32, `schedule_metadata`
// (kNumSMs + 1, 2) int32, both device pointers. 0 <= batch_size <= kMaxBatch (0, as
// DeepGEMM's host passes it: an empty tensor's data pointer and 0 bytes of shared memory).
cudaError_t launch_metadata(const int* context_lens, int* schedule_metadata, int batch_size,
                            int next_n, cudaStream_t stream);

}  // namespace rg_sm90
