"""What was measured on a GPU for a kernel build, keyed by the sha256 of its header.

The header a recognizer reads is the kernel that runs (DeepGEMM compiles it at run time),
so a measurement of one header holds for every installed copy of that file, whatever the
package's version string says. Rows are added when a run is committed; a build without a
row is reported as not measured, never guessed. docs/hazards/README.md ("Measured") lists
the same rows with their runs.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Outcome = Literal["fault", "ok"]


@dataclass(frozen=True, slots=True)
class Measurement:
    """One hazard run against one header on a GPU."""

    hazard: str  # a recognizer's hazard key: "ZL001", "empty-batch"
    header_sha256: str
    build: str  # where that header was taken from, for the reader
    outcome: Outcome
    detail: str
    source: str  # the docs page that records the run


# vLLM 0.27.1 vendors this 2.6.1 header; sgl-deep-gemm 0.2.3.post2 ships the same file.
_SHA_2_6_1_UNGUARDED = "9fcac09c81dc92860f427229a91cd573b26cd51b9249b9ceabc96ad0983e12cb"
_SHA_2_8_1 = "78dff045c138dbac29766856b2024fd042b48a905ae409bbc0684e588e4d81ee"  # vLLM 0.33.0
_SHA_2_5_0 = "e44c53286dd122a025ca43625d8d9fa509d4cea60e86e45c386de6e579db95d3"  # vLLM 0.26.0

MEASURED: tuple[Measurement, ...] = (
    Measurement(
        "ZL001",
        _SHA_2_6_1_UNGUARDED,
        "DeepGEMM 2.6.1 scheduler header of vLLM 0.27.1",
        "fault",
        "every length 0 with B = 32, 64, 96, 256, 1024: illegal memory access; B = 8, 33, 250 ok",
        "docs/sm90-verification.md",
    ),
    Measurement(
        "ZL001",
        _SHA_2_8_1,
        "DeepGEMM 2.8.1 scheduler header of vLLM 0.33.0",
        "ok",
        "the same cases as the 2.6.1 header: every case ok",
        "docs/hazards/README.md",
    ),
    Measurement(
        "empty-batch",
        _SHA_2_5_0,
        "DeepGEMM 2.5.0 package of vLLM 0.26.0",
        "fault",
        "context_lens of shape (0, next_n), next_n 1 and 2: illegal memory access",
        "docs/hazards/empty-batch-ZL001.md",
    ),
    Measurement(
        "empty-batch",
        _SHA_2_6_1_UNGUARDED,
        "DeepGEMM 2.6.1 scheduler header of vLLM 0.27.1",
        "fault",
        "context_lens of shape (0, next_n), next_n 1 and 2, launched as DeepGEMM's host code"
        " launches it: illegal memory access; B = 1 ok",
        "docs/hazards/empty-batch-ZL001.md",
    ),
    Measurement(
        "empty-batch",
        _SHA_2_8_1,
        "DeepGEMM 2.8.1 scheduler header of vLLM 0.33.0",
        "ok",
        "context_lens of shape (0, next_n), next_n 1 and 2: ok, every schedule row (0, 0)",
        "docs/hazards/empty-batch-ZL001.md",
    ),
)


def file_sha256(path: Path) -> str | None:
    """The sha256 of a file's bytes, None when it cannot be read."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def measurement(hazard: str, header: Path | None) -> Measurement | None:
    """The recorded run of ``hazard`` on the header at ``header``, if there is one."""
    digest = file_sha256(header) if header is not None else None
    if digest is None:
        return None
    return next((m for m in MEASURED if m.hazard == hazard and m.header_sha256 == digest), None)
