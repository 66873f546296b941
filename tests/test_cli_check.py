"""``zerolint check`` on the command line, as a specification of what users can rely on.

Exit codes as in Ruff: 0 clean, 1 findings (or a file that could not be checked), 2 wrong
arguments or configuration.
``--select``/``--ignore``/``--exit-zero``, ``# noqa`` and ``# zerolint: ignore[...]`` on the
sink line, ``[tool.zerolint]`` from the nearest pyproject.toml above the checked paths, and
output that is byte-identical from run to run, sorted by path and line.

Most cases call ``zerolint.cli.main`` in this process (what the console script calls); the
ones about separate processes run the real command.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from zerolint.cli import main

ARGS = ["check", "--no-cache", "--color", "never"]
HEADER = re.compile(r"^(?P<path>\S+?):(?P<line>\d+):(?P<col>\d+): (?P<code>ZL\d+) ", re.MULTILINE)

# The sink call is on line 6: `sink_comment` goes at its end, `source_comment` at line 5's.
UNCLAMPED = """\
from deep_gemm import get_paged_mqa_logits_metadata


def build(seq_lens, num_sms):
    lens = seq_lens // 4{source_comment}
    return get_paged_mqa_logits_metadata(lens, 64, num_sms){sink_comment}
"""
CLEAN = """\
def build(seq_lens):
    return seq_lens // 4
"""


def unclamped(sink_comment: str = "", source_comment: str = "") -> str:
    return UNCLAMPED.format(sink_comment=sink_comment, source_comment=source_comment)


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def zerolint(
    args: list[str], cwd: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``zerolint ARGS`` run in ``cwd``."""
    monkeypatch.chdir(cwd)
    capsys.readouterr()
    try:
        code = main(args)
    except SystemExit as exc:  # argparse rejects bad options this way
        code = exc.code if isinstance(exc.code, int) else 2
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def findings(out: str) -> list[tuple[str, int]]:
    return [(m["path"], int(m["line"])) for m in HEADER.finditer(out)]


@pytest.fixture
def check(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):
    """``check(*args, cwd=tmp_path, cache=False)`` -> (exit code, stdout, stderr)."""

    def run(*args: str, cwd: Path = tmp_path, cache: bool = False) -> tuple[int, str, str]:
        options = [option for option in ARGS if not cache or option != "--no-cache"]
        return zerolint([*options, *args], cwd, capsys, monkeypatch)

    return run


# ------------------------------------------------------------------------ exit codes


WARM_RUN = """\
import sys
from zerolint.cli import main
code = main(["check", *{OPTIONS}, "."])
print("imported:", sorted(m for m in {MODULES} if m in sys.modules), file=sys.stderr)
sys.exit(code)
"""


