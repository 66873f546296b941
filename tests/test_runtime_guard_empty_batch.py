"""The guard on an empty batch (B = 0), and its switch and dtype errors (issue 18, item 13).

DeepGEMM 2.5.0's and 2.6.1's SM90 schedulers read out of bounds on ``context_lens`` of shape
``(0, next_n)`` (docs/hazards/empty-batch-ZL001.md, measured in docs/sm90-verification.md).
The guard must never call them then, and return what DeepGEMM 2.8.1's guarded scheduler
writes: a ``(num_sms + 1, 2)`` int32 table of zeros on the input's device.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

import runtime_guard
from runtime_guard import clamp_context_lens, guard
from runtime_guard.clamp import empty_batch_schedule, empty_schedule
from runtime_guard.patch import OFF_VALUES, ON_VALUES, guard_enabled

ROOT = Path(__file__).resolve().parents[1]
NUM_SMS = 132


class Launches:
    """A DeepGEMM stand-in that counts its calls and returns a recognisable table."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def __call__(self, context_lens: torch.Tensor, block_kv: int, num_sms: int) -> torch.Tensor:
        self.calls.append((tuple(context_lens.shape), block_kv, num_sms))
        return torch.full((num_sms + 1, 2), 7, dtype=torch.int32, device=context_lens.device)


@pytest.fixture
def kernel() -> Launches:
    return Launches()


CALL_SHAPES: dict[str, Callable[[Callable[..., Any], torch.Tensor], Any]] = {
    "positional": lambda fn, lens: fn(lens, 64, NUM_SMS),
    "keywords": lambda fn, lens: fn(context_lens=lens, block_kv=64, num_sms=NUM_SMS),
    "mixed": lambda fn, lens: fn(lens, 64, num_sms=NUM_SMS),
}


@pytest.mark.parametrize("fused", [False, True], ids=["clamp", "fused"])
@pytest.mark.parametrize("call", list(CALL_SHAPES))
@pytest.mark.parametrize("next_n", [1, 2])
@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_an_empty_batch_never_reaches_deep_gemm(
    kernel: Launches, fused: bool, call: str, next_n: int, device: str
) -> None:
    lens = torch.zeros((0, next_n), dtype=torch.int32, device=device)
    schedule = CALL_SHAPES[call](guard(kernel, fused=fused), lens)
    assert kernel.calls == []
    assert schedule.shape == (NUM_SMS + 1, 2)
    assert schedule.dtype == torch.int32
    assert schedule.device == lens.device
    if device == "cpu":
        assert schedule.eq(0).all()


def test_the_control_batch_of_one_row_still_reaches_deep_gemm(kernel: Launches) -> None:
    schedule = guard(kernel)(torch.zeros((1, 1), dtype=torch.int32), 64, NUM_SMS)
    assert kernel.calls == [((1, 1), 64, NUM_SMS)]
    assert schedule.eq(7).all()


def test_the_empty_schedule_follows_num_sms() -> None:
    lens = torch.zeros((0, 2), dtype=torch.int32)
    assert empty_schedule(lens, 78).shape == (79, 2)


