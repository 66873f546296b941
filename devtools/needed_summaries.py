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
  for a question about its text or its classes alone;
* the makings of summaries by where they were made (each round of the index, and the
  paths), first makings apart from makings again after a recursion, and the own time of
  every making of a function after its first: what making summaries again costs;
* at each reset between rounds of the index (``Analyzer.reset_summaries``), the summaries
  kept and dropped, and the answers whose changed tokens dropped them, by kind (a
  ``RECURSION`` by the place that noted it).

    python -m devtools.needed_summaries vllm==0.33.0 [--select ALL --ignore ZL920]
    python -m devtools.needed_summaries path/to/tree/pkg
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gc
import os
import sys
import time
from collections import Counter
from collections.abc import Iterator
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
    later: Counter[analyzer.FuncKey] = Counter()  # own time of makings after the first
    nested: list[float] = []
    interpret = analyzer.Analyzer._interpret

    def timed(self: analyzer.Analyzer, key: analyzer.FuncKey) -> analyzer.Summary:
        again = key in own
        start = time.perf_counter()
        nested.append(0.0)
        try:
            return interpret(self, key)
        finally:
            elapsed = time.perf_counter() - start
            spent = elapsed - nested.pop()
            own[key] += spent
            if again:
                later[key] += spent
            if nested:
                nested[-1] += elapsed

    phases = Phases()

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
        with phases.counting():
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
    makings = sum(phases.made.values())
    again = sum(later.values())
    print(
        f"makings: {makings} of {len(own)} functions; {len(later)} made more than once, "
        f"their later makings {again:.3f} s of the {total:.3f} s"
    )
    for phase in phases.order:
        first, rerun = phases.made[phase, False], phases.made[phase, True]
        print(f"  {phase}: {first} made, {rerun} made again after a recursion")
    for number, (kept_count, dropped, causes) in enumerate(phases.resets, 2):
        print(f"reset before index round {number}: {kept_count} summaries kept, {dropped} dropped")
        for cause, count in sorted(causes.items(), key=lambda item: (-item[1], item[0])):
            answers = "answer" if count == 1 else "answers"
            print(f"  {count} {answers} with a changed token: {cause}")
    return 0


# The methods ``Phases.counting`` wraps, in the order of its wrappers.
PATCHED = (
    (analyzer.Analyzer, "_summarise"),
    (analyzer.Analyzer, "_remake_order"),
    (analyzer.Analyzer, "reset_summaries"),
    (analyzer.Analyzer, "_stale_nodes"),
    (analyzer.Analyzer, "note"),
    (analyzer.Analyzer, "summary"),
    (engine.Engine, "findings_in"),
)


class Phases:
    """Where each summary was made (a round of the index, the paths) and whether it was
    made again after a recursion; what each reset between rounds dropped, and why. It
    patches the analyzer's methods while ``counting``: their originals are back after."""

    def __init__(self) -> None:
        self.phase = "index round 0"
        self.order: list[str] = []
        self.made: Counter[tuple[str, bool]] = Counter()
        self.resets: list[tuple[int, int, Counter[str]]] = []
        # The places that noted RECURSION in each making (by the node's id: a node is kept
        # alive by the analyzer for the whole check).
        self.sites: dict[int, set[str]] = {}
        self.remade: list[analyzer.FuncKey] = []
        self.causes: Counter[str] = Counter()  # the last reset's

    @contextlib.contextmanager
    def counting(self) -> Iterator[None]:
        originals = [(owner, name, getattr(owner, name)) for owner, name in PATCHED]
        summarise, remake_order, reset, stale_nodes, note, summary, findings_in = (
            method for _, _, method in originals
        )
        phases = self

        def counted(self: analyzer.Analyzer, key: analyzer.FuncKey) -> analyzer.Summary:
            # The rounds of making again run with nothing in progress (Analyzer.summary).
            rerun = not self._in_progress and key in phases.remade
            if phases.phase not in phases.order:
                phases.order.append(phases.phase)
            phases.made[phases.phase, rerun] += 1
            return summarise(self, key)

        def ordered(self: analyzer.Analyzer, again: list) -> list:
            phases.remade = again
            return remake_order(self, again)

        def resetting(self: analyzer.Analyzer) -> None:
            number = int(phases.phase.rsplit(" ", 1)[1]) + 1
            phases.phase = f"index round {number}"
            before = len(self.summaries)
            reset(self)
            if number > 1:
                kept_now = len(self.summaries)
                phases.resets.append((kept_now, before - kept_now, phases.causes))

        def stale(self: analyzer.Analyzer) -> set:
            phases.causes = Counter(
                cause for node in self._reachable() for cause in phases.why(self, node)
            )
            return stale_nodes(self)

        def noting(self: analyzer.Analyzer, token: object) -> None:
            if token == analyzer.RECURSION and self._making:
                caller = sys._getframe(1).f_code
                phases.sites.setdefault(id(self._making[-1]), set()).add(
                    f"RECURSION noted in {caller.co_name}"
                )
            note(self, token)

        def summarising(self: analyzer.Analyzer, key: analyzer.FuncKey) -> analyzer.Summary:
            if (
                self._making
                and key not in self.summaries
                and key not in self._in_progress
                and len(self._in_progress) > analyzer.MAX_DEPTH * 4
            ):
                phases.sites.setdefault(id(self._making[-1]), set()).add(
                    "RECURSION: the depth limit of summaries made one inside another"
                )
            outermost = not self._in_progress
            try:
                return summary(self, key)
            finally:
                if outermost:  # its rounds of making again are over
                    phases.remade = []

        def finding(self: engine.Engine, mod, found: analyzer.Analyzer) -> list:
            phases.phase = "paths"
            return findings_in(self, mod, found)

        wrappers = (counted, ordered, resetting, stale, noting, summarising, finding)
        for (owner, name, _), wrapper in zip(originals, wrappers, strict=True):
            setattr(owner, name, wrapper)
        try:
            yield
        finally:
            for owner, name, method in originals:
                setattr(owner, name, method)

    def why(self, found: analyzer.Analyzer, node: analyzer.DepNode) -> set[str]:
        """The kinds of ``node``'s tokens that changed since it was made."""
        out = set()
        for token in node.tokens:
            if not found._changed(token):
                continue
            if token == analyzer.RECURSION:
                out |= self.sites.get(id(node), {"RECURSION"})
            elif isinstance(token, tuple):
                out.add(token[0].lstrip("*").upper())
            else:
                out.add("a module parsed or found to reach a sink since")
        return out


if __name__ == "__main__":
    sys.exit(main())
