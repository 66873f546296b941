"""Empty batches (B = 0) and a one-row control on both DeepGEMM builds, raw and guarded.

One case per process (a fault is sticky). ``build`` is ``2.5.0`` (the package vendored in
vLLM 0.26.0: its own host code JIT-compiles and launches the scheduler) or ``2.6.1`` (the
vLLM 0.27.1 header in this harness's extension, launched as DeepGEMM's host launches it:
for B = 0 the kernel instantiated for an aligned batch size of 0, with 0 bytes of dynamic
shared memory). Guarded is what ``install()`` gives each build: the plain clamp guard for
2.5.0, the fused guard for 2.6.1. ``logits`` cases then run DeepGEMM 2.5.0's
``fp8_paged_mqa_logits`` on the empty batch with the guard's schedule: what the kernel
that follows does with it (DeepGEMM 2.5.0 refuses the launch; the context survives).
"""

from __future__ import annotations

from typing import Any

from runtime_guard._sm90 import cases as C

Row = dict[str, Any]

BUILDS = ("2.5.0", "2.6.1")
CONTROL_LENGTH = 1000
"""The one row of the B = 1 control: four segments of SPLIT_KV 256."""
MAX_MODEL_LEN = 4096


def empty_cases() -> list[Row]:
    """B = 0 and B = 1 for each build and next_n, unguarded and guarded; then the logits."""
    rows = [
        {
            "id": f"{build} B={batch} next_n={next_n} {'guarded' if guarded else 'unguarded'}",
            "build": build,
            "batch": batch,
            "next_n": next_n,
            "guarded": guarded,
            "logits": False,
        }
        for build in BUILDS
        for next_n in (1, 2)
        for batch in (0, 1)
        for guarded in (False, True)
    ]
    rows += [
        {
            "id": f"2.5.0 logits after the guard, B=0 next_n={next_n}",
            "build": "2.5.0",
            "batch": 0,
            "next_n": next_n,
            "guarded": True,
            "logits": True,
        }
        for next_n in (1, 2)
    ]
    return rows


def lens_of(case: Row) -> C.Lens:
    return [[CONTROL_LENGTH] * case["next_n"] for _ in range(case["batch"])]


def run_case(ctx: Any, case: Row, options: Row) -> Row:
    import torch

    from runtime_guard import guard, guard_path, reference

    num_sms = ctx.num_sms
    if case["build"] == "2.5.0":
        from runtime_guard._sm90.semantics import import_deep_gemm

        deep_gemm = import_deep_gemm(options["deep_gemm_root"])
        raw = deep_gemm.get_paged_mqa_logits_metadata
        metadata = guard(raw) if case["guarded"] else raw
    else:
        deep_gemm = None
        metadata = ctx.metadata(case["guarded"])
    lens = torch.tensor(lens_of(case), dtype=torch.int32, device="cuda").reshape(
        case["batch"], case["next_n"]
    )
    schedule = metadata(lens, C.BLOCK_KV, num_sms)
    torch.cuda.synchronize()
    table = [tuple(pair) for pair in schedule.tolist()]
    if case["batch"]:
        want = [tuple(p) for p in reference.schedule(lens_of(case), num_sms).schedule]
    else:
        want = [(0, 0)] * (num_sms + 1)  # DeepGEMM 2.8.1's guarded scheduler on B = 0
    row: Row = {
        "status": "ok",
        "shape": list(schedule.shape),
        "dtype": str(schedule.dtype),
        "device": str(schedule.device),
        "same_stream_device": schedule.device == lens.device,
        "digest": C.schedule_digest(table),
        "schedule_match": table == want,
    }
    if case["guarded"]:
        row["guard_path"] = guard_path(metadata, 0)
    if case["logits"]:
        assert deep_gemm is not None
        try:
            row["logits_shape"] = list(_logits(deep_gemm, lens, schedule).shape)
        except RuntimeError as error:
            from runtime_guard._sm90.worker import is_cuda_error

            if is_cuda_error(error):
                raise  # a sticky fault: the worker reports it
            # A host-side refusal (DeepGEMM 2.5.0: its launch of a 0-block grid fails with
            # CUDA_ERROR_INVALID_VALUE). The context must survive it: prove that it does.
            row["logits_error"] = str(error).strip().splitlines()[0][:300]
            row["context_survives"] = torch.ones(4, device="cuda").sum().item() == 4.0
    return row


def _logits(deep_gemm: Any, lens: Any, schedule: Any) -> Any:
    """DeepGEMM 2.5.0's logits on an empty batch (the layout of ``semantics.make_inputs``)."""
    import torch

    from runtime_guard._sm90.semantics import HEAD_DIM, NUM_HEADS

    batch, next_n = lens.shape
    q = torch.zeros(batch, next_n, NUM_HEADS, HEAD_DIM, device="cuda").to(torch.float8_e4m3fn)
    kv = torch.zeros(1, C.BLOCK_KV, 1, HEAD_DIM + 4, dtype=torch.uint8, device="cuda")
    weights = torch.zeros(batch * next_n, NUM_HEADS, device="cuda")
    table = torch.zeros(batch, MAX_MODEL_LEN // C.BLOCK_KV, dtype=torch.int32, device="cuda")
    out = deep_gemm.fp8_paged_mqa_logits(
        q, kv, weights, lens, table, schedule, MAX_MODEL_LEN, False
    )
    torch.cuda.synchronize()
    return out
