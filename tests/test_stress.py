"""devtools.stress: files of another tree, each with a sink call added, checked one by one."""

from __future__ import annotations

from pathlib import Path

import pytest

from devtools import stress


def test_each_file_is_checked_with_the_sink_call_added(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The copy holds the file and the added function (a finding, exit 1); a file that
    cannot be parsed is listed with its ZL901 line, and a test folder is left out."""
    source = tmp_path / "src"
    (source / "pkg" / "tests").mkdir(parents=True)
    (source / "pkg" / "plain.py").write_text("def f(x):\n    return x + 1\n")
    (source / "pkg" / "broken.py").write_text("def f(:\n")
    (source / "pkg" / "tests" / "test_f.py").write_text("def test(): pass\n")

    status = stress.main(["--source", str(source), "--jobs", "1", "--timeout", "60"])
    out = capsys.readouterr().out

    assert status == 0, out
    assert out.splitlines()[0].startswith("2 files from ")
    assert "exit 1       pkg__plain.py" in out
    assert "out of time (60 s): 0" in out
    not_one = out.split("not exit 1: ", 1)[1].splitlines()
    assert not_one[0] == "1"
    assert not_one[1].startswith("  exit 2  pkg__broken.py: tree/pkg__broken.py:1:7: ZL901 ")
