"""Prepare the kernels the zero-length probe runs, on a machine with network.

Run from the repository root::

    python devtools/prepare_sm90.py     # .sm90/: DeepGEMM 2.5.0 and the 2.6.1 headers
    python devtools/prepare_probe.py    # .probe/ (git-ignored)

What it extracts (nothing of it is ever committed):

- from the vLLM 0.26.0 wheel, at their paths in the wheel under ``.probe/vllm_0_26_0``:
  FlashMLA's ``vllm/_flashmla_C.abi3.so`` and ``vllm/_flashmla_extension_C.abi3.so`` with
  their Python interface ``vllm/third_party/flashmla/flash_mla_interface.py``, and the Triton
  MLA decode kernel ``vllm/v1/attention/ops/triton_decode_attention.py``. The probe puts
  small stand-ins for ``vllm``, ``vllm.platforms`` and ``vllm.triton_utils`` around them
  (``probe/standins.py``), so no vLLM install is needed;
- from the vLLM 0.33.0 wheel: DeepGEMM 2.8.1's SM90 scheduler header
  ``deep_gemm/scheduler/sm90_paged_mqa_logits.cuh`` (the guarded one) and its include
  closure, into ``.probe/dg_2_8_1/include``;
- ``.probe/manifest.json``: each piece's wheel, the wheel's sha256 and every file's sha256.

DeepGEMM 2.5.0 (the ``_C`` that loads on torch 2.11) and the 2.6.1 header come from
``.sm90/``, which ``devtools/prepare_sm90.py`` writes; the probe reads both folders.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import zipfile
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from devtools.prepare_sm90 import (
    INCLUDE_ROOT,
    SCHEDULER_HEADER,
    extract_files,
    extract_scheduler_headers,
    folder_bytes,
    wheel_record,
)
from devtools.wheels import download

VLLM_WHEEL = "vllm==0.26.0"
VLLM_DIR = "vllm_0_26_0"
VLLM_FILES = (
    "vllm/_flashmla_C.abi3.so",
    "vllm/_flashmla_extension_C.abi3.so",
    "vllm/third_party/flashmla/flash_mla_interface.py",
    "vllm/v1/attention/ops/triton_decode_attention.py",
    "vllm/third_party/deep_gemm/__init__.py",  # only read: its __version__
)
GUARDED_WHEEL = "vllm==0.33.0"
GUARDED_DIR = "dg_2_8_1"
MANIFEST = "manifest.json"


def deep_gemm_version(wheel: Path) -> str | None:
    with zipfile.ZipFile(wheel) as zf:
        init = zf.read(INCLUDE_ROOT.removesuffix("include/") + "__init__.py").decode()
    for line in init.splitlines():
        if line.startswith("__version__"):
            return line.split("=", 1)[1].strip().strip("'\"")
    return None


def prepare(out: Path) -> dict[str, object]:
    """(Re)create ``out`` with the probe's pieces and its manifest; return the manifest."""
    vllm_wheel = download(VLLM_WHEEL)
    guarded_wheel = download(GUARDED_WHEEL)
    if out.exists():
        shutil.rmtree(out)
    manifest = {
        "vllm": {
            **wheel_record(VLLM_WHEEL, vllm_wheel),
            "path": VLLM_DIR,
            "files": extract_files(vllm_wheel, VLLM_FILES, out / VLLM_DIR),
        },
        "guarded_scheduler": {
            **wheel_record(GUARDED_WHEEL, guarded_wheel),
            "deep_gemm_version": deep_gemm_version(guarded_wheel),
            "path": GUARDED_DIR,
            **extract_scheduler_headers(guarded_wheel, out / GUARDED_DIR),
        },
    }
    assert manifest["guarded_scheduler"]["header"] == SCHEDULER_HEADER
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(".probe"),
        help="folder to (re)create (default: .probe, git-ignored)",
    )
    args = parser.parse_args(argv)
    manifest = prepare(args.out)
    print(f"vllm: {len(manifest['vllm']['files'])} files -> {args.out / VLLM_DIR}")
    guarded = manifest["guarded_scheduler"]
    print(f"guarded scheduler: {guarded['files']} headers -> {args.out / GUARDED_DIR}")
    print(f"{args.out}: {folder_bytes(args.out.rglob('*')) / 2**20:.1f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
