"""``--fix`` edits only what was analysed, only the sink, and keeps the file what it was.

Issue 18, items 1 and 6: a file saved again between the analysis and the write, a call at
the recorded place that is not the sink, and a file's owner, group, mode, hard links and
write permission. The permission cases run the real command as ``nobody`` (the suite runs
as root here), as ``tests/test_bad_input.py`` does for unreadable files.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from zerolint.cli import main
from zerolint.fix import FixTarget, apply_fixes

BUG = """\
import torch
from deep_gemm import get_paged_mqa_logits_metadata


def build(seq_lens, num_sms):
    lens = seq_lens // 4
    return get_paged_mqa_logits_metadata(lens, 64, num_sms)
"""
FIXED = BUG.replace("metadata(lens,", "metadata(torch.clamp(lens, min=1),")
# What the user saved meanwhile: another call now starts where the sink call did.
SAVED = BUG.replace(
    "    return get_paged_mqa_logits_metadata(lens, 64, num_sms)",
    "    return charge_account(amount_cents, 64, num_sms)",
)
NOBODY = 65534
ARGS = ["check", "--no-cache", "--color", "never"]


def fix(cwd: Path, *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    old = Path.cwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([*ARGS, "--fix", *args])
    finally:
        os.chdir(old)
    return code, out.getvalue(), err.getvalue()


# --- 18.1: only the text that was analysed, only the sink -------------------------------


def test_a_file_saved_between_analysis_and_write_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bug = tmp_path / "bug.py"
    bug.write_text(BUG)
    import zerolint.check

    real_lint = zerolint.check.lint
    calls = []

    def lint_then_user_saves(*args, **kwargs):
        report = real_lint(*args, **kwargs)
        if not calls:
            bug.write_text(SAVED)
        calls.append(1)
        return report

    monkeypatch.setattr(zerolint.check, "lint", lint_then_user_saves)
    code, out, _ = fix(tmp_path, "bug.py")
    assert bug.read_text() == SAVED
    assert "bug.py: ZL910 not fixed: changed since it was checked" in out
    assert code == 1


def test_a_call_that_is_not_the_sink_is_not_clamped() -> None:
    target = FixTarget(7, 11, 0, sink="get_paged_mqa_logits_metadata")
    outcome = apply_fixes(SAVED, [target])
    assert outcome.fixed == SAVED
    assert outcome.skipped == ((target, "this call is `charge_account`, not the sink"),)


@pytest.mark.parametrize(
    ("binding", "call"),
    [
        ("from deep_gemm import get_paged_mqa_logits_metadata as plan", "plan"),
        ("import deep_gemm as dg", "dg.get_paged_mqa_logits_metadata"),
        ("plan = deep_gemm.get_paged_mqa_logits_metadata", "plan"),
    ],
)
def test_a_sink_called_through_another_name_is_still_fixed(binding: str, call: str) -> None:
    source = f"import torch\nimport deep_gemm\n{binding}\n{call}(lens, 64, 132)\n"
    outcome = apply_fixes(source, [FixTarget(4, 0, 0, sink="get_paged_mqa_logits_metadata")])
    assert outcome.skipped == ()
    assert f"{call}(torch.clamp(lens, min=1), 64, 132)" in outcome.fixed


def test_the_fix_on_a_file_edited_meanwhile_is_not_written_by_the_diff_either(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bug = tmp_path / "bug.py"
    bug.write_text(BUG)
    import zerolint.check

    real_lint = zerolint.check.lint

    def lint_then_user_saves(*args, **kwargs):
        report = real_lint(*args, **kwargs)
        bug.write_text(SAVED)
        return report

    monkeypatch.setattr(zerolint.check, "lint", lint_then_user_saves)
    code, out, err = fix(tmp_path, "--diff", "bug.py")
    assert "charge_account(torch.clamp" not in out
    assert "changed since it was checked" in err
    assert code != 0


# --- 18.6: owner, group, mode, links, permission ----------------------------------------

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="changing owners needs root")


@root_only
def test_the_owner_group_and_mode_are_kept(tmp_path: Path) -> None:
    bug = tmp_path / "bug.py"
    bug.write_text(BUG)
    os.chown(bug, NOBODY, NOBODY)
    bug.chmod(0o640)
    assert fix(tmp_path, "bug.py")[0] == 0
    st = bug.stat()
    assert bug.read_text() == FIXED
    assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (NOBODY, NOBODY, 0o640)


def test_hard_links_are_kept(tmp_path: Path) -> None:
    bug = tmp_path / "bug.py"
    bug.write_text(BUG)
    other = tmp_path / "elsewhere.txt"
    os.link(bug, other)
    inode = bug.stat().st_ino
    assert fix(tmp_path, "bug.py")[0] == 0
    assert bug.read_text() == other.read_text() == FIXED
    assert bug.stat().st_ino == inode and bug.stat().st_nlink == 2


def test_a_write_in_place_that_fails_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    """A file with another hard link is written in place, not replaced. Past the size
    the process may write (``ulimit -f``, as a full disk would), the write fails: the file
    keeps every byte it had (it was cut to the first kilobyte, then written to the limit)."""
    import resource

    bug = tmp_path / "bug.py"
    bug.write_text(BUG + "".join(f"# line {i} of a longer file\n" for i in range(60)))
    os.link(bug, tmp_path / "elsewhere.txt")
    before = bug.read_bytes()
    assert len(before) > 1024

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))

    proc = subprocess.run(
        [sys.executable, "-m", "zerolint", *ARGS, "--fix", "bug.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        preexec_fn=limit,
    )
    assert proc.returncode == 1
    assert "bug.py: ZL902 cannot fix: File too large" in proc.stdout
    assert bug.read_bytes() == before
    assert fix(tmp_path, "bug.py")[0] == 0  # without the limit, it is fixed in place
    assert bug.read_text().startswith(FIXED) and bug.stat().st_nlink == 2


def test_a_read_only_file_is_not_rewritten(tmp_path: Path) -> None:
    bug = tmp_path / "bug.py"
    bug.write_text(BUG)
    bug.chmod(0o444)
    code, out, _ = fix(tmp_path, "bug.py")
    assert bug.read_text() == BUG
    assert "bug.py: ZL910 not fixed: no permission to write the file" in out
    assert code == 1


@pytest.fixture
def shared_folder() -> Iterator[Path]:
    """A folder ``nobody`` may write, outside pytest's owner-only tmp_path."""
    base = Path(tempfile.mkdtemp(prefix="zerolint-fix-perm-"))
    try:
        base.chmod(0o777)
        yield base
    finally:
        subprocess.run(["rm", "-rf", str(base)], check=False)


