"""The kernels the probe runs, declared as data: where each comes from, how it is loaded,
which outputs are checked per row, and what "wrong" compares against.

The GPU side of each entry is ``probe.impl.<impl>``; this module imports nothing heavy, so
the CPU tests and the renderer can read the declarations.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Kernel:
    name: str
    title: str
    source: str
    """The wheel and file the kernel comes from."""
    load: str
    """How the probe imports or builds it."""
    inputs: str
    """How a case becomes valid inputs."""
    outputs: str
    """Which outputs are checked, per row."""
    reference: str
    """What a "wrong" outcome compares against."""
    impl: str
    next_n: tuple[int, ...] = (1,)
    piece: str = "probe:vllm"
    """Which prepared piece (``<folder>:<manifest role>``) holds it: its wheel and sha256."""
    notes: tuple[str, ...] = field(default=())
    guard: str = ""
    """For a guarded variant: the ``runtime_guard.sinks`` name whose guard it runs through."""
    guards: str = ""
    """For a guarded variant: the unguarded kernel of this table it is compared against."""


ATTENTION_INPUTS = (
    "q (B, 16 heads, 576) bf16 (DeepSeek MLA at TP 8), paged KV cache of 64-token pages with "
    "576 = 512 latent + 64 rope per token, a block table of distinct pages per row (zero "
    "rows keep valid page 0), per-row lengths as given"
)

KERNELS: tuple[Kernel, ...] = (
    Kernel(
        name="triton_mla_decode",
        title="vLLM Triton MLA decode_attention_fwd",
        source="vllm==0.26.0: vllm/v1/attention/ops/triton_decode_attention.py",
        load=(
            "the file as published, imported with stand-ins for vllm.platforms "
            "(current_platform.is_rocm() is False) and vllm.triton_utils (triton, tl)"
        ),
        inputs=ATTENTION_INPUTS + "; num_kv_splits as vLLM's TritonMLAImpl computes it; "
        "called as vLLM 0.26.0's forward_mqa calls it (is_mla=True)",
        outputs="o (B, 16, 512): every row; lse (B, 16): NaN or +inf (-inf is an empty row's "
        "convention)",
        reference="the same kernel on the batch without its zero rows: every non-zero row "
        "within 2e-2",
        impl="TritonMlaDecode",
    ),
    Kernel(
        name="flashmla_dense_bf16",
        title="FlashMLA dense decode, bf16 (flash_mla_with_kvcache)",
        source="vllm==0.26.0: vllm/_flashmla_C.abi3.so, "
        "vllm/third_party/flashmla/flash_mla_interface.py",
        load="vllm._flashmla_C imported from the extracted wheel files (the interface module "
        "as published)",
        inputs="q (B, 1, 16, 576) bf16, KV cache (pages, 64, 1, 576) bf16, block table, "
        "cache_seqlens as given, head_dim_v 512, causal",
        outputs="out (B, 1, 16, 512): every row; lse (B, 16, 1): NaN or +inf",
        reference="the same kernel on the batch without its zero rows: every non-zero row "
        "within 2e-2",
        impl="FlashMlaDense",
    ),
    Kernel(
        name="flashmla_dense_fp8",
        title="FlashMLA dense decode, FP8 KV cache (fwd_kvcache_mla_fp8)",
        source="vllm==0.26.0: vllm/_flashmla_extension_C.abi3.so",
        load="torch.ops._flashmla_extension_C after importing the extension, as "
        "vllm/v1/attention/ops/flashmla.py calls it (get_mla_decoding_metadata_dense_fp8, "
        "then fwd_kvcache_mla_fp8 with unit descales)",
        inputs="as the bf16 case, q and KV cache cast to float8_e4m3fn",
        outputs="out (B, 1, 16, 512): every row; lse: NaN or +inf",
        reference="the same kernel on the batch without its zero rows: every non-zero row "
        "within 2e-2",
        impl="FlashMlaFp8",
    ),
    Kernel(
        name="deep_gemm_2_5_0_metadata",
        title="DeepGEMM 2.5.0 get_paged_mqa_logits_metadata",
        source="vllm==0.26.0: vllm/third_party/deep_gemm (the package, its _C and JIT headers)",
        load="the vendored package as a top-level deep_gemm (prepared by "
        "devtools/prepare_sm90.py), its own host code JIT-compiling the SM90 scheduler",
        inputs="context_lens (B, next_n) int32: row i is (len_i - 1, len_i) for next_n 2; "
        "block_kv 64, the device's SM count",
        outputs="the (num_sms + 1, 2) schedule",
        reference=(
            "runtime_guard.reference.schedule with 2.5.0's clamp of the search to B - 1 (an "
            "every-row-0 batch points every SM at row B - 1), integer for integer"
        ),
        piece="sm90:semantics",
        impl="DeepGemm250Metadata",
        next_n=(1, 2),
    ),
    Kernel(
        name="deep_gemm_2_5_0_logits",
        title="DeepGEMM 2.5.0 fp8_paged_mqa_logits (on the guard's schedule)",
        source="vllm==0.26.0: vllm/third_party/deep_gemm",
        load="as deep_gemm_2_5_0_metadata; the schedule comes from "
        "runtime_guard.get_paged_mqa_logits_metadata (clamped lengths; the zero table for "
        "B = 0), so the logits kernel itself is what is probed",
        inputs="q (B, next_n, 64, 128) fp8, DeepGEMM's fused fp8 paged cache (64-token "
        "blocks), weights (B * next_n, 64), the raw context_lens, a block table, "
        "max_model_len 16384",
        outputs="logits (B * next_n, 16384): each token's valid columns (< its length)",
        reference="fp32 logits from the dequantised inputs (runtime_guard._sm90.semantics): "
        "DeepGEMM's similarity gap below 1e-3 on the valid columns",
        piece="sm90:semantics",
        impl="DeepGemm250Logits",
        next_n=(1, 2),
    ),
    Kernel(
        name="deep_gemm_2_6_1_scheduler",
        title="DeepGEMM 2.6.1 SM90 scheduler header (vLLM 0.27.1)",
        source="vllm==0.27.1: vllm/third_party/deep_gemm/include/deep_gemm/scheduler/"
        "sm90_paged_mqa_logits.cuh",
        load="compiled standalone as runtime_guard.verify_sm90 builds it "
        "(runtime_guard/_sm90/build.py), launched as DeepGEMM's host launches it",
        inputs="as deep_gemm_2_5_0_metadata",
        outputs="the (num_sms + 1, 2) schedule",
        reference="runtime_guard.reference.schedule (the unguarded model), integer for integer",
        piece="sm90:scheduler",
        impl="Scheduler261",
        next_n=(1, 2),
    ),
    Kernel(
        name="deep_gemm_2_8_1_scheduler",
        title="DeepGEMM 2.8.1 SM90 scheduler header (vLLM 0.33.0, guarded)",
        source="vllm==0.33.0: vllm/third_party/deep_gemm/include/deep_gemm/scheduler/"
        "sm90_paged_mqa_logits.cuh",
        load="compiled standalone (probe/csrc), launched as 2.6.1's host launches the "
        "scheduler, with the new num_next_n_atoms argument = ceil(next_n / 2) for next_n "
        ">= 2, else 1 (2.6.1's in-kernel formula; the 2.8.1 host is compiled code)",
        inputs="as deep_gemm_2_5_0_metadata",
        outputs="the (num_sms + 1, 2) schedule",
        reference="runtime_guard.reference.schedule(guarded=True), integer for integer",
        piece="probe:guarded_scheduler",
        impl="Scheduler281",
        next_n=(1, 2),
    ),
)

GUARDED_CHECKS = (
    "every check of probe/guarded.py: zero rows hold the empty row's identity (output 0, LSE "
    "-inf), every other row is bit-identical (torch.equal) to the unguarded kernel on the "
    "same inputs, B = 0 gives the kernel's dtypes and trailing shape without a launch, and "
    "the guarded call captured in a CUDA graph, its outputs overwritten with NaN and "
    "replayed, gives exactly the eager outputs"
)

KERNELS += (
    Kernel(
        name="triton_mla_decode_guarded",
        title="vLLM Triton MLA decode_attention_fwd through runtime_guard (empty-row identity)",
        source="vllm==0.26.0: vllm/v1/attention/ops/triton_decode_attention.py",
        load="as triton_mla_decode, wrapped by runtime_guard.attention.guard_triton_mla_decode "
        "(what install() puts in place); k_scale and v_scale passed as tensors, as vLLM's "
        "TritonMLAImpl passes them",
        inputs=ATTENTION_INPUTS + "; the output buffers are the caller's, as in vLLM",
        outputs="o and lse, every row",
        reference=GUARDED_CHECKS,
        impl="GuardedTritonMla",
        guard="triton_mla",
        guards="triton_mla_decode",
    ),
    Kernel(
        name="flashmla_dense_bf16_guarded",
        title="FlashMLA dense decode, bf16, through runtime_guard (LSE -inf, empty batch)",
        source="vllm==0.26.0: vllm/_flashmla_C.abi3.so, "
        "vllm/third_party/flashmla/flash_mla_interface.py",
        load="as flashmla_dense_bf16, wrapped by "
        "runtime_guard.attention.guard_flash_mla_with_kvcache",
        inputs="as flashmla_dense_bf16",
        outputs="out and lse, every row",
        reference=GUARDED_CHECKS,
        impl="GuardedFlashMla",
        guard="flashmla",
        guards="flashmla_dense_bf16",
    ),
    Kernel(
        name="deep_gemm_2_5_0_logits_guarded",
        title="DeepGEMM 2.5.0 fp8_paged_mqa_logits through runtime_guard (empty batch)",
        source="vllm==0.26.0: vllm/third_party/deep_gemm",
        load="as deep_gemm_2_5_0_logits, wrapped by "
        "runtime_guard.attention.guard_paged_mqa_logits; the graph captures the guarded "
        "schedule and the logits together",
        inputs="as deep_gemm_2_5_0_logits",
        outputs="logits: each token's valid columns",
        reference=GUARDED_CHECKS,
        piece="sm90:semantics",
        impl="GuardedDeepGemmLogits",
        next_n=(1, 2),
        guard="deep_gemm_logits",
        guards="deep_gemm_2_5_0_logits",
    ),
)

BY_NAME = {kernel.name: kernel for kernel in KERNELS}

NOT_RUN: tuple[tuple[str, str], ...] = (
    (
        "DeepGEMM get_paged_sparse_mqa_logits_metadata (sparse indexer)",
        (
            "DeepGEMM 2.8.1 implements it for SM100 only (its scheduler header is "
            "sm100_sparse_mqa_logits_metadata.cuh; the extension's only launcher is "
            "jit_kernels/impls/sm100_sparse_mqa_logits.hpp); this GPU is SM90"
        ),
    ),
    (
        "DeepGEMM fp8_fp4_paged_mqa_logits",
        (
            "the FP4 paths are SM100 only, and the 2.8.1 extension (vLLM 0.33.0) is built "
            "for torch 2.14 where the device has torch 2.11"
        ),
    ),
    (
        "FlashInfer trtllm_batch_decode_with_kv_cache_mla",
        (
            "TRT-LLM-gen MLA kernels target SM100; FlashInfer is not in the vLLM wheels and "
            "the device cannot download its cubins"
        ),
    ),
    (
        "flash-attn (vLLM's vllm_flash_attn FA2/FA3), merge_attn_states (vLLM _C)",
        (
            "their shared objects in the vLLM 0.26.0 wheel are 79 to 305 MB; a device call "
            "carries 64 MiB in all"
        ),
    ),
    (
        (
            "xformers, TileLang/TVM-FFI kernels, DeepGEMM MegaMoE, cutlass_fused_moe, "
            "sgl_kernel.topk_softmax, DeepEP dispatch, grouped GEMM"
        ),
        (
            "not in the probed wheels (SGLang's sgl-kernel and xformers pin other torch "
            "builds) or need several GPUs (DeepEP); not attempted in this device budget"
        ),
    ),
)
"""The other kernels of the public reports the probe does not run here, and why."""
