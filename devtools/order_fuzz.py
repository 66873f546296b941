"""Fuzz a cold check against itself with the modules renamed.

A check's findings must not depend on the names of a package's modules. Their names decide
the order in which the modules are parsed and their functions interpreted, and where the
functions of modules that import each other ask for each other's summaries, globals and
fields while these are still being worked out, that order decides which of them meets a
partial answer. Each seed makes a random package (``warm_fuzz_gen.generate``, with up to
``--edits`` random edits applied, as ``warm_fuzz`` makes them), checks it, renames its
modules ``m0 ... mN`` by a random permutation (every whole word ``mK`` of every file, so
imports and ``m3.NAME`` follow), checks it again and maps the findings back. A seed whose
two sets of findings differ is written to ``--out`` as JSON (the package, the
permutation, both sets) and the exit status is 1.

    python -m devtools.order_fuzz [--first 0] [--seeds 200] [--edits 10] [--budget-s 600]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from devtools import warm_fuzz_gen as gen
from tests.test_server_incremental import cold

MODULE = re.compile(r"pkg/m(\d+)\.py")
MODULE_WORD = re.compile(r"\bm(\d+)\b")

Found = tuple[str, int, int, str]  # file, line, column, code


def package(seed: int, edits: int) -> dict[str, str]:
    """The seed's package: generated, then up to ``edits`` random edits applied."""
    rng = random.Random(seed)
    texts = gen.generate(rng)
    pending: dict[str, str] = {}
    for _ in range(rng.randrange(edits + 1)):
        _, changed = gen.random_edit(rng, texts, pending)
        texts.update(changed)
    return texts


def permutation(seed: int, texts: dict[str, str]) -> dict[int, int]:
    """A random renaming of the package's modules (``m3`` -> ``m0`` ...), drawn from
    ``seed`` alone, so that a seed's package and renaming can be made again."""
    numbers = sorted(int(m.group(1)) for rel in texts if (m := MODULE.fullmatch(rel)))
    shuffled = numbers[:]
    random.Random(seed).shuffle(shuffled)
    return dict(zip(numbers, shuffled))


def renamed(texts: dict[str, str], perm: dict[int, int]) -> dict[str, str]:
    def rename(match: re.Match[str]) -> str:
        number = int(match.group(1))
        return f"m{perm.get(number, number)}"

    return {
        MODULE_WORD.sub(rename, rel): MODULE_WORD.sub(rename, text) for rel, text in texts.items()
    }


def check(root: Path, texts: dict[str, str]) -> list[Found]:
    """A cold check of ``texts`` written to ``root``, as the warm fuzz's (``cold``): its
    findings, sorted."""
    return sorted(
        (key[1], key[2], key[3], key[0]) for found, _ in cold(root, texts).values() for key in found
    )


def run_seed(seed: int, edits: int, work: Path) -> dict | None:
    """None, or the seed's package, renaming and both findings where they differ."""
    texts = package(seed, edits)
    perm = permutation(seed, texts)
    want = check(work / "as-named", texts)
    back = {v: k for k, v in perm.items()}
    got = sorted(
        (MODULE_WORD.sub(lambda m: f"m{back.get(int(m.group(1)), int(m.group(1)))}", rel), *rest)
        for rel, *rest in check(work / "renamed", renamed(texts, perm))
    )
    if got == want:
        return None
    return {
        "seed": seed,
        "edits": edits,
        "texts": texts,
        "permutation": perm,
        "as_named_only": sorted(set(want) - set(got)),
        "renamed_only": sorted(set(got) - set(want)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--first", type=int, default=0, help="the first seed")
    parser.add_argument("--seeds", type=int, default=200, help="how many seeds")
    parser.add_argument("--edits", type=int, default=10, help="at most this many random edits")
    parser.add_argument("--budget-s", type=float, default=600.0, help="stop starting seeds after")
    parser.add_argument("--out", type=Path, default=Path("order-fuzz-differences"))
    args = parser.parse_args(argv)
    started = time.perf_counter()
    seeds = differ = 0
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.first, args.first + args.seeds):
            if time.perf_counter() - started > args.budget_s:
                break
            seeds += 1
            found = run_seed(seed, args.edits, Path(tmp) / f"seed{seed}")
            shutil.rmtree(Path(tmp) / f"seed{seed}", ignore_errors=True)
            if found is not None:
                differ += 1
                args.out.mkdir(parents=True, exist_ok=True)
                saved = args.out / f"seed{seed}.json"
                saved.write_text(json.dumps(found, indent=1), encoding="utf-8")
                print(
                    f"order_fuzz: seed {seed}: the findings depend on the modules' names: "
                    f"{found['as_named_only']} as named, {found['renamed_only']} renamed ({saved})"
                )
    seconds = time.perf_counter() - started
    print(f"order_fuzz: seeds {seeds}, differ {differ} in {seconds:.0f} s")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
