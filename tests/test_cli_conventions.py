"""The conventions Ruff users have in their fingers, on ``zerolint check``.

.gitignore respected by default; stdin with --stdin-filename; --exclude/--extend-exclude;
per-file-ignores; file-level ``# zerolint: noqa``; unused suppressions (ZL920, opt-in);
--output-file; --select merged and ALL; the ZL9xx codes selectable and documented; the
messages for a bad flag, a missing path, a folder with no Python files.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.test_cli_check import CLEAN, findings, unclamped, write

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env=ENV)


def zerolint(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zerolint", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        env={**ENV, "PYTHONPATH": str(ROOT)},
    )


# ------------------------------------------------------------------- .gitignore


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with a bug in a tracked file and bugs in git-ignored places."""
    git(tmp_path, "init", "-q")
    write(
        tmp_path,
        {
            ".gitignore": "generated/\nscratch_*.py\n",
            "src/bug.py": unclamped(),
            "generated/bug.py": unclamped(),
            "src/scratch_1.py": unclamped(),
            "local/bug.py": unclamped(),
        },
    )
    (tmp_path / ".git" / "info").mkdir(exist_ok=True)
    (tmp_path / ".git" / "info" / "exclude").write_text("local/\n")
    return tmp_path


def test_git_ignored_files_are_skipped(repo: Path, check) -> None:
    assert findings(check(".", cwd=repo)[1]) == [("src/bug.py", 6)]


def test_no_respect_gitignore_checks_them(repo: Path, check) -> None:
    assert findings(check("--no-respect-gitignore", ".", cwd=repo)[1]) == [
        ("generated/bug.py", 6),
        ("local/bug.py", 6),
        ("src/bug.py", 6),
        ("src/scratch_1.py", 6),
    ]


def test_respect_gitignore_false_in_the_configuration(repo: Path, check) -> None:
    write(repo, {"zerolint.toml": "respect-gitignore = false\n"})
    assert len(findings(check(".", cwd=repo)[1])) == 4


def test_the_global_excludes_file_is_respected(repo: Path, tmp_path_factory, check) -> None:
    home = tmp_path_factory.mktemp("home")
    (home / "ignore").write_text("src/\n")
    git(repo, "config", "core.excludesFile", str(home / "ignore"))
    assert findings(check(".", cwd=repo)[1]) == []


def test_a_git_ignored_file_named_explicitly_is_checked(repo: Path, check) -> None:
    # As Ruff: a file named on the command line is checked.
    assert findings(check("generated/bug.py", cwd=repo)[1]) == [("generated/bug.py", 6)]


def test_a_folder_below_the_repository_root_respects_gitignore(repo: Path, check) -> None:
    """git is asked wherever a `.git` lies above the folder named (outside one it is not
    run at all)."""
    assert findings(check("src", cwd=repo)[1]) == [("src/bug.py", 6)]
    assert findings(check(".", cwd=repo / "src")[1]) == [("bug.py", 6)]


def test_a_link_into_a_repository_respects_gitignore(repo: Path, tmp_path_factory, check) -> None:
    """The folder named is a symbolic link to a folder of a repository: no `.git` lies
    above the link, but above where it leads."""
    outside = tmp_path_factory.mktemp("outside")
    (outside / "src").symlink_to(repo / "src", target_is_directory=True)
    assert findings(check("src", cwd=outside)[1]) == [("src/bug.py", 6)]


def test_a_linked_work_tree_respects_gitignore(repo: Path, tmp_path_factory, check) -> None:
    """In a work tree made by `git worktree add`, `.git` is a file, not a folder."""
    git(repo, "add", ".gitignore", "src/bug.py")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "c")
    linked = tmp_path_factory.mktemp("linked") / "tree"
    git(repo, "worktree", "add", "-q", str(linked))
    assert (linked / ".git").is_file()
    write(linked, {"generated/bug.py": unclamped(), "src/scratch_2.py": unclamped()})
    assert findings(check(".", cwd=linked)[1]) == [("src/bug.py", 6)]


