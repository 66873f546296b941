"""Download public wheels from PyPI once and unpack the parts a test or benchmark needs.

Used by the tests, the benchmarks and the SM90 preparation script. Nothing fetched here
is committed: wheels and trees live in a cache outside the repository
(``$ZEROLINT_WHEEL_CACHE``, default ``~/.cache/zerolint/wheels``).
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path


def cache_dir() -> Path:
    root = os.environ.get("ZEROLINT_WHEEL_CACHE")
    path = Path(root) if root else Path.home() / ".cache" / "zerolint" / "wheels"
    path.mkdir(parents=True, exist_ok=True)
    return path


def download(requirement: str, *, extra_pip_args: tuple[str, ...] = ()) -> Path:
    """Return the path of the wheel for ``requirement`` (``name==version``), downloading it once."""
    name, _, version = requirement.partition("==")
    if not version:
        raise ValueError(f"pin an exact version: {requirement!r}")
    stem = name.replace("-", "_").lower()
    target = cache_dir() / "dl" / f"{stem}-{version}"
    found = sorted(target.glob("*.whl")) if target.is_dir() else []
    if found:
        return found[0]
    target.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "-q",
        "-d",
        str(target),
        requirement,
        *extra_pip_args,
    ]
    subprocess.run(cmd, check=True)
    found = sorted(target.glob("*.whl"))
    if not found:
        raise RuntimeError(f"pip download {requirement} produced no wheel")
    return found[0]


def unpack(requirement: str, patterns: tuple[str, ...] = ("*.py",), *, tag: str = "py") -> Path:
    """Unpack the members of the wheel matching any of ``patterns``; return the folder.

    The folder is the root of the wheel (holding e.g. ``vllm/``), created atomically so a
    crashed run never leaves half a tree behind.
    """
    wheel = download(requirement)
    name, _, version = requirement.partition("==")
    dest = cache_dir() / "trees" / f"{name.replace('-', '_').lower()}-{version}-{tag}"
    if (dest / ".complete").exists():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=".unpack-"))
    try:
        with zipfile.ZipFile(wheel) as zf:
            members = [m for m in zf.namelist() if any(fnmatch.fnmatch(m, p) for p in patterns)]
            zf.extractall(tmp, members)
        (tmp / ".complete").write_text(requirement + "\n")
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(tmp, dest)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return dest


def vllm_tree(version: str) -> Path:
    """The ``.py`` files of a vLLM wheel; ``vllm/`` lies inside the returned folder."""
    return unpack(f"vllm=={version}", ("*.py",))


def platform_wheel(platform: str) -> tuple[str, ...]:
    """pip's arguments for a package that ships platform wheels only: CPython 3.11 on
    ``platform``. Their Python files are the same on every platform."""
    return ("--platform", platform, "--python-version", "3.11", "--implementation", "cp")


SGLANG_PIP_ARGS = platform_wheel("manylinux_2_34_x86_64")  # glibc 2.34
LMDEPLOY_PIP_ARGS = platform_wheel("manylinux_2_28_x86_64")  # glibc 2.28


def _platform_tree(name: str, version: str, pip_args: tuple[str, ...]) -> Path:
    download(f"{name}=={version}", extra_pip_args=pip_args)
    return unpack(f"{name}=={version}", ("*.py",))


def sglang_tree(version: str) -> Path:
    """The ``.py`` files of an SGLang wheel; ``sglang/`` lies inside the returned folder."""
    return _platform_tree("sglang", version, SGLANG_PIP_ARGS)


def lmdeploy_tree(version: str) -> Path:
    """The ``.py`` files of an lmdeploy wheel; ``lmdeploy/`` lies inside the returned folder."""
    return _platform_tree("lmdeploy", version, LMDEPLOY_PIP_ARGS)


# In each serving tree, the file a pre-commit run is given: the one that calls the kernel.
HOOK_FILE = {
    "vllm": "vllm/v1/attention/backends/mla/indexer.py",
    "sglang": "sglang/srt/layers/attention/deepseek_v4_backend.py",
}


def serving_tree(requirement: str) -> tuple[Path, str]:
    """(folder, package) for ``vllm==X`` or ``sglang==X``: the package's ``.py`` files lie
    in ``folder/package``."""
    name, _, version = requirement.partition("==")
    if name == "vllm":
        return vllm_tree(version), "vllm"
    if name == "sglang":
        return sglang_tree(version), "sglang"
    raise ValueError(f"not a serving tree this project knows: {requirement!r}")


# What a site-packages folder needs for `zerolint audit` and the header checks: the Python
# files, the package metadata and DeepGEMM's scheduler headers. sgl-deep-gemm ships
# platform wheels only.
SERVING_PARTS = ("*.py", "*.dist-info/*", "*/include/deep_gemm/scheduler/*", "*deep_gemm/VERSION")
SGL_PIP_ARGS = platform_wheel("manylinux2014_x86_64")


def serving_site(requirement: str) -> Path:
    """A site-packages-like folder holding the serving parts of one wheel (unpacked once)."""
    if requirement.startswith("sgl-deep-gemm"):
        download(requirement, extra_pip_args=SGL_PIP_ARGS)
    return unpack(requirement, SERVING_PARTS, tag="audit")
