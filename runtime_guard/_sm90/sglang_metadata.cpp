// torch binding of SGLang 0.5.23's DeepSeek-V4 indexer schedule kernels: what
// sglang.kernels.ops.attention.dsv4.attn.get_paged_mqa_logits_metadata and
// IndexerMetadataKernel::run check and allocate, on the current stream.

#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/extension.h>

#include "sglang_metadata_launch.h"

namespace {

torch::Tensor get_paged_mqa_logits_metadata(const torch::Tensor& seq_lens, int64_t page_size,
                                            int64_t num_sm) {
    TORCH_CHECK(seq_lens.is_cuda(), "seq_lens must be a CUDA tensor");
    TORCH_CHECK(page_size == 64 || page_size == 128, "page_size must be 64 or 128");
    TORCH_CHECK(num_sm >= 1 && num_sm <= 1024, "num_sm must be in [1, 1024]");
    const auto flat = seq_lens.view(-1).to(torch::kInt).contiguous();
    const int64_t batch_size = flat.size(0);
    auto metadata = torch::empty({num_sm + 1, 2}, flat.options());
    auto workspace = torch::empty({rg_sglang::workspace_ints(static_cast<int>(batch_size))},
                                  flat.options());
    const c10::cuda::CUDAGuard device_guard(flat.device());
    C10_CUDA_CHECK(rg_sglang::launch_metadata(
        flat.data_ptr<int>(), metadata.data_ptr<int>(), workspace.data_ptr<int>(),
        static_cast<int>(batch_size), static_cast<int>(num_sm),
        c10::cuda::getCurrentCUDAStream()));
    return metadata;
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.doc() = "SGLang 0.5.23 DeepSeek-V4 indexer schedule kernels (deepseek_v4/paged_mqa_metadata.cuh)";
    m.def("get_paged_mqa_logits_metadata", &get_paged_mqa_logits_metadata,
          "schedule of seq_lens for num_sm SMs, as SGLang's JIT kernel computes it");
}