def test_a_tree_outside_git_checks_everything(tmp_path: Path, check) -> None:
    write(tmp_path, {".gitignore": "generated/\n", "generated/bug.py": unclamped()})
    assert findings(check(".")[1]) == [("generated/bug.py", 6)]


# ------------------------------------------------------------------- stdin


def test_stdin_with_a_filename(tmp_path: Path) -> None:
    run = zerolint(
        "check", "--no-cache", "-", "--stdin-filename", "pkg/b.py", cwd=tmp_path, stdin=unclamped()
    )
    assert run.returncode == 1, run.stderr
    assert run.stdout.startswith("pkg/b.py:6:12: ZL001 ")


def test_stdin_clean_and_without_a_name(tmp_path: Path) -> None:
    run = zerolint("check", "-", cwd=tmp_path, stdin=CLEAN)
    assert (run.returncode, run.stdout) == (0, "All checks passed!\n")
    bad = zerolint("check", "--format", "json", "-", cwd=tmp_path, stdin=unclamped())
    assert [f["path"] for f in json.loads(bad.stdout)["findings"]] == ["-"]


def test_stdin_filename_takes_that_files_configuration(tmp_path: Path) -> None:
    write(tmp_path, {"sub/zerolint.toml": 'ignore = ["ZL001"]\n'})
    run = zerolint("check", "-", "--stdin-filename", "sub/x.py", cwd=tmp_path, stdin=unclamped())
    assert (run.returncode, run.stdout) == (0, "All checks passed!\n")


def test_stdin_diff_prints_the_fix(tmp_path: Path) -> None:
    run = zerolint(
        "check", "--diff", "-", "--stdin-filename", "b.py", cwd=tmp_path, stdin=unclamped()
    )
    assert "+    return get_paged_mqa_logits_metadata(torch.clamp(lens, min=1)" in run.stdout


@pytest.mark.parametrize(
    "head",
    [b"\xef\xbb\xbf", b"# -*- coding: latin-1 -*-\n# Caf\xe9.\n"],
    ids=["bom", "latin-1"],
)
def test_stdin_is_read_and_its_diff_written_as_the_files_are(tmp_path: Path, head: bytes) -> None:
    """Text read from stdin is decoded as a file is (a BOM, a PEP 263 `coding:` line: a
    latin-1 file was ZL903 from stdin), and its `--diff` is in its own bytes, BOM and
    encoding kept, so that `git apply` takes it as it takes the file's."""
    git(tmp_path, "init", "-q", ".")
    data = head + unclamped().encode("utf-8")
    (tmp_path / "b.py").write_bytes(data)
    args = [sys.executable, "-m", "zerolint", "check", "--no-cache", "--color", "never"]
    env = {**ENV, "PYTHONPATH": str(ROOT)}
    checked = subprocess.run(
        [*args, "-", "--stdin-filename", "b.py"],
        input=data,
        cwd=tmp_path,
        capture_output=True,
        check=False,
        env=env,
    )
    assert checked.returncode == 1 and b"b.py:" in checked.stdout and b"ZL001" in checked.stdout
    for source in ("stdin", "file"):
        named = ["-", "--stdin-filename", "b.py"] if source == "stdin" else ["b.py"]
        diff = subprocess.run(
            [*args, "--diff", *named],
            input=data,
            cwd=tmp_path,
            capture_output=True,
            check=False,
            env=env,
        ).stdout
        (tmp_path / f"{source}.diff").write_bytes(diff)
        assert b"torch.clamp(lens, min=1)" in diff
        git(tmp_path, "apply", "--check", f"{source}.diff")
    assert (tmp_path / "stdin.diff").read_bytes() == (tmp_path / "file.diff").read_bytes()


# ------------------------------------------------------------------- exclude


