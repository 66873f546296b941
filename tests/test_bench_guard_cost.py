"""bench/guard_cost.py reads what verify_sm90's cost section writes (the GPU run is not in CI).

Its table and verdict are checked on the committed H200 report, and its exit on a machine
without the DeepGEMM pieces.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "bench" / "guard_cost.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("guard_cost", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_table_prints_both_modes_and_returns_the_worst_graph_cost(
    bench, capsys: pytest.CaptureFixture[str]
) -> None:
    section = json.loads((ROOT / "docs" / "sm90-report.json").read_text())["cost"]
    worst = bench.print_table(section)
    assert worst == section["counts"]["max_graph_added_us"]
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 + 2 * len(section["rows"])
    for row in section["rows"]:
        assert f"{row['graph']['guarded_us']:8.3f}" in "\n".join(lines)


def test_a_failed_row_counts_as_missing_the_target(bench) -> None:
    section = {"rows": [{"id": "B=32", "status": "fault", "error": "illegal address"}]}
    assert bench.print_table(section) == float("inf")


def test_without_the_pieces_it_says_what_to_run(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--pieces", str(tmp_path / "none")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode != 0
    assert "prepare_sm90.py" in done.stderr + done.stdout
