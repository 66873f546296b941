// torch binding of DeepGEMM 2.8.1's SM90 metadata kernel, with the host checks of
// DeepGEMM's get_paged_mqa_logits_metadata (2-D int32 contiguous lengths, block_kv 64).

#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/extension.h>

#include "sm90_281_launch.h"

namespace {

torch::Tensor get_paged_mqa_logits_metadata(const torch::Tensor& context_lens, int64_t block_kv,
                                            int64_t num_sms) {
    TORCH_CHECK(context_lens.is_cuda(), "context_lens must be a CUDA tensor");
    TORCH_CHECK(context_lens.dim() == 2, "context_lens must be 2-D (batch, next_n)");
    TORCH_CHECK(context_lens.scalar_type() == torch::kInt, "context_lens must be int32");
    TORCH_CHECK(context_lens.is_contiguous(), "context_lens must be contiguous");
    TORCH_CHECK(block_kv == 64, "SM90 supports block_kv == 64 only");
    TORCH_CHECK(num_sms == probe_281::kNumSMs, "this build schedules for ", probe_281::kNumSMs,
                " SMs, got ", num_sms);
    const int64_t batch_size = context_lens.size(0);
    TORCH_CHECK(batch_size <= probe_281::kMaxBatch, "batch size must be at most ",
                probe_281::kMaxBatch, ", got ", batch_size);
    auto schedule_metadata = torch::empty({num_sms + 1, 2}, context_lens.options());
    const c10::cuda::CUDAGuard device_guard(context_lens.device());
    C10_CUDA_CHECK(probe_281::launch_metadata(
        context_lens.data_ptr<int>(), schedule_metadata.data_ptr<int>(),
        static_cast<int>(batch_size), static_cast<int>(context_lens.size(1)),
        c10::cuda::getCurrentCUDAStream()));
    return schedule_metadata;
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.doc() = "DeepGEMM 2.8.1 SM90 paged-MQA metadata scheduler (vLLM 0.33.0 header)";
    m.def("get_paged_mqa_logits_metadata", &get_paged_mqa_logits_metadata,
          py::arg("context_lens"), py::arg("block_kv"), py::arg("num_sms"));
}
