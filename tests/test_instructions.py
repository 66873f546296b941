"""devtools.instructions: the instructions of a check, of two versions, counted by callgrind."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from devtools import instructions
from tests.test_cli_check import CLEAN, unclamped

VALGRIND = """\
==4242== Callgrind, a call-graph generating cache profiler
==4243== Collected : 2000
==4242== Events    : Ir
==4242== Collected : 1000
==4242== I   refs:      1,000
"""


def test_the_counts_are_the_check_then_its_child() -> None:
    # The check starts first (the lower process id), its prescan child after it.
    assert instructions.counted(VALGRIND) == [1000, 2000]
    assert instructions.counted("==1== no count here\n") == []


def test_each_case_runs_the_check_as_its_users_do() -> None:
    def check(case: str) -> list[str]:
        return instructions.check_command(case, "pkg/a.py", ["--select", "ALL"])[3:]

    assert check("warm") == ["check", "-q", "--select", "ALL", "."]
    assert check("cold") == ["check", "-q", "--select", "ALL", "--no-cache", "."]
    assert check("hook")[-3:] == ["--force-exclude", "--touching", "pkg/a.py"]
    with pytest.raises(instructions.Failed, match="--hook-file"):
        instructions.check_command("hook", None, [])


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="needs valgrind")
def test_a_warm_and_a_hook_run_are_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "bug.py").write_text(unclamped())
    (source / "clean.py").write_text(CLEAN)
    argv = ["--source", str(source), "--case", "warm", "--case", "hook", "--hook-file", "bug.py"]
    status = instructions.main(argv)
    captured = capsys.readouterr()
    assert status == 0, captured.err
    lines = captured.out.splitlines()
    assert [line.split(":")[0].strip() for line in lines] == ["warm", "hook"]
    for line in lines:
        # Python's start alone is tens of millions of instructions.
        counts = re.findall(r"this checkout ([\d,.]+) M", line)
        assert len(counts) == 1 and float(counts[0].replace(",", "")) > 10


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="needs valgrind")
def test_a_cold_count_does_not_include_compiling_the_code(tmp_path: Path) -> None:
    """A cold run is counted after a run that wrote the bytecode of the code it imports: a
    fresh copy of zerolint (as ``--base`` checks one out) is counted as a copy that was
    run before. Counted before that run, the first count held the compiling of every
    module the check imports (about 10% of a cold check of vLLM 0.33.0)."""
    source = tmp_path / "src"
    source.mkdir()
    (source / "bug.py").write_text(unclamped())
    code = tmp_path / "code"
    root = Path(instructions.__file__).resolve().parent.parent
    shutil.copytree(
        root / "zerolint", code / "zerolint", ignore=shutil.ignore_patterns("__pycache__")
    )
    command = instructions.check_command("cold", None, [])
    first = sum(instructions.run_counted(command, source, code, "cold"))
    again = sum(instructions.run_counted(command, source, code, "cold"))
    assert abs(first - again) < 0.02 * again, (first, again)
