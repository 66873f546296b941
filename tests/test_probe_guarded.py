"""The guarded variants in the committed probe report (issue #15): every hazardous case of
each guarded kernel ran clean through its guard, and the cost rows come from the same run.
Plus ``probe.run.merge``, which puts a guarded-only run into the committed report."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from probe.kernels import BY_NAME, KERNELS
from probe.run import merge
from runtime_guard.sinks import BY_NAME as SINKS

ROOT = Path(__file__).resolve().parent.parent
Row = dict


@pytest.fixture(scope="module")
def report() -> Row:
    return json.loads((ROOT / "docs" / "probe-report.json").read_text())


GUARDED = [k for k in KERNELS if k.guard]


def test_every_guarded_variant_names_a_sink_and_its_unguarded_kernel() -> None:
    assert {k.guard for k in GUARDED} == {"triton_mla", "flashmla", "deep_gemm_logits"}
    for kernel in GUARDED:
        assert kernel.guard in SINKS and kernel.guards in BY_NAME
        assert not BY_NAME[kernel.guards].guard


@pytest.mark.parametrize("kernel", GUARDED, ids=lambda k: k.name)
def test_every_hazardous_case_runs_clean_through_its_guard(report: Row, kernel) -> None:
    by_name = {k["name"]: k for k in report["kernels"]}
    guarded, plain = by_name[kernel.name], by_name[kernel.guards]
    hazardous = {
        c["case"] for c in plain["cases"] for m in report["modes"] if c[m]["outcome"] != "ok"
    }
    assert hazardous  # the unguarded kernel does fail somewhere
    cases = {c["case"]: c for c in guarded["cases"]}
    assert hazardous <= set(cases)
    for case in cases.values():
        for mode in report["modes"]:
            result = case[mode]
            assert result["outcome"] == "ok", (case["case"], mode)
            checks = result["row"]["checks"]
            assert checks and all(checks.values()), (case["case"], mode, checks)
            assert "graph_identical" in checks
            if case["zero_rows"]:
                assert checks.get("zero_rows_identity", True)
            if case["batch"]:
                assert checks["nonzero_rows_identical"]
            else:
                assert checks["empty_like_kernel"]
        assert case["memcheck"]["sanitizer_errors"] == 0
    assert guarded["predicates"]["summary"] == "tolerates every case"


def test_the_cost_rows_cover_every_guarded_sink_from_the_same_device(report: Row) -> None:
    cost = report["guard_cost"]
    assert {r["sink"] for r in cost["rows"]} == {k.guard for k in GUARDED}
    assert cost["gpu"] == runs_of(report)[-1]["environment"]["gpu"]
    for row in cost["rows"]:
        for mode in ("replay_us", "eager_us"):
            added = row[f"guarded_{mode}"] - row[f"plain_{mode}"]
            assert abs(added - row[f"added_{mode}"]) < 0.011


EXPECTED_PATH = {
    "triton_mla": "stage2",
    "flashmla": "lse-kernel",
    "deep_gemm_logits": "empty-batch",
}
"""The path each guard took on the H200 (``runtime_guard.guard_path``): the Triton MLA guard its
own second stage, FlashMLA's one LSE kernel."""


@pytest.mark.parametrize("kernel", GUARDED, ids=lambda k: k.name)
def test_every_guarded_case_took_the_expected_path(report: Row, kernel) -> None:
    cases = next(k for k in report["kernels"] if k["name"] == kernel.name)["cases"]
    paths = {case[mode]["row"]["guard_path"] for case in cases for mode in report["modes"]}
    assert paths == {EXPECTED_PATH[kernel.guard]}


def test_flashmla_writes_zero_rows_itself_which_is_why_the_guard_does_not(report: Row) -> None:
    """runtime_guard.attention writes no FlashMLA output: the unguarded kernel wrote 0 into the
    rows of length 0 of a buffer full of NaN, in every case that has such rows."""
    from runtime_guard.attention import FLASHMLA_ZERO_ROWS_MEASURED

    cases = next(k for k in report["kernels"] if k["name"] == "flashmla_dense_bf16_guarded")
    with_zero = [c for c in cases["cases"] if c["zero_rows"]]
    assert with_zero
    for case in with_zero:
        for mode in report["modes"]:
            assert case[mode]["row"][FLASHMLA_ZERO_ROWS_MEASURED] == "zero", case["case"]


