"""``devtools.needed_summaries`` (docs/speed.md): how much of a check's interpretation the
findings need, on a tree small enough to count by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from devtools.needed_summaries import main

MODULE = """\
from deep_gemm import get_paged_mqa_logits_metadata


def plan(seq_lens):
    return get_paged_mqa_logits_metadata(halve(seq_lens), 64, 132)


def halve(x):
    return x // 2


def unrelated(x):
    return x + 1
"""


def test_it_counts_what_the_findings_need(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "a.py").write_text(MODULE)
    monkeypatch.chdir(tmp_path)  # it works from the tree's folder; restored after
    assert main([str(tmp_path / "pkg")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith(": 2 files checked, findings: 1")
    # The module's own code and its three functions; the sink call is in `plan`, whose
    # making used `halve`'s summary: `unrelated` is the work a finding does not need.
    assert lines[1].startswith("functions interpreted: 4, ")
    assert lines[2] == "summaries a finding can start from: 1"
    assert lines[3].startswith("they and what their making used: 2, ")


def test_the_check_it_times_is_the_only_one_patched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It times a check by patching the analyzer's methods: they are the originals again
    afterwards (patched for good, every later check in the process kept what it made)."""
    from zerolint import engine
    from zerolint.dataflow import analyzer

    before = (analyzer.Analyzer._interpret, engine.Engine.analyse)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text(MODULE)
    monkeypatch.chdir(tmp_path)
    main([str(tmp_path / "pkg")])
    assert (analyzer.Analyzer._interpret, engine.Engine.analyse) == before