def test_exclude_and_extend_exclude_flags(tmp_path: Path, check) -> None:
    write(
        tmp_path,
        {
            "zerolint.toml": 'exclude = ["a"]\n',
            "a/bug.py": unclamped(),
            "b/bug.py": unclamped(),
            "c/bug.py": unclamped(),
        },
    )
    assert findings(check(".")[1]) == [("b/bug.py", 6), ("c/bug.py", 6)]
    assert findings(check("--extend-exclude", "b", ".")[1]) == [("c/bug.py", 6)]
    assert findings(check("--exclude", "b,c", ".")[1]) == [("a/bug.py", 6)]
    assert findings(check("--exclude", "b", "--exclude", "c", ".")[1]) == [("a/bug.py", 6)]


def test_per_file_ignores(tmp_path: Path, check) -> None:
    write(
        tmp_path,
        {
            "pyproject.toml": '[tool.zerolint.per-file-ignores]\n"tests/*" = ["ZL001"]\n',
            "tests/test_x.py": unclamped(),
            "src/x.py": unclamped(),
        },
    )
    assert findings(check(".")[1]) == [("src/x.py", 6)]


# ------------------------------------------------------------------- suppressions


FILE_LEVEL = [
    ("# zerolint: noqa\n", True),
    ("# zerolint: noqa: ZL001\n", True),
    ("# zerolint: NOQA: zl001\n", True),
    ("# zerolint: noqa: ZL002\n", False),
    ('x = "# zerolint: noqa"\n', False),  # inside a string: not a comment
    ("x = 1  # zerolint: noqa\n", False),  # file-level comments stand on a line of their own
]


@pytest.mark.parametrize(("head", "suppressed"), FILE_LEVEL)
def test_file_level_suppression(tmp_path: Path, check, head: str, suppressed: bool) -> None:
    write(tmp_path, {"bad.py": head + unclamped()})
    assert (check(".")[0] == 0) == suppressed


def test_noqa_inside_a_string_does_not_suppress(tmp_path: Path, check) -> None:
    text = unclamped().replace("num_sms)\n", 'num_sms) if "# noqa" else None\n')
    write(tmp_path, {"bad.py": text})
    assert check(".")[0] == 1


def test_unused_suppressions_are_reported_when_selected(tmp_path: Path, check) -> None:
    write(
        tmp_path,
        {
            "used.py": unclamped(sink_comment="  # noqa: ZL001"),
            "stale.py": CLEAN.replace("// 4", "// 4  # noqa: ZL001"),
            "other_tool.py": CLEAN.replace("// 4", "// 4  # noqa: E501"),
            "stale_file.py": "# zerolint: noqa\n" + CLEAN,
            # Read in any case, as the comment's own pattern reads it.
            "stale_upper.py": CLEAN.replace("// 4", "// 4  # NOQA: ZL001"),
            # Names no code: quoted as written, not as the bare comment (which hides all).
            "stale_empty.py": CLEAN.replace("// 4", "// 4  # zerolint: ignore[]"),
        },
    )
    assert check(".")[:2] == (0, "All checks passed!\n")  # opt-in: off by default
    code, out, _ = check("--select", "ZL001,ZL920", ".")
    assert code == 1
    assert findings(out) == [
        ("stale.py", 2),
        ("stale_empty.py", 2),
        ("stale_file.py", 1),
        ("stale_upper.py", 2),
    ]
    assert "stale.py:2:27: ZL920 unused suppression `# noqa: ZL001`" in out
    assert "stale_empty.py:2:27: ZL920 unused suppression `# zerolint: ignore[]`" in out
    assert findings(check("--select", "ALL", ".")[1]) == findings(out)


