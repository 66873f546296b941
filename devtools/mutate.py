"""Run the curated mutation set: each mutant must be killed by the tests named for it.

    python -m devtools.mutate                        # every mutant in devtools/mutants.toml
    python -m devtools.mutate "smt-*" clamp-to-zero  # some, by id (shell-style patterns)
    python -m devtools.mutate --jobs 2               # two scratch copies, two at a time
    python -m devtools.mutate --targets              # only check that every mutant applies
    python -m devtools.mutate --list                 # ids, places and why each one matters

A mutant is one realistic bug, kept as data: a file, the function it lives in, a snippet of
its text and what the snippet becomes. The snippet must occur exactly once in that function
(matching is by text, not line numbers, so edits elsewhere do not disturb it); when the
function or the snippet is gone the mutant is STALE, an error, with a hint of where the
function or text went. Each mutant is applied in a scratch copy of the repository (never
in the working tree) and only its own tests run there, with ``PYTHONPATH`` pointing at the
copy so that subprocesses import the mutated code too.

The kill table has one row per mutant: ``killed`` (with the first failing test), SURVIVED,
STALE, ERROR (its tests could not run), or ``equivalent`` (documented as changing nothing a
user can see; it must survive, and a kill means the note is wrong). Before the mutants, the
union of their tests runs once on the unmutated copy: a test that fails there kills nothing.
Exit 0 when every mutant is killed or documented equivalent, 1 otherwise, 2 on bad usage.
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
MUTANTS = Path(__file__).resolve().parent / "mutants.toml"
MODULE = "<module>"  # a mutant in module-level code (a table, a constant)
_SKIP = {".git", ".venv", "__pycache__", ".pytest_cache", ".ruff_cache", ".hypothesis"}
_FAILED = re.compile(r"^(?:FAILED|ERROR) (.+?)(?: - .*)?$", re.MULTILINE)  # -ra's summary
_FIELDS = {"id", "file", "function", "original", "mutated", "why", "tests", "equivalent"}


@dataclass(frozen=True)
class Mutant:
    id: str
    file: str
    function: str
    original: str
    mutated: str
    why: str
    tests: tuple[str, ...]
    equivalent: str = ""  # why no test can tell it apart, when it cannot


@dataclass
class Outcome:
    mutant: Mutant
    status: str  # killed, SURVIVED, STALE, ERROR, equivalent
    detail: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status in ("killed", "equivalent")


class MutantsError(ValueError):
    """The mutation set itself is malformed."""


def load(path: Path) -> list[Mutant]:
    """The mutants of a ``mutants.toml``, in file order; MutantsError names what is wrong."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise MutantsError(f"{path}: {exc}") from None
    mutants, seen = [], set()
    for i, row in enumerate(data.get("mutant", []), 1):
        where = f"{path.name}: mutant {row.get('id', f'#{i}')}"
        unknown = set(row) - _FIELDS
        missing = {"id", "file", "function", "original", "mutated", "why", "tests"} - set(row)
        if unknown or missing:
            raise MutantsError(f"{where}: unknown {sorted(unknown)}, missing {sorted(missing)}")
        if row["id"] in seen:
            raise MutantsError(f"{where}: the id is used twice")
        if row["original"] == row["mutated"]:
            raise MutantsError(f"{where}: the mutated text is the original")
        if not row["tests"]:
            raise MutantsError(f"{where}: names no test")
        seen.add(row["id"])
        mutants.append(Mutant(**{**row, "tests": tuple(row["tests"])}))
    if not mutants:
        raise MutantsError(f"{path}: no [[mutant]] tables")
    return mutants


# ----------------------------------------------------------------- finding the snippet


def locate(mutant: Mutant, root: Path) -> tuple[int, str]:
    """The offset of the mutant's snippet in its file, or (-1, why it is stale)."""
    path = root / mutant.file
    if not path.is_file():
        return -1, f"{mutant.file} does not exist{_hint(mutant, root)}"
    text = path.read_text(encoding="utf-8")
    span = _function_span(text, mutant.function) if mutant.function != MODULE else (0, len(text))
    if span is None:
        return -1, f"no function {mutant.function} in {mutant.file}{_hint(mutant, root)}"
    start, end = span
    count = text.count(mutant.original, start, end)
    if count != 1:
        what = "is gone from" if count == 0 else f"occurs {count} times in"
        return -1, f"the original text {what} {mutant.function}{_hint(mutant, root)}"
    return text.index(mutant.original, start, end), ""


