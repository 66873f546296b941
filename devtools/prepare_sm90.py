"""Prepare the DeepGEMM pieces the SM90 verification needs, on a machine with network.

Run from the repository root::

    python devtools/prepare_sm90.py            # writes .sm90/ (git-ignored)

What it extracts (nothing of it is ever committed):

- from the vLLM 0.27.1 wheel: ``deep_gemm/scheduler/sm90_paged_mqa_logits.cuh`` (DeepGEMM
  2.6.1, the unguarded SM90 metadata scheduler) and every header it includes, transitively,
  from the wheel's ``vllm/third_party/deep_gemm/include`` (deep_gemm, cute, cutlass), into
  ``.sm90/dg_2_6_1/include``;
- from the vLLM 0.26.0 wheel: the whole vendored ``vllm/third_party/deep_gemm`` Python
  package (DeepGEMM 2.5.0, whose ``_C`` loads on torch 2.11) as a top-level ``deep_gemm``
  package under ``.sm90/dg_2_5_0``, for the logits semantics check;
- from the SGLang 0.5.23 wheel, at their paths in the wheel under ``.sm90/sglang_0_5_23``:
  its DeepSeek-V4 indexer's own schedule kernel
  ``sglang/kernels/jit/csrc/deepseek_v4/paged_mqa_metadata.cuh`` (what SGLang JIT-compiles
  by default) and its Triton metadata kernel
  ``sglang/kernels/ops/attention/dsv4/metadata_kernel.py`` (``seq_len // 4``);
- from the ``sgl-deep-gemm`` 0.2.3.post2 wheel (the ``deep_gemm`` SGLang imports): the same
  SM90 scheduler header and its own include closure, into ``.sm90/sgl_dg_0_2_3/include``;
- ``.sm90/manifest.json``: which wheel (and its sha256) each piece came from, the sha256
  of the scheduler header, file counts and sizes.

The folder stays well under the 64 MiB a device call can carry; the SM90 machine then runs
``python -m runtime_guard.verify_sm90 --out report.json`` with no network.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import sys
import zipfile
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from devtools.wheels import download

SCHEDULER_WHEEL = "vllm==0.27.1"
SEMANTICS_WHEEL = "vllm==0.26.0"
DG_ROOT = "vllm/third_party/deep_gemm/"
INCLUDE_ROOT = DG_ROOT + "include/"
SCHEDULER_HEADER = "deep_gemm/scheduler/sm90_paged_mqa_logits.cuh"
SCHEDULER_DIR = "dg_2_6_1"
SGLANG_WHEEL = "sglang==0.5.23"
SGLANG_DIR = "sglang_0_5_23"
SGLANG_FILES = (
    "sglang/kernels/jit/csrc/deepseek_v4/paged_mqa_metadata.cuh",
    "sglang/kernels/ops/attention/dsv4/metadata_kernel.py",
)
SGL_DEEP_GEMM_WHEEL = "sgl-deep-gemm==0.2.3.post2"
SGL_DEEP_GEMM_INCLUDE = "deep_gemm/include/"
SGL_SCHEDULER_DIR = "sgl_dg_0_2_3"
SEMANTICS_DIR = "dg_2_5_0"
MANIFEST = "manifest.json"

_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.MULTILINE)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def included_names(source: str) -> list[str]:
    """Every ``#include`` target named in ``source``, conditional ones too (a superset is safe)."""
    return _INCLUDE.findall(source)


def include_closure(members: dict[str, bytes], root: str) -> list[str]:
    """Paths (relative to ``root``) of ``root`` and every header it reaches inside ``members``.

    ``members`` maps include-relative paths to their bytes. An include resolves first against
    the including file's folder (quoted form), then against the include root; names found in
    neither (``<cuda_bf16.h>``, ``<cuda/std/cstdint>``) are toolkit headers and are skipped.
    """
    seen: set[str] = set()
    pending = [root]
    while pending:
        path = pending.pop()
        if path in seen:
            continue
        seen.add(path)
        here = PurePosixPath(path).parent
        for name in included_names(members[path].decode("utf-8", errors="replace")):
            for candidate in (_normalise(here / name), _normalise(PurePosixPath(name))):
                if candidate in members:
                    pending.append(candidate)
                    break
    return sorted(seen)


def _normalise(path: PurePosixPath) -> str:
    parts: list[str] = []
    for part in path.parts:
        if part == "..":
            if parts:
                parts.pop()
        elif part != ".":
            parts.append(part)
    return "/".join(parts)


def _write(dest: Path, data: bytes) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(data)


def extract_scheduler_headers(
    wheel: Path, dest: Path, include_root: str = INCLUDE_ROOT
) -> dict[str, object]:
    """Extract the SM90 scheduler header and its include closure; describe what was taken."""
    with zipfile.ZipFile(wheel) as zf:
        members = {
            name[len(include_root) :]: zf.read(name)
            for name in zf.namelist()
            if name.startswith(include_root) and not name.endswith("/")
        }
    if SCHEDULER_HEADER not in members:
        raise SystemExit(f"error: {wheel.name}: no {include_root}{SCHEDULER_HEADER}")
    closure = include_closure(members, SCHEDULER_HEADER)
    for name in closure:
        _write(dest / "include" / name, members[name])
    return {
        "header": SCHEDULER_HEADER,
        "header_sha256": sha256_bytes(members[SCHEDULER_HEADER]),
        "files": len(closure),
        "bytes": sum(len(members[name]) for name in closure),
        "headers_in_wheel": len(members),
    }


