"""Path conditions on real runs: a rule's ``facts`` option is what the judge assumes.

vLLM's padded decode path slices ``buf[:num_decode_tokens]`` under ``if num_decodes > 0:``;
ZL002 proves it safe only with its default fact ``num_decode_tokens >= num_decodes``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from zerolint.engine import check_paths

CASE = Path(__file__).parent / "fixtures" / "ZL002" / "vllm_indexer_padded.py"


def run(tmp_path: Path, options: str) -> list[str]:
    shutil.copy(CASE, tmp_path / "indexer.py")
    (tmp_path / "pyproject.toml").write_text(f'[tool.zerolint]\nselect = ["ZL002"]\n{options}')
    report = check_paths([tmp_path / "indexer.py"])
    return [f.code for f in report.findings]


def test_the_default_fact_proves_the_padded_path(tmp_path: Path) -> None:
    assert run(tmp_path, "") == []


def test_without_the_fact_the_guard_on_num_decodes_proves_nothing(tmp_path: Path) -> None:
    assert run(tmp_path, "[tool.zerolint.options.ZL002]\nfacts = []\n") == ["ZL002"]