def _function_span(text: str, dotted: str) -> tuple[int, int] | None:
    """Character span of ``name`` or ``Class.method`` (its decorators and body)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    scope: Sequence[ast.stmt] = tree.body
    node: ast.stmt | None = None
    for part in dotted.split("."):
        node = next(
            (
                n
                for n in scope
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and n.name == part
            ),
            None,
        )
        if node is None:
            return None
        scope = node.body
    assert node is not None and node.end_lineno is not None
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts[first - 1], starts[node.end_lineno]


def _hint(mutant: Mutant, root: Path) -> str:
    """Where the function or the snippet went, to retarget the mutant."""
    name = mutant.function.rsplit(".", 1)[-1]
    # A refactor often makes a private helper public: `_name` and `name` both count.
    plain = name.lstrip("_")
    defines = re.compile(rf"^\s*(?:async\s+)?def _*{re.escape(plain)}\b", re.MULTILINE)
    top = Path(mutant.file).parts[0]
    found_def, found_text = [], []
    for path in sorted((root / top).rglob("*.py")) if (root / top).is_dir() else []:
        text = path.read_text(encoding="utf-8", errors="replace")
        rel = path.relative_to(root).as_posix()
        if mutant.function != MODULE and defines.search(text):
            found_def.append(rel)
        if mutant.original in text:
            found_text += [f"{rel}:{where}" for where in _holders(text, mutant.original)]
    hints = []
    if found_def:
        hints.append(f"def {plain} is in {', '.join(found_def)}")
    if found_text:
        hints.append(f"the text is in {', '.join(found_text)}")
    return f" ({'; '.join(hints)})" if hints else " (retarget or retire it)"


def _holders(text: str, snippet: str) -> list[str]:
    """The innermost function (``Class.method``) holding each occurrence of ``snippet``."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return [MODULE]
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    spans: list[tuple[int, int, str]] = []

    def visit(body: Sequence[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{node.name}"
                assert node.end_lineno is not None
                spans.append((starts[node.lineno - 1], starts[node.end_lineno], name))
                visit(node.body, f"{name}.")

    visit(tree.body, "")
    found, at = [], text.find(snippet)
    while at >= 0:
        inside = [s for s in spans if s[0] <= at < s[1]]
        found.append(max(inside, key=lambda s: s[0])[2] if inside else MODULE)
        at = text.find(snippet, at + 1)
    return found


# ----------------------------------------------------------------- scratch copies


def scratch_copy(root: Path, into: Path) -> Path:
    """A copy of the repository's files (tracked and untracked, not ignored) under ``into``."""
    files = _repository_files(root)
    for rel in files:
        target = into / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / rel, target)
    return into


def _repository_files(root: Path) -> list[str]:
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=root,
            capture_output=True,
            check=True,
        ).stdout.decode()
        names = [n for n in listed.split("\0") if n]
        return [n for n in names if (root / n).is_file() and not _SKIP & set(Path(n).parts)]
    except (OSError, subprocess.CalledProcessError):
        return [
            p.relative_to(root).as_posix()
            for p in sorted(root.rglob("*"))
            if p.is_file() and not _SKIP & set(p.relative_to(root).parts)
        ]


