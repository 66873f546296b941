"""A call's result made from a name's value, the name then bound again (``frames.
_retired_origin``): the fixture ``ZL002/trap_count_call_before_the_name_is_bound_again``
holds the findings; here, what the renaming must not change on a real tree. vLLM 0.33.0's
MLA indexer assigns a call's results back to the names it was handed (``seq_lens,
block_table, decode_lens, ... = self._prepare_decode_tensors(seq_lens, block_table,
decode_lens, ...)``): each name bound renames the operands of the results already bound.
A renamed result met inside the resolution of the call it comes from is that call met
again (a recursion), not one call deeper: a first version, which resolved each renamed
copy of the call as a call of its own, went past the depth limit here and reported two
ZL930 limits."""

from __future__ import annotations

import subprocess
import sys

import pytest

from devtools.wheels import vllm_tree

INDEXER = "vllm/v1/attention/backends/mla/indexer.py"


@pytest.mark.network
@pytest.mark.slow
def test_results_bound_back_to_their_operands_reach_no_depth_limit() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "zerolint", "check", "--no-cache", "--color", "never"]
        + ["--select", "ALL", "--ignore", "ZL920", INDEXER],
        cwd=vllm_tree("0.33.0"),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 1, run.stderr
    codes = [line.split()[1] for line in run.stdout.splitlines() if line.startswith(INDEXER)]
    assert "ZL930" not in codes, run.stdout
    # The two decode paths into the metadata scheduler are still followed to their end.
    assert codes.count("ZL001") == 2, run.stdout