def extract_package(wheel: Path, dest: Path) -> dict[str, object]:
    """Extract the vendored ``deep_gemm`` package as a top-level ``deep_gemm`` under ``dest``."""
    files = total = 0
    with zipfile.ZipFile(wheel) as zf:
        for name in zf.namelist():
            if not name.startswith(DG_ROOT) or name.endswith("/"):
                continue
            data = zf.read(name)
            _write(dest / "deep_gemm" / name[len(DG_ROOT) :], data)
            files += 1
            total += len(data)
        header = zf.read(DG_ROOT + "include/deep_gemm/scheduler/paged_mqa_logits.cuh")
        init = zf.read(DG_ROOT + "__init__.py").decode()
    version = re.search(r"__version__\s*=\s*['\"]([^'\"]+)", init)
    return {
        "package": "deep_gemm",
        "deep_gemm_version": version.group(1) if version else None,
        "header": "deep_gemm/scheduler/paged_mqa_logits.cuh",
        "header_sha256": sha256_bytes(header),
        "files": files,
        "bytes": total,
    }


def extract_files(wheel: Path, names: tuple[str, ...], dest: Path) -> dict[str, str]:
    """Extract ``names`` from ``wheel`` at their paths under ``dest``; their sha256 by name."""
    digests = {}
    with zipfile.ZipFile(wheel) as zf:
        present = set(zf.namelist())
        for name in names:
            if name not in present:
                raise SystemExit(f"error: {wheel.name}: no {name}")
            data = zf.read(name)
            _write(dest / name, data)
            digests[name] = sha256_bytes(data)
    return digests


def closure_differences(one: Path, other: Path) -> list[str]:
    """The files of include folder ``one`` that ``other`` lacks or holds other bytes of."""
    return sorted(
        p.relative_to(one).as_posix()
        for p in one.rglob("*")
        if p.is_file()
        and (
            not (other / p.relative_to(one)).is_file()
            or (other / p.relative_to(one)).read_bytes() != p.read_bytes()
        )
    )


def wheel_record(requirement: str, wheel: Path) -> dict[str, str]:
    return {"requirement": requirement, "wheel": wheel.name, "wheel_sha256": sha256_file(wheel)}


def prepare(out: Path) -> dict[str, object]:
    """(Re)create ``out`` with both pieces and its manifest; return the manifest."""
    scheduler_wheel = download(SCHEDULER_WHEEL)
    semantics_wheel = download(SEMANTICS_WHEEL)
    sglang_wheel = download(SGLANG_WHEEL)
    sgl_deep_gemm_wheel = download(SGL_DEEP_GEMM_WHEEL)
    if out.exists():
        shutil.rmtree(out)
    manifest = {
        "scheduler": {
            **wheel_record(SCHEDULER_WHEEL, scheduler_wheel),
            "deep_gemm_version": "2.6.1",
            "path": SCHEDULER_DIR,
            **extract_scheduler_headers(scheduler_wheel, out / SCHEDULER_DIR),
        },
        "semantics": {
            **wheel_record(SEMANTICS_WHEEL, semantics_wheel),
            "path": SEMANTICS_DIR,
            **extract_package(semantics_wheel, out / SEMANTICS_DIR),
        },
        "sglang": {
            **wheel_record(SGLANG_WHEEL, sglang_wheel),
            "path": SGLANG_DIR,
            "files_sha256": extract_files(sglang_wheel, SGLANG_FILES, out / SGLANG_DIR),
        },
        "sgl_scheduler": {
            **wheel_record(SGL_DEEP_GEMM_WHEEL, sgl_deep_gemm_wheel),
            "path": SGL_SCHEDULER_DIR,
            **extract_scheduler_headers(
                sgl_deep_gemm_wheel, out / SGL_SCHEDULER_DIR, SGL_DEEP_GEMM_INCLUDE
            ),
        },
    }
    # The scheduler header is the same file in both wheels; some headers it includes are not.
    manifest["sgl_scheduler"]["closure_differs_from_scheduler"] = closure_differences(
        out / SGL_SCHEDULER_DIR / "include", out / SCHEDULER_DIR / "include"
    )
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def folder_bytes(paths: Iterable[Path]) -> int:
    return sum(p.stat().st_size for p in paths if p.is_file())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(".sm90"),
        help="folder to (re)create (default: .sm90, git-ignored)",
    )
    args = parser.parse_args(argv)
    manifest = prepare(args.out)
    size = folder_bytes(args.out.rglob("*"))
    for role, piece in manifest.items():
        files = piece.get("files", len(piece.get("files_sha256", ())))
        print(f"{role}: {files} files from {piece['wheel']} -> {args.out / piece['path']}")
    print(f"{args.out}: {size / 2**20:.1f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
