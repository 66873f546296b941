"""``--fix`` on the real thing: vLLM 0.27.1's DeepSeek-V4 indexer builder.

docs/vllm-facts.md: the decode branch of ``DeepseekV32IndexerMetadataBuilder`` passes
``seq_lens`` (floor-divided by the compress ratio) to ``get_paged_mqa_logits_metadata`` at
line 951 with no clamp. The fix must change that one argument line and nothing else
(torch is already imported), compile, and leave a file that checks clean.
"""

from __future__ import annotations

import difflib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from devtools.wheels import vllm_tree
from zerolint.fix import FixTarget, apply_fixes

pytestmark = pytest.mark.network  # the wheel is downloaded once, then cached

INDEXER = "vllm/v1/attention/backends/mla/indexer.py"
# `self.scheduler_metadata_buffer[:] = get_paged_mqa_logits_metadata(` on line 951.
SINK = FixTarget(951, 52, 0)
ARGUMENT_LINE = 952


@pytest.fixture(scope="module")
def original() -> str:
    return (vllm_tree("0.27.1") / INDEXER).read_text()


def changed_lines(before: str, after: str) -> list[tuple[int, str, str]]:
    """(line, old, new) for every line that differs; the line counts must match."""
    old, new = before.splitlines(), after.splitlines()
    assert len(old) == len(new), "the fix added or removed lines"
    return [(i + 1, a, b) for i, (a, b) in enumerate(zip(old, new)) if a != b]


def test_the_codemod_changes_only_the_argument_line(original: str) -> None:
    outcome = apply_fixes(original, [SINK])
    assert outcome.skipped == ()
    assert changed_lines(original, outcome.fixed) == [
        (
            ARGUMENT_LINE,
            "                    seq_lens,",
            "                    torch.clamp(seq_lens, min=1),",
        )
    ]
    compile(outcome.fixed, INDEXER, "exec")
    assert apply_fixes(outcome.fixed, [SINK]).skipped == ((SINK, "already clamped"),)


def zerolint(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zerolint", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_check_fix_on_a_copy_compiles_touches_only_the_call_and_checks_clean(
    original: str, tmp_path: Path
) -> None:
    copy = tmp_path / "indexer.py"
    shutil.copyfile(vllm_tree("0.27.1") / INDEXER, copy)

    before = zerolint("check", "--no-cache", "indexer.py", cwd=tmp_path)
    assert before.returncode == 1, before.stdout + before.stderr
    assert "indexer.py:951:" in before.stdout and "ZL001" in before.stdout

    fixing = zerolint("check", "--fix", "--no-cache", "indexer.py", cwd=tmp_path)
    fixed = copy.read_text()
    diff = "".join(difflib.unified_diff(original.splitlines(True), fixed.splitlines(True)))
    assert changed_lines(original, fixed) == [
        (
            ARGUMENT_LINE,
            "                    seq_lens,",
            "                    torch.clamp(seq_lens, min=1),",
        )
    ], diff
    compile(fixed, str(copy), "exec")
    assert fixing.returncode == 0, fixing.stdout + fixing.stderr

    after = zerolint("check", "--no-cache", "indexer.py", cwd=tmp_path)
    assert after.returncode == 0, after.stdout + after.stderr
