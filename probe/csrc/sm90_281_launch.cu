// Launches DeepGEMM 2.8.1's SM90 paged-MQA metadata scheduler (the guarded header of the
// vLLM 0.33.0 wheel) the way DeepGEMM's host launches the 2.6.1 one: template
// <align(B, 32), SPLIT_KV = 256, num_sms, kIsVarlen = false>, one block of 32 threads,
// align(B, 32) * 4 bytes of dynamic shared memory. 2.8.1 adds a num_next_n_atoms argument,
// computed here as 2.6.1's kernel computed it (ceil(next_n / 2) for next_n >= 2, else 1).
//
// The header is not part of this repository: devtools/prepare_probe.py extracts it.

#include <array>
#include <utility>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <deep_gemm/scheduler/sm90_paged_mqa_logits.cuh>

#include "sm90_281_launch.h"

#ifndef RG_NUM_SMS
#error "build with -DRG_NUM_SMS=<the device's multiprocessor count>"
#endif

namespace {

constexpr uint32_t kSplitKV = 256;
constexpr int kNumThreads = 32;
constexpr int kNumInstances = probe_281::kMaxBatch / 32 + 1;

using Kernel = void (*)(uint32_t, uint32_t, bool, uint32_t, const uint32_t*, const uint32_t*,
                        uint32_t*);

template <int... I>
std::array<Kernel, sizeof...(I)> instantiate(std::integer_sequence<int, I...>) {
    return {&deep_gemm::sched::sm90_paged_mqa_logits_metadata<I * 32, kSplitKV, RG_NUM_SMS, false>...};
}

const std::array<Kernel, kNumInstances>& kernels() {
    static const auto table = instantiate(std::make_integer_sequence<int, kNumInstances>{});
    return table;
}

}  // namespace

namespace probe_281 {

const int kNumSMs = RG_NUM_SMS;

cudaError_t launch_metadata(const int* context_lens, int* schedule_metadata, int batch_size,
                            int next_n, cudaStream_t stream) {
    const int aligned_batch_size = (batch_size + 31) / 32 * 32;
    const uint32_t atoms = next_n >= 2 ? (static_cast<uint32_t>(next_n) + 1u) / 2u : 1u;
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(1, 1, 1);
    config.blockDim = dim3(kNumThreads, 1, 1);
    config.dynamicSmemBytes = static_cast<size_t>(aligned_batch_size) * sizeof(int);
    config.stream = stream;
    return cudaLaunchKernelEx(&config, kernels()[aligned_batch_size / 32],
                              static_cast<uint32_t>(batch_size), static_cast<uint32_t>(next_n),
                              /*is_context_lens_2d=*/true, atoms,
                              reinterpret_cast<const uint32_t*>(context_lens),
                              static_cast<const uint32_t*>(nullptr),
                              reinterpret_cast<uint32_t*>(schedule_metadata));
}

}  // namespace probe_281