def cold_then_warm(
    root: Path, modules: list[str], options: list[str]
) -> list[subprocess.CompletedProcess[str]]:
    """Two runs of ``zerolint check OPTIONS .`` in ``root``, each in a process of its own
    (the first fills the cache); each says on its last line of stderr which of
    ``modules`` it imported."""
    script = WARM_RUN.replace("{MODULES}", repr(modules)).replace("{OPTIONS}", repr(options))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    return [
        subprocess.run(
            [sys.executable, "-c", script],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        for _ in range(2)
    ]


@pytest.mark.parametrize(
    ("config", "loaded"),
    [
        ({}, []),
        ({"pyproject.toml": "[project]\nname = 'x'\n"}, []),  # holds no zerolint settings
        # A configuration is validated against the rules: they are read (not LibCST or Z3).
        (
            {"pyproject.toml": "[tool.zerolint]\nexclude = []\n"},
            ["tomllib", "zerolint.hazards", "zerolint.rules"],
        ),
    ],
)
def test_a_warm_run_imports_no_analysis_and_reads_no_rule(
    tmp_path: Path, config: dict[str, str], loaded: list[str]
) -> None:
    # A warm run is the cache's answer: it needs neither the analyzer and its solver nor,
    # without a configuration to validate, the rules (a tenth of a warm run on vLLM).
    write(tmp_path, {**config, "bug.py": unclamped(), "clean.py": CLEAN})
    modules = ["libcst", "tomllib", "z3", "zerolint.engine", "zerolint.hazards", "zerolint.rules"]
    cold, warm = cold_then_warm(tmp_path, modules, ["--color", "never"])
    assert (cold.returncode, warm.returncode) == (1, 1)
    assert warm.stdout == cold.stdout and findings(warm.stdout) == [("bug.py", 6)]
    assert "zerolint.engine" in cold.stderr  # the first run analysed; the second did not
    assert warm.stderr.splitlines()[-1] == f"imported: {loaded}"


def test_a_warm_json_run_keeps_the_fixable_marks_without_libcst(tmp_path: Path) -> None:
    # JSON says of each finding whether --fix would clamp it. The analysis marks it on the
    # tree it built, and the cache keeps the mark: a warm run parses nothing to say it
    # again (it had planned the fix with LibCST, a second or more per large file).
    write(tmp_path, {"bug.py": unclamped(), "clean.py": CLEAN})
    modules = ["libcst", "z3", "zerolint.engine", "zerolint.fix"]
    cold, warm = cold_then_warm(tmp_path, modules, ["--output-format", "json"])
    assert (cold.returncode, warm.returncode) == (1, 1)
    assert warm.stdout == cold.stdout
    assert [f["fixable"] for f in json.loads(warm.stdout)["findings"]] == [True]
    assert "zerolint.fix" in cold.stderr  # the analysis planned the fix
    assert warm.stderr.splitlines()[-1] == "imported: []"


def test_clean_tree_exits_0(tmp_path: Path, check) -> None:
    write(tmp_path, {"clean.py": CLEAN})
    assert check(".") == (0, "All checks passed!\n", "")


def test_a_finding_exits_1(tmp_path: Path, check) -> None:
    write(tmp_path, {"bad.py": unclamped()})
    code, out, _ = check(".")
    assert code == 1
    assert findings(out) == [("bad.py", 6)]
    assert out.endswith("\nFound 1 error.\n[*] 1 fixable with `--fix`.\n")


def test_exit_zero_reports_the_finding_but_exits_0(tmp_path: Path, check) -> None:
    write(tmp_path, {"bad.py": unclamped()})
    code, out, _ = check("--exit-zero", ".")
    assert code == 0
    assert findings(out) == [("bad.py", 6)]


def test_exit_zero_is_0_for_a_file_that_could_not_be_checked(tmp_path: Path, check) -> None:
    """`--exit-zero` asks for 0 whatever was found: also where the only file named could
    not be checked (it gave 2 alone, and 0 beside a readable file)."""
    write(tmp_path, {"syn.py": "from deep_gemm import get_paged_mqa_logits_metadata\ndef f(:\n"})
    assert check("syn.py")[0] == 2
    code, out, _ = check("--exit-zero", "syn.py")
    assert code == 0 and "syn.py:2:7: ZL901 syntax error" in out


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (["--select", "ZL001"], 1),
        (["--select", "zl001"], 1),
        (["--select", "ZL"], 1),
        (["--ignore", "ZL001"], 0),
        # ignore turns off every selected rule: no rule would run, an error (as --select=)
        (["--select", "ZL001", "--ignore", "ZL001"], 2),
    ],
)
def test_select_and_ignore(tmp_path: Path, check, options: list[str], expected: int) -> None:
    write(tmp_path, {"bad.py": unclamped()})
    code, out, _ = check(*options, ".")
    assert code == expected
    assert bool(findings(out)) == (expected == 1)


@pytest.mark.parametrize(
    ("options", "names"),
    [
        (["--bogus"], "--bogus"),
        (["--select", "ZL999"], "ZL999"),
        (["--ignore", "XY1"], "XY1"),
        (["--config", "missing.toml"], "missing.toml"),
        (["--format", "xml"], "xml"),
    ],
)
def test_wrong_arguments_exit_2_with_a_message(
    tmp_path: Path, check, options: list[str], names: str
) -> None:
    write(tmp_path, {"bad.py": unclamped()})
    code, out, err = check(*options, ".")
    assert (code, out) == (2, "")
    assert names in err and "error" in err


# ---------------------------------------------------------------------- suppressions


