"""How `zerolint check` grows with the size of what it parses: time and peak memory.

Three families of generated inputs, each checked at doubling sizes in a fresh process
(``--no-cache``, one reading process), so that every number includes the parse:

* function: one function of N lines that divides a length, copies it through N local
  names, fields and buffer rows, and passes it to the sink (issue 18: 20,000 lines took 18 s);
* module:   a module of N small functions that mention the sink (1 MB took 17.6 s, 5 MB was
  killed at 300 s holding 3.7 GB);
* wrapper:  the vLLM 0.27.1 tree alone, then with a 5-line file defining a wrapper of the
  sink named ``build`` (0.6 s and 3 parsed files became 9 s and 97); the two are timed
  alternately in every round and must be about equal.

For each family it prints, per size, the wall time, peak RSS, the time per line, and the
ratio of time per line to the smallest size's: about 1.0 means linear growth (below 2 is
the target; a quadratic cost doubles it with every doubling of N), and the time over the
previous size's (about 2 at each doubling when linear, 4 when quadratic). Timing on a loaded
machine is noisy: compare the ratios, and rerun on a quiet machine for numbers.

    python bench/growth.py [--sizes 2500,5000,10000,20000] [--rounds 3] [--no-vllm]
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
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SINK_IMPORT = "from deep_gemm import get_paged_mqa_logits_metadata\n"
WRAPPER = (
    SINK_IMPORT
    + "\n\n"
    + "def build(lens, block_size, num_sms):\n"
    + "    return get_paged_mqa_logits_metadata(lens, block_size, num_sms)\n"
)


def long_function(lines: int) -> str:
    """One method of about ``lines`` statements: locals, fields, buffer rows, a sink call."""
    out = [
        "import torch",
        SINK_IMPORT.rstrip(),
        "",
        "",
        "class Builder:",
        "    def build(self, seq_lens, ratio, n):",
        "        lens = seq_lens // ratio",
    ]
    for i in range(lines):
        kind = i % 4
        if kind == 0:
            out.append(f"        v{i} = lens + {i % 7}")
        elif kind == 1:
            out.append(f"        self.f{i} = v{i - 1}")
        elif kind == 2:
            out.append(f"        self.buf{i % 50}[:n] = self.f{i - 1}")
        else:
            out.append(f"        w{i} = torch.maximum(v{i - 3}, self.buf{i % 50}[:n])")
    out.append("        return get_paged_mqa_logits_metadata(lens, 64, 132)")
    return "\n".join(out) + "\n"


def big_module(functions: int) -> str:
    """``functions`` small functions, every tenth one calling the sink, each followed by two
    module-level statements (about 10 lines each)."""
    out = ["import torch", SINK_IMPORT.rstrip(), "", "STATE = {}", "BUF = torch.zeros(64)", ""]
    for i in range(functions):
        out += [
            "",
            f"def step_{i}(seq_lens, ratio, buf):",
            f"    lens_{i} = seq_lens // ratio",
            f"    buf[:{i % 9 + 1}] = lens_{i}",
            f"    STATE['k{i}'] = buf",
            f"    out_{i} = buf.clone()",
        ]
        if i % 10 == 0:
            out.append(f"    get_paged_mqa_logits_metadata(out_{i}, 64, 132)")
        out.append(f"    return out_{i}")
        # Module-level code too: one frame (the module's) holding every global.
        out += [f"TABLE_{i} = step_{i}", f"BUF[:{i % 9 + 1}] = TABLE_{i}"]
    return "\n".join(out) + "\n"


def run(cwd: Path, *paths: str) -> tuple[float, int, dict[str, str]]:
    """Wall seconds, peak RSS in KiB of a fresh `zerolint check`, and its --timings fields."""
    cmd = [sys.executable, "-m", "zerolint", "check", "--no-cache", "--jobs", "1"]
    cmd += ["--timings", "--color", "never", "-q", *paths]
    # RUSAGE_CHILDREN's maxrss is the largest child so far: measure each run in its own
    # wrapper process so the peak is this run's.
    probe = (
        "import resource, subprocess, sys, time\n"
        "t = time.perf_counter()\n"
        "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "dt = time.perf_counter() - t\n"
        "rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
        "sys.stdout.write(f'{dt} {rss} {p.returncode}\\n' + p.stderr)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-c", probe, *cmd],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    head, _, stderr = proc.stdout.partition("\n")
    elapsed, rss, rc = head.split()
    if rc not in ("0", "1"):
        sys.exit(f"zerolint failed ({rc}) in {cwd}: {stderr.strip()[-2000:]}")
    timings = dict(re.findall(r"(\w+)=([\d.]+)", stderr.split("timings:", 1)[-1]))
    return float(elapsed), int(rss), timings


def growth(name: str, make, sizes: list[int], rounds: int, scratch: Path) -> list[float]:
    """Print one family's table; return the per-line time ratios against the smallest size."""
    print(f"\n{name}")
    print(
        f"{'N':>8} {'lines':>8} {'MB':>6} {'wall s':>8} {'peak MB':>8} {'us/line':>8}"
        f" {'ratio':>6} {'x prev':>7}"
    )
    base = None
    prev = None
    ratios = []
    for n in sizes:
        folder = scratch / f"{name}-{n}"
        folder.mkdir()
        text = make(n)
        (folder / "generated.py").write_text(text)
        lines = text.count("\n")
        times, peaks = [], []
        for _ in range(rounds):
            elapsed, rss, _ = run(folder, "generated.py")
            times.append(elapsed)
            peaks.append(rss)
        wall = statistics.median(times)
        per_line = wall / lines * 1e6
        base = base or per_line
        ratios.append(per_line / base)
        # x prev: this size's time over the previous size's (2.0 for linear at doubling
        # sizes, 4.0 for quadratic; the fixed start-up cost pulls it below 2 at small N).
        growth_x = f"{wall / prev:>7.2f}" if prev else f"{'':>7}"
        prev = wall
        print(
            f"{n:>8} {lines:>8} {len(text) / 1e6:>6.2f} {wall:>8.2f} {max(peaks) / 1024:>8.0f}"
            f" {per_line:>8.1f} {per_line / base:>6.2f} {growth_x}"
        )
    return ratios


