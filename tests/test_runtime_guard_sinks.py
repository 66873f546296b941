"""The attention and logits guards (runtime_guard.attention) and their install()/uninstall()
and switches, on CPU tensors.

The masking is plain torch and runs here for real. Where a test is about the wrapper's
plumbing (which argument is the output, whether the kernel is called), a small stand-in
kernel behaves as the probe measured the real one (docs/zero-length-probe.md): Triton MLA
writes NaN into rows of length 0 and -inf into their LSE; FlashMLA writes output 0 and LSE
+inf there and refuses B = 0; DeepGEMM's logits refuse B = 0. The guards' results are
asserted on, never the stand-ins'.
"""

from __future__ import annotations

import importlib
import logging
import math
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

import runtime_guard
from runtime_guard import is_guarded, unguarded
from runtime_guard.attention import (
    fill_empty_rows_,
    guard_flash_mla_with_kvcache,
    guard_paged_mqa_logits,
    guard_triton_mla_decode,
)
from runtime_guard.patch import disabled_sinks, sink_enabled
from runtime_guard.sinks import BY_NAME, SINKS

LENS = torch.tensor([0, 7, 0, 130, 1], dtype=torch.int32)
ZERO = [0, 2]
KEEP = [1, 3, 4]


class Calls:
    def __init__(self) -> None:
        self.count = 0


def triton_like(calls: Calls):
    def decode_attention_fwd(q, k_buffer, v_buffer, o, lse, req_to_token, b_seq_len,
                             attn_logits, num_kv_splits, sm_scale, page_size=1, logit_cap=0.0,
                             k_scale=None, v_scale=None, is_mla=False):  # fmt: skip
        calls.count += 1
        gen = torch.Generator().manual_seed(3)
        o.copy_(torch.randn(o.shape, generator=gen).to(o.dtype))
        lse.copy_(torch.randn(lse.shape, generator=gen).to(lse.dtype))
        o[b_seq_len == 0] = float("nan")
        lse[b_seq_len == 0] = -math.inf

    return decode_attention_fwd


def flashmla_like(calls: Calls):
    def flash_mla_with_kvcache(q, k_cache, block_table, cache_seqlens, head_dim_v, meta,
                               num_splits=None, softmax_scale=None, causal=False,
                               is_fp8_kvcache=False, indices=None, attn_sink=None,
                               extra_k_cache=None, extra_indices_in_kvcache=None,
                               topk_length=None, extra_topk_length=None, out=None):  # fmt: skip
        calls.count += 1
        batch, s_q, h_q, _ = q.shape
        if batch == 0:
            raise RuntimeError("dense_attn_decode_interface: batch size must be positive")
        gen = torch.Generator().manual_seed(5)
        result = torch.randn(batch, s_q, h_q, head_dim_v, generator=gen).to(q.dtype)
        lse = torch.randn(batch, h_q, s_q, generator=gen)
        result[cache_seqlens == 0] = 0
        lse[cache_seqlens == 0] = math.inf
        return result, lse

    return flash_mla_with_kvcache


def logits_like(calls: Calls):
    def fp8_paged_mqa_logits(q, kv, weights, lens, table, schedule, max_context_len, clean):
        calls.count += 1
        values = q[0] if isinstance(q, tuple) else q
        if values.shape[0] == 0:
            raise RuntimeError("CUDA driver error: 1 (CUDA_ERROR_INVALID_VALUE)")
        return torch.ones(values.shape[0] * values.shape[1], max_context_len)

    return fp8_paged_mqa_logits


# --- the masking itself ----------------------------------------------------------------------


@pytest.mark.parametrize("value", [0.0, -math.inf])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_fill_empty_rows_writes_only_the_zero_rows(value: float, dtype: torch.dtype) -> None:
    tensor = torch.randn(5, 16, 8).to(dtype)
    tensor[ZERO] = float("nan")
    before = tensor.clone()
    address = tensor.data_ptr()
    assert fill_empty_rows_(tensor, LENS, value) is tensor
    assert tensor.data_ptr() == address
    assert torch.equal(tensor[KEEP], before[KEEP])
    assert (tensor[ZERO] == value).all()


