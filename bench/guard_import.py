"""Wall-clock cost of ``import runtime_guard`` in a fresh interpreter.

Runs ``python -c pass`` and ``python -c "import runtime_guard"`` alternately, several times
each, and prints both medians, their difference (the import's cost) and their ratio. Exits 1
when the difference exceeds the budget (50 ms by default) or the import loads torch, libcst
or z3.

    python bench/guard_import.py [--runs 21] [--budget-ms 50]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

HEAVY_MODULES = ("torch", "libcst", "z3")


def wall_time(python: str, code: str) -> float:
    start = time.perf_counter()
    subprocess.run([python, "-c", code], check=True)
    return time.perf_counter() - start


def heavy_modules_loaded(python: str) -> list[str]:
    code = f"import sys, runtime_guard; print(*[m for m in {HEAVY_MODULES!r} if m in sys.modules])"
    done = subprocess.run([python, "-c", code], check=True, capture_output=True, text=True)
    return done.stdout.split()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21, help="runs of each command")
    parser.add_argument("--budget-ms", type=float, default=50.0)
    parser.add_argument("--python", default=sys.executable, help="interpreter to measure")
    args = parser.parse_args(argv)

    wall_time(args.python, "import runtime_guard")  # warm the filesystem and bytecode caches
    baseline, guarded = [], []
    for _ in range(args.runs):
        baseline.append(wall_time(args.python, "pass"))
        guarded.append(wall_time(args.python, "import runtime_guard"))
    base_ms = statistics.median(baseline) * 1000
    guard_ms = statistics.median(guarded) * 1000
    cost_ms = guard_ms - base_ms
    heavy = heavy_modules_loaded(args.python)

    print(f"python -c pass                    median {base_ms:6.1f} ms  ({args.runs} runs)")
    print(f"python -c 'import runtime_guard'  median {guard_ms:6.1f} ms  ({args.runs} runs)")
    print(
        f"import cost {cost_ms:.1f} ms (budget {args.budget_ms:g} ms), ratio {guard_ms / base_ms:.2f}x"
    )
    print(f"heavy modules loaded: {', '.join(heavy) or 'none'}")
    return 0 if cost_ms <= args.budget_ms and not heavy else 1


if __name__ == "__main__":
    sys.exit(main())
