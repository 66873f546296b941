"""Rules are declarations: validated on load, scoped to their rule, added from a project.

Rule files and ``[tool.zerolint]`` tables are read with every key checked: a mistake is one
line naming the file and the key. A project adds a whole rule (``rule-files``) or a sink of
a rule (``extra-sinks`` naming it), and two rules on one call both report.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from zerolint.cli import main
from zerolint.config import ConfigError, load_settings
from zerolint.rules import RuleError, load_rule_file

FINDING = re.compile(r"^(?P<path>\S+\.py):(?P<line>\d+):\d+: (?P<code>[A-Z]+\d+) ", re.MULTILINE)

RULE = """\
code = "ACME001"
name = "acme-zero-rows"
summary = "Zero rows reach acme's planner"
message = "`{expr}` can hold a 0 row when it reaches `{sink}` ({argument})"
fix = "acme.at_least_one({arg})"

[predicate]
kind = "any-row-zero"
outcome = "a row of length 0"

[[sinks]]
function = "plan"
modules = ["acme"]
position = 0

[sources]
zero_alloc = ["torch.zeros"]

[sanitizers]
at_least_one = ["acme.at_least_one"]
"""


def run(args: list[str], cwd: Path, capsys, monkeypatch) -> tuple[int, str, str]:
    monkeypatch.chdir(cwd)
    capsys.readouterr()
    code = main(["check", "--no-cache", "--color", "never", *args])
    out, err = capsys.readouterr()
    return code, out, err


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


# ------------------------------------------------------------------ rule files are validated


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("", 'sink = "x"\n'), "sink: unknown key"),
        (("position = 0", 'position = "0"'), "sinks[0].position: must be an integer >= 0"),
        (("position = 0", 'position = 0\nkeywords = "lens"'), "sinks[0].keywords: unknown key"),
        (("[sources]", "[sources]\nfloor_divisions = []"), "sources.floor_divisions: unknown key"),
        (
            ('zero_alloc = ["torch.zeros"]', 'zero_alloc = "torch.zeros"'),
            "sources.zero_alloc: must be a list of dotted names or built-in forms",
        ),
        # A name with an empty part (a trailing dot) used to hang the check: every
        # position of every file holds the empty name.
        (('function = "plan"', 'function = "acme."'), "sinks[0].function: must be a dotted name"),
        (('function = "plan"', 'function = ""'), "sinks[0].function: must be a dotted name"),
        (
            ('modules = ["acme"]', 'modules = ["acme", ""]'),
            "sinks[0].modules: must be a dotted module name or a list of them",
        ),
        (('modules = ["acme"]', 'guarded = ["acme..x"]'), "sinks[0].guarded: must be a dotted"),
        # A built-in form under a key that does not recognize it would match nothing.
        (
            ('at_least_one = ["acme.at_least_one"]', 'clamp = ["*"]'),
            'sanitizers.clamp: "*" is not one of its built-in forms (none)',
        ),
        (
            ('zero_alloc = ["torch.zeros"]', 'floor_division = ["//", "-"]'),
            'sources.floor_division: "-" is not one of its built-in forms ("//", ">>")',
        ),
        (
            ('zero_alloc = ["torch.zeros"]', 'zero_alloc = ["torch.zeros", ""]'),
            "sources.zero_alloc: must be a list of dotted names or built-in forms",
        ),
        (
            ('at_least_one = ["acme.at_least_one"]', 'at_least_one = ["acme at_least_one"]'),
            "sanitizers.at_least_one: must be a list of dotted names or built-in forms",
        ),
        (
            ('kind = "any-row-zero"', 'kind = "some-rows-zero"'),
            "predicate.kind: unknown predicate 'some-rows-zero'",
        ),
        (
            ('kind = "any-row-zero"', 'kind = "every-row-zero"\nbatch-multiple = "32"'),
            "predicate.batch-multiple: must be int",
        ),
        (
            ('kind = "any-row-zero"', 'kind = "any-row-zero"\nbatch-multiple = 32'),
            "predicate.batch-multiple: not a parameter of any-row-zero",
        ),
        (
            ("[predicate]", "[options]\nratios = [4]\n\n[predicate]"),
            "options.ratios: unknown option",
        ),
        (
            ("position = 0", 'position = 0\nsanitizers = ["clamp"]'),
            "sinks[0].sanitizers: 'clamp' is not a sanitizer key of the rule",
        ),
        (
            ('at_least_one = ["acme.at_least_one"]', 'output_mask = ["[]="]'),
            "sinks[0].outputs: is required where the sink accepts output_mask",
        ),
        (
            ('at_least_one = ["acme.at_least_one"]', 'output_mask = ["out.zero_rows"]'),
            "sanitizers.output_mask: unknown form 'out.zero_rows'",
        ),
        (
            ("position = 0", 'position = 0\noutputs = [{ result = 0, fil = "-inf" }]'),
            "sinks[0].outputs[0].fil: unknown key",
        ),
        (
            ("position = 0", 'position = 0\noutputs = [{ result = 1, fill = "nan" }]'),
            "sinks[0].outputs[0].fill: must be one of -inf, finite",
        ),
        (
            ("position = 0", "position = 0\noutputs = [{ result = 1, position = 3 }]"),
            "sinks[0].outputs[0].result: give either `result` or an argument",
        ),
        (
            ("position = 0", 'position = 0\nmeasured = ["deep_gemm_2_5_0_logits"]'),
            "sinks[0].measured: must be a table of build = probe kernel name",
        ),
        (("", "parse-more = 0\n"), "parse-more: must be true or false"),
        (
            ("position = 0", 'position = 0\nmodules-only = "yes"'),
            "sinks[0].modules-only: must be true or false",
        ),
        (("({argument})", "({argument}) {where}"), "message: bad placeholder 'where'"),
        (('code = "ACME001"', "code = 1"), "code: must be a rule code such as ZL001"),
        # Selectors, --ignore and noqa comments read codes in capitals: these could never
        # be selected, ignored or suppressed.
        (('code = "ACME001"', 'code = "Acme001"'), "code: must be a rule code such as ZL001"),
        (('code = "ACME001"', 'code = "ALL"'), "code: must be a rule code such as ZL001"),
        (('code = "ACME001"', 'code = "ACME"'), "code: must be a rule code such as ZL001"),
        (('summary = "Zero rows reach acme\'s planner"\n', ""), "summary: is required"),
    ],
)
def test_a_bad_rule_file_is_one_line_naming_the_file_and_the_key(
    tmp_path: Path, change: tuple[str, str], message: str
) -> None:
    old, new = change
    text = RULE.replace(old, new, 1) if old else new + RULE
    path = tmp_path / "ACME001.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(RuleError) as info:
        load_rule_file(path)
    assert str(info.value).startswith(f"{path}: {message}")
    assert "\n" not in str(info.value)


def test_the_shipped_rule_file_declares_what_the_engine_used_to_hard_code() -> None:
    from zerolint.rules import rule_by_code

    rule = rule_by_code("ZL001")
    assert rule is not None
    assert (rule.predicate.KIND, rule.predicate.batch_multiple) == ("every-row-zero", 32)
    assert rule.fix == "torch.clamp({arg}, min=1)"
    assert rule.options == {"compress-ratios": [], "witness-hints": {"compress_ratio": 4}}
    assert "//" in rule.sources["floor_division"]


# ------------------------------------------------------------------ a project's own rule


def test_a_rule_file_of_the_project_reports_checks_suppresses_and_fixes(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    write(
        tmp_path,
        {
            "pyproject.toml": '[tool.zerolint]\nrule-files = ["lint/ACME001.toml"]\n',
            "lint/ACME001.toml": RULE,
            "user.py": """\
                import acme
                import torch


                def build(n):
                    lens = torch.zeros(n)
                    acme.plan(lens)
                    acme.plan(acme.at_least_one(lens))
                    acme.plan(lens)  # noqa: ACME001
                    acme.plan(n // 4)
            """,
        },
    )
    code, out, _ = run(["."], tmp_path, capsys, monkeypatch)
    assert code == 1
    assert [(m["line"], m["code"]) for m in FINDING.finditer(out)] == [("7", "ACME001")]
    assert "witness: B=1 -> a row of length 0" in out
    assert run(["--select", "ZL001", "."], tmp_path, capsys, monkeypatch)[0] == 0
    _, diff, _ = run(["--diff", "user.py"], tmp_path, capsys, monkeypatch)
    assert "+    acme.plan(acme.at_least_one(lens))\n" in diff


def test_a_floor_division_a_rule_file_declares_is_a_source(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    """A function a rule lists under ``floor_division`` floors its result: a source, as
    ``torch.floor_divide`` is, not the true division ``torch.div`` is without a
    ``rounding_mode``."""
    rule = RULE.replace(
        'zero_alloc = ["torch.zeros"]',
        'floor_division = ["acme.halve"]\nfloor_division_methods = ["halved"]',
    )
    rule = rule.replace('kind = "any-row-zero"', 'kind = "every-row-zero"')
    write(
        tmp_path,
        {
            "pyproject.toml": '[tool.zerolint]\nrule-files = ["lint/ACME001.toml"]\n',
            "lint/ACME001.toml": rule,
            "user.py": """\
                import acme
                import torch


                def build(lens):
                    acme.plan(acme.halve(lens, 2))
                    acme.plan(torch.div(lens, 2))
                    acme.plan(acme.at_least_one(acme.halve(lens, 2)))
                    acme.plan(lens.halved(2))
                    acme.plan(lens.div(2))
            """,
        },
    )
    code, out, _ = run(["--select", "ACME001", "."], tmp_path, capsys, monkeypatch)
    assert code == 1
    found = [(m["line"], m["code"]) for m in FINDING.finditer(out)]
    assert found == [("6", "ACME001"), ("9", "ACME001")]
    assert "acme.halve" in out and ".halved()" in out
    # A shift the rule declares is a shift (`>> k`), not a floor division by k.
    write(
        tmp_path,
        {
            "lint/ACME001.toml": rule.replace('"acme.halve"', '"acme.right_shift"'),
            "shift.py": "import acme\n\n\ndef build(lens):\n    acme.plan(acme.right_shift(lens, 2))\n",
        },
    )
    _, out, _ = run(["--format", "json", "shift.py"], tmp_path, capsys, monkeypatch)
    ops = [s["op"] for f in json.loads(out)["findings"] for fl in f["flows"] for s in fl["steps"]]
    assert {"kind": "rshift", "arg": 2} in ops, ops


def test_a_project_rules_fix_is_written_as_python_reads_it(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    """A rule file's own fix template: a method of the argument gets parentheses around an
    operation and imports nothing; a module's function gets the module imported where its
    name is unbound, and is refused where the name is something else or bound later."""
    rule = RULE.replace('zero_alloc = ["torch.zeros"]', 'floor_division = ["//"]').replace(
        'at_least_one = ["acme.at_least_one"]',
        'at_least_one = ["acme.at_least_one"]\nclamp_methods = ["clamp"]\nclamp = ["torch.clamp_min"]',
    )
    files = {
        "pyproject.toml": '[tool.zerolint]\nrule-files = ["lint/ACME001.toml"]\n',
        "user.py": """\
            import acme


            def build(lens, n):
                acme.plan(lens // n)


            def named(lens, n, torch):
                acme.plan(lens // n)


            def later(lens, n):
                acme.plan(lens // n)
                import torch
                return torch
        """,
    }
    write(
        tmp_path,
        {
            **files,
            "lint/ACME001.toml": rule.replace(
                'fix = "acme.at_least_one({arg})"', 'fix = "{arg}.clamp(min=1)"'
            ),
        },
    )
    _, diff, _ = run(["--diff", "user.py"], tmp_path, capsys, monkeypatch)
    assert "+    acme.plan((lens // n).clamp(min=1))\n" in diff
    assert "import" not in "".join(line for line in diff.splitlines() if line.startswith("+"))
    write(
        tmp_path,
        {
            **files,
            "lint/ACME001.toml": rule.replace(
                'fix = "acme.at_least_one({arg})"', 'fix = "torch.clamp_min({arg}, 1)"'
            ),
        },
    )
    _, diff, _ = run(["--diff", "user.py"], tmp_path, capsys, monkeypatch)
    added = [line for line in diff.splitlines() if line.startswith("+") and line != "+++ user.py"]
    assert added == ["+import torch", "+    acme.plan(torch.clamp_min(lens // n, 1))"], diff
    aliased = "import acme\nimport torch as th\n\n\ndef build(lens, n):\n    acme.plan(lens // n)\n"
    write(
        tmp_path,
        {
            "alias.py": aliased,
            "lint/ACME001.toml": rule.replace(
                'fix = "acme.at_least_one({arg})"', 'fix = "th.clamp_min({arg}, 1)"'
            ),
        },
    )
    _, diff, _ = run(["--diff", "alias.py"], tmp_path, capsys, monkeypatch)
    # The project's own alias in its template: used where bound, as the name it imports.
    assert "+    acme.plan(th.clamp_min(lens // n, 1))\n" in diff
    write(
        tmp_path,
        {
            "lint/ACME001.toml": rule.replace(
                'fix = "acme.at_least_one({arg})"', 'fix = "torch.clamp_min({arg}, 1)"'
            )
        },
    )
    code, out, _ = run(["--fix", "user.py"], tmp_path, capsys, monkeypatch)
    assert code == 1  # two left
    # Where the calls are after the fix above them added `import torch`:
    assert "user.py:10:5: ZL910 not fixed: `torch` names something else at the call" in out
    assert (
        "user.py:14:5: ZL910 not fixed: `torch` is bound in this function only after the call"
        in out
    )


def test_a_shipped_rules_code_is_its_files_name() -> None:
    # `check --select` accepts a shipped code by the rule files' names, without reading them.
    from zerolint.rules import load_rules, rules_dir

    assert [r.code for r in load_rules()] == sorted(p.stem for p in rules_dir().glob("*.toml"))


@pytest.mark.parametrize(
    ("selectors", "error"),
    [
        (["--select", "ZL00"], None),  # a prefix of shipped codes, known by their files' names
        (["--select", "ZL92"], None),  # a diagnostic's prefix
        (["--select", "ACME"], None),  # only the project's rule file defines it
        (["--ignore", "ACME001,ZL001"], None),
        (["--select", "ACME002"], "unknown rule selector: ACME002"),
        (["--select", "ZL0,ZL7"], "unknown rule selector: ZL7"),
    ],
)
def test_a_selector_is_known_by_a_shipped_rule_or_the_projects(
    tmp_path: Path, capsys, monkeypatch, selectors: list[str], error: str | None
) -> None:
    write(
        tmp_path,
        {
            "pyproject.toml": '[tool.zerolint]\nrule-files = ["lint/ACME001.toml"]\n',
            "lint/ACME001.toml": RULE,
            "user.py": "x = 1\n",
        },
    )
    code, _, err = run([*selectors, "."], tmp_path, capsys, monkeypatch)
    if error is None:
        assert (code, err) == (0, "")
    else:
        assert code == 2 and err.strip().endswith(error)


def test_a_broken_rule_file_of_the_project_is_a_one_line_usage_error(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    write(
        tmp_path,
        {
            "pyproject.toml": '[tool.zerolint]\nrule-files = ["lint/ACME001.toml"]\n',
            "lint/ACME001.toml": RULE.replace("position = 0", "position = -1"),
            "user.py": "x = 1\n",
        },
    )
    code, out, err = run(["."], tmp_path, capsys, monkeypatch)
    assert code == 2 and out == ""
    assert err.strip().endswith("ACME001.toml: sinks[0].position: must be an integer >= 0")
    assert len(err.strip().splitlines()) == 1


def test_a_sink_named_with_a_trailing_dot_is_an_error_not_a_hang(tmp_path: Path) -> None:
    """It was a hang (the empty short name is found at every position of every file): the
    check runs in its own process, so that a hang fails this test instead of the suite."""
    write(
        tmp_path,
        {
            "pyproject.toml": '[tool.zerolint]\nrule-files = ["ACME001.toml"]\n',
            "ACME001.toml": RULE.replace('function = "plan"', 'function = "acme."'),
            "user.py": "import acme\nacme.plan(n // 4)\n",
        },
    )
    done = subprocess.run(
        [sys.executable, "-m", "zerolint", "check", "--no-cache", "."],
        check=False,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().endswith(
        "ACME001.toml: sinks[0].function: must be a dotted name such as `mylib.ops.plan`"
    )
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_rule_file_may_not_redefine_a_shipped_rule(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "pyproject.toml": '[tool.zerolint]\nrule-files = ["ZL001.toml"]\n',
            "ZL001.toml": RULE.replace("ACME001", "ZL001"),
        },
    )
    with pytest.raises(ConfigError, match="rule-files: ZL001.toml redefines ZL001"):
        load_settings([tmp_path])


# ------------------------------------------------------------------ extra-sinks name a rule


TWO_RULES_ONE_CALL = """\
from deep_gemm import get_paged_mqa_logits_metadata


def build(seq_lens, num_sms):
    return get_paged_mqa_logits_metadata(seq_lens // 4, 64, num_sms)
"""


def test_one_function_sink_of_two_rules_both_report(tmp_path: Path, capsys, monkeypatch) -> None:
    """A user rule made from ZL001 (its sources and sanitizers) with another predicate, on
    the same argument of the same kernel: both rules report, each with its witness."""
    write(
        tmp_path,
        {
            "pyproject.toml": (
                "[tool.zerolint]\nextra-sinks = [{ function = "
                '"deep_gemm.get_paged_mqa_logits_metadata", rule = "ACME002", '
                'based-on = "ZL001", predicate = "any-row-zero" }]\n'
            ),
            "user.py": TWO_RULES_ONE_CALL,
        },
    )
    code, out, _ = run(["."], tmp_path, capsys, monkeypatch)
    assert code == 1
    assert [(m["line"], m["code"]) for m in FINDING.finditer(out)] == [
        ("5", "ACME002"),
        ("5", "ZL001"),
    ]
    assert "witness: B=1, seq_len=1 -> a length 0" in out
    assert "witness: B=32, seq_len=1 -> every context length 0" in out


def test_an_extra_sink_extends_the_rule_it_names(tmp_path: Path, capsys, monkeypatch) -> None:
    write(
        tmp_path,
        {
            "pyproject.toml": (
                '[tool.zerolint]\nextra-sinks = [{ function = "mylib.plan", rule = "ZL001" }]\n'
            ),
            "user.py": "import mylib\n\n\ndef f(lens):\n    mylib.plan(lens // 4)\n",
        },
    )
    code, out, _ = run(["."], tmp_path, capsys, monkeypatch)
    assert code == 1
    assert [(m["line"], m["code"]) for m in FINDING.finditer(out)] == [("5", "ZL001")]


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ('{ function = "m.f", rule = "ACME9" }', "rule ACME9 is not a known rule; give `based-on`"),
        ('{ function = "m.f", positon = 1 }', "extra-sinks: entry 1: unknown field 'positon'"),
        ('{ function = "m.f", position = "1" }', "extra-sinks: entry 1: position must be an"),
        ('{ function = "m.f", rule = "ZL001", based-on = "ZL001" }', "ZL001 is a rule already"),
        (
            '{ function = "m.f", rule = "A1", based-on = "ZL001", predicate = "all-zero" }',
            "extra-sinks: entry 1: predicate.kind: unknown predicate 'all-zero'",
        ),
    ],
)
def test_a_bad_extra_sink_names_the_file_and_the_key(
    tmp_path: Path, entry: str, message: str
) -> None:
    (tmp_path / "pyproject.toml").write_text(
        f"[tool.zerolint]\nextra-sinks = [{entry}]\n", encoding="utf-8"
    )
    with pytest.raises(ConfigError) as info:
        load_settings([tmp_path])
    assert str(info.value).startswith(str(tmp_path / "pyproject.toml"))
    assert message in str(info.value)
    assert "\n" not in str(info.value)


# ------------------------------------------------------------------ rule options


RATIO = """\
from deep_gemm import get_paged_mqa_logits_metadata


def build(seq_lens, ratio, num_sms):
    return get_paged_mqa_logits_metadata(seq_lens // ratio, 64, num_sms)
"""


@pytest.mark.parametrize(
    "table",
    [
        "[tool.zerolint.options.ZL001]\ncompress-ratios = [8]\n",
        "[tool.zerolint]\ncompress-ratios = [8]\n",
    ],
    ids=["option", "top-level alias"],
)
def test_compress_ratios_is_an_option_of_zl001(
    tmp_path: Path, table: str, capsys, monkeypatch
) -> None:
    write(tmp_path, {"pyproject.toml": table, "user.py": RATIO})
    _, out, _ = run(["."], tmp_path, capsys, monkeypatch)
    assert "witness: B=32, seq_len=1, ratio=8 -> every context length 0" in out


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("[tool.zerolint.options.ZL001]\nratios = [8]\n", "ZL001 has no option ratios"),
        (
            "[tool.zerolint.options.ZL001]\ncompress-ratios = [0]\n",
            "ZL001.compress-ratios must be a list of integers >= 1",
        ),
        ("[tool.zerolint.options.ZX009]\ncompress-ratios = [4]\n", "unknown rule ZX009"),
    ],
)
def test_a_bad_rule_option_names_the_file_and_the_key(
    tmp_path: Path, table: str, message: str
) -> None:
    (tmp_path / "pyproject.toml").write_text(table, encoding="utf-8")
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_settings([tmp_path])


def test_zerolint_rules_lists_the_projects_rules_too(tmp_path: Path, capsys, monkeypatch) -> None:
    write(
        tmp_path,
        {
            "pyproject.toml": '[tool.zerolint]\nrule-files = ["lint/ACME001.toml"]\n',
            "lint/ACME001.toml": RULE,
            "lint/ACME001.md": "# ACME001\n\nWhat it does: zero rows to acme.plan.\n",
        },
    )
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["rules"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert listed[:2] == ["ACME001", "ZL001"]  # then the ZL9xx codes
    assert main(["rule", "ACME001"]) == 0
    assert capsys.readouterr().out == "# ACME001\n\nWhat it does: zero rows to acme.plan.\n"


def test_the_default_flags_read_without_loading_the_rules_are_the_rules() -> None:
    """A warm run decides whether a selection runs any rule from the rule files' names and
    their `default = false` lines (check.shipped_defaults), without loading them."""
    from zerolint.check import shipped_defaults
    from zerolint.rules import load_rules

    assert shipped_defaults() == {r.code: r.default for r in load_rules()}