def test_fill_empty_rows_rejects_lengths_of_another_batch() -> None:
    with pytest.raises(ValueError, match="one length per row"):
        fill_empty_rows_(torch.zeros(4, 3), LENS, 0.0)


# --- Triton MLA decode: output 0 in the zero rows, in the caller's buffer ----------------------


def triton_call(fn, batch: int = 5):
    o = torch.empty(batch, 16, 512, dtype=torch.bfloat16)
    lse = torch.empty(batch, 16, dtype=torch.bfloat16)
    lens = LENS[:batch]
    fn(None, None, None, o, lse, None, lens, None, 4, 0.1, 64, k_scale=None, is_mla=True)
    return o, lse


def test_triton_guard_zeroes_the_nan_rows_and_keeps_the_others() -> None:
    calls = Calls()
    kernel = triton_like(calls)
    plain_o, plain_lse = triton_call(kernel)
    o, lse = triton_call(guard_triton_mla_decode(kernel))
    assert plain_o[ZERO].isnan().all()  # the hazard the guard is for
    assert (o[ZERO] == 0).all() and torch.isneginf(lse[ZERO]).all()
    assert torch.equal(o[KEEP], plain_o[KEEP]) and torch.equal(lse, plain_lse)
    assert calls.count == 2


def test_triton_guard_skips_the_launch_for_an_empty_batch() -> None:
    calls = Calls()
    o, lse = triton_call(guard_triton_mla_decode(triton_like(calls)), batch=0)
    assert calls.count == 0 and o.shape == (0, 16, 512) and lse.shape == (0, 16)


def test_triton_guard_takes_its_tensors_by_keyword_too() -> None:
    guarded = guard_triton_mla_decode(triton_like(Calls()))
    o = torch.empty(5, 16, 512)
    lse = torch.empty(5, 16)
    guarded(None, None, None, o=o, lse=lse, req_to_token=None, b_seq_len=LENS,
            attn_logits=None, num_kv_splits=4, sm_scale=0.1)  # fmt: skip
    assert not o.isnan().any()


# --- FlashMLA dense: LSE -inf in the zero rows, empty batch without a launch -------------------


def flashmla_inputs(batch: int = 5) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(batch, 1, 16, 576).to(torch.bfloat16), LENS[:batch]


def test_flashmla_guard_writes_the_empty_row_identity() -> None:
    kernel = flashmla_like(Calls())
    q, lens = flashmla_inputs()
    plain_out, plain_lse = kernel(q, None, None, lens, 512, None, causal=True)
    out, lse = guard_flash_mla_with_kvcache(kernel)(q, None, None, lens, 512, None, causal=True)
    assert torch.isposinf(plain_lse[ZERO]).all()
    assert torch.isneginf(lse[ZERO]).all() and (out[ZERO] == 0).all()
    assert torch.equal(lse[KEEP], plain_lse[KEEP]) and torch.equal(out, plain_out)


def test_flashmla_guard_returns_empty_outputs_for_an_empty_batch() -> None:
    calls = Calls()
    q, lens = flashmla_inputs(0)
    out, lse = guard_flash_mla_with_kvcache(flashmla_like(calls))(q, None, None, lens, 512, None)
    assert calls.count == 0
    assert (out.shape, out.dtype) == ((0, 1, 16, 512), torch.bfloat16)
    assert (lse.shape, lse.dtype) == ((0, 16, 1), torch.float32)