@pytest.mark.parametrize(
    ("comment", "suppressed"),
    [
        ("  # noqa: ZL001", True),
        ("  # noqa", True),
        ("  # noqa: E501, ZL001", True),
        ("  # noqa: E501", False),
        ("  # zerolint: ignore[ZL001]", True),
        ("  # zerolint: ignore[ZL002]", False),
    ],
)
def test_suppression_comment_on_the_sink_line(
    tmp_path: Path, check, comment: str, suppressed: bool
) -> None:
    write(tmp_path, {"bad.py": unclamped(sink_comment=comment)})
    code, out, _ = check(".")
    assert (code, bool(findings(out))) == ((0, False) if suppressed else (1, True))


@pytest.mark.parametrize("comment", ["  # noqa: ZL001", "  # zerolint: ignore[ZL001]"])
def test_suppression_on_the_source_line_does_not_hide_the_sink(
    tmp_path: Path, check, comment: str
) -> None:
    write(tmp_path, {"bad.py": unclamped(source_comment=comment)})
    code, out, _ = check(".")
    assert (code, findings(out)) == (1, [("bad.py", 6)])


# ------------------------------------------------------------ [tool.zerolint] config


def test_config_is_found_by_walking_up_past_a_pyproject_without_it(tmp_path: Path, check) -> None:
    write(
        tmp_path,
        {
            "pyproject.toml": '[tool.zerolint]\nignore = ["ZL001"]\n',
            "pkg/pyproject.toml": '[project]\nname = "pkg"\n',
            "pkg/sub/bad.py": unclamped(),
        },
    )
    assert check(".", cwd=tmp_path / "pkg" / "sub")[0] == 0
    assert check("pkg/sub/bad.py")[0] == 0


def test_config_select(tmp_path: Path, check) -> None:
    write(
        tmp_path, {"pyproject.toml": '[tool.zerolint]\nselect = ["ZL001"]\n', "bad.py": unclamped()}
    )
    assert check(".")[0] == 1


def test_config_given_with_the_config_option(tmp_path: Path, check) -> None:
    write(
        tmp_path,
        {"settings/pyproject.toml": '[tool.zerolint]\nignore = ["ZL001"]\n', "bad.py": unclamped()},
    )
    assert check("--config", "settings/pyproject.toml", ".")[0] == 0
    assert check(".")[0] == 1


LIB_USER = """\
from mylib import plan, plan_kernel


def build(seq_lens, table):
    plan_kernel(table, seq_lens // 4)
    plan_kernel(seq_lens // 4, table)
    plan(table, lens=seq_lens // 4)
    plan(seq_lens // 4, table)
"""


def test_extra_sinks_by_position_and_by_keyword(tmp_path: Path, check) -> None:
    write(
        tmp_path,
        {
            "pyproject.toml": (
                "[tool.zerolint]\nextra-sinks = [\n"
                '  { function = "mylib.plan_kernel", position = 1 },\n'
                '  { function = "mylib.plan", keyword = "lens" },\n]\n'
            ),
            "lib_user.py": LIB_USER,
        },
    )
    code, out, _ = check(".")
    assert code == 1
    headers = [line for line in out.splitlines() if HEADER.match(line)]
    assert headers == [
        (
            "lib_user.py:5:5: ZL001 [*] `seq_lens // 4` can be all zero when it reaches "
            "`plan_kernel` (argument 1); clamp it to >= 1"
        ),
        (
            "lib_user.py:7:5: ZL001 [*] `seq_lens // 4` can be all zero when it reaches `plan` "
            "(`lens`); clamp it to >= 1"
        ),
    ]


def test_an_extra_sinks_guarded_modules_are_no_sinks(tmp_path: Path, check) -> None:
    write(
        tmp_path,
        {
            "pyproject.toml": (
                "[tool.zerolint]\nextra-sinks = [\n"
                '  { function = "mylib.plan", position = 0, guarded = ["mylib.safe"] },\n]\n'
            ),
            "lib_user.py": (
                "import mylib\nimport mylib.safe\n\n\ndef build(seq_lens):\n"
                "    mylib.safe.plan(seq_lens // 4)\n    mylib.plan(seq_lens // 4)\n"
            ),
        },
    )
    code, out, _ = check(".")
    headers = [line for line in out.splitlines() if HEADER.match(line)]
    assert code == 1
    assert [line.split(" ZL001")[0] for line in headers] == ["lib_user.py:7:5:"]


def test_without_extra_sinks_those_calls_are_not_sinks(tmp_path: Path, check) -> None:
    write(tmp_path, {"lib_user.py": LIB_USER})
    assert check(".") == (0, "All checks passed!\n", "")


