"""Find the Python files to check, the way Ruff does: skip VCS, virtualenvs, build output,
what the configuration excludes and what git ignores.

Git is asked once per folder walked (``git ls-files --others --ignored --exclude-standard
--directory``: .gitignore files, ``.git/info/exclude`` and the global excludes file, as git
itself reads them), and once more per nested repository met in it; a folder outside any git
repository, or a machine without git, is walked with the other rules only.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import stat
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from zerolint.model import Diagnostic

# Folders that never hold code to lint.
SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".bzr",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".zerolint_cache",
        ".tox",
        ".nox",
        ".venv",
        "venv",
        ".eggs",
        "node_modules",
        "dist",
        "_build",
        "buck-out",
        ".hypothesis",
        ".direnv",
        "__pypackages__",
        "site-packages",
    }
)
PY_SUFFIXES = (".py", ".pyi")
# The message of the ZL902 of a path named on the command line that is not there.
NOT_FOUND = "path not found"


@dataclass(slots=True)
class Discovered:
    files: list[Path] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)


def is_excluded(path: Path, patterns: Sequence[str], root: Path | None) -> bool:
    """True when ``path``, or a folder it is in, matches an exclude glob.

    As in Ruff, globs are relative to ``root``, the folder of the configuration that holds
    them (the current folder when None), so what they match does not depend on the folder
    zerolint is run from, and no folder above ``root`` is matched. A glob with a ``/``
    (``tests/fixtures``, ``./gen``, ``**/gen``, an absolute path) is anchored at ``root``
    (``**/`` also matches no folder at all); a bare name (``gen``, ``*_pb2.py``) matches a
    file or folder of that name at any depth below it. A path outside ``root`` (a
    ``--config`` kept elsewhere) is matched relative to the current folder instead, as Ruff
    reads such a file's globs; one outside that too only by an absolute glob. No folder
    above the one the globs are relative to is ever matched: a checkout under ``/tmp`` is
    not excluded by ``tmp``."""
    if not patterns:
        return False
    anchor = os.path.abspath(root if root is not None else os.curdir)
    full = os.path.abspath(path)
    if full == anchor:
        return False  # the configuration's own folder
    if not full.startswith(os.path.join(anchor, "")):
        anchor = os.path.abspath(os.curdir)
    if full.startswith(os.path.join(anchor, "")):
        inside, parts = True, full[len(anchor) :].lstrip(os.sep).split(os.sep)
    else:
        inside, parts = False, full.split(os.sep)
    for pat in patterns:
        pat = pat.rstrip("/")
        if not pat:
            continue
        if "/" not in pat:  # a bare name, like .gitignore's: at any depth below the anchor
            if inside and any(fnmatch.fnmatch(part, pat) for part in parts if part):
                return True
            continue
        target = os.path.normpath(os.path.join(anchor, pat))  # ./gen, ../x, absolute
        if target.startswith(os.path.join(anchor, "")):
            if not inside:
                continue
            target = target[len(anchor) :].lstrip(os.sep)
        elif inside:
            continue  # a glob for a folder outside ``root`` names nothing inside it
        # The path and each folder it is in, from ``root`` down (or from ``/``).
        for end in range(1, len(parts) + 1):
            here = "/".join(parts[:end])
            if here and any(fnmatch.fnmatch(here, form) for form in _globstar_forms(target)):
                return True
    return False


@functools.cache
def _globstar_forms(pattern: str) -> tuple[str, ...]:
    """``pattern`` and the forms it has with any of its ``**/`` matching no folder:
    ``**/gen`` matches ``gen`` too, ``a/**/b`` matches ``a/b`` (fnmatch's ``*`` already
    matches any number of folders, but at least the one ``/``)."""
    head, star, tail = pattern.partition("**/")
    if not star:
        return (pattern,)
    rest = _globstar_forms(tail)
    kept = tuple(head + star + form for form in rest)
    if head and not head.endswith("/"):  # `x**/`: a plain `*`, as in .gitignore
        return kept
    return kept + tuple(head + form for form in rest)


def _is_virtualenv(folder: str) -> bool:
    return os.path.exists(os.path.join(folder, "pyvenv.cfg"))


# folder -> (exclude globs, the folder they are relative to, whether to respect .gitignore)
ExcludeFor = Callable[[Path], tuple[Sequence[str], "Path | None", bool]]
# (folder as walked, its entries): told of each folder walked before its globs are asked for
Listed = Callable[[str, Sequence[os.DirEntry]], None]


def in_git_work_tree(folder: Path) -> bool:
    """Whether git could say what it ignores in ``folder``: a ``.git`` (folder, or file of a
    linked work tree) in it or a folder above, or ``GIT_DIR`` set. Outside, no git is run."""
    if os.environ.get("GIT_DIR"):
        return True
    # Above the folder as named and above where it really is (a link into a repository).
    for start in dict.fromkeys((os.path.abspath(folder), os.path.realpath(folder))):
        here = start
        while True:
            if os.path.exists(os.path.join(here, ".git")):
                return True
            parent = os.path.dirname(here)
            if parent == here:
                break
            here = parent
    return False


def git_ignored(folder: Path, untracked: bool = False) -> set[str] | None:
    """Absolute paths (files, and folders as a whole) under ``folder`` that git ignores (with
    ``untracked``: that git does not track, ignored or not), or None when ``folder`` is not
    in a git work tree or git cannot be run."""
    if not in_git_work_tree(folder):
        return None
    import subprocess  # only here: a run outside git does not pay for the import

    ignored = [] if untracked else ["--ignored", "--exclude-standard"]
    try:
        done = subprocess.run(
            ["git", "ls-files", "-z", "--others", *ignored, "--directory"],
            cwd=folder,
            capture_output=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        _cannot_ask_git(folder, str(exc))
        return None
    if done.returncode != 0:
        _cannot_ask_git(folder, done.stderr.decode(errors="replace"))
        return None
    base = os.path.abspath(folder)
    out = set()
    for entry in done.stdout.split(b"\0"):
        name = os.fsdecode(entry).rstrip("/")
        if name and name != ".":
            out.add(os.path.normpath(os.path.join(base, name)))
    return out


_TOLD_GIT: set[str] = set()  # the folders whose git failure was said once this process


def _cannot_ask_git(folder: Path, detail: str) -> None:
    """Say, once per folder, that git could not list what it ignores there, so that its
    .gitignore was not applied (as "dubious ownership" when the checkout is another
    user's): files git ignores are checked there, never silently."""
    where = os.path.abspath(folder)
    if where in _TOLD_GIT:
        return
    _TOLD_GIT.add(where)
    import sys

    from zerolint.formats import printable

    reason = next((line.strip() for line in detail.splitlines() if line.strip()), "git failed")
    print(
        f"zerolint: warning: {printable(str(folder))}: cannot ask git which files it ignores "
        f"({printable(reason)}); .gitignore is not applied there",
        file=sys.stderr,
    )


def _walk(
    folder: Path,
    exclude: Sequence[str],
    root: Path | None,
    out: Discovered,
    exclude_for: ExcludeFor | None = None,
    respect_gitignore: bool = False,
    listed: Listed | None = None,
    tracked_only: bool = False,
) -> None:
    # A folder named on the command line is checked even if a pattern matches it; only
    # patterns that do not match it apply to what lies below.
    named = os.path.abspath(folder)

    known: dict[tuple[int, int], tuple[list[str], Path | None]] = {}

    def rules_at(dir_path: Path) -> tuple[list[str], Path | None]:
        patterns, base = (exclude, root) if exclude_for is None else exclude_for(dir_path)[:2]
        key = (id(patterns), id(base))  # one configuration's lists: worked out once
        if key not in known:
            known[key] = ([p for p in patterns if not is_excluded(folder, [p], base)], base)
        return known[key]

    if exclude_for is not None:
        respect_gitignore = exclude_for(folder)[2]
    # What git does not track is left out as what it ignores is (``discover``).
    respect_gitignore = respect_gitignore or tracked_only
    ignored = git_ignored(folder, tracked_only) if respect_gitignore else None
    ignored = {p for p in ignored if p != named} if ignored else set()
    seen: set[tuple[int, int]] = set()
    record = _walk_error(out)
    # Folders in pre-order, each one's files before its subfolders (as os.walk goes, and
    # with os.scandir's entries, which know a plain file or folder without a stat of it).
    # Symlinked folders are followed (a tree that links a package in is checked whole);
    # ``seen`` stops a loop and a folder reached twice.
    start = os.fspath(folder)
    pending: list[tuple[str, Path]] = [(start, folder)]
    # Symlinked folders wait until the real ones are walked: a folder reached both ways
    # is then walked where it is (its module names are those imports use), not as the
    # link that happens to sort first (`lnk -> pkg`).
    links: list[tuple[str, Path]] = []
    while pending or links:
        if not pending:
            pending, links = links[::-1], []
        dirpath, dir_path = pending.pop()
        try:
            st = os.stat(dirpath)
            key = (st.st_dev, st.st_ino)
            with os.scandir(dirpath) as listing:
                entries = list(listing)
        except OSError as exc:
            record(exc)
            continue
        if key in seen:  # a loop through a bind mount or similar
            continue
        seen.add(key)
        if listed is not None:
            listed(dirpath, entries)
        exclude, root = rules_at(dir_path)  # once it can be read: its configuration too
        if respect_gitignore and dirpath != start and any(e.name == ".git" for e in entries):
            # A nested repository (or submodule): git does not look into it from the one
            # above, so it is asked here what the nested one's ignore files leave out.
            ignored |= git_ignored(dir_path, tracked_only) or set()
        dirnames, files = [], []
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            (dirnames if is_dir else files).append(entry)
        kept = []
        for entry in sorted(dirnames, key=lambda e: e.name):
            d, full = entry.name, entry.path
            if d in SKIP_DIRS or d.endswith(".egg-info") or _is_virtualenv(full):
                continue
            if is_excluded(Path(full), exclude, root):
                continue
            if ignored and os.path.abspath(full) in ignored:
                continue
            (links if entry.is_symlink() else kept).append((full, dir_path / d))
        pending.extend(reversed(kept))
        for entry in sorted(files, key=lambda e: e.name):
            name = entry.name
            if not name.endswith(PY_SUFFIXES):
                continue
            path = dir_path / name
            if is_excluded(path, exclude, root):
                continue
            if ignored and os.path.abspath(entry.path) in ignored:
                continue
            try:
                # A plain file is known from the listing; a link is followed (one stat).
                regular = entry.is_file() or stat.S_ISREG(os.stat(entry.path).st_mode)
            except OSError as exc:
                out.diagnostics.append(
                    Diagnostic("ZL902", str(path), f"cannot read: {exc.strerror or exc}")
                )
                continue
            if not regular:  # a FIFO would block the run forever
                out.diagnostics.append(Diagnostic("ZL902", str(path), "not a regular file"))
                continue
            out.files.append(path)


def _walk_error(out: Discovered):
    def record(exc: OSError) -> None:
        name = exc.filename or "?"
        out.diagnostics.append(
            Diagnostic("ZL902", str(name), f"cannot read directory: {exc.strerror or exc}")
        )

    return record


def _rules(
    folder: Path, exclude: Sequence[str], root: Path | None, exclude_for: ExcludeFor | None
) -> tuple[Sequence[str], Path | None]:
    """The exclude globs that apply in ``folder``, and the folder they are relative to."""
    return (exclude, root) if exclude_for is None else exclude_for(folder)[:2]


def discover(
    paths: Iterable[Path],
    exclude: Sequence[str] = (),
    root: Path | None = None,
    *,
    force_exclude: bool = False,
    exclude_for: ExcludeFor | None = None,
    respect_gitignore: bool = False,
    listed: Listed | None = None,
    known: Sequence[Path] = (),
    tracked_only: bool = False,
) -> Discovered:
    """Every Python file under ``paths`` in a stable order, plus a diagnostic per bad path.

    A file or folder named explicitly is checked even if excluded (as Ruff does), unless
    ``force_exclude`` is set (pre-commit passes file names and expects excludes to apply).
    ``exclude_for``, when given, says for each folder which globs apply there (the nearest
    configuration's) and whether git's ignore rules are respected; otherwise ``exclude``
    (relative to ``root``) and ``respect_gitignore`` hold everywhere. ``listed``, when
    given, is told what each folder walked holds before ``exclude_for`` is asked about it
    (the configuration's resolver then need not look for its files there). A path that
    does not exist gets a ZL902 "path not found". ``known`` are files an earlier discovery
    found (each a regular file, excludes applied): added as they are, not looked at again.
    ``tracked_only``: in a git work tree, a walk leaves out what git does not track, as a
    commit does (a file named is checked still).
    """
    out = Discovered(files=list(known))
    # As Ruff takes them: `lnk/../a.py` is `a.py`, whatever `lnk` links to, so that the file
    # read is the file shown, told apart from others and fixed.
    paths = [Path(os.path.normpath(p)) for p in paths]
    for path in paths:
        try:
            if path.is_dir():
                # The folder's own configuration: the one whose globs its walk would obey.
                if force_exclude and is_excluded(path, *_rules(path, exclude, root, exclude_for)):
                    continue
                _walk(
                    path, exclude, root, out, exclude_for, respect_gitignore, listed, tracked_only
                )
                continue
            if path.is_file():
                if force_exclude and is_excluded(
                    path, *_rules(path.parent, exclude, root, exclude_for)
                ):
                    continue
                out.files.append(path)
                continue
            os.stat(path)  # raises with the real reason: missing, loop, permission
            out.diagnostics.append(Diagnostic("ZL902", str(path), "not a regular file"))
        except FileNotFoundError:
            if os.path.islink(path):
                out.diagnostics.append(Diagnostic("ZL902", str(path), "cannot read: broken link"))
            else:
                out.diagnostics.append(Diagnostic("ZL902", str(path), NOT_FOUND))
        except OSError as exc:
            reason = exc.strerror or str(exc)
            out.diagnostics.append(Diagnostic("ZL902", str(path), f"cannot read: {reason}"))
    # One file named twice, or named and found in a folder, or spelt two ways
    # (`bug.py $PWD/bug.py`), is checked and reported once: under its first spelling.
    unique: dict[str, Path] = {}
    for f in out.files:
        unique.setdefault(os.path.normpath(str(f)), f)
    # A file is spelt from outside the current folder only below a path named so.
    if any(os.path.normpath(p).startswith((os.sep, os.pardir)) for p in (*paths, *known)):
        here = os.getcwd().rstrip(os.sep)
        merged: dict[str, tuple[str, Path]] = {}
        for norm, f in unique.items():
            key = norm if norm.startswith(os.sep) else os.path.normpath(here + os.sep + norm)
            merged.setdefault(key, (norm, f))
        unique = dict(merged.values())
    out.files = [unique[k] for k in sorted(unique)]
    return out
