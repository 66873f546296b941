"""The committed SM90 report (docs/sm90-report.json) against its own rows and the CPU model.

The GPU run (``python -m runtime_guard.verify_sm90``, docs/sm90-verification.md) is not part
of CI. These tests keep what it recorded honest: every count and verdict follows from the
raw rows, the inputs regenerate from the recorded seed, the recorded faults are exactly
the predicate of docs/hazards/ZL001.md, ``runtime_guard.reference`` still computes the schedules the real
kernel wrote, and the sources that ran are today's (or the docs say which changed since).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from runtime_guard import reference
from runtime_guard._sm90 import cases, render, tally
from runtime_guard._sm90 import sglang as sglang_section

DOCS = Path(__file__).resolve().parent.parent / "docs"
REPORT = DOCS / "sm90-report.json"
DOC = DOCS / "sm90-verification.md"
SECTIONS = (
    "seed_table",
    "sanitizer",
    "capture",
    "differential",
    "semantics",
    "cost",
    "empty_batch",
    "sglang",
)
SHA256 = re.compile(r"[0-9a-f]{64}")
REPO = DOCS.parent
SOURCE_SUFFIXES = (".py", ".cu", ".cpp", ".h")  # what verify_sm90.source_hashes records
CHANGED = re.compile(
    r"<!-- changed-since-run:begin -->\n(?P<body>.*?)<!-- changed-since-run:end -->", re.DOTALL
)
CHANGED_ENTRY = re.compile(r"^- `(?P<path>runtime_guard/[^`]+)`: \S", re.MULTILINE)

# docs/hazards/ZL001.md, "What was measured": the B=32 all-zero read lands at 0x400 reserved + 0x80 = prefix_sum[32].
OUT_OF_BOUNDS_READ = "Access to 0x480 is out of bounds"
SEED_FAULTS = {(32, 0), (64, 0), (96, 0), (256, 0), (1024, 0)}
# Every non-faulting row of the differential is checked against the model, plus this share
# of the others: enough to catch a changed model, quick enough for CI.
MODEL_SAMPLE_EVERY = 10

Row = dict[str, Any]


@pytest.fixture(scope="module")
def report() -> Row:
    return json.loads(REPORT.read_text())


@pytest.fixture(scope="module")
def diff_rows(report: Row) -> list[Row]:
    section = report["differential"]
    return [dict(zip(section["columns"], row)) for row in section["rows"]]


@pytest.fixture(scope="module")
def regenerated(report: Row, diff_rows: list[Row]) -> dict[int, cases.DiffCase]:
    seed = report["differential"]["seed"]
    return {row["index"]: cases.diff_case(seed, row["index"]) for row in diff_rows}


# -- the report as a whole ----------------------------------------------------------------------


def test_the_report_comes_from_an_sm90_gpu_with_the_whole_api(report: Row) -> None:
    env = report["environment"]
    assert env["compute_capability"] == "9.0"
    for key in ("gpu", "driver", "cuda_runtime_torch", "nvcc", "torch", "compute_sanitizer"):
        assert env[key], key
    assert report["missing_api"] == []
    assert set(report["verdict"]) == set(SECTIONS)


def test_hashes_are_sha256_digests(report: Row) -> None:
    sources = report["runtime_guard_sources"]
    assert {"runtime_guard/__init__.py", "runtime_guard/reference.py"} <= set(sources)
    assert all(path.startswith("runtime_guard/") for path in sources)
    pieces = report["pieces"]
    digests = [*sources.values(), report["extension"]["header_sha256"]]
    digests += [pieces[role]["wheel_sha256"] for role in pieces]
    digests += [pieces[role]["header_sha256"] for role in pieces if role != "sglang"]
    digests += pieces["sglang"]["files_sha256"].values()
    assert all(SHA256.fullmatch(digest) for digest in digests)


def sources_today() -> dict[str, str]:
    """sha256 of each runtime_guard source as it is now, chosen as the run chose them."""
    files = (
        p
        for p in (REPO / "runtime_guard").rglob("*")
        if p.suffix in SOURCE_SUFFIXES and "__pycache__" not in p.parts
    )
    return {
        p.relative_to(REPO).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in files
    }


def changed_since_run_in_docs() -> set[str]:
    found = CHANGED.search(DOC.read_text(encoding="utf-8"))
    assert found, "docs/sm90-verification.md has lost its 'Changed since the run' markers"
    body = found["body"].strip()
    entries = {m["path"] for m in CHANGED_ENTRY.finditer(body)}
    if not entries:
        assert body.startswith("None"), f"unreadable 'Changed since the run' list: {body!r}"
    else:
        listed = [line for line in body.splitlines() if line.strip()]
        assert len(listed) == len(entries), f"each line is - `runtime_guard/...`: what: {body!r}"
    return entries


def test_the_sources_that_ran_are_todays_or_the_docs_say_which_changed(report: Row) -> None:
    recorded, today = report["runtime_guard_sources"], sources_today()
    differ = {p for p in recorded.keys() | today.keys() if recorded.get(p) != today.get(p)}
    listed = changed_since_run_in_docs()
    unlisted, stale = sorted(differ - listed), sorted(listed - differ)
    assert not unlisted, (
        f"{', '.join(unlisted)} changed since the SM90 run: list it under 'Changed since the "
        "run' in docs/sm90-verification.md (what changed, why the results still hold) or "
        "rerun python -m runtime_guard.verify_sm90"
    )
    assert not stale, f"{', '.join(stale)} listed as changed but is the source that ran: unlist it"


def test_the_recorded_sources_are_what_verify_sm90_records() -> None:
    from runtime_guard.verify_sm90 import source_hashes

    assert source_hashes() == sources_today()


def test_each_deep_gemm_comes_from_the_wheel_domain_names(report: Row) -> None:
    scheduler, semantics = report["pieces"]["scheduler"], report["pieces"]["semantics"]
    assert (scheduler["requirement"], scheduler["deep_gemm_version"]) == ("vllm==0.27.1", "2.6.1")
    assert scheduler["header"] == "deep_gemm/scheduler/sm90_paged_mqa_logits.cuh"
    assert report["extension"]["header_sha256"] == scheduler["header_sha256"]
    assert (semantics["requirement"], semantics["deep_gemm_version"]) == ("vllm==0.26.0", "2.5.0")


@pytest.mark.parametrize("name", SECTIONS)
def test_counts_and_verdict_follow_from_the_raw_rows(report: Row, name: str) -> None:
    section = report[name]
    assert section["counts"] == tally.counts_of(name, section)
    assert section["passed"] == tally.passed_of(name, section["counts"])
    assert report["verdict"][name] == section["passed"]


def test_the_docs_results_section_renders_this_report(report: Row) -> None:
    doc = DOC.read_text()
    start, end = doc.index(render.BEGIN), doc.index(render.END) + len(render.END)
    assert doc[start:end] == render.render(report)


# -- 2. the seed's table and memcheck -------------------------------------------------------------


def test_the_seed_table_faults_exactly_where_domain_says(report: Row) -> None:
    rows = report["seed_table"]["rows"]
    recorded = [(r["batch"], r["fill"], r["guarded"]) for r in rows]
    assert recorded == [(s.batch, s.fill, s.guarded) for s in cases.seed_cases()]
    assert {(r["batch"], r["fill"]) for r in rows if r["status"] == "fault"} == SEED_FAULTS
    assert all(r["status"] == "ok" for r in rows if r["guarded"])


def test_memcheck_reports_the_read_past_prefix_sum_unguarded_only(report: Row) -> None:
    rows = {row["guarded"]: row for row in report["sanitizer"]["rows"]}
    assert OUT_OF_BOUNDS_READ in rows[False]["out_of_bounds"]
    assert set(rows[False]["printed_error_kinds"]) == {"Invalid __shared__ read of size 4 bytes"}
    assert (rows[True]["errors"], rows[True]["worker_status"]) == (0, "ok")


# -- 3. vLLM's capture sizes ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "sizes", "multiples_of_32"),
    [
        (cases.ServeConfig(max_cudagraph_capture_size=None), 51, 16),  # defaults on an H200
        (cases.ServeConfig(max_cudagraph_capture_size=1024), 83, 32),
    ],
)
def test_capture_sizes_follow_domains_table(
    config: cases.ServeConfig, sizes: int, multiples_of_32: int
) -> None:
    got = cases.capture_sizes(config)
    assert (len(got), sum(size % 32 == 0 for size in got)) == (sizes, multiples_of_32)


def test_the_capture_ran_every_size_and_faulted_on_the_multiples_of_32(report: Row) -> None:
    section = report["capture"]
    sizes = cases.capture_sizes(cases.ServeConfig(**section["config"]))
    assert len(sizes) == 83
    for guarded in (False, True):
        rows = [r for r in section["rows"] if r["guarded"] is guarded]
        assert sorted(r["size"] for r in rows) == sizes
    unguarded_faults = {r["size"] for r in section["rows"] if r["status"] == "fault"}
    assert unguarded_faults == {size for size in sizes if size % 32 == 0}
    assert all(not r["guarded"] for r in section["rows"] if r["status"] == "fault")


# -- 4. the differential check --------------------------------------------------------------------


def test_the_differential_inputs_regenerate_from_the_recorded_seed(
    diff_rows: list[Row], regenerated: dict[int, cases.DiffCase]
) -> None:
    assert len(diff_rows) >= 10_000
    for row in diff_rows:
        case = regenerated[row["index"]]
        got = (case.batch, case.next_n, case.pattern, cases.lens_digest(case.lens))
        assert got == (row["batch"], row["next_n"], row["pattern"], row["input_digest"])


def test_the_kernel_faulted_exactly_on_domains_predicate(
    diff_rows: list[Row], regenerated: dict[int, cases.DiffCase]
) -> None:
    for row in diff_rows:
        assert row["predicate_fault"] == cases.fault_predicate(regenerated[row["index"]].lens)
        if row["unguarded"] in ("ok", "fault"):
            assert (row["unguarded"] == "fault") == row["predicate_fault"], row["index"]


def test_the_reference_model_still_computes_what_the_kernel_wrote(
    report: Row, diff_rows: list[Row], regenerated: dict[int, cases.DiffCase]
) -> None:
    num_sms = report["differential"]["num_sms"]
    sample = [
        row for row in diff_rows if row["model_fault"] or row["index"] % MODEL_SAMPLE_EVERY == 0
    ]
    for row in sample:
        result = reference.schedule(regenerated[row["index"]].lens, num_sms)
        assert result.faults == row["model_fault"], row["index"]
        if row["unguarded"] == "ok":
            assert cases.schedule_digest(result.schedule) == row["kernel_digest"], row["index"]


# -- 5. semantics and 6. cost ---------------------------------------------------------------------


def test_semantics_covers_zero_short_and_long_rows_with_next_n_1_and_2(report: Row) -> None:
    section = report["semantics"]
    assert {batch["next_n"] for batch in section["batches"]} == {1, 2}
    mixed = [r for r in section["rows"] if r["row_kinds"]["zero"] < sum(r["row_kinds"].values())]
    assert mixed and all(min(r["row_kinds"].values()) > 0 for r in mixed)
    assert all(r["deep_gemm_version"] == "2.5.0" for r in section["rows"])


def test_cost_rows_are_internally_consistent(report: Row) -> None:
    for row in report["cost"]["rows"]:
        assert row["guard_path"] == "fused"
        for mode in ("eager", "graph"):
            m = row[mode]
            assert m["added_us"] == pytest.approx(m["guarded_us"] - m["unguarded_us"], abs=2e-3)
            assert m["ratio"] == pytest.approx(m["guarded_us"] / m["unguarded_us"], abs=2e-3)
            clamp_added = m["clamp_guard_us"] - m["unguarded_us"]
            assert m["clamp_guard_added_us"] == pytest.approx(clamp_added, abs=2e-3)
    assert report["cost"]["counts"]["graph_target_us"] == tally.GRAPH_TARGET_US == 1.0


# -- the fused guard --------------------------------------------------------------------------


def test_every_guarded_row_records_the_path_it_took(report: Row, diff_rows: list[Row]) -> None:
    guarded = [
        r for name in ("seed_table", "capture") for r in report[name]["rows"] if r["guarded"]
    ]
    assert guarded and all(r["guard_path"] in ("fused", "clamp") for r in guarded)
    assert all(row["guard_path"] in ("fused", "clamp") for row in diff_rows)


def test_the_guards_table_is_the_real_kernels_on_clamped_lengths(diff_rows: list[Row]) -> None:
    # Three ways to the same table: the model, the real kernel on clamped lengths, the guard.
    for row in diff_rows:
        assert row["guarded_match"] is row["guarded_equals_kernel_on_clamped"] is True, row


def test_semantics_feeds_the_fused_schedule_to_the_logits_kernel(report: Row) -> None:
    for row in report["semantics"]["rows"]:
        assert row["fused_logits_identical"] is True, row["id"]


# -- 7. empty batches ---------------------------------------------------------------------------


def test_the_empty_batch_cases_are_the_declared_ones(report: Row) -> None:
    from runtime_guard._sm90.empty import empty_cases

    section = report["empty_batch"]
    assert section["cases"] == empty_cases()
    assert [r["id"] for r in section["rows"]] == [c["id"] for c in empty_cases()]


def test_both_builds_fault_on_an_empty_batch_unguarded_only(report: Row) -> None:
    rows = [r for r in report["empty_batch"]["rows"] if not r["logits"]]
    for row in rows:
        expect = "fault" if row["batch"] == 0 and not row["guarded"] else "ok"
        assert row["status"] == expect, row["id"]
    assert {r["build"] for r in rows if r["status"] == "fault"} == {"2.5.0", "2.6.1"}


def test_the_guard_returns_2_8_1s_empty_schedule(report: Row) -> None:
    num_sms = report["environment"]["num_sms"]
    empty = reference.schedule([], num_sms, guarded=True).schedule
    assert empty == [(0, 0)] * (num_sms + 1)
    digest = cases.schedule_digest(empty)
    guarded = [r for r in report["empty_batch"]["rows"] if r["batch"] == 0 and r["guarded"]]
    assert len(guarded) == 6
    for row in guarded:
        assert (row["digest"], row["shape"], row["dtype"]) == (
            digest,
            [num_sms + 1, 2],
            "torch.int32",
        ), row["id"]
        assert row["device"] == "cuda:0" and row["same_stream_device"] is True


def test_memcheck_names_the_empty_buffer_read_and_the_guard_is_clean(report: Row) -> None:
    for row in report["empty_batch"]["sanitizer"]:
        if row["guarded"]:
            assert tally.memory_errors(row) == 0 and row["worker_status"] == "ok", row["case"]
        else:
            assert set(row["printed_error_kinds"]) == {"Invalid __shared__ read of size 4 bytes"}
            assert "Access to 0x400 is out of bounds" in row["out_of_bounds"]


def test_the_logits_kernel_after_the_guard_refuses_without_losing_the_context(
    report: Row,
) -> None:
    logits = [r for r in report["empty_batch"]["rows"] if r["logits"]]
    assert logits and all("CUDA_ERROR_INVALID_VALUE" in r["logits_error"] for r in logits)
    assert all(r["context_survives"] is True for r in logits)


# -- 8. SGLang's DeepSeek-V4 indexer schedule ------------------------------------------------------


def test_sglangs_kernel_wrote_what_the_cpu_model_computes(report: Row) -> None:
    """Each recorded table of SGLang's own kernel is the model's on the case's lengths,
    rebuilt here from the case's name: the model, not only the GPU's comparison, is held."""
    num_sms = report["environment"]["num_sms"]
    rows = report["sglang"]["jit_rows"]
    assert [r["case"] for r in rows] == [c["id"] for c in sglang_section.jit_cases()]
    for row in rows:
        lens = sglang_section.case_lens({"id": row["case"], "batch": row["batch"]})
        model = sglang_section.jit_schedule(lens, num_sms)
        assert (row["status"], row["digest"]) == ("ok", cases.schedule_digest(model)), row["case"]


def test_the_sglang_capture_ran_every_decode_size_and_deep_gemm_faulted_on_the_multiples_of_32(
    report: Row,
) -> None:
    num_sms = report["environment"]["num_sms"]
    rows = report["sglang"]["rows"]
    sizes = sglang_section.decode_capture_sizes(report["sglang"]["config"]["max_bs"])
    for path in sglang_section.PATHS:
        assert [r["size"] for r in rows if r["path"] == path] == sizes, path
    faulted = {r["size"] for r in rows if r["status"] == "fault"}
    assert {r["path"] for r in rows if r["status"] == "fault"} == {"deep_gemm"}
    assert faulted == {s for s in sizes if s % 32 == 0}
    assert faulted == {s for s in sizes if cases.fault_predicate([[0]] * s)}
    for row in rows:
        if row["status"] == "ok":  # replayed: the table is the model's on all-zero lengths
            model = sglang_section.jit_schedule(sglang_section.capture_lens(row["size"]), num_sms)
            assert (row["stage"], row["lens_max"]) == ("replay", 0), row
            assert row["digest"] == cases.schedule_digest(model), row


def test_memcheck_finds_the_read_past_prefix_sum_in_deep_gemms_kernel_only(report: Row) -> None:
    by_path = {row["path"]: row for row in report["sglang"]["sanitizer"]}
    assert tally.memory_errors(by_path["jit"]) == 0 and by_path["jit"]["worker_status"] == "ok"
    assert set(by_path["jit"]["cases"]) == set(sglang_section.MEMCHECK_JIT_CASES)
    deep_gemm = by_path["deep_gemm"]
    assert deep_gemm["printed_error_kinds"] == {"Invalid __shared__ read of size 4 bytes": 20}
    assert OUT_OF_BOUNDS_READ in deep_gemm["out_of_bounds"]


def test_section_8_ran_the_wheels_files(report: Row) -> None:
    pieces, builds = report["pieces"], report["sglang"]["builds"]
    assert (
        builds["jit"]["header_sha256"]
        == pieces["sglang"]["files_sha256"][sglang_section.JIT_HEADER]
    )
    assert builds["deep_gemm"]["header_sha256"] == pieces["sgl_scheduler"]["header_sha256"]
    # sgl-deep-gemm 0.2.3.post2 ships the scheduler header that section 4 measured
    assert pieces["sgl_scheduler"]["header_sha256"] == pieces["scheduler"]["header_sha256"]
