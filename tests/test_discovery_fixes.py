"""What ``exclude``, ``per-file-ignores``, ``--force-exclude``, ``zerolint.toml`` and nested
git repositories do, as in Ruff: globs are relative to the configuration's folder whatever
the current folder, a named folder is dropped with ``--force-exclude``, a ``zerolint.toml``
holds top-level keys only, and a nested repository's ``.gitignore`` counts.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_cli_check import CLEAN, findings, unclamped, write
from tests.test_cli_conventions import git

# ------------------------------------------------- globs relative to their configuration


@pytest.fixture
def nested(tmp_path: Path) -> Path:
    """A project in ``tools/proj`` whose folder ``tools`` (inside it) holds a bug; the
    ``tools`` folder above the configuration is not the one its globs name."""
    write(
        tmp_path,
        {
            "tools/proj/kern.py": unclamped(),
            "tools/proj/tools/bad.py": unclamped(),
        },
    )
    return tmp_path


@pytest.mark.parametrize(
    ("cwd", "args", "expected"),
    [
        ("tools/proj", ["."], [("kern.py", 6)]),
        (".", ["."], [("tools/proj/kern.py", 6)]),
        (".", ["tools/proj"], [("tools/proj/kern.py", 6)]),
        (".", ["--force-exclude", "tools/proj/kern.py"], [("tools/proj/kern.py", 6)]),
    ],
)
def test_exclude_is_relative_to_the_configurations_folder(
    nested: Path, check, cwd: str, args: list[str], expected: list[tuple[str, int]]
) -> None:
    write(nested, {"tools/proj/pyproject.toml": '[tool.zerolint]\nexclude = ["tools"]\n'})
    code, out, err = check("--format", "concise", *args, cwd=nested / cwd)
    assert (code, findings(out), err) == (1, expected, "")


@pytest.mark.parametrize(("cwd", "shown"), [("tools/proj", "kern.py"), (".", "tools/proj/kern.py")])
def test_per_file_ignores_are_relative_to_the_configurations_folder(
    nested: Path, check, cwd: str, shown: str
) -> None:
    write(
        nested,
        {"tools/proj/pyproject.toml": '[tool.zerolint.per-file-ignores]\n"tools/*" = ["ZL001"]\n'},
    )
    code, out, err = check("--format", "concise", ".", cwd=nested / cwd)
    assert (code, findings(out), err) == (1, [(shown, 6)], "")


# ---------------------------------------------------------- ./, absolute and ** globs


@pytest.mark.parametrize(
    ("pattern", "reported"),
    [
        ("gen", ["src/kept.py"]),  # a bare name: at any depth
        ("gen/", ["src/kept.py"]),
        ("./gen", ["src/gen/bug.py", "src/kept.py"]),
        ("ABSOLUTE/gen", ["src/gen/bug.py", "src/kept.py"]),
        ("**/gen", ["src/kept.py"]),
        ("src/**/gen", ["gen/bug.py", "src/kept.py"]),
    ],
)
def test_exclude_globs_with_a_slash_are_anchored_at_the_configuration(
    tmp_path: Path, check, pattern: str, reported: list[str]
) -> None:
    pattern = pattern.replace("ABSOLUTE", tmp_path.as_posix())
    write(
        tmp_path,
        {
            "zerolint.toml": f'exclude = ["{pattern}"]\n',
            "gen/bug.py": unclamped(),
            "src/gen/bug.py": unclamped(),
            "src/kept.py": unclamped(),
        },
    )
    assert findings(check(".")[1]) == [(p, 6) for p in reported]
    # The same from another folder: what is shown is relative to it.
    inside = [(p.removeprefix("src/"), 6) for p in reported if p.startswith("src/")]
    assert findings(check(".", cwd=tmp_path / "src")[1]) == inside


# ------------------------------------------------------- --force-exclude and folders


def test_force_exclude_drops_a_named_folder(tmp_path: Path, check) -> None:
    write(tmp_path, {"zerolint.toml": 'exclude = ["gen"]\n', "gen/sub/bug.py": unclamped()})
    # As Ruff: a folder named is checked, unless --force-exclude and a glob matches it...
    assert findings(check("gen")[1]) == [("gen/sub/bug.py", 6)]
    assert findings(check("--force-exclude", "gen")[1]) == []
    # ...or a folder it is in.
    assert findings(check("--force-exclude", "gen/sub")[1]) == []
    assert findings(check("--force-exclude", ".", cwd=tmp_path / "gen")[1]) == []


# ------------------------------------------------------- one file spelt two ways


@pytest.mark.parametrize("cache", [False, True])
def test_a_file_spelt_two_ways_is_checked_and_reported_once(
    tmp_path: Path, check, cache: bool
) -> None:
    write(tmp_path, {"bug.py": unclamped(), "pkg/bug.py": unclamped()})
    spellings = ["bug.py", str(tmp_path / "bug.py"), "./bug.py", "pkg/../bug.py", "."]
    code, out, _ = check("--format", "concise", *spellings, cache=cache)
    assert (code, findings(out)) == (1, [("bug.py", 6), ("pkg/bug.py", 6)])
    assert "Found 2 errors." in out
    # From below: a path that climbs, and the absolute one.
    code, out, _ = check(
        "--format", "concise", "../bug.py", str(tmp_path / "bug.py"), cwd=tmp_path / "pkg"
    )
    assert (code, findings(out), out.count("ZL001")) == (1, [("../bug.py", 6)], 1)


# ------------------------------------------------- zerolint.toml holds top-level keys


@pytest.mark.parametrize("name", ["zerolint.toml", ".zerolint.toml"])
@pytest.mark.parametrize(
    "text",
    [
        'exclude = ["bug.py"]\n[tool.black]\nline-length = 100\n',
        'exclude = ["bug.py"]\n[tool.zerolint]\nignore = ["ZL001"]\n',
        '[tool.zerolint]\nexclude = ["bug.py"]\n',
    ],
)
def test_a_tool_table_in_zerolint_toml_is_refused(
    tmp_path: Path, check, name: str, text: str
) -> None:
    # Before, any [tool.*] table made the file read as a pyproject.toml: the top-level
    # `exclude` was dropped without a word and bug.py checked.
    write(tmp_path, {name: text, "bug.py": unclamped(), "ok.py": CLEAN})
    code, out, err = check(".")
    assert (code, out) == (2, "")
    assert len(err.splitlines()) == 1
    assert str(tmp_path / name) in err and "tool" in err and "pyproject.toml" in err


def test_pyproject_toml_keeps_its_settings_under_tool_zerolint(tmp_path: Path, check) -> None:
    write(
        tmp_path,
        {
            "pyproject.toml": '[project]\nname = "x"\n[tool.zerolint]\nexclude = ["bug.py"]\n',
            "bug.py": unclamped(),
            "ok.py": CLEAN,
        },
    )
    assert check(".")[:2] == (0, "All checks passed!\n")


# --------------------------------------------------- a nested repository's .gitignore


def test_a_nested_repositorys_gitignore_is_respected(tmp_path: Path, check) -> None:
    git(tmp_path, "init", "-q")
    write(
        tmp_path,
        {
            "inner/.gitignore": "gen/\n",
            "inner/gen/bug.py": unclamped(),
            "inner/src/bug.py": unclamped(),
            "gen/bug.py": unclamped(),  # the inner .gitignore says nothing of the outer tree
        },
    )
    git(tmp_path / "inner", "init", "-q")
    expected = [("gen/bug.py", 6), ("inner/src/bug.py", 6)]
    assert findings(check(".")[1]) == expected
    assert findings(check("inner")[1]) == [("inner/src/bug.py", 6)]
    assert findings(check(".", cwd=tmp_path / "inner")[1]) == [("src/bug.py", 6)]
    assert len(findings(check("--no-respect-gitignore", ".")[1])) == 3


def test_a_config_kept_elsewhere_never_matches_a_folder_above_the_checked_tree(
    tmp_path: Path, check
) -> None:
    """``--config ci/x.toml src``: ``src`` is not below the file's folder, so its globs are
    relative to the current folder there (as Ruff reads such a file's). A bare name must not
    match a folder above it (this test's tree is under ``/tmp``), and ``src/gen`` names the
    folder below the current one."""
    assert "tmp" in tmp_path.parts
    write(
        tmp_path,
        {
            "src/ok.py": unclamped(),
            "src/gen/g.py": unclamped(),
            "ci/pfi.toml": '[per-file-ignores]\n"tmp" = ["ZL001"]\n',
            "ci/anc.toml": 'exclude = ["tmp", "src/gen"]\n',
        },
    )
    code, out, _ = check("--format", "concise", "--config", "ci/pfi.toml", "src")
    assert (code, findings(out)) == (1, [("src/gen/g.py", 6), ("src/ok.py", 6)])
    code, out, _ = check("--format", "concise", "--config", "ci/anc.toml", "src")
    assert (code, findings(out)) == (1, [("src/ok.py", 6)])
    code, out, _ = check(
        "--format", "concise", "--config", "ci/anc.toml", "--force-exclude", "src/ok.py"
    )
    assert (code, findings(out)) == (1, [("src/ok.py", 6)])
    # Run from a folder beside both: the tree is outside the current folder too, and only
    # an absolute glob could name it.
    (tmp_path / "elsewhere").mkdir()
    code, out, _ = check(
        "--format", "concise", "--config", "../ci/pfi.toml", "../src", cwd=tmp_path / "elsewhere"
    )
    assert (code, findings(out)) == (1, [("../src/gen/g.py", 6), ("../src/ok.py", 6)])


def test_command_line_excludes_are_relative_to_the_current_folder(tmp_path: Path, check) -> None:
    """As Ruff's: ``--exclude gen/g.py`` run in ``pkg`` names ``pkg/gen/g.py``, though the
    configuration (whose own globs are relative to its folder) is one folder up."""
    write(
        tmp_path,
        {
            "pyproject.toml": "[tool.zerolint]\n",
            "pkg/ok.py": unclamped(),
            "pkg/gen/g.py": unclamped(),
        },
    )
    for option, glob in (("--exclude", "gen/g.py"), ("--extend-exclude", "./gen")):
        code, out, _ = check("--format", "concise", option, glob, ".", cwd=tmp_path / "pkg")
        assert (code, findings(out)) == (1, [("ok.py", 6)])


def test_a_folder_reached_through_a_link_too_is_walked_where_it_is(tmp_path: Path, check) -> None:
    """`lnk -> pkg` sorts before `pkg`: walked first, its files were the modules `lnk.*`,
    `pkg` was skipped as seen, and `from pkg.a import ratio` reached nothing."""
    write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "def ratio(lens):\n    return lens // 4\n",
            "pkg/b.py": "import deep_gemm\n\nfrom pkg.a import ratio\n\n\ndef build(seq_lens):\n"
            "    return deep_gemm.get_paged_mqa_logits_metadata(ratio(seq_lens), 64, 132)\n",
        },
    )
    (tmp_path / "lnk").symlink_to("pkg", target_is_directory=True)
    code, out, _ = check(".")
    assert (code, findings(out)) == (1, [("pkg/b.py", 7)]), out
    # A link to a folder outside the tree is walked still.
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    write(outside, {"k.py": unclamped()})
    (tmp_path / "vendored").symlink_to(outside, target_is_directory=True)
    code, out, _ = check(".")
    assert findings(out) == [("pkg/b.py", 7), ("vendored/k.py", 6)], out
