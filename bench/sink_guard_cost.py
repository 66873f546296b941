"""What the attention and logits guards cost per call, against the unguarded kernel, on SM90.

Needs an SM90 GPU, Triton, and the pieces ``python devtools/prepare_sm90.py`` and
``python devtools/prepare_probe.py`` write (``.sm90/``, ``.probe/``). For vLLM's Triton MLA
decode and FlashMLA's dense bf16 decode (the probe's inputs, ``probe.guarded``), and for
DeepGEMM 2.5.0's ``fp8_paged_mqa_logits``, it times the same call unguarded and through its
guard in the same process: in CUDA-graph replay (``--per-graph`` calls captured in one graph,
replayed ``--replays`` times) and eager (``--eager`` calls back to back), both between CUDA
events, the two alternated ``--rounds`` times and the median of each kept. It also counts the
nodes one call adds to a CUDA graph (``cuGraphGetNodes``), unguarded and guarded, and records
the path each guard took (``runtime_guard.guard_path``). It prints, per kernel and batch, the
microseconds the guard adds per call, writes them as JSON with ``--out`` with, per sink, the
median and the most over the batches, and exits 1 when a sink adds 1 µs or more per call
in replay at any batch (issue #15's target, which ZL001's guard meets in the same sense:
``runtime_guard.verify_sm90``'s cost section takes the most added at any batch size).

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
BATCHES = (
    ("B=8, one row 0", (0, 700, 1500, 33, 1200, 64, 900, 2000)),
    ("B=32, half rows 0", tuple(0 if i % 2 else 100 + 61 * i for i in range(32))),
    ("B=132, no row 0", tuple(64 + 13 * i for i in range(132))),
    ("B=256, every 8th row 0", tuple(0 if i % 8 == 3 else 1 + 7 * i for i in range(256))),
)
"""The batches timed: (label, per-row lengths)."""


def median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def graph_nodes(torch, call) -> int | None:
    """How many nodes one ``call()`` captures into a CUDA graph (after the warm-up
    ``per_call_us`` did), through the driver's ``cuGraphGetNodes``; None where the graph
    cannot be read (a torch without ``keep_graph``)."""
    import ctypes

    try:
        graph = torch.cuda.CUDAGraph(keep_graph=True)
        with torch.cuda.graph(graph):
            call()
        count = ctypes.c_size_t(0)
        driver = ctypes.CDLL("libcuda.so.1")
        driver.cuGraphGetNodes.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        status = driver.cuGraphGetNodes(graph.raw_cuda_graph(), None, ctypes.byref(count))
        torch.cuda.synchronize()
        return int(count.value) if status == 0 else None
    except Exception as error:  # noqa: BLE001 - informational: the timing does not need it
        print(f"graph nodes not counted: {type(error).__name__}: {error}", file=sys.stderr)
        return None


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
    """(kernel name, batch label, unguarded call, guarded call, guarded function) for each
    measured setup."""
    from probe import guarded as G
    from probe.cases import Case

    triton = G.GuardedTritonMla(env)
    flashmla = G.GuardedFlashMla(env)
    logits = G.GuardedDeepGemmLogits(env)
    for label, lens in BATCHES:
        x = triton.make(lens)
        b = triton._buffers(x)
        yield (
            "triton_mla",
            label,
            lambda x=x, b=b: triton._launch(triton.fwd, x, b),
            lambda x=x, b=b: triton._launch(triton.guarded_fwd, x, b),
            triton.guarded_fwd,
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
            flashmla.guarded_fn,
        )
        x = logits.make(Case("bench", lens, 1))
        yield (
            "deep_gemm_logits",
            label,
            lambda x=x: logits._launch(logits.fn, x),
            lambda x=x: logits._launch(logits.guarded_fn, x),
            logits.guarded_fn,
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sm90-pieces", type=Path, default=ROOT / ".sm90")
    parser.add_argument("--probe-pieces", type=Path, default=ROOT / ".probe")
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--per-graph", type=int, default=20)
    parser.add_argument("--replays", type=int, default=50)
    parser.add_argument("--eager", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=11)
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
    import runtime_guard

    rows = []
    for name, label, plain, guarded, guard in kernels(env):
        timing = {"plain": {}, "guarded": {}}
        # Alternate the two and keep each one's median: the host is shared.
        for _ in range(args.rounds):
            for which, call in (("plain", plain), ("guarded", guarded)):
                got = per_call_us(
                    torch, call, per_graph=args.per_graph, replays=args.replays, eager=args.eager
                )
                for key, value in got.items():
                    timing[which].setdefault(key, []).append(value)
        row = {"sink": name, "batch": label, "path": runtime_guard.guard_path(guard)}
        for key in ("replay_us", "eager_us"):
            row[f"plain_{key}"] = round(median(timing["plain"][key]), 2)
            row[f"guarded_{key}"] = round(median(timing["guarded"][key]), 2)
            row[f"added_{key}"] = round(row[f"guarded_{key}"] - row[f"plain_{key}"], 2)
        row["plain_graph_nodes"] = graph_nodes(torch, plain)
        row["guarded_graph_nodes"] = graph_nodes(torch, guarded)
        rows.append(row)
        print(
            f"{name:17} {label:22} {row['path']:11} replay {row['plain_replay_us']:8.2f} -> "
            f"{row['guarded_replay_us']:8.2f} us (+{row['added_replay_us']:.2f}); eager "
            f"{row['plain_eager_us']:8.2f} -> {row['guarded_eager_us']:8.2f} us "
            f"(+{row['added_eager_us']:.2f}); graph nodes {row['plain_graph_nodes']} -> "
            f"{row['guarded_graph_nodes']}",
            flush=True,
        )
    sinks = {}
    for name in dict.fromkeys(r["sink"] for r in rows):
        mine = [r for r in rows if r["sink"] == name]
        sinks[name] = {
            "path": mine[0]["path"],
            "batches": len(mine),
            "median_added_replay_us": round(median([r["added_replay_us"] for r in mine]), 2),
            "median_added_eager_us": round(median([r["added_eager_us"] for r in mine]), 2),
            "max_added_replay_us": max(r["added_replay_us"] for r in mine),
        }
        sinks[name]["meets_target"] = sinks[name]["max_added_replay_us"] < TARGET_US
    report = {
        "gpu": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "per_graph": args.per_graph,
        "replays": args.replays,
        "eager_calls": args.eager,
        "rounds": args.rounds,
        "target_added_replay_us": TARGET_US,
        "rows": rows,
        "sinks": sinks,
    }
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")
    over = [name for name, s in sinks.items() if not s["meets_target"]]
    for name in over:
        print(
            f"over target: {name}: up to +{sinks[name]['max_added_replay_us']} us per call "
            f"in replay (over {sinks[name]['batches']} batches)"
        )
    return 1 if over else 0


if __name__ == "__main__":
    raise SystemExit(main())
