"""Build and load the extension that runs the real DeepGEMM 2.6.1 SM90 scheduler kernel."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import ModuleType

SOURCES = tuple(
    Path(__file__).with_name(n) for n in ("sm90_metadata.cpp", "sm90_metadata_launch.cu")
)
ARCH_LIST = "9.0a"  # torch turns this into -gencode=arch=compute_90a,code=sm_90a
CUDA_FLAGS = ("-O3", "--expt-relaxed-constexpr", "-lineinfo")


def module_name(num_sms: int) -> str:
    return f"rg_sm90_metadata_{num_sms}sms"


def build(
    include_dir: Path,
    build_dir: Path,
    num_sms: int,
    *,
    verbose: bool = False,
    sources: tuple[Path, ...] = SOURCES,
    name: str | None = None,
) -> Path:
    """Compile the extension against ``include_dir`` for ``num_sms`` SMs; return the .so path.

    ``num_sms`` is a template argument of the kernel (DeepGEMM JIT-compiles one per device),
    so the build is specific to the device's multiprocessor count. ``sources`` and ``name``
    build another launcher the same way (the zero-length probe's DeepGEMM 2.8.1 one).
    """
    from torch.utils.cpp_extension import load

    os.environ["TORCH_CUDA_ARCH_LIST"] = ARCH_LIST
    build_dir.mkdir(parents=True, exist_ok=True)
    module = load(
        name=name or module_name(num_sms),
        sources=[str(s) for s in sources],
        extra_include_paths=[str(include_dir)],
        extra_cuda_cflags=[*CUDA_FLAGS, f"-DRG_NUM_SMS={num_sms}"],
        build_directory=str(build_dir),
        verbose=verbose,
    )
    return Path(module.__file__)


def load_built(path: Path) -> ModuleType:
    """Import an extension built by :func:`build` without rebuilding (cheap in each worker)."""
    import torch  # noqa: F401  (the extension links against torch's libraries)

    name = path.name.split(".")[0]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path}: not a loadable extension module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def compile_flags(num_sms: int) -> list[str]:
    """The flags recorded in the report next to the arch list."""
    return [*CUDA_FLAGS, f"-DRG_NUM_SMS={num_sms}", f"TORCH_CUDA_ARCH_LIST={ARCH_LIST}"]
