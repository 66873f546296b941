"""The results part of docs/zero-length-probe.md, rendered from the probe's JSON report.

    python -m probe.render docs/probe-report.json

prints the Markdown between the ``results`` markers of the page; the CPU test checks the
committed page holds exactly this rendering of the committed report.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

BEGIN = "<!-- results:begin (python -m probe.render docs/probe-report.json) -->"
END = "<!-- results:end -->"

Row = dict[str, Any]


def table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += [
        "| " + " | ".join(str(cell).replace("|", "\\|") for cell in row) + " |" for row in rows
    ]
    return "\n".join(lines)


def rows_text(rows: Sequence[int], limit: int = 6) -> str:
    shown = ", ".join(str(r) for r in rows[:limit])
    return shown + (f", … ({len(rows)} rows)" if len(rows) > limit else "")


def cell(result: Row | None) -> str:
    """One run: its outcome and the evidence for it."""
    if result is None:
        return "–"
    kind = result["outcome"]
    row = result.get("row") or {}
    if kind == "hang":
        return f"**hang** (killed after {result['seconds']} s)"
    if kind == "fault":
        if result.get("memory_errors"):
            first = (result.get("first_error") or ["?"])[0]
            return f"**fault**: {result['sanitizer_errors']} memcheck errors; {first[:110]}"
        if row.get("error"):
            return f"**fault**: {row['error'][:110]}"
        return f"**fault**: process ended ({result['ended']}, code {result['returncode']})"
    if kind == "rejected":
        api = (
            f" (memcheck: {result['sanitizer_errors']} API error)"
            if result.get("sanitizer_errors")
            else ""
        )
        return f"rejected: {row.get('error', '')[:110]}{api}"
    if kind == "nan_inf":
        from probe.predicates import nonfinite_kinds

        kinds = ", ".join(nonfinite_kinds(row))
        text = f"**NaN/Inf** ({kinds}) in rows {rows_text(result.get('nonfinite_rows', []))}"
        extra = []
        if kinds.startswith("lse") and row.get("zero_rows_out") == "zero":
            extra.append("their out is 0")
        if "max_diff_vs_reference" in row and not row.get("wrong_rows"):
            extra.append(f"other rows = reference ({row['max_diff_vs_reference']:.2g})")
        return text + (f"; {'; '.join(extra)}" if extra else "")
    if kind == "wrong":
        if "checks" in row:
            return "**wrong**: failed " + ", ".join(row.get("wrong_rows", []))
        if row.get("matches_model") is False:
            return "**wrong**: schedule differs from the model"
        return (
            f"**wrong**: rows {rows_text(row.get('wrong_rows', []))} "
            f"(max diff {row.get('max_diff_vs_reference', 0):.3g})"
        )
    extra = []
    if "checks" in row:
        extra.append("passed " + ", ".join(row["checks"]))
    if "zero_rows_out" in row:
        extra.append(f"zero rows → {row['zero_rows_out']}")
    lse = row.get("lse_nonfinite", {}).get("-inf")
    if lse:
        extra.append("lse −inf on the zero rows")
    if "max_diff_vs_reference" in row:
        extra.append(f"others = reference ({row['max_diff_vs_reference']:.2g})")
    if row.get("matches_model"):
        extra.append("= model")
    if "gap_vs_fp32_reference" in row:
        extra.append(f"gap {row['gap_vs_fp32_reference']:.1e}")
    return "ok" + (f" ({'; '.join(extra)})" if extra else "")


def environment(report: Row) -> str:
    env = report["environment"]
    rows = [
        (
            "GPU",
            f"{env['gpu']} (compute capability {env['compute_capability']}, {env['num_sms']} SMs)",
        ),
        ("driver", env["driver"]),
        ("CUDA", f"{env['cuda_runtime_torch']} (torch's runtime); nvcc: {env['nvcc']}"),
        ("torch / Triton / Python", f"{env['torch']} / {env.get('triton')} / {env['python']}"),
        ("compute-sanitizer", env["compute_sanitizer"]),
    ]
    runs = report.get("runs") or [{**report, "kernels": None}]
    for number, run in enumerate(runs, 1):
        which = f" (kernels: {', '.join(run['kernels'])})" if run.get("kernels") else ""
        rows.append(
            (
                f"run {number}" if len(runs) > 1 else "run",
                f"`{run['command']}`, {run['wall_seconds']} s, started {run['started_utc']}"
                + which,
            )
        )
    return table(("", ""), rows)


def _nodes(row: Row) -> str:
    plain, guarded = row.get("plain_graph_nodes"), row.get("guarded_graph_nodes")
    if plain is None or guarded is None:
        return "not counted"
    return f"{plain} → {guarded}"


def guard_cost(cost: Row) -> str:
    """The guards' cost table (bench/sink_guard_cost.py, the same device run)."""
    rows = [
        (
            f"`{r['sink']}`",
            r["batch"],
            f"`{r['path']}`" if r.get("path") else "",
            f"{r['plain_replay_us']:.2f} → {r['guarded_replay_us']:.2f} ({r['added_replay_us']:+.2f})",
            f"{r['plain_eager_us']:.2f} → {r['guarded_eager_us']:.2f} ({r['added_eager_us']:+.2f})",
            _nodes(r),
        )
        for r in cost["rows"]
    ]
    rounds = cost.get("rounds")
    head = (
        f"`python bench/sink_guard_cost.py` in the same device run ({cost['gpu']}, torch "
        f"{cost['torch']}): per call, {cost['per_graph']} calls per graph replayed "
        f"{cost['replays']} times, and {cost['eager_calls']} eager calls; "
        + (f"the median of {rounds} alternated rounds. " if rounds else "best of two. ")
        + f"Target: under {cost['target_added_replay_us']:g} µs added per call in replay, at every "
        "batch. "
        "Graph nodes: what one call captures into a CUDA graph."
    )
    parts = [
        head,
        table(
            (
                "sink",
                "batch",
                "guard path",
                "replay µs: unguarded → guarded",
                "eager µs: unguarded → guarded",
                "graph nodes",
            ),
            rows,
        ),
    ]
    sinks = cost.get("sinks")
    if sinks:
        parts.append(
            table(
                (
                    "sink",
                    "added per call, replay (median over batches)",
                    "eager (median)",
                    "target met",
                ),
                [
                    (
                        f"`{name}`",
                        (
                            f"{s['median_added_replay_us']:+.2f} µs (at most "
                            f"{s['max_added_replay_us']:+.2f}, {s['batches']} batches)"
                        ),
                        f"{s['median_added_eager_us']:+.2f} µs",
                        "yes" if s["meets_target"] else "**no**",
                    )
                    for name, s in sinks.items()
                ],
            )
        )
    return "\n\n".join(parts)


