"""Recognizers by name: which kernel header each reads, and which hazard its verdict is about.

A recognizer is one module of this package holding a ``RECOGNIZER`` (a :class:`Recognizer`):
the hazard it speaks of, the header paths it reads (relative to a ``deep_gemm`` package
folder, first found wins) and its ``check_source``. Adding one is one module plus one row of
:data:`RECOGNIZERS`; modules are imported on first use.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from zerolint.headers.results import HeaderCheck, HeaderError

# The paged-MQA scheduler headers in the order DeepGEMM's SM90 path uses them: the SM90
# file (DeepGEMM 2.6 and later), else the generic ``smxx_`` scheduler (2.5).
SCHEDULER_HEADERS = ("sm90_paged_mqa_logits.cuh", "paged_mqa_logits.cuh")
SCHEDULER_DIR = "include/deep_gemm/scheduler"

RECOGNIZERS: dict[str, str] = {
    "all-zero-search": "zerolint.headers.all_zero",
    "empty-batch": "zerolint.headers.empty_batch",
}


@dataclass(frozen=True, slots=True)
class Recognizer:
    """What one recognizer reads and what its verdict means.

    ``guarded`` means the kernel in the header does not fault on the hazard's input,
    ``unguarded`` that it reads out of bounds on it, ``unknown`` that the header could not
    be read far enough to say.
    """

    name: str
    hazard: str  # the hazard's key in the audit: "ZL001", "empty-batch"
    label: str  # the input that hurts, a few words: "B == 0"
    title: str  # the input that hurts and what the kernel does with it, one line
    headers: tuple[str, ...]  # paths relative to a deep_gemm package folder
    check_source: Callable[[str, str], HeaderCheck]

    def find_header(self, package_dir: Path) -> Path | None:
        """The first of :attr:`headers` that ``package_dir`` ships, if any."""
        for relative in self.headers:
            if (package_dir / relative).is_file():
                return package_dir / relative
        return None

    def check_header(self, path: Path) -> HeaderCheck:
        """Read the header at ``path``; raises HeaderError when it cannot be read."""
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise HeaderError(f"{path}: cannot read header: {exc.strerror or exc}") from exc
        return self.check_source(text, str(path))

    def check_package(self, package_dir: Path) -> HeaderCheck:
        """The verdict for a ``deep_gemm`` package folder; ``unknown`` when no header is found."""
        path = self.find_header(package_dir)
        if path is None:
            folder = package_dir / Path(self.headers[0]).parent if self.headers else package_dir
            return HeaderCheck(
                str(folder), "unknown", f"no header for {self.name} in this DeepGEMM"
            )
        try:
            return self.check_header(path)
        except HeaderError as exc:
            return HeaderCheck(str(path), "unknown", str(exc))


def recognizer(name: str) -> Recognizer:
    """The recognizer registered as ``name``; KeyError names the known ones."""
    try:
        module = RECOGNIZERS[name]
    except KeyError:
        raise KeyError(f"no header recognizer {name!r}; known: {', '.join(RECOGNIZERS)}") from None
    return importlib.import_module(module).RECOGNIZER


def recognizers() -> list[Recognizer]:
    """Every registered recognizer, in registration order."""
    return [recognizer(name) for name in RECOGNIZERS]
