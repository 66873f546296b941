"""``devtools.needed_summaries`` (docs/speed.md): how much of a check's interpretation the
findings need, on a tree small enough to count by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from devtools.needed_summaries import PATCHED, main

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


WRAPPER = """\
from deep_gemm import get_paged_mqa_logits_metadata


def plan(lens):
    return get_paged_mqa_logits_metadata(lens, 64, 132)
"""

# Names `plan` only: a candidate once the first round has found `plan` wraps the sink.
CALLER = """\
from pkg.a import plan


def run(seq_lens):
    return plan(halve(seq_lens, 3))


def halve(x, n):
    if n == 0:
        return x // 2
    return halve(x, n - 1)
"""

# 41 functions, each calling the next: the first's making meets the depth limit of
# summaries made one inside another (MAX_DEPTH * 4 of them).
CHAIN = "\n\n".join(f"def c{i}(x):\n    return c{i + 1}(x)\n" for i in range(40))
CHAIN += "\n\ndef c40(x):\n    return x\n"


def counts(lines: list[str], start: str) -> tuple[int, ...]:
    """The numbers of the line that starts with ``start``, after it."""
    (line,) = [line[len(start) :] for line in lines if line.startswith(start)]
    return tuple(int(word.rstrip(",;")) for word in line.split() if word.rstrip(",;").isdigit())


def test_it_counts_the_makings_by_round_and_what_each_reset_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "a.py").write_text(WRAPPER + "\n\n" + CHAIN)
    (tmp_path / "pkg" / "b.py").write_text(CALLER)
    monkeypatch.chdir(tmp_path)
    assert main([str(tmp_path / "pkg")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith(": 3 files checked, findings: 1")
    makings, functions, twice = counts(lines, "makings: ")
    # Both modules' code, `plan`, the chain, `run` and `halve`.
    assert functions == 2 + 1 + 41 + 2
    first_round = counts(lines, "  index round 1: ")
    second_round = counts(lines, "  index round 2: ")
    assert not any(line.startswith("  paths: ") for line in lines)  # nothing left to make
    # Every making is in one round: made first (or again after a reset), or made again
    # after a recursion; a function made more than once is one of those.
    assert sum(first_round) + sum(second_round) == makings
    assert twice <= makings - functions
    # The first round: a.py alone (its code, `plan`, the chain, of which the 33 made one
    # inside another reach the depth limit, and are made again after it).
    assert first_round == (2 + 41, 33)
    # The second: b.py (its code, `run`, `halve`), the recursion of `halve` and its
    # caller made again, and the chain's summaries the reset dropped.
    kept, dropped = counts(lines, "reset before index round 2: ")
    assert kept + dropped == first_round[0]
    assert second_round == (3 + dropped, 2)
    assert lines[-1] == (
        "  1 answer with a changed token: "
        "RECURSION: the depth limit of summaries made one inside another"
    )


def test_the_check_it_times_is_the_only_one_patched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It times a check by patching the analyzer's methods: they are the originals again
    afterwards (patched for good, every later check in the process kept what it made)."""
    from zerolint import engine
    from zerolint.dataflow import analyzer

    methods = [(analyzer.Analyzer, "_interpret"), (engine.Engine, "analyse"), *PATCHED]
    before = [getattr(owner, name) for owner, name in methods]
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text(MODULE)
    monkeypatch.chdir(tmp_path)
    main([str(tmp_path / "pkg")])
    assert [getattr(owner, name) for owner, name in methods] == before