@pytest.mark.parametrize("by_keyword", [True, False])
def test_flashmla_guard_returns_the_callers_out_for_an_empty_batch(by_keyword: bool) -> None:
    """The kernel refuses B = 0 whether or not the caller passes its own ``out`` buffer."""
    calls = Calls()
    q, lens = flashmla_inputs(0)
    buffer = torch.empty(0, 1, 16, 512, dtype=torch.bfloat16)
    guarded = guard_flash_mla_with_kvcache(flashmla_like(calls))
    if by_keyword:
        out, lse = guarded(q, None, None, lens, 512, None, out=buffer)
    else:
        # num_splits, softmax_scale, causal, is_fp8_kvcache, indices ... extra_topk_length
        rest = (None, None, False, False, *[None] * 6)
        out, lse = guarded(q, None, None, lens, 512, None, *rest, buffer)
    assert calls.count == 0 and out is buffer
    assert (lse.shape, lse.dtype) == ((0, 16, 1), torch.float32)


@pytest.mark.parametrize(
    "extra", [{"indices": torch.zeros(5, 1, 8, dtype=torch.int32)}, {"is_fp8_kvcache": True}]
)
def test_flashmla_guard_leaves_the_paths_it_was_not_measured_on(extra: dict) -> None:
    q, lens = flashmla_inputs()
    _, lse = guard_flash_mla_with_kvcache(flashmla_like(Calls()))(
        q, None, None, lens, 512, None, **extra
    )
    assert torch.isposinf(lse[ZERO]).all()


# --- DeepGEMM paged logits: the empty batch --------------------------------------------------


@pytest.mark.parametrize("tuple_q", [False, True])
def test_logits_guard_answers_an_empty_batch_without_a_launch(tuple_q: bool) -> None:
    calls = Calls()
    q = torch.empty(0, 2, 64, 128)
    guarded = guard_paged_mqa_logits(logits_like(calls))
    logits = guarded((q, None) if tuple_q else q, None, None, None, None, None, 16384, False)
    assert calls.count == 0
    assert (logits.shape, logits.dtype, logits.device) == ((0, 16384), torch.float32, q.device)


def sgl_fp4_logits_like(calls: Calls):
    """sgl-deep-gemm 0.2.3.post2's signature; the logits in the dtype asked for."""

    def fp8_fp4_paged_mqa_logits(q, kv_cache, weights, context_lens, block_table,
                                 schedule_meta, max_context_len, clean_logits=False,
                                 logits_dtype=torch.float, indices=None):  # fmt: skip
        calls.count += 1
        values = q[0] if isinstance(q, (tuple, list)) else q
        if values.shape[0] == 0:
            raise RuntimeError("CUDA driver error: 1 (CUDA_ERROR_INVALID_VALUE)")
        rows = values.shape[0] * values.shape[1]
        return torch.zeros(rows, max_context_len, dtype=logits_dtype)

    return fp8_fp4_paged_mqa_logits


class CompiledLogits:
    """A kernel whose signature Python cannot read (a compiled extension function), called
    as sgl-deep-gemm's FP8/FP4 entry is."""

    __signature__ = property(lambda self: (_ for _ in ()).throw(ValueError("no signature")))

    def __init__(self) -> None:
        self.__name__ = self.__qualname__ = "fp8_fp4_paged_mqa_logits"
        self.calls = Calls()

    def __call__(self, *args, **kwargs):
        return sgl_fp4_logits_like(self.calls)(*args, **kwargs)


FP4_Q = (torch.empty(0, 1, 64, 64, dtype=torch.uint8), torch.empty(0, 1, 64, 1))
FP4_ROWS = (torch.empty(2, 1, 64, 64, dtype=torch.uint8), torch.empty(2, 1, 64, 1))


@pytest.mark.parametrize("q", [FP4_Q, list(FP4_Q)])
@pytest.mark.parametrize("by_keyword", [True, False])
@pytest.mark.parametrize("compiled", [False, True])
def test_logits_guard_answers_an_empty_batch_in_the_logits_dtype_asked_for(
    q, by_keyword: bool, compiled: bool
) -> None:
    kernel = CompiledLogits() if compiled else sgl_fp4_logits_like(Calls())
    calls = kernel.calls if compiled else None
    guarded = guard_paged_mqa_logits(kernel)
    args = (q, None, None, torch.empty(0, 1, dtype=torch.int32), None, None, 4096, False)
    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        if by_keyword:
            logits = guarded(*args, logits_dtype=dtype)
        else:
            logits = guarded(*args, dtype, None)
        assert (logits.shape, logits.dtype) == ((0, 4096), dtype)
        # With rows, the kernel answers in that dtype too: the guard's B = 0 matches it.
        with_rows = (FP4_ROWS, *args[1:])
        assert guarded(*with_rows, logits_dtype=dtype).dtype == dtype
    assert guarded(*args).dtype == torch.float32  # the kernel's default
    if calls is not None:
        assert calls.count == 3  # only the calls with rows


