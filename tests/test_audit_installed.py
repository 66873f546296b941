"""Finding the installed serving stack from files and metadata (zerolint.installed).

Where ``import deep_gemm`` lands decides which kernel runs, so these tests pin down the
path rules the audit shares with Python: folders in order, ``.pth`` folder lines, the
owning distribution, and the import order vLLM's own wrapper uses.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_audit import small_stack
from zerolint.cli import main
from zerolint.installed import (
    DEFAULT_IMPORT_ORDER,
    SitePackagesError,
    deep_gemm_version,
    find_environment,
    normalize,
)


def write(path: Path, text: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def deep_gemm(folder: Path, version: str) -> Path:
    return write(folder / "deep_gemm" / "__init__.py", f"__version__ = '{version}'\n").parent


def test_the_first_folder_on_the_path_wins(tmp_path):
    first, second = deep_gemm(tmp_path / "a", "1.0"), deep_gemm(tmp_path / "b", "2.0")
    env = find_environment([first.parent, second.parent])
    assert env.pip_deep_gemm is not None
    assert (env.pip_deep_gemm.path, env.pip_deep_gemm.version) == (first, "1.0")


def test_pth_folder_lines_extend_the_path_and_import_lines_are_not_run(tmp_path):
    site, source = tmp_path / "site", tmp_path / "src"
    deep_gemm(source, "3.0")
    write(site / "__editable__.deep_gemm.pth", f"import sys; sys.exit(1)\n# a comment\n{source}\n")
    env = find_environment([site])
    assert env.pip_deep_gemm is not None and env.pip_deep_gemm.path == source / "deep_gemm"
    assert env.search_path == (site, source)


def test_a_malformed_file_of_another_package_is_a_note_not_an_error(tmp_path):
    """site.py skips a .pth line it cannot use, and pip a broken entry_points.txt: one file
    of an unrelated package must not stop the audit of the rest."""
    deep_gemm(tmp_path, "2.6.1")
    info = tmp_path / "other-1.0.dist-info"
    write(info / "METADATA", "Metadata-Version: 2.1\nName: other\nVersion: 1.0\n")
    write(info / "entry_points.txt", "[console_scripts]\nother\n")  # no "="
    (tmp_path / "x.pth").write_bytes(b"a\x00b\n")
    env = find_environment([tmp_path])
    assert env.pip_deep_gemm is not None and env.pip_deep_gemm.version == "2.6.1"
    assert "other" in env.distributions and env.distributions["other"].entry_points == ()
    assert [n.split(" (")[0] for n in env.notes] == [
        f"{tmp_path / 'x.pth'}:1: not a folder",
        "other: entry_points.txt cannot be read",
    ]


LATIN_1_METADATA = b"Metadata-Version: 2.1\nName: oldpkg\nVersion: 1.0\nAuthor: Jos\xe9 M\xfcller\n"


def test_a_distribution_whose_files_are_not_utf8_is_a_note_and_left_out(tmp_path):
    """An old package whose METADATA is latin-1 (an Author with an accent), or whose
    top_level.txt or RECORD is: pip lists the rest, and so does the audit."""
    deep_gemm(tmp_path, "2.6.1")
    (tmp_path / "oldpkg-1.0.dist-info").mkdir()
    (tmp_path / "oldpkg-1.0.dist-info" / "METADATA").write_bytes(LATIN_1_METADATA)
    for name, file in (("toplevel", "top_level.txt"), ("record", "RECORD")):
        info = tmp_path / f"{name}-1.0.dist-info"
        write(info / "METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
        (info / file).write_bytes(b"caf\xe9\n")
    write(tmp_path / "fine-2.0.dist-info" / "METADATA", "Name: fine\nVersion: 2.0\n")
    env = find_environment([tmp_path])
    assert env.pip_deep_gemm is not None and env.pip_deep_gemm.version == "2.6.1"
    assert set(env.distributions) == {"fine"}
    assert sorted(n.split(" (")[0] for n in env.notes) == [
        f"{tmp_path / 'oldpkg-1.0.dist-info' / 'METADATA'}: cannot be read",
        "record: RECORD cannot be read",
        "toplevel: top_level.txt cannot be read",
    ]
    assert all(n.endswith("; that distribution is left out") for n in env.notes)


def test_the_audit_goes_on_past_a_latin1_metadata(tmp_path, capsys):
    site = small_stack(tmp_path)
    (tmp_path / "oldpkg-1.0.dist-info").mkdir()
    (tmp_path / "oldpkg-1.0.dist-info" / "METADATA").write_bytes(LATIN_1_METADATA)
    assert main(["audit", "--site-packages", str(site), "--gpu", "sm90"]) == 1
    out = capsys.readouterr().out
    assert f"note: {tmp_path / 'oldpkg-1.0.dist-info' / 'METADATA'}: cannot be read (" in out
    assert "\nverdict: exposed\n" in out


def test_the_owner_comes_from_record_when_there_is_no_top_level(tmp_path):
    deep_gemm(tmp_path, "4.0")
    info = tmp_path / "DeepGEMM-4.0.0.dist-info"
    write(info / "METADATA", "Metadata-Version: 2.1\nName: DeepGEMM\nVersion: 4.0.0\n")
    write(info / "RECORD", "deep_gemm/__init__.py,,\nDeepGEMM-4.0.0.dist-info/METADATA,,\n")
    env = find_environment([tmp_path])
    assert env.pip_deep_gemm is not None
    owner = env.pip_deep_gemm.distribution
    assert owner is not None and owner.label() == "DeepGEMM 4.0.0"
    assert env.pip_deep_gemm.label() == "DeepGEMM 4.0 (pip-installed deep_gemm from DeepGEMM 4.0.0)"


def test_a_version_file_stands_in_for_a_literal_version(tmp_path):
    package = write(
        tmp_path / "deep_gemm" / "__init__.py", "__version__ = _read_version()\n"
    ).parent
    assert deep_gemm_version(package) is None
    write(package / "VERSION", "0.2.3.post2\n")
    assert deep_gemm_version(package) == "0.2.3.post2"


@pytest.mark.parametrize(
    "source, order",
    [
        (
            "import importlib\n"
            + 'importlib.import_module("deep_gemm")\n'
            + 'importlib.import_module("vllm.third_party.deep_gemm")\n',
            ("deep_gemm", "vllm.third_party.deep_gemm"),
        ),
        (
            "from vllm.third_party.deep_gemm import fp8_gemm_nt\nimport deep_gemm\n",
            ("vllm.third_party.deep_gemm", "deep_gemm"),
        ),
        ("import deep_gemm\n", ("deep_gemm",)),
    ],
)
def test_import_order_is_read_from_vllm_utils_deep_gemm(tmp_path, source, order):
    write(tmp_path / "vllm" / "__init__.py")
    write(tmp_path / "vllm" / "utils" / "deep_gemm.py", source)
    env = find_environment([tmp_path])
    assert env.vllm_import_order == order
    assert env.notes == []


def test_an_unreadable_import_order_is_assumed_and_said(tmp_path):
    write(tmp_path / "vllm" / "__init__.py")
    env = find_environment([tmp_path])
    assert env.vllm_import_order == DEFAULT_IMPORT_ORDER
    assert env.notes and "assumed" in env.notes[0]


def test_only_modules_in_the_import_order_are_fallbacks(tmp_path):
    write(tmp_path / "vllm" / "__init__.py")
    write(tmp_path / "vllm" / "utils" / "deep_gemm.py", "import deep_gemm\n")
    write(tmp_path / "vllm" / "third_party" / "deep_gemm" / "__init__.py", "__version__ = '1'\n")
    deep_gemm(tmp_path, "2")
    env = find_environment([tmp_path])
    chosen = env.vllm_deep_gemm()
    assert chosen is not None and chosen.origin == "pip"
    assert env.vllm_fallback_deep_gemm() is None


def test_a_missing_folder_is_an_error_naming_it(tmp_path):
    with pytest.raises(SitePackagesError, match=f"{tmp_path / 'gone'}: no such site-packages"):
        find_environment([tmp_path / "gone"])


def test_names_normalize_as_pep_503():
    assert normalize("SGL_Deep.GEMM") == normalize("sgl-deep-gemm") == "sgl-deep-gemm"
