"""What the command line says on stderr: never a terminal control from a file name, and a
.gitignore that could not be applied said once, not passed over in silence."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HAZARD = (
    "import deep_gemm\n\n\ndef f(seq_lens, r, num_sms):\n"
    "    return deep_gemm.get_paged_mqa_logits_metadata(seq_lens // r, 64, num_sms)\n"
)
ESC = "\x1b[2J"


def zerolint(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run(
        [sys.executable, "-m", "zerolint", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


def test_file_names_on_stderr_show_their_controls(tmp_path: Path) -> None:
    name = f"b{ESC}.py"
    (tmp_path / name).write_text(HAZARD)
    (tmp_path / f"d{ESC}").mkdir()
    fixed = zerolint(tmp_path, "check", "--no-cache", "--fix", name)
    assert fixed.returncode == 0, fixed.stderr
    assert "zerolint: fixed 1 error in b\u241b[2J.py" in fixed.stderr
    missing = zerolint(tmp_path, "check", "--no-cache", f"nope{ESC}.py")
    assert "path not found: nope\u241b[2J.py" in missing.stderr
    empty = zerolint(tmp_path, "check", "--no-cache", f"d{ESC}")
    assert "no Python files found under d\u241b[2J" in empty.stderr
    for run in (fixed, missing, empty):
        assert "\x1b" not in run.stderr


def test_a_gitignore_git_cannot_apply_is_said_and_nothing_is_lost(tmp_path: Path) -> None:
    """A `.git` that points nowhere (as a checkout git refuses to read, "dubious
    ownership"): git fails, so the files .gitignore names are checked, with a warning."""
    (tmp_path / ".git").write_text("gitdir: /nonexistent/zerolint-test\n")
    (tmp_path / ".gitignore").write_text("gen/\n")
    (tmp_path / "gen").mkdir()
    (tmp_path / "gen" / "gen.py").write_text(HAZARD)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text(HAZARD)
    run = zerolint(tmp_path, "check", "--no-cache", "--output-format", "concise", ".")
    assert run.returncode == 1, run.stderr
    warnings = [line for line in run.stderr.splitlines() if "cannot ask git" in line]
    assert len(warnings) == 1, run.stderr
    assert ".gitignore is not applied there" in warnings[0]
    assert "gen/gen.py" in run.stdout and "pkg/a.py" in run.stdout
