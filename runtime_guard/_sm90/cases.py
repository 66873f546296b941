"""The inputs of the SM90 verification, as pure data (no torch, no GPU).

Shared by the GPU harness (``runtime_guard.verify_sm90``) and the CPU test that keeps the
committed report honest: both rebuild the same inputs from the same few numbers.
"""

from __future__ import annotations

import hashlib
import random
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

BLOCK_KV = 64
"""vLLM's ``storage_block_size`` for DeepSeek-V4 indexer layers: 256 // 4."""

COMPRESS_RATIO = 4
"""Only ratio-4 layers of DeepSeek-V4 have an indexer; dummy seq_len 1 // 4 == 0."""

DIGEST_CHARS = 12

Lens = list[list[int]]
"""Context lengths as the kernel sees them: ``B`` rows of ``next_n`` ints."""


def fault_predicate(lens: Sequence[Sequence[int]]) -> bool:
    """The fault predicate of docs/hazards/ZL001.md ("The fault"): ``B % 32 == 0`` and every length the kernel reads is 0.

    Only column ``next_n - 1`` of each row is read.
    """
    return len(lens) % 32 == 0 and all(row[-1] == 0 for row in lens)


def clamped(lens: Lens) -> Lens:
    """What ``runtime_guard.clamp_context_lens`` promises: every length raised to >= 1."""
    return [[max(value, 1) for value in row] for row in lens]


def int32_digest(values: Iterable[int]) -> str:
    """Short sha256 of the values as little-endian int32 (a kernel output or an input)."""
    flat = list(values)
    return hashlib.sha256(struct.pack(f"<{len(flat)}i", *flat)).hexdigest()[:DIGEST_CHARS]


def lens_digest(lens: Lens) -> str:
    return int32_digest(value for row in lens for value in row)


def schedule_digest(schedule: Iterable[Sequence[int]]) -> str:
    return int32_digest(value for pair in schedule for value in pair)


# -- 2. the seed's table -------------------------------------------------------------------


@dataclass(frozen=True)
class SeedCase:
    """``batch`` rows of ``(1,)`` lengths all equal to ``fill``."""

    batch: int
    fill: int
    guarded: bool

    @property
    def lens(self) -> Lens:
        return [[self.fill] for _ in range(self.batch)]

    @property
    def expect_fault(self) -> bool:
        return not self.guarded and fault_predicate(self.lens)

    @property
    def name(self) -> str:
        return f"B={self.batch} fill={self.fill} {'guarded' if self.guarded else 'unguarded'}"


SEED_SHAPES: tuple[tuple[int, int], ...] = (
    (32, 0),
    (64, 0),
    (96, 0),
    (256, 0),
    (1024, 0),  # fault on the unguarded kernel
    (8, 0),
    (33, 0),
    (250, 0),  # all zero but B % 32 != 0
    (32, 1),
    (256, 1),
    (1024, 1),
    (256, 8192),  # non-zero fills
)


def seed_cases() -> list[SeedCase]:
    """Every seed shape unguarded, then every one with runtime_guard in front."""
    return [SeedCase(b, f, guarded) for guarded in (False, True) for b, f in SEED_SHAPES]


# -- 3. vLLM's capture sizes ----------------------------------------------------------------


@dataclass(frozen=True)
class ServeConfig:
    """The ``vllm serve`` settings that decide the CUDA-graph capture sizes (no spec decode)."""

    max_num_seqs: int = 1024
    max_num_batched_tokens: int = 8192
    max_cudagraph_capture_size: int | None = 1024

    def max_capture(self) -> int:
        default = min(self.max_num_seqs * 2, 512)
        chosen = (
            default if self.max_cudagraph_capture_size is None else self.max_cudagraph_capture_size
        )
        return min(chosen, self.max_num_batched_tokens)


def capture_sizes(config: ServeConfig) -> list[int]:
    """vLLM's balanced-mode sizes (docs/vllm-facts.md, "Capture sizes"): ``[1, 2, 4]``, steps of 8 below 256,
    steps of 16 from 256 to the maximum, plus ``max_num_batched_tokens`` if it fits."""
    top = config.max_capture()
    sizes = {1, 2, 4, *range(8, min(top + 1, 256), 8), *range(256, top + 1, 16)}
    if config.max_num_batched_tokens <= top:
        sizes.add(config.max_num_batched_tokens)
    return sorted(size for size in sizes if size <= top)


def dummy_decode_lens(size: int) -> Lens:
    """The indexer's lengths for a FULL decode capture of ``size``: seq_len 1, ``// 4``."""
    return [[1 // COMPRESS_RATIO] for _ in range(size)]


# -- 4. the differential check ----------------------------------------------------------------


PATTERNS: dict[str, float] = {
    "all_zero": 0.2,  # every length 0 (the vLLM dummy batch)
    "sparse": 0.35,  # a few non-zero rows, often none at all
    "short": 0.15,  # lengths 0..300, about a third zero
    "mixed": 0.2,  # half zero, the rest log-uniform up to 128 Ki tokens
    "last_col_zero": 0.1,  # column next_n - 1 zero, earlier columns not (only the last is read)
}


@dataclass(frozen=True)
class DiffCase:
    index: int
    pattern: str
    lens: Lens

    @property
    def batch(self) -> int:
        return len(self.lens)

    @property
    def next_n(self) -> int:
        return len(self.lens[0])


def diff_case(seed: int, index: int) -> DiffCase:
    """Random input number ``index`` of the differential check, reproducible from ``seed``.

    B is 1..1024 (a multiple of 32 a third of the time), next_n 1 or 2, and the pattern
    decides how many lengths are 0. Uses ``random.Random`` seeded by a string, which is
    stable across Python versions and platforms.
    """
    rng = random.Random(f"zerolint-sm90:{seed}:{index}")
    next_n = rng.choice((1, 2))
    batch = 32 * rng.randint(1, 32) if rng.random() < 0.35 else rng.randint(1, 1024)
    pattern = rng.choices(list(PATTERNS), weights=list(PATTERNS.values()))[0]
    last = _last_column(rng, pattern, batch)
    lens = [[*_earlier_columns(rng, pattern, value, next_n), value] for value in last]
    return DiffCase(index, pattern, lens)


def _long_length(rng: random.Random) -> int:
    return int(2 ** rng.uniform(0, 17))


def _last_column(rng: random.Random, pattern: str, batch: int) -> list[int]:
    if pattern in ("all_zero", "last_col_zero"):
        return [0] * batch
    if pattern == "sparse":
        density = rng.choice((0.001, 0.01, 0.1))
        return [_long_length(rng) if rng.random() < density else 0 for _ in range(batch)]
    if pattern == "short":
        return [rng.randint(0, 300) if rng.random() < 2 / 3 else 0 for _ in range(batch)]
    return [_long_length(rng) if rng.random() < 0.5 else 0 for _ in range(batch)]


def _earlier_columns(rng: random.Random, pattern: str, last: int, next_n: int) -> list[int]:
    if next_n == 1:
        return []
    if pattern == "all_zero":
        return [0]
    if pattern == "last_col_zero":
        return [rng.randint(1, 4096)]
    return [rng.randint(0, last)]
