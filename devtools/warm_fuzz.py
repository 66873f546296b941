"""Fuzz the language server's warm index against cold checks.

Each seed makes a random package of four to eight modules (``warm_fuzz_gen.generate``:
wrappers across modules, partials, lambdas, classes with fields, dataclass constructions,
subclasses, globals, recursion, calls into modules that name no sink, guards, ...), indexes
it as ``zerolint server`` does (``server_index.WorkspaceIndex``), then applies random edits
(``warm_fuzz_gen.random_edit``: comments, deleted lines, clamps toggled, renames, imports,
code moved between modules, subclasses, guards, syntax errors and their fixes, ...). After
each file's edit, the warm index's findings and diagnostics must equal a cold check's of
the same contents, field by field (``tests/test_server_incremental.py``'s ``warm`` and
``cold``). A divergence is written to ``--out`` as JSON (the package, the edits, both
results) and the exit status is 1.

    python -m devtools.warm_fuzz [--seeds 50] [--first 0] [--steps 40] [--budget-s 600]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from devtools import warm_fuzz_gen as gen
from tests.test_server_incremental import cold, indexed, warm


def run_seed(seed: int, steps: int, work: Path, stats: dict[str, int]) -> dict | None:
    """The seed's package and edits; None, or the divergence found."""
    rng = random.Random(seed)
    texts = gen.generate(rng)
    initial = dict(texts)
    root = work / f"ws{seed}"
    index = indexed(root, texts, texts)
    context = index.context_for(root / "pkg/m0.py")
    assert context is not None
    edits: list[tuple[str, str, str]] = []
    want = cold(work / f"cold{seed}", texts)
    got = warm(index, root, texts)
    stats["with_findings"] += int(any(f for f, _ in want.values()))
    pending: dict[str, str] = {}
    for _ in range(steps):
        if got != want:
            break
        name, changed = gen.random_edit(rng, texts, pending)
        for rel, new in changed:
            texts[rel] = new
            edits.append((name, rel, new))
            before, again = context.analyzer, context.runs_made_again
            index.analyse(root / rel, new)
            got = warm(index, root, texts)
            previous, want = want, cold(work / f"cold{seed}", texts)
            stats["edits"] += 1
            stats["changed"] += int(want != previous)
            if context.analyzer is not before:
                stats["runs"] += 1
                stats["replayed"] += int(context.engine.stats.get("replayed", 0))
                stats["interpreted"] += int(context.engine.stats.get("interpreted", 0))
            stats["made_again"] += context.runs_made_again - again
            if got != want:
                break
    if got == want:
        return None
    return {
        "seed": seed,
        "initial": initial,
        "edits": edits,
        "warm": repr(got),
        "cold": repr(want),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--first", type=int, default=0, help="the first seed")
    parser.add_argument("--seeds", type=int, default=50, help="how many seeds")
    parser.add_argument("--steps", type=int, default=40, help="random edits per seed")
    parser.add_argument("--budget-s", type=float, default=600.0, help="stop starting seeds after")
    parser.add_argument("--out", type=Path, default=Path("warm-fuzz-divergences"))
    args = parser.parse_args(argv)
    keys = ("seeds", "with_findings", "edits", "changed", "runs", "replayed", "interpreted")
    stats = dict.fromkeys((*keys, "made_again", "divergences"), 0)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.first, args.first + args.seeds):
            if time.perf_counter() - started > args.budget_s:
                break
            work = Path(tmp) / f"seed{seed}"
            stats["seeds"] += 1
            found = run_seed(seed, args.steps, work, stats)
            shutil.rmtree(work, ignore_errors=True)
            if found is not None:
                stats["divergences"] += 1
                args.out.mkdir(parents=True, exist_ok=True)
                saved = args.out / f"seed{seed}.json"
                saved.write_text(json.dumps(found, indent=1))
                print(f"warm_fuzz: seed {seed}: the warm index differs from a cold check: {saved}")
    seconds = time.perf_counter() - started
    print("warm_fuzz: " + ", ".join(f"{k} {v}" for k, v in stats.items()) + f" in {seconds:.0f} s")
    return 1 if stats["divergences"] else 0


if __name__ == "__main__":
    sys.exit(main())
