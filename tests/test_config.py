"""Configuration as users write it: found per file, checked key by key, never a traceback.

Each bad shape is a one-line error (exit 2) naming the file and the key; a configuration
that does not apply to the checked files cannot stop the run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_cli_check import CLEAN, findings, unclamped, write

# --------------------------------------------------------------- malformed shapes

MALFORMED = [
    # (pyproject.toml text, words the error must hold)
    ("tool = 5\n# zerolint\n", ["`tool` must be a table"]),
    ("[[tool.zerolint]]\nselect = ['ZL001']\n", ["[tool.zerolint] must be a table"]),
    ("[tool]\nzerolint = 5\n", ["[tool.zerolint] must be a table"]),
    ("[tool.zerolint]\nextra-sinks = 5\n", ["extra-sinks", "list"]),
    ("[tool.zerolint]\nextra-sinks = [5]\n", ["extra-sinks", "entry 1"]),
    ("[tool.zerolint]\nextra-sinks = ['plan']\n", ["extra-sinks", "tables"]),
    ("[tool.zerolint]\nextra-sinks = [{ function = 'a.plan', position = [1] }]\n", ["position"]),
    ("[tool.zerolint]\nextra-sinks = [{ function = 'a.plan', position = -1 }]\n", ["position"]),
    ("[tool.zerolint]\nextra-sinks = [{ function = 'a.plan', position = 1.9 }]\n", ["position"]),
    ("[tool.zerolint]\nextra-sinks = [{ function = 'a.plan', position = '1' }]\n", ["position"]),
    ("[tool.zerolint]\nextra-sinks = [{ function = 'a.plan', position = true }]\n", ["position"]),
    (
        "[tool.zerolint]\nextra-sinks = [{ function = 'a.plan', positon = 1 }]\n",
        ["positon", "did you mean 'position'"],
    ),
    ("[tool.zerolint]\nextra-sinks = [{ position = 1 }]\n", ["extra-sinks", "function"]),
    ("[tool.zerolint]\nextra-sinks = [{ function = 5 }]\n", ["function"]),
    ("[tool.zerolint]\nextra-sinks = [{ function = 'a.plan', keyword = 3 }]\n", ["keyword"]),
    ("[tool.zerolint]\nextra-sinks = [{ function = 'a.plan', modules = [1] }]\n", ["modules"]),
    ("[tool.zerolint]\nselect = 'ZL001'\n", ["select", "list"]),
    ("[tool.zerolint]\nselect = [1]\n", ["select"]),
    ("[tool.zerolint]\nignore = ['']\n", ["ignore", "empty"]),
    ("[tool.zerolint]\nselect = ['ZL 001']\n", ["select", "not a rule code"]),
    ("[tool.zerolint]\nselect = ['ZL999']\n", ["unknown rule selector: ZL999"]),
    ("[tool.zerolint]\nexclude = 'tests'\n", ["exclude", "list"]),
    ("[tool.zerolint]\nexclude = [{}]\n", ["exclude"]),
    ("[tool.zerolint]\ncompress-ratios = [0]\n", ["compress-ratios"]),
    ("[tool.zerolint]\ncompress-ratios = [true]\n", ["compress-ratios"]),
    ("[tool.zerolint]\ncompress-ratios = 4\n", ["compress-ratios"]),
    ("[tool.zerolint]\nwhole-program = 'yes'\n", ["whole-program"]),
    ("[tool.zerolint]\nnamespace-packages = 'src/ns'\n", ["namespace-packages", "list"]),
    ("[tool.zerolint]\nnamespace-packages = ['']\n", ["namespace-packages", "empty"]),
    ("[tool.zerolint]\nrespect-gitignore = 1\n", ["respect-gitignore"]),
    ("[tool.zerolint]\nper-file-ignores = ['x']\n", ["per-file-ignores"]),
    ("[tool.zerolint]\nper-file-ignores = { 'a.py' = 'ZL001' }\n", ["per-file-ignores", "a.py"]),
    ("[tool.zerolint]\nper-file-ignores = { 'a.py' = ['ZLX9'] }\n", ["ZLX9"]),
    ("[tool.zerolint]\nper-file-ignores = { 'a.py' = [''] }\n", ["per-file-ignores", "empty"]),
    ("[tool.zerolint]\nextra-sanitizers = 'mylib.f'\n", ["extra-sanitizers"]),
    ("[tool.zerolint]\nextra-sanitizers = ['mylib..f']\n", ["extra-sanitizers", "'mylib..f'"]),
    ("[tool.zerolint]\nextra-sanitizers = ['mylib.']\n", ["extra-sanitizers", "'mylib.'"]),
    ("[tool.zerolint]\nselcet = ['ZL001']\n", ["selcet", "did you mean 'select'"]),
    ("[tool.zerolint]\nselect = [\n", ["cannot read configuration"]),
]


@pytest.mark.parametrize(("table", "words"), MALFORMED)
def test_a_malformed_configuration_is_one_line_naming_file_and_key(
    tmp_path: Path, check, table: str, words: list[str]
) -> None:
    write(tmp_path, {"pyproject.toml": table, "bad.py": unclamped()})
    code, out, err = check(".")
    assert (code, out) == (2, "")
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("zerolint: error: ") and "pyproject.toml" in err
    assert "internal error" not in err
    for word in words:
        assert word in err


def test_ignore_of_an_empty_string_does_not_turn_every_rule_off(tmp_path: Path, check) -> None:
    # Before: "" was a prefix of every code and the unsafe file passed.
    write(tmp_path, {"pyproject.toml": '[tool.zerolint]\nignore = [""]\n', "bad.py": unclamped()})
    code, out, _ = check(".")
    assert code == 2 and "All checks passed" not in out


@pytest.mark.parametrize("selector", ["zl001", "ZL001", "zl0", "ALL", "all"])
def test_select_in_the_file_is_read_as_on_the_command_line(
    tmp_path: Path, check, selector: str
) -> None:
    write(
        tmp_path,
        {"pyproject.toml": f'[tool.zerolint]\nselect = ["{selector}"]\n', "bad.py": unclamped()},
    )
    code, out, err = check(".")
    assert (code, findings(out), err) == (1, [("bad.py", 6)], "")
    assert check("--select", selector, "--config", "pyproject.toml", ".")[0] == 1


def test_an_unrelated_broken_pyproject_in_a_parent_folder_stops_nothing(
    tmp_path: Path, check
) -> None:
    write(
        tmp_path,
        {"pyproject.toml": "[project\nname = 'x'\n", "proj/bad.py": unclamped()},
    )
    code, out, err = check(".", cwd=tmp_path / "proj")
    assert (code, findings(out), err) == (1, [("bad.py", 6)], "")


def test_a_broken_parent_that_would_apply_names_its_file(tmp_path: Path, check) -> None:
    write(
        tmp_path,
        {"pyproject.toml": "[tool.zerolint\nselect = 1\n", "proj/bad.py": unclamped()},
    )
    code, out, err = check(".", cwd=tmp_path / "proj")
    assert (code, out) == (2, "")
    assert str(tmp_path / "pyproject.toml") in err and len(err.splitlines()) == 1


def test_a_nearer_configuration_shields_from_a_broken_parent(tmp_path: Path, check) -> None:
    write(
        tmp_path,
        {
            "pyproject.toml": "[tool.zerolint]\nselect = 5\n",
            "proj/zerolint.toml": "exclude = []\n",
            "proj/bad.py": unclamped(),
        },
    )
    code, out, err = check(".", cwd=tmp_path / "proj")
    assert (code, findings(out), err) == (1, [("bad.py", 6)], "")


# --------------------------------------------------------------- where it is found


def test_each_file_gets_its_nearest_configuration(tmp_path: Path, check) -> None:
    # Whether sub/bug.py is excluded by sub/pyproject.toml must not depend on which other
    # files are named: before, `check sub/bug.py other.py` used the root configuration.
    write(
        tmp_path,
        {
            "pyproject.toml": "[tool.zerolint]\nexclude = []\n",
            "sub/pyproject.toml": '[tool.zerolint]\nexclude = ["gen"]\n',
            "sub/gen/bug.py": unclamped(),
            "sub/kept.py": unclamped(),
            "other.py": unclamped(),
        },
    )
    alone = findings(check("sub")[1])
    together = findings(check("sub", "other.py")[1])
    assert alone == [("sub/kept.py", 6)]
    assert together == [("other.py", 6), ("sub/kept.py", 6)]


def test_a_nested_configuration_selects_its_own_rules(tmp_path: Path, check) -> None:
    write(
        tmp_path,
        {
            "pyproject.toml": "[tool.zerolint]\nexclude = []\n",
            "quiet/zerolint.toml": 'ignore = ["ZL001"]\n',
            "quiet/bug.py": unclamped(),
            "loud/bug.py": unclamped(),
        },
    )
    assert findings(check(".")[1]) == [("loud/bug.py", 6)]


@pytest.mark.parametrize("name", ["zerolint.toml", ".zerolint.toml"])
def test_zerolint_toml_holds_top_level_keys(tmp_path: Path, check, name: str) -> None:
    write(tmp_path, {name: 'exclude = ["gen"]\n', "gen/bug.py": unclamped(), "ok.py": CLEAN})
    assert check(".")[:2] == (0, "All checks passed!\n")


def test_dot_zerolint_toml_wins_over_zerolint_toml_and_pyproject(tmp_path: Path, check) -> None:
    write(
        tmp_path,
        {
            ".zerolint.toml": 'exclude = ["gen"]\n',
            "zerolint.toml": "exclude = []\n",
            "pyproject.toml": "[tool.zerolint]\nexclude = []\n",
            "gen/bug.py": unclamped(),
        },
    )
    assert check(".")[0] == 0


def test_a_configuration_is_a_file_or_a_link_to_one(tmp_path: Path, check) -> None:
    # The walk's listing says which folders hold a configuration: a folder that bears a
    # configuration's name is none, a link to a configuration file is one.
    write(
        tmp_path,
        {
            "pyproject.toml": "[tool.zerolint]\nexclude = []\n",
            "shared/quiet.toml": 'ignore = ["ZL001"]\n',
            "linked/bug.py": unclamped(),
            "folder/zerolint.toml/notes.txt": "not a configuration\n",
            "folder/bug.py": unclamped(),
        },
    )
    (tmp_path / "linked" / "zerolint.toml").symlink_to(tmp_path / "shared" / "quiet.toml")
    code, out, err = check(".")
    assert (code, findings(out), err) == (1, [("folder/bug.py", 6)], "")


@pytest.mark.parametrize(
    ("name", "text", "reason"),
    [
        ("pyproject.toml", "[project]\nname = 'x'\n", "no zerolint settings"),
        ("other.toml", "", "no zerolint settings"),
        # Not a pyproject.toml: its keys are top-level, and `tool` is none of them.
        ("other.toml", "[tool.black]\nline-length = 1\n", "unknown key in configuration: tool"),
    ],
)
def test_a_config_option_file_with_no_zerolint_settings_is_refused(
    tmp_path: Path, check, name: str, text: str, reason: str
) -> None:
    write(tmp_path, {name: text, "bad.py": unclamped()})
    code, out, err = check("--config", name, ".")
    assert (code, out) == (2, "")
    assert name in err and reason in err


def test_a_config_option_file_in_zerolint_toml_form(tmp_path: Path, check) -> None:
    write(tmp_path, {"conf/z.toml": 'exclude = ["bad.py"]\n', "bad.py": unclamped()})
    assert check("--config", "conf/z.toml", ".")[0] == 0
