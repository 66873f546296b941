"""How fast is `zerolint check` on real code, against Ruff measured in the same rounds.

Tree: the ``vllm/`` package of the vLLM 0.27.1 wheel from PyPI (2,360 files; ``--vllm
0.33.0`` for the 3,231 files of that release), unpacked into a scratch copy so neither
tool's cache from earlier runs is around.

Cases, each timed for both tools in every round (alternating, so drift hits both):

* cold:  ``zerolint check --no-cache`` vs ``ruff check --no-cache`` (default rules);
* warm:  a second run on the unchanged tree, each tool with its own cache;
* one file (pre-commit): ``zerolint check --force-exclude FILE`` on the indexer file
  vs ``ruff check --force-exclude FILE``, both warm.

Prints the median wall time of each, the ratio zerolint/ruff, zerolint's peak memory and
the time of its phases (the whole-program index, path resolution, the SMT judge).
Targets (issue 2, 6, 8): cold ratio <= 1, warm ratio <= 1, one file < 0.3 s, < 300 MB.

    python bench/lint_speed.py [--rounds 5] [--vllm 0.27.1]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from devtools.wheels import vllm_tree

INDEXER = "vllm/v1/attention/backends/mla/indexer.py"


def ruff_binary() -> str:
    here = Path(sys.executable).parent / "ruff"
    found = str(here) if here.exists() else shutil.which("ruff")
    if not found:
        sys.exit("ruff is not installed (pip install ruff)")
    return found


def timed(cmd: list[str], cwd: Path) -> tuple[float, int, str]:
    """Wall seconds, peak RSS of the child in KiB, and its stderr."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    proc = subprocess.run(
        cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False
    )
    elapsed = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if proc.returncode not in (0, 1):
        sys.exit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return elapsed, max(peak, before), proc.stderr


def clear_caches(tree: Path) -> None:
    for name in (".zerolint_cache", ".ruff_cache"):
        shutil.rmtree(tree / name, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--vllm", default="0.27.1", help="the vLLM release whose tree is checked")
    args = parser.parse_args()

    source = vllm_tree(args.vllm)
    scratch = Path(tempfile.mkdtemp(prefix="zerolint-bench-"))
    tree = scratch / "tree"
    shutil.copytree(source / "vllm", tree / "vllm")
    ruff = ruff_binary()
    zl = [sys.executable, "-m", "zerolint", "check", "-q", "--color", "never"]
    env_note = f"{os.cpu_count()} cores, Python {sys.version.split()[0]}"
    print(f"vLLM {args.vllm} tree: {sum(1 for _ in tree.rglob('*.py'))} files; {env_note}")

    times: dict[str, list[float]] = {
        k: [] for k in ("zl cold", "ruff cold", "zl warm", "ruff warm", "zl one", "ruff one")
    }
    peaks: list[int] = []
    phases: list[dict[str, float]] = []
    try:
        for _ in range(args.rounds):
            clear_caches(tree)
            t, peak, err = timed([*zl, "--no-cache", "--timings", "vllm"], tree)
            times["zl cold"].append(t)
            peaks.append(peak)
            phases.append({k: float(v) for k, v in re.findall(r"(\w+)=([0-9.]+)s", err)})
            times["ruff cold"].append(timed([ruff, "check", "--no-cache", "-q", "vllm"], tree)[0])
            # Fill both caches, then time the second, unchanged run.
            timed([*zl, "vllm"], tree)
            timed([ruff, "check", "-q", "vllm"], tree)
            times["zl warm"].append(timed([*zl, "vllm"], tree)[0])
            times["ruff warm"].append(timed([ruff, "check", "-q", "vllm"], tree)[0])
            times["zl one"].append(timed([*zl, "--force-exclude", INDEXER], tree)[0])
            times["ruff one"].append(
                timed([ruff, "check", "-q", "--force-exclude", INDEXER], tree)[0]
            )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"rounds: {args.rounds} (medians, wall seconds)")
    for case in ("cold", "warm", "one"):
        z, r = med[f"zl {case}"], med[f"ruff {case}"]
        print(f"  {case:>4}: zerolint {z:.3f}  ruff {r:.3f}  ratio {z / r:.2f}")
    for key in ("index", "paths", "judge"):
        values = [p[key] for p in phases if key in p]
        if values:
            print(f"  zerolint {key}: {statistics.median(values):.3f} s")
    print(f"  zerolint peak memory: {max(peaks) / 1024:.0f} MB")
    ok = (
        med["zl cold"] <= med["ruff cold"]
        and med["zl warm"] <= med["ruff warm"]
        and med["zl one"] < 0.3
        and max(peaks) / 1024 < 300
    )
    print("targets met" if ok else "targets NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
