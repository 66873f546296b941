"""Find the installed serving stack in site-packages folders, without importing any of it.

Reads distribution metadata (``importlib.metadata`` over the given folders: versions,
RECORD files, ``entry_points.txt``) and the files themselves. Never imports vllm,
deep_gemm or sglang: importing them would initialise CUDA, and the point is to answer
before the next restart, possibly on a machine without a GPU.

Which DeepGEMM vLLM uses is decided the way vLLM decides it: ``vllm/utils/deep_gemm.py``
tries ``import deep_gemm`` (any package of that name on the path: DeepGEMM built from
source, or SGLang's ``sgl-deep-gemm`` wheel, which installs as ``deep_gemm``) before its
vendored ``vllm.third_party.deep_gemm``. The order is read from that file.
"""

from __future__ import annotations

import ast
import csv
import re
import site
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

PIP_DEEP_GEMM = "deep_gemm"
VENDORED_DEEP_GEMM = "vllm.third_party.deep_gemm"
# What vLLM 0.26-0.33 do; used when vllm/utils/deep_gemm.py cannot be read.
DEFAULT_IMPORT_ORDER = (PIP_DEEP_GEMM, VENDORED_DEEP_GEMM)
PLUGIN_GROUP = "vllm.general_plugins"


class SitePackagesError(Exception):
    """A folder given as site-packages that does not exist."""


@dataclass(frozen=True, slots=True)
class Distribution:
    """One installed distribution (a ``.dist-info`` folder)."""

    name: str  # as in its METADATA
    version: str
    location: Path  # the folder holding the .dist-info
    entry_points: tuple[tuple[str, str, str], ...] = ()  # (group, name, value)
    top_level: frozenset[str] = frozenset()  # the top-level modules it installs

    @property
    def key(self) -> str:
        return normalize(self.name)

    def label(self) -> str:
        return f"{self.name} {self.version}"


@dataclass(frozen=True, slots=True)
class Module:
    """A top-level package found on the path, and the distribution that installed it."""

    name: str
    path: Path  # the package folder (or module file)
    distribution: Distribution | None


@dataclass(frozen=True, slots=True)
class DeepGemm:
    """A DeepGEMM package that vLLM or SGLang could import."""

    origin: str  # "pip" (top-level deep_gemm) or "vendored" (vllm.third_party.deep_gemm)
    path: Path
    version: str | None  # DeepGEMM's own __version__, read from the files
    distribution: Distribution | None

    def label(self) -> str:
        version = self.version or "unknown version"
        if self.origin == "vendored":
            owner = f" (vendored in {self.distribution.label()})" if self.distribution else ""
            return f"DeepGEMM {version}{owner}"
        owner = f" from {self.distribution.label()}" if self.distribution else ""
        return f"DeepGEMM {version} (pip-installed deep_gemm{owner})"


@dataclass(frozen=True, slots=True)
class Plugin:
    """A ``vllm.general_plugins`` entry point and the distribution declaring it."""

    name: str
    value: str
    distribution: Distribution

    @property
    def module(self) -> str:
        return self.value.split(":", 1)[0].strip()


@dataclass(slots=True)
class Environment:
    """What is installed, read from ``search_path`` (site-packages plus .pth folders)."""

    site_packages: tuple[Path, ...]
    search_path: tuple[Path, ...]
    distributions: dict[str, Distribution] = field(default_factory=dict)
    vllm: Module | None = None
    sglang: Module | None = None
    pip_deep_gemm: DeepGemm | None = None
    vendored_deep_gemm: DeepGemm | None = None
    vllm_import_order: tuple[str, ...] = DEFAULT_IMPORT_ORDER
    vllm_import_order_source: str = ""
    plugins: tuple[Plugin, ...] = ()
    notes: list[str] = field(default_factory=list)

    def vllm_deep_gemm(self) -> DeepGemm | None:
        """The DeepGEMM vLLM would import: the first of its import order that is present."""
        if self.vllm is None:
            return None
        found = (self._deep_gemm(name) for name in self.vllm_import_order)
        return next((f for f in found if f is not None), None)

    def vllm_fallback_deep_gemm(self) -> DeepGemm | None:
        """The DeepGEMM vLLM falls back to when the preferred one fails to import."""
        chosen = self.vllm_deep_gemm()
        present = [
            found
            for found in (self._deep_gemm(name) for name in self.vllm_import_order)
            if found is not None and found is not chosen
        ]
        return present[0] if chosen is not None and present else None

    def _deep_gemm(self, module: str) -> DeepGemm | None:
        return {PIP_DEEP_GEMM: self.pip_deep_gemm, VENDORED_DEEP_GEMM: self.vendored_deep_gemm}.get(
            module
        )