# A first run as root imports all that --fix needs (the interpreter may live where
# `nobody` cannot read); it fixes a throwaway copy. Then the run as `nobody`.
AS_NOBODY = f"""
import contextlib, io, os, sys
from zerolint.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    main({ARGS + ["--fix"]!r} + [sys.argv[1]])
os.setgroups([])
os.setgid({NOBODY})
os.setuid({NOBODY})
sys.exit(main({ARGS + ["--fix", "bug.py"]!r}))
"""


def as_nobody(cwd: Path) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory() as warm:
        (Path(warm) / "warm.py").write_text(BUG)
        return subprocess.run(
            [sys.executable, "-c", AS_NOBODY, warm],
            cwd=cwd,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )


@root_only
def test_a_file_the_user_may_not_write_is_not_replaced(shared_folder: Path) -> None:
    # The folder lets `nobody` rename over the file; the file itself is root's.
    bug = shared_folder / "bug.py"
    bug.write_text(BUG)
    bug.chmod(0o644)
    proc = as_nobody(shared_folder)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert bug.read_text() == BUG
    assert (bug.stat().st_uid, bug.stat().st_mode & 0o777) == (0, 0o644)
    assert "ZL910 not fixed: no permission to write the file" in proc.stdout, proc.stdout
    assert proc.returncode == 1