def median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def test_the_cost_summary_follows_from_the_rows(report: Row) -> None:
    cost = report["guard_cost"]
    assert set(cost["sinks"]) == {k.guard for k in GUARDED}
    for name, summary in cost["sinks"].items():
        rows = [r for r in cost["rows"] if r["sink"] == name]
        assert summary["batches"] == len(rows) >= 3
        assert {r["path"] for r in rows} == {summary["path"]} == {EXPECTED_PATH[name]}
        for key in ("replay_us", "eager_us"):
            assert summary[f"median_added_{key}"] == round(
                median([r[f"added_{key}"] for r in rows]), 2
            )
        assert summary["max_added_replay_us"] == max(r["added_replay_us"] for r in rows)
        assert summary["meets_target"] == (
            summary["max_added_replay_us"] < cost["target_added_replay_us"]
        )


def test_the_triton_guard_adds_no_graph_node_and_meets_the_target(report: Row) -> None:
    cost = report["guard_cost"]
    rows = [r for r in cost["rows"] if r["sink"] == "triton_mla"]
    assert all(r["guarded_graph_nodes"] == r["plain_graph_nodes"] for r in rows)
    assert cost["sinks"]["triton_mla"]["meets_target"]
    assert cost["sinks"]["deep_gemm_logits"]["meets_target"]


def test_the_flashmla_guard_adds_one_graph_node_and_meets_the_target(report: Row) -> None:
    """What docs/runtime-guard.md says: one LSE kernel, one node, under 1 µs in replay at
    every batch."""
    cost = report["guard_cost"]
    rows = [r for r in cost["rows"] if r["sink"] == "flashmla"]
    assert rows and all(r["guarded_graph_nodes"] == r["plain_graph_nodes"] + 1 for r in rows)
    assert cost["sinks"]["flashmla"]["meets_target"]
    page = (ROOT / "docs" / "runtime-guard.md").read_text(encoding="utf-8")
    summary = cost["sinks"]["flashmla"]
    low = min(r["added_replay_us"] for r in rows)
    assert (
        f"| `flashmla` | `lse-kernel` | 2 → 3 | {summary['median_added_replay_us']:+.2f} µs "
        f"({low:+.2f} to {summary['max_added_replay_us']:+.2f})" in page
    )


def test_the_cost_bench_median_is_the_one_the_report_uses() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "sink_guard_cost", ROOT / "bench" / "sink_guard_cost.py"
    )
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    for values in ([3.0], [1.0, 4.0], [5.0, 1.0, 2.0], [0.5, -0.2, 0.1, 9.0]):
        assert bench.median(values) == median(values)
    assert bench.median([0.5, -0.2, 0.1, 9.0]) == 0.3


def runs_of(report: Row) -> list[Row]:
    """The runs a report was made by: ``runs`` once a later run was merged into it, else
    the one run its top-level keys describe (every kernel from it)."""
    return report.get("runs") or [report]


def test_the_guarded_kernels_come_from_the_last_run(report: Row) -> None:
    guarded = [k for k in report["kernels"] if k["name"] in {g.name for g in GUARDED}]
    assert [k["name"] for k in guarded] == [k.name for k in GUARDED]
    if "runs" not in report:  # one run of every kernel
        assert "--kernels" not in report["command"]
        assert all("run" not in k for k in report["kernels"])
        return
    last = report["runs"][-1]
    assert last["kernels"] == [k.name for k in GUARDED]
    assert f"--kernels {','.join(k.name for k in GUARDED)}" in last["command"]
    assert [k.get("run") for k in guarded] == [len(report["runs"]) - 1] * len(GUARDED)


def test_merge_replaces_the_kernels_run_now_and_keeps_the_order(report: Row) -> None:
    earlier = copy.deepcopy(report)
    now = copy.deepcopy(report)
    now["kernels"] = [
        copy.deepcopy(next(k for k in report["kernels"] if k["name"] == "triton_mla_decode"))
    ]
    now["kernels"][0]["title"] = "rerun"
    now["started_utc"] = "later"
    merged = merge(earlier, now)
    assert [k["name"] for k in merged["kernels"]] == [k["name"] for k in report["kernels"]]
    assert merged["kernels"][0]["title"] == "rerun"
    assert merged["runs"][-1]["started_utc"] == "later"
    assert merged["runs"][-1]["kernels"] == ["triton_mla_decode"]
    assert len(merged["runs"]) == len(runs_of(report)) + 1
    assert merged["kernels"][0]["run"] == len(merged["runs"]) - 1  # an index into runs


def test_merge_refuses_other_modes(report: Row) -> None:
    now = dict(copy.deepcopy(report), modes=["plain"])
    with pytest.raises(SystemExit, match="modes"):
        merge(copy.deepcopy(report), now)


def test_the_cost_bench_says_what_is_missing(tmp_path: Path) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "sink_guard_cost.py"),
            "--sm90-pieces",
            str(tmp_path),
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert done.stderr.strip() == (
        f"error: {tmp_path / 'manifest.json'} not found: run `python devtools/prepare_sm90.py` first"
    )
