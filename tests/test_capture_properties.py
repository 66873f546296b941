"""Every Z3 answer of the capture analysis against brute-force enumeration.

The reference builds the decode batches of docs/vllm-facts.md concretely: a request
with seq_len L and next_n query tokens has token lengths L - next_n + 1 .. L; native
layouts read only the last (kernel batch = requests), flattened ones read every token
(kernel batch = tokens). Sizes up to 300, lengths up to 600, ratios 2..8, k <= 3.

The capture sizes and max_num_seqs the reference enumerates do not come from zerolint:
they are what vLLM 0.27.1's own sizing code (``_set_cudagraph_sizes`` and the functions it
calls, taken from the wheel's source by tests/fixtures/capture/generate.py) computes for
each configuration, and zerolint must reject exactly the configurations vLLM rejects.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from zerolint.capture import (
    CaptureConfig,
    CaptureConfigError,
    analyze,
    capture_sizes,
    full_decode_sizes,
)
from zerolint.decode_model import SIZES_PER_QUESTION

GENERATOR = Path(__file__).parent / "fixtures" / "capture" / "generate.py"
VLLM = "0.27.1"

configs = st.builds(
    CaptureConfig,
    max_num_seqs=st.integers(1, 300),
    cudagraph_capture_sizes=st.lists(st.integers(1, 300), min_size=1, max_size=40).map(tuple),
    num_speculative_tokens=st.integers(0, 3),
    compress_ratios=st.lists(st.integers(2, 8), min_size=1, max_size=2).map(tuple),
    gpu=st.sampled_from(["sm90", "sm100"]),
    clamp=st.booleans(),
)


@dataclass(frozen=True)
class VllmSizing:
    """What vLLM's sizing code made of a configuration: None where it raised."""

    sizes: tuple[int, ...] | None
    max_num_seqs: int


