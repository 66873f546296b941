"""The scheduler-header check reads the C++ structure, not one file's text.

Three kinds of input:

* the real SM90 paged-MQA scheduler headers from the PyPI wheels (docs/hazards/README.md,
  "DeepGEMM builds"): vLLM 0.26.0's generic scheduler and 0.28.0/0.33.0 are guarded,
  0.27.1 and sgl-deep-gemm 0.2.3.post2 are not;
* edited copies of those headers: ``fixtures/headers/edits/*.toml`` are recipes (exact
  replacements, identifier renames, regex rewrites) applied here to the downloaded header,
  so no DeepGEMM source is committed; each recipe states the expected status;
* small headers written for this project: ``fixtures/headers/synthetic/*.cuh``, whose
  first comment lines state the expectation.

A new case is one fixture file, no test code.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from devtools import wheels
from zerolint.headers import (
    HeaderCheck,
    HeaderError,
    check_header,
    check_source,
    find_scheduler_header,
    tokenize,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

FIXTURES = Path(__file__).parent / "fixtures" / "headers"
EDITS = sorted((FIXTURES / "edits").glob("*.toml"))
SYNTHETIC = sorted((FIXTURES / "synthetic").glob("*.cuh"))


def scheduler_header(requirement: str) -> Path:
    """The SM90 scheduler header shipped in a wheel from PyPI (downloaded once, cached)."""
    # The same cached tree as the audit tests: one unpacked copy per wheel serves both.
    site = wheels.serving_site(requirement)
    vendored = not requirement.startswith("sgl-deep-gemm")
    package = site / ("vllm/third_party/deep_gemm" if vendored else "deep_gemm")
    header = find_scheduler_header(package)
    assert header is not None, f"no scheduler header in {requirement}"
    return header


def evidence_lines(result: HeaderCheck) -> list[str]:
    return [e.code for e in (result.hazards if result.status == "unguarded" else result.guards)]


# ------------------------------------------------------------------ the real headers

REAL = [
    # requirement, header file, status, guard kinds, a line the evidence must point at
    (
        "vllm==0.26.0",
        "paged_mqa_logits.cuh",
        "guarded",
        {"bound"},
        "const uint32_t q_idx = min(lo, batch_size - 1);",
    ),
    (
        "vllm==0.27.1",
        "sm90_paged_mqa_logits.cuh",
        "unguarded",
        set(),
        "prefix_sum[q_idx] - prefix_sum[q_idx - 1]",
    ),
    (
        "vllm==0.28.0",
        "sm90_paged_mqa_logits.cuh",
        "guarded",
        {"bound", "zero-total"},
        "if (total == 0) {",
    ),
    (
        "vllm==0.33.0",
        "sm90_paged_mqa_logits.cuh",
        "guarded",
        {"bound", "zero-total"},
        "if (total == 0) {",
    ),
    (
        "sgl-deep-gemm==0.2.3.post2",
        "sm90_paged_mqa_logits.cuh",
        "unguarded",
        set(),
        "prefix_sum[q_idx] - prefix_sum[q_idx - 1]",
    ),
]


@pytest.mark.network
@pytest.mark.parametrize(
    "requirement, filename, status, guard_kinds, line", REAL, ids=[r[0] for r in REAL]
)
def test_real_header(requirement, filename, status, guard_kinds, line):
    header = scheduler_header(requirement)
    assert header.name == filename
    result = check_header(header)
    assert result.status == status, result.reason
    assert {g.kind for g in result.guards} == guard_kinds
    assert any(line in code for code in evidence_lines(result)), evidence_lines(result)
    assert (result.array, result.result, result.limit) == ("prefix_sum", "lo", "batch_size")


@pytest.mark.network
def test_unguarded_evidence_names_the_read_and_the_index_lines():
    result = check_header(scheduler_header("vllm==0.27.1"))
    assert [(e.kind, e.line) for e in result.hazards] == [("read", 113), ("index", 111)]
    assert result.hazards[1].code == "const uint32_t q_idx = lo;"
    assert result.search is not None and result.search.code == "while (lo < hi) {"
    assert result.function == "sm90_paged_mqa_logits_metadata"
    assert "in kernel sm90_paged_mqa_logits_metadata" in result.search.note
    assert result.location() == "sm90_paged_mqa_logits.cuh:113"
    assert "smem_buffer" in result.reason  # the searched array lives in shared memory


@pytest.mark.network
def test_version_string_does_not_decide():
    """0.27.1 and 0.28.0 both vendor DeepGEMM 2.6.1; only the header tells them apart."""
    old, new = scheduler_header("vllm==0.27.1"), scheduler_header("vllm==0.28.0")
    for header in (old, new):
        init = header.parents[3] / "__init__.py"
        assert "__version__ = '2.6.1'" in init.read_text()
    assert (check_header(old).status, check_header(new).status) == ("unguarded", "guarded")


# ------------------------------------------------------------------ edited copies


def apply_recipe(recipe: dict, text: str, name: str) -> str:
    """Apply a recipe's edits in order; each must change the text, or the base moved."""
    for edit in recipe["edit"]:
        if "old" in edit:
            count = text.count(edit["old"])
            assert count == 1, f"{name}: {edit['old']!r} occurs {count} times in the base header"
            text = text.replace(edit["old"], edit["new"])
        elif "rename" in edit:
            text, count = re.subn(rf"\b{re.escape(edit['rename'])}\b", edit["to"], text)
            assert count, f"{name}: no identifier {edit['rename']!r} to rename"
        else:
            text, count = re.subn(edit["pattern"], edit["repl"], text)
            assert count, f"{name}: pattern {edit['pattern']!r} matches nothing"
    return text