def test_unused_suppressions_are_the_same_when_the_prescan_child_reads_the_tree(
    tmp_path: Path, check
) -> None:
    """With two processes the prescan's child reads the tree and says which files may hold
    a suppression comment (``Scan.may_suppress``); ZL920 reads only those. Its findings
    are those of one process, which reads every file: stale comments in either case, a
    file-level one, one spelled with a dotted capital I (which Python's case-blind match
    takes for an i), and one in a file that is not UTF-8 (which ZL920 skips either way)."""
    from zerolint.prescan import MIN_FILES

    files = {f"filler_{i:03d}.py": f"x = {i}\n" for i in range(MIN_FILES)}
    files |= {
        "used.py": unclamped(sink_comment="  # noqa: ZL001"),
        "stale.py": CLEAN.replace("// 4", "// 4  # noqa: ZL001"),
        "other_tool.py": CLEAN.replace("// 4", "// 4  # noqa: E501"),
        "stale_file.py": "# zerolint: noqa\n" + CLEAN,
        "stale_upper.py": CLEAN.replace("// 4", "// 4  # NOQA: ZL001"),
        "stale_dotted.py": "# zerol\u0130nt: noqa\n" + CLEAN,
    }
    write(tmp_path, files)
    (tmp_path / "latin.py").write_bytes(
        b"# -*- coding: latin-1 -*-\n# zerolint: noqa\nx = '\xe9'\n"
    )
    one = check("--select", "ZL001,ZL920", "--jobs", "1", ".")
    two = check("--select", "ZL001,ZL920", "--jobs", "2", ".")
    assert one == two
    assert findings(two[1]) == [
        ("stale.py", 2),
        ("stale_dotted.py", 1),
        ("stale_file.py", 1),
        ("stale_upper.py", 2),
    ]


# ------------------------------------------------------------------- output, select


def test_output_file(tmp_path: Path, check) -> None:
    write(tmp_path, {"bad.py": unclamped()})
    code, out, _ = check("--format", "json", "--output-file", "out/report.json", ".")
    assert (code, out) == (1, "")
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    assert [f["path"] for f in data["findings"]] == ["bad.py"]


def test_a_report_file_has_no_color_even_when_asked(tmp_path: Path) -> None:
    """As Ruff: `--color always` colors the terminal, never a report file."""
    write(tmp_path, {"bad.py": unclamped()})
    run = zerolint(
        "check", "--no-cache", "--color", "always", "-o", "report.txt", ".", cwd=tmp_path
    )
    assert run.returncode == 1
    report = (tmp_path / "report.txt").read_text()
    assert "bad.py:" in report and "\x1b" not in report
    colored = zerolint("check", "--no-cache", "--color", "always", ".", cwd=tmp_path)
    assert "\x1b[" in colored.stdout  # the terminal's is colored


@pytest.mark.parametrize("given", ["--select=", "--select=,,"])
def test_an_empty_selection_is_an_error_not_a_pass(tmp_path: Path, given: str) -> None:
    """As Ruff: `--select=` selects nothing, which would pass every check."""
    write(tmp_path, {"bad.py": unclamped()})
    run = zerolint("check", "--no-cache", given, ".", cwd=tmp_path)
    assert (run.returncode, run.stdout) == (2, "")
    assert run.stderr == "zerolint: error: --select selects no rule (give codes, or ALL)\n"
    # With something to extend it, the selection is not empty (as before).
    extended = zerolint("check", "--no-cache", given, "--extend-select", "ZL001", ".", cwd=tmp_path)
    assert extended.returncode == 1 and "bad.py:" in extended.stdout
    write(tmp_path, {"pyproject.toml": '[tool.zerolint]\nselect = []\nextend-select = ["ZL001"]\n'})
    assert zerolint("check", "--no-cache", ".", cwd=tmp_path).returncode == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--fix", "-"], "--fix writes files, not stdin (use --diff)"),
        (["--touching", "-"], "--touching names files, not stdin"),
        (
            ["--diff", "-o", "out.txt", "."],
            "--diff prints the fix on stdout; --output-file is for the report",
        ),
        (
            ["--config", "a.toml", "--config", "b.toml", "."],
            "--config names one configuration file, not a.toml, b.toml",
        ),
    ],
    ids=["fix-stdin", "touching-stdin", "diff-output-file", "two-configs"],
)
def test_options_that_cannot_go_together_say_which(
    tmp_path: Path, args: list[str], message: str
) -> None:
    """Each refusal names the option it is about (`--touching -` was told to use --diff),
    and `--diff -o FILE` is refused rather than leaving FILE unwritten."""
    write(tmp_path, {"bad.py": unclamped()})
    run = zerolint("check", "--no-cache", *args, cwd=tmp_path, stdin=unclamped())
    assert (run.returncode, run.stdout) == (2, "")
    assert run.stderr == f"zerolint: error: {message}\n"
    assert not (tmp_path / "out.txt").exists()


