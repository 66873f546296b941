"""The guarded sinks, as data: where each kernel entry point lives, which sanitizer guards
it, and the name that turns its guard off (``ZEROLINT_GUARD_OFF=<name>,...``).

Imports nothing heavy: ``runtime_guard.patch`` and ``zerolint audit`` read it without torch.
docs/runtime-guard.md has the table and docs/zero-length-probe.md the measurements behind
each sanitizer.
"""

from __future__ import annotations


class Sink:
    """One guarded kernel entry point.

    ``modules`` are the modules that define it (a module imported under another name, or
    importing it by name, is covered by install()'s global replacement); ``attributes`` the
    names it has there; ``factory`` the ``module:function`` that wraps one; ``sanitizer`` what
    the guard does, in the words of the rule that declares it.
    """

    __slots__ = ("attributes", "factory", "modules", "name", "rule", "sanitizer")

    def __init__(
        self,
        name: str,
        modules: tuple[str, ...],
        attributes: tuple[str, ...],
        factory: str,
        sanitizer: str,
        rule: str,
    ) -> None:
        self.name = name
        self.modules = modules
        self.attributes = attributes
        self.factory = factory
        self.sanitizer = sanitizer
        self.rule = rule

    def __repr__(self) -> str:
        return f"Sink({self.name!r})"


DEEP_GEMM = ("deep_gemm", "vllm.third_party.deep_gemm")

SINKS: tuple[Sink, ...] = (
    Sink(
        "deep_gemm_metadata",
        DEEP_GEMM,
        ("get_paged_mqa_logits_metadata",),
        "runtime_guard.clamp:guard",
        "clamp-scheduler-hint (lengths to >= 1) and empty-batch (zero schedule, no launch)",
        "ZL001",
    ),
    Sink(
        "deep_gemm_logits",
        DEEP_GEMM,
        ("fp8_paged_mqa_logits", "fp8_fp4_paged_mqa_logits"),
        "runtime_guard.attention:guard_paged_mqa_logits",
        "empty-batch (empty logits, no launch)",
        "DeepGEMM paged MQA logits, B = 0",
    ),
    Sink(
        "triton_mla",
        ("vllm.v1.attention.ops.triton_decode_attention",),
        ("decode_attention_fwd",),
        "runtime_guard.attention:guard_triton_mla_decode",
        "empty-row-identity (output 0 and LSE -inf in rows of length 0: the guard's own "
        "second stage after vLLM's first, or a mask after the kernel)",
        "MLA decode, rows of length 0",
    ),
    Sink(
        "flashmla",
        ("vllm.third_party.flashmla.flash_mla_interface",),
        ("flash_mla_with_kvcache",),
        "runtime_guard.attention:guard_flash_mla_with_kvcache",
        "empty-row-identity (LSE -inf in rows of length 0) and empty-batch (no launch)",
        "MLA decode, rows of length 0 and B = 0",
    ),
)

BY_NAME = {sink.name: sink for sink in SINKS}

NOT_GUARDED: tuple[tuple[str, str], ...] = (
    (
        (
            "FlashMLA dense FP8 (vllm.v1.attention.ops.flashmla.flash_mla_with_kvcache_fp8, "
            "get_mla_metadata_dense_fp8)"
        ),
        (
            "faults (illegal address) on B = 0 and on any row of length 0, the metadata and "
            "the decode launched together; no sanitizer was measured to keep it correct, so "
            "none is applied: callers must keep such rows out of the batch"
        ),
    ),
)
"""Hazardous sinks with no semantics-preserving guard, and why (docs/runtime-guard.md)."""


def module_names() -> frozenset[str]:
    """Every module that defines a guarded sink."""
    return frozenset(name for sink in SINKS for name in sink.modules)


def sinks_of(module_name: str) -> tuple[Sink, ...]:
    """The sinks ``module_name`` defines."""
    return tuple(sink for sink in SINKS if module_name in sink.modules)
