"""Golden files: expected outputs kept beside their inputs, and the one way to rewrite them.

A golden suite is a function, registered with ``@suite(name)`` in the test module that
checks it, that lists its files: for each, the expected file's path and a function that
produces today's output. The tests only compare; ``python -m devtools.update_golden``
rewrites the files that differ and exits 1 when it changed any, so a run that rewrites
goldens is never a green test run. A new suite is one decorated function in a test module;
the updater finds it (``discover``).
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
UPDATE_COMMAND = "python -m devtools.update_golden"
RETIRED_ENV = "ZEROLINT_UPDATE_GOLDEN"
# How a test module that registers a suite is recognised: it imports this module.
_MARKERS = ("from tests import golden", "from tests.golden import")


@dataclass(frozen=True)
class Golden:
    """One expected file and what produces its content today."""

    path: Path
    produce: Callable[[], str]

    @property
    def name(self) -> str:
        """The path from the repository root (as given when outside it)."""
        path = self.path.resolve()
        return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


SUITES: dict[str, Callable[[], list[Golden]]] = {}


def suite(name: str) -> Callable[[Callable[[], list[Golden]]], Callable[[], list[Golden]]]:
    """Register a function that lists a suite's golden files under ``name``."""

    def register(cases: Callable[[], list[Golden]]) -> Callable[[], list[Golden]]:
        known = SUITES.get(name)
        # pytest imports a test module as ``test_x``, the updater as ``tests.test_x``: the
        # same file may register twice, two files may not share a name.
        if known is not None and known.__code__.co_filename != cases.__code__.co_filename:
            raise ValueError(f"two golden suites are named {name!r}")
        SUITES[name] = cases
        return cases

    return register


def assert_matches(path: Path, actual: str) -> None:
    """Compare today's output with the golden file; never writes it."""
    if not path.is_file():
        raise AssertionError(f"{path.name} is missing: write it with `{UPDATE_COMMAND}`")
    expected = path.read_text(encoding="utf-8")
    assert actual == expected, (
        f"{path.name} differs from today's output; if the change is intended, "
        f"run `{UPDATE_COMMAND}` and review the diff"
    )


def discover() -> dict[str, Callable[[], list[Golden]]]:
    """Every registered suite: imports each ``tests/test_*.py`` that registers one."""
    for path in sorted(TESTS.glob("test_*.py")):
        text = path.read_text(encoding="utf-8")
        if any(marker in text for marker in _MARKERS) and path.stem != "test_golden":
            importlib.import_module(f"tests.{path.stem}")
    return dict(sorted(SUITES.items()))


def run_cli(args: list[str], cwd: Path) -> tuple[int, str]:
    """(exit code, stdout) of ``zerolint ARGS`` run in this process from ``cwd``."""
    from zerolint.cli import main

    out = io.StringIO()
    with _chdir(cwd), contextlib.redirect_stdout(out):
        code = main(args)
    return code, out.getvalue()


@contextlib.contextmanager
def _chdir(path: Path) -> Iterator[None]:
    before = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)
