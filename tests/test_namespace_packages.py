"""Folders that are packages without an ``__init__.py`` (``namespace-packages``, as in
Ruff), and the limit on how many modules the paths into one sink call may parse
(``MAX_PARSES``), which such a tree needs: with every import of SGLang 0.5.23 followed, the
paths into one call led into hundreds of modules (``docs/speed.md``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from zerolint.config import Settings, load_settings
from zerolint.dataflow import MAX_PARSES
from zerolint.discovery import discover
from zerolint.engine import Engine
from zerolint.paths import module_names

CASE = Path(__file__).parent / "fixtures" / "wholeprogram" / "namespace_packages"


def test_a_listed_folder_and_those_in_it_continue_the_dotted_name(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "layers" / "attention").mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "other" / "inner").mkdir(parents=True)
    indexer = tmp_path / "pkg" / "layers" / "attention" / "indexer.py"
    loose = tmp_path / "other" / "inner" / "mod.py"
    for f in (indexer, loose):
        f.write_text("")
    assert module_names([indexer, loose]) == {indexer: "indexer", loose: "mod"}
    listed = [str(tmp_path / "pkg" / "layers")]
    assert module_names([indexer, loose], listed) == {
        indexer: "pkg.layers.attention.indexer",
        loose: "mod",  # not in a listed folder: cut at its first folder without one
    }
    # A listed folder whose parent is no package starts the name.
    assert module_names([loose], [str(tmp_path / "other")]) == {loose: "other.inner.mod"}


def test_the_folders_are_read_from_the_configurations_folder(tmp_path: Path) -> None:
    listed, plain = tmp_path / "listed", tmp_path / "plain"
    listed.mkdir()
    plain.mkdir()
    (listed / "pyproject.toml").write_text(
        '[tool.zerolint]\nnamespace-packages = ["src/ns", "/abs/ns"]\n'
    )
    (plain / "pyproject.toml").write_text("[tool.zerolint]\n")
    settings = load_settings([listed])
    assert settings.namespace_roots() == ("/abs/ns", str(listed / "src" / "ns"))
    # They change the module names, so a cached result of another setting is not reused.
    assert settings.fingerprint() != load_settings([plain]).fingerprint()


def findings_of(settings: Settings) -> list[tuple[str, int, str]]:
    files = discover([Path("pkg")], settings.exclude, settings.root).files
    report = Engine(settings).run(files).report
    return [(f.path, f.line, f.code) for f in report.findings]


def test_a_path_through_a_namespace_package_is_followed_only_when_listed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The fixture's indexer imports the division from `pkg.layers.utils.lens`; the folders
    hold no `__init__.py`, and its pyproject.toml lists `pkg/layers`."""
    monkeypatch.chdir(CASE)
    found = [("pkg/layers/attention/indexer.py", 8, "ZL001")]
    assert findings_of(load_settings([Path("pkg")])) == found
    assert findings_of(Settings()) == []  # the module is `lens`: the import leads nowhere


def write_tree(root: Path, modules: int) -> None:
    """A sink call whose lengths add up the results of `modules` functions, each in a
    module of its own that names no sink (parsed only when a path leads into it)."""
    pkg = root / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for i in range(modules):
        (pkg / f"m{i}.py").write_text("def f():\n    return 8\n")
    names = ", ".join(f"m{i}" for i in range(modules))
    total = " + ".join(f"m{i}.f()" for i in range(modules))
    (pkg / "indexer.py").write_text(
        "from deep_gemm import get_paged_mqa_logits_metadata\n"
        f"from pkg import {names}\n\n\n"
        "def build(num_sms):\n"
        f"    lens = {total}\n"
        "    return get_paged_mqa_logits_metadata(lens, 64, num_sms)\n"
    )


@pytest.mark.parametrize("modules", [MAX_PARSES - 2, MAX_PARSES + 4])
def test_paths_into_one_call_parse_at_most_max_parses_modules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, modules: int
) -> None:
    """Past the limit the modules are not followed, and the call gets ZL930 (a run that
    cannot say the call is safe fails, as for the depth limit); under it, nothing."""
    write_tree(tmp_path, modules)
    monkeypatch.chdir(tmp_path)
    settings = Settings()
    files = discover([Path("pkg")], settings.exclude, settings.root).files
    report = Engine(settings).run(files).report
    assert report.findings == []
    limits = [(d.path, d.code, d.message) for d in report.diagnostics]
    message = (
        f"paths into `get_paged_mqa_logits_metadata` lead into more than {MAX_PARSES}"
        " modules not parsed yet; the others were not followed, so a finding may be missing"
    )
    expected = [] if modules <= MAX_PARSES else [("pkg/indexer.py", "ZL930", message)]
    assert limits == expected
