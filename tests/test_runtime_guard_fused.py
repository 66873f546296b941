"""runtime_guard.fused: the clamp inside one scheduler kernel, and when the guard uses it.

The CPU tests cover what decides the path (inputs, call shapes, DeepGEMM versions,
``ZEROLINT_GUARD=clamp``) and that every refusal falls back to clamp-then-call. The kernel
itself needs an SM90 GPU: those tests compare it with ``runtime_guard.reference`` and run the
self-check against a DeepGEMM stand-in that agrees and one that does not. The real DeepGEMM
kernel is compared in ``python -m runtime_guard.verify_sm90`` (docs/sm90-verification.md).
"""

from __future__ import annotations

import logging
import random
import sys
import types
from collections.abc import Iterator

import pytest
import torch

import runtime_guard
from runtime_guard import clamp, fused, guard, guard_path, reference

NUM_SMS = 132


def lens(*rows: list[int], device: str = "cpu") -> torch.Tensor:
    return torch.tensor(list(rows), dtype=torch.int32, device=device)


class Recorder:
    """A DeepGEMM stand-in that records what it is called with."""

    def __init__(self) -> None:
        self.calls: list[list[list[int]]] = []

    def __call__(self, context_lens: torch.Tensor, block_kv: int, num_sms: int) -> torch.Tensor:
        self.calls.append(context_lens.tolist())
        return reference.schedule(context_lens.cpu(), num_sms).as_tensor().to(context_lens.device)


# --- which inputs the fused kernel takes ----------------------------------------------------


@pytest.mark.parametrize(
    ("context_lens", "block_kv", "num_sms", "problem"),
    [
        ([[0]], 64, NUM_SMS, "not a tensor"),
        (torch.zeros(4, dtype=torch.int32), 64, NUM_SMS, "not a 2-D int32"),
        (torch.zeros(4, 1, dtype=torch.int64), 64, NUM_SMS, "not a 2-D int32"),
        (torch.zeros(2, 4, dtype=torch.int32).t(), 64, NUM_SMS, "not contiguous"),
        (torch.zeros(0, 1, dtype=torch.int32), 64, NUM_SMS, "batch size 0 is outside"),
        (torch.zeros(8193, 1, dtype=torch.int32), 64, NUM_SMS, "batch size 8193 is outside"),
        (torch.zeros(4, 3, dtype=torch.int32), 64, NUM_SMS, "next_n 3 was not verified"),
        (torch.zeros(4, 1, dtype=torch.int32), 128, NUM_SMS, "block_kv is not 64"),
        (torch.zeros(4, 1, dtype=torch.int32), 64, True, "num_sms is not an int"),
        (torch.zeros(4, 1, dtype=torch.int32), 64, 0, "num_sms is not an int"),
        (torch.zeros(4, 2, dtype=torch.int32), 64, NUM_SMS, "not on a CUDA device"),
    ],
)
def test_input_problem_names_what_the_kernel_was_not_verified_for(
    context_lens: object, block_kv: object, num_sms: object, problem: str
) -> None:
    assert problem in (fused.input_problem(context_lens, block_kv, num_sms) or "")


def test_schedule_refuses_a_cpu_tensor_with_the_reason() -> None:
    with pytest.raises(ValueError, match="not on a CUDA device"):
        fused.schedule(lens([0], [0]), NUM_SMS)


# --- the guard falls back to clamp-then-call wherever the fused path does not apply ----------


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        ((lens([0], [5]), 64, NUM_SMS), {}),
        ((lens([0], [5]),), {"block_kv": 64, "num_sms": NUM_SMS}),
        ((), {"context_lens": lens([0], [5]), "block_kv": 64, "num_sms": NUM_SMS}),
    ],
)
def test_fused_guard_on_a_cpu_tensor_clamps_and_calls_deep_gemm(args: tuple, kwargs: dict) -> None:
    deep_gemm = Recorder()
    guarded = guard(deep_gemm, fused=True)
    out = guarded(*args, **kwargs)
    assert deep_gemm.calls == [[[1], [5]]]
    assert out.tolist() == reference.schedule([[1], [5]], NUM_SMS).as_tensor().tolist()
    assert guard_path(guarded) == "clamp"


@pytest.mark.parametrize(
    ("args", "kwargs", "bound"),
    [
        ((1, 2, 3), {}, (1, 2, 3)),
        ((1,), {"num_sms": 3, "block_kv": 2}, (1, 2, 3)),
        ((), {"context_lens": 1, "block_kv": 2, "num_sms": 3}, (1, 2, 3)),
        ((1, 2), {}, None),
        ((1, 2, 3, 4), {}, None),
        ((1, 2, 3), {"extra": 4}, None),
        ((1, 2), {"sms": 3}, None),
    ],
)
def test_only_the_three_argument_call_is_fused(args: tuple, kwargs: dict, bound: object) -> None:
    assert fused._bind(args, kwargs) == bound


def test_guard_path_tells_a_plain_function_from_both_guards() -> None:
    def kernel(context_lens: torch.Tensor, block_kv: int, num_sms: int) -> torch.Tensor:
        return context_lens

    assert guard_path(kernel) == "none"
    assert guard_path(guard(kernel)) == "clamp"
    assert guard_path(guard(kernel, fused=True)) == "clamp"  # until a device's check passes


# --- install() fuses only the DeepGEMM whose scheduler the kernel reproduces -----------------


