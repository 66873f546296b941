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


def extract_scheduler_headers(wheel: Path, dest: Path) -> dict[str, object]:
    """Extract the SM90 scheduler header and its include closure; describe what was taken."""
    with zipfile.ZipFile(wheel) as zf:
        members = {
            name[len(INCLUDE_ROOT) :]: zf.read(name)
            for name in zf.namelist()
            if name.startswith(INCLUDE_ROOT) and not name.endswith("/")
        }
    if SCHEDULER_HEADER not in members:
        raise SystemExit(f"error: {wheel.name}: no {INCLUDE_ROOT}{SCHEDULER_HEADER}")
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


def wheel_record(requirement: str, wheel: Path) -> dict[str, str]:
    return {"requirement": requirement, "wheel": wheel.name, "wheel_sha256": sha256_file(wheel)}


def prepare(out: Path) -> dict[str, object]:
    """(Re)create ``out`` with both pieces and its manifest; return the manifest."""
    scheduler_wheel = download(SCHEDULER_WHEEL)
    semantics_wheel = download(SEMANTICS_WHEEL)
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
    }
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
    for role in ("scheduler", "semantics"):
        piece = manifest[role]
        print(f"{role}: {piece['files']} files from {piece['wheel']} -> {args.out / piece['path']}")
    print(f"{args.out}: {size / 2**20:.1f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