def normalize(name: str) -> str:
    """PEP 503 name normalization: ``sgl_deep_gemm`` and ``SGL-Deep-GEMM`` are one name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def default_site_packages() -> list[Path]:
    """This interpreter's site-packages folders (the environment zerolint runs in)."""
    folders = list(site.getsitepackages()) if hasattr(site, "getsitepackages") else []
    if site.ENABLE_USER_SITE:
        folders.append(site.getusersitepackages())
    if not folders:  # virtualenvs without site.getsitepackages (old virtualenv)
        folders = [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
    return [Path(p) for p in dict.fromkeys(folders) if Path(p).is_dir()]


def find_environment(site_packages: Sequence[Path | str]) -> Environment:
    """Read what is installed in ``site_packages`` (searched in order, like ``sys.path``)."""
    folders = tuple(Path(p) for p in site_packages)
    for folder in folders:
        if not folder.is_dir():
            raise SitePackagesError(f"{folder}: no such site-packages folder")
    notes: list[str] = []
    search = tuple(_search_path(folders, notes))
    env = Environment(site_packages=folders, search_path=search, notes=notes)
    env.distributions = _distributions(search, notes)
    env.vllm = _module("vllm", search, env)
    env.sglang = _module("sglang", search, env)
    pip = _module(PIP_DEEP_GEMM, search, env)
    if pip is not None and pip.path.is_dir():
        env.pip_deep_gemm = DeepGemm("pip", pip.path, deep_gemm_version(pip.path), pip.distribution)
    if env.vllm is not None:
        vendored = env.vllm.path / "third_party" / "deep_gemm"
        if (vendored / "__init__.py").is_file():
            env.vendored_deep_gemm = DeepGemm(
                "vendored", vendored, deep_gemm_version(vendored), env.vllm.distribution
            )
        env.vllm_import_order, env.vllm_import_order_source = _vllm_import_order(env.vllm.path)
        if not env.vllm_import_order_source:
            env.notes.append(
                "no DeepGEMM import found in vllm/utils/deep_gemm.py: assumed vLLM imports a "
                "pip-installed deep_gemm before its vendored copy"
            )
    env.plugins = tuple(_plugins(env.distributions.values()))
    return env


def module_on_path(name: str, search: Iterable[Path]) -> Path | None:
    """Where ``import name`` would find a top-level module: first folder of the path wins."""
    for folder in search:
        package = folder / name
        if (package / "__init__.py").is_file() or (package.is_dir() and any(package.glob("*.py"))):
            return package
        for candidate in folder.glob(f"{name}.*"):
            if candidate.suffix in (".py", ".so", ".pyd") or candidate.name.endswith(".abi3.so"):
                return candidate
    return None


def deep_gemm_version(package: Path) -> str | None:
    """DeepGEMM's own version: a literal ``__version__`` in __init__.py, else its VERSION file."""
    init = package / "__init__.py"
    try:
        text = init.read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    match = re.search(r"""^__version__\s*=\s*['"]([^'"]+)['"]""", text, re.MULTILINE)
    if match:
        return match.group(1)
    version_file = package / "VERSION"
    if version_file.is_file():
        return version_file.read_text(encoding="utf-8", errors="replace").strip() or None
    return None


def _search_path(folders: Sequence[Path], notes: list[str]) -> Iterable[Path]:
    """The folders themselves, each followed by the folders its ``.pth`` files add (as site.py)."""
    seen: set[Path] = set()
    for folder in folders:
        for entry in (folder, *_pth_folders(folder, notes)):
            resolved = entry.resolve()
            if resolved not in seen:
                seen.add(resolved)
                yield entry


def _pth_folders(folder: Path, notes: list[str]) -> Iterable[Path]:
    for pth in sorted(folder.glob("*.pth")):
        try:
            lines = pth.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for number, line in enumerate(lines, 1):
            line = line.strip()
            # site.py executes "import" lines; zerolint only reads the plain folder lines.
            if not line or line.startswith(("#", "import ", "import\t")):
                continue
            try:
                path = (folder / line).resolve()
                found = path.is_dir()
            except (OSError, ValueError) as exc:  # a NUL byte, a name too long
                # site.py reports such a line and goes on; so does the audit.
                notes.append(f"{pth}:{number}: not a folder ({exc}); skipped")
                continue
            if found:
                yield path


def _distributions(search: Sequence[Path], notes: list[str]) -> dict[str, Distribution]:
    found: dict[str, Distribution] = {}
    for dist in metadata.distributions(path=[str(p) for p in search]):
        try:
            meta = dist.metadata
            name = meta["Name"] if meta else None
            version = (dist.version or "") if name else ""
        except (OSError, ValueError) as exc:  # METADATA not UTF-8 (an old latin-1 Author), ...
            # pip lists the other distributions and goes on; so does the audit.
            where = _info_file(dist, "METADATA", "PKG-INFO")
            notes.append(f"{where}: cannot be read ({exc}); that distribution is left out")
            continue
        if not name:
            continue
        key = normalize(name)
        if key in found:  # the first on the path shadows later ones, as in importlib
            continue
        location = Path(str(dist.locate_file("")))
        try:
            points = tuple((ep.group, ep.name, ep.value) for ep in dist.entry_points)
        except (TypeError, ValueError, AttributeError) as exc:  # a line without "=", ...
            notes.append(
                f"{name}: entry_points.txt cannot be read ({exc}); its entry points are left out"
            )
            points = ()
        try:
            top_level = _top_level(dist)
        except _Unreadable as exc:
            notes.append(f"{name}: {exc}; that distribution is left out")
            continue
        found[key] = Distribution(name, version, location, points, top_level)
    return found


class _Unreadable(Exception):
    """A file of a ``.dist-info`` folder that cannot be read or parsed: its name and why."""


def _info_file(dist: metadata.Distribution, *names: str) -> str:
    """The path of the first of ``names`` present in ``dist``'s metadata folder (its
    ``.dist-info``), for a note; the bare name where the folder is not known."""
    folder = getattr(dist, "_path", None)  # PathDistribution's folder: no public name for it
    if folder is None:
        return names[0]
    for name in names:
        if (Path(str(folder)) / name).exists():
            return str(Path(str(folder)) / name)
    return str(Path(str(folder)) / names[0])


def _top_level(dist: metadata.Distribution) -> frozenset[str]:
    """top_level.txt, else the first component of every file in RECORD; _Unreadable names
    the file that cannot be read (not UTF-8, a malformed RECORD)."""
    try:
        listed = dist.read_text("top_level.txt")
    except (OSError, ValueError) as exc:
        raise _Unreadable(f"top_level.txt cannot be read ({exc})") from None
    if listed:
        return frozenset(line.strip() for line in listed.splitlines() if line.strip())
    try:
        files = dist.files or ()
    except (OSError, ValueError, csv.Error) as exc:
        raise _Unreadable(f"RECORD cannot be read ({exc})") from None
    names = set()
    for file in files:
        first = file.parts[0] if file.parts else ""
        if first and first != ".." and not first.endswith((".dist-info", ".data", ".pth")):
            names.add(first.split(".", 1)[0])
    return frozenset(names)


def _module(name: str, search: Sequence[Path], env: Environment) -> Module | None:
    path = module_on_path(name, search)
    if path is None:
        return None
    return Module(name, path, _owner(path, env.distributions.values()))


def _owner(path: Path, distributions: Iterable[Distribution]) -> Distribution | None:
    """The distribution that installed the top-level module at ``path``.

    One declaring it and installed next to it wins; else (an editable install, found
    through a .pth folder) any declaring it; else one of the same name next to it.
    """
    top = path.name.split(".", 1)[0]
    distributions = list(distributions)
    declaring = [d for d in distributions if top in d.top_level]
    beside = [d for d in declaring if d.location.resolve() == path.parent.resolve()]
    # Metadata without top_level.txt or RECORD: a distribution named like the module.
    named = [
        d
        for d in distributions
        if d.key.replace("-", "_") == top and d.location.resolve() == path.parent.resolve()
    ]
    return (beside or declaring or named or [None])[0]


def _vllm_import_order(vllm: Path) -> tuple[tuple[str, ...], str]:
    """The DeepGEMM modules ``vllm/utils/deep_gemm.py`` imports, in source order."""
    source = vllm / "utils" / "deep_gemm.py"
    try:
        tree = ast.parse(source.read_text(encoding="utf-8", errors="replace"), str(source))
    except (OSError, SyntaxError):
        return DEFAULT_IMPORT_ORDER, ""
    wanted = {PIP_DEEP_GEMM, VENDORED_DEEP_GEMM}
    hits: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        name: str | None = None
        if isinstance(node, ast.Call) and _is_import_module(node.func) and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                name = arg.value
        elif isinstance(node, ast.Import):
            name = next((a.name for a in node.names if a.name in wanted), None)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            name = node.module
        if name in wanted:
            hits.append((node.lineno, node.col_offset, name))
    order = tuple(dict.fromkeys(name for _, _, name in sorted(hits)))
    if not order:
        return DEFAULT_IMPORT_ORDER, ""
    return order, str(source)


def _is_import_module(func: ast.expr) -> bool:
    if isinstance(func, ast.Attribute):
        return func.attr == "import_module"
    return isinstance(func, ast.Name) and func.id == "import_module"


def _plugins(distributions: Iterable[Distribution]) -> Iterable[Plugin]:
    for dist in distributions:
        for group, name, value in dist.entry_points:
            if group == PLUGIN_GROUP:
                yield Plugin(name, value, dist)
