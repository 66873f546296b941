"""Suppression comments that are written wrong, as Ruff reads them, run as the real
program: a noqa comment whose colon is followed by no list of codes (nothing, "ZL",
"ZL-001") suppresses nothing and gets a one-line warning naming the file and line, and
the finding is reported; ``# zerolint: ignore`` is a whole word, so a remark that starts
with "ignored" hides nothing. The noqa forms Ruff takes (a bare one, codes after the
colon with or without spaces) still suppress."""

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


@pytest.mark.parametrize("comment", ["# noqa: ZL-001", "# noqa: ZL", "# noqa:", "# NOQA :  "])
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
    "comment", ["# noqa", "# noqa: ZL001", "# noqa:ZL001", "# noqa : E501, ZL001", "# noqa F401"]
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
    "# zerolint: noqa: ZL004 because the kernel clamps\nx = 1\n",  # trailing words: invalid
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


def test_a_whole_file_noqa_with_words_after_its_codes_is_warned_of(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text(
        "# zerolint: noqa: ZL004 because the kernel clamps\n" + BUG.format(comment="")
    )
    for _ in range(2):  # cold, then from the results cache
        run = zerolint(tmp_path, "--format", "concise", "t.py")
        assert run.returncode == 1 and run.stdout.startswith("t.py:7:12: ZL001 "), run.stdout
        assert run.stderr.startswith(
            "zerolint: warning: invalid `# zerolint: noqa` directive at t.py:1: "
        ), run.stderr
