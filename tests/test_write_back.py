"""``python -m devtools.write_back`` finds the files LibCST does not write back, and says
whether ``fix.writes_back`` (the text check behind ``[*]``) sees each."""

from __future__ import annotations

from pathlib import Path

import pytest

from devtools.write_back import main

CLEAN = "import torch\n\n\ndef f(x):\n    return torch.clamp(x, min=1)\n"


def test_each_file_libcst_changes_is_listed_and_seen(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "clean.py").write_text(CLEAN)
    (tmp_path / "feed.py").write_text("x = 1\n\x0cdef f():\n    pass\n")
    (tmp_path / "colon.py").write_text("try:\n    pass\nexcept (A, B) :\n    pass\n")
    assert main([str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert sorted(out[:-1]) == [f"{tmp_path / 'colon.py'}: seen", f"{tmp_path / 'feed.py'}: seen"]
    assert (
        out[-1] == "3 files parsed, 2 not written back, 0 of them missed (0 LibCST does not parse)"
    )


def test_a_cause_the_text_check_does_not_know_is_missed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import devtools.write_back as tool

    (tmp_path / "feed.py").write_text("x = 1\n\x0cdef f():\n    pass\n")
    monkeypatch.setattr(tool, "writes_back", lambda source: True)  # a check that knows none
    assert main([str(tmp_path)]) == 1
    assert capsys.readouterr().out.splitlines()[0] == f"{tmp_path / 'feed.py'}: missed"
