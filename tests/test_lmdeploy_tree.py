"""ZL001 on real code beside vLLM and SGLang: the ``lmdeploy/`` tree of the lmdeploy 0.18.0
wheel from PyPI, whose DeepSeek-V4 backend calls DeepGEMM's paged-MQA metadata scheduler.

Its warm-up (``pytorch/backends/cuda/v4_indexer.py``) fills every row of the lengths with
``entries_per_block = block_size // self.compress_ratio``, after returning early unless
``entries_per_block in (32, 64)``, and hands it back to the caller in a tuple. The
comparison bounds every row the scalar fills, so the call is proved safe; before that was
read, it was the tree's one ZL001 finding (witness: ``block_size`` 1, ratio 4). The other
calls clamp the lengths to >= 1 themselves. The wheel is downloaded once and cached outside
the repository.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from devtools.wheels import lmdeploy_tree

pytestmark = [pytest.mark.network, pytest.mark.slow]

WARMUP = "lmdeploy/pytorch/backends/cuda/v4_indexer.py"
WARMUP_CALL = 115  # self._warm_metadata(deep_gemm, entries_per_block, max_rows)


@pytest.fixture(scope="module")
def tree() -> Path:
    return lmdeploy_tree("0.18.0")


def test_the_v4_warmup_is_proved_safe_by_its_membership_test(tree: Path) -> None:
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "zerolint",
            "check",
            "--no-cache",
            "--select",
            "ZL001",
            "--show-proved",
            "--format",
            "json",
            "lmdeploy",
        ],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(run.stdout)
    assert report["findings"] == []
    assert report["diagnostics"] == []
    warmup = [p for p in report["proved"] if (p["path"], p["line"]) == (WARMUP, WARMUP_CALL)]
    assert len(warmup) == 1
    notes = [step["note"] for flow in warmup[0]["flows"] for step in flow["steps"]]
    assert "guard: entries_per_block >= 32" in notes
    # Every other call the tree makes to the scheduler is proved safe too (they clamp).
    assert len(report["proved"]) >= 2
