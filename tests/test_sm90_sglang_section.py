"""Section 8 of the SM90 verification (SGLang's DeepSeek-V4 indexer schedule), on the CPU.

The section has not run on a GPU yet (docs/sm90-verification.md says so); these tests hold
what it will check to the facts it rests on: the CPU model of SGLang's schedule kernel
agrees with ``runtime_guard.reference`` (DeepGEMM's, checked against the real kernel in
section 4) wherever DeepGEMM's does not fault, the capture sizes are SGLang's, and the
section's verdict follows from its rows.
"""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest

from runtime_guard import reference
from runtime_guard._sm90 import cases, render, tally
from runtime_guard._sm90 import sglang as S

Row = dict[str, Any]
NUM_SMS = 132


def _random_lens(rng: random.Random) -> list[int]:
    batch = rng.choice((1, 5, 31, 32, 33, 100, 132, 264, 1000))
    zero_share = rng.choice((0.0, 0.3, 0.9))
    return [0 if rng.random() < zero_share else rng.randint(1, 150_000) for _ in range(batch)]


def test_the_model_of_sglangs_kernel_is_deepgemms_schedule_where_deepgemms_does_not_fault() -> None:
    rng = random.Random("sglang-model")
    compared = 0
    for _ in range(400):
        lens = _random_lens(rng)
        deep_gemm = reference.schedule([[n] for n in lens], NUM_SMS)
        if deep_gemm.faults:
            continue
        assert S.jit_schedule(lens, NUM_SMS) == [tuple(p) for p in deep_gemm.schedule], lens
        compared += 1
    assert compared > 300


@pytest.mark.parametrize("batch", S.ALL_ZERO_BATCHES)
def test_every_length_zero_gives_every_sm_the_end_of_the_batch(batch: int) -> None:
    assert S.jit_schedule([0] * batch, NUM_SMS) == [(batch, 0)] * (NUM_SMS + 1)
    if batch and batch % 32 == 0:  # where DeepGEMM's kernel reads past its buffer
        assert cases.fault_predicate([[0]] * batch)


