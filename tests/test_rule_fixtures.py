"""Every rule as a specification: golden fixtures, in TorchFix style, and its examples.

Each rule ``CODE`` (shipped in ``rules/``, or a test rule in ``tests/rules/``) has a folder
``tests/fixtures/CODE/``. Each ``NAME.py`` there is a small program whose first line says
what it shows and whether it is valid or invalid; beside it:

* ``NAME.txt`` is exactly what ``python -m zerolint check --no-cache --color never NAME.py``
  prints with the folder as the working directory;
* ``NAME.proved.txt`` (optional) is the same with ``--show-proved``: the paths proved safe;
* ``NAME.diff`` (optional) is what ``--diff`` prints: the rule's fix template, rendered.

A folder's ``pyproject.toml`` (optional) configures the run; the test rules' folders load
them with ``rule-files``, as a project adds its own rules. The expected files were written
by reasoning about what each rule must report (which line, through which steps, with which
witness), not copied from the tool. A new case is two files and no test code; a new rule
is a rule file, a folder of cases, and (only for a new kind of hazard) a predicate class.

The goldens run in-process through ``zerolint.cli.main`` (the code the console script
calls) to keep the suite fast; one subprocess run over each folder checks that the real
command prints the same findings and that files checked together do not change each
other's findings.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.golden import Golden, suite
from zerolint.cli import main
from zerolint.rules import Example, Rule, load_rule_file, load_rules

FIXTURES = Path(__file__).parent / "fixtures"
TEST_RULES = sorted((Path(__file__).parent / "rules").glob("*.toml"))
RULES: list[tuple[Rule, Path | None]] = [(r, None) for r in load_rules()] + [
    (load_rule_file(p), p) for p in TEST_RULES
]
CODES = [rule.code for rule, _ in RULES]
CASES = [(code, p.stem) for code in CODES for p in sorted((FIXTURES / code).glob("*.py"))]
ARGS = ["check", "--no-cache", "--color", "never"]
HEADER = re.compile(r"^# (Valid|Invalid): \S")
# A finding of any rule (ZL9xx are files that could not be checked, not findings).
FINDING = re.compile(r"^(?P<path>[^\s:]+\.py):\d+:\d+: (?!ZL9)[A-Z]+[0-9]+ ", re.MULTILINE)


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """Run the ``zerolint`` command line in this process; (exit code, stdout)."""
    capsys.readouterr()
    code = main(args)
    return code, capsys.readouterr().out


def run_in(folder: Path, args: list[str]) -> tuple[int, str]:
    """(exit code, stdout) of ``zerolint ARGS`` run in this process from ``folder``."""
    out, here = io.StringIO(), Path.cwd()
    try:
        os.chdir(folder)
        with contextlib.redirect_stdout(out):
            code = main(args)
    finally:
        os.chdir(here)
    return code, out.getvalue()


# Each golden file and the command-line options that produce it from NAME.py.
VARIANTS = {".txt": [], ".proved.txt": ["--show-proved"], ".diff": ["--diff"]}


def golden(code: str, case: str, suffix: str = ".txt") -> Path:
    return FIXTURES / code / f"{case}{suffix}"


def produce(code: str, case: str, suffix: str = ".txt") -> tuple[int, str]:
    """Today's output for one golden file (what an updater writes, what the tests compare)."""
    return run_in(FIXTURES / code, [*ARGS, *VARIANTS[suffix], f"{case}.py"])


def golden_files() -> list[tuple[Path, Callable[[], str]]]:
    """Every golden file of every rule with what produces it: the list a golden updater
    rewrites (the tests below only compare)."""
    return [
        (golden(code, case, suffix), lambda c=code, n=case, x=suffix: produce(c, n, x)[1])
        for code, case in CASES
        for suffix in VARIANTS
        if suffix == ".txt" or golden(code, case, suffix).exists()
    ]


@suite("rules")
def goldens() -> list[Golden]:
    """The rules' golden files, for ``python -m devtools.update_golden rules``."""
    return [Golden(path, produce_text) for path, produce_text in golden_files()]


def case_id(case: tuple[str, str]) -> str:
    return "/".join(case)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_fixture_output_matches_golden(case: tuple[str, str]) -> None:
    status, out = produce(*case)
    assert out == golden(*case).read_text(encoding="utf-8")
    assert status == (1 if FINDING.search(out) else 0)


PROVED = [c for c in CASES if golden(*c, ".proved.txt").exists()]
DIFFS = [c for c in CASES if golden(*c, ".diff").exists()]


@pytest.mark.parametrize("case", PROVED, ids=case_id)
def test_fixture_proofs_match_golden(case: tuple[str, str]) -> None:
    assert produce(*case, ".proved.txt")[1] == golden(*case, ".proved.txt").read_text(
        encoding="utf-8"
    )


