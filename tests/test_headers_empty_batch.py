"""The empty-batch recognizer: does the scheduler read its buffer when B == 0?

Two kinds of input, as in test_headers.py: the real scheduler headers of the PyPI wheels
(docs/hazards/README.md, "Empty batches": DeepGEMM 2.5.0 of vLLM 0.26.0 was measured to end
in an illegal memory access at B = 0), and small headers written for this project,
``fixtures/headers/empty_batch/*.cuh``, whose first comment lines state the expectation.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from tests.test_headers import apply_recipe, scheduler_header
from zerolint.headers import RECOGNIZERS, recognizer, recognizers

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

EMPTY_BATCH = recognizer("empty-batch")
FIXTURES = sorted((Path(__file__).parent / "fixtures" / "headers" / "empty_batch").glob("*.cuh"))

# requirement, status, guard kinds, a line the evidence must point at
REAL = [
    ("vllm==0.26.0", "unguarded", set(), "q_idx == 0 ? prefix_sum[0]"),
    ("vllm==0.27.1", "unguarded", set(), "q_idx == 0 ? prefix_sum[0]"),
    ("vllm==0.28.0", "guarded", {"bound", "zero-total"}, "if (total == 0) {"),
    ("vllm==0.33.0", "guarded", {"bound", "zero-total"}, "if (total == 0) {"),
    ("sgl-deep-gemm==0.2.3.post2", "unguarded", set(), "q_idx == 0 ? prefix_sum[0]"),
]


def evidence(result) -> list[str]:
    return [e.code for e in (result.hazards if result.status == "unguarded" else result.guards)]


@pytest.mark.network
@pytest.mark.parametrize("requirement, status, kinds, line", REAL, ids=[r[0] for r in REAL])
def test_real_header(requirement, status, kinds, line):
    result = EMPTY_BATCH.check_header(scheduler_header(requirement))
    assert result.status == status, result.reason
    assert {g.kind for g in result.guards} == kinds
    assert any(line in code for code in evidence(result)), evidence(result)
    assert (result.array, result.limit) == ("prefix_sum", "batch_size")


@pytest.mark.network
def test_the_all_zero_guard_of_2_5_does_not_cover_an_empty_batch():
    """vLLM 0.26.0's min(lo, batch_size - 1) guards ZL001 but not B == 0 (measured: IMA)."""
    header = scheduler_header("vllm==0.26.0")
    assert recognizer("all-zero-search").check_header(header).status == "guarded"
    result = EMPTY_BATCH.check_header(header)
    assert result.status == "unguarded"
    assert [e.line for e in result.hazards] == [116]
    assert "align(0, 32) = 0 ints" in result.reason


def stated(path: Path) -> tuple[str, set[str], str | None]:
    text = path.read_text()
    expect = re.search(r"^// expect: (\S+)(.*)$", text, re.MULTILINE)
    line = re.search(r"^// line: (.+)$", text, re.MULTILINE)
    assert expect, f"{path.name}: no '// expect:' line"
    return expect.group(1), set(expect.group(2).split()), line.group(1).strip() if line else None


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_synthetic_header(path):
    status, kinds, line = stated(path)
    result = EMPTY_BATCH.check_header(path)
    assert result.status == status, result.reason
    assert {g.kind for g in result.guards} == kinds
    if line is not None:
        assert any(line in code for code in evidence(result)), evidence(result)


def test_fixtures_cover_every_status():
    assert {stated(p)[0] for p in FIXTURES} == {"guarded", "unguarded", "unknown"}


def test_registry_names_each_recognizer_with_its_hazard_and_headers(tmp_path):
    assert [(r.name, r.hazard) for r in recognizers()] == [
        ("all-zero-search", "ZL001"),
        ("empty-batch", "empty-batch"),
    ]
    assert list(RECOGNIZERS) == [r.name for r in recognizers()]
    for found in recognizers():
        assert found.headers[0] == "include/deep_gemm/scheduler/sm90_paged_mqa_logits.cuh"
        missing = found.check_package(tmp_path)
        assert missing.status == "unknown" and "no header" in missing.reason
    with pytest.raises(KeyError, match="no header recognizer 'flashmla'; known: all-zero"):
        recognizer("flashmla")


def test_a_header_without_functions_is_unknown():
    assert EMPTY_BATCH.check_source("#pragma once\n", "x.cuh").status == "unknown"


def test_every_measured_row_is_documented_with_an_existing_source():
    from zerolint.headers.measured import MEASURED

    root = Path(__file__).resolve().parents[1]
    page = (root / "docs" / "hazards" / "README.md").read_text()
    table = page.split("## Measured", 1)[1]
    for row in MEASURED:
        assert f"`{row.header_sha256[:12]}`" in table, row.build
        assert (root / row.source).is_file(), row.source
        assert {r.hazard for r in recognizers()} >= {row.hazard}


EDITS = sorted((Path(__file__).parent / "fixtures" / "headers" / "edits").glob("*.toml"))


@pytest.mark.network
@pytest.mark.parametrize("recipe_path", EDITS, ids=[p.stem for p in EDITS])
def test_edited_header(recipe_path):
    """The same edited copies as test_headers.py; each recipe also states the B == 0 status."""
    recipe = tomllib.loads(recipe_path.read_text())
    assert recipe["empty_batch"] in ("guarded", "unguarded", "unknown"), recipe_path.name
    base = scheduler_header(recipe["base"]).read_text()
    edited = apply_recipe(recipe, base, recipe_path.name)
    result = EMPTY_BATCH.check_source(edited, recipe_path.stem + ".cuh")
    assert result.status == recipe["empty_batch"], result.reason
