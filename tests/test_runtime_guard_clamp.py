"""clamp_context_lens, guard() and the get_paged_mqa_logits_metadata wrapper.

Policy on devices: clamp_context_lens and guard() work on any device (the clamp is one
elementwise op); runtime_guard.get_paged_mqa_logits_metadata calls DeepGEMM and requires
a CUDA tensor, as DeepGEMM does.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator

import pytest
import torch

import runtime_guard
from runtime_guard import clamp_context_lens, guard, is_guarded, unguarded

# --- clamp_context_lens ----------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.int16, torch.uint8])
def test_clamp_raises_zeros_to_one_and_keeps_dtype(dtype: torch.dtype) -> None:
    lens = torch.tensor([[0], [1], [0], [100]], dtype=dtype)
    clamped = clamp_context_lens(lens)
    assert clamped.tolist() == [[1], [1], [1], [100]]
    assert clamped.dtype == dtype
    assert clamped.shape == lens.shape


def test_clamp_does_not_touch_its_input() -> None:
    lens = torch.zeros(8, dtype=torch.int32)
    clamp_context_lens(lens)
    assert lens.tolist() == [0] * 8


def test_clamp_output_is_contiguous_for_a_strided_view() -> None:
    # The last column of (B, next_n) lens, as a strided view: DeepGEMM asserts contiguity.
    view = torch.zeros(16, 2, dtype=torch.int32)[:, 1:]
    assert not view.is_contiguous()
    clamped = clamp_context_lens(view)
    assert clamped.is_contiguous()
    assert clamped.tolist() == [[1]] * 16


def test_clamp_writes_into_out_and_returns_it() -> None:
    out = torch.full((4, 1), -7, dtype=torch.int32)
    address = out.data_ptr()
    result = clamp_context_lens(torch.tensor([[0], [2], [0], [5]], dtype=torch.int32), out=out)
    assert result is out
    assert out.data_ptr() == address
    assert out.tolist() == [[1], [2], [1], [5]]


@pytest.mark.parametrize(
    ("lens", "error", "message"),
    [
        ([0, 1], TypeError, "must be a torch.Tensor, got list"),
        (torch.zeros(4), TypeError, "integer dtype, got torch.float32"),
        (torch.zeros(4, dtype=torch.bool), TypeError, "integer dtype, got torch.bool"),
        (torch.tensor(0, dtype=torch.int32), ValueError, r"1-D \(batch,\) or 2-D .* shape \(\)"),
        (torch.zeros(2, 2, 2, dtype=torch.int32), ValueError, r"shape \(2, 2, 2\)"),
    ],
)
def test_clamp_refuses_what_is_not_a_length_tensor(lens: object, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        clamp_context_lens(lens)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("out", "error", "message"),
    [
        ([0] * 4, TypeError, "out must be a torch.Tensor"),
        (torch.zeros(5, dtype=torch.int32), ValueError, r"out has shape \(5,\)"),
        (torch.zeros(4, dtype=torch.int64), ValueError, "out has dtype torch.int64"),
        (torch.zeros(4, 2, dtype=torch.int32)[:, 0], ValueError, "out must be contiguous"),
    ],
)
def test_clamp_refuses_an_out_that_would_move_or_change(
    out: object, error: type, message: str
) -> None:
    with pytest.raises(error, match=message):
        clamp_context_lens(torch.zeros(4, dtype=torch.int32), out=out)  # type: ignore[arg-type]


# --- guard() -----------------------------------------------------------------------------


def recording_kernel(calls: list) -> object:
    def get_paged_mqa_logits_metadata(context_lens, block_kv, num_sms, **kwargs):
        calls.append((context_lens.tolist(), block_kv, num_sms, kwargs))
        return "schedule"

    return get_paged_mqa_logits_metadata


def test_guard_clamps_the_first_positional_argument_and_forwards_the_rest() -> None:
    calls: list = []
    guarded = guard(recording_kernel(calls))
    result = guarded(torch.tensor([[0], [3]], dtype=torch.int32), 64, 132, indices=None)
    assert result == "schedule"
    assert calls == [([[1], [3]], 64, 132, {"indices": None})]


def test_guard_clamps_context_lens_passed_by_keyword() -> None:
    calls: list = []
    guarded = guard(recording_kernel(calls))
    guarded(context_lens=torch.zeros(2, dtype=torch.int32), block_kv=64, num_sms=8)
    assert calls == [([1, 1], 64, 8, {})]


def test_guard_keeps_the_wrapped_name_and_unwraps() -> None:
    kernel = recording_kernel([])
    guarded = guard(kernel)
    assert guarded.__name__ == "get_paged_mqa_logits_metadata"
    assert is_guarded(guarded) and not is_guarded(kernel)
    assert unguarded(guarded) is kernel
    assert unguarded(kernel) is kernel


def test_guarding_twice_returns_the_same_guard() -> None:
    guarded = guard(recording_kernel([]))
    assert guard(guarded) is guarded


def test_guarded_call_refuses_a_float_tensor_before_the_kernel_sees_it() -> None:
    calls: list = []
    with pytest.raises(TypeError, match="integer dtype"):
        guard(recording_kernel(calls))(torch.zeros(2), 64, 8)
    assert calls == []


# --- runtime_guard.get_paged_mqa_logits_metadata --------------------------------------


@pytest.fixture
def no_deep_gemm(monkeypatch: pytest.MonkeyPatch) -> None:
    # None in sys.modules makes an import raise ImportError, whatever is installed.
    for name in ("deep_gemm", "vllm", "vllm.third_party", "vllm.third_party.deep_gemm"):
        monkeypatch.setitem(sys.modules, name, None)


@pytest.fixture
def vendored_deep_gemm(no_deep_gemm: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[list]:
    calls: list = []
    module = types.ModuleType("vllm.third_party.deep_gemm")
    module.get_paged_mqa_logits_metadata = recording_kernel(calls)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vllm.third_party.deep_gemm", module)
    yield calls


def test_wrapper_without_deep_gemm_says_so(no_deep_gemm: None) -> None:
    with pytest.raises(RuntimeError, match="DeepGEMM not found: none of deep_gemm, vllm"):
        runtime_guard.get_paged_mqa_logits_metadata(torch.zeros(2, dtype=torch.int32), 64, 132)


def test_wrapper_resolves_the_vendored_copy_and_refuses_a_cpu_tensor(
    vendored_deep_gemm: list,
) -> None:
    with pytest.raises(ValueError, match="must be a CUDA tensor for DeepGEMM, got a tensor on cpu"):
        runtime_guard.get_paged_mqa_logits_metadata(torch.zeros(2, dtype=torch.int32), 64, 132)
    assert vendored_deep_gemm == []


def test_wrapper_names_a_deep_gemm_without_the_function(
    no_deep_gemm: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "deep_gemm", types.ModuleType("deep_gemm"))
    with pytest.raises(RuntimeError, match="deep_gemm has no get_paged_mqa_logits_metadata"):
        runtime_guard.get_paged_mqa_logits_metadata(torch.zeros(2, dtype=torch.int32), 64, 132)


# --- on a CUDA device (skipped elsewhere) ----------------------------------------------------

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@needs_cuda
def test_wrapper_clamps_on_cuda_and_forwards(vendored_deep_gemm: list) -> None:
    lens = torch.zeros(32, 1, dtype=torch.int32, device="cuda")
    runtime_guard.get_paged_mqa_logits_metadata(lens, 64, 132)
    assert vendored_deep_gemm == [([[1]] * 32, 64, 132, {})]


@needs_cuda
def test_clamp_is_captured_and_replayed_in_a_cuda_graph() -> None:
    # Capture fails on any host synchronisation; replay must see the lengths of the moment.
    lens = torch.zeros(32, 1, dtype=torch.int32, device="cuda")
    out = torch.empty_like(lens)
    clamp_context_lens(lens, out=out)  # warm-up outside the graph
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        clamp_context_lens(lens, out=out)
    lens.copy_(torch.arange(32, dtype=torch.int32, device="cuda").unsqueeze(-1))
    graph.replay()
    torch.cuda.synchronize()
    assert out.squeeze(-1).tolist() == [1, *range(1, 32)]


@needs_cuda
def test_guard_runs_inside_a_cuda_graph_capture() -> None:
    lens = torch.zeros(64, 1, dtype=torch.int32, device="cuda")

    def kernel(context_lens: torch.Tensor, block_kv: int, num_sms: int) -> torch.Tensor:
        return context_lens * block_kv

    guarded = guard(kernel)
    guarded(lens, 64, 132)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        result = guarded(lens, 64, 132)
    graph.replay()
    torch.cuda.synchronize()
    assert result.device.type == "cuda"
    assert result.squeeze(-1).tolist() == [64] * 64