def summary(report: Row) -> str:
    rows = [
        (
            f"`{k['name']}`",
            k["title"],
            f"`{k['wheel']}` (`{k['wheel_sha256'][:16]}…`)",
            k["predicates"]["summary"],
        )
        for k in report["kernels"]
    ]
    return table(("kernel", "what", "wheel (sha256)", "measured predicate"), rows)


def kernel_section(kernel: Row, modes: Sequence[str]) -> str:
    facts = table(
        ("", ""),
        [
            ("source", kernel["source"]),
            ("loaded", kernel["load"]),
            ("inputs", kernel["inputs"]),
            ("checked", kernel["outputs"]),
            ("wrong means", kernel["reference"]),
        ],
    )
    header = ("case", "B", "next_n", "zero rows", *modes)
    rows = [
        (c["case"], c["batch"], c["next_n"], c["zero_rows"], *(cell(c.get(m)) for m in modes))
        for c in kernel["cases"]
    ]
    preds = kernel["predicates"]
    lines = [f"Measured: **{preds['summary']}**."]
    if "nan_inf_rows_are_the_zero_rows" in preds:
        exact = "exactly" if preds["nan_inf_rows_are_the_zero_rows"] else "not exactly"
        kinds = ", ".join(preds.get("nan_inf_kinds", []))
        lines.append(f"The NaN/Inf rows ({kinds}) are {exact} the zero-length rows.")
    return f"{facts}\n\n{table(header, rows)}\n\n{' '.join(lines)}"


def not_run(report: Row) -> str:
    return table(
        ("kernel", "why it was not run here"), [(r["kernel"], r["why"]) for r in report["not_run"]]
    )


def render(report: Row) -> str:
    """The results block: every number comes from ``report``."""
    parts = [("Environment", environment(report)), ("Measured predicates", summary(report))]
    for kernel in report["kernels"]:
        parts.append(
            (f"`{kernel['name']}`: {kernel['title']}", kernel_section(kernel, report["modes"]))
        )
    if report.get("guard_cost"):
        parts.append(("What the guards cost", guard_cost(report["guard_cost"])))
    parts.append(("Kernels of the public reports not run here", not_run(report)))
    body = "\n\n".join(f"### {title}\n\n{text}" for title, text in parts)
    return f"{BEGIN}\n\n{body}\n\n{END}"


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m probe.render REPORT.json", file=sys.stderr)
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
