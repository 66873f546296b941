"""How checked files are named: their module names and the paths a user is shown.

Kept free of LibCST so that a warm run, served from the cache, can name files without
importing the analyzer.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path


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


def module_name_for(path: Path, package_of: Callable[[str], str] | None = None) -> str:
    """The dotted module name of a file: its folders up to the first that is no package."""
    folder, name = os.path.split(os.path.abspath(path))
    stem = name.rsplit(".", 1)[0]
    prefix = (package_of or package_name)(folder)
    if stem == "__init__":
        return prefix or stem
    return f"{prefix}.{stem}" if prefix else stem


def package_name(folder: str, known: dict[str, str] | None = None) -> str:
    """The dotted package a folder is ("" when it holds no ``__init__.py``); ``known``
    memoises folders, so a tree of thousands of files costs one check per folder."""
    if known is not None and folder in known:
        return known[folder]
    if not os.path.exists(os.path.join(folder, "__init__.py")):
        name = ""
    else:
        parent, base = os.path.split(folder)
        above = package_name(parent, known) if parent != folder else ""
        name = f"{above}.{base}" if above else base
    if known is not None:
        known[folder] = name
    return name


def module_names(files: list[Path]) -> dict[Path, str]:
    """Every file's module name, one ``__init__.py`` check per folder."""
    packages: dict[str, str] = {}
    return {f: module_name_for(f, lambda folder: package_name(folder, packages)) for f in files}