def test_github_annotations_name_files_from_the_checkout(tmp_path: Path) -> None:
    """In a workflow step run in a subfolder (`working-directory: backend`), `file=` is
    from the checkout (GITHUB_WORKSPACE), which the runner reads it against; outside one,
    as shown."""
    write(tmp_path / "backend", {"pkg/x.py": unclamped()})
    args = [sys.executable, "-m", "zerolint", "check", "--no-cache", "--format", "github", "."]
    env = {k: v for k, v in ENV.items() if k != "GITHUB_WORKSPACE"} | {"PYTHONPATH": str(ROOT)}
    backend = tmp_path / "backend"

    def annotated(**extra: str) -> str:
        out = subprocess.run(
            args, cwd=backend, capture_output=True, text=True, check=False, env={**env, **extra}
        ).stdout
        return out.split("file=", 1)[1].split(",", 1)[0]

    assert annotated() == "pkg/x.py"
    assert annotated(GITHUB_WORKSPACE=str(tmp_path)) == "backend/pkg/x.py"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    stdin = subprocess.run(
        [*args[:-1], "-"],
        cwd=backend,
        input=unclamped(),
        capture_output=True,
        text=True,
        check=False,
        env={**env, "GITHUB_WORKSPACE": str(tmp_path)},
    ).stdout
    assert stdin.split("file=", 1)[1].startswith("-,")  # stdin's name, not a file
    full = annotated(GITHUB_WORKSPACE=str(elsewhere))
    assert full == str(backend / "pkg" / "x.py").replace("\\", "/").replace(":", "%3A")


def test_select_given_twice_merges(tmp_path: Path, check) -> None:
    write(tmp_path, {"bad.py": unclamped(), "stale.py": "# zerolint: noqa\n" + CLEAN})
    _, out, _ = check("--select", "ZL001", "--select", "ZL920", ".")
    assert findings(out) == [("bad.py", 6), ("stale.py", 1)]


def test_select_all(tmp_path: Path, check) -> None:
    write(tmp_path, {"bad.py": unclamped()})
    assert findings(check("--select", "ALL", ".")[1]) == [("bad.py", 6)]


