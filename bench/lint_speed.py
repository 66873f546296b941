"""How fast is `zerolint check` on real serving code, against Ruff measured in the same rounds.

Trees: the package of a serving wheel from PyPI, unpacked into a scratch copy so neither
tool's cache from earlier runs is around: ``--tree vllm==0.27.1`` (the default; 2,360
files), ``vllm==0.33.0`` (3,231 files), ``sglang==0.5.23`` (4,719 files). ``--tree`` may be
given more than once.

Cases, each timed for both tools in every round (alternating, so drift hits both):

* cold:  ``zerolint check --no-cache`` vs ``ruff check --no-cache`` (default rules);
* warm:  a second run on the unchanged tree, each tool with its own cache;
* one:   ``zerolint check --force-exclude FILE`` on one file vs ``ruff check
  --force-exclude FILE`` (pre-commit's ``zerolint-changed-only`` hook), both warm;
* hook:  ``zerolint check --force-exclude --touching FILE``, the default pre-commit hook:
  the project-wide analysis, findings whose path touches FILE; warm.

zerolint runs as an installed package does, with its bytecode cached (a first, untimed
run writes it; ``PYTHONDONTWRITEBYTECODE`` is dropped for its runs). Every rule the
project ships is on with ``--all-rules`` (``--select ALL --ignore ZL920``; ``--select
CODES`` for some; the default selection otherwise). Prints the median wall time of each case, the ratio zerolint/ruff, each
tool's own peak memory, zerolint's phases (its ``--timings``) and where a cold run spends
its time per parsed file, and whether issue #20's targets are met: cold <= 0.5x Ruff,
warm <= 0.2x Ruff's cached run, the hook < 0.3 s, peak memory <= 200 MB.

    python bench/lint_speed.py [--rounds 5] [--tree vllm==0.33.0 --tree sglang==0.5.23]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from devtools.wheels import HOOK_FILE, serving_tree

TARGETS = {"cold": 0.5, "warm": 0.2}
HOOK_SECONDS = 0.3
PEAK_MB = 200


def ruff_binary() -> str:
    here = Path(sys.executable).parent / "ruff"
    found = str(here) if here.exists() else shutil.which("ruff")
    if not found:
        sys.exit("ruff is not installed (pip install ruff)")
    return found


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, int, str]:
    """Wall seconds, this child's own peak RSS in KiB, and its stderr."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read().decode(errors="replace")
    if proc.returncode not in (0, 1):
        sys.exit(f"{' '.join(cmd)} failed ({proc.returncode}): {stderr.strip()}")
    return elapsed, usage.ru_maxrss, stderr


def clear_caches(tree: Path) -> None:
    for name in (".zerolint_cache", ".ruff_cache"):
        shutil.rmtree(tree / name, ignore_errors=True)