@pytest.mark.parametrize(
    ("lens", "args", "kwargs"),
    [
        (torch.zeros((0,), dtype=torch.int32), (64, NUM_SMS), {}),  # DeepGEMM asserts 2-D
        (torch.zeros((0, 1), dtype=torch.int64), (64, NUM_SMS), {}),  # and int32
        (torch.zeros((0, 1), dtype=torch.int32), (64, 0), {}),  # num_sms < 1
        (torch.zeros((0, 1), dtype=torch.int32), (64, True), {}),
        (torch.zeros((0, 1), dtype=torch.int32), (64,), {}),  # num_sms missing
        (torch.zeros((0, 1), dtype=torch.int32), (64, NUM_SMS), {"extra": 1}),
        (torch.zeros((0, 1), dtype=torch.int32), (64, NUM_SMS), {"block_kv": 64}),  # twice
    ],
)
def test_calls_deep_gemm_would_reject_are_left_to_deep_gemm(
    lens: torch.Tensor, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    assert empty_batch_schedule((lens, *args), kwargs) is None


def test_varlen_indices_none_is_still_an_empty_batch() -> None:
    lens = torch.zeros((0, 1), dtype=torch.int32)
    got = empty_batch_schedule((lens, 64, NUM_SMS), {"indices": None})
    assert got is not None and got.shape == (NUM_SMS + 1, 2)
    assert empty_batch_schedule((lens, 64, NUM_SMS), {"indices": lens[:, 0]}) is None


def test_module_level_metadata_skips_deep_gemm_on_an_empty_cuda_batch_only() -> None:
    # The public wrapper requires CUDA like DeepGEMM; on CPU it must still say so for B = 0.
    lens = torch.zeros((0, 1), dtype=torch.int32)
    with pytest.raises((ValueError, RuntimeError), match="CUDA tensor|DeepGEMM not found"):
        runtime_guard.get_paged_mqa_logits_metadata(lens, 64, NUM_SMS)


# --- issue 18 item 13: dtypes, the switch, torch missing -----------------------------------


@pytest.mark.parametrize("dtype", [torch.uint16, torch.uint32, torch.uint64])
def test_unsigned_dtypes_torch_cannot_clamp_get_a_clear_error(dtype: torch.dtype) -> None:
    lens = torch.zeros(4, dtype=dtype)
    with pytest.raises(TypeError, match=rf"integer dtype, got {dtype} \(accepted: int8, .*uint8"):
        clamp_context_lens(lens)


@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8])
def test_every_accepted_dtype_really_clamps(dtype: torch.dtype) -> None:
    assert clamp_context_lens(torch.tensor([0, 3], dtype=dtype)).tolist() == [1, 3]


OFF_SPELLINGS = ["0", "false", "False", "FALSE", "f", "no", "NO", "n", "off", " Off ",
                 "disable", "disabled", "DISABLED", "none", "never", "skip"]  # fmt: skip


@pytest.mark.parametrize("value", OFF_SPELLINGS)
def test_every_common_spelling_of_off_turns_the_guard_off(
    value: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    runtime_guard.uninstall()
    monkeypatch.setenv("ZEROLINT_GUARD", value)
    assert guard_enabled() is False
    with caplog.at_level(logging.DEBUG, logger="runtime_guard"):
        assert runtime_guard.install() is False
    assert not runtime_guard.is_installed()
    messages = [record.getMessage() for record in caplog.records]
    assert len(messages) == 1 and "turned off by ZEROLINT_GUARD" in messages[0]
    assert not any("clamping" in message for message in messages)


@pytest.mark.parametrize("value", ["", "1", "true", "yes", "on", "enabled", "clamp"])
def test_on_values_install_without_a_warning(
    value: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    runtime_guard.uninstall()
    monkeypatch.setenv("ZEROLINT_GUARD", value)
    try:
        with caplog.at_level(logging.INFO, logger="runtime_guard"):
            assert runtime_guard.install() is True
    finally:
        runtime_guard.uninstall()
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_an_unknown_value_keeps_the_guard_on_and_says_so(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    runtime_guard.uninstall()
    monkeypatch.setenv("ZEROLINT_GUARD", "of")
    try:
        with caplog.at_level(logging.INFO, logger="runtime_guard"):
            assert runtime_guard.install() is True
    finally:
        runtime_guard.uninstall()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "ZEROLINT_GUARD='of' is not a known value" in warnings[0]


def test_the_on_and_off_lists_do_not_overlap() -> None:
    assert not OFF_VALUES & ON_VALUES


NO_TORCH = textwrap.dedent(
    """
    import importlib.abc, logging, sys

    class NoTorch(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "torch" or name.startswith("torch."):
                raise ModuleNotFoundError("No module named 'torch'", name="torch")
            return None

    sys.meta_path.insert(0, NoTorch())
    logging.basicConfig(level=logging.DEBUG, format="%(levelname)s %(message)s")
    import runtime_guard
    print("install", runtime_guard.install(), runtime_guard.is_installed())
    try:
        runtime_guard.guard(lambda *a: None)
    except RuntimeError as error:
        print("guard:", error)
    try:
        runtime_guard.clamp_context_lens([0])
    except RuntimeError as error:
        print("clamp:", error)
    """
)


def test_without_torch_install_says_so_and_calls_fail_clearly() -> None:
    done = subprocess.run(
        [sys.executable, "-c", NO_TORCH],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "install False False" in done.stdout
    assert "clamping" not in done.stderr
    assert "PyTorch cannot be imported in this process" in done.stderr
    needs = "runtime_guard needs PyTorch, which cannot be imported here (No module named 'torch')"
    assert f"guard: {needs}" in done.stdout
    assert f"clamp: {needs}" in done.stdout
