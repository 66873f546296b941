"""Rule ZL001 as a specification: golden fixtures, in TorchFix style, and the rule's examples.

Each ``tests/fixtures/zl001/NAME.py`` is a small program whose first line says what it shows
and whether it is valid or invalid; ``NAME.txt`` beside it is exactly what

    python -m zerolint check --no-cache --color never NAME.py

prints with the fixtures folder as the working directory. The expected files were written
by reasoning about what the rule must report (which line, through which steps, with which
witness), not copied from the tool. A new case is two files and no test code.
``python -m devtools.update_golden zl001`` rewrites the expected files from the tool's
output (the tests never do): review every changed line before keeping it.

The goldens run in-process through ``zerolint.cli.main`` (the code the console script
calls) to keep the suite fast; one subprocess run over the whole folder checks that the
real command prints the same findings and that files checked together do not change each
other's findings.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests import golden
from zerolint.cli import main
from zerolint.rules import Example, load_rules

FIXTURES = Path(__file__).parent / "fixtures" / "zl001"
CASES = sorted(p.stem for p in FIXTURES.glob("*.py"))
ARGS = ["check", "--no-cache", "--color", "never"]
HEADER = re.compile(r"^# (Valid|Invalid): \S")
FINDING = re.compile(r"^(?P<path>[^\s:]+\.py):\d+:\d+: ZL001 ", re.MULTILINE)


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """Run the ``zerolint`` command line in this process; (exit code, stdout)."""
    capsys.readouterr()
    code = main(args)
    return code, capsys.readouterr().out


def expected(case: str) -> str:
    return (FIXTURES / f"{case}.txt").read_text(encoding="utf-8")


def output(case: str) -> tuple[int, str]:
    """(exit code, stdout) of checking one fixture from the fixtures folder."""
    return golden.run_cli([*ARGS, f"{case}.py"], cwd=FIXTURES)


@golden.suite("zl001")
def goldens() -> list[golden.Golden]:
    return [golden.Golden(FIXTURES / f"{c}.txt", lambda c=c: output(c)[1]) for c in CASES]


@pytest.mark.parametrize("case", CASES)
def test_fixture_output_matches_golden(case: str) -> None:
    code, out = output(case)
    golden.assert_matches(FIXTURES / f"{case}.txt", out)
    assert code == (1 if FINDING.search(out) else 0)


@pytest.mark.parametrize("case", CASES)
def test_fixture_says_whether_it_is_valid(case: str) -> None:
    """The first line names the verdict, and the golden file agrees with it."""
    first = (FIXTURES / f"{case}.py").read_text(encoding="utf-8").splitlines()[0]
    match = HEADER.match(first)
    assert match, f"{case}.py must start with '# Valid: ...' or '# Invalid: ...'"
    has_findings = FINDING.search(expected(case)) is not None
    assert has_findings == (match.group(1) == "Invalid")


def test_every_fixture_has_a_golden_file_and_there_are_enough() -> None:
    goldens = sorted(p.stem for p in FIXTURES.glob("*.txt"))
    assert goldens == CASES
    assert len(CASES) >= 40


def test_whole_folder_in_one_subprocess_reports_each_file_as_alone(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real command over every fixture at once prints what each file gets when it is
    checked alone, sorted by path, and exits 1: files do not change each other's findings."""
    proc = subprocess.run(
        [sys.executable, "-m", "zerolint", *ARGS, "."],
        cwd=FIXTURES,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert proc.stderr == ""
    assert proc.returncode == 1
    monkeypatch.chdir(FIXTURES)
    alone = "".join(finding_blocks(run_cli([*ARGS, f"{case}.py"], capsys)[1]) for case in CASES)
    assert finding_blocks(proc.stdout) == alone


def finding_blocks(text: str) -> str:
    """The findings of a text report (each block ends with a blank line), no summary."""
    body, _, _ = text.rpartition("\n\n")
    return body + "\n\n" if body else ""


EXAMPLES = [example for rule in load_rules() if rule.code == "ZL001" for example in rule.examples]


@pytest.mark.parametrize("index", range(len(EXAMPLES)))
def test_rule_example(
    index: int, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each ``[[examples]]`` of rules/ZL001.toml: valid ones pass, invalid ones are found."""
    example: Example = EXAMPLES[index]
    (tmp_path / "example.py").write_text(example.code, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code, out = run_cli([*ARGS, "example.py"], capsys)
    if example.valid:
        assert (code, FINDING.search(out)) == (0, None), out
        assert out.startswith("All checks passed!")
    else:
        assert code == 1, out
        assert FINDING.search(out), out


def test_rule_has_valid_and_invalid_examples() -> None:
    assert {e.valid for e in EXAMPLES} == {True, False}
