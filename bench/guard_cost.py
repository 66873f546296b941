"""What the guard costs per DeepGEMM metadata call, against DeepGEMM's own kernel, on SM90.

Needs an SM90 GPU and the DeepGEMM pieces ``python devtools/prepare_sm90.py`` writes to
``.sm90/``. Runs the cost section of ``python -m runtime_guard.verify_sm90`` (the real
DeepGEMM 2.6.1 scheduler kernel, unguarded, behind the fused guard ``install()`` gives it,
and behind the plain clamp guard, in the same process) and prints, per batch size, the
microseconds each adds and the ratio to the unguarded call, in CUDA-graph replay and eager.
Exits 1 when the fused guard adds 1 µs or more in graph replay (the target).

    python bench/guard_cost.py [--pieces .sm90] [--keep report.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_US = 1.0


def run_cost_section(pieces: Path, out: Path) -> dict:
    command = [
        sys.executable,
        "-m",
        "runtime_guard.verify_sm90",
        "--sections",
        "cost",
        "--pieces",
        str(pieces),
        "--out",
        str(out),
    ]
    subprocess.run(command, cwd=ROOT, check=False)
    if not out.exists():
        raise SystemExit("error: verify_sm90 wrote no report (see its output above)")
    return json.loads(out.read_text())


def print_table(section: dict) -> float:
    worst = float("-inf")
    header = f"{'batch':>8} {'mode':>6} {'DeepGEMM':>9} {'fused':>8} {'added':>7} {'ratio':>6}"
    print(header + f" {'clamp':>8} {'added':>7} {'ratio':>6}   (µs per call, medians)")
    for row in section["rows"]:
        if row["status"] != "ok":
            print(f"{row['id']:>8}: {row['status']} {row.get('error', '')}")
            worst = float("inf")
            continue
        for mode in ("graph", "eager"):
            m = row[mode]
            clamp_ratio = m["clamp_guard_us"] / m["unguarded_us"]
            print(
                f"{row['id']:>8} {mode:>6} {m['unguarded_us']:9.3f} {m['guarded_us']:8.3f} "
                f"{m['added_us']:7.3f} {m['ratio']:6.3f} {m['clamp_guard_us']:8.3f} "
                f"{m['clamp_guard_added_us']:7.3f} {clamp_ratio:6.3f}"
            )
        worst = max(worst, row["graph"]["added_us"])
    return worst


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pieces", type=Path, default=ROOT / ".sm90")
    parser.add_argument("--keep", type=Path, help="also write the JSON report here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="guard-cost-") as scratch:
        out = args.keep.resolve() if args.keep else Path(scratch) / "cost.json"
        report = run_cost_section(args.pieces.resolve(), out)
    if "cost" not in report or "rows" not in report["cost"]:
        print(f"error: the cost section failed: {report.get('cost', {}).get('error', '?')}")
        return 1
    worst = print_table(report["cost"])
    met = worst < TARGET_US
    print(
        f"fused guard, graph replay: at most {worst:.3f} µs added per call "
        f"(target < {TARGET_US} µs): {'met' if met else 'NOT met'}"
    )
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