def test_the_ninth_argument_of_the_fp8_logits_is_not_a_dtype() -> None:
    """``fp8_paged_mqa_logits(..., clean_logits=False, indices=None)``: its ninth argument
    is ``indices``; the empty batch stays float32."""

    def fp8_paged_mqa_logits(q, kv_cache, weights, context_lens, block_table, schedule_meta,
                             max_context_len, clean_logits=False, indices=None):  # fmt: skip
        raise AssertionError("the guard launched an empty batch")

    guarded = guard_paged_mqa_logits(fp8_paged_mqa_logits)
    indices = torch.empty(0, dtype=torch.int32)
    logits = guarded(torch.empty(0, 1, 64, 128), None, None, None, None, None, 64, False, indices)
    assert (logits.shape, logits.dtype) == ((0, 64), torch.float32)


def test_logits_guard_forwards_a_batch_with_rows() -> None:
    calls = Calls()
    guarded = guard_paged_mqa_logits(logits_like(calls))
    assert guarded(torch.empty(3, 1, 64, 128), None, None, None, None, None, 64, False).shape == (
        3,
        64,
    )
    assert calls.count == 1


@pytest.mark.parametrize(
    "factory", [guard_triton_mla_decode, guard_flash_mla_with_kvcache, guard_paged_mqa_logits]
)
def test_guards_are_idempotent_and_reversible(factory) -> None:
    kernel = logits_like(Calls())
    guarded = factory(kernel)
    assert is_guarded(guarded) and factory(guarded) is guarded
    assert unguarded(guarded) is kernel and guarded.__name__ == kernel.__name__


# --- install() / uninstall() and the switches, on a fake vLLM tree -----------------------------

TREE = {
    "vllm/__init__.py": "",
    "vllm/v1/__init__.py": "",
    "vllm/v1/attention/__init__.py": "",
    "vllm/v1/attention/ops/__init__.py": "",
    "vllm/v1/attention/ops/triton_decode_attention.py": "def decode_attention_fwd(*a, **k):\n"
    "    return 'kernel'\n",
    "vllm/v1/attention/backends/__init__.py": "",
    "vllm/v1/attention/backends/mla/__init__.py": "",
    "vllm/v1/attention/backends/mla/triton_mla.py": "from vllm.v1.attention.ops."
    "triton_decode_attention import decode_attention_fwd\n",
    "vllm/third_party/__init__.py": "",
    "vllm/third_party/flashmla/__init__.py": "",
    "vllm/third_party/flashmla/flash_mla_interface.py": "def flash_mla_with_kvcache(*a, **k):\n"
    "    return 'kernel'\n",
    "vllm/v1/attention/ops/flashmla.py": "from vllm.third_party.flashmla.flash_mla_interface "
    "import flash_mla_with_kvcache\n",
}
HOLDERS = {
    "triton_mla": [
        ("vllm.v1.attention.ops.triton_decode_attention", "decode_attention_fwd"),
        ("vllm.v1.attention.backends.mla.triton_mla", "decode_attention_fwd"),
    ],
    "flashmla": [
        ("vllm.third_party.flashmla.flash_mla_interface", "flash_mla_with_kvcache"),
        ("vllm.v1.attention.ops.flashmla", "flash_mla_with_kvcache"),
    ],
}


def drop_vllm() -> None:
    for name in list(sys.modules):
        if name.split(".")[0] == "vllm":
            del sys.modules[name]


