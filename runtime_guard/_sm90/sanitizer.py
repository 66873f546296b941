"""compute-sanitizer memcheck around a worker process, and what its log says."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

_SUMMARY = re.compile(r"ERROR SUMMARY:\s*(\d+)\s+errors?\s*$", re.MULTILINE)
_FIRST_ERROR_LINES = 8
_LINE_CHARS = 240


def find_sanitizer(cuda_home: str | None) -> str | None:
    """``compute-sanitizer`` on PATH, else under the CUDA toolkit torch found."""
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    if cuda_home:
        candidate = Path(cuda_home) / "bin" / "compute-sanitizer"
        if candidate.exists():
            return str(candidate)
    return None


def version(executable: str) -> str:
    out = subprocess.run(
        [executable, "--version"], capture_output=True, text=True, timeout=60, check=False
    )
    lines = [line for line in out.stdout.splitlines() if line.strip()]
    return lines[-1] if lines else out.stderr.strip()


def memcheck_wrapper(executable: str, log: Path) -> tuple[str, ...]:
    return (executable, "--tool", "memcheck", "--print-limit", "20", "--log-file", str(log))


def parse_log(text: str) -> dict[str, Any]:
    """Error count, the invalid shared reads, and the first error's lines, from a memcheck log."""
    lines = [line.removeprefix("=========").strip() for line in text.splitlines()]
    summary = _SUMMARY.findall(text)
    first = next((i for i, line in enumerate(lines) if line.startswith("Invalid ")), None)
    return {
        "errors": int(summary[0]) if summary else None,  # None: no summary, the run broke
        "invalid_shared_reads": sum("Invalid __shared__ read" in line for line in lines),
        "out_of_bounds": sorted({line for line in lines if "is out of bounds" in line}),
        "printed_error_kinds": dict(Counter(line for line in lines if line.startswith("Invalid "))),
        "first_error": []
        if first is None
        else [line[:_LINE_CHARS] for line in lines[first : first + _FIRST_ERROR_LINES]],
    }