def wrapper_case(rounds: int, scratch: Path) -> float:
    """The vLLM tree with and without the `build` wrapper file; returns the time ratio."""
    from devtools.wheels import vllm_tree

    tree = scratch / "vllm-tree"
    shutil.copytree(vllm_tree("0.27.1") / "vllm", tree / "vllm")
    (tree / "wrappers").mkdir()
    (tree / "wrappers" / "build_wrapper.py").write_text(WRAPPER)
    plain, wrapped = [], []
    parsed = {}
    for _ in range(rounds):  # alternate, so drift in machine load hits both
        t, _, tm = run(tree, "vllm")
        plain.append(t)
        parsed["plain"] = tm.get("parsed", "?")
        t, _, tm = run(tree, "vllm", "wrappers")
        wrapped.append(t)
        parsed["wrapper"] = tm.get("parsed", "?")
    a, b = statistics.median(plain), statistics.median(wrapped)
    print("\nwrapper named `build` (vLLM 0.27.1)")
    print(f"  tree alone:        {a:6.2f} s, {parsed['plain']} files parsed")
    print(f"  tree + wrapper:    {b:6.2f} s, {parsed['wrapper']} files parsed")
    print(f"  ratio:             {b / a:6.2f}  (target: about 1)")
    return b / a


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="2500,5000,10000,20000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-vllm", action="store_true", help="skip the wrapper case")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="zerolint-growth-") as tmp:
        scratch = Path(tmp)
        worst = max(
            growth("function", long_function, sizes, args.rounds, scratch)
            + growth(
                "module",
                lambda n: big_module(n // 10 + 1),
                [s * 10 for s in sizes],
                args.rounds,
                scratch,
            )
        )
        ratio = None if args.no_vllm else wrapper_case(args.rounds, scratch)
    print(f"\nworst time-per-line ratio: {worst:.2f} (target < 2: about linear)")
    if ratio is not None:
        print(f"wrapper/plain time ratio:  {ratio:.2f} (target < 1.5)")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(f"(largest peak of any run: {peak / 1024:.0f} MB)")


if __name__ == "__main__":
    main()
