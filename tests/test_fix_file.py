"""``fix_file`` and the atomic writes under it: a file is replaced whole or not at all."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from zerolint.atomic import atomic_write_bytes, atomic_write_text
from zerolint.fix import FixError, FixTarget, fix_file

VULNERABLE = """\
import torch
from deep_gemm import get_paged_mqa_logits_metadata


def schedule(seq_lens, num_sms):
    return get_paged_mqa_logits_metadata(seq_lens // 4, 64, num_sms)
"""
SINK = FixTarget(6, 11, 0)
FIXED_LINE = (
    "    return get_paged_mqa_logits_metadata(torch.clamp(seq_lens // 4, min=1), 64, num_sms)\n"
)


def write(tmp_path: Path, text: str, name: str = "builder.py") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_fix_writes_the_clamp_and_reports_a_diff(tmp_path: Path) -> None:
    path = write(tmp_path, VULNERABLE)
    result = fix_file(path, [SINK])
    assert result.changed and result.written
    assert path.read_text().splitlines(keepends=True)[5] == FIXED_LINE
    assert result.diff.splitlines() == [
        f"--- {path}",
        f"+++ {path}",
        "@@ -3,4 +3,4 @@",
        " ",
        " ",
        " def schedule(seq_lens, num_sms):",
        "-    return get_paged_mqa_logits_metadata(seq_lens // 4, 64, num_sms)",
        "+" + FIXED_LINE.rstrip("\n"),
    ]
    assert result.applied == (SINK,)


def test_diff_only_writes_nothing(tmp_path: Path) -> None:
    path = write(tmp_path, VULNERABLE)
    result = fix_file(path, [SINK], diff_only=True)
    assert result.changed and not result.written
    assert "+" + FIXED_LINE in result.diff
    assert path.read_text() == VULNERABLE


def test_a_second_fix_changes_nothing(tmp_path: Path) -> None:
    path = write(tmp_path, VULNERABLE)
    fix_file(path, [SINK])
    once = path.read_bytes()
    again = fix_file(path, [SINK])
    assert not again.changed and not again.written and again.diff == ""
    assert path.read_bytes() == once


def test_a_result_that_does_not_compile_is_not_written(tmp_path: Path) -> None:
    # LibCST parses `break` outside a loop; CPython's compiler rejects it.
    source = VULNERABLE + "break\n"
    path = write(tmp_path, source)
    with pytest.raises(FixError) as raised:
        fix_file(path, [SINK])
    assert str(raised.value).startswith(f"{path}: the fixed source does not compile")
    assert "\n" not in str(raised.value)
    assert path.read_text() == source
    assert sorted(os.listdir(tmp_path)) == ["builder.py"]


def test_a_result_the_verifier_rejects_is_not_written(tmp_path: Path) -> None:
    path = write(tmp_path, VULNERABLE)
    seen: list[str] = []

    def still_has_findings(text: str) -> bool:
        seen.append(text)
        return False

    with pytest.raises(FixError, match="still has findings"):
        fix_file(path, [SINK], verify=still_has_findings)
    assert path.read_text() == VULNERABLE
    assert seen and FIXED_LINE in seen[0]


def test_the_verifier_sees_the_text_that_is_written(tmp_path: Path) -> None:
    path = write(tmp_path, VULNERABLE)
    seen: list[str] = []
    fix_file(path, [SINK], verify=lambda text: seen.append(text) is None)
    assert seen == [path.read_text()]


def test_a_file_that_does_not_parse_is_a_one_line_error(tmp_path: Path) -> None:
    path = write(tmp_path, "def broken(:\n")
    with pytest.raises(FixError) as raised:
        fix_file(path, [SINK])
    assert str(raised.value).startswith(f"{path}: cannot parse")
    assert "\n" not in str(raised.value)


def test_mode_encoding_and_line_endings_are_kept(tmp_path: Path) -> None:
    source = "# -*- coding: latin-1 -*-\n# Längen\n" + VULNERABLE
    path = tmp_path / "builder.py"
    path.write_bytes(source.replace("\n", "\r\n").encode("latin-1"))
    path.chmod(0o751)
    fix_file(path, [FixTarget(SINK.line + 2, SINK.col, 0)])
    data = path.read_bytes()
    assert data.count(b"\r\n") == source.count("\n") and b"\n" not in data.replace(b"\r\n", b"")
    assert data.decode("latin-1").splitlines()[1] == "# Längen"
    assert FIXED_LINE.rstrip("\n").encode() in data
    assert stat.S_IMODE(path.stat().st_mode) == 0o751


def test_a_symlink_is_fixed_through(tmp_path: Path) -> None:
    real = write(tmp_path, VULNERABLE, "real.py")
    link = tmp_path / "link.py"
    link.symlink_to(real)
    fix_file(link, [SINK])
    assert link.is_symlink()
    assert FIXED_LINE in real.read_text()


def test_atomic_write_leaves_the_old_file_when_the_rename_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, "old\n", "data.txt")

    def fail(src: str, dst: str) -> None:
        raise OSError("disk gone")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk gone"):
        atomic_write_text(path, "new\n")
    assert path.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["data.txt"]


def test_atomic_write_creates_a_file_with_the_umask_mode(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        atomic_write_bytes(tmp_path / "new.bin", b"\x00\x01")
    finally:
        os.umask(old)
    assert (tmp_path / "new.bin").read_bytes() == b"\x00\x01"
    assert stat.S_IMODE((tmp_path / "new.bin").stat().st_mode) == 0o640
