"""Output formats as specifications: golden files, order, colour and paths.

Each case in ``tests/fixtures/formats/reports.py`` is rendered in every format and compared
with the file beside it. ``python -m devtools.update_golden formats`` rewrites the files
(the tests never do); review the diff before committing.
"""

from __future__ import annotations

import copy
import json
import os
import pty
import re
from pathlib import Path

import pytest

from tests import golden
from tests.fixtures.formats import reports
from zerolint.formats import FORMATS, display_path, reads_rules, render, use_color
from zerolint.model import Report

GOLDEN_DIR = Path(__file__).parent / "fixtures" / "formats"
EXTENSIONS = {
    "text": "txt",
    "concise": "concise",
    "json": "json",
    "sarif": "sarif",
    "github": "github",
}
ANSI = re.compile(r"\x1b\[[0-9;]*m")

# (case, variant, format, options): the golden file is CASE[.VARIANT].EXT.
GOLDEN = [
    *[(case, "", fmt, {}) for case in reports.CASES for fmt in FORMATS],
    *[("mixed", "proved", fmt, {"show_proved": True}) for fmt in FORMATS],
    *[("mixed", "statistics", fmt, {"statistics": True}) for fmt in ("text", "concise", "json")],
]


def _render(report: Report, fmt: str, **options: object) -> str:
    return render(
        report, fmt, root=reports.ROOT, rules=reports.RULES, tool_version="0.1.0", **options
    )  # type: ignore[arg-type]


def _golden_name(case: str, variant: str, fmt: str) -> str:
    return ".".join(part for part in (case, variant, EXTENSIONS[fmt]) if part)


@pytest.mark.parametrize(
    ("case", "variant", "fmt", "options"),
    GOLDEN,
    ids=[_golden_name(c, v, f) for c, v, f, _ in GOLDEN],
)
def test_output_matches_golden_file(case: str, variant: str, fmt: str, options: dict) -> None:
    output = _render(reports.CASES[case](), fmt, **options)
    golden.assert_matches(GOLDEN_DIR / _golden_name(case, variant, fmt), output)


@golden.suite("formats")
def goldens() -> list[golden.Golden]:
    return [
        golden.Golden(
            GOLDEN_DIR / _golden_name(c, v, f),
            lambda c=c, f=f, o=o: _render(reports.CASES[c](), f, **o),
        )
        for c, v, f, o in GOLDEN
    ]


def test_every_golden_file_is_checked() -> None:
    expected = {_golden_name(c, v, f) for c, v, f, _ in GOLDEN}
    present = {p.name for p in GOLDEN_DIR.iterdir() if p.suffix != ".py" and p.is_file()}
    assert present == expected


# --- Order and determinism ------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_output_does_not_depend_on_the_order_of_the_report(fmt: str) -> None:
    report = reports.mixed()
    shuffled = copy.deepcopy(report)
    shuffled.findings.reverse()
    shuffled.diagnostics.reverse()
    assert _render(report, fmt, show_proved=True) == _render(shuffled, fmt, show_proved=True)


@pytest.mark.parametrize(("case", "variant", "fmt", "options"), GOLDEN)
def test_rules_are_read_only_where_reads_rules_says(
    case: str, variant: str, fmt: str, options: dict
) -> None:
    # `check` loads the rules for the formats only where reads_rules says they are read.
    report = reports.CASES[case]()
    given = _render(report, fmt, **options)
    without = render(report, fmt, root=reports.ROOT, tool_version="0.1.0", **options)
    reads = reads_rules(fmt, options.get("statistics", False))
    assert (given != without) is reads


@pytest.mark.parametrize("fmt", FORMATS)
def test_rendering_twice_gives_the_same_bytes_and_leaves_the_report_alone(fmt: str) -> None:
    report = reports.mixed()
    before = copy.deepcopy(report)
    assert _render(report, fmt) == _render(report, fmt)
    assert report == before


def test_json_findings_are_sorted_by_path_line_col_code() -> None:
    document = json.loads(_render(reports.mixed(), "json"))
    keys = [(f["path"], f["line"], f["col"], f["code"]) for f in document["findings"]]
    assert keys == sorted(keys)
    assert len(keys) == 4


def test_json_proved_is_empty_without_show_proved_but_counted() -> None:
    document = json.loads(_render(reports.mixed(), "json"))
    assert document["proved"] == []
    assert document["summary"]["proved"] == 1


# --- Text summary line, as Ruff words it ------------------------------------------------


@pytest.mark.parametrize(
    ("report", "summary"),
    [
        (Report(files_checked=3), "All checks passed!"),
        (reports.vllm_indexer(), "Found 1 error."),
        (
            reports.mixed(),
            "Found 4 errors. 1 proved safe by the SMT judge. 2 files could not be checked.",
        ),
        (
            Report(diagnostics=reports.mixed().diagnostics),
            "No errors found. 2 files could not be checked.",
        ),
    ],
    ids=["clean", "one", "many", "only-unchecked"],
)
def test_text_ends_with_a_summary_line(report: Report, summary: str) -> None:
    assert _render(report, "text").splitlines()[-1] == summary