SANITIZED = """\
from deep_gemm import get_paged_mqa_logits_metadata
from mylib import ensure_positive


def build(seq_lens, num_sms):
    return get_paged_mqa_logits_metadata(ensure_positive(seq_lens // 4), 64, num_sms)
"""


def test_extra_sanitizers(tmp_path: Path, check) -> None:
    write(tmp_path, {"user.py": SANITIZED})
    assert check(".")[0] == 1
    write(
        tmp_path,
        {"pyproject.toml": '[tool.zerolint]\nextra-sanitizers = ["mylib.ensure_positive"]\n'},
    )
    code, out, _ = check(".")
    assert (code, findings(out)) == (0, [])


def test_compress_ratios_bound_the_witness(tmp_path: Path, check) -> None:
    write(
        tmp_path,
        {
            "pyproject.toml": "[tool.zerolint]\ncompress-ratios = [4]\n",
            "ratio.py": unclamped()
            .replace("seq_lens // 4", "seq_lens // ratio")
            .replace("build(seq_lens,", "build(seq_lens, ratio,"),
        },
    )
    code, out, _ = check(".")
    assert code == 1
    assert "  witness: B=32, seq_len=1, ratio=4 -> every context length 0\n" in out


def test_exclude_applies_to_folders_and_to_named_files_only_when_forced(
    tmp_path: Path, check
) -> None:
    write(
        tmp_path,
        {
            "pyproject.toml": '[tool.zerolint]\nexclude = ["generated"]\n',
            "generated/gen.py": unclamped(),
            "src/bad.py": unclamped(),
        },
    )
    code, out, _ = check(".")
    assert (code, findings(out)) == (1, [("src/bad.py", 6)])
    # As in Ruff: a file named on the command line is checked unless --force-exclude.
    assert findings(check("generated/gen.py")[1]) == [("generated/gen.py", 6)]
    assert check("--force-exclude", "generated/gen.py")[0] == 0


@pytest.mark.parametrize(
    "folder", [".git", ".venv", "venv", "dist", "_build", "node_modules", "some_env"]
)
def test_vcs_virtualenv_and_build_folders_are_skipped(tmp_path: Path, check, folder: str) -> None:
    write(tmp_path, {f"{folder}/bad.py": unclamped(), "clean.py": CLEAN})
    if folder == "some_env":  # a virtualenv under any name: it has a pyvenv.cfg
        write(tmp_path, {"some_env/pyvenv.cfg": "home = /usr/bin\n"})
    code, out, err = check(".")
    assert (code, out) == (0, "All checks passed!\n")
    if folder == ".git":  # a .git git cannot read: said (tests/test_cli_stderr.py), still skipped
        assert "cannot ask git which files it ignores" in err
    else:
        assert err == ""


def test_a_package_named_build_is_checked(tmp_path: Path, check) -> None:
    """As in Ruff, whose default excludes have `dist` and `_build` but not `build`: a
    subpackage of that name is code (setuptools' `build/` output is git-ignored, and
    ignored files are skipped)."""
    write(
        tmp_path,
        {"pkg/__init__.py": "", "pkg/build/__init__.py": "", "pkg/build/bad.py": unclamped()},
    )
    code, out, _ = check(".")
    assert (code, findings(out)) == (1, [("pkg/build/bad.py", 6)])


@pytest.mark.parametrize(
    ("table", "names"),
    [
        ('[tool.zerolint]\nselcet = ["ZL001"]\n', "selcet"),
        ("[tool.zerolint]\nselect = [\n", "pyproject.toml"),
        ('[tool.zerolint]\nextra-sinks = ["plan"]\n', "extra-sinks"),
        ("[tool.zerolint]\nselect = []\n", "selects no rule"),  # every check would pass
    ],
)
def test_bad_configuration_exits_2_naming_the_file(
    tmp_path: Path, check, table: str, names: str
) -> None:
    write(tmp_path, {"pyproject.toml": table, "bad.py": unclamped()})
    code, out, err = check(".")
    assert (code, out) == (2, "")
    assert "pyproject.toml" in err and names in err
    assert len(err.strip().splitlines()) == 1


# --------------------------------------------------------------------- stable output

