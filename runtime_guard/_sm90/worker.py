"""One GPU process of the SM90 verification: runs a list of cases, one JSON line each.

Started by :mod:`runtime_guard._sm90.runner` as ``python -m runtime_guard._sm90.worker``
with a task on stdin::

    {"kind": "seed" | "capture" | "diff" | "semantics" | "cost" | "empty" | "sglang_jit"
             | "sglang_capture",
     "ext": "<path of the built extension>", "options": {...}, "cases": [{"id": ...}, ...]}

Each finished case prints ``@@rg {"id": ..., "status": "ok" | "fault" | "error", ...}``.
A CUDA error is sticky (it poisons the context), so after printing the faulting case the
process exits with :data:`EXIT_FAULT`; the runner restarts the remaining cases elsewhere.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runtime_guard._sm90 import cases as C

MARKER = "@@rg "
EXIT_FAULT = 3

Row = dict[str, Any]


def emit(row: Row) -> None:
    sys.stdout.write(MARKER + json.dumps(row) + "\n")
    sys.stdout.flush()


def is_cuda_error(error: BaseException) -> bool:
    return type(error).__name__ == "AcceleratorError" or "CUDA error" in str(error)


class Context:
    """What every case needs: the built kernel, the guard, the reference model, the device."""

    def __init__(self, ext_path: str) -> None:
        import torch

        from runtime_guard._sm90.build import load_built

        self.torch = torch
        self.ext = load_built(Path(ext_path))
        self.num_sms = torch.cuda.get_device_properties(0).multi_processor_count
        self.raw = self.ext.get_paged_mqa_logits_metadata
        self._guards: dict[bool, Callable[..., Any]] = {}

    def metadata(self, guarded: bool, *, fused: bool = True) -> Callable[..., Any]:
        """The real kernel, or, when ``guarded``, the guard ``install()`` puts in front of
        DeepGEMM 2.6.1 (``fused``) or the plain clamp-then-call guard. One guard per process,
        so the fused guard's self-check runs once, on its first call outside capture."""
        if not guarded:
            return self.raw
        if fused not in self._guards:
            from runtime_guard import guard

            self._guards[fused] = guard(self.raw, fused=fused)
        return self._guards[fused]

    def guard_path(self) -> str:
        """``fused`` or ``clamp``: how the fused guard scheduled its calls so far."""
        from runtime_guard import guard_path

        return guard_path(self.metadata(True), 0)

    def tensor(self, lens: C.Lens) -> Any:
        return self.torch.tensor(lens, dtype=self.torch.int32, device="cuda")

    def expected(self, lens: C.Lens, guarded: bool) -> tuple[list[tuple[int, int]], bool]:
        """The reference model's schedule and fault flag for what the kernel will see."""
        from runtime_guard import reference

        result = reference.schedule(C.clamped(lens) if guarded else lens, self.num_sms)
        return [tuple(pair) for pair in result.schedule], result.faults

    def run(self, lens: C.Lens, guarded: bool) -> list[tuple[int, int]]:
        lens_tensor = self.tensor(lens)  # alive until the sync: a fault surfaces there
        out = self.metadata(guarded)(lens_tensor, C.BLOCK_KV, self.num_sms)
        self.torch.cuda.synchronize()
        return [tuple(pair) for pair in out.tolist()]


def compare(ctx: Context, lens: C.Lens, got: list[tuple[int, int]], guarded: bool) -> Row:
    want, model_fault = ctx.expected(lens, guarded)
    row = {
        "digest": C.schedule_digest(got),
        "model_fault": model_fault,
        "schedule_match": got == want,
    }
    if guarded:
        row["guard_path"] = ctx.guard_path()
    return row


# -- case kinds ---------------------------------------------------------------------------------


def seed_case(ctx: Context, case: Row, _options: Row) -> Row:
    seed = C.SeedCase(case["batch"], case["fill"], case["guarded"])
    got = ctx.run(seed.lens, seed.guarded)
    return {"status": "ok", **compare(ctx, seed.lens, got, seed.guarded)}