@pytest.mark.network
@pytest.mark.parametrize("recipe_path", EDITS, ids=[p.stem for p in EDITS])
def test_edited_header(recipe_path):
    recipe = tomllib.loads(recipe_path.read_text())
    base = scheduler_header(recipe["base"]).read_text()
    edited = apply_recipe(recipe, base, recipe_path.name)
    assert edited != base
    result = check_source(edited, recipe_path.stem + ".cuh")
    assert result.status == recipe["expect"], result.reason
    assert {g.kind for g in result.guards} == set(recipe.get("guards", []))
    assert any(recipe["line"] in code for code in evidence_lines(result)), evidence_lines(result)


def test_every_edit_recipe_states_its_expectation():
    assert len(EDITS) >= 10
    for path in EDITS:
        recipe = tomllib.loads(path.read_text())
        assert recipe["expect"] in ("guarded", "unguarded", "unknown"), path.name
        assert recipe["edit"] and recipe["line"], path.name


# ------------------------------------------------------------------ synthetic headers


def stated(path: Path) -> tuple[str, set[str], str | None]:
    """``// expect: STATUS [KIND ...]`` and ``// line: TEXT`` from a fixture's first lines."""
    text = path.read_text()
    expect = re.search(r"^// expect: (\S+)(.*)$", text, re.MULTILINE)
    line = re.search(r"^// line: (.+)$", text, re.MULTILINE)
    assert expect, f"{path.name}: no '// expect:' line"
    return expect.group(1), set(expect.group(2).split()), line.group(1).strip() if line else None


@pytest.mark.parametrize("path", SYNTHETIC, ids=[p.stem for p in SYNTHETIC])
def test_synthetic_header(path):
    status, kinds, line = stated(path)
    result = check_header(path)
    assert result.status == status, result.reason
    assert {g.kind for g in result.guards} == kinds
    if line is not None:
        assert any(line in code for code in evidence_lines(result)), evidence_lines(result)


# ------------------------------------------------------------------ reading C++


def test_tokens_skip_comments_strings_and_directives_but_keep_lines():
    source = (
        "#define GUARD(x) \\\n  if (x == 0) return;\n"
        "int a = 1; // min(lo, n - 1)\n"
        '/* if (total == 0)\n return; */ const char* s = "if (t) return;";\n'
        "x = y and not z;\n"
    )
    tokens = tokenize(source)
    texts = [t.text for t in tokens]
    assert "GUARD" not in texts and "min" not in texts and "return" not in texts
    assert [t.line for t in tokens if t.text == "a"] == [3]
    assert [t.line for t in tokens if t.text == "s"] == [5]
    assert ["x", "=", "y", "&&", "!", "z", ";"] == texts[-7:]


def test_missing_header_is_one_clear_error(tmp_path):
    missing = tmp_path / "sm90_paged_mqa_logits.cuh"
    with pytest.raises(HeaderError, match="sm90_paged_mqa_logits.cuh: cannot read header"):
        check_header(missing)


def test_a_header_without_functions_is_unknown():
    result = check_source("#pragma once\nnamespace deep_gemm {}\n")
    assert result.status == "unknown"
    assert not result.guarded


def test_scheduler_header_prefers_the_sm90_file(tmp_path):
    folder = tmp_path / "include" / "deep_gemm" / "scheduler"
    folder.mkdir(parents=True)
    assert find_scheduler_header(tmp_path) is None
    (folder / "paged_mqa_logits.cuh").write_text("")
    assert find_scheduler_header(tmp_path) == folder / "paged_mqa_logits.cuh"
    (folder / "sm90_paged_mqa_logits.cuh").write_text("")
    assert find_scheduler_header(tmp_path) == folder / "sm90_paged_mqa_logits.cuh"
