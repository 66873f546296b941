"""Golden files are rewritten by a command that reports what it changed, never by a test run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from devtools import update_golden
from tests import golden

ROOT = Path(__file__).resolve().parent.parent


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


def test_update_rewrites_only_what_differs_and_says_so(tmp_path: Path) -> None:
    same, stale, missing = tmp_path / "same.txt", tmp_path / "stale.txt", tmp_path / "new.txt"
    same.write_text("ok\n", encoding="utf-8")
    stale.write_text("old\n", encoding="utf-8")
    goldens = [
        golden.Golden(same, lambda: "ok\n"),
        golden.Golden(stale, lambda: "new\n"),
        golden.Golden(missing, lambda: "first\n"),
    ]

    assert update_golden.update(goldens, write=False) == goldens[1:]
    assert stale.read_text(encoding="utf-8") == "old\n" and not missing.exists()

    assert update_golden.update(goldens) == goldens[1:]
    assert [p.read_text(encoding="utf-8") for p in (same, stale, missing)] == [
        "ok\n",
        "new\n",
        "first\n",
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.txt", "same.txt", "stale.txt"]
    assert update_golden.update(goldens) == []


def test_the_command_finds_every_suite_and_the_goldens_are_current() -> None:
    listed = run("-m", "devtools.update_golden", "--list")
    assert listed.returncode == 0, listed.stderr
    names = {line.split(":")[0] for line in listed.stdout.splitlines()}
    assert {"rules", "formats", "wholeprogram", "fix"} <= names

    checked = run("-m", "devtools.update_golden", "--check", "formats", "fix")
    assert (checked.returncode, checked.stderr) == (0, ""), checked.stdout
    assert checked.stdout.startswith("all ") and "golden files match" in checked.stdout


def test_an_unknown_suite_is_a_usage_error() -> None:
    proc = run("-m", "devtools.update_golden", "--check", "no_such_suite")
    assert proc.returncode == 2
    assert "no golden suite named no_such_suite" in proc.stderr


def test_the_retired_update_variable_fails_the_test_run_loudly(tmp_path: Path) -> None:
    proc = run(
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "tests/test_golden.py::test_an_unknown_suite_is_a_usage_error",
        env={golden.RETIRED_ENV: "1"},
    )
    assert proc.returncode != 0
    assert golden.UPDATE_COMMAND in proc.stdout + proc.stderr


def test_the_command_exits_1_and_names_each_file_it_rewrote(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    path = tmp_path / "out.txt"
    path.write_text("old\n", encoding="utf-8")
    monkeypatch.setitem(golden.SUITES, "scratch", lambda: [golden.Golden(path, lambda: "new\n")])

    assert update_golden.main(["scratch"]) == 1
    out = capsys.readouterr().out
    assert f"rewritten: {path}" in out and "1 of 1 golden files changed" in out
    assert path.read_text(encoding="utf-8") == "new\n"

    assert update_golden.main(["scratch"]) == 0
    assert "all 1 golden files match (scratch)" in capsys.readouterr().out
