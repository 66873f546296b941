"""The command line where a review found it wrong: a file name that is not UTF-8,
``--stdin-filename`` without ``-``, a file named to ``--touching`` that is missing or that a
walk skips, paths after an option, a report written to a FIFO or ``/dev/stdout``,
``--statistics`` in a format that has none, and ``--ignore ZL903`` on stdin. Each runs the
real program."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BUG = """\
from deep_gemm import get_paged_mqa_logits_metadata


def build(seq_lens, num_sms):
    return get_paged_mqa_logits_metadata(seq_lens // 4, 64, num_sms)
"""
# A terminal whose encoding refuses what it cannot encode (not this machine's default).
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONIOENCODING": "utf-8:strict"}


def zerolint(cwd: Path, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "zerolint", "check", "--color", "never", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        check=False,
        env=ENV,
    )


def test_a_file_name_that_is_not_utf8_is_checked_and_shown_as_its_bytes(tmp_path: Path) -> None:
    name = b"b\xe9.py"
    (tmp_path / os.fsdecode(name)).write_text(BUG)
    (tmp_path / os.fsdecode(b"n\xe9.py")).write_text("x = 1\n")
    for args in ([], [], ["--no-cache"], ["--format", "concise"]):  # cold, then warm
        run = zerolint(tmp_path, *args, ".")
        assert run.returncode == 1, run.stderr
        assert name + b":5:12: ZL001 " in run.stdout
    run = zerolint(tmp_path, "--format", "json", ".")
    assert [f["path"] for f in json.loads(run.stdout)["findings"]] == [os.fsdecode(name)]
    run = zerolint(tmp_path, "--format", "sarif", ".")
    sarif = json.loads(run.stdout)
    (result,) = sarif["runs"][0]["results"]
    uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "b%E9.py"
    run = zerolint(tmp_path, "--format", "concise", "-o", "report.txt", ".")
    assert run.returncode == 1, run.stderr
    assert (tmp_path / "report.txt").read_bytes().startswith(name + b":5:12: ZL001 ")


def test_stdin_filename_alone_reads_stdin(tmp_path: Path) -> None:
    (tmp_path / "k.py").write_text("x = 1\n")  # what is on disk is not what is checked
    run = zerolint(tmp_path, "--no-cache", "--stdin-filename", "k.py", stdin=BUG.encode())
    assert b"k.py:5:12: ZL001 " in run.stdout
    assert run.returncode == 1
    run = zerolint(tmp_path, "--stdin-filename", "k.py", "k.py", stdin=BUG.encode())
    assert run.stdout == b""
    assert run.stderr == (
        b"zerolint: error: --stdin-filename names the text read from stdin: give - or no path\n"
    )
    assert run.returncode == 2


def test_a_missing_file_named_to_touching_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "k.py").write_text(BUG)
    run = zerolint(tmp_path, "--touching", "typo.py")
    assert b"zerolint: error: path not found: typo.py" in run.stderr
    assert b"All checks passed!" not in run.stdout
    assert run.returncode == 2


def test_touching_checks_the_files_named_that_a_walk_would_skip(tmp_path: Path) -> None:
    """pre-commit passes a script without a suffix (by its shebang) and a tracked file in
    build/: the default hook (--touching) must check them, as naming them alone does."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "serve").write_text("#!/usr/bin/env python3\n" + BUG)
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "gen.py").write_text(BUG)
    (tmp_path / "k.py").write_text("x = 1\n")
    for name, line in (("bin/serve", 6), ("build/gen.py", 5)):
        for _ in range(2):  # cold, then warm
            run = zerolint(tmp_path, "--force-exclude", "--touching", name, "k.py")
            assert run.stdout.startswith(f"{name}:{line}:12: ZL001 ".encode()), run.stderr
            assert b"Found 1 error." in run.stdout and run.returncode == 1


def git(repo: Path, *args: str) -> None:
    identity = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t.invalid"}
    identity |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t.invalid"}
    done = subprocess.run(
        ["git", "-c", "commit.gpgsign=false", *args],
        cwd=repo,
        capture_output=True,
        check=False,
        env={**os.environ, **identity},
    )
    assert done.returncode == 0, done.stderr


