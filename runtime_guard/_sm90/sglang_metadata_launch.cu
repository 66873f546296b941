// Launches the kernels of SGLang 0.5.23's sglang/kernels/jit/csrc/deepseek_v4/paged_mqa_metadata.cuh,
// the schedule SGLang's DeepSeek-V4 indexer computes by default (SGLANG_OPT_USE_JIT_INDEXER_METADATA
// is on), the way IndexerMetadataKernel::run launches them: one block of 256 threads up to 64
// rows, one block of 256 threads up to 2048, past that ceil(B / 4096) blocks of 1024 threads
// then one block of 256 with ceil(B / 4096) * 4 bytes of dynamic shared memory.
//
// The kernels are the file's own text: runtime_guard/_sm90/sglang.py cuts from it only its
// includes of SGLang's and TVM's host headers and the host struct (which binds TVM's tensor
// types), checks the file's sha256 against .sm90/manifest.json, and writes the rest as
// sglang_paged_mqa_metadata_kernels.cuh into the build's include folder.

#include <cstdint>

#include <cuda_runtime.h>

#include "sglang_paged_mqa_metadata_kernels.cuh"
#include "sglang_metadata_launch.h"

namespace rg_sglang {

int workspace_ints(int batch_size) {
    if (batch_size <= static_cast<int>(sglang::kSmallMax)) {
        return 0;
    }
    const int tiles = (batch_size + sglang::kMBTileSize - 1) / sglang::kMBTileSize;
    return batch_size + tiles;
}

cudaError_t launch_metadata(const int* seq_lens, int* schedule_metadata, int* workspace,
                            int batch_size, int num_sm, cudaStream_t stream) {
    const sglang::MetadataParams params{
        static_cast<uint32_t>(batch_size),
        static_cast<uint32_t>(num_sm),
        reinterpret_cast<const uint32_t*>(seq_lens),
        reinterpret_cast<uint32_t*>(schedule_metadata),
    };
    const auto bs = static_cast<uint32_t>(batch_size);
    if (bs <= sglang::kTinyMax) {
        sglang::paged_mqa_metadata_tiny_kernel<<<1, sglang::kTinyBlock, 0, stream>>>(params);
    } else if (bs <= sglang::kSmallMax) {
        sglang::paged_mqa_metadata_small_kernel<<<1, sglang::kSmallBlock, 0, stream>>>(params);
    } else {
        const uint32_t tiles = (bs + sglang::kMBTileSize - 1) / sglang::kMBTileSize;
        auto* scratch_prefix = reinterpret_cast<uint32_t*>(workspace);
        auto* tile_sums = scratch_prefix + bs;
        sglang::phase1_tile_scan_kernel<<<tiles, sglang::kMBBlockSize, 0, stream>>>(
            params, scratch_prefix, tile_sums);
        const size_t smem = static_cast<size_t>(tiles) * sizeof(uint32_t);
        sglang::schedule_from_tiles_kernel<<<1, sglang::kKernelBThreads, smem, stream>>>(
            params, scratch_prefix, tile_sums, tiles);
    }
    return cudaGetLastError();
}

}  // namespace rg_sglang
