"""SGLang 0.5.23's DeepSeek-V4 indexer schedule, on the real kernels (section 8).

SGLang computes the indexer's paged-MQA schedule in ``PagedIndexerMetadata.__post_init__``
(``sglang/srt/layers/attention/dsv4/metadata.py``) with one of two kernels:

- by default (``SGLANG_OPT_USE_JIT_INDEXER_METADATA``, on unless set to 0), its own
  ``deepseek_v4/paged_mqa_metadata.cuh``, JIT-compiled: here built from the wheel's file
  (:func:`kernel_text`) and launched as its host code launches it;
- otherwise DeepGEMM's ``get_paged_mqa_logits_metadata``: with ``sgl-deep-gemm`` 0.2.3.post2
  the SM90 scheduler header of DeepGEMM 2.6.1 (the file this verification measures), built
  here against that wheel's own include closure.

Its lengths for the ratio-4 indexer are ``c4_topk_lengths_raw``: ``seq_len // 4`` from the
Triton kernel ``init_compression_metadata`` (``kernels/ops/attention/dsv4/metadata_kernel.py``,
run here from the wheel's file). A decode CUDA graph is captured with every sequence length
1 (the DeepSeek-V4 backend's ``get_cuda_graph_seq_len_fill_value``), so every length the
schedule gets is 0. Pure data and the CPU model live here too (no torch at import), for the
CPU test that checks the committed report.
"""

from __future__ import annotations

import hashlib
import importlib.util
import random
import re
from pathlib import Path
from types import ModuleType
from typing import Any

Row = dict[str, Any]

JIT_HEADER = "sglang/kernels/jit/csrc/deepseek_v4/paged_mqa_metadata.cuh"
TRITON_FILE = "sglang/kernels/ops/attention/dsv4/metadata_kernel.py"
KERNELS_HEADER = "sglang_paged_mqa_metadata_kernels.cuh"
JIT_SOURCES = tuple(
    Path(__file__).with_name(n) for n in ("sglang_metadata.cpp", "sglang_metadata_launch.cu")
)

SPLIT_KV = 256
"""``kSplitKV`` of the JIT kernel (and DeepGEMM's SM90 scheduler)."""
PAGE_SIZE = 256
"""DeepSeek-V4's page size in SGLang (``assert self.page_size == 256``)."""
COMPRESSED_PAGE_SIZE = PAGE_SIZE // 4
"""``page_size // compress_ratio``: the block size both schedule kernels are called with."""
SEQ_LEN_FILL_VALUE = 1
"""``DeepseekV4Backend.get_cuda_graph_seq_len_fill_value()``: every captured row's length."""
MAX_BS = 512
"""``--cuda-graph-max-bs`` of the capture sizes below (an assumption of this run)."""
PATHS = ("deep_gemm", "jit")
"""Which schedule kernel a capture calls: DeepGEMM's (``SGLANG_OPT_USE_JIT_INDEXER_METADATA=0``)
or SGLang's own (the default)."""

_HOST_INCLUDE = re.compile(r"^#include <(?:sgl_kernel|dlpack|tvm)/[^>]+>\n", re.MULTILINE)
_HOST_STRUCT = re.compile(r"^struct IndexerMetadataKernel \{\n.*?^\};\n", re.MULTILINE | re.DOTALL)


def kernel_text(source: str) -> str:
    """The JIT header's device code: its text less the includes of SGLang's and TVM's host
    headers and the host struct ``IndexerMetadataKernel`` (which binds TVM's tensors).
    Raises ``ValueError`` when the file does not have that shape."""
    kept, includes = _HOST_INCLUDE.subn("", source)
    kept, structs = _HOST_STRUCT.subn("", kept)
    if includes == 0 or structs != 1 or "__global__" not in kept:
        raise ValueError(
            f"{JIT_HEADER}: not the expected layout (host includes and one host struct)"
        )
    return kept


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def write_kernels_header(pieces: Path, manifest: Row, include_dir: Path) -> Row:
    """Check the wheel's JIT header against the manifest, write its device code where the
    launcher includes it, and describe both."""
    piece = manifest["sglang"]
    source_path = pieces / piece["path"] / JIT_HEADER
    data = source_path.read_bytes()
    want = piece["files_sha256"][JIT_HEADER]
    if hashlib.sha256(data).hexdigest() != want:
        raise RuntimeError(f"{source_path}: sha256 differs from the manifest's {want}")
    text = kernel_text(data.decode())
    include_dir.mkdir(parents=True, exist_ok=True)
    (include_dir / KERNELS_HEADER).write_text(text)
    return {"header": JIT_HEADER, "header_sha256": want, "kernels_sha256": sha256_text(text)}


