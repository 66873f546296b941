"""The results part of docs/sm90-verification.md, rendered from the JSON report.

    python -m runtime_guard._sm90.render docs/sm90-report.json

prints the Markdown that sits between the ``results`` markers of the doc; the CPU test
checks that the committed doc holds exactly this rendering of the committed report.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from runtime_guard._sm90 import cases

BEGIN = "<!-- results:begin (python -m runtime_guard._sm90.render docs/sm90-report.json) -->"
END = "<!-- results:end -->"

Row = dict[str, Any]


def table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def yes(flag: object) -> str:
    return "yes" if flag else "**no**"


def environment(report: Row) -> str:
    env = report["environment"]
    return table(
        ("", ""),
        [
            (
                "GPU",
                (
                    f"{env['gpu']} (compute capability {env['compute_capability']}, "
                    f"{env['num_sms']} SMs)"
                ),
            ),
            ("driver", env["driver"]),
            ("CUDA", f"{env['cuda_runtime_torch']} (torch's runtime); nvcc: {env['nvcc']}"),
            ("torch / Python", f"{env['torch']} / {env['python']}"),
            ("compute-sanitizer", env["compute_sanitizer"]),
            (
                "run",
                (
                    f"`{report['command']}`, {report['wall_seconds']} s, "
                    f"started {report['started_utc']}"
                ),
            ),
        ],
    )


def pieces(report: Row) -> str:
    rows = []
    for role, use in (
        ("scheduler", "SM90 metadata kernel, built by verify_sm90"),
        ("semantics", "`deep_gemm` package (logits kernel, JIT)"),
    ):
        piece = report["pieces"][role]
        rows.append(
            (
                use,
                f"`{piece['requirement']}` (`{piece['wheel_sha256'][:16]}…`)",
                piece["deep_gemm_version"],
                f"`{piece['header']}`",
                f"`{piece['header_sha256'][:16]}…`",
            )
        )
    return table(("piece", "wheel (sha256)", "DeepGEMM", "scheduler header", "header sha256"), rows)


def verdict(report: Row) -> str:
    return table(
        ("section", "passed", "seconds"),
        [
            (name, yes(passed), report[name].get("seconds"))
            for name, passed in report["verdict"].items()
        ],
    )


def seed_table(report: Row) -> str:
    by_case = {(r["batch"], r["fill"], r["guarded"]): r for r in report["seed_table"]["rows"]}

    def outcome(row: Row) -> str:
        if row["status"] == "fault":
            return f"fault: {row['error'].split(': ', 1)[-1]}"
        path = f" ({row['guard_path']})" if "guard_path" in row else ""
        return f"{row['status']}, schedule = model: {yes(row.get('schedule_match'))}{path}"

    rows = [
        (b, f, outcome(by_case[(b, f, False)]), outcome(by_case[(b, f, True)]))
        for b, f in cases.SEED_SHAPES
    ]
    return table(("B", "fill", "unguarded", "runtime_guard in front"), rows)


def sanitizer(report: Row) -> str:
    rows = []
    for row in report["sanitizer"]["rows"]:
        first = " / ".join(row["first_error"][:1] + row["out_of_bounds"][:1]) or "–"
        rows.append((row["case"], row["errors"], first, row["worker_status"]))
    return table(("memcheck on", "ERROR SUMMARY", "first error", "process"), rows)


def capture(report: Row) -> str:
    section, counts = report["capture"], report["capture"]["counts"]
    config = section["config"]
    faults = sorted(r["size"] for r in section["rows"] if r["status"] == "fault")
    return "\n".join(
        [
            (
                f"Config: max_num_seqs {config['max_num_seqs']}, max_num_batched_tokens "
                f"{config['max_num_batched_tokens']}, max capture size "
                f"{config['max_cudagraph_capture_size']}, no speculative decoding: "
                f"{counts['sizes']} sizes, {counts['multiples_of_32']} of them multiples of 32."
            ),
            "",
            table(
                ("", "count"),
                [
                    ("unguarded: faulted at replay", counts["unguarded_faults"]),
                    (
                        "unguarded: captured and replayed (schedule = model)",
                        (
                            f"{counts['unguarded_captured_and_replayed']} "
                            f"({counts['unguarded_schedule_matches']})"
                        ),
                    ),
                    (
                        "guarded: captured and replayed (schedule = model)",
                        f"{counts['guarded_captured_and_replayed']} ({counts['guarded_schedule_matches']})",
                    ),
                    ("guarded: captured call on the fused path", counts["guarded_fused"]),
                ],
            ),
            "",
            "Faulting sizes: " + ", ".join(map(str, faults)) + ".",
        ]
    )


def differential(report: Row) -> str:
    c = report["differential"]["counts"]
    return table(
        ("", "count"),
        [
            ("random inputs (next_n 1 / 2)", f"{c['cases']} ({c['next_n_1']} / {c['next_n_2']})"),
            ("inputs whose every read length is 0", c["zero_lengths_everywhere"]),
            (
                "model predicts a fault (= the predicate of docs/hazards/ZL001.md)",
                f"{c['model_faults']} ({c['model_agrees_with_predicate']} of {c['cases']} agree)",
            ),
            (
                "predicted non-faulting: ran, schedule identical to the model",
                f"{c['non_faulting_ran_ok']}, {c['schedule_matches']} of {c['non_faulting_cases']}",
            ),
            ("unexpected faults", c["unexpected_faults"]),
            (
                "predicted faults run on the raw kernel (one process per (B, next_n) class)",
                (
                    f"{c['predicted_faults_run']} of {c['predicted_fault_classes']} classes, "
                    f"{c['predicted_faults_faulted']} faulted"
                ),
            ),
            ("predicted faults not run (same class as a run one)", c["predicted_faults_not_run"]),
            (
                "guard's table = model on clamped lengths",
                f"{c['guarded_matches']} of {c['cases']}",
            ),
            ("guard's table computed by the fused kernel", f"{c['guarded_fused']} of {c['cases']}"),
            (
                "guard's table = the real kernel's on clamped lengths",
                f"{c['guarded_equals_kernel_on_clamped']} of {c['cases']}",
            ),
        ],
    )


def semantics(report: Row) -> str:
    section = report["semantics"]
    rows = []
    for row in section["rows"]:
        kinds = row.get("row_kinds", {})
        rows.append(
            (
                row["id"],
                f"{kinds.get('zero')}/{kinds.get('short')}/{kinds.get('long')}",
                row.get("valid_elements"),
                yes(row.get("schedules_differ")),
                yes(row.get("logits_identical")),
                yes(row.get("fused_logits_identical")),
                "–"
                if row.get("gap_vs_fp32_reference") is None
                else f"{row['gap_vs_fp32_reference']:.1e}",
                yes(row.get("install_gives_clamped_schedule")),
                yes(row["raw_schedule_equals_2_6_1_kernel"])
                if "raw_schedule_equals_2_6_1_kernel" in row
                else "– (2.6.1 faults)",
            )
        )
    memcheck = "; ".join(
        f"{r['case']}: ERROR SUMMARY {r['errors']} (process {r['worker_status']})"
        for r in section["sanitizer"]
    )
    header = (
        "batch",
        "rows 0/short/long",
        "valid logits",
        "schedules differ",
        "logits identical",
        "fused schedule: logits identical",
        "gap vs fp32",
        "install() clamps",
        "raw schedule = 2.6.1 kernel's",
    )
    return f"{table(header, rows)}\n\ncompute-sanitizer memcheck on the logits kernel, {memcheck}."


def cost(report: Row) -> str:
    header = (
        "batch",
        "unguarded",
        "guarded (fused)",
        "added",
        "ratio",
        "clamp guard",
        "added",
        "fused kernel alone",
        "clamp alone",
    )
    parts = []
    for mode, title in (("graph", "In CUDA-graph replay"), ("eager", "Eager (host wall time)")):
        rows = []
        for row in report["cost"]["rows"]:
            m = row[mode]
            rows.append(
                (
                    f"{row['id']} ({row['guard_path']})",
                    m["unguarded_us"],
                    m["guarded_us"],
                    m["added_us"],
                    m["ratio"],
                    m["clamp_guard_us"],
                    m["clamp_guard_added_us"],
                    m["fused_schedule_us"],
                    m["clamp_context_lens_us"],
                )
            )
        parts += [f"{title}:", "", table(header, rows), ""]
    counts = report["cost"]["counts"]
    worst = counts["max_graph_added_us"]
    faster = (
        " (negative: the guarded call is the faster one)" if worst is not None and worst < 0 else ""
    )
    parts.append(
        f"Medians in microseconds per call. Target: under {counts['graph_target_us']} µs added "
        f"in graph replay; the most added at any batch size was {worst} µs{faster}: "
        f"{'met' if report['cost']['passed'] else '**not met**'}."
    )
    return "\n".join(parts)


def empty_batch(report: Row) -> str:
    section = report["empty_batch"]

    def outcome(row: Row | None) -> str:
        if row is None:
            return "–"
        if row["status"] != "ok":
            return f"{row['status']}: {(row.get('error') or '').split(': ', 1)[-1][:120]}"
        what = "zero table" if row["batch"] == 0 else "schedule = model"
        path = f" ({row['guard_path']})" if "guard_path" in row else ""
        shape = "×".join(str(n) for n in row.get("shape", []))
        return f"ok, {shape} {row.get('dtype')}, {what}: {yes(row.get('schedule_match'))}{path}"

    by_case = {
        (r["build"], r["next_n"], r["batch"], r["guarded"]): r
        for r in section["rows"]
        if not r["logits"]
    }
    keys = sorted({k[:3] for k in by_case})
    rows = [
        (f"DeepGEMM {b}", n, batch, outcome(by_case.get((b, n, batch, False))),
         outcome(by_case.get((b, n, batch, True))))
        for b, n, batch in keys
    ]  # fmt: skip
    parts = [table(("build", "next_n", "B", "unguarded", "runtime_guard in front"), rows)]

    def logits_outcome(row: Row) -> str:
        if "logits_shape" in row:
            return "ran, logits " + "×".join(map(str, row["logits_shape"]))
        if row.get("logits_error"):
            alive = "the context survives" if row.get("context_survives") else "**context lost**"
            return f"refused: {row['logits_error'][:140]} ({alive})"
        return "–"

    logits = [(r["id"], outcome(r), logits_outcome(r)) for r in section["rows"] if r["logits"]]
    if logits:
        parts.append(table(("logits kernel after the guard", "schedule", "logits"), logits))
    memcheck = []
    for row in section["sanitizer"]:
        first = " / ".join(row["first_error"][:1] + row["out_of_bounds"][:1]) or "–"
        memcheck.append((row["case"], row["errors"], first, row["worker_status"]))
    if memcheck:
        header = ("memcheck on", "ERROR SUMMARY", "first error", "process")
        parts.append(table(header, memcheck))
    return "\n\n".join(parts)


def sglang(report: Row) -> str:
    section, counts = report["sglang"], report["sglang"]["counts"]
    config, builds = section["config"], section["builds"]

    def outcome(row: Row) -> str:
        if row["status"] == "fault":
            return f"fault: {row['error'].split(': ', 1)[-1][:120]}"
        if row["status"] != "ok":
            return f"{row['status']}: {str(row.get('error'))[:120]}"
        match = yes(row.get("model_match")) if "model_match" in row else "–"
        return f"ok, table = model: {match}"

    parts = [
        (
            f"SGLang's own schedule kernel: `{builds['jit']['header']}` "
            f"(`{builds['jit']['header_sha256'][:16]}…`), its device code "
            f"(`{builds['jit']['kernels_sha256'][:16]}…`) built with "
            f"{', '.join('`' + s + '`' for s in builds['jit']['sources'])}. "
            f"DeepGEMM's: `{builds['deep_gemm']['header']}` "
            f"(`{builds['deep_gemm']['header_sha256'][:16]}…`) from "
            f"`{builds['deep_gemm']['wheel']}`, with that wheel's own include closure. "
            f"Both called with block size {config['compressed_page_size']} "
            f"(page size {config['page_size']} // 4)."
        ),
        table(
            ("SGLang's schedule kernel on", "outcome"),
            [(r["case"], outcome(r)) for r in section["jit_rows"]],
        ),
    ]
    summary = [
        (
            (
                "decode capture sizes (`--cuda-graph-max-bs "
                f"{config['max_bs']}`, sequence lengths {config['seq_len_fill_value']})"
            ),
            counts["sizes"],
        ),
        ("of them multiples of 32", counts["multiples_of_32"]),
        ("DeepGEMM's kernel: faults", counts["deep_gemm_faults"]),
        (
            "DeepGEMM's kernel: faults exactly where predicted",
            yes(counts["deep_gemm_faults_exactly_predicted"]),
        ),
        ("DeepGEMM's kernel: replayed, table = model", counts["deep_gemm_replayed_match_model"]),
        ("SGLang's kernel: replayed, table = model", counts["jit_replayed_match_model"]),
        ("every length the Triton kernel gave was 0", yes(counts["lengths_all_zero"])),
    ]
    parts.append(table(("captured decode batch", ""), summary))
    faults = [r for r in section["rows"] if r["status"] == "fault"]
    if faults:
        sizes = ", ".join(str(r["size"]) for r in faults)
        first = faults[0]["error"].split(": ", 1)[-1][:160]
        parts.append(f"DeepGEMM's kernel faulted at sizes {sizes}: {first}")
    memcheck = []
    for row in section["sanitizer"]:
        first = " / ".join(row["first_error"][:1] + row["out_of_bounds"][:1]) or "–"
        memcheck.append((row["path"], row["case"], row["errors"], first, row["worker_status"]))
    if memcheck:
        header = ("memcheck on", "cases", "ERROR SUMMARY", "first error", "process")
        parts.append(table(header, memcheck))
    return "\n\n".join(parts)


def sources(report: Row) -> str:
    return table(
        ("runtime_guard source", "sha256"),
        [(f"`{path}`", f"`{digest}`") for path, digest in report["runtime_guard_sources"].items()],
    )


def render(report: Row) -> str:
    """The results block: every number comes from ``report``."""
    parts = [
        ("Environment", environment),
        ("Pieces", pieces),
        ("Verdict", verdict),
        ("2. The seed's table (each case in its own process)", seed_table),
        ("2. compute-sanitizer memcheck, B = 32, all lengths 0", sanitizer),
        ("3. vLLM's FULL decode capture sizes in a CUDA graph", capture),
        ("4. runtime_guard.reference and the guard against the kernel", differential),
        ("5. Semantics: DeepGEMM 2.5.0 logits with raw, clamped and fused schedules", semantics),
        ("6. Cost of the guard", cost),
        ("7. Empty batches (B = 0) and a B = 1 control, both builds", empty_batch),
        ("8. SGLang 0.5.23's DeepSeek-V4 indexer schedule", sglang),
        ("runtime_guard at the time of the run", sources),
    ]
    parts = [(title, section) for title, section in parts if _present(report, section)]
    body = "\n\n".join(f"### {title}\n\n{section(report)}" for title, section in parts)
    return f"{BEGIN}\n\n{body}\n\n{END}"


def _present(report: Row, section: Any) -> bool:
    """Sections the report has (a report made before sections 7 and 8 existed renders as it
    did)."""
    if section is empty_batch:
        return "empty_batch" in report
    return section is not sglang or "sglang" in report


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m runtime_guard._sm90.render REPORT.json", file=sys.stderr)
        return 2
    path = Path(args[0])
    try:
        report = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        print(f"error: {path}: {error}", file=sys.stderr)
        return 1
    print(render(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