@functools.lru_cache(maxsize=1)
def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("capture_sizes_generator", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextmanager
def stand_in_vllm_modules() -> Iterator[None]:
    """The generator puts stand-in ``vllm`` modules in sys.modules: take them out again."""
    before = {n: m for n, m in sys.modules.items() if n == "vllm" or n.startswith("vllm.")}
    try:
        yield
    finally:
        for name in [n for n in sys.modules if n == "vllm" or n.startswith("vllm.")]:
            del sys.modules[name]
        sys.modules.update(before)


@functools.lru_cache(maxsize=512)
def vllm_sizing(config: CaptureConfig) -> VllmSizing:
    fields = {
        "max_num_seqs": config.max_num_seqs,
        "cudagraph_capture_sizes": list(config.cudagraph_capture_sizes or ()) or None,
        "num_speculative_tokens": config.num_speculative_tokens,
        "gpu": config.gpu,
    }
    with stand_in_vllm_modules():
        try:
            record = generator().vllm_sizes(VLLM, {k: v for k, v in fields.items() if v})
        except (ValueError, AssertionError):
            return VllmSizing(None, 0)
    return VllmSizing(tuple(record["sizes"]), record["resolved"]["max_num_seqs"])


def accepted(config: CaptureConfig) -> bool:
    """vLLM rejects some configurations; zerolint must reject the same ones."""
    try:
        capture_sizes(config)
        ours = True
    except CaptureConfigError:
        ours = False
    assert ours == (vllm_sizing(config).sizes is not None), config
    return ours


def vllm_capture_sizes(config: CaptureConfig) -> tuple[int, ...]:
    sizes = vllm_sizing(config).sizes
    assert sizes is not None
    return sizes


def full_decode(config: CaptureConfig, size: int) -> bool:
    """A FULL decode graph is captured for sizes of 1 .. max_num_seqs whole requests."""
    q = config.next_n
    return q <= size <= q * vllm_sizing(config).max_num_seqs


def native(config: CaptureConfig) -> bool:
    return config.gpu == "sm100" or config.next_n in (1, 2)


def read_lengths(config: CaptureConfig, seq_len: int) -> list[int]:
    q = config.next_n
    tokens = [seq_len - q + j + 1 for j in range(q)]
    return tokens[-1:] if native(config) else tokens


def after_builder(config: CaptureConfig, length: int, ratio: int) -> int:
    value = length // ratio
    return max(value, 1) if config.clamp else value


def all_zero(config: CaptureConfig, lengths: list[int], ratio: int) -> bool:
    return all(after_builder(config, n, ratio) == 0 for n in lengths)


def kernel_batch(config: CaptureConfig, requests: int) -> int:
    return requests if native(config) else requests * config.next_n


def faults(batch: int) -> bool:
    return batch >= 32 and batch % 32 == 0


def brute_capture(config: CaptureConfig) -> list[int]:
    q, hazards = config.next_n, []
    for size in vllm_capture_sizes(config):
        if not full_decode(config, size):
            continue
        dummy = read_lengths(config, q)  # every dummy request has seq_len = next_n
        zero = any(all_zero(config, dummy, c) for c in config.compress_ratios)
        if zero and faults(kernel_batch(config, size // q)):
            hazards.append(size)
    return hazards


def brute_live(config: CaptureConfig) -> dict[str, int] | None:
    """The smallest (B, seq_len, ratio) of live decode traffic that faults."""
    best = None
    for requests in range(1, min(vllm_sizing(config).max_num_seqs, 300) + 1):
        batch = kernel_batch(config, requests)
        if not faults(batch):
            continue
        for seq_len in range(config.next_n, 601):
            for ratio in sorted(config.compress_ratios):
                if all_zero(config, read_lengths(config, seq_len), ratio):
                    found = {
                        "B": batch,
                        "requests": requests,
                        "seq_len": seq_len,
                        "compress_ratio": ratio,
                    }
                    key = (batch, seq_len, ratio)
                    if best is None or key < best[0]:
                        best = (key, found)
    return best[1] if best else None


def brute_idle(config: CaptureConfig) -> dict[str, int] | None:
    """The smallest padded FULL batch where one request of seq_len next_n faults."""
    q = config.next_n
    for size in vllm_capture_sizes(config):
        if not full_decode(config, size):
            continue
        batch = kernel_batch(config, size // q)
        rows = read_lengths(config, q) + [0] * (batch - kernel_batch(config, 1))
        for ratio in sorted(config.compress_ratios):
            if faults(batch) and all_zero(config, rows, ratio):
                return {"B": batch, "size": size, "seq_len": q, "compress_ratio": ratio}
    return None


@settings(max_examples=120, deadline=None)
@given(configs)
def test_capture_hazards_match_brute_force(config):
    assume(accepted(config))
    assert analyze(config).hazardous_sizes == brute_capture(config)


@pytest.mark.parametrize("step", [1, 32])  # every size; only multiples of 32 (most fault)
@pytest.mark.parametrize("speculative", [0, 1, 3])
@pytest.mark.parametrize("ratios", [(4,), (2, 8)])
def test_hundreds_of_sizes_match_brute_force(step, speculative, ratios):
    """More sizes than one solver question asks about (decode_model.SIZES_PER_QUESTION):
    no size is lost or doubled where the questions meet."""
    config = CaptureConfig(
        max_num_seqs=4800,
        max_num_batched_tokens=4800,
        cudagraph_capture_sizes=tuple(range(step, 4801, step)),
        num_speculative_tokens=speculative,
        compress_ratios=ratios,
    )
    assert accepted(config)
    asked = full_decode_sizes(config, capture_sizes(config))
    assert len(asked) > 2 * SIZES_PER_QUESTION  # several questions, and their edges crossed
    assert analyze(config).hazardous_sizes == brute_capture(config)


@settings(max_examples=40, deadline=None)
@given(configs)
def test_runtime_witnesses_are_the_smallest_brute_force_finds(config):
    assume(accepted(config))
    live, idle = analyze(config).runtime
    expected_live = brute_live(config)
    assert live.verdict.status == ("unsafe" if expected_live else "safe")
    assert live.verdict.witness == (expected_live or {})
    expected_idle = brute_idle(config)
    assert idle.verdict.status == ("unsafe" if expected_idle else "safe")
    assert idle.verdict.witness == (expected_idle or {})
