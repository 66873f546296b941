"""The default pre-commit hook (``check --touching FILES``) in a real git repository, run as
the real program: what cut a path short (a module the analysis tried to parse and could
not, a limit reached at a sink call) may hide a finding whose path runs through a
committed file, so it fails the commit as the whole check does, rather than "All checks
passed!". A file that cannot be read and that no path needed stays out of the hook's
report, as before."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}

CALLER = """\
import deep_gemm
from pkg.helper import shrink


def f(seq_lens, r, num_sms):
    lens = shrink(seq_lens, r)
    return deep_gemm.get_paged_mqa_logits_metadata(lens, 64, num_sms)
"""
HELPER = "def shrink(x, r):\n    return x // r\n"


def zerolint(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zerolint", "check", "--color", "never", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env=ENV,
    )


def hook(repo: Path, *touched: str) -> subprocess.CompletedProcess[str]:
    """What pre-commit runs for a commit of ``touched`` (.pre-commit-hooks.yaml)."""
    return zerolint(repo, "--force-exclude", "--touching", *touched)


def project(tmp_path: Path, helper: bytes, main: str = CALLER) -> Path:
    """A git repository whose pkg/main.py calls the kernel with lengths that pkg/helper.py
    divides, and an unrelated pkg/other.py; every file staged."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "helper.py").write_bytes(helper)
    (tmp_path / "pkg" / "main.py").write_text(main)
    (tmp_path / "pkg" / "other.py").write_text("VALUE = 1\n")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "add", "-A"], cwd=tmp_path, check=True)
    return tmp_path


def test_a_helper_with_a_syntax_error_on_the_path_fails_the_commit_of_the_caller(
    tmp_path: Path,
) -> None:
    repo = project(tmp_path, (HELPER + "def later(:\n    return 1\n").encode())
    whole = zerolint(repo, "--format", "concise")
    assert whole.returncode == 1
    assert whole.stdout.startswith("pkg/helper.py:3:11: ZL901 syntax error")
    for _ in range(2):  # cold, then from the results cache
        run = hook(repo, "pkg/main.py")
        assert run.returncode == 1, run.stdout + run.stderr
        assert run.stdout.startswith("pkg/helper.py:3:11: ZL901 syntax error"), run.stdout
        assert "All checks passed!" not in run.stdout


def test_an_undecodable_helper_on_the_path_fails_the_commit_and_one_on_no_path_does_not(
    tmp_path: Path,
) -> None:
    repo = project(tmp_path, HELPER.encode() + b"# caf\xe9\n")
    (repo / "pkg" / "notes.py").write_bytes(b"TEXT = 'caf\xe9'\n")  # no path leads here
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    for _ in range(2):  # cold, then from the results cache
        run = hook(repo, "pkg/main.py")
        assert run.returncode == 1, run.stdout + run.stderr
        assert "pkg/helper.py: ZL903 not valid UTF-8" in run.stdout
        assert "pkg/notes.py" not in run.stdout
    clean = HELPER.encode()
    (repo / "pkg" / "helper.py").write_bytes(clean)
    (repo / "pkg" / "main.py").write_text(CALLER.replace("shrink(seq_lens, r)", "seq_lens"))
    run = hook(repo, "pkg/main.py")  # the unreadable file no path needs: not the commit's
    assert (run.returncode, run.stdout) == (0, "All checks passed!\n"), run.stdout


def test_a_limit_reached_at_a_call_whose_path_crosses_the_commit_fails_it(tmp_path: Path) -> None:
    """The division is 12 nested calls deep in the committed helper: the sink call in the
    unchanged caller gets ZL930, which the hook used to drop as being about another file."""
    chain = "def h0(x, r):\n    return x // r\n" + "".join(
        f"def h{i}(x, r):\n    return h{i - 1}(x, r)\n" for i in range(1, 12)
    )
    repo = project(tmp_path, chain.encode(), CALLER.replace("shrink", "h11"))
    for _ in range(2):  # cold, then from the results cache
        run = hook(repo, "pkg/helper.py")
        assert run.returncode == 1, run.stdout + run.stderr
        assert run.stdout.startswith("pkg/main.py:7:12: ZL930 paths into"), run.stdout


def test_a_file_named_through_a_link_touches_the_paths_through_its_target(tmp_path: Path) -> None:
    """``--touching lnk/helper.py``, with ``lnk`` a link to ``pkg``, and ``alias.py``, a
    link to the helper, name the file the walk reaches as ``pkg/helper.py``: the finding
    whose path runs through it is kept, as when the helper is named by its own path."""
    repo = project(tmp_path, HELPER.encode())
    (repo / "lnk").symlink_to("pkg", target_is_directory=True)
    (repo / "alias.py").symlink_to(Path("pkg") / "helper.py")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    direct = hook(repo, "pkg/helper.py")
    assert direct.returncode == 1, direct.stdout + direct.stderr
    for named in ("lnk/helper.py", "alias.py"):
        run = hook(repo, named)
        assert (run.returncode, run.stdout) == (1, direct.stdout), named
    untouched = hook(repo, "pkg/other.py")
    assert (untouched.returncode, untouched.stdout) == (0, "All checks passed!\n")


def test_a_file_the_walk_reaches_through_a_link_is_touched_by_its_own_name(
    tmp_path: Path,
) -> None:
    """Outside git, the walk follows ``pkg``, a link to a folder elsewhere, and names the
    helper ``pkg/helper.py``: naming it so keeps the finding whose path runs through it."""
    (tmp_path / "real").mkdir()
    real = project(tmp_path / "real", HELPER.encode()) / "pkg"
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "pkg").symlink_to(real, target_is_directory=True)
    run = hook(tmp_path / "proj", "pkg/helper.py")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "pkg/main.py:7:12: ZL001" in run.stdout, run.stdout
