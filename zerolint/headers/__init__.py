"""Read DeepGEMM's kernel headers: does the kernel that will run guard a zero-length input?

DeepGEMM compiles its kernels at run time from the headers it ships, so the header on disk
is the kernel that will run. Its version string does not tell a guarded scheduler from an
unguarded one (vLLM 0.27.1 and 0.28.0 both vendor "2.6.1"), so this package reads the C++.

The reading is structural, not textual, in two layers:

* a CUDA/C++ front end: :mod:`~zerolint.headers.tokens` (comments, strings and
  preprocessor lines dropped), :mod:`~zerolint.headers.syntax` (the tree),
  :mod:`~zerolint.headers.parser` (function definitions into statements and expressions),
  :mod:`~zerolint.headers.reader` (a walk in program order over values and path facts) and
  :mod:`~zerolint.headers.search` (binary searches over a kernel's arrays);
* recognizers, one module each, registered in :mod:`~zerolint.headers.registry`:
  :mod:`~zerolint.headers.all_zero` (ZL001: the search reads one past the data when every
  length is 0) and :mod:`~zerolint.headers.empty_batch` (a batch of 0 rows).

Names and layout do not matter; only the shape does, so renamed or reformatted guards are
still found, and a guard in a comment, a bound that is not below the limit, or an early
return after the read are not guards. docs/audit.md describes the rules in full.

The names below are the API of the ZL001 check (``check_header`` and ``check_source`` are
the all-zero recognizer's).
"""

from __future__ import annotations

from pathlib import Path

from zerolint.headers.all_zero import check_source
from zerolint.headers.registry import (
    RECOGNIZERS,
    SCHEDULER_DIR,
    SCHEDULER_HEADERS,
    Recognizer,
    recognizer,
    recognizers,
)
from zerolint.headers.results import Evidence, HeaderCheck, HeaderError, HeaderStatus
from zerolint.headers.tokens import Token, tokenize

__all__ = [
    "RECOGNIZERS",
    "SCHEDULER_HEADERS",
    "Evidence",
    "HeaderCheck",
    "HeaderError",
    "HeaderStatus",
    "Recognizer",
    "Token",
    "check_header",
    "check_source",
    "find_scheduler_header",
    "recognizer",
    "recognizers",
    "tokenize",
]


def find_scheduler_header(package_dir: Path) -> Path | None:
    """The paged-MQA scheduler header that DeepGEMM's SM90 path compiles, if shipped.

    ``package_dir`` is a ``deep_gemm`` package folder (pip-installed or vendored).
    """
    folder = package_dir / SCHEDULER_DIR
    for name in SCHEDULER_HEADERS:
        if (folder / name).is_file():
            return folder / name
    return None


def check_header(path: Path) -> HeaderCheck:
    """Read the scheduler header at ``path`` and decide whether the all-zero case is guarded."""
    return recognizer("all-zero-search").check_header(path)
