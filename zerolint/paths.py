"""How checked files are named (their module names, the paths a user is shown) and where
the rule files are.

Kept free of LibCST so that a warm run, served from the cache, can name files without
importing the analyzer.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path


def rules_dir() -> Path:
    """The folder holding the rule files: inside the wheel, or ``rules/`` in a checkout.
    Here, not in ``zerolint.rules``, so that a warm run can fingerprint the rule files
    without importing what parses them."""
    packaged = Path(__file__).with_name("rules")
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parent.parent / "rules"


def display_path(path: Path) -> str:
    """The path shown for ``path``: relative to the current folder, with ``/``; as given
    when it lies outside the current folder."""
    try:
        shown = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        shown = str(path)
    if shown.startswith(".." + os.sep):
        shown = str(path)
    return shown.replace(os.sep, "/")


def module_name_for(
    path: str | os.PathLike[str],
    package_of: Callable[[str], str] | None = None,
    cwd: str | None = None,
) -> str:
    """The dotted module name of a file: its folders up to the first that is no package.
    ``cwd``, when given, is the current folder (asked of the system once, not per file)."""
    folder, name = os.path.split(absolute(path, cwd))
    return _in_package((package_of or package_name)(folder), name)


def _in_package(package: str, file_name: str) -> str:
    """The module a file of ``package`` ("" for none) is: ``__init__.py`` is the package."""
    stem = file_name.rsplit(".", 1)[0]
    if stem == "__init__":
        return package or stem
    return f"{package}.{stem}" if package else stem


def package_name(
    folder: str, known: dict[str, str] | None = None, namespaces: Sequence[str] = ()
) -> str:
    """The dotted package a folder is ("" when it holds no ``__init__.py``); ``known``
    memoises folders, so a tree of thousands of files costs one check per folder. A folder
    of ``namespaces`` (absolute paths), or one inside it, is a package without an
    ``__init__.py``: a namespace package (the ``namespace-packages`` setting, as Ruff's)."""
    if known is not None and folder in known:
        return known[folder]
    if not os.path.exists(os.path.join(folder, "__init__.py")) and not _inside(folder, namespaces):
        name = ""
    else:
        parent, base = os.path.split(folder)
        above = package_name(parent, known, namespaces) if parent != folder else ""
        name = f"{above}.{base}" if above else base
    if known is not None:
        known[folder] = name
    return name


def _inside(folder: str, roots: Sequence[str]) -> bool:
    return any(folder == root or folder.startswith(root + os.sep) for root in roots)


def module_names(files: list[Path], namespaces: Sequence[str] = ()) -> dict[Path, str]:
    """Every file's module name, one ``__init__.py`` check and one absolute path per
    folder (a file's name is a file's, never ``.`` or ``..``: its folder made absolute is
    the folder of the file made absolute); ``namespaces`` as for ``package_name``."""
    packages: dict[str, str] = {}
    prefixes: dict[str, str] = {}
    cwd = current_folder()
    out: dict[Path, str] = {}
    for f in files:
        folder, name = os.path.split(os.fspath(f))
        prefix = prefixes.get(folder)
        if prefix is None:
            prefix = prefixes[folder] = package_name(
                absolute(folder or ".", cwd), packages, namespaces
            )
        out[f] = _in_package(prefix, name)
    return out


def absolute(path: str | os.PathLike[str], cwd: str | None = None) -> str:
    """``os.path.abspath(path)``, with the current folder ``cwd`` when it is known (asking
    the system for it is most of what abspath costs)."""
    if cwd is None:
        return os.path.abspath(path)
    path = os.fspath(path)
    return os.path.normpath(path if os.path.isabs(path) else os.path.join(cwd, path))


def current_folder() -> str | None:
    """The current folder; None if it is gone (``absolute`` then asks for each path, and
    fails as abspath does, only for a relative one)."""
    try:
        return os.getcwd()
    except OSError:
        return None
