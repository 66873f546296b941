"""Cost of the guard: the real metadata kernel alone, behind the fused guard, behind the clamp.

Eager: host wall time per call (the fused guard launches its kernel through the CUDA driver
in place of DeepGEMM's; the clamp guard adds one op dispatch and one kernel).
Graph: GPU time per call inside ``CUDAGraph.replay()``, measured with CUDA events around a
graph of ``calls`` back-to-back metadata calls. Medians over ``reps`` samples, microseconds.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from runtime_guard._sm90 import cases as C

CALLS_PER_SAMPLE = 20
SAMPLES = 300
WARMUP = 20

Row = dict[str, Any]


def cost_batches() -> list[Row]:
    return [{"id": f"B={batch}", "batch": batch} for batch in (32, 256, 1024)]


def eager_us(fn: Callable[[], Any], sync: Callable[[], None]) -> float:
    for _ in range(WARMUP):
        fn()
    sync()
    samples = []
    for _ in range(SAMPLES):
        started = time.perf_counter()
        for _ in range(CALLS_PER_SAMPLE):
            fn()
        sync()
        samples.append((time.perf_counter() - started) / CALLS_PER_SAMPLE * 1e6)
    return statistics.median(samples)


def graph_us(torch: Any, fn: Callable[[], Any]) -> float:
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm up off the capture, as torch's docs advise
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(CALLS_PER_SAMPLE):
            fn()
    for _ in range(WARMUP):
        graph.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for _ in range(SAMPLES):
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1e3 / CALLS_PER_SAMPLE)
    return statistics.median(samples)


def measure(ctx: Any, case: Row, _options: Row) -> Row:
    """Medians for one batch size, non-zero lengths (so the raw kernel runs too).

    "guarded" is the guard ``install()`` puts in front of DeepGEMM 2.6.1 (the clamp fused
    into the scheduler); "clamp guard" is the clamp kernel followed by DeepGEMM's kernel.
    """
    from runtime_guard import clamp_context_lens, fused

    torch = ctx.torch
    generator = torch.Generator().manual_seed(case["batch"])
    lens = torch.randint(1, 8192, (case["batch"], 1), generator=generator, dtype=torch.int32).cuda()
    raw, guarded = ctx.metadata(False), ctx.metadata(True)
    clamp_guard = ctx.metadata(True, fused=False)
    guarded(lens, C.BLOCK_KV, ctx.num_sms)  # the fused guard's one-off check, outside timing

    def call(fn: Callable[..., Any]) -> Callable[[], Any]:
        return lambda: fn(lens, C.BLOCK_KV, ctx.num_sms)

    timers = {
        "eager": lambda fn: eager_us(fn, torch.cuda.synchronize),
        "graph": lambda fn: graph_us(torch, fn),
    }
    row: Row = {
        "status": "ok",
        "calls_per_sample": CALLS_PER_SAMPLE,
        "samples": SAMPLES,
        "guard_path": ctx.guard_path(),
    }
    for mode, timer in timers.items():
        raw_us, guarded_us = timer(call(raw)), timer(call(guarded))
        clamp_guard_us = timer(call(clamp_guard))
        row[mode] = {
            "unguarded_us": round(raw_us, 3),
            "guarded_us": round(guarded_us, 3),
            "added_us": round(guarded_us - raw_us, 3),
            "ratio": round(guarded_us / raw_us, 3),
            "clamp_guard_us": round(clamp_guard_us, 3),
            "clamp_guard_added_us": round(clamp_guard_us - raw_us, 3),
            # The pieces: the fused kernel alone, the clamp alone, the bare torch op under it.
            "fused_schedule_us": round(timer(lambda: fused.schedule(lens, ctx.num_sms)), 3),
            "clamp_context_lens_us": round(timer(lambda: clamp_context_lens(lens)), 3),
            "torch_clamp_us": round(timer(lambda: torch.clamp(lens, min=1)), 3),
        }
    return row