@root_only
def test_a_file_in_a_folder_the_user_may_not_write_is_fixed_in_place(tmp_path: Path) -> None:
    base = Path(tempfile.mkdtemp(prefix="zerolint-fix-perm-"))
    try:
        base.chmod(0o755)  # root's: no temporary file can be made beside the file
        bug = base / "bug.py"
        bug.write_text(BUG)
        os.chown(bug, NOBODY, NOBODY)
        proc = as_nobody(base)
        assert "Traceback" not in proc.stderr, proc.stderr
        assert bug.read_text() == FIXED, proc.stdout
        assert proc.returncode == 0
    finally:
        subprocess.run(["rm", "-rf", str(base)], check=False)


# --- 16.7: --fix says what it did; what it cannot fix is not promised ---------------------

UNFIXABLE = """\
def unpacked(seq_lens, num_sms):
    args = (seq_lens // 4, 64, num_sms)
    return get_paged_mqa_logits_metadata(*args)
"""
BOTH = BUG + "\n\n" + UNFIXABLE


def run(cwd: Path, *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    old = Path.cwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([*ARGS, *args])
    finally:
        os.chdir(old)
    return code, out.getvalue(), err.getvalue()


def test_fix_counts_what_it_fixed_and_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "both.py").write_text(BOTH)
    code, out, err = fix(tmp_path, "both.py")
    assert "\nFound 2 errors (1 fixed, 1 remaining). " in out, out
    assert "both.py:12:12: ZL910 not fixed: the call has no plain positional argument 0" in out
    assert err == "zerolint: fixed 1 error in both.py\n"
    assert code == 1
    (tmp_path / "all.py").write_text(BUG)
    code, out, err = fix(tmp_path, "all.py")
    assert (code, out, err) == (
        0,
        "Found 1 error (1 fixed, 0 remaining). 1 proved safe by the SMT judge.\n",
        "zerolint: fixed 1 error in all.py\n",
    )


def test_a_finding_fix_cannot_fix_is_not_marked_fixable(tmp_path: Path) -> None:
    import json

    (tmp_path / "both.py").write_text(BOTH)
    document = json.loads(run(tmp_path, "--format", "json", "both.py")[1])
    assert [(f["line"], f["fixable"]) for f in document["findings"]] == [(7, True), (12, False)]
    (tmp_path / "both.py").unlink()
    (tmp_path / "unfixable.py").write_text(BUG.split("\n\n\n")[0] + "\n\n\n" + UNFIXABLE)
    statistics = run(tmp_path, "--statistics", "unfixable.py")[1]
    assert "ZL001\t[ ] unclamped-zero-lengths-to-mqa-metadata" in statistics, statistics
    rows = json.loads(run(tmp_path, "--statistics", "--format", "json", "unfixable.py")[1])
    assert [(r["code"], r["fixable"]) for r in rows] == [("ZL001", False)]
    (tmp_path / "unfixable.py").write_text(BUG)
    assert "ZL001\t[*] " in run(tmp_path, "--statistics", "unfixable.py")[1]


def test_diff_and_fix_agree_on_the_exit_status(tmp_path: Path) -> None:
    for name, text in (("unfixable.py", BUG.split("\n\n\n")[0] + "\n\n\n" + UNFIXABLE),):
        (tmp_path / name).write_text(text)
        diff = run(tmp_path, "--diff", name)[0]
        assert diff == fix(tmp_path, name)[0] == 1


def test_fix_prints_no_python_warnings_about_the_users_code(tmp_path: Path) -> None:
    (tmp_path / "odd.py").write_text(BUG + "\n\nODD = 1 is 1\n")
    proc = subprocess.run(
        [sys.executable, "-m", "zerolint", *ARGS, "--fix", "odd.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.stderr == "zerolint: fixed 1 error in odd.py\n"
    assert proc.returncode == 0
