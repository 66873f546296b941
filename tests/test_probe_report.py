"""The committed zero-length probe report (docs/probe-report.json) and its docs page.

CPU only: every outcome and predicate the GPU run recorded must follow from its raw rows
with today's code, the cases must regenerate from their names, and the page must be the
report's rendering.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from probe import predicates, render
from probe.cases import PREDICATES, Case, case_named, edge_cases
from probe.kernels import BY_NAME, KERNELS

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "docs" / "probe-report.json"
PAGE = ROOT / "docs" / "zero-length-probe.md"
SHA256 = re.compile(r"[0-9a-f]{64}")

Row = dict[str, Any]


@pytest.fixture(scope="module")
def report() -> Row:
    return json.loads(REPORT.read_text())


def test_the_report_comes_from_an_sm90_gpu_with_memcheck(report: Row) -> None:
    env = report["environment"]
    assert env["compute_capability"] == "9.0"
    for key in ("gpu", "driver", "torch", "triton", "compute_sanitizer", "nvcc"):
        assert env[key], key
    assert report["modes"] == ["plain", "memcheck"]
    assert report["build"]["errors"] == {}


def test_every_declared_kernel_ran_every_edge_case(report: Row) -> None:
    assert [k["name"] for k in report["kernels"]] == [k.name for k in KERNELS]
    for kernel in report["kernels"]:
        names = [c.name for c in edge_cases(BY_NAME[kernel["name"]].next_n)]
        assert [c["case"] for c in kernel["cases"]] == names


def test_each_kernel_names_its_wheel_and_digest(report: Row) -> None:
    for kernel in report["kernels"]:
        assert SHA256.fullmatch(kernel["wheel_sha256"])
        folder, role = BY_NAME[kernel["name"]].piece.split(":")
        assert report["pieces"][folder][role]["wheel_sha256"] == kernel["wheel_sha256"]
        version = kernel["source"].split(":")[0]
        assert kernel["wheel"].startswith(version.replace("==", "-"))


def test_cases_regenerate_from_their_names(report: Row) -> None:
    for kernel in report["kernels"]:
        for row in kernel["cases"]:
            case = case_named(row["case"], kernel["next_n"])
            assert (row["batch"], row["next_n"], row["zero_rows"]) == (
                case.batch,
                case.next_n,
                len(case.zero_rows),
            )


def test_every_outcome_follows_from_its_raw_result(report: Row) -> None:
    for kernel in report["kernels"]:
        for row in kernel["cases"]:
            for mode in report["modes"]:
                result = row[mode]
                assert result["outcome"] == predicates.outcome(result), (kernel["name"], row)


def test_every_predicate_follows_from_the_outcomes(report: Row) -> None:
    for kernel in report["kernels"]:
        again = predicates.kernel_predicates(kernel["next_n"], kernel["cases"])
        assert kernel["predicates"] == again, kernel["name"]


def test_nan_rows_are_the_rows_the_report_says(report: Row) -> None:
    # The recorded non-finite rows are recomputed from the raw per-output lists.
    for kernel in report["kernels"]:
        for row in kernel["cases"]:
            result = row["plain"]
            if result.get("row"):
                assert result["nonfinite_rows"] == predicates.nonfinite(result["row"])


def test_the_docs_page_renders_this_report(report: Row) -> None:
    page = PAGE.read_text()
    start, end = page.index(render.BEGIN), page.index(render.END) + len(render.END)
    assert page[start:end] == render.render(report)


def test_the_findings_the_page_states_are_the_measured_ones(report: Row) -> None:
    summary = {k["name"]: k["predicates"]["summary"] for k in report["kernels"]}
    assert summary["triton_mla_decode"] == "any row 0 -> nan_inf"
    assert summary["deep_gemm_2_6_1_scheduler"] == (
        "B == 0 or (every row 0 and B % 32 == 0) -> fault"
    )
    assert summary["deep_gemm_2_8_1_scheduler"] == "tolerates every case"
    assert summary["deep_gemm_2_5_0_metadata"] == "B == 0 -> fault"


# -- the outcome and predicate functions themselves ---------------------------------------------


def ran(**row: Any) -> Row:
    return {"ended": "exit", "row": {"status": "ran", **row}}


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        ({"ended": "timeout", "row": None}, "hang"),
        ({"ended": "crash", "row": None}, "fault"),
        ({"ended": "exit", "row": {"status": "fault"}}, "fault"),
        ({"ended": "exit", "row": {"status": "rejected"}}, "rejected"),
        ({**ran(), "memory_errors": 3}, "fault"),
        ({**ran(), "sanitizer_errors": 1, "memory_errors": 0}, "ok"),  # an API error only
        (ran(out_nonfinite={"nan": [2]}), "nan_inf"),
        (ran(lse_nonfinite={"+inf": [0]}), "nan_inf"),
        (ran(lse_nonfinite={"-inf": [0]}), "ok"),  # an empty row's LSE convention
        (ran(wrong_rows=[1]), "wrong"),
        (ran(matches_model=False), "wrong"),
        (ran(matches_model=True), "ok"),
    ],
)
def test_outcome(result: Row, expected: str) -> None:
    assert predicates.outcome(result) == expected


CASES = [Case("empty", ()), Case("zeros32", (0,) * 32), Case("zeros8", (0,) * 8),
         Case("one zero", (0, 5)), Case("full", (3, 4))]  # fmt: skip


@pytest.mark.parametrize(
    ("bad", "expected"),
    [
        ([False] * 5, "never"),
        ([True, False, False, False, False], "B == 0"),
        ([False, True, False, False, False], "every row 0 and B % 32 == 0"),
        ([True, True, False, False, False], "B == 0 or (every row 0 and B % 32 == 0)"),
        ([False, True, True, True, False], "any row 0"),
        ([True, True, True, True, False], "B == 0 or any row 0"),
        ([True] * 5, "always"),
        ([False, False, False, False, True], "unexplained: full"),
    ],
)
def test_supported_picks_the_exact_predicate(bad: list[bool], expected: str) -> None:
    assert predicates.supported(CASES, bad) == expected


def test_every_predicate_is_a_function_of_the_case() -> None:
    for name, predicate in PREDICATES.items():
        assert isinstance(predicate(Case("x", (0, 1))), bool), name


def test_gpu_claims_replaces_only_the_results_section(tmp_path: Path, report: Row) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("gpu_claims", ROOT / "devtools/gpu_claims.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    page = tmp_path / "page.md"
    page.write_text(f"intro\n{render.BEGIN}\nstale\n{render.END}\nafter\n")
    module.replace_results(page, render.BEGIN, render.END, render.render(report))
    assert page.read_text() == f"intro\n{render.render(report)}\nafter\n"


def test_the_kernels_not_run_are_the_declared_ones(report: Row) -> None:
    from probe.kernels import NOT_RUN

    assert [(r["kernel"], r["why"]) for r in report["not_run"]] == list(NOT_RUN)
