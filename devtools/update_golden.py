"""Rewrite the golden files that differ from today's output.

    python -m devtools.update_golden            # every suite
    python -m devtools.update_golden rules      # some suites, by name
    python -m devtools.update_golden --check    # only list what differs, write nothing
    python -m devtools.update_golden --list     # the suites and their file counts

Prints each file it rewrote (or would rewrite) and exits 1 when there was any, 0 when
every golden file already matched: an update is never mistaken for a passing run. Review
the diff before committing. The suites are registered in the test modules
(``tests/golden.py`` says how).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # ``python devtools/update_golden.py`` as well as ``-m``
    sys.path.insert(0, str(ROOT))

from tests import golden


def update(goldens: Iterable[golden.Golden], *, write: bool = True) -> list[golden.Golden]:
    """The goldens whose file is missing or differs from today's output, rewritten unless
    ``write`` is false. Each file is written whole (a crash leaves the old or new text)."""
    changed = []
    for case in goldens:
        actual = case.produce()
        if case.path.is_file() and case.path.read_text(encoding="utf-8") == actual:
            continue
        changed.append(case)
        if write:
            _write(case.path, actual)
    return changed


def _write(path: Path, text: str) -> None:
    partial = path.with_name(f".{path.name}.update")
    partial.write_text(text, encoding="utf-8")
    partial.replace(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devtools.update_golden", description=__doc__)
    parser.add_argument("suites", nargs="*", help="suite names (default: all)")
    parser.add_argument("--check", action="store_true", help="write nothing, list what differs")
    parser.add_argument("--list", action="store_true", help="list the suites and exit")
    args = parser.parse_args(argv)

    suites = golden.discover()
    if args.list:
        for name, cases in suites.items():
            print(f"{name}: {len(cases())} files")
        return 0
    unknown = sorted(set(args.suites) - set(suites))
    if unknown:
        parser.error(f"no golden suite named {', '.join(unknown)} (have: {', '.join(suites)})")
    chosen = args.suites or list(suites)
    changed: list[golden.Golden] = []
    total = 0
    for name in chosen:
        cases = suites[name]()
        total += len(cases)
        changed += update(cases, write=not args.check)
    verb = "differs" if args.check else "rewritten"
    for case in changed:
        print(f"{verb}: {case.name}")
    if changed:
        what = "would change" if args.check else "changed"
        print(f"{len(changed)} of {total} golden files {what}: review the diff before committing")
        return 1
    print(f"all {total} golden files match ({', '.join(chosen)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
