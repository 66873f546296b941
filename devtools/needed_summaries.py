"""How much of a cold check's interpretation its findings need (docs/speed.md).

A check interprets every function of every file that names a sink (and of the files its
paths are resolved through). This runs one check of a tree, in this process, and prints:

* the functions interpreted, and the seconds spent in each one's own interpretation (its
  callees' excluded), summed;
* the summaries a finding can start from (a sink call in them, or a parameter forwarded to
  one) and every summary or cached answer their making used (``DepNode.edges``), with the
  share of the interpretation time those took: a lower bound of what a check that
  interpreted on demand would still do (resolving the paths makes more on demand anyway);
* each parsed module whose functions were none of them interpreted: parsed (and built)
  for a question about its text or its classes alone.

    python -m devtools.needed_summaries vllm==0.33.0 [--select ALL --ignore ZL920]
    python -m devtools.needed_summaries path/to/tree/pkg
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import os
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from zerolint import engine
from zerolint.config import load_settings
from zerolint.dataflow import analyzer
from zerolint.discovery import discover


def tree_of(spec: str) -> Path:
    """A folder, or a serving wheel's package (``vllm==0.33.0``), fetched once."""
    if "==" not in spec:
        return Path(spec)
    from devtools.wheels import serving_tree

    folder, package = serving_tree(spec)
    return folder / package


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", help="a folder to check, or a wheel: vllm==0.33.0")
    parser.add_argument("--select", default="ALL")
    parser.add_argument("--ignore", default="ZL920")
    args = parser.parse_args(argv)
    folder = tree_of(args.tree).resolve()
    os.chdir(folder.parent)
    settings = load_settings([Path(folder.name)])
    settings = dataclasses.replace(
        settings,
        select=frozenset(filter(None, args.select.split(","))),
        ignore=frozenset(filter(None, args.ignore.split(","))),
    )
    files = discover([Path(folder.name)], settings.exclude, settings.root).files

    own: Counter[analyzer.FuncKey] = Counter()
    nested: list[float] = []
    interpret = analyzer.Analyzer._interpret

    def timed(self: analyzer.Analyzer, key: analyzer.FuncKey) -> analyzer.Summary:
        start = time.perf_counter()
        nested.append(0.0)
        try:
            return interpret(self, key)
        finally:
            elapsed = time.perf_counter() - start
            own[key] += elapsed - nested.pop()
            if nested:
                nested[-1] += elapsed

    kept: dict[str, analyzer.Analyzer] = {}
    analyse = engine.Engine.analyse

    def keeping(self: engine.Engine, project, found: analyzer.Analyzer, on_file, skip):
        kept["analyzer"] = found
        return analyse(self, project, found, on_file, skip)

    # Patched for this one check only: a caller's later checks (a test's) run unpatched and
    # keep no reference to this one's summaries and parses.
    analyzer.Analyzer._interpret = timed  # type: ignore[method-assign]
    engine.Engine.analyse = keeping  # type: ignore[method-assign]
    collecting = gc.isenabled()
    gc.disable()  # as `zerolint check` runs
    try:
        outcome = engine.Engine(settings).run(files)
    finally:
        analyzer.Analyzer._interpret = interpret  # type: ignore[method-assign]
        engine.Engine.analyse = analyse  # type: ignore[method-assign]
        if collecting:
            gc.enable()
    found = kept["analyzer"]

    starts = [k for k, s in found.summaries.items() if s.hits or any(s.forwards.values())]
    key_of = {id(node): key for key, node in found.summary_deps.items()}
    needed: set[analyzer.FuncKey] = set()
    seen: set[int] = set()
    todo = [found.summary_deps[k] for k in starts if k in found.summary_deps]
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if id(node) in key_of:
            needed.add(key_of[id(node)])
        todo += node.edges
    total = sum(own.values())
    used = sum(own[k] for k in needed)
    report = outcome.report
    print(f"{args.tree}: {len(files)} files checked, findings: {len(report.findings)}")
    print(f"functions interpreted: {len(own)}, {total:.3f} s of their own interpretation")
    print(f"summaries a finding can start from: {len(starts)}")
    share = used / total if total else 0.0
    print(f"they and what their making used: {len(needed)}, {used:.3f} s ({share:.0%})")
    made = {id(k.node) for k in own if k.node is not None}
    idle = []
    for mod in found.project.parsed():
        defined = list(mod.functions.values()) + [
            m for c in mod.classes.values() for m in c.methods.values()
        ]
        if defined and not any(id(f) in made for f in defined):
            idle.append((len(mod.text.splitlines()), mod.display, len(defined)))
    print(f"parsed modules none of whose {sum(n for *_, n in idle)} functions was interpreted:")
    for lines, shown, count in sorted(idle, reverse=True):
        print(f"  {shown} ({count} functions, {lines} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