def test_touching_leaves_out_what_git_does_not_track(tmp_path: Path) -> None:
    """The default hook checks the project as the commit holds it: an untracked scratch
    file that divides lengths through a staged helper does not block the commit, and the
    same file staged does. Outside the hook's mode the scratch file is checked, as any."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "ratios.py").write_text("def quarter(lens):\n    return lens // 4\n")
    (tmp_path / "pkg" / "scratch.py").write_text(
        "from deep_gemm import get_paged_mqa_logits_metadata\n\n"
        "from pkg.ratios import quarter\n\n\n"
        "def probe(seq_lens, num_sms):\n"
        "    return get_paged_mqa_logits_metadata(quarter(seq_lens), 64, num_sms)\n"
    )
    (tmp_path / "scratch").mkdir()  # a whole folder git does not track
    (tmp_path / "scratch" / "bug.py").write_text(BUG)
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "pkg/__init__.py", "pkg/ratios.py")
    scratch = b"pkg/scratch.py:7:12: ZL001 "
    everything = zerolint(tmp_path, ".")
    assert scratch in everything.stdout and b"scratch/bug.py:5:12: ZL001 " in everything.stdout
    for _ in range(2):  # cold, then warm
        hook = zerolint(tmp_path, "--force-exclude", "--touching", "pkg/ratios.py")
        assert (hook.returncode, hook.stdout) == (0, b"All checks passed!\n"), hook.stdout
    git(tmp_path, "add", "pkg/scratch.py")
    hook = zerolint(tmp_path, "--force-exclude", "--touching", "pkg/ratios.py")
    assert hook.returncode == 1 and hook.stdout.startswith(scratch), hook.stdout
    # A file named is checked even when git does not track it.
    named = zerolint(tmp_path, "--force-exclude", "--touching", "scratch/bug.py")
    assert named.returncode == 1 and named.stdout.startswith(b"scratch/bug.py:5:12: ZL001 ")


@pytest.mark.parametrize(
    ("name", "data", "found"),
    [
        # Old Mac line ends: a comment on the first line did hide the whole file from the
        # search for files that name a kernel.
        ("cr.py", b"# serving\r" + BUG.encode().replace(b"\n", b"\r"), [b"cr.py:6:12: ZL001 "]),
        # A lone \r above the call: a noqa comment on the call's line did not count.
        (
            "stray.py",
            b"# one\r" + BUG.encode().replace(b"64, num_sms)", b"64, num_sms)  # noqa: ZL001"),
            [],
        ),
        # A whole-file comment in a file with old Mac line ends, first or after a line.
        ("whole.py", b"# zerolint: noqa\r" + BUG.encode().replace(b"\n", b"\r"), []),
        ("later.py", b"# one\r# zerolint: noqa\r" + BUG.encode().replace(b"\n", b"\r"), []),
    ],
)
def test_a_lone_carriage_return_ends_a_line_as_python_reads_it(
    tmp_path: Path, name: str, data: bytes, found: list[bytes]
) -> None:
    (tmp_path / name).write_bytes(data)
    run = zerolint(tmp_path, "--no-cache", "--select", "ALL", "--format", "concise", ".")
    headers = [line for line in run.stdout.splitlines() if b": ZL" in line]
    assert [line.split(b"`")[0].replace(b"[*] ", b"") for line in headers] == found, run.stdout
    assert run.returncode == int(bool(found)), run.stderr


def test_a_path_not_found_is_in_the_json_and_sarif_reports(tmp_path: Path) -> None:
    (tmp_path / "k.py").write_text(BUG)
    run = zerolint(tmp_path, "--format", "json", "k.py", "typo.py")
    assert run.returncode == 2
    assert json.loads(run.stdout)["summary"]["paths_not_found"] == ["typo.py"]
    run = zerolint(tmp_path, "--format", "sarif", "k.py", "typo.py")
    assert run.returncode == 2
    (invocation,) = json.loads(run.stdout)["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is False  # as the exit status says
    (note,) = invocation["toolExecutionNotifications"]
    assert (note["descriptor"]["id"], note["message"]["text"]) == ("ZL902", "path not found")
    assert note["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "typo.py"


def test_paths_may_follow_an_option(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(BUG)
    (tmp_path / "b.py").write_text(BUG)
    run = zerolint(tmp_path, "--no-cache", "a.py", "--select", "ZL001", "b.py")
    assert run.stdout.startswith(b"a.py:5:12: ZL001 ") and b"\nb.py:5:12: ZL001 " in run.stdout
    assert run.returncode == 1
    run = zerolint(tmp_path, "a.py", "--bogus", "b.py")  # an unknown option is still refused
    assert b"unrecognized arguments: --bogus b.py" in run.stderr
    assert run.returncode == 2


def test_a_report_to_a_fifo_or_dev_stdout_is_written_into_it(tmp_path: Path) -> None:
    (tmp_path / "k.py").write_text(BUG)
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    read: list[bytes] = []
    reader = threading.Thread(target=lambda: read.append(fifo.read_bytes()), daemon=True)
    reader.start()
    run = zerolint(tmp_path, "--no-cache", "-o", "out.fifo", "k.py")
    reader.join(timeout=60)
    if reader.is_alive():  # nothing was written into the FIFO: let the reader go
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    assert run.returncode == 1, run.stderr
    assert read and read[0].startswith(b"k.py:5:12: ZL001 ")
    assert fifo.is_fifo()  # not replaced by a regular file
    run = zerolint(tmp_path, "--no-cache", "-o", "/dev/stdout", "k.py")
    assert run.stdout.startswith(b"k.py:5:12: ZL001 "), run.stderr
    assert run.returncode == 1


def test_statistics_in_a_format_without_them_is_refused_before_the_check(tmp_path: Path) -> None:
    (tmp_path / "k.py").write_text(BUG)
    run = zerolint(tmp_path, "--statistics", "--format", "sarif", "k.py")
    assert run.stderr == b"zerolint: error: --statistics prints as text, concise, json, not sarif\n"
    assert run.returncode == 2


def test_zl903_on_stdin_can_be_ignored(tmp_path: Path) -> None:
    run = zerolint(tmp_path, "-", stdin=b'x = "\xff"\n')
    assert b"ZL903" in run.stdout and run.returncode == 2
    run = zerolint(tmp_path, "--ignore", "ZL903", "-", stdin=b'x = "\xff"\n')
    assert b"ZL903" not in run.stdout


def test_a_report_to_dev_stdout_appends_to_the_file_the_shell_opened(tmp_path: Path) -> None:
    """``zerolint check -o /dev/stdout >> log``: the log keeps what it held."""
    (tmp_path / "k.py").write_text(BUG)
    log = tmp_path / "log.txt"
    log.write_bytes(b"previous line\n")
    with open(log, "ab") as out:
        run = subprocess.run(
            [sys.executable, "-m", "zerolint", "check", "--no-cache", "-o", "/dev/stdout", "k.py"],
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.PIPE,
            check=False,
            env=ENV,
        )
    assert run.returncode == 1, run.stderr
    assert log.read_bytes().startswith(b"previous line\nk.py:5:12: ZL001 ")


def test_a_report_on_an_ascii_terminal_is_shown_with_escapes(tmp_path: Path) -> None:
    (tmp_path / "k.py").write_text(BUG.replace("seq_lens", "longueur_séquences"))
    run = subprocess.run(
        [sys.executable, "-m", "zerolint", "check", "--no-cache", "--color", "never", "k.py"],
        cwd=tmp_path,
        capture_output=True,
        check=False,
        env={**ENV, "PYTHONIOENCODING": "ascii:strict"},
    )
    assert run.returncode == 1, run.stderr
    assert b"longueur_s\\xe9quences // 4" in run.stdout


def test_a_project_module_named_like_a_library_is_not_imported(tmp_path: Path) -> None:
    """`python -m zerolint` puts the current folder first on sys.path: a project's own
    `z3.py` or `libcst.py` was imported in place of the library (an internal error)."""
    for library in ("z3", "libcst"):
        (tmp_path / f"{library}.py").write_text("raise ImportError('the project s own')\n")
    (tmp_path / "bug.py").write_text(BUG)
    run = zerolint(tmp_path, "--no-cache", "bug.py")
    assert run.returncode == 1, run.stderr
    assert run.stdout.startswith(b"bug.py:5:12: ZL001 "), run.stdout
    assert b"internal error" not in run.stderr


def test_a_file_named_like_an_option_is_checked_as_pre_commit_passes_it(tmp_path: Path) -> None:
    """pre-commit appends a staged ``-q.py`` to the hook's arguments as it is: a name that
    exists and is none of check's options is a path, after the hook's own options or
    among the other files. An option stays an option, a missing name is refused."""
    (tmp_path / "-q.py").write_text(BUG)
    (tmp_path / "--fix").mkdir()  # a folder named like an option: still the option
    (tmp_path / "--fix" / "x.py").write_text(BUG)
    (tmp_path / "ok.py").write_text("x = 1\n")
    for args in (
        ["--force-exclude", "--touching", "--select", "ZL001", "-q.py", "ok.py"],
        ["--force-exclude", "ok.py", "-q.py"],
        ["-q", "--no-cache", "-q.py"],
    ):
        run = zerolint(tmp_path, *args)
        assert run.returncode == 1, run.stderr
        assert run.stdout.startswith(b"-q.py:5:12: ZL001 "), run.stdout
        assert b"x.py" not in run.stdout and run.stderr == b""
    run = zerolint(tmp_path, "--fix", "ok.py")  # the option: the folder is not checked
    assert (run.returncode, run.stdout) == (0, b"All checks passed!\n"), run.stdout
    run = zerolint(tmp_path, "-o", "-q.py", "ok.py")  # a value, refused: ok.py is not written
    assert run.returncode == 2 and b"-o/--output-file: expected one argument" in run.stderr
    assert (tmp_path / "ok.py").read_text() == "x = 1\n"
    run = zerolint(tmp_path, "-missing.py")
    assert run.returncode == 2
    assert b"unrecognized arguments: -missing.py" in run.stderr