@pytest.fixture
def fake_vllm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    for relative, text in TREE.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    for name in ("ZEROLINT_GUARD", "ZEROLINT_GUARD_OFF"):
        monkeypatch.delenv(name, raising=False)
    runtime_guard.uninstall()
    drop_vllm()
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    runtime_guard.uninstall()
    drop_vllm()


def import_all() -> None:
    importlib.import_module("vllm.v1.attention.backends.mla.triton_mla")
    importlib.import_module("vllm.v1.attention.ops.flashmla")


def guarded_holders() -> dict[str, list[bool]]:
    return {
        sink: [is_guarded(getattr(sys.modules[m], attr)) for m, attr in holders]
        for sink, holders in HOLDERS.items()
    }


@pytest.mark.parametrize("order", ["install first", "import first"])
def test_install_guards_every_holder_and_uninstall_restores_them(
    fake_vllm: Path, order: str
) -> None:
    if order == "import first":
        import_all()
        originals = {s: [getattr(sys.modules[m], a) for m, a in h] for s, h in HOLDERS.items()}
    assert runtime_guard.install()
    import_all()
    assert guarded_holders() == {"triton_mla": [True, True], "flashmla": [True, True]}
    assert runtime_guard.uninstall()
    assert guarded_holders() == {"triton_mla": [False, False], "flashmla": [False, False]}
    if order == "import first":
        now = {s: [getattr(sys.modules[m], a) for m, a in h] for s, h in HOLDERS.items()}
        assert now == originals


def test_one_sink_can_be_turned_off(
    fake_vllm: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("ZEROLINT_GUARD_OFF", " FlashMLA ")
    caplog.set_level(logging.INFO, logger="runtime_guard")
    assert runtime_guard.install()
    import_all()
    assert guarded_holders() == {"triton_mla": [True, True], "flashmla": [False, False]}
    off_lines = [r.getMessage() for r in caplog.records if "ZEROLINT_GUARD_OFF" in r.getMessage()]
    assert off_lines == ["runtime_guard: turned off by ZEROLINT_GUARD_OFF for flashmla"]
    assert not sink_enabled("flashmla") and sink_enabled("triton_mla")


def test_zerolint_guard_off_leaves_every_sink_alone(
    fake_vllm: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("ZEROLINT_GUARD", "off")
    caplog.set_level(logging.INFO, logger="runtime_guard")
    assert not runtime_guard.install()
    import_all()
    assert guarded_holders() == {"triton_mla": [False, False], "flashmla": [False, False]}
    [line] = [r for r in caplog.records if r.name == "runtime_guard"]
    assert line.levelno == logging.INFO and "turned off by ZEROLINT_GUARD=off" in line.getMessage()


def test_unknown_sink_names_are_reported(
    fake_vllm: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("ZEROLINT_GUARD_OFF", "triton_mla,flashmal")
    caplog.set_level(logging.INFO, logger="runtime_guard")
    runtime_guard.install()
    [warning] = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert "flashmal" in warning.getMessage()
    assert disabled_sinks() == {"triton_mla"}


def test_all_turns_every_sink_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZEROLINT_GUARD_OFF", "all")
    assert disabled_sinks() == set(BY_NAME)


def test_every_sink_factory_exists_and_is_documented() -> None:
    page = (Path(__file__).parent.parent / "docs" / "runtime-guard.md").read_text()
    for sink in SINKS:
        module, _, name = sink.factory.partition(":")
        assert callable(getattr(importlib.import_module(module), name))
        assert f"`{sink.name}`" in page


def test_audit_reads_the_guards_own_off_values() -> None:
    from runtime_guard.patch import OFF_VALUES
    from zerolint.audit import GUARD_OFF_VALUES

    assert GUARD_OFF_VALUES is OFF_VALUES


def test_the_switch_modules_import_no_torch() -> None:
    import subprocess

    code = (
        "import sys, runtime_guard.patch, runtime_guard.sinks, runtime_guard.sglang_hook; "
        "print('torch' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
