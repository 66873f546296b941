"""Suppression comments that are written wrong, as Ruff reads them, run as the real
program: a noqa comment whose colon is followed by no list of codes (nothing, "ZL",
"ZL-001"), whose code is followed by anything but a space, a comma or a ``#``
("ZL001: why"), or whose word is followed by anything but a colon or a space ("noqa;")
suppresses nothing and gets a one-line warning naming the file and line, and the finding
is reported; ``# zerolint: ignore`` is a whole word, so a remark that starts with
"ignored" hides nothing. The noqa forms Ruff takes (a bare one, codes after the colon with
or without spaces, a remark after the codes or after a bare one) still suppress. What
Ruff does with each form was seen by running it on F401 (an unused import)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from zerolint import suppression

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}

BUG = """\
import deep_gemm


def f(seq_lens, compress_ratio, num_sms):
    lens = seq_lens // compress_ratio
    return deep_gemm.get_paged_mqa_logits_metadata(lens, 64, num_sms){comment}
"""
WARNING = (
    "zerolint: warning: invalid `# noqa` directive at t.py:6: expected a comma-separated list "
    "of codes (e.g. `# noqa: ZL001, ZL004`); it suppresses nothing\n"
)


def zerolint(cwd: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zerolint", "check", "--color", "never", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        env=ENV,
    )


@pytest.mark.parametrize(
    "comment",
    [
        "# noqa: ZL-001",
        "# noqa: ZL",
        "# noqa:",
        "# NOQA :  ",
        "# noqa: ZL001: the kernel clamps",  # a colon after the code: Ruff warns
        "# noqa: ZL001;why",
        "# noqa: E501 ZL001x",
        "# noqa;ZL001",
        "# noqa: E501: why  # noqa: ZL001",  # the first decides
    ],
)
def test_a_noqa_with_no_valid_code_suppresses_nothing_and_is_warned_of(
    tmp_path: Path, comment: str
) -> None:
    (tmp_path / "t.py").write_text(BUG.format(comment="  " + comment))
    for _ in range(2):  # cold, then from the results cache: the same warning
        run = zerolint(tmp_path, "--format", "concise", "t.py")
        assert run.returncode == 1
        assert run.stdout.startswith("t.py:6:12: ZL001 "), run.stdout
        assert run.stderr == WARNING
    # Not an unused suppression (ZL920): it is no suppression at all, as in Ruff's RUF100.
    run = zerolint(tmp_path, "--no-cache", "--format", "concise", "--select", "ALL", "t.py")
    assert "ZL920" not in run.stdout and run.stderr == WARNING
    run = zerolint(tmp_path, "--format", "concise", "-q", "t.py")  # -q: findings only
    assert run.returncode == 1 and run.stderr == ""
    text = (tmp_path / "t.py").read_text()
    run = zerolint(tmp_path, "--format", "concise", "-", "--stdin-filename", "t.py", stdin=text)
    assert run.returncode == 1 and run.stderr == WARNING


def test_a_whole_file_noqa_with_no_valid_code_suppresses_nothing_and_is_warned_of(
    tmp_path: Path,
) -> None:
    (tmp_path / "t.py").write_text("# zerolint: noqa: ZL-001\n" + BUG.format(comment=""))
    run = zerolint(tmp_path, "--no-cache", "--format", "concise", "t.py")
    assert run.returncode == 1 and run.stdout.startswith("t.py:7:12: ZL001 "), run.stdout
    assert run.stderr.startswith(
        "zerolint: warning: invalid `# zerolint: noqa` directive at t.py:1: "
    ), run.stderr


@pytest.mark.parametrize(
    "comment",
    [
        "# noqa",
        "# noqa: ZL001",
        "# noqa:ZL001",
        "# noqa : E501, ZL001",
        "# noqa F401",
        "# noqa: ZL001 the kernel clamps",  # a remark after the codes, as Ruff reads it
        "# noqa: ZL001, see #12",
        "# noqa: E501 ZL001 - why",
        "# noqa because the kernel clamps",
        "# noqa: E501ZL001",  # codes run together: Ruff takes them
    ],
)
def test_the_noqa_forms_ruff_takes_still_suppress(tmp_path: Path, comment: str) -> None:
    (tmp_path / "t.py").write_text(BUG.format(comment="  " + comment))
    run = zerolint(tmp_path, "--no-cache", "t.py")
    assert (run.returncode, run.stdout, run.stderr) == (0, "All checks passed!\n", "")


def test_zerolint_ignore_is_a_whole_word(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text(BUG.format(comment="  # zerolint: ignored upstream, see #12"))
    run = zerolint(tmp_path, "--no-cache", "--format", "concise", "--select", "ALL", "t.py")
    assert run.returncode == 1
    assert run.stdout.startswith("t.py:6:12: ZL001 ") and "ZL920" not in run.stdout
    (tmp_path / "t.py").write_text(BUG.format(comment="  # zerolint: ignore"))
    assert zerolint(tmp_path, "--no-cache", "t.py").returncode == 0


@pytest.mark.parametrize(
    "comment", ["# zerolint: ignore[zl001]", "# ZEROLINT: IGNORE[zl001, ZL004]"]
)
def test_zerolint_ignore_reads_its_codes_in_any_case(tmp_path: Path, comment: str) -> None:
    """As a noqa comment's codes are: `# zerolint: ignore[zl001]` suppresses ZL001, and
    with every rule on (ZL920 among them) it is not reported as naming nothing used."""
    (tmp_path / "t.py").write_text(BUG.format(comment="  " + comment))
    run = zerolint(tmp_path, "--no-cache", "--select", "ZL001,ZL920", "t.py")
    assert (run.returncode, run.stdout, run.stderr) == (0, "All checks passed!\n", "")


def test_unused_suppressions_agree_with_what_suppresses() -> None:
    """ZL920 reports the comments that suppress (none here suppresses a finding), never an
    invalid directive or a remark; its pre-filter by bytes (the prescan's child's) passes
    every file it reports on."""
    for text, reported in (
        ("x = f(a)  # noqa: ZL-001\n", 0),
        ("x = f(a)  # noqa:\n", 0),
        ("x = f(a)  # zerolint: ignored upstream\n", 0),
        ("x = f(a)  # zerolint: ignore\n", 1),
        ("x = f(a)  # noqa: ZL001\n", 1),
    ):
        assert len(suppression.unused("p", text, ())) == reported, text
        assert len(suppression.parse(text).comments()) == reported, text
        if reported:
            assert suppression.file_may_hold_ours(text.encode()), text


INVALID_OR_NOT = [
    "x = f(a)  # noqa: E501\n",
    "x = f(a)  # noqa: E501, ZL001\n",
    "x = f(a)  # noqa: ZL-001\n",
    "x = f(a)  # NoQa :\n",
    "x = f(a)  # noqa:ZL001é\n",  # a non-ASCII letter ends no code: invalid
    "x = f(a)  # noqa: ZL001x\n",
    "x = f(a)  # noqa\n",
    "# zerolint: noqa: ZL004 because the kernel clamps\nx = 1\n",  # a remark: valid
    "# zerolint: noqa: ZL004: because\nx = 1\n",
    "# zerolint: noqa;ZL004\nx = 1\n",
    "x = f(a)  # noqa: ZL001: the kernel clamps\n",
    "x = f(a)  # noqa: ZL001;why\n",
    "x = f(a)  # noqa: E501 ZL001x\n",
    "x = f(a)  # noqa;ZL001\n",
    "x = f(a)  # noqa\u00a0: ZL-001\n",  # a non-ASCII space before the colon
    "x = f(a)  # noqa\x1f: ZL-001\n",  # a space to Python, not to an ASCII byte test
    "x = f(a)  # noqa \u00a0: ZL-001\n",  # after an ASCII space
    "x = f(a)  # noqa \x1f: ZL-001\n",
    "# zerolint: noqa: ZL004\nx = 1\n",
    "# zerolint: noqa:\nx = 1\n",
    "x = 1\n",
]


@pytest.mark.parametrize("text", INVALID_OR_NOT)
def test_the_bytes_test_passes_every_file_with_an_invalid_directive(text: str) -> None:
    """`suppression.may_hold_invalid` decides, from a file's bytes, whether the warning
    needs the file decoded: it must pass every file `parse` finds an invalid comment in."""
    if suppression.parse(text).invalid:
        assert suppression.may_hold_invalid(text.encode()), text


@pytest.mark.parametrize(
    "comment",
    [
        "# zerolint: noqa: ZL001 because the kernel clamps",  # as Ruff takes `ruff: noqa: F401 why`
        "# zerolint: noqa: E501, ZL001, see #12",
        "# zerolint: noqa because the kernel clamps",  # Ruff: every code
    ],
)
def test_a_whole_file_noqa_with_a_remark_after_it_suppresses(tmp_path: Path, comment: str) -> None:
    (tmp_path / "t.py").write_text(comment + "\n" + BUG.format(comment=""))
    for _ in range(2):  # cold, then from the results cache
        run = zerolint(tmp_path, "t.py")
        assert (run.returncode, run.stdout, run.stderr) == (0, "All checks passed!\n", "")


@pytest.mark.parametrize(
    "comment", ["# zerolint: noqa: ZL001: because the kernel clamps", "# zerolint: noqa;ZL001"]
)
def test_a_whole_file_noqa_ruff_refuses_is_warned_of(tmp_path: Path, comment: str) -> None:
    (tmp_path / "t.py").write_text(comment + "\n" + BUG.format(comment=""))
    for _ in range(2):  # cold, then from the results cache
        run = zerolint(tmp_path, "--format", "concise", "t.py")
        assert run.returncode == 1 and run.stdout.startswith("t.py:7:12: ZL001 "), run.stdout
        assert run.stderr == (
            "zerolint: warning: invalid `# zerolint: noqa` directive at t.py:1: expected a "
            "comma-separated list of codes (e.g. `# zerolint: noqa: ZL001, ZL004`); it "
            "suppresses nothing\n"
        )


# How Ruff 0.17 read each form with F401 (`import os` and the comment, `ruff check
# --select F401`): whether the finding was suppressed, and whether Ruff warned of an
# invalid directive. zerolint reads ZL001 in its place the same way, and a whole-file
# comment as Ruff reads its whole-file one (the word noqa after `ruff:`, here after
# `zerolint:`) with the same rest.
RUFF_READS = [
    ("# noqa: ZL001: reason", False, True),
    ("# noqa:ZL001:reason", False, True),
    ("# noqa : ZL001: reason", False, True),
    ("# noqa: ZL001 reason words", True, False),
    ("# noqa: ZL001, reason", True, False),
    ("# noqa: ZL001,reason", True, False),
    ("# noqa: ZL001 Reason", True, False),
    ("# noqa: ZL001 - reason", True, False),
    ("# noqa: ZL001 (reason)", True, False),
    ("# noqa: ZL001 :", True, False),
    ("# noqa: ZL001, E501, reason: more", True, False),
    ("# noqa: ZL001 # reason", True, False),
    ("# noqa: ZL001#x", True, False),
    ("# noqa: ZL001 E", True, False),
    ("# noqa: ZL001 E501 reason F841", True, False),
    ("# noqa: ZL001 reason E501x", True, False),  # reading stopped at the remark
    ("# noqa: ZL001:", False, True),
    ("# noqa: ZL001;reason", False, True),
    ("# noqa: ZL001.", False, True),
    ("# noqa: ZL001(x)", False, True),
    ("# noqa: ZL001/E501", False, True),
    ("# noqa: ZL001? why", False, True),
    ("# noqa: ZL001 E501: x", False, True),
    ("# noqa: ZL001 E501x", False, True),
    ("# noqa: ZL001 E501F", False, True),
    ("# noqa: ZL001x", False, True),
    ("# noqa: ZL001Z", False, True),
    ("# noqa: E501ZL001", True, False),
    ("# noqa: E501: x # noqa: ZL001", False, True),
    ("# noqa: ZL001 # noqa: E501: x", True, False),
    ("# noqa: reason", False, True),
    ("# noqa: - ZL001", False, True),
    ("# noqa: : ZL001", False, True),
    ("# noqa reason", True, False),
    ("# noqa - reason", True, False),
    ("# noqa# x", True, False),
    ("# noqa;ZL001", False, True),
    ("# noqa, ZL001", False, True),
    ("# noqa.", False, True),
    ("#noqaZL001", False, True),
    ("# text noqa: ZL001", False, False),
]


@pytest.mark.parametrize(("comment", "suppresses", "invalid"), RUFF_READS)
def test_noqa_comments_are_read_as_ruff_reads_them(
    comment: str, suppresses: bool, invalid: bool
) -> None:
    whole = comment.replace("noqa", "zerolint: noqa", 1)
    for text, line in ((f"x = f(a)  {comment}\n", 1), (f"{whole}\nx = 1\n", 0)):
        if line == 0 and (not comment.startswith("# noqa") or "# noqa" in comment[1:]):
            continue  # a whole-file comment starts the comment; Ruff reads a line noqa in one
        got = suppression.parse(text)
        comments = got.by_line.get(1, []) if line else got.file_level
        assert any(c.covers("ZL001") for c in comments) == suppresses, text
        assert bool(got.invalid) == invalid, text
        if invalid:
            assert suppression.may_hold_invalid(text.encode()), text
