"""Every module of a large tree, each with a sink call added, checked one by one (docs/speed.md).

The serving trees name a sink in a few dozen files; a tree where many files do makes the
analysis interpret whole modules of code written for other purposes (a parser's stack, a
table of functions calling each other, generated tables). This copies each ``.py`` file of
``--source`` (default: Python's own standard library) into a scratch folder with a small
function at its end that divides lengths and passes them to
``get_paged_mqa_logits_metadata``, checks each file alone with ``zerolint check --no-cache``
under a time limit, and prints the slowest, every file that ran out of time, and every run
that ended otherwise than with the added finding (exit 1): a ZL9xx limit, an internal
error, or Python failing (shown as exit -1). It exits 1 when a file ran out of time or a
run failed.

    python -m devtools.stress                       # the standard library
    python -m devtools.stress --source .venv/lib/python3.11/site-packages --jobs 2
    python -m devtools.stress --whole               # also one check of all of them at once
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import sysconfig
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

PROBE = """

from deep_gemm import get_paged_mqa_logits_metadata as _zerolint_stress_sink


def _zerolint_stress_probe(seq_lens, num_sms):
    lens = seq_lens // 4
    return _zerolint_stress_sink(lens, 64, num_sms)
"""
CHECK = [sys.executable, "-m", "zerolint", "check", "--no-cache"]
SKIPPED_PARTS = {"test", "tests", "__pycache__", "site-packages", "dist-packages"}


def copy_tree(source: Path, into: Path) -> list[Path]:
    """Each readable UTF-8 ``.py`` file of ``source`` outside test folders and the
    installed packages below it (the standard library's folder holds ``site-packages``),
    flattened into ``into`` (a file's folders joined by ``__``) with ``PROBE`` at its end."""
    out = []
    for path in sorted(source.rglob("*.py")):
        rel = path.relative_to(source)
        if SKIPPED_PARTS & set(rel.parts[:-1]):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        target = into / "__".join(rel.parts)
        target.write_text(text + PROBE, encoding="utf-8")
        out.append(target)
    return out


def check(path: Path, timeout: float) -> tuple[Path, float, int | None, str]:
    """Seconds, exit status (None: out of time; -1: exit 1 without the added function's
    finding, Python itself failing) and the first line of stderr. Run from the folder
    above the copies: a copy named as a module of the standard library (``runpy.py``) must
    not shadow it."""
    start = time.perf_counter()
    try:
        done = subprocess.run(
            [*CHECK, "--color", "never", f"{path.parent.name}/{path.name}"],
            cwd=path.parent.parent,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return path, time.perf_counter() - start, None, ""
    first = (done.stderr.strip().splitlines() or [""])[0]
    status = done.returncode
    if status == 1 and " ZL001 " not in done.stdout:
        status = -1
    if status != 1:
        first = first or (done.stdout.strip().splitlines() or [""])[0]
    return path, time.perf_counter() - start, status, first


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=Path(sysconfig.get_paths()["stdlib"]))
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds a file may take")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--slowest", type=int, default=10)
    parser.add_argument("--whole", action="store_true", help="also check all files at once")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="zerolint-stress-") as scratch:
        tree = Path(scratch) / "tree"
        tree.mkdir()
        files = copy_tree(args.source, tree)
        print(f"{len(files)} files from {args.source}, {args.jobs} at a time")
        with ThreadPoolExecutor(args.jobs) as pool:
            results = list(pool.map(lambda p: check(p, args.timeout), files))
        results.sort(key=lambda r: r[1], reverse=True)
        print(f"slowest {args.slowest}:")
        for path, seconds, status, _ in results[: args.slowest]:
            shown = "out of time" if status is None else f"exit {status}"
            print(f"  {seconds:7.2f} s  {shown:11}  {path.name}")
        late = [r for r in results if r[2] is None]
        other = [r for r in results if r[2] is not None and r[2] != 1]
        print(f"out of time ({args.timeout:g} s): {len(late)}")
        for path, _, _, _ in late:
            print(f"  {path.name}")
        print(f"not exit 1: {len(other)}")
        for path, _, status, line in other:
            print(f"  exit {status}  {path.name}: {line}")
        if args.whole:
            start = time.perf_counter()
            done = subprocess.run(
                [*CHECK, "--timings", "tree"],
                cwd=scratch,
                capture_output=True,
                text=True,
                check=False,
            )
            timings = [ln for ln in done.stderr.splitlines() if "timings:" in ln]
            print(f"all at once: exit {done.returncode}, {time.perf_counter() - start:.1f} s")
            print("  " + (timings[0] if timings else done.stderr.strip()[:200]))
    crashed = [r for r in other if r[2] == -1 or "internal error" in r[3]]
    return 1 if late or crashed else 0


if __name__ == "__main__":
    sys.exit(main())