@pytest.fixture
def fake_deep_gemm(monkeypatch: pytest.MonkeyPatch) -> Iterator[types.ModuleType]:
    monkeypatch.delenv("ZEROLINT_GUARD", raising=False)
    runtime_guard.uninstall()
    module = types.ModuleType("deep_gemm")
    module.get_paged_mqa_logits_metadata = Recorder()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "deep_gemm", module)
    yield module
    runtime_guard.uninstall()


def fused_part(function: object) -> object:
    return getattr(function, clamp._FUSED_ATTR)


@pytest.mark.parametrize(("version", "fusable"), [("2.6.1", True), ("2.5.0", False), (None, False)])
def test_install_fuses_deep_gemm_2_6_1_only(
    fake_deep_gemm: types.ModuleType, version: str | None, fusable: bool
) -> None:
    if version is not None:
        fake_deep_gemm.__version__ = version  # type: ignore[attr-defined]
    runtime_guard.install()
    assert (fused_part(fake_deep_gemm.get_paged_mqa_logits_metadata) is not None) == fusable


def test_zerolint_guard_clamp_keeps_the_clamp_kernel(
    fake_deep_gemm: types.ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_deep_gemm.__version__ = "2.6.1"  # type: ignore[attr-defined]
    monkeypatch.setenv("ZEROLINT_GUARD", "clamp")
    assert runtime_guard.install() is True
    guarded = fake_deep_gemm.get_paged_mqa_logits_metadata
    assert runtime_guard.is_guarded(guarded) and fused_part(guarded) is None


# --- on an SM90 GPU (skipped elsewhere) ------------------------------------------------------


def on_sm90() -> bool:
    return torch.cuda.is_available() and torch.cuda.get_device_capability(0) == (9, 0)


needs_sm90 = pytest.mark.skipif(not on_sm90(), reason="needs an SM90 GPU (H100, H200)")


def random_lens(rng: random.Random) -> list[list[int]]:
    batch = rng.choice((32 * rng.randint(1, 32), rng.randint(1, 1024), rng.randint(1, 8192)))
    next_n = rng.choice(fused.NEXT_N)
    zero_share = rng.choice((0.0, 0.5, 0.99, 1.0))
    rows = []
    for _ in range(batch):
        last = 0 if rng.random() < zero_share else int(2 ** rng.uniform(0, 17))
        rows.append([*([rng.randint(0, last)] if next_n == 2 else []), last])
    if rng.random() < 0.1:
        rows[rng.randrange(batch)][-1] = -rng.randint(1, 2**31)  # negative: clamped to 1
    return rows


@needs_sm90
def test_fused_kernel_writes_the_models_schedule_of_clamped_lengths() -> None:
    rng = random.Random(7)
    for case in range(300):
        rows = random_lens(rng)
        want = reference.schedule(lens(*rows).clamp(min=1), NUM_SMS)
        assert not want.faults
        got = fused.schedule(lens(*rows, device="cuda"), NUM_SMS)
        assert got.tolist() == [list(pair) for pair in want.schedule], case


@needs_sm90
def test_fused_kernel_is_captured_and_replays_on_new_lengths() -> None:
    context_lens = torch.zeros(64, 1, dtype=torch.int32, device="cuda")
    fused.schedule(context_lens, NUM_SMS)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fused.schedule(context_lens, NUM_SMS)
    for rows in ([[0]] * 64, [[300 * i] for i in range(64)]):
        context_lens.copy_(lens(*rows, device="cuda"))
        graph.replay()
        torch.cuda.synchronize()
        want = reference.schedule(lens(*rows).clamp(min=1), NUM_SMS)
        assert out.tolist() == [list(pair) for pair in want.schedule]


@needs_sm90
def test_self_check_turns_the_fused_path_on_when_deep_gemm_agrees() -> None:
    deep_gemm = Recorder()
    guarded = guard(deep_gemm, fused=True)
    context_lens = lens(*[[0]] * 32, device="cuda")
    first = guarded(context_lens, 64, NUM_SMS)
    assert deep_gemm.calls == [[[1]] * 32] and guard_path(guarded) == "fused"
    second = guarded(context_lens, 64, NUM_SMS)
    assert len(deep_gemm.calls) == 1  # from now on the fused kernel alone
    assert torch.equal(first, second)


@needs_sm90
def test_self_check_keeps_the_clamp_when_deep_gemm_disagrees(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def other_scheduler(context_lens: torch.Tensor, block_kv: int, num_sms: int) -> torch.Tensor:
        return torch.zeros(num_sms + 1, 2, dtype=torch.int32, device=context_lens.device)

    guarded = guard(other_scheduler, fused=True)
    context_lens = lens(*[[5]] * 40, device="cuda")
    with caplog.at_level(logging.WARNING, logger="runtime_guard"):
        out = guarded(context_lens, 64, NUM_SMS)
    assert out.abs().sum().item() == 0  # DeepGEMM's answer, not the fused kernel's
    assert guard_path(guarded) == "clamp"
    assert "differs from DeepGEMM's" in caplog.text


@needs_sm90
def test_first_call_inside_a_capture_is_clamped_and_checked_later() -> None:
    calls = []

    def deep_gemm(context_lens: torch.Tensor, block_kv: int, num_sms: int) -> torch.Tensor:
        calls.append(context_lens)  # capture-safe: no host synchronisation
        return fused.schedule(context_lens, num_sms)

    guarded = guard(deep_gemm, fused=True)
    context_lens = lens(*[[0]] * 32, device="cuda")
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        guarded(context_lens, 64, NUM_SMS)
    assert len(calls) == 1 and guard_path(guarded) == "clamp"
    guarded(context_lens, 64, NUM_SMS)  # outside capture: the check runs, and passes
    assert len(calls) == 2 and guard_path(guarded) == "fused"