def test_the_schedule_splits_the_work_evenly_and_ends_at_the_end() -> None:
    rng = random.Random("sglang-split")
    for _ in range(100):
        lens = [rng.randint(0, 5000) for _ in range(rng.randint(1, 300))]
        table = S.jit_schedule(lens, NUM_SMS)
        segments = [(n + S.SPLIT_KV - 1) // S.SPLIT_KV for n in lens]
        total = sum(segments)
        starts = [sum(segments[:q]) + offset for q, offset in table]
        assert table[-1] == (len(lens), 0) and starts[0] == 0
        steps = {b - a for a, b in itertools.pairwise(starts)}
        assert steps <= {total // NUM_SMS, total // NUM_SMS + 1}, (lens, steps)


def test_the_capture_sizes_are_sglangs_decode_sizes() -> None:
    sizes = S.decode_capture_sizes(512)
    assert sizes[:6] == [1, 2, 4, 8, 12, 16] and sizes[-3:] == [480, 496, 512]
    assert len(sizes) == 52
    assert [s for s in sizes if s % 32 == 0] == list(range(32, 513, 32))
    assert S.decode_capture_sizes(100)[-2:] == [96, 100]  # max_bs itself is captured
    assert S.capture_lens(8) == [0] * 8  # seq_len 1 // 4


def test_the_cases_rebuild_from_their_names() -> None:
    rows = S.jit_cases()
    assert len({r["id"] for r in rows}) == len(rows)
    for row in rows:
        lens = S.case_lens(row)
        assert len(lens) == row["batch"] and lens == S.case_lens(dict(row))
    assert S.case_lens({"id": "half 0 B=64", "batch": 64}).count(0) in range(10, 55)
    assert set(S.MEMCHECK_JIT_CASES) <= {r["id"] for r in rows}
    with pytest.raises(ValueError):
        S.case_lens({"id": "other B=3", "batch": 3})


LAYOUT = """// a kernel file
#include <sgl_kernel/tensor.h>
#include <tvm/ffi/container/tensor.h>

#include <cub/block/block_scan.cuh>

namespace sglang {
__global__ void k(int* x) { x[0] = 1; }

struct IndexerMetadataKernel {
  static void run(int x) {
    host::launch(x);
  }
};

}  // namespace sglang
"""


def test_the_device_code_is_the_file_less_its_host_parts() -> None:
    kept = S.kernel_text(LAYOUT)
    assert "sgl_kernel" not in kept and "tvm" not in kept and "IndexerMetadataKernel" not in kept
    assert "#include <cub/block/block_scan.cuh>" in kept and "__global__ void k" in kept
    assert kept.rstrip().endswith("}  // namespace sglang")
    with pytest.raises(ValueError):
        S.kernel_text(LAYOUT.replace("struct IndexerMetadataKernel", "struct Other"))
    with pytest.raises(ValueError):
        S.kernel_text(
            LAYOUT.replace("#include <sgl_kernel/tensor.h>\n", "").replace(
                "#include <tvm/ffi/container/tensor.h>\n", ""
            )
        )


def _section(fault_sizes: set[int], jit_status: str = "ok") -> Row:
    sizes = S.decode_capture_sizes()
    jit_rows = [
        {"case": c["id"], "batch": c["batch"], "status": jit_status, "model_match": True}
        for c in S.jit_cases()
    ]
    rows = []
    for path in S.PATHS:
        for size in sizes:
            predicted = path == "deep_gemm" and size % 32 == 0
            faulted = path == "deep_gemm" and size in fault_sizes
            row: Row = {"size": size, "path": path, "predicted_fault": predicted}
            if faulted:
                row.update(status="fault", error="RuntimeError: CUDA error in the eager step: x")
            else:
                row.update(status="ok", stage="replay", model_match=True, lens_max=0)
            rows.append(row)
    memcheck = {"worker_status": "ok", "first_error": [], "out_of_bounds": [], "case": "c"}
    sanitizer = [
        {**memcheck, "path": "jit", "errors": 0, "invalid_shared_reads": 0},
        {**memcheck, "path": "deep_gemm", "errors": 2, "invalid_shared_reads": 1},
    ]
    return {"jit_rows": jit_rows, "rows": rows, "sanitizer": sanitizer}


def _passed(section: Row) -> bool:
    return tally.passed_of("sglang", tally.counts_of("sglang", section))


def test_the_verdict_needs_deep_gemms_faults_at_exactly_the_multiples_of_32() -> None:
    multiples = {s for s in S.decode_capture_sizes() if s % 32 == 0}
    assert _passed(_section(multiples))
    assert not _passed(_section(multiples - {256}))
    assert not _passed(_section(multiples | {8}))
    assert not _passed(_section(multiples, jit_status="fault"))
    clean = _section(multiples)
    clean["sanitizer"][0]["errors"] = 1
    assert not _passed(clean)


def test_the_section_renders_from_its_rows() -> None:
    multiples = {s for s in S.decode_capture_sizes() if s % 32 == 0}
    section = _section(multiples)
    section["counts"] = tally.counts_of("sglang", section)
    section["builds"] = {
        "jit": {
            "header": S.JIT_HEADER,
            "header_sha256": "a" * 64,
            "kernels_sha256": "b" * 64,
            "sources": ["runtime_guard/_sm90/sglang_metadata.cpp"],
        },
        "deep_gemm": {
            "header": "deep_gemm/scheduler/sm90_paged_mqa_logits.cuh",
            "header_sha256": "c" * 64,
            "wheel": "sgl_deep_gemm.whl",
        },
    }
    section["config"] = {
        "max_bs": S.MAX_BS,
        "page_size": S.PAGE_SIZE,
        "compressed_page_size": S.COMPRESSED_PAGE_SIZE,
        "seq_len_fill_value": S.SEQ_LEN_FILL_VALUE,
    }
    text = render.sglang({"sglang": section})
    assert f"| DeepGEMM's kernel: faults | {len(multiples)} |" in text
    assert "faulted at sizes 32, 64, 96" in text
    assert "| all 0 B=32 | ok, table = model: yes |" in text