def run_tests(copy: Path, tests: Sequence[str], timeout: float) -> tuple[int | None, str]:
    """(pytest's exit code or None on a time-out, its output) for ``tests`` in ``copy``."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(copy), os.environ.get("PYTHONPATH", "")]).rstrip(
            os.pathsep
        ),
        # A mutated file and its restored original can share size and mtime second: never
        # let a cached bytecode file stand in for either.
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    env.pop("ZEROLINT_UPDATE_GOLDEN", None)
    # A fixed Hypothesis seed: a property test kills a mutant on every run or on none.
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider"]
    command += ["--hypothesis-seed=0", *tests]
    try:
        proc = subprocess.run(
            command,
            cwd=copy,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout or ""
        return None, out.decode(errors="replace") if isinstance(out, bytes) else out
    return proc.returncode, proc.stdout + proc.stderr


def first_failure(output: str) -> str:
    found = _FAILED.search(output)
    return found.group(1) if found else ""


# ----------------------------------------------------------------- one mutant


def check_one(mutant: Mutant, copy: Path, timeout: float) -> Outcome:
    started = time.monotonic()
    offset, stale = locate(mutant, copy)
    if offset < 0:
        return Outcome(mutant, "STALE", stale)
    path = copy / mutant.file
    original = path.read_text(encoding="utf-8")
    mutated = original[:offset] + mutant.mutated + original[offset + len(mutant.original) :]
    path.write_text(mutated, encoding="utf-8")
    try:
        code, output = run_tests(copy, mutant.tests, timeout)
    finally:
        path.write_text(original, encoding="utf-8")
    seconds = time.monotonic() - started
    outcome = _classify(mutant, code, output, timeout)
    outcome.seconds = seconds
    return outcome


def _classify(mutant: Mutant, code: int | None, output: str, timeout: float) -> Outcome:
    if code is None:
        status, detail = "killed", f"time-out after {timeout:.0f}s"
    elif code == 1:
        status, detail = "killed", first_failure(output) or "a failing test"
    elif code == 2:
        status, detail = "killed", f"collection error: {first_failure(output) or 'see output'}"
    elif code == 0:
        status, detail = "SURVIVED", f"{', '.join(mutant.tests)} passed"
    else:
        tail = output.strip().splitlines()[-1:] or [""]
        return Outcome(mutant, "ERROR", f"pytest exit {code}: {tail[0]}")
    if mutant.equivalent:
        if status == "SURVIVED":
            return Outcome(mutant, "equivalent", mutant.equivalent)
        return Outcome(mutant, "ERROR", f"documented equivalent but {detail} kills it")
    return Outcome(mutant, status, detail)


# ----------------------------------------------------------------- the run


def select(mutants: list[Mutant], patterns: Sequence[str]) -> list[Mutant]:
    if not patterns:
        return mutants
    chosen = [m for m in mutants if any(fnmatch.fnmatchcase(m.id, p) for p in patterns)]
    unmatched = [p for p in patterns if not any(fnmatch.fnmatchcase(m.id, p) for m in mutants)]
    if unmatched:
        raise MutantsError(f"no mutant matches {', '.join(unmatched)}")
    return chosen


def run_all(
    mutants: list[Mutant], root: Path, *, jobs: int, timeout: float, baseline: bool
) -> Iterator[Outcome | str]:
    """Outcomes as each mutant finishes (file order within the table), preceded by notes."""
    with tempfile.TemporaryDirectory(prefix="zerolint-mutants-") as tmp:
        copies: queue.Queue[Path] = queue.Queue()
        first = scratch_copy(root, Path(tmp) / "copy0")
        copies.put(first)
        for i in range(1, jobs):
            copies.put(scratch_copy(root, Path(tmp) / f"copy{i}"))
        if baseline:
            tests = list(dict.fromkeys(t for m in mutants for t in m.tests))
            started = time.monotonic()
            code, output = run_tests(first, tests, timeout * 4)
            if code != 0:
                raise BaselineFailed(code, output)
            yield f"baseline: {len(tests)} test selections pass unmutated ({_secs(started)})"

        def work(mutant: Mutant) -> Outcome:
            copy = copies.get()
            try:
                return check_one(mutant, copy, timeout)
            finally:
                copies.put(copy)

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            yield from pool.map(work, mutants)


class BaselineFailed(RuntimeError):
    def __init__(self, code: int | None, output: str) -> None:
        super().__init__(f"pytest exit {code}")
        self.output = output


def _secs(started: float) -> str:
    return f"{time.monotonic() - started:.1f}s"


def table(outcomes: list[Outcome]) -> str:
    rows = [("mutant", "result", "killed by / why", "time")]
    for o in outcomes:
        rows.append((o.mutant.id, o.status, o.detail, f"{o.seconds:.1f}s" if o.seconds else "-"))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    return "\n".join(
        f"{a:<{widths[0]}}  {b:<{widths[1]}}  {c:<{widths[2]}}  {d:>6}".rstrip()
        for a, b, c, d in rows
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devtools.mutate", description=__doc__)
    parser.add_argument("ids", nargs="*", help="mutant ids or shell-style patterns (default: all)")
    parser.add_argument("--jobs", "-j", type=int, default=1, help="mutants run at once")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per mutant")
    parser.add_argument("--mutants", type=Path, default=MUTANTS, help="the mutation set")
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository to mutate")
    parser.add_argument("--targets", action="store_true", help="only check the mutants apply")
    parser.add_argument("--list", action="store_true", help="describe the mutants and exit")
    parser.add_argument(
        "--no-baseline", action="store_true", help="skip running the tests unmutated first"
    )
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be >= 1")
    try:
        mutants = select(load(args.mutants), args.ids)
    except MutantsError as exc:
        parser.error(str(exc))
    root = args.root.resolve()

    if args.list:
        for m in mutants:
            kind = f" [equivalent: {m.equivalent}]" if m.equivalent else ""
            print(f"{m.id}  {m.file}:{m.function}{kind}\n    {m.why}")
        return 0
    if args.targets:
        stale = [(m, why) for m in mutants if (why := locate(m, root)[1])]
        for m, why in stale:
            print(f"STALE {m.id}: {why}")
        print(f"{len(mutants) - len(stale)} of {len(mutants)} mutants apply")
        return 1 if stale else 0

    started = time.monotonic()
    outcomes: list[Outcome] = []
    try:
        for item in run_all(
            mutants, root, jobs=args.jobs, timeout=args.timeout, baseline=not args.no_baseline
        ):
            if isinstance(item, str):
                print(item, flush=True)
            else:
                outcomes.append(item)
                print(f"  {item.mutant.id}: {item.status} ({item.seconds:.1f}s)", flush=True)
    except BaselineFailed as exc:
        print(exc.output[-4000:], file=sys.stderr)
        print(
            f"mutate: error: the tests fail without any mutant ({exc}): fix them first",
            file=sys.stderr,
        )
        return 1
    print()
    print(table(outcomes))
    counts = {
        s: sum(o.status == s for o in outcomes) for s in dict.fromkeys(o.status for o in outcomes)
    }
    summary = ", ".join(f"{n} {s}" for s, n in counts.items())
    print(f"\n{len(outcomes)} mutants: {summary} in {_secs(started)} with {args.jobs} job(s)")
    bad = [o for o in outcomes if not o.ok]
    if bad:
        print(f"mutate: {len(bad)} mutant(s) not killed: {', '.join(o.mutant.id for o in bad)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