def capture_case(ctx: Context, case: Row, options: Row) -> Row:
    """vLLM's indexer builder for a FULL decode capture of ``size``, captured and replayed."""
    torch = ctx.torch
    size, guarded = case["size"], case["guarded"]
    buffers = _capture_buffers(ctx, options["max_size"])
    metadata = ctx.metadata(guarded)

    def build_metadata() -> None:
        seq_lens = buffers["seq_lens"][:size]  # every dummy request has seq_len 1
        buffers["expanded"][:size] = seq_lens // C.COMPRESS_RATIO
        lens = buffers["expanded"][:size].unsqueeze(-1)
        buffers["schedule"].copy_(metadata(lens, C.BLOCK_KV, ctx.num_sms))

    if guarded:
        build_metadata()  # vLLM's eager dummy run before each capture (the guard's self-check)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        build_metadata()
    graph.replay()
    torch.cuda.synchronize()
    got = [tuple(pair) for pair in buffers["schedule"].tolist()]
    return {
        "status": "ok",
        "stage": "replay",
        **compare(ctx, C.dummy_decode_lens(size), got, guarded),
    }


_BUFFERS: dict[str, Any] = {}


def _capture_buffers(ctx: Context, max_size: int) -> dict[str, Any]:
    """Persistent buffers, as the builder keeps them across captures."""
    if not _BUFFERS:
        torch = ctx.torch
        _BUFFERS["seq_lens"] = torch.ones(max_size, dtype=torch.int32, device="cuda")
        _BUFFERS["expanded"] = torch.zeros(max_size, dtype=torch.int32, device="cuda")
        _BUFFERS["schedule"] = torch.zeros(ctx.num_sms + 1, 2, dtype=torch.int32, device="cuda")
    return _BUFFERS


def diff_case(ctx: Context, case: Row, options: Row) -> Row:
    """Random input ``id``: guarded first (never faults), then the raw kernel if asked."""
    lens = C.diff_case(options["seed"], case["id"]).lens
    row: Row = {"status": "ok"}
    if case.get("guarded", True):
        got = ctx.run(lens, True)
        row["guarded_match"] = compare(ctx, lens, got, True)["schedule_match"]
        row["guard_path"] = ctx.guard_path()
        # The guard's table against the real kernel's on the clamped lengths, int for int.
        row["guarded_equals_kernel_on_clamped"] = got == ctx.run(C.clamped(lens), False)
    if case.get("unguarded", True):
        got = ctx.run(lens, False)
        row.update(compare(ctx, lens, got, False))
    return row


def semantics_case(ctx: Context, case: Row, options: Row) -> Row:
    from runtime_guard._sm90 import semantics

    return semantics.run_batch(ctx, case, options)


def empty_case(ctx: Context, case: Row, options: Row) -> Row:
    from runtime_guard._sm90 import empty

    return empty.run_case(ctx, case, options)


def cost_case(ctx: Context, case: Row, options: Row) -> Row:
    from runtime_guard._sm90 import cost

    return cost.measure(ctx, case, options)


def sglang_jit_case(ctx: Context, case: Row, options: Row) -> Row:
    from runtime_guard._sm90 import sglang

    return sglang.run_jit_case(ctx, case, options)


def sglang_capture_case(ctx: Context, case: Row, options: Row) -> Row:
    from runtime_guard._sm90 import sglang

    return sglang.run_capture_case(ctx, case, options)


KINDS: dict[str, Callable[[Any, Row, Row], Row]] = {
    "seed": seed_case,
    "capture": capture_case,
    "diff": diff_case,
    "semantics": semantics_case,
    "cost": cost_case,
    "empty": empty_case,
    "sglang_jit": sglang_jit_case,
    "sglang_capture": sglang_capture_case,
}


def run_task(task: Row) -> int:
    kind = KINDS[task["kind"]]
    options = task.get("options", {})
    ctx = Context(task["ext"]) if task.get("ext") else None
    for case in task["cases"]:
        started = time.perf_counter()
        try:
            row = kind(ctx, case, options)
        except Exception as error:  # noqa: BLE001 - every failure becomes a reported row
            fault = is_cuda_error(error)
            emit(
                {
                    "id": case["id"],
                    "status": "fault" if fault else "error",
                    "error": _first_line(error),
                    "traceback": "" if fault else traceback.format_exc(limit=4)[-1500:],
                    "seconds": round(time.perf_counter() - started, 3),
                }
            )
            if fault:
                os._exit(EXIT_FAULT)  # the context is poisoned: skip CUDA teardown
            continue
        emit({"id": case["id"], **row, "seconds": round(time.perf_counter() - started, 3)})
    return 0


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"


def main() -> int:
    return run_task(json.load(sys.stdin))


if __name__ == "__main__":
    raise SystemExit(main())