@pytest.mark.parametrize("case", DIFFS, ids=case_id)
def test_fixture_fix_matches_golden(case: tuple[str, str]) -> None:
    """``--diff`` renders each finding's rule's fix template (checked again before it is
    shown: the fixed source has no findings) and writes nothing."""
    before = golden(*case, ".py").read_bytes()
    assert produce(*case, ".diff")[1] == golden(*case, ".diff").read_text(encoding="utf-8")
    assert golden(*case, ".py").read_bytes() == before


def test_every_golden_file_is_listed_for_the_updater() -> None:
    listed = {path for path, _ in golden_files()}
    on_disk = {
        p for code in CODES for p in (FIXTURES / code).iterdir() if p.suffix in (".txt", ".diff")
    }
    assert listed == on_disk


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_fixture_says_whether_it_is_valid(case: tuple[str, str]) -> None:
    """The first line names the verdict, and the golden file agrees with it."""
    first = golden(*case, ".py").read_text(encoding="utf-8").splitlines()[0]
    match = HEADER.match(first)
    assert match, f"{case_id(case)}.py must start with '# Valid: ...' or '# Invalid: ...'"
    has_findings = FINDING.search(golden(*case).read_text(encoding="utf-8")) is not None
    assert has_findings == (match.group(1) == "Invalid")


@pytest.mark.parametrize("code", CODES)
def test_every_rule_has_cases_and_every_case_a_golden_file(code: str) -> None:
    folder = FIXTURES / code
    cases = sorted(p.stem for p in folder.glob("*.py"))
    assert sorted(p.stem for p in folder.glob("*.txt") if ".proved" not in p.name) == cases
    headers = {HEADER.match(golden(code, c, ".py").read_text(encoding="utf-8")) for c in cases}
    assert cases and None not in headers
    kinds = {m.group(1) for m in headers if m is not None}
    assert kinds == {"Valid", "Invalid"}, f"{code} needs valid and invalid cases"


def test_zl001_has_enough_cases() -> None:
    assert len([c for c in CASES if c[0] == "ZL001"]) >= 40


@pytest.mark.parametrize("code", CODES)
def test_whole_folder_in_one_subprocess_reports_each_file_as_alone(
    code: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real command over every fixture of a folder at once prints what each file gets
    when it is checked alone, sorted by path, and exits 1: files do not change each
    other's findings."""
    folder = FIXTURES / code
    proc = subprocess.run(
        [sys.executable, "-m", "zerolint", *ARGS, "."],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert proc.stderr == ""
    assert proc.returncode == 1
    monkeypatch.chdir(folder)
    names = [name for c, name in CASES if c == code]
    alone = "".join(finding_blocks(run_cli([*ARGS, f"{n}.py"], capsys)[1]) for n in names)
    assert finding_blocks(proc.stdout) == alone


def finding_blocks(text: str) -> str:
    """The findings of a text report (each block ends with a blank line), no summary."""
    body, _, _ = text.rpartition("\n\n")
    return body + "\n\n" if body else ""


EXAMPLES = [
    (rule.code, index, example, path)
    for rule, path in RULES
    for index, example in enumerate(rule.examples)
]


@pytest.mark.parametrize(
    ("code", "index", "example", "rule_file"), EXAMPLES, ids=[f"{e[0]}-{e[1]}" for e in EXAMPLES]
)
def test_rule_example(
    code: str,
    index: int,
    example: Example,
    rule_file: Path | None,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each ``[[examples]]`` of each rule file: valid ones pass, invalid ones are found
    (by that rule)."""
    (tmp_path / "example.py").write_text(example.code, encoding="utf-8")
    if rule_file is not None:
        (tmp_path / "pyproject.toml").write_text(
            f"[tool.zerolint]\nrule-files = [{str(rule_file)!r}]\n", encoding="utf-8"
        )
    monkeypatch.chdir(tmp_path)
    # Selected by code: an opt-in rule (`default = false`) runs only when named.
    status, out = run_cli([*ARGS, "--select", code, "example.py"], capsys)
    if example.valid:
        assert (status, FINDING.search(out)) == (0, None), out
        assert out.startswith("All checks passed!")
    else:
        assert status == 1, out
        assert re.search(rf"^example\.py:\d+:\d+: {code} ", out, re.MULTILINE), out


@pytest.mark.parametrize("code", CODES)
def test_rule_has_valid_and_invalid_examples(code: str) -> None:
    [rule] = [r for r, _ in RULES if r.code == code]
    assert {e.valid for e in rule.examples} == {True, False}
