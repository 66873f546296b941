"""A minimal ``vllm`` package around the files the probe takes from the vLLM 0.26.0 wheel.

The Triton decode kernel imports ``vllm.platforms.current_platform`` (only ``is_rocm()``)
and ``vllm.triton_utils`` (``triton``, ``tl``); FlashMLA's interface imports
``vllm._flashmla_C``. These stand-ins provide exactly that and nothing else, so the kernels
run as published without installing vLLM (whose wheel pins another torch).
"""

from __future__ import annotations

import shutil
from pathlib import Path

PLATFORMS = '''"""Stand-in for vllm.platforms: an NVIDIA CUDA platform (zerolint probe)."""


class _CudaPlatform:
    def is_rocm(self) -> bool:
        return False

    def is_cuda(self) -> bool:
        return True


current_platform = _CudaPlatform()
'''

TRITON_UTILS = '''"""Stand-in for vllm.triton_utils: the real Triton (zerolint probe)."""

import triton
import triton.language as tl

__all__ = ["tl", "triton"]
'''

PACKAGES = (
    "vllm",
    "vllm/third_party",
    "vllm/third_party/flashmla",
    "vllm/v1",
    "vllm/v1/attention",
    "vllm/v1/attention/ops",
)


def build(extracted: Path, dest: Path) -> Path:
    """Copy ``extracted`` (``.probe/vllm_0_26_0``) to ``dest`` and add the stand-ins; return
    the folder to put on ``sys.path``."""
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(extracted, dest)
    # Extracted only to read its version; importing it would need DeepGEMM's _C.
    shutil.rmtree(dest / "vllm" / "third_party" / "deep_gemm", ignore_errors=True)
    for package in PACKAGES:
        init = dest / package / "__init__.py"
        init.parent.mkdir(parents=True, exist_ok=True)
        if not init.exists():
            init.write_text("")
    (dest / "vllm" / "platforms").mkdir(exist_ok=True)
    (dest / "vllm" / "platforms" / "__init__.py").write_text(PLATFORMS)
    (dest / "vllm" / "triton_utils").mkdir(exist_ok=True)
    (dest / "vllm" / "triton_utils" / "__init__.py").write_text(TRITON_UTILS)
    return dest