TWO_SINKS = """\
from deep_gemm import get_paged_mqa_logits_metadata


def first(seq_lens, num_sms):
    lens = seq_lens // 4
    return get_paged_mqa_logits_metadata(lens, 64, num_sms)


def second(buf, n, num_sms):
    buf[:n] = 0
    return get_paged_mqa_logits_metadata(buf[:n], 64, num_sms)
"""


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    write(
        tmp_path,
        {"b.py": TWO_SINKS, "a.py": unclamped(), "sub/c.py": TWO_SINKS, "sub/a_clean.py": CLEAN},
    )
    return tmp_path


def test_findings_are_sorted_by_path_then_line_whatever_the_argument_order(
    tree: Path, check
) -> None:
    expected = [("a.py", 6), ("b.py", 6), ("b.py", 11), ("sub/c.py", 6), ("sub/c.py", 11)]
    out = check(".")[1]
    assert findings(out) == expected
    assert check("sub", "b.py", "a.py")[1] == out


def test_output_is_identical_across_processes(tree: Path) -> None:
    """Runs with different hash seeds print the same bytes (sets of paths must never
    leak their iteration order into the output)."""
    outputs = set()
    for seed in ("0", "1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        proc = subprocess.run(
            [sys.executable, "-m", "zerolint", *ARGS, "."],
            cwd=tree,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        assert proc.returncode == 1, proc.stderr
        outputs.add(proc.stdout)
    assert len(outputs) == 1


def test_a_cached_run_prints_what_a_fresh_run_prints(tree: Path, check) -> None:
    """Results come from the cache when nothing changed: the same bytes and exit code as a
    run without it, diagnostics of files that could not be read included."""
    write(tree, {"sub/syntax.py": "from deep_gemm import get_paged_mqa_logits_metadata\n("})
    (tree / "nul.py").write_bytes(b"x = 1\x00\n")
    (tree / "latin1.py").write_bytes(b"# caf\xe9\n")
    fresh = check(".")
    assert check(".", cache=True) == fresh  # fills the cache
    assert (tree / ".zerolint_cache").is_dir()
    assert check(".", cache=True) == fresh


# ------------------------------------------------------------------------ --fix refusals

UNFIXABLE = """\
from deep_gemm import get_paged_mqa_logits_metadata


def build(seq_lens, num_sms):
    args = (seq_lens // 4, 64, num_sms)
    return get_paged_mqa_logits_metadata(*args)
"""


def test_a_fix_that_cannot_be_applied_is_reported_with_the_finding(tmp_path: Path, check) -> None:
    write(tmp_path, {"unfixable.py": UNFIXABLE})
    code, out, err = check("--fix", "unfixable.py")
    assert code == 1
    assert "unfixable.py:6:12: ZL910 not fixed: the call has no plain positional argument 0" in out
    assert out.rstrip().endswith("Found 1 error. 1 file could not be fixed.")
    assert err == ""
    assert (tmp_path / "unfixable.py").read_text() == UNFIXABLE


# Both rules at one call: ZL001 (values of 0, fixable by a clamp) and ZL002 (no rows, no fix).
TWO_RULES = """\
from deep_gemm import get_paged_mqa_logits_metadata


def build(seq_lens, num_decodes, num_sms):
    lens = seq_lens[:num_decodes] // 4
    return get_paged_mqa_logits_metadata(lens, 64, num_sms)
"""


def test_fix_clamps_beside_an_unfixable_finding_of_another_rule(tmp_path: Path, check) -> None:
    # The re-check after the clamp still sees ZL002 at the call; only ZL001's findings
    # count there, so the fix is kept and ZL002 is what remains.
    write(tmp_path, {"two.py": TWO_RULES})
    code, out, err = check("--select", "ZL001,ZL002", "--fix", "two.py")
    assert (code, err) == (1, "zerolint: fixed 1 error in two.py\n")
    fixed = (tmp_path / "two.py").read_text()
    assert "get_paged_mqa_logits_metadata(torch.clamp(lens, min=1), 64, num_sms)" in fixed, fixed
    assert [m["code"] for m in HEADER.finditer(out)] == ["ZL002"], out
    assert "ZL910" not in out
    assert "Found 2 errors (1 fixed, 1 remaining)." in out, out


def test_diff_names_a_fix_it_cannot_show_on_stderr(tmp_path: Path, check) -> None:
    write(tmp_path, {"unfixable.py": UNFIXABLE})
    code, out, err = check("--diff", "unfixable.py")
    assert (code, out) == (1, "")  # what --fix exits with for it (issue 16.7)
    assert (
        err == "unfixable.py:6:12: ZL910 not fixed: the call has no plain positional argument 0\n"
    )


@pytest.mark.parametrize(
    ("args", "codes"),
    [
        ((), ["ZL001"]),
        (("--select", "ALL"), ["ZL001", "ZL002"]),
        (("--select", "ZL002"), ["ZL002"]),
        # As in Ruff: --extend-select adds to the selection, or to the default rules.
        (("--extend-select", "ZL002"), ["ZL001", "ZL002"]),
        (("--extend-select", "zl0"), ["ZL001", "ZL002"]),
        (("--select", "ZL002", "--extend-select", "ZL001"), ["ZL001", "ZL002"]),
        (("--extend-select", "ZL920", "--extend-select", "ZL002"), ["ZL001", "ZL002"]),
        # ignore wins over both
        (("--extend-select", "ZL002", "--ignore", "ZL002"), ["ZL001"]),
        (("--select", "ZL002", "--extend-select", "ZL001", "--ignore", "ZL002"), ["ZL001"]),
    ],
)
def test_an_opt_in_rule_runs_only_when_selected(tmp_path: Path, check, args, codes) -> None:
    # ZL002's rule file says `default = false`: no `select` leaves it out, a selector adds it.
    write(tmp_path, {"two.py": TWO_RULES})
    code, out, _ = check(*args, "two.py")
    assert code == (1 if codes else 0)
    assert sorted(m["code"] for m in HEADER.finditer(out)) == codes, out


@pytest.mark.parametrize(
    ("config", "args", "codes"),
    [
        ('extend-select = ["ZL002"]\n', (), ["ZL001", "ZL002"]),
        ('select = ["ZL002"]\nextend-select = ["ZL001"]\n', (), ["ZL001", "ZL002"]),
        # The command line's --select replaces the configuration's selection, both keys.
        ('extend-select = ["ZL002"]\n', ("--select", "ZL001"), ["ZL001"]),
        ('select = ["ZL002"]\n', ("--extend-select", "ZL001"), ["ZL001", "ZL002"]),
        ('extend-select = ["ZL002"]\nignore = ["ZL001"]\n', (), ["ZL002"]),
    ],
)
def test_extend_select_in_the_configuration(tmp_path: Path, check, config, args, codes) -> None:
    write(tmp_path, {"pyproject.toml": "[tool.zerolint]\n" + config, "two.py": TWO_RULES})
    code, out, err = check(*args, ".")
    assert (code, err) == (1, "")
    assert sorted(m["code"] for m in HEADER.finditer(out)) == codes, out


def test_extend_select_is_part_of_the_cache_key(tmp_path: Path, check) -> None:
    write(tmp_path, {"two.py": TWO_RULES})
    assert findings(check("two.py", cache=True)[1]) == [("two.py", 6)]
    out = check("--extend-select", "ZL002", "two.py", cache=True)[1]
    assert sorted(m["code"] for m in HEADER.finditer(out)) == ["ZL001", "ZL002"], out
    write(tmp_path, {"pyproject.toml": '[tool.zerolint]\nextend-select = ["ZL002"]\n'})
    out = check("two.py", cache=True)[1]
    assert sorted(m["code"] for m in HEADER.finditer(out)) == ["ZL001", "ZL002"], out


def test_an_unknown_extend_select_code_is_one_line_naming_its_file(tmp_path: Path, check) -> None:
    write(tmp_path, {"two.py": TWO_RULES})
    assert check("--extend-select", "ZL7", "two.py")[::2] == (
        2,
        "zerolint: error: unknown rule selector: ZL7\n",
    )
    write(tmp_path, {"pyproject.toml": '[tool.zerolint]\nextend-select = ["zl8"]\n'})
    code, out, err = check("two.py")
    assert (code, out) == (2, "")
    assert err == f"zerolint: error: {tmp_path / 'pyproject.toml'}: unknown rule selector: ZL8\n"
    write(tmp_path, {"pyproject.toml": '[tool.zerolint]\nextend-select = "ZL002"\n'})
    code, _, err = check("two.py")
    assert code == 2 and "extend-select" in err and err.count("\n") == 1, err