def bench_tree(requirement: str, rounds: int, select: list[str]) -> bool:
    source, package = serving_tree(requirement)
    scratch = Path(tempfile.mkdtemp(prefix="zerolint-bench-"))
    tree = scratch / "tree"
    shutil.copytree(source / package, tree / package)
    ruff = ruff_binary()
    zl = [sys.executable, "-m", "zerolint", "check", "-q", "--color", "never", *select]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    hook_file = HOOK_FILE[package]
    files = sum(1 for _ in (tree / package).rglob("*.py"))
    print(f"{requirement} tree: {files} files; {os.cpu_count()} cores, Python {sys.version[:6]}")

    cases = ("cold", "warm", "one", "hook")
    times: dict[str, list[float]] = {f"{t} {c}": [] for t in ("zl", "ruff") for c in cases}
    peaks: dict[str, list[int]] = {"zl": [], "ruff": []}
    phases: list[dict[str, float]] = []
    per_file: dict[str, list[float]] = {}
    try:
        timed([*zl, "--no-cache", package], tree, env)  # writes zerolint's bytecode
        for _ in range(rounds):
            clear_caches(tree)
            t, peak, err = timed([*zl, "--no-cache", "--timings", package], tree, env)
            times["zl cold"].append(t)
            peaks["zl"].append(peak)
            phases.append({k: float(v) for k, v in re.findall(r"(\w+)=([0-9.]+)s", err)})
            for shown, parse, analyse in re.findall(
                r"zerolint: parsed (\S+) parse=([0-9.]+)s analyse=([0-9.]+)s", err
            ):
                per_file.setdefault(shown, []).append(float(parse) + float(analyse))
            t, peak, _ = timed([ruff, "check", "--no-cache", "-q", package], tree, env)
            times["ruff cold"].append(t)
            peaks["ruff"].append(peak)
            # Fill both caches, then time the second, unchanged run.
            timed([*zl, package], tree, env)
            timed([ruff, "check", "-q", package], tree, env)
            times["zl warm"].append(timed([*zl, package], tree, env)[0])
            times["ruff warm"].append(timed([ruff, "check", "-q", package], tree, env)[0])
            one = ["--force-exclude", hook_file]
            timed([*zl, *one], tree, env)  # its own file set: a first run fills its entries
            times["zl one"].append(timed([*zl, *one], tree, env)[0])
            times["ruff one"].append(timed([ruff, "check", "-q", *one], tree, env)[0])
            timed([*zl, "--force-exclude", "--touching", hook_file], tree, env)
            hook = timed([*zl, "--force-exclude", "--touching", hook_file], tree, env)[0]
            times["zl hook"].append(hook)
            times["ruff hook"].append(times["ruff one"][-1])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"rounds: {rounds} (medians, wall seconds)")
    for case in cases:
        z, r = med[f"zl {case}"], med[f"ruff {case}"]
        print(f"  {case:>4}: zerolint {z:.3f}  ruff {r:.3f}  ratio {z / r:.2f}")
    for key in ("discover", "prescan", "imports", "scan", "index", "paths", "judge"):
        values = [p[key] for p in phases if key in p]
        if values:
            print(f"  zerolint {key}: {statistics.median(values):.3f} s")
    if per_file:
        print("  zerolint per parsed file (parse + analyse, median s):")
        for shown, secs in sorted(per_file.items(), key=lambda kv: -statistics.median(kv[1])):
            print(f"    {statistics.median(secs):.3f}  {shown}")
    zl_peak, ruff_peak = max(peaks["zl"]) / 1024, max(peaks["ruff"]) / 1024
    print(f"  peak memory: zerolint {zl_peak:.0f} MB, ruff {ruff_peak:.0f} MB")
    checks = {
        f"cold <= {TARGETS['cold']}x ruff": med["zl cold"] <= TARGETS["cold"] * med["ruff cold"],
        f"warm <= {TARGETS['warm']}x ruff": med["zl warm"] <= TARGETS["warm"] * med["ruff warm"],
        f"hook < {HOOK_SECONDS} s": med["zl hook"] < HOOK_SECONDS,
        f"peak <= {PEAK_MB} MB": zl_peak <= PEAK_MB,
    }
    for name, ok in checks.items():
        print(f"  target {name}: {'met' if ok else 'NOT met'}")
    return all(checks.values())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--tree",
        action="append",
        help="a serving wheel whose package is checked: vllm==X or sglang==X (repeatable)",
    )
    parser.add_argument("--vllm", help="the same as --tree vllm==VERSION")
    parser.add_argument(
        "--select", help="the rules zerolint runs (its --select), e.g. ZL001; default: its own"
    )
    parser.add_argument(
        "--all-rules",
        action="store_true",
        help="--select ALL --ignore ZL920: the opt-in rules too",
    )
    args = parser.parse_args()
    trees = list(args.tree or [])
    if args.vllm:
        trees.append(f"vllm=={args.vllm}")
    # ZL920 (unused suppressions) turns the cache off: the rules, not that diagnostic.
    select = ["--select", "ALL", "--ignore", "ZL920"] if args.all_rules else []
    if args.select:
        select = ["--select", args.select]
    results = [bench_tree(t, args.rounds, select) for t in trees or ["vllm==0.27.1"]]
    print("targets met" if all(results) else "targets NOT met")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
