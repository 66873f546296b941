"""Bad input as a specification: one clear line per file, and the run goes on.

A file zerolint cannot check (a syntax error, bytes that are not UTF-8, a NUL byte, a
symlink loop, a special file, no read permission, nesting deeper than any parser should
follow) gets exactly one diagnostic line, ``path[:line:col]: ZL90x reason``, among the
findings on stdout. The other files are still checked: a good file's finding in the same
run is reported and the exit code is 1. Exit 2 only when nothing at all could be checked.
No Python traceback is printed.

Every case runs the real command in a child process, so a crash of a native parser (LibCST's
segfaults on deep nesting) fails the test instead of killing pytest.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ARGS = ["check", "--no-cache", "--color", "never"]
SINK_IMPORT = "from deep_gemm import get_paged_mqa_logits_metadata\n"
GOOD = (
    SINK_IMPORT
    + """

def build(seq_lens, num_sms):
    return get_paged_mqa_logits_metadata(seq_lens // 4, 64, num_sms)
"""
)
GOOD_FINDING = re.compile(r"^good\.py:5:12: ZL001 ", re.MULTILINE)
NOBODY = 65534


def zerolint(*args: str, cwd: Path, timeout: float = 15) -> subprocess.CompletedProcess[str]:
    """``python -m zerolint check --no-cache --color never ARGS`` in ``cwd``."""
    try:
        return subprocess.run(
            [sys.executable, "-m", "zerolint", *ARGS, *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"zerolint {' '.join(args)} did not finish in {timeout} s (in {cwd})")


def lines_about(output: str, name: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith(name)]


def assert_no_traceback(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stdout + proc.stderr
    assert "internal error" not in proc.stderr


# ------------------------------------------------------------------------ bad files


def syntax_error(folder: Path) -> str:
    (folder / "syntax_error.py").write_text(
        SINK_IMPORT
        + "\n\ndef build(seq_lens:\n    return get_paged_mqa_logits_metadata(seq_lens)\n"
    )
    return "syntax_error.py"


def undecodable(folder: Path) -> str:
    (folder / "undecodable.py").write_bytes(SINK_IMPORT.encode() + b"name = '\xff\xfe'\n")
    return "undecodable.py"


def nul_byte(folder: Path) -> str:
    (folder / "nul_byte.py").write_bytes(SINK_IMPORT.encode() + b"x = 1\x00\n")
    return "nul_byte.py"


def symlink_loop(folder: Path) -> str:
    os.symlink("loop.py", folder / "loop.py")
    return "loop.py"


def fifo(folder: Path) -> str:
    os.mkfifo(folder / "pipe.py")  # a special file: reading it would wait for a writer
    return "pipe.py"


def deep_parentheses(folder: Path) -> str:
    depth = 50_000
    (folder / "deep.py").write_text(
        SINK_IMPORT
        + "lens = "
        + "(" * depth
        + "1"
        + ")" * depth
        + "\nget_paged_mqa_logits_metadata(lens, 64, 132)\n"
    )
    return "deep.py"


# (make the file, its code, a word the reason must contain)
BAD_FILES: dict[str, tuple[Callable[[Path], str], str, str]] = {
    "syntax_error": (syntax_error, "ZL901", "syntax"),
    "undecodable": (undecodable, "ZL903", "UTF-8"),
    "nul_byte": (nul_byte, "ZL904", "NUL"),
    "symlink_loop": (symlink_loop, "ZL902", "symbolic links"),
    "fifo": (fifo, "ZL902", "regular file"),
    "deep_parentheses": (deep_parentheses, "ZL90", "nested"),
}


def assert_one_diagnostic(output: str, name: str, code: str, word: str) -> None:
    about = lines_about(output, name)
    assert len(about) == 1, output
    assert re.match(rf"^{re.escape(name)}(:\d+:\d+)?: {code}\d* \S", about[0]), about[0]
    assert word in about[0]


@pytest.mark.parametrize("case", BAD_FILES)
def test_each_bad_file_gets_one_line_and_the_run_goes_on(case: str, tmp_path: Path) -> None:
    make, code, word = BAD_FILES[case]
    (tmp_path / "good.py").write_text(GOOD)
    name = make(tmp_path)
    proc = zerolint(".", cwd=tmp_path)
    assert_no_traceback(proc)
    assert_one_diagnostic(proc.stdout, name, code, word)
    assert GOOD_FINDING.search(proc.stdout), proc.stdout
    assert proc.returncode == 1


@pytest.mark.parametrize("case", BAD_FILES)
def test_nothing_checkable_exits_2(case: str, tmp_path: Path) -> None:
    make, code, word = BAD_FILES[case]
    name = make(tmp_path)
    proc = zerolint(".", cwd=tmp_path)
    assert_no_traceback(proc)
    assert_one_diagnostic(proc.stdout, name, code, word)
    assert proc.returncode == 2, proc.stdout


@pytest.mark.parametrize("case", ["syntax_error", "nul_byte"])
def test_a_bad_file_beside_clean_ones_still_fails_the_run(case: str, tmp_path: Path) -> None:
    """As in Ruff: a file that could not be checked may hide an unclamped call."""
    make = BAD_FILES[case][0]
    (tmp_path / "clean.py").write_text("def build(seq_lens):\n    return seq_lens // 4\n")
    make(tmp_path)
    proc = zerolint(".", cwd=tmp_path)
    assert proc.stdout.endswith("\nNo errors found. 1 file could not be checked.\n")
    assert proc.returncode == 1


def test_syntax_error_names_its_line(tmp_path: Path) -> None:
    name = syntax_error(tmp_path)
    proc = zerolint(name, cwd=tmp_path)
    assert lines_about(proc.stdout, name)[0].startswith("syntax_error.py:4:")


def test_symlink_loop_named_on_the_command_line(tmp_path: Path) -> None:
    name = symlink_loop(tmp_path)
    (tmp_path / "good.py").write_text(GOOD)
    proc = zerolint(name, "good.py", cwd=tmp_path)
    assert_no_traceback(proc)
    assert_one_diagnostic(proc.stdout, name, "ZL902", "symbolic links")
    assert GOOD_FINDING.search(proc.stdout), proc.stdout
    assert proc.returncode == 1


def test_special_file_named_on_the_command_line(tmp_path: Path) -> None:
    name = fifo(tmp_path)
    proc = zerolint(name, cwd=tmp_path)
    assert_one_diagnostic(proc.stdout, name, "ZL902", "regular file")
    assert proc.returncode == 2


def test_missing_path_is_an_error_and_the_others_are_checked(tmp_path: Path) -> None:
    # As a mistyped path in Ruff: an error (exit 2), not "1 file could not be checked".
    (tmp_path / "good.py").write_text(GOOD)
    proc = zerolint("missing.py", "good.py", cwd=tmp_path)
    assert_no_traceback(proc)
    assert proc.stderr == "zerolint: error: path not found: missing.py\n"
    assert "missing.py" not in proc.stdout and "could not be checked" not in proc.stdout
    assert GOOD_FINDING.search(proc.stdout)
    assert proc.returncode == 2


def test_a_missing_path_is_never_all_checks_passed(tmp_path: Path) -> None:
    # Only a mistyped path, or one beside a clean file: the run was not clean, and the
    # summary says why rather than "All checks passed!".
    (tmp_path / "clean.py").write_text("x = 1\n")
    for named in (["missing.py"], ["missing.py", "other.py", "clean.py"]):
        proc = zerolint(*named, cwd=tmp_path)
        assert_no_traceback(proc)
        assert "All checks passed" not in proc.stdout
        missing = len(named) - ("clean.py" in named)
        noun = "path" if missing == 1 else "paths"
        assert proc.stdout.strip() == f"No errors found. {missing} {noun} not found."
        assert proc.returncode == 2


def test_an_output_file_that_cannot_be_written_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "good.py").write_text(GOOD)
    (tmp_path / "taken").write_text("a file, not a folder\n")
    proc = zerolint("--output-file", "taken/report.json", "good.py", cwd=tmp_path)
    assert_no_traceback(proc)
    assert proc.stderr == (
        "zerolint: error: taken/report.json: cannot write the report: a parent is a file\n"
    )
    assert proc.returncode == 2
    assert (tmp_path / "taken").read_text() == "a file, not a folder\n"


DEEP = 50_000
NESTINGS = {
    "parentheses": "(" * DEEP + "1" + ")" * DEEP,
    "unary_minus": "-" * DEEP + "1",
    "not": "not " * DEEP + "1",
    "attributes": "a" + ".a" * DEEP,
    "calls": "f" + "()" * DEEP,
    "subscripts": "a" + "[0]" * DEEP,
    "sums": "1" + " + 1" * DEEP,
}


def test_deep_nesting_never_crashes_the_process(tmp_path: Path) -> None:
    """Python's own parser sees each file first: none reaches LibCST's native parser, whose
    stack would overflow, and each gets one ZL90x line."""
    for name, expression in NESTINGS.items():
        (tmp_path / f"{name}.py").write_text(
            SINK_IMPORT + f"lens = {expression}\nget_paged_mqa_logits_metadata(lens, 64, 132)\n"
        )
    (tmp_path / "good.py").write_text(GOOD)
    proc = zerolint(".", cwd=tmp_path, timeout=120)
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-2000:])
    assert_no_traceback(proc)
    for name in NESTINGS:
        assert_one_diagnostic(proc.stdout, f"{name}.py", "ZL90", "")
    assert GOOD_FINDING.search(proc.stdout)


def test_deep_but_legal_nesting_is_still_analysed(tmp_path: Path) -> None:
    depth = 150  # CPython accepts up to 200 nested brackets
    (tmp_path / "legal.py").write_text(
        SINK_IMPORT
        + "\n\ndef build(seq_lens, num_sms):\n    return get_paged_mqa_logits_metadata("
        + "(" * depth
        + "seq_lens // 4"
        + ")" * depth
        + ", 64, num_sms)\n"
    )
    proc = zerolint("legal.py", cwd=tmp_path)
    assert proc.returncode == 1
    assert re.match(r"^legal\.py:5:12: ZL001 ", proc.stdout)


def test_syntax_error_in_a_file_that_never_mentions_a_sink_is_not_parsed(tmp_path: Path) -> None:
    """The documented trade-off: the pre-filter reads every file but parses only those that
    mention a sink (or a wrapper of one), which is what keeps zerolint as fast as Ruff on a
    large tree. A syntax error elsewhere is left to Python and Ruff."""
    (tmp_path / "unrelated.py").write_text("def build(:\n    pass\n")
    proc = zerolint("unrelated.py", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (0, "All checks passed!\n")


# ------------------------------------------------------------------ no read permission


@pytest.fixture
def unreadable_tree() -> Iterator[Path]:
    """``base/target`` with a good file, a chmod 000 file and a chmod 000 folder; ``base/warm``
    with a good file. Made world-readable otherwise (pytest's tmp_path is private to its
    owner, and the check may run as `nobody`)."""
    base = Path(tempfile.mkdtemp(prefix="zerolint-perm-"))
    try:
        base.chmod(0o755)
        for folder in ("warm", "target", "target/locked"):
            (base / folder).mkdir()
            (base / folder).chmod(0o755)
        (base / "warm" / "good.py").write_text(GOOD)
        (base / "target" / "good.py").write_text(GOOD)
        (base / "target" / "locked" / "inner.py").write_text(GOOD)
        secret = base / "target" / "secret.py"
        secret.write_text(SINK_IMPORT)
        for path in (base / "warm" / "good.py", base / "target" / "good.py"):
            path.chmod(0o644)
        secret.chmod(0)
        (base / "target" / "locked").chmod(0)
        yield base
    finally:
        for path in (base / "target" / "locked", base / "target" / "secret.py"):
            if path.exists():
                path.chmod(stat.S_IRWXU)
        shutil.rmtree(base)


# Root reads a chmod 000 file anyway, and CI runs as root. So as root the child drops to
# `nobody` with setgid/setuid, honestly losing the permission, but only after a first run
# has imported everything `zerolint check` needs: the interpreter may live under a folder
# that `nobody` cannot read.
DROP_AND_CHECK = f"""
import contextlib, io, os, sys
from zerolint.cli import main
if os.geteuid() == 0:
    with contextlib.redirect_stdout(io.StringIO()):
        main({ARGS + ["warm"]!r})
    os.setgroups([])
    os.setgid({NOBODY})
    os.setuid({NOBODY})
sys.exit(main({ARGS + ["target"]!r}))
"""


def python_script(
    script: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -c SCRIPT`` in ``cwd``."""
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_a_file_named_in_an_unreadable_folder(unreadable_tree: Path) -> None:
    """A file named on the command line inside a folder the user cannot list: its own
    ZL902, and the other paths still checked (it ended the run with an internal error)."""
    if os.geteuid() != 0 and os.access(unreadable_tree / "target" / "locked", os.R_OK):
        pytest.skip("this user lists chmod 000 folders without being root")
    script = DROP_AND_CHECK.replace(
        repr(ARGS + ["target"]), repr(ARGS + ["target/good.py", "target/locked/inner.py"])
    )
    proc = python_script(script, unreadable_tree)
    assert_no_traceback(proc)
    assert_one_diagnostic(proc.stdout, "target/locked/inner.py", "ZL902", "Permission denied")
    assert re.search(r"^target/good\.py:5:12: ZL001 ", proc.stdout, re.MULTILINE), proc.stdout
    assert "no Python files found" not in proc.stderr
    assert proc.returncode == 1


def test_a_name_too_long_to_look_at(tmp_path: Path) -> None:
    """A path the system refuses to look at (a name longer than the file system allows) is
    a ZL902 of its own, beside the other paths' findings: file or folder."""
    (tmp_path / "good.py").write_text(GOOD)
    long_file, long_folder = "a" * 300 + "/x.py", "b" * 300
    proc = zerolint("good.py", long_file, long_folder, cwd=tmp_path)
    assert_no_traceback(proc)
    assert GOOD_FINDING.search(proc.stdout), proc.stdout
    assert_one_diagnostic(proc.stdout, long_file, "ZL902", "File name too long")
    assert_one_diagnostic(proc.stdout, long_folder, "ZL902", "File name too long")
    assert proc.returncode == 1


@pytest.mark.parametrize("name", ["pyproject.toml", "zerolint.toml"])
def test_an_unreadable_configuration_is_an_error(name: str) -> None:
    """A configuration file the user cannot read may hold settings (an ignore, an
    exclude): a one-line error naming it, as for either name, never the parent's or the
    default settings in its place."""
    base = Path(tempfile.mkdtemp(prefix="zerolint-conf-"))
    conf = base / "target" / "sub" / name
    try:
        base.chmod(0o755)
        for folder in ("warm", "target", "target/sub"):
            (base / folder).mkdir()
            (base / folder).chmod(0o755)
        for path in (base / "warm" / "good.py", base / "target" / "sub" / "good.py"):
            path.write_text(GOOD)
            path.chmod(0o644)
        table = "[tool.zerolint]\n" if name == "pyproject.toml" else ""
        conf.write_text(table + 'ignore = ["ZL001"]\n')
        conf.chmod(0)
        if os.geteuid() != 0 and os.access(conf, os.R_OK):
            pytest.skip("this user reads chmod 000 files without being root")
        proc = python_script(DROP_AND_CHECK, base)
        assert_no_traceback(proc)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert proc.stdout == ""
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "cannot read configuration" in lines[0], proc.stderr
        assert f"sub/{name}" in lines[0] and "Permission denied" in lines[0]
    finally:
        if conf.exists():
            conf.chmod(stat.S_IRWXU)
        shutil.rmtree(base)


def test_unreadable_file_and_folder(unreadable_tree: Path) -> None:
    if os.geteuid() != 0 and os.access(unreadable_tree / "target" / "secret.py", os.R_OK):
        pytest.skip("this user reads chmod 000 files without being root")
    proc = python_script(DROP_AND_CHECK, unreadable_tree)
    assert_no_traceback(proc)
    assert_one_diagnostic(proc.stdout, "target/secret.py", "ZL902", "Permission denied")
    assert_one_diagnostic(proc.stdout, "target/locked", "ZL902", "Permission denied")
    assert re.search(r"^target/good\.py:5:12: ZL001 ", proc.stdout, re.MULTILINE), proc.stdout
    assert proc.returncode == 1


# Three cached runs as a user who loses read permission on a helper in the second (root
# drops to `nobody` in a child per run; as another user, the permission is simply taken):
# the second run's results, made without the helper, are not the set's, so the third,
# with the helper readable again and unchanged, must not be served them.
STALE_AFTER_UNREADABLE = f"""
import contextlib, io, os, sys
from pathlib import Path
import zerolint.check
from zerolint.cli import main
from zerolint.config import load_settings
with contextlib.redirect_stdout(io.StringIO()):
    main({ARGS + ["warm"]!r})
# The cache's fingerprint hashes zerolint's own files, which `nobody` may not read (a
# checkout in a private folder): worked out here, before the privileges go.
fingerprint = zerolint.check.cache_fingerprint(load_settings([Path("pkg")]))
zerolint.check.cache_fingerprint = lambda settings, package=None: fingerprint

def run(*args):
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        if os.geteuid() == 0:
            os.setgroups([])
            os.setgid({NOBODY})
            os.setuid({NOBODY})
        code = main(["check", "--color", "never", *args, "pkg"])
        sys.stdout.flush()
        os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])

print("exit", run())
with open("pkg/b.py", "a") as handle:
    handle.write("# edited\\n")
os.chmod("pkg/a.py", 0)
print("exit", run())
os.chmod("pkg/a.py", 0o644)
print("exit", run())
print("exit", run("--no-cache"))
"""


def test_a_run_that_could_not_read_a_file_stores_no_result(unreadable_tree: Path) -> None:
    if os.geteuid() != 0 and os.access(unreadable_tree / "target" / "secret.py", os.R_OK):
        pytest.skip("this user reads chmod 000 files without being root")
    base = unreadable_tree
    (base / "pkg").mkdir()
    (base / "pkg" / "__init__.py").write_text("")
    (base / "pkg" / "a.py").write_text("def ratio(lens):\n    return lens // 4\n")
    (base / "pkg" / "b.py").write_text(
        SINK_IMPORT
        + "from pkg.a import ratio\n\n\n"
        + "def build(seq_lens):\n"
        + "    return get_paged_mqa_logits_metadata(ratio(seq_lens), 64, 132)\n"
    )
    for path in (base, base / "pkg", *(base / "pkg").iterdir()):
        path.chmod(0o777 if path.is_dir() else 0o666)  # `nobody` writes the cache here
    env = {**os.environ, "XDG_CACHE_HOME": str(base / "pkg" / "home")}  # `nobody`'s key
    proc = python_script(STALE_AFTER_UNREADABLE, base, env)
    assert_no_traceback(proc)
    runs = re.split(r"^exit (\d+)\n", proc.stdout, flags=re.MULTILINE)
    first, second, third, cold = runs[0], runs[2], runs[4], runs[6]
    assert [runs[1], runs[3], runs[5], runs[7]] == ["1", "1", "1", "1"], proc.stdout
    finding = re.compile(r"^pkg/b\.py:\d+:\d+: ZL001 ", re.MULTILINE)
    assert finding.search(first) and finding.search(cold), proc.stdout
    assert "pkg/a.py: ZL902 cannot read: Permission denied" in second, proc.stdout
    assert not finding.search(second), proc.stdout  # the path through the helper is cut
    assert third == cold, proc.stdout
