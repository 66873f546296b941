"""Clamp the context lengths DeepGEMM's SM90 paged-MQA scheduler sees to at least 1.

What serving code imports: depends on torch only, imported lazily, and on neither libcst
nor z3. ``install()`` guards DeepGEMM in a running process; the vLLM plugin
(``runtime_guard.plugin:register``) calls it in every vLLM process. On DeepGEMM 2.6.1 and an
SM90 GPU the clamp runs inside one scheduler kernel of the guard's own (``runtime_guard.fused``,
NVRTC through torch), so a CUDA graph gets no extra node. ``runtime_guard.reference`` is a CPU
model of the scheduler kernel, loaded on first use.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: see clamp.py
if TYPE_CHECKING:
    from typing import Any

from runtime_guard.clamp import (
    clamp_context_lens,
    get_paged_mqa_logits_metadata,
    guard,
    guard_path,
    is_guarded,
    unguarded,
)
from runtime_guard.patch import install, is_installed, uninstall

__all__ = [
    "clamp_context_lens",
    "get_paged_mqa_logits_metadata",
    "guard",
    "guard_path",
    "install",
    "is_guarded",
    "is_installed",
    "reference",
    "unguarded",
    "uninstall",
]


def __getattr__(name: str) -> Any:
    # The reference model pulls in dataclasses, which alone would double the import time.
    if name == "reference":
        import importlib

        return importlib.import_module("runtime_guard.reference")
    raise AttributeError(f"module 'runtime_guard' has no attribute {name!r}")
