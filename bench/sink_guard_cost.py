"""What the attention and logits guards cost per call, against the unguarded kernel, on SM90.

Needs an SM90 GPU, Triton, and the pieces ``python devtools/prepare_sm90.py`` and
``python devtools/prepare_probe.py`` write (``.sm90/``, ``.probe/``). For vLLM's Triton MLA
decode and FlashMLA's dense bf16 decode (the probe's inputs, ``probe.guarded``), and for
DeepGEMM 2.5.0's ``fp8_paged_mqa_logits``, it times the same call unguarded and through its
guard in the same process: in CUDA-graph replay (``--per-graph`` calls captured in one graph,
replayed ``--replays`` times) and eager (``--eager`` calls back to back), both between CUDA
events. It prints, per kernel and batch, the microseconds the guard adds per call and the
ratio, writes them as JSON with ``--out``, and exits 1 when a guard adds 1 µs or more per call
in replay (issue #15's target).

    python bench/sink_guard_cost.py [--out cost.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
TARGET_US = 1.0


def per_call_us(torch, call, *, per_graph: int, replays: int, eager: int) -> dict[str, float]:
    """Microseconds per ``call()`` in graph replay and eager."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            call()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(per_graph):
            call()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    graph.replay()
    torch.cuda.synchronize()
    start.record()
    for _ in range(replays):
        graph.replay()
    end.record()
    torch.cuda.synchronize()
    replay = start.elapsed_time(end) * 1000 / (replays * per_graph)
    for _ in range(10):
        call()
    torch.cuda.synchronize()
    start.record()
    for _ in range(eager):
        call()
    end.record()
    torch.cuda.synchronize()
    return {"replay_us": replay, "eager_us": start.elapsed_time(end) * 1000 / eager}


def kernels(env):
    """(kernel name, batch label, unguarded call, guarded call) for each measured setup."""
    from probe import guarded as G
    from probe.cases import Case

    triton = G.GuardedTritonMla(env)
    flashmla = G.GuardedFlashMla(env)
    logits = G.GuardedDeepGemmLogits(env)
    for label, lens in (
        ("B=8, one row 0", (0, 700, 1500, 33, 1200, 64, 900, 2000)),
        ("B=132, no row 0", tuple(64 + 13 * i for i in range(132))),
    ):
        x = triton.make(lens)
        b = triton._buffers(x)
        yield (
            "triton_mla",
            label,
            lambda x=x, b=b: triton._launch(triton.fwd, x, b),
            lambda x=x, b=b: triton._launch(triton.guarded_fwd, x, b),
        )
        x = flashmla.make(lens)
        plain_meta, guarded_meta = flashmla.meta(), flashmla.meta()
        yield (
            "flashmla",
            label,
            lambda x=x, m=plain_meta: flashmla._launch(
                flashmla.module.flash_mla_with_kvcache, x, m
            ),
            lambda x=x, m=guarded_meta: flashmla._launch(flashmla.guarded_fn, x, m),
        )
        x = logits.make(Case("bench", lens, 1))
        yield (
            "deep_gemm_logits",
            label,
            lambda x=x: logits._launch(logits.fn, x),
            lambda x=x: logits._launch(logits.guarded_fn, x),
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sm90-pieces", type=Path, default=ROOT / ".sm90")
    parser.add_argument("--probe-pieces", type=Path, default=ROOT / ".probe")
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--per-graph", type=int, default=20)
    parser.add_argument("--replays", type=int, default=50)
    parser.add_argument("--eager", type=int, default=300)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    import tempfile

    import torch

    from probe import standins
    from probe.impl import Env

    manifests = []
    for folder, script in (
        (args.sm90_pieces, "prepare_sm90"),
        (args.probe_pieces, "prepare_probe"),
    ):
        path = folder / "manifest.json"
        if not path.is_file():
            raise SystemExit(f"error: {path} not found: run `python devtools/{script}.py` first")
        manifests.append(json.loads(path.read_text()))
    sm90, probe = manifests
    if not torch.cuda.is_available():
        raise SystemExit("error: no CUDA device visible to torch")
    work = args.work or Path(tempfile.mkdtemp(prefix="sink-guard-cost-"))
    env = Env(
        standins=standins.build(args.probe_pieces / probe["vllm"]["path"], work / "standins"),
        deep_gemm_root=args.sm90_pieces / sm90["semantics"]["path"],
        ext_261=None,
        ext_281=None,
    )
    rows = []
    for name, label, plain, guarded in kernels(env):
        timing = {"plain": {}, "guarded": {}}
        # Alternate the two, twice, and keep each one's best: the host is shared.
        for _ in range(2):
            for which, call in (("plain", plain), ("guarded", guarded)):
                got = per_call_us(
                    torch, call, per_graph=args.per_graph, replays=args.replays, eager=args.eager
                )
                for key, value in got.items():
                    timing[which][key] = min(timing[which].get(key, value), value)
        row = {"sink": name, "batch": label}
        for key in ("replay_us", "eager_us"):
            row[f"plain_{key}"] = round(timing["plain"][key], 2)
            row[f"guarded_{key}"] = round(timing["guarded"][key], 2)
            row[f"added_{key}"] = round(timing["guarded"][key] - timing["plain"][key], 2)
        rows.append(row)
        print(
            f"{name:17} {label:16} replay {row['plain_replay_us']:8.2f} -> "
            f"{row['guarded_replay_us']:8.2f} us (+{row['added_replay_us']:.2f}); eager "
            f"{row['plain_eager_us']:8.2f} -> {row['guarded_eager_us']:8.2f} us "
            f"(+{row['added_eager_us']:.2f})",
            flush=True,
        )
    report = {
        "gpu": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "per_graph": args.per_graph,
        "replays": args.replays,
        "eager_calls": args.eager,
        "target_added_replay_us": TARGET_US,
        "rows": rows,
    }
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")
    over = [r for r in rows if r["added_replay_us"] >= TARGET_US]
    for r in over:
        print(f"over target: {r['sink']} {r['batch']}: +{r['added_replay_us']} us in replay")
    return 1 if over else 0


if __name__ == "__main__":
    raise SystemExit(main())
