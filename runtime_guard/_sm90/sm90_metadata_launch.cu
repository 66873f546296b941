// Launches DeepGEMM 2.6.1's SM90 paged-MQA metadata scheduler, the kernel vLLM 0.27.1
// vendors, the way DeepGEMM's host code launches it: template
// <align(B, 32), SPLIT_KV = 256, num_sms, kIsVarlen = false>, one block of 32 threads,
// align(B, 32) * 4 bytes of dynamic shared memory, arguments
// (batch_size, next_n, is_context_lens_2d = true, context_lens, indices = nullptr, out).
//
// The header is not part of this repository: it comes from the vLLM 0.27.1 wheel that
// devtools/prepare_sm90.py unpacks (include path set by runtime_guard/_sm90/build.py).

#include <array>
#include <utility>

#include <cuda_bf16.h>  // deep_gemm/common/math.cuh uses bf16 intrinsics before including it
#include <cuda_runtime.h>

#include <deep_gemm/scheduler/sm90_paged_mqa_logits.cuh>

#include "sm90_metadata_launch.h"

#ifndef RG_NUM_SMS
#error "build with -DRG_NUM_SMS=<the device's multiprocessor count>"
#endif

namespace {

constexpr uint32_t kSplitKV = 256;  // DeepGEMM host: constexpr int split_kv = 256
constexpr int kNumThreads = 32;     // DeepGEMM host: constexpr int num_threads = 32
constexpr int kNumInstances = rg_sm90::kMaxBatch / 32 + 1;

using Kernel = void (*)(uint32_t, uint32_t, bool, const uint32_t*, const uint32_t*, uint32_t*);

// DeepGEMM JIT-compiles one kernel per aligned batch size; we instantiate 0, 32, ..., 1024.
// An empty batch is aligned to 0, and DeepGEMM's host compiles and launches that kernel too
// (with 0 bytes of dynamic shared memory): it has no check for B = 0.
template <int... I>
std::array<Kernel, sizeof...(I)> instantiate(std::integer_sequence<int, I...>) {
    return {&deep_gemm::sched::sm90_paged_mqa_logits_metadata<I * 32, kSplitKV, RG_NUM_SMS, false>...};
}

const std::array<Kernel, kNumInstances>& kernels() {
    static const auto table = instantiate(std::make_integer_sequence<int, kNumInstances>{});
    return table;
}

}  // namespace

namespace rg_sm90 {

const int kNumSMs = RG_NUM_SMS;
const int kSplitKVValue = static_cast<int>(kSplitKV);

cudaError_t launch_metadata(const int* context_lens, int* schedule_metadata, int batch_size,
                            int next_n, cudaStream_t stream) {
    const int aligned_batch_size = (batch_size + 31) / 32 * 32;
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(1, 1, 1);
    config.blockDim = dim3(kNumThreads, 1, 1);
    // At most 4 KiB, under the 48 KiB default: no dynamic-smem attribute to raise.
    config.dynamicSmemBytes = static_cast<size_t>(aligned_batch_size) * sizeof(int);
    config.stream = stream;
    config.attrs = nullptr;  // DeepGEMM launches without PDL unless set_pdl(True)
    config.numAttrs = 0;
    return cudaLaunchKernelEx(&config, kernels()[aligned_batch_size / 32],
                              static_cast<uint32_t>(batch_size), static_cast<uint32_t>(next_n),
                              /*is_context_lens_2d=*/true,
                              reinterpret_cast<const uint32_t*>(context_lens),
                              static_cast<const uint32_t*>(nullptr),
                              reinterpret_cast<uint32_t*>(schedule_metadata));
}

}  // namespace rg_sm90