def test_concise_output_as_in_ruff(tmp_path: Path) -> None:
    broken = "from deep_gemm import get_paged_mqa_logits_metadata\ndef f(:\n"
    write(tmp_path, {"bad.py": unclamped(), "broken.py": broken})
    run = zerolint("check", "--no-cache", "--output-format", "concise", ".", cwd=tmp_path)
    assert run.returncode == 1
    lines = run.stdout.splitlines()
    assert lines[0].startswith("bad.py:6:12: ZL001 [*] `lens` can be all zero")
    assert lines[1].startswith("broken.py:2:7: ZL901 ")
    assert lines[2:] == [
        "Found 1 error. 1 file could not be checked.",
        "[*] 1 fixable with `--fix`.",
    ]
    forced = {"FORCE_COLOR": "1"}
    coloured = subprocess.run(
        [sys.executable, "-m", "zerolint", "check", "--no-cache", "--format", "concise", "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        env={**ENV, "PYTHONPATH": str(ROOT), **forced},
    )
    assert "\x1b[" in coloured.stdout  # as text: coloured where colour is asked for
    quiet = zerolint("check", "--no-cache", "--format", "concise", "-q", ".", cwd=tmp_path)
    assert quiet.stdout.splitlines() == lines[:2]


def test_full_output_is_text_as_in_ruff(tmp_path: Path, check) -> None:
    """Ruff calls its default format ``full``; zerolint's default, ``text``, is it."""
    write(tmp_path, {"bad.py": unclamped()})
    text = check("--output-format", "text", ".")
    assert text[0] == 1 and "  witness: " in text[1]  # the paths, under the finding
    assert check("--output-format", "full", ".") == text
    assert check("--output-format=full", ".") == text
    assert check("--format", "full", ".") == text
    code, out, err = check("--output-format", "fulls", ".")
    assert (code, out) == (2, "")
    assert "invalid choice: 'fulls' (choose from 'text', 'concise', 'json'" in err


# ------------------------------------------------------------------- ZL9xx codes


def test_zl9xx_diagnostics_can_be_ignored_and_selected(tmp_path: Path, check) -> None:
    broken = "from deep_gemm import get_paged_mqa_logits_metadata\ndef f(:\n"
    write(tmp_path, {"broken.py": broken, "bad.py": unclamped()})
    code, out, _ = check(".")
    assert code == 1 and "ZL901" in out
    code, out, _ = check("--ignore", "ZL901", ".")
    assert "ZL901" not in out and findings(out) == [("bad.py", 6)]
    code, out, _ = check("--select", "ZL001", ".")
    assert "ZL901" in out  # selecting rules does not hide a file that was not checked
    code, out, _ = check("--select", "ZL902", ".")
    assert "ZL901" not in out and findings(out) == []


@pytest.mark.parametrize("code", ["ZL901", "ZL902", "ZL903", "ZL904", "ZL905", "ZL910", "ZL920"])
def test_zerolint_rule_documents_every_zl9xx_code(tmp_path: Path, code: str) -> None:
    run = zerolint("rule", code, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert code in run.stdout.splitlines()[0] and "## What to do" in run.stdout
    listed = zerolint("rules", cwd=tmp_path).stdout
    assert any(line.startswith(code) for line in listed.splitlines())
    readme = (ROOT / "README.md").read_text()
    assert f"| `{code}` |" in readme


def test_the_shipped_rules_are_documented_beside_a_broken_configuration(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.zerolint]\nexlude = []\n")
    run = zerolint("rule", "ZL001", cwd=tmp_path)
    assert run.returncode == 0 and run.stdout.startswith("# ZL001: ")
    assert run.stderr.startswith(f"zerolint: warning: {tmp_path / 'pyproject.toml'}: unknown key")
    assert run.stderr.endswith("; showing the shipped rules only\n")
    listed = zerolint("rules", "--format", "json", cwd=tmp_path)
    assert listed.returncode == 0
    opt_in = {r["code"]: r["opt_in"] for r in json.loads(listed.stdout)}
    # The rules off by default are opt-in, as the ZL9xx codes that are.
    assert (opt_in["ZL001"], opt_in["ZL002"], opt_in["ZL920"]) == (False, True, True)


@pytest.mark.parametrize("option", ["--format", "--output-format"])
def test_rule_and_rules_take_ruffs_option_name(tmp_path: Path, option: str) -> None:
    """`ruff rule --output-format json`: the same name as `check`'s, for both commands."""
    one = zerolint("rule", "ZL001", option, "json", cwd=tmp_path)
    assert one.returncode == 0 and json.loads(one.stdout)["code"] == "ZL001"
    every = zerolint("rules", option, "json", cwd=tmp_path)
    assert every.returncode == 0 and "ZL001" in {r["code"] for r in json.loads(every.stdout)}


# ------------------------------------------------------------------- messages


def test_an_unknown_flag_after_check_shows_checks_usage(tmp_path: Path) -> None:
    run = zerolint("check", "--bogus", ".", cwd=tmp_path)
    assert run.returncode == 2
    assert run.stderr.startswith("usage: zerolint check ")
    assert "unrecognized arguments: --bogus" in run.stderr


def test_a_folder_with_no_python_files_warns(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "x.md").write_text("# hi\n")
    run = zerolint("check", "docs", cwd=tmp_path)
    assert run.stderr == "zerolint: warning: no Python files found under docs\n"
    assert run.returncode == 0


# ------------------------------------------------------------------- docs/ruff.md


def test_every_option_the_ruff_table_gives_zerolint_exists(tmp_path: Path) -> None:
    import re

    table = (ROOT / "docs" / "ruff.md").read_text().split("## What zerolint does not do")[0]
    helps = zerolint("check", "--help", cwd=tmp_path).stdout
    rows = [line.split("|") for line in table.splitlines() if line.startswith("| ")]
    ours = [row[1] if row[2].strip().startswith("same") else row[2] for row in rows[1:]]
    flags = {f for cell in ours for f in re.findall(r"`(--?[a-z][\w-]*)", cell)}
    assert {"--stdin-filename", "--touching", "--no-respect-gitignore"} <= flags
    for flag in sorted(flags):
        assert re.search(rf"(^|[\s,\[]){re.escape(flag)}\b", helps), flag


def test_unused_suppressions_with_the_cache_and_a_nested_configuration(
    tmp_path: Path, check
) -> None:
    # The cache keeps no record of what a comment hid: a used one must not turn "unused".
    write(
        tmp_path,
        {
            "sub/zerolint.toml": 'select = ["ZL001", "ZL920"]\n',
            "sub/used.py": unclamped(sink_comment="  # noqa: ZL001"),
            "sub/stale.py": "# zerolint: noqa\n" + CLEAN,
        },
    )
    for _ in range(2):
        code, out, _ = check(".", cache=True)
        assert (code, findings(out)) == (1, [("sub/stale.py", 1)])


def test_per_file_ignores_all(tmp_path: Path, check) -> None:
    write(
        tmp_path,
        {
            "zerolint.toml": '[per-file-ignores]\n"gen/*" = ["ALL"]\n',
            "gen/x.py": unclamped(),
        },
    )
    assert check(".")[:2] == (0, "All checks passed!\n")


# ------------------------------------------------------------------- ending at once

# Output buffered as it is by default (PYTHONUNBUFFERED would write each line at once and
# hide what is left in the buffer when the program ends).
BUFFERED = {k: v for k, v in ENV.items() if k != "PYTHONUNBUFFERED"} | {"PYTHONPATH": str(ROOT)}


def buffered(
    *args: str, cwd: Path, stdout: Any = subprocess.PIPE
) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` in ``cwd`` with its output buffered as it is by default."""
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
        env=BUFFERED,
    )


def test_a_long_report_is_all_there_when_the_program_ends_at_once(tmp_path: Path) -> None:
    """The program ends with ``os._exit`` (no teardown of what the check built): a report far
    longer than a pipe's buffer still comes out whole."""
    write(tmp_path, {f"pkg/bug_{i:03}.py": unclamped() for i in range(200)})
    run = buffered("-m", "zerolint", "check", "--no-cache", "--format", "json", "pkg", cwd=tmp_path)
    assert run.returncode == 1, run.stderr
    assert len(run.stdout) > 256 * 1024
    assert len(json.loads(run.stdout)["findings"]) == 200


def test_what_a_command_prints_is_written_before_the_program_ends(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``zerolint rules`` prints a few lines into a buffer that only the end of the program
    flushes: through a pipe, its whole text comes out, as ``main()`` prints it here."""
    from zerolint.cli import main

    run = buffered("-m", "zerolint", "rules", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    capsys.readouterr()
    assert main(["rules"]) == 0
    shown = capsys.readouterr().out
    assert "ZL001" in shown and run.stdout == shown


@pytest.mark.parametrize(
    "args",
    [["rules"], ["check", "--no-cache", "--format", "json", "pkg"]],
    ids=["printed-at-the-end", "written-by-check"],
)
def test_a_reader_that_went_away_gets_no_traceback(tmp_path: Path, args: list[str]) -> None:
    """``zerolint ... | head -1``, the reader gone before the program writes (here it never
    reads): the program says nothing about the closed pipe (no "Exception ignored ...
    BrokenPipeError"), whether the text was still buffered when it ended or was being
    written by ``check``."""
    write(tmp_path, {f"pkg/bug_{i:03}.py": unclamped() for i in range(200)})
    with subprocess.Popen(
        [sys.executable, "-m", "zerolint", *args],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=BUFFERED,
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()
        stderr = proc.stderr.read()
        proc.wait(timeout=60)
    assert stderr == ""


def test_under_a_profiler_the_program_exits_the_usual_way(tmp_path: Path) -> None:
    """cProfile writes its data at exit: the program does not end before it can (on every
    Python: up to 3.11 through sys.setprofile, from 3.12 through sys.monitoring)."""
    out = tmp_path / "profile.out"
    run = buffered("-m", "cProfile", "-o", str(out), "-m", "zerolint", "rules", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "ZL001" in run.stdout
    assert out.is_file() and out.stat().st_size > 0


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_output_that_cannot_be_written_is_an_error(tmp_path: Path) -> None:
    """A full disk under the output: exit 2 and one line saying so, not a silent success
    with the output lost."""
    with open("/dev/full", "w") as full:
        run = buffered("-m", "zerolint", "rules", cwd=tmp_path, stdout=full)
    assert run.returncode == 2
    assert run.stderr.startswith("zerolint: error: cannot write the output:")
    assert run.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("options", "config", "said"),
    [
        (["--select", "ZL001", "--ignore", "ZL"], None, "--ignore turns off every selected rule"),
        (["--ignore", "ZL001,ZL004,ZL005"], None, "--ignore turns off every selected rule"),
        (
            ["--select", "ZL002", "--extend-select", "ZL001", "--ignore", "ZL0"],
            None,
            "--ignore turns off every selected rule",
        ),
        ([], 'select = ["ALL"]\nignore = ["ALL"]\n', "zerolint.toml: ignore: turns off every"),
    ],
)
def test_an_ignore_that_turns_off_every_selected_rule_is_an_error_not_a_pass(
    tmp_path: Path, options: list[str], config: str | None, said: str
) -> None:
    """As an empty selection (`--select=`): no rule would run, and every check would pass."""
    write(tmp_path, {"bad.py": unclamped()})
    if config is not None:
        write(tmp_path, {"zerolint.toml": config})
    run = zerolint("check", "--no-cache", *options, ".", cwd=tmp_path)
    assert (run.returncode, run.stdout) == (2, "")
    assert run.stderr.startswith("zerolint: error: ") and said in run.stderr, run.stderr
    assert len(run.stderr.splitlines()) == 1


def test_what_still_runs_something_is_not_an_empty_selection(tmp_path: Path) -> None:
    """A ZL9xx code selected on purpose, an ignore that leaves a rule, and per-file-ignores
    that silence every rule in one file (a file may rightly do so) are no error."""
    write(tmp_path, {"bad.py": unclamped()})
    for ignore in ([], ["--ignore", "ZL001"]):
        run = zerolint("check", "--no-cache", "--select", "ZL902", *ignore, ".", cwd=tmp_path)
        assert (run.returncode, run.stdout) == (0, "All checks passed!\n"), run.stderr
    run = zerolint("check", "--no-cache", "--select", "ALL", "--ignore", "ZL002", ".", cwd=tmp_path)
    assert run.returncode == 1 and "bad.py:6:12: ZL001" in run.stdout
    write(tmp_path, {"zerolint.toml": 'per-file-ignores = { "bad.py" = ["ALL"] }\n'})
    run = zerolint("check", "--no-cache", ".", cwd=tmp_path)
    assert (run.returncode, run.stdout, run.stderr) == (0, "All checks passed!\n", "")


def test_a_folder_may_turn_every_rule_off_for_itself(tmp_path: Path) -> None:
    """A nested configuration's `ignore = ["ALL"]` (a vendored tree opting out) checks
    nothing there, as in Ruff, and the rest of the tree is still checked: only the command
    line's ignore, or the run's own configuration, is refused for running no rule."""
    write(tmp_path, {"main.py": unclamped(), "vendored/v.py": unclamped()})
    write(tmp_path, {"vendored/zerolint.toml": 'ignore = ["ALL"]\n'})
    run = zerolint("check", "--no-cache", "--output-format", "concise", ".", cwd=tmp_path)
    assert run.returncode == 1, run.stderr
    assert [line.split(":")[0] for line in run.stdout.splitlines() if ": ZL" in line] == ["main.py"]
