"""devtools/mutate.py on a tiny project: what a kill table says, and what it never touches."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from devtools import mutate

ROOT = Path(__file__).resolve().parent.parent

CALC = """\
def at_least_one(n):
    return n if n >= 1 else 1


def double(n):
    return n * 2
"""
TESTS = """\
from pkg.calc import at_least_one, double


def test_zero_becomes_one():
    assert at_least_one(0) == 1


def test_double_is_positive():
    assert double(3) > 0
"""
MUTANTS = """\
[[mutant]]
id = "bound-0"
file = "pkg/calc.py"
function = "at_least_one"
original = "n >= 1"
mutated = "n >= 0"
why = "zero passes through"
tests = ["tests/test_calc.py::test_zero_becomes_one"]

[[mutant]]
id = "double-plus"
file = "pkg/calc.py"
function = "double"
original = "n * 2"
mutated = "n + 2"
why = "a weak test lets it through"
tests = ["tests/test_calc.py::test_double_is_positive"]

[[mutant]]
id = "moved"
file = "pkg/calc.py"
function = "halve"
original = "n // 2"
mutated = "n // 3"
why = "its function went to another module"
tests = ["tests/test_calc.py"]

[[mutant]]
id = "same-result"
file = "pkg/calc.py"
function = "at_least_one"
original = "else 1"
mutated = "else max(n, 1)"
why = "below 1 the answer is 1 either way"
tests = ["tests/test_calc.py"]
equivalent = "for n < 1, max(n, 1) is 1"
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "calc.py").write_text(CALC)
    (tmp_path / "pkg" / "other.py").write_text("def halve(n):\n    return n // 2\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_calc.py").write_text(TESTS)
    (tmp_path / "mutants.toml").write_text(MUTANTS)
    return tmp_path


def run(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "devtools.mutate", "--root", str(project)]
        + ["--mutants", str(project / "mutants.toml"), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def rows(out: str) -> dict[str, str]:
    table = out.split("\n\n")[1]
    return {line.split()[0]: line.split()[1] for line in table.splitlines()[1:]}


def test_the_kill_table_and_its_exit_code(project: Path) -> None:
    proc = run(project, "--jobs", "2")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert rows(proc.stdout) == {
        "bound-0": "killed",
        "double-plus": "SURVIVED",
        "moved": "STALE",
        "same-result": "equivalent",
    }
    assert "tests/test_calc.py::test_zero_becomes_one" in proc.stdout  # the killing test
    assert "not killed: double-plus, moved" in proc.stdout
    assert (project / "pkg" / "calc.py").read_text() == CALC  # mutated in a copy only


def test_only_the_chosen_ids_run_and_killed_ones_pass(project: Path) -> None:
    proc = run(project, "bound-*", "same-result")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert rows(proc.stdout) == {"bound-0": "killed", "same-result": "equivalent"}
    assert "baseline:" in proc.stdout


def test_a_stale_mutant_says_where_its_function_went(project: Path) -> None:
    proc = run(project, "--targets")
    assert proc.returncode == 1
    assert "STALE moved: no function halve in pkg/calc.py" in proc.stdout
    assert "def halve is in pkg/other.py" in proc.stdout
    assert "the text is in pkg/other.py:halve" in proc.stdout
    assert "3 of 4 mutants apply" in proc.stdout


def test_a_snippet_that_occurs_twice_is_stale(project: Path) -> None:
    (project / "pkg" / "calc.py").write_text(CALC.replace("n * 2", "n * 2 if n * 2 else 0"))
    proc = run(project, "--targets", "double-plus")
    assert proc.returncode == 1
    assert "the original text occurs 2 times in double" in proc.stdout


def test_a_test_that_fails_unmutated_stops_the_run(project: Path) -> None:
    (project / "tests" / "test_calc.py").write_text(TESTS.replace("== 1", "== 2"))
    proc = run(project, "bound-0")
    assert proc.returncode == 1
    assert "the tests fail without any mutant" in proc.stderr


def test_a_malformed_set_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('[[mutant]]\nid = "x"\nfile = "a.py"\n')
    with pytest.raises(mutate.MutantsError, match="missing"):
        mutate.load(path)


def test_the_repository_set_is_well_formed_and_large_enough() -> None:
    mutants = mutate.load(mutate.MUTANTS)
    assert len(mutants) >= 41
    for m in mutants:
        assert m.why and m.tests, m.id
        assert all(t.startswith("tests/") for t in m.tests), m.id