# -- the CPU model of SGLang's schedule kernel --------------------------------------------------


def jit_schedule(lens: list[int], num_sm: int) -> list[tuple[int, int]]:
    """What ``paged_mqa_metadata.cuh`` writes for ``lens`` on ``num_sm`` SMs: the tiny, small
    and multi-block kernels compute the same table. Prefix sums of ``ceil(len / 256)``; SM
    ``i`` starts at target ``i * avg`` plus one per SM past ``pivot``; its row is the first
    whose prefix exceeds the target (``(B, 0)`` when none does)."""
    prefix: list[int] = []
    running = 0
    for length in lens:
        running += (length + SPLIT_KV - 1) // SPLIT_KV
        prefix.append(running)
    avg, ret = divmod(running, num_sm)
    pivot = num_sm - ret
    out = []
    for i in range(num_sm + 1):
        target = i * avg + (i - pivot if i > pivot else 0)
        lo, hi = 0, len(lens)
        while lo < hi:
            mid = (lo + hi) // 2
            if prefix[mid] <= target:
                lo = mid + 1
            else:
                hi = mid
        if lo >= len(lens):
            out.append((len(lens), 0))
        else:
            out.append((lo, target - (prefix[lo - 1] if lo else 0)))
    return out


# -- the cases -----------------------------------------------------------------------------------


ALL_ZERO_BATCHES = (0, 1, 31, 32, 33, 64, 65, 96, 128, 256, 1024, 2048, 2049, 4096, 8192)
"""Every length 0: each of the three kernels, at and around 32 and the kernels' limits."""
RANDOM_BATCHES = (1, 32, 132, 2048, 2049, 5000)
MIXED_BATCHES = (64, 3000)
MEMCHECK_JIT_CASES = ("all 0 B=0", "all 0 B=32", "all 0 B=4096")
"""Under memcheck: the empty batch, the tiny kernel at 32 rows and the multi-block path."""


def jit_cases() -> list[Row]:
    """The schedule kernel's own cases, each rebuilt from its ``id`` by :func:`case_lens`."""
    rows = [{"id": f"all 0 B={b}", "batch": b} for b in ALL_ZERO_BATCHES]
    rows += [{"id": f"every row 1 B={b}", "batch": b} for b in (32, 4096)]
    rows += [{"id": f"random B={b}", "batch": b} for b in RANDOM_BATCHES]
    rows += [{"id": f"half 0 B={b}", "batch": b} for b in MIXED_BATCHES]
    return rows


def case_lens(case: Row) -> list[int]:
    batch, kind = case["batch"], case["id"].split(" B=")[0]
    if kind == "all 0":
        return [0] * batch
    if kind == "every row 1":
        return [1] * batch
    rng = random.Random(f"zerolint-sglang:{case['id']}")
    if kind == "random":
        return [rng.randint(1, 200_000) for _ in range(batch)]
    if kind == "half 0":
        return [0 if rng.random() < 0.5 else rng.randint(1, 200_000) for _ in range(batch)]
    raise ValueError(f"unknown case {case['id']!r}")


def decode_capture_sizes(max_bs: int = MAX_BS) -> list[int]:
    """SGLang 0.5.23's decode CUDA-graph batch sizes without speculative decoding
    (``generate_decode_cuda_graph_batch_sizes``): 1, 2, 4, 8, 12, steps of 8 to 256, of 16
    below 512, of 32 from 512, and ``max_bs`` itself."""
    sizes = [1, 2, 4, 8, 12, *range(16, 257, 8), *range(272, 512, 16), *range(512, max_bs + 1, 32)]
    sizes = [s for s in sizes if s <= max_bs]
    if max_bs not in sizes:
        sizes.append(max_bs)
    return sizes