def test_quiet_drops_only_the_summary() -> None:
    full = _render(reports.vllm_indexer(), "text")
    quiet = _render(reports.vllm_indexer(), "text", quiet=True)
    assert full == quiet + "\nFound 1 error.\n"


@pytest.mark.parametrize("fmt", ["sarif", "github", "nope"])
def test_statistics_or_unknown_format_is_a_value_error(fmt: str) -> None:
    with pytest.raises(ValueError, match=r"statistics|unknown output format"):
        _render(reports.mixed(), fmt, statistics=True)


@pytest.mark.parametrize("case", sorted(reports.CASES))
def test_concise_is_the_text_formats_first_lines(case: str) -> None:
    """``concise`` is ``text``'s unindented lines (a finding's or a diagnostic's first
    line, the proved ones' heading) and its summary line, without the paths and verdicts;
    the files that could not be checked come before the proved findings."""
    text = _render(reports.CASES[case](), "text", show_proved=True).splitlines()
    concise = _render(reports.CASES[case](), "concise", show_proved=True).splitlines()
    assert concise[-1] == text[-1]
    headers = [line for line in text if line and not line.startswith(" ")]
    assert sorted(concise) == sorted(headers)
    for quiet in (False, True):
        lines = _render(reports.CASES[case](), "concise", quiet=quiet).splitlines()
        assert all(line in text for line in lines)


def test_check_offers_every_format_and_no_other() -> None:
    """``zerolint check --format`` lists the formats itself (they are imported only when a
    report is printed): the same ones, in the same order, as ``FORMATS``."""
    import argparse

    from zerolint.check import add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    (action,) = [a for a in parser._actions if a.dest == "format"]
    assert tuple(action.choices) == FORMATS


# --- Colour ---------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["text", "concise"])
@pytest.mark.parametrize("case", sorted(reports.CASES))
def test_colour_only_adds_escape_codes(case: str, fmt: str) -> None:
    plain = _render(reports.CASES[case](), fmt, show_proved=True)
    coloured = _render(reports.CASES[case](), fmt, show_proved=True, color=True)
    assert "\x1b" not in plain
    assert "\x1b[" in coloured
    assert ANSI.sub("", coloured) == plain


@pytest.mark.parametrize("fmt", ["json", "sarif", "github"])
def test_machine_formats_never_hold_escape_codes(fmt: str) -> None:
    assert "\x1b" not in _render(reports.vllm_indexer(), fmt, color=True)


@pytest.fixture
def terminal():
    """A real pseudo-terminal, as stdout is when a person runs zerolint."""
    leader, follower = pty.openpty()
    with open(follower, "w", closefd=True) as stream:
        yield stream
    os.close(leader)


@pytest.mark.parametrize(
    ("environ", "colour"),
    [
        ({}, True),
        ({"NO_COLOR": "1"}, False),
        ({"NO_COLOR": ""}, True),  # no-color.org: only a non-empty value counts
        ({"TERM": "dumb"}, False),
        ({"FORCE_COLOR": "1", "NO_COLOR": "1"}, True),
        ({"FORCE_COLOR": "0"}, True),
    ],
)
def test_colour_on_a_terminal(terminal, environ: dict[str, str], colour: bool) -> None:
    assert use_color(terminal, environ) is colour


@pytest.mark.parametrize(
    ("environ", "colour"),
    [({}, False), ({"FORCE_COLOR": "1"}, True), ({"FORCE_COLOR": "0"}, False)],
)
def test_colour_through_a_pipe(environ: dict[str, str], colour: bool) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    with open(write_end, "w") as pipe:
        assert use_color(pipe, environ) is colour


# --- Paths ----------------------------------------------------------------------------


def test_paths_under_the_current_directory_are_relative(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert display_path(str(tmp_path / "pkg" / "mod.py")) == "pkg/mod.py"
    assert display_path("./pkg/../pkg/mod.py") == "pkg/mod.py"


def test_paths_elsewhere_are_shown_as_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "inside").mkdir()
    monkeypatch.chdir(tmp_path / "inside")
    outside = str(tmp_path / "outside" / "mod.py")
    assert display_path(outside) == outside
    assert display_path("../outside/mod.py") == "../outside/mod.py"
    # A directory that merely starts with the same letters is not under the root.
    assert display_path(str(tmp_path / "inside-not" / "m.py")) == str(
        tmp_path / "inside-not" / "m.py"
    )


def test_paths_follow_an_explicit_root() -> None:
    assert display_path("/srv/checkout/a/b.py", "/srv/checkout") == "a/b.py"
    assert display_path("/srv/other/b.py", "/srv/checkout") == "/srv/other/b.py"
