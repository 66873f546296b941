"""How fast the SMT judge answers, against brute-force enumeration of the same questions.

1. Per verdict: every distinct op chain the analyzer finds in tests/fixtures, plus the
   vLLM 0.27.1 indexer paths built by hand, judged by Z3 (cache cleared each time) and by
   enumerating concrete batches (numpy over rows and lengths; B a multiple of 32 up to
   256, seq_len 1..600, divisors 2..16 or as configured, every padding start). Brute force
   only covers that box; Z3 proves the answer for every batch.
2. ``zerolint capture`` with 1024 sizes (``--cudagraph-capture-sizes 1..1024``): wall time
   of the command including interpreter start-up, the in-process analysis, and brute force
   of the same per-size question (build each dummy batch, divide, test the fault).

Prints medians and brute/Z3 time ratios. Brute force stops at its first faulting batch,
so it wins on unsafe chains and loses badly where it must exhaust the box. Exits 1 when
Z3 and brute force disagree, or when a target is missed (verdict median 20 ms, capture
wall 0.5 s).

    python bench/z3_speed.py [--runs 7]
"""

from __future__ import annotations

import argparse
import functools
import itertools
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from devtools.bruteforce import rows_after
from zerolint import smt
from zerolint.capture import CaptureConfig, analyze, capture_sizes, full_decode_sizes
from zerolint.model import Finding, Flow, Op, Step, Verdict
from zerolint.rules import rule_by_code

# ZL001's predicate and witness hints, as its rule file declares them: the judge holds none.
_RULE = rule_by_code("ZL001")
assert _RULE is not None
FAULT = _RULE.predicate
HINTS = _RULE.options["witness-hints"]


def judge_flow(f: Flow, **kw: Any) -> Verdict:
    return smt.judge_flow(f, FAULT, hints=HINTS, **kw)


def judge(f: Finding, **kw: Any) -> Verdict:
    return smt.judge(f, FAULT, hints=HINTS, **kw)


VERDICT_TARGET_S = 0.020
CAPTURE_TARGET_S = 0.5
V4 = {"compress_ratio": (4,)}
BRUTE_BATCHES = tuple(range(32, 257, 32))
BRUTE_LENGTHS = np.arange(1, 601, dtype=np.int64)
BRUTE_DIVISORS = tuple(range(2, 17))

# The vLLM 0.27.1 indexer paths (docs/vllm-facts.md) and their guarded variants.
DIV = Op("floordiv", "self.compress_ratio")
PAD = Op("pad_zero", "num_decodes")
VIEW = Op("identity")
HAND_BUILT = {
    "buffer view: seq_lens //= ratio": ([VIEW, DIV, VIEW], V4),
    "expanded: [:n] = x // ratio; [n:m] = 0": ([DIV, PAD, VIEW], V4),
    "expanded + clamp(min=1)": ([DIV, PAD, VIEW, Op("clamp_min", 1)], V4),
    "ceil: (x + c - 1) // c": ([Op("add", "self.compress_ratio"), Op("add", -1), DIV], None),
    "ceil literal: (x + 3) // 4": ([Op("add", 3), Op("floordiv", 4)], None),
    "clamp(min=0)": ([DIV, Op("clamp_min", 0)], V4),
    "unconfigured ratio": ([DIV, PAD], None),
}


def flows_from_fixtures() -> dict[str, tuple[list[Op], dict | None]]:
    """Distinct op chains of the analyzer's findings on tests/fixtures."""
    from zerolint.engine import check_paths

    report = check_paths([ROOT / "tests" / "fixtures"])
    chains: dict[str, tuple[list[Op], dict | None]] = {}
    for finding in report.findings + report.proved:
        for flow in finding.flows:
            ops = list(flow.ops)
            chains.setdefault(" ; ".join(op.describe() for op in ops) or "(no op)", (ops, V4))
    return chains


def as_flow(ops: list[Op]) -> Flow:
    return Flow(
        tuple(Step("x.py", i + 1, 0, op.describe(), "flow", op) for i, op in enumerate(ops))
    )


def z3_verdict(ops: list[Op], ratios: dict | None) -> str:
    smt._judge_ops.cache_clear()  # time the solver, not the cache
    return judge_flow(as_flow(ops), ratios=ratios).status


def brute_verdict(ops: list[Op], ratios: dict | None) -> str:
    """unsafe if some batch in the box faults, else safe (within the box)."""
    symbols = sorted({op.arg for op in ops if isinstance(op.arg, str)})
    for batch in BRUTE_BATCHES:
        domains = [_domain(name, ops, ratios, batch) for name in symbols]
        for values in itertools.product(*domains):
            rows = rows_after(ops, batch, dict(zip(symbols, values)), BRUTE_LENGTHS)
            if (rows == 0).all(axis=0).any():
                return "unsafe"
    return "safe"