def capture_lens(size: int) -> list[int]:
    """The ratio-4 lengths a captured decode batch of ``size`` hands the schedule."""
    return [SEQ_LEN_FILL_VALUE // 4] * size


# -- on the GPU (worker side) --------------------------------------------------------------------

_LOADED: dict[str, Any] = {}


def _extension(path: str) -> Any:
    if path not in _LOADED:
        from runtime_guard._sm90.build import load_built

        _LOADED[path] = load_built(Path(path))
    return _LOADED[path]


def triton_module(path: str) -> ModuleType:
    """SGLang's ``metadata_kernel.py``, loaded from the wheel's file (torch and Triton only)."""
    if path not in _LOADED:
        spec = importlib.util.spec_from_file_location("sglang_dsv4_metadata_kernel", path)
        if spec is None or spec.loader is None:
            raise ImportError(f"{path}: cannot be loaded")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _LOADED[path] = module
    return _LOADED[path]


def schedule_fn(options: Row, path: str) -> Any:
    ext = options["jit_ext"] if path == "jit" else options["deep_gemm_ext"]
    return _extension(ext).get_paged_mqa_logits_metadata


def run_jit_case(ctx: Any, case: Row, options: Row) -> Row:
    """One input through SGLang's schedule kernel, or DeepGEMM's where the case says so."""
    from runtime_guard import reference

    torch = ctx.torch
    lens = case_lens(case)
    path = case.get("path", "jit")
    tensor = torch.tensor(lens, dtype=torch.int32, device="cuda").reshape(len(lens), 1)
    out = schedule_fn(options, path)(tensor, COMPRESSED_PAGE_SIZE, ctx.num_sms)
    torch.cuda.synchronize()
    got = [tuple(pair) for pair in out.tolist()]
    row: Row = {"status": "ok", "digest": _digest(got)}
    if path == "jit":
        row["model_match"] = got == jit_schedule(lens, ctx.num_sms)
    model = reference.schedule([[n] for n in lens], ctx.num_sms) if lens else None
    if model is not None and not model.faults:
        row["deep_gemm_model_match"] = got == [tuple(p) for p in model.schedule]
    return row


def run_capture_case(ctx: Any, case: Row, options: Row) -> Row:
    """A decode batch of ``size`` as the DeepSeek-V4 backend builds it: eagerly once (the
    graph runner's warm-up), then captured in a CUDA graph and replayed."""
    torch = ctx.torch
    size, path = case["size"], case["path"]
    kernels = triton_module(options["triton_file"])
    schedule = schedule_fn(options, path)
    buffers = _capture_buffers(torch, options["max_size"], ctx.num_sms)

    def build_metadata() -> None:
        outputs = kernels.init_compression_metadata(
            buffers["seq_lens"][:size],
            buffers["positions"][:size],
            buffers["out_loc"][:size],
            buffers["page_table"][:size],
            PAGE_SIZE,
            compute_page_indices=True,
        )
        lens = outputs[2].to(torch.int32)  # c4_topk_lengths_raw
        if lens.dim() == 1:
            lens = lens.unsqueeze(-1)
        buffers["lens"][:size].copy_(lens.view(-1))
        table = schedule(lens.view(-1, 1), COMPRESSED_PAGE_SIZE, ctx.num_sms)
        buffers["schedule"].copy_(table)

    stage = "eager"
    try:
        build_metadata()
        torch.cuda.synchronize()
        stage = "capture"
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            build_metadata()
        stage = "replay"
        graph.replay()
        torch.cuda.synchronize()
    except Exception as error:
        if "CUDA error" in str(error) or type(error).__name__ == "AcceleratorError":
            first = str(error).strip().splitlines()[0] if str(error).strip() else ""
            raise RuntimeError(f"CUDA error in the {stage} step: {first}") from error
        raise
    lens = buffers["lens"][:size].tolist()
    got = [tuple(pair) for pair in buffers["schedule"].tolist()]
    row: Row = {"status": "ok", "stage": "replay", "digest": _digest(got), "lens_max": max(lens)}
    if path == "jit":
        row["model_match"] = got == jit_schedule(lens, ctx.num_sms)
    else:
        from runtime_guard import reference

        model = reference.schedule([[n] for n in lens], ctx.num_sms)
        row["model_match"] = not model.faults and got == [tuple(p) for p in model.schedule]
    return row


_BUFFERS: dict[str, Any] = {}


def _capture_buffers(torch: Any, max_size: int, num_sms: int) -> dict[str, Any]:
    """Persistent inputs, as the graph runner keeps them: every length the fill value, each
    position ``seq_len - 1``, cache locations 0, one page per request."""
    if not _BUFFERS:
        cuda = {"device": "cuda"}
        _BUFFERS["seq_lens"] = torch.full(
            (max_size,), SEQ_LEN_FILL_VALUE, dtype=torch.int32, **cuda
        )
        _BUFFERS["positions"] = _BUFFERS["seq_lens"] - 1
        _BUFFERS["out_loc"] = torch.zeros(max_size, dtype=torch.int64, **cuda)
        _BUFFERS["page_table"] = torch.zeros(max_size, 1, dtype=torch.int32, **cuda)
        _BUFFERS["lens"] = torch.full((max_size,), -1, dtype=torch.int32, **cuda)
        _BUFFERS["schedule"] = torch.zeros(num_sms + 1, 2, dtype=torch.int32, **cuda)
    return _BUFFERS


def _digest(schedule: list[tuple[int, int]]) -> str:
    from runtime_guard._sm90 import cases as C

    return C.schedule_digest(schedule)
