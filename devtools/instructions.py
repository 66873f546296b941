"""Instructions a check executes, of this checkout and of another revision (docs/speed.md).

Wall time on a shared machine moves 10% to 40% from one minute to the next; the number of
instructions a run executes, counted by Valgrind's ``callgrind``, moves about a part in a
thousand. To tell whether a change made zerolint faster, this runs the same check with the
code of this checkout and with the code of ``--base`` (a git revision, checked out into a
scratch work tree) on a scratch copy of a tree, and prints each one's instructions (the
check, and the prescan's child where a cold run forks one) and their ratio.

Cases: ``warm`` (the cache filled by two runs first), ``hook`` (``--force-exclude
--touching FILE``, the default pre-commit hook, warm) and ``cold`` (``--no-cache``).
Options after ``--`` go to ``zerolint check`` (``-- --select ALL --ignore ZL920``).

    python -m devtools.instructions --base HEAD~1 --tree vllm==0.33.0 --case warm --case hook
    python -m devtools.instructions --base main --source path/to/tree --case cold

Needs ``valgrind`` on the PATH and, for ``--base``, git. A cold run under callgrind takes
about fifty times its usual time (a minute for vLLM 0.33.0).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from zerolint.cache import RACY_NS

ROOT = Path(__file__).resolve().parent.parent
COLLECTED = re.compile(r"^==(\d+)== Collected : (\d+)$", re.MULTILINE)
CASES = ("warm", "hook", "cold")


class Failed(Exception):
    """A run that did not end as a check does (exit 0 or 1), or valgrind's output without
    a count: the one line to print."""


def check_command(case: str, hook_file: str | None, extra: list[str]) -> list[str]:
    """``zerolint check`` as ``case`` runs it, in the tree's folder."""
    command = [sys.executable, "-m", "zerolint", "check", "-q", *extra]
    if case == "cold":
        return [*command, "--no-cache", "."]
    if case == "hook":
        if hook_file is None:
            raise Failed("--case hook needs --hook-file (no default for this tree)")
        return [*command, "--force-exclude", "--touching", hook_file]
    return [*command, "."]


def counted(stderr: str) -> list[int]:
    """The instructions of each process callgrind followed, in the order they were started
    (the check before the child it forked)."""
    found = sorted((int(pid), int(n)) for pid, n in COLLECTED.findall(stderr))
    return [n for _, n in found]


def run_counted(command: list[str], tree: Path, code: Path, case: str) -> list[int]:
    """Instructions of ``command`` run in ``tree`` with zerolint's code from ``code``,
    once the cache is warm where ``case`` wants it."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(code)
    # A run first, in every case: it writes the bytecode of the code it imports (a cold
    # run's command leaves the cache alone), so that no count includes compiling zerolint:
    # a fresh work tree (``--base``) has none, this checkout's may be stale. A warm case
    # takes a second one, which finds the cache the first one filled.
    for _ in range(1 if case == "cold" else 2):
        _run(command, tree, env)
    valgrind = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    stderr = _run([*valgrind, *command], tree, env)
    counts = counted(stderr)
    if not counts:
        raise Failed(f"valgrind printed no count: {stderr.strip()[-300:]}")
    return counts


def _run(command: list[str], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):
        raise Failed(f"{' '.join(command[-6:])} exited {done.returncode}: {done.stderr.strip()}")
    return done.stderr


def base_tree(revision: str, into: Path) -> Path:
    """This repository's code at ``revision``, in a work tree of its own under ``into``."""
    where = into / "base"
    done = subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(where), revision],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise Failed(f"cannot check out {revision}: {done.stderr.strip()}")
    return where


def drop_base_tree(where: Path) -> None:
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(where)],
        capture_output=True,
        check=False,
    )


def compare(
    tree: Path, sides: dict[str, Path], cases: list[str], hook_file: str | None, extra: list[str]
) -> list[str]:
    """One line per case: each side's instructions and the last side's over the first's."""
    lines = []
    for case in cases:
        command = check_command(case, hook_file, extra)
        counts = {name: run_counted(command, tree, code, case) for name, code in sides.items()}
        shown = "  ".join(
            f"{name} {'; '.join(f'{n / 1e6:,.1f} M' for n in found)}"
            for name, found in counts.items()
        )
        totals = [sum(found) for found in counts.values()]
        ratio = f"  {totals[-1] / totals[0]:.3f}x" if len(totals) > 1 else ""
        lines.append(f"{case:>5}: {shown}{ratio}")
    return lines


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    extra: list[str] = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1 :]
        argv = argv[: argv.index("--")]
    parser = argparse.ArgumentParser(prog="python -m devtools.instructions")
    parser.add_argument("--base", help="a git revision to compare this checkout with")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--tree", default="vllm==0.33.0", help="a serving tree (vllm==X, sglang==X)")
    where.add_argument("--source", type=Path, help="a folder to check instead")
    parser.add_argument("--case", action="append", choices=CASES, help="default: warm")
    parser.add_argument("--hook-file", help="the file --case hook touches")
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("instructions: valgrind is not installed", file=sys.stderr)
        return 2
    scratch = Path(tempfile.mkdtemp(prefix="zerolint-instructions-"))
    base = None
    try:
        tree = scratch / "tree"
        hook_file = args.hook_file
        if args.source is not None:
            shutil.copytree(args.source, tree)
        else:
            from devtools.wheels import HOOK_FILE, serving_tree

            source, package = serving_tree(args.tree)
            shutil.copytree(source / package, tree / package)
            hook_file = hook_file or HOOK_FILE[package]
        # A file changed less than RACY_NS before a run is hashed again by the next: a copy
        # that fresh would make the first side's warm runs read the whole tree.
        time.sleep(RACY_NS / 1e9)
        sides = {}
        if args.base is not None:
            base = base_tree(args.base, scratch)
            sides[f"base ({args.base})"] = base
        sides["this checkout"] = ROOT
        for line in compare(tree, sides, args.case or ["warm"], hook_file, extra):
            print(line)
    except Failed as exc:
        print(f"instructions: {exc}", file=sys.stderr)
        return 1
    finally:
        if base is not None:
            drop_base_tree(base)
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