def _domain(name: str, ops: list[Op], ratios: dict | None, batch: int) -> tuple[int, ...]:
    if any(op.kind == "pad_zero" and op.arg == name for op in ops):
        return tuple(range(1, batch + 1))  # a padding start leaves a real row
    configured = (ratios or {}).get(name.rsplit(".", 1)[-1])
    return tuple(configured) if configured else BRUTE_DIVISORS


def brute_capture(config: CaptureConfig) -> list[int]:
    """Hazardous sizes by building each FULL decode dummy batch concretely."""
    q = config.next_n
    native = config.gpu == "sm100" or q in (1, 2)
    hazards = []
    for size in full_decode_sizes(config, capture_sizes(config)):
        requests = size // q
        tokens = [q - q + j + 1 for j in range(q)]  # one dummy request: seq_len = q
        read = tokens[-1:] if native else tokens
        batch = requests if native else requests * q
        for ratio in config.compress_ratios:
            lens = [max(n // ratio, 1) if config.clamp else n // ratio for n in read] * requests
            if batch % 32 == 0 and not any(lens):
                hazards.append(size)
                break
    return hazards


def median_time(fn: Callable[[], object], runs: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def command_wall(args: list[str], runs: int) -> float:
    cmd = [sys.executable, "-m", "zerolint", "capture", *args]
    return median_time(
        lambda: subprocess.run(cmd, check=False, capture_output=True, cwd=ROOT), runs
    )[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="repetitions of each measurement")
    args = parser.parse_args(argv)
    ok = True

    judge_flow(as_flow([Op("floordiv", 4)]))  # pay for `import z3` outside the timings
    chains = {**flows_from_fixtures(), **HAND_BUILT}
    print(f"per verdict ({len(chains)} op chains; brute force: B <= 256, seq_len <= 600)")
    print(f"  {'op chain':<52} {'verdict':>8} {'z3 ms':>8} {'brute ms':>9} {'brute/z3':>8}")
    z3_times, brute_times = [], []
    for name, (ops, ratios) in chains.items():
        z3_s, z3_answer = median_time(functools.partial(z3_verdict, ops, ratios), args.runs)
        brute_s, brute_answer = median_time(functools.partial(brute_verdict, ops, ratios), 1)
        z3_times.append(z3_s)
        brute_times.append(brute_s)
        agree = z3_answer == brute_answer
        ok &= agree
        print(
            f"  {name[:52]:<52} {z3_answer:>8} {z3_s * 1e3:8.2f} {brute_s * 1e3:9.1f} "
            f"{brute_s / z3_s:7.2f}" + ("" if agree else f"  DISAGREE: brute {brute_answer}")
        )
    z3_median, brute_median = statistics.median(z3_times), statistics.median(brute_times)
    print(
        f"  median per verdict: z3 {z3_median * 1e3:.2f} ms, brute force "
        f"{brute_median * 1e3:.1f} ms (brute/z3 {brute_median / z3_median:.2f}); "
        f"target {VERDICT_TARGET_S * 1e3:.0f} ms"
    )
    ok &= z3_median < VERDICT_TARGET_S

    sizes = ["--cudagraph-capture-sizes", "1..1024"]
    config = CaptureConfig(cudagraph_capture_sizes=tuple(range(1, 1025)))
    wall = command_wall(sizes, args.runs)
    bare = median_time(
        lambda: subprocess.run([sys.executable, "-c", "pass"], check=True, capture_output=True),
        args.runs,
    )[0]
    z3_s, result = median_time(lambda: analyze(config), args.runs)
    brute_s, brute = median_time(lambda: brute_capture(config), args.runs)
    agree = result.hazardous_sizes == brute
    ok &= agree and wall < CAPTURE_TARGET_S
    print("zerolint capture --cudagraph-capture-sizes 1..1024 (1024 sizes)")
    print(
        f"  command wall {wall:.3f} s (python -c pass: {bare:.3f} s); target "
        f"{CAPTURE_TARGET_S:.1f} s"
    )
    print(
        f"  analysis in process: z3 {z3_s * 1e3:.1f} ms, brute force {brute_s * 1e3:.1f} ms "
        f"(brute/z3 {brute_s / z3_s:.2f}); {len(brute)} hazardous sizes"
        + ("" if agree else "  DISAGREE")
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
