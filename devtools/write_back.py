"""Which files LibCST does not write back byte for byte, and whether ``fix.writes_back``
sees each (docs/pre-commit.md).

``--fix`` edits LibCST's tree and writes it out, so it refuses a file LibCST would not
write back as it read it (a form feed before a statement, ``except A :``...). A check
marks a finding ``[*]`` without parsing the file with LibCST: ``fix.writes_back`` parses
only a text that holds one of the known causes. This parses every ``.py`` file under the
folders given (default: Python's standard library) and prints each file LibCST changes,
with ``missed`` where ``writes_back`` took it for one it writes back: a cause the text
check does not know yet. It exits 1 when one is missed.

    python -m devtools.write_back
    python -m devtools.write_back ~/.cache/zerolint/wheels/trees/vllm-0.33.0-py
"""

from __future__ import annotations

import argparse
import sys
import sysconfig
from pathlib import Path

import libcst as cst

from zerolint.fix import writes_back


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", type=Path)
    args = parser.parse_args(argv)
    folders = args.folders or [Path(sysconfig.get_paths()["stdlib"])]
    files = changed = missed = unparsed = 0
    for folder in folders:
        for path in sorted(folder.rglob("*.py")):
            try:  # as a check reads it: a BOM is not part of the text
                source = path.read_bytes().decode("utf-8-sig")
            except (OSError, UnicodeDecodeError):
                continue
            try:
                same = cst.parse_module(source).code == source
            except (cst.ParserSyntaxError, RecursionError):
                unparsed += 1  # --fix cannot parse it either: it says so (ZL910)
                continue
            files += 1
            if same:
                continue
            changed += 1
            seen = not writes_back(source)
            missed += not seen
            print(f"{path}: {'seen' if seen else 'missed'}")
    print(
        f"{files} files parsed, {changed} not written back, {missed} of them missed"
        f" ({unparsed} LibCST does not parse)"
    )
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
