"""The Triton MLA guard's own second stage against vLLM's, over more shapes than the probe's.

The probe's guarded variant (``triton_mla_decode_guarded``) runs vLLM's MLA call on the
probe's edge cases. This runs vLLM 0.26.0's ``decode_attention_fwd`` and the guard
(``runtime_guard.attention.guard_triton_mla_decode``, path ``"stage2"``) on the same random
inputs over both first stages vLLM dispatches to (grouped: MLA and GQA; normal: MHA), bf16
and fp16, page sizes 1 to 64, and 1 to 64 splits (``COMBOS``), with rows of length 0 mixed in,
and checks on the GPU that every row of non-zero length is ``torch.equal`` to vLLM's (output
and LSE), every row of length 0 holds output 0 and LSE -inf, and what vLLM leaves there
(NaN). Needs an SM90 GPU, Triton and ``.probe/`` (``python devtools/prepare_probe.py``)::

    python -m probe.stage2_check --out stage2.json

Exits 1 when a check fails.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent

SHAPES = (
    # (label, q heads, kv heads, qk dim, v dim, is_mla)
    ("mla", 16, 1, 576, 512, True),
    ("mla-128-heads", 128, 1, 576, 512, True),
    ("gqa", 32, 8, 128, 128, False),
    ("mha", 8, 8, 128, 128, False),
)
SPLITS = (1, 3, 8, 64)
COMBOS = (
    # (shape label, dtypes, page sizes): each with every split count of SPLITS
    ("mla", ("bfloat16", "float16"), (1, 64)),
    ("mla-128-heads", ("bfloat16",), (64,)),
    ("gqa", ("bfloat16",), (16,)),
    ("mha", ("bfloat16",), (16,)),
)
"""Every combination compiles its own Triton kernels, so the list is kept short."""


def make(
    torch: Any, rng: random.Random, shape: tuple, dtype: Any, page: int, splits: int, device: str
) -> dict:
    _, heads, kv_heads, dqk, dv, is_mla = shape
    batch = rng.choice((1, 3, 8, 33) if device == "cuda" else (3,))
    longest = 1500 if device == "cuda" else 40
    lens = [0 if rng.random() < 0.3 else rng.randint(1, longest) for _ in range(batch)]
    pages = [max(1, math.ceil(n / page)) for n in lens]
    total = sum(pages) + 1
    table = torch.zeros(batch, max(pages), dtype=torch.int32)
    physical = list(range(1, total))
    rng.shuffle(physical)
    for row, count in enumerate(pages):
        table[row, :count] = torch.tensor(physical[:count], dtype=torch.int32)
        physical = physical[count:]
    gen = torch.Generator().manual_seed(rng.randint(0, 2**31))
    cache = (torch.randn(total, page, kv_heads, dqk, generator=gen) * 0.5).to(dtype).to(device)
    q = (torch.randn(batch, heads, dqk, generator=gen) * 0.5).to(dtype).to(device)
    return {
        "q": q,
        "k": cache,
        "v": cache[..., :dv] if is_mla else (torch.randn_like(cache.float()) * 0.5).to(dtype),
        "table": table.to(device),
        "lens": lens,
        "lens_t": torch.tensor(lens, dtype=torch.int32, device=device),
        "splits": splits,
        "page": page,
        "scale": torch.ones((), dtype=torch.float32, device=device),
    }


def call(torch: Any, fn: Any, x: dict, shape: tuple) -> tuple[Any, Any]:
    _, heads, _, dqk, dv, is_mla = shape
    batch, device = x["q"].shape[0], x["q"].device
    o = torch.full((batch, heads, dv), float("nan"), dtype=x["q"].dtype, device=device)
    lse = torch.full((batch, heads), float("nan"), dtype=x["q"].dtype, device=device)
    logits = torch.full(
        (batch, heads, x["splits"], dv + 1), float("nan"), dtype=torch.float32, device=device
    )
    fn(x["q"], x["k"], x["v"], o, lse, x["table"], x["lens_t"], logits, x["splits"],
       dqk**-0.5, x["page"], k_scale=x["scale"], v_scale=x["scale"], is_mla=is_mla)  # fmt: skip
    if device.type == "cuda":
        torch.cuda.synchronize()
    return o, lse


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--probe-pieces", type=Path, default=REPO_ROOT / ".probe")
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--device",
        default="cuda",
        help="cpu: a few small cases, for Triton's interpreter (TRITON_INTERPRET=1)",
    )
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO_ROOT))
    import importlib

    import torch
    import triton

    import runtime_guard
    from probe import standins
    from runtime_guard.attention import guard_triton_mla_decode

    manifest = json.loads((args.probe_pieces / "manifest.json").read_text())
    tree = standins.build(
        args.probe_pieces / manifest["vllm"]["path"], Path(tempfile.mkdtemp()) / "standins"
    )
    sys.path.insert(0, str(tree))
    module = importlib.import_module("vllm.v1.attention.ops.triton_decode_attention")
    plain = module.decode_attention_fwd
    guarded = guard_triton_mla_decode(plain)
    path = runtime_guard.guard_path(guarded)
    rng = random.Random(args.seed)
    rows, failed = [], 0
    small = args.device != "cuda"
    shapes = {shape[0]: shape for shape in SHAPES}
    for label, dtypes, pages in COMBOS:
        shape = shapes[label]
        for dtype_name in dtypes[:1] if small else dtypes:
            dtype = getattr(torch, dtype_name)
            for page in pages[-1:] if small else pages:
                for splits in (1, 3) if small else SPLITS:
                    x = make(torch, rng, shape, dtype, page, splits, args.device)
                    p_o, p_lse = call(torch, plain, x, shape)
                    again_o, again_lse = call(torch, plain, x, shape)
                    g_o, g_lse = call(torch, guarded, x, shape)
                    keep = [i for i, n in enumerate(x["lens"]) if n]
                    zero = [i for i, n in enumerate(x["lens"]) if not n]
                    row = {
                        "plain_repeatable": torch.equal(p_o[keep], again_o[keep])
                        and torch.equal(p_lse[keep], again_lse[keep]),
                        "plain_nonzero_rows_finite": bool(p_o[keep].isfinite().all())
                        and bool(p_lse[keep].isfinite().all()),
                        "shape": shape[0],
                        "dtype": dtype_name,
                        "page": page,
                        "splits": splits,
                        "batch": len(x["lens"]),
                        "zero_rows": len(zero),
                        "nonzero_rows_identical": torch.equal(g_o[keep], p_o[keep])
                        and torch.equal(g_lse[keep], p_lse[keep]),
                        "zero_rows_identity": bool((g_o[zero] == 0).all())
                        and bool(torch.isneginf(g_lse[zero]).all()),
                        "unguarded_zero_rows": (
                            "nan" if zero and bool(p_o[zero].isnan().any()) else "other"
                        )
                        if zero
                        else None,
                    }
                    ok = row["nonzero_rows_identical"] and row["zero_rows_identity"]
                    failed += not ok
                    rows.append(row)
                    if not ok:
                        print("FAILED", row, flush=True)
    report = {
        "gpu": torch.cuda.get_device_name(0) if args.device == "cuda" else args.device,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "guard_path": path,
        "cases": len(rows),
        "failed": failed,
        "rows": rows,
    }
    print(
        f"stage2_check: path {path}, {len(rows)} cases, {failed} failed, "
        f"{sum(r['zero_rows'] > 0 for r in rows)} with rows of length 0",
        flush=True,
    )
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")
    return 1 if failed or path != "stage2" else 0


if __name__ == "__main__":
    raise SystemExit(main())
