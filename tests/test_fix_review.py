"""``--fix`` and ``--diff`` where a review of the codemod found them wrong: a wrapper
imported from another module (or a lambda) taken for the sink, so that its first argument
was clamped; an ``import torch`` later in the scope taken as binding the name at the call;
sinks of one name whose argument sits at other positions; a ZL910 shown where the call was
before an import moved it; a file named through two hard links; and a ``--diff`` that did
not apply to a file with a BOM or in latin-1. Each runs the real program."""

from __future__ import annotations

import ast
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_reliability_fix import ARGS, BUG, FIXED, run
from zerolint.cli import main

ROOT = Path(__file__).resolve().parent.parent
HELPER = """\
from deep_gemm import get_paged_mqa_logits_metadata


def plan(num_sms, lens):
    return get_paged_mqa_logits_metadata(lens, 64, num_sms)
"""
CALLER = """\
from h import get_paged_mqa_logits_metadata, plan


def build(seq_lens, num_sms):
    return plan(num_sms, seq_lens // 4)
"""


@pytest.mark.parametrize("same_name", [False, True])
def test_a_wrapper_from_another_module_is_not_fixed_as_the_sink(
    tmp_path: Path, same_name: bool
) -> None:
    """Its arguments are its own: the sink's first is ``lens`` here, the wrapper's
    ``num_sms``. Named as the sink or not, imported beside it or not, it is left alone."""
    helper, caller = HELPER, CALLER
    if same_name:  # the wrapper itself is called get_paged_mqa_logits_metadata
        helper = "import deep_gemm\n\n\n" + HELPER.split("\n\n\n", 1)[1].replace(
            "def plan", "def get_paged_mqa_logits_metadata"
        ).replace("return get_paged", "return deep_gemm.get_paged")
        caller = "from h import get_paged_mqa_logits_metadata\n\n\n" + CALLER.split("\n\n\n", 1)[
            1
        ].replace("plan(", "get_paged_mqa_logits_metadata(")
    (tmp_path / "h.py").write_text(helper)
    (tmp_path / "b.py").write_text(caller)
    findings = json.loads(run(tmp_path, "--format", "json", ".")[1])["findings"]
    assert [(f["path"], f["line"], f["fixable"]) for f in findings] == [("b.py", 5, False)]
    code, out, err = run(tmp_path, "--fix", ".")
    assert "b.py:5:12: ZL910 not fixed: this call is `" in out
    assert "which reaches the sink inside it (in h.py); clamp the lengths there" in out
    assert (tmp_path / "b.py").read_text() == caller and err == ""
    assert code == 1


def test_a_lambda_wrapper_is_refused_and_the_plain_call_beside_it_fixed(tmp_path: Path) -> None:
    """Without `import torch`, the fix adds one, and what is left moves down a line: the
    ZL910 is shown there, as the findings of the file fixed are."""
    source = BUG.replace("import torch\n", "") + (
        "\n\ndef other(seq_lens, num_sms):\n"
        "    f = lambda s: get_paged_mqa_logits_metadata(s // 4, 64, num_sms)\n"
        "    return f(seq_lens)\n"
    )
    (tmp_path / "a.py").write_text(source)
    findings = json.loads(run(tmp_path, "--format", "json", "a.py")[1])["findings"]
    assert [(f["line"], f["fixable"]) for f in findings] == [(6, True), (11, False)]
    code, out, err = run(tmp_path, "--fix", "a.py")
    assert err == "zerolint: fixed 1 error in a.py\n", out
    message = "this call is `f`, which reaches the sink inside it; clamp the lengths there"
    assert f"a.py:12:12: ZL910 not fixed: {message}" in out
    assert "a.py:12:12: ZL001 " in out  # the finding left, where the ZL910 is
    assert (tmp_path / "a.py").read_text().startswith("import torch\n")
    assert code == 1


def test_text_marks_what_fix_clamps_and_fix_clamps_what_it_marks(tmp_path: Path) -> None:
    """As Ruff's: ``[*]`` after the code of each finding ``--fix`` would clamp, and the
    count on a line of its own; then ``--fix`` clamps exactly those, cold or warm."""
    source = BUG + (
        "\n\ndef other(seq_lens, num_sms):\n"
        "    f = lambda s: get_paged_mqa_logits_metadata(s // 4, 64, num_sms)\n"
        "    return f(seq_lens)\n"
    )
    (tmp_path / "a.py").write_text(source)
    for cache in ([], ["--no-cache"], []):  # a cold run, then the cache's answer
        argv = [a for a in ARGS if a != "--no-cache"] + cache + ["a.py"]
        out = io.StringIO()
        old = Path.cwd()
        os.chdir(tmp_path)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
                assert main(argv) == 1
        finally:
            os.chdir(old)
        headers = [line for line in out.getvalue().splitlines() if ": ZL001 " in line]
        assert [h.split(": ZL001 ")[1][:4] for h in headers] == ["[*] ", "`s /"]
        assert out.getvalue().endswith("Found 2 errors.\n[*] 1 fixable with `--fix`.\n")
    code, out, err = run(tmp_path, "--fix", "a.py")
    assert err == "zerolint: fixed 1 error in a.py\n" and code == 1
    assert "[*]" not in out  # the one left is refused
    assert "\nFound 2 errors (1 fixed, 1 remaining). 1 proved safe" in out


def test_statistics_and_annotations_say_what_is_fixable_as_ruff_does(tmp_path: Path) -> None:
    """Of two ZL001 findings one is fixable: `--statistics` marks the rule `[~]` (some),
    JSON statistics count one; GitHub annotations carry no `[*]` (no summary explains it)."""
    source = BUG + (
        "\n\ndef other(seq_lens, num_sms):\n"
        "    f = lambda s: get_paged_mqa_logits_metadata(s // 4, 64, num_sms)\n"
        "    return f(seq_lens)\n"
    )
    (tmp_path / "a.py").write_text(source)
    rows = run(tmp_path, "--statistics", "a.py")[1].splitlines()
    assert rows[0].split("\t")[:3] == ["2", "ZL001", "[~] unclamped-zero-lengths-to-mqa-metadata"]
    assert rows[-1] == "[*] 1 fixable with `--fix`."
    table = json.loads(run(tmp_path, "--statistics", "--format", "json", "a.py")[1])
    assert [(r["code"], r["fixable"], r["fixable_count"]) for r in table] == [("ZL001", False, 1)]
    annotations = run(tmp_path, "--format", "github", "a.py")[1]
    assert annotations.count("::error ") == 2 and "[*]" not in annotations
    (tmp_path / "a.py").write_text(BUG)  # the one fixable finding alone: every one is
    rows = run(tmp_path, "--statistics", "a.py")[1].splitlines()
    assert rows[0].split("\t")[2] == "[*] unclamped-zero-lengths-to-mqa-metadata"


def test_a_parameter_spelt_in_fullwidth_letters_is_torch(tmp_path: Path) -> None:
    """Python reads ``ｔｏｒｃｈ`` as ``torch`` (NFKC): the parameter hides the module at
    the call, so a clamp there would call the parameter's ``clamp``. Refused, not marked,
    and the analysis's tree (Python's spelling) and LibCST's (the source's) agree."""
    source = BUG.replace(
        "def build(seq_lens, num_sms):", "def build(seq_lens, num_sms, ｔｏｒｃｈ=None):"
    )
    assert source != BUG
    (tmp_path / "a.py").write_text(source, encoding="utf-8")
    findings = json.loads(run(tmp_path, "--format", "json", "a.py")[1])["findings"]
    assert [f["fixable"] for f in findings] == [False]
    code, out, _ = run(tmp_path, "--fix", "a.py")
    assert "ZL910 not fixed: `torch` names something else at the call" in out
    assert (tmp_path / "a.py").read_text(encoding="utf-8") == source and code == 1


def test_what_fix_refused_is_not_marked_after_it(tmp_path: Path) -> None:
    """A file --fix may not write is marked (a plan does not ask), then left with a ZL910:
    after that run it is not marked, though another file was fixed and all were checked
    again. A file LibCST writes back otherwise (a backslash ends its last line) is marked,
    and fixed, its last line kept."""
    kept = BUG + "# scratch: C:\\tmp\\\n"
    (tmp_path / "kept.py").write_text(kept)
    (tmp_path / "locked.py").write_text(BUG)
    findings = json.loads(run(tmp_path, "--format", "json", ".")[1])["findings"]
    assert [(f["path"], f["fixable"]) for f in findings] == [("kept.py", True), ("locked.py", True)]
    (tmp_path / "locked.py").chmod(0o444)
    code, out, err = run(tmp_path, "--fix", ".")
    assert err == "zerolint: fixed 1 error in kept.py\n" and code == 1
    assert "locked.py: ZL910 not fixed: no permission to write the file" in out
    assert "locked.py:7:12: ZL001 `lens`" in out  # shown, not marked
    assert "[*]" not in out
    assert (tmp_path / "kept.py").read_text() == FIXED + "# scratch: C:\\tmp\\\n"


def test_text_from_stdin_is_fixed_with_diff(tmp_path: Path) -> None:
    """--fix writes files; for text read from stdin, --diff is what applies the fix."""
    done = subprocess.run(
        [sys.executable, "-m", "zerolint", *ARGS, "-"],
        input=BUG,
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.stdout.endswith("Found 1 error.\n[*] 1 fixable with `--diff`.\n"), done.stdout


def runs(path: Path) -> str:
    """What calling ``build`` in the module at ``path`` does, with stand-ins for the
    kernel and for torch: "ok", or the exception's name."""
    stubs = path.parent / "stubs"
    (stubs / "torch").mkdir(parents=True, exist_ok=True)
    (stubs / "deep_gemm.py").write_text("def get_paged_mqa_logits_metadata(*a):\n    return a\n")
    (stubs / "torch" / "__init__.py").write_text("def clamp(x, min=None):\n    return x\n")
    script = (
        "import sys\nns = {}\n"
        f"exec(compile(open({str(path)!r}).read(), 'm', 'exec'), ns)\n"
        "try:\n    ns['build'](8, 1)\n    print('ok')\n"
        "except Exception as e:\n    print(type(e).__name__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(stubs)},
    )
    return done.stdout.strip() or done.stderr


def test_torch_bound_on_some_paths_only_gets_an_import_or_is_refused(tmp_path: Path) -> None:
    """A `torch` that may be unbound when the call runs is no clamp to call: imported in
    the function under an `if` (a local name: refused, a module's import would not reach
    it), at the module's top level under an `if`, or by another function under `global`
    (a module-level `import torch` is added). Each fixed module is run with `torch`
    unbound where it may be."""
    head = "from deep_gemm import get_paged_mqa_logits_metadata\n\n\n"
    call = "    return get_paged_mqa_logits_metadata(seq_lens // 4, 64, num_sms)\n"
    local = (
        head + "def build(seq_lens, num_sms):\n    if num_sms > 8:\n        import torch\n" + call
    )
    (tmp_path / "local.py").write_text(local)
    code, out, _ = run(tmp_path, "--fix", "local.py")
    assert "ZL910 not fixed: `torch` may be unbound at the call" in out
    assert (tmp_path / "local.py").read_text() == local and code == 1
    dominated = local.replace("        import torch\n" + call, "        import torch\n    " + call)
    dominated += "    return None\n"
    cases = {
        "dominated.py": dominated,  # the import runs before the call whenever it runs
        "module.py": "import os\n"
        + head.replace("\n\n\n", "\n\nif os.environ.get('ZL_NO_SUCH'):\n    import torch\n\n\n")
        + "def build(seq_lens, num_sms):\n"
        + call,
        "other.py": head
        + "def setup():\n    global torch\n    import torch\n\n\n"
        + "def build(seq_lens, num_sms):\n"
        + call,
    }
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
        assert runs(tmp_path / name) == "ok"  # before the fix: torch is not needed
        code, out, err = run(tmp_path, "--fix", name)
        assert (code, err) == (0, f"zerolint: fixed 1 error in {name}\n"), out
        fixed = (tmp_path / name).read_text()
        assert "torch.clamp(seq_lens // 4, min=1)" in fixed
        top_level_import = "import torch" in fixed.splitlines()  # unindented
        assert top_level_import == (name != "dominated.py"), fixed
        assert runs(tmp_path / name) == "ok", fixed


def test_torch_imported_before_the_call_on_its_line_or_below_a_def_is_used(
    tmp_path: Path,
) -> None:
    """`import torch; return f(x)` on one line binds torch before the call, in a function
    or a one-line `if` body; a module's `import torch` after the function that calls it
    has run before any call of it. Each is used as it is, with no import added."""
    head = "from deep_gemm import get_paged_mqa_logits_metadata\n\n\n"
    call = "get_paged_mqa_logits_metadata(seq_lens // 4, 64, num_sms)"
    cases = {
        "line.py": head + f"def build(seq_lens, num_sms):\n    import torch; return {call}\n",
        "suite.py": head
        + f"def build(seq_lens, num_sms):\n    if num_sms: import torch; return {call}\n"
        + "    return None\n",
        "late.py": head + f"def build(seq_lens, num_sms):\n    return {call}\n\n\nimport torch\n",
    }
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
        code, out, err = run(tmp_path, "--fix", name)
        assert (code, err) == (0, f"zerolint: fixed 1 error in {name}\n"), out
        fixed = (tmp_path / name).read_text()
        assert fixed == text.replace("(seq_lens // 4,", "(torch.clamp(seq_lens // 4, min=1),")


def test_a_call_on_a_line_libcst_rewrites_is_refused_alone(tmp_path: Path) -> None:
    """LibCST writes `except ValueError :` without its space, so a clamp on that line
    cannot be made in the file's own text: that call is refused where it is, and the
    file's other calls are fixed (every fix in the file was refused, with no line)."""
    source = (
        "import torch\nfrom deep_gemm import get_paged_mqa_logits_metadata\n\n\n"
        "def plan(seq_lens, ratio, num_sms):\n"
        "    return get_paged_mqa_logits_metadata(seq_lens // ratio, 64, num_sms)\n\n\n"
        "def other(seq_lens, ratio, num_sms):\n    try:\n        pass\n"
        "    except ValueError : return get_paged_mqa_logits_metadata(seq_lens // ratio, 64, num_sms)\n"
    )
    (tmp_path / "combo.py").write_text(source)
    code, out, err = run(tmp_path, "--fix", "combo.py")
    assert code == 1 and err == "zerolint: fixed 1 error in combo.py\n", err
    assert "combo.py:12:32: ZL910 not fixed: LibCST writes the lines the fix changes" in out
    fixed = (tmp_path / "combo.py").read_text()
    first = "(seq_lens // ratio, 64, num_sms)\n\n\n"
    assert fixed == source.replace(
        first, "(torch.clamp(seq_lens // ratio, min=1), 64, num_sms)\n\n\n", 1
    )


def test_a_generator_argument_gets_its_own_parentheses(tmp_path: Path) -> None:
    """`f(x // 4 for x in s)`: a bare generator may only be a sole argument, so the clamp
    around it gives it parentheses (it was written bare and did not compile)."""
    source = (
        "import torch\nfrom deep_gemm import get_paged_mqa_logits_metadata\n\n\n"
        "def build(seq_lens):\n"
        "    return get_paged_mqa_logits_metadata(s // 4 for s in seq_lens)\n"
    )
    (tmp_path / "gen.py").write_text(source)
    code, out, err = run(tmp_path, "--fix", "gen.py")
    assert (code, err) == (0, "zerolint: fixed 1 error in gen.py\n"), out
    fixed = (tmp_path / "gen.py").read_text()
    assert "get_paged_mqa_logits_metadata(torch.clamp((s // 4 for s in seq_lens), min=1))" in fixed
    ast.parse(fixed)


def test_torch_imported_after_the_call_is_not_taken_as_bound_at_it(tmp_path: Path) -> None:
    local = (
        "from deep_gemm import get_paged_mqa_logits_metadata\n\n\n"
        "def build(seq_lens, num_sms):\n"
        "    out = get_paged_mqa_logits_metadata(seq_lens // 4, 64, num_sms)\n"
        "    import torch\n"
        "    return out, torch\n"
    )
    (tmp_path / "local.py").write_text(local)
    # In a comprehension, which runs where it is written, as in the function's body.
    listed = local.replace(
        "out = get_paged_mqa_logits_metadata(seq_lens // 4, 64, num_sms)",
        "out = [get_paged_mqa_logits_metadata(s // 4, 64, num_sms) for s in seq_lens]",
    )
    (tmp_path / "listed.py").write_text(listed)
    code, out, _ = run(tmp_path, "--fix", "listed.py")
    assert "ZL910 not fixed: `torch` is bound in this function only after the call" in out
    assert (tmp_path / "listed.py").read_text() == listed and code == 1
    code, out, _ = run(tmp_path, "--fix", "local.py")
    # In the function, `torch` is a local name: unbound at the call whatever the module
    # imports. Clamping there would raise UnboundLocalError.
    assert "ZL910 not fixed: `torch` is bound in this function only after the call" in out
    assert (tmp_path / "local.py").read_text() == local and code == 1
    top = (
        "from deep_gemm import get_paged_mqa_logits_metadata\n\n"
        "OUT = get_paged_mqa_logits_metadata(SEQ_LENS // 4, 64, 1)\n"
        "import torch  # noqa: E402\n\n\n"
        "def build(seq_lens, num_sms):\n    return OUT\n"
    )
    (tmp_path / "top.py").write_text(top.replace("OUT =", "SEQ_LENS = 8\nOUT ="))
    code, out, err = run(tmp_path, "--fix", "top.py")
    assert (code, err) == (0, "zerolint: fixed 1 error in top.py\n"), out
    fixed = (tmp_path / "top.py").read_text()
    # At the top level an import above the call serves (the one below runs too late).
    assert fixed.index("import torch\n") < fixed.index("torch.clamp(SEQ_LENS // 4, min=1)")
    assert runs(tmp_path / "top.py") == "ok"


def test_sinks_of_one_name_with_the_argument_at_other_positions(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        "[[tool.zerolint.extra-sinks]]\n"
        'function = "plan_kernel"\nmodules = ["liba"]\nposition = 1\nkeyword = "lens"\n'
        "[[tool.zerolint.extra-sinks]]\n"
        'function = "plan_kernel"\nmodules = ["libb"]\nposition = 0\nkeyword = "lens"\n'
    )
    source = (
        "from libb import plan_kernel\n\n\n"
        "def build(seq_lens, n):\n    return plan_kernel(seq_lens // 4, n)\n"
    )
    (tmp_path / "a.py").write_text(source)
    code, out, _ = run(tmp_path, "--fix", "a.py")
    # Which module's position holds is not known at the call: positionally, not fixed.
    assert (
        "a.py:5:12: ZL910 not fixed: the call has no `lens=` argument, and the sinks named "
        "`plan_kernel` take it at different positions" in out
    ), out
    assert (tmp_path / "a.py").read_text() == source and code == 1
    keyword = source.replace("plan_kernel(seq_lens // 4, n)", "plan_kernel(lens=seq_lens // 4)")
    (tmp_path / "a.py").write_text(keyword)
    code, out, err = run(tmp_path, "--fix", "a.py")
    assert (code, err) == (0, "zerolint: fixed 1 error in a.py\n"), out
    assert "plan_kernel(lens=torch.clamp(seq_lens // 4, min=1))" in (tmp_path / "a.py").read_text()


def test_what_is_left_is_shown_where_the_added_import_moved_it(tmp_path: Path) -> None:
    source = (
        "from deep_gemm import get_paged_mqa_logits_metadata\n\n\n"
        "def build(seq_lens, num_sms):\n"
        "    a = get_paged_mqa_logits_metadata(seq_lens // 4, 64, num_sms)\n"
        "    b = get_paged_mqa_logits_metadata(*(seq_lens // 8, 64, num_sms))\n"
        "    return a, b\n"
    )
    (tmp_path / "a.py").write_text(source)
    code, out, err = run(tmp_path, "--fix", "a.py")
    assert err == "zerolint: fixed 1 error in a.py\n"
    lines = (tmp_path / "a.py").read_text().splitlines()
    assert lines[6].startswith("    b = get_paged")  # line 7 now: `import torch` above
    assert "a.py:7:9: ZL910 not fixed: the call has no plain positional argument 0" in out
    assert "a.py:7:9: ZL001 " in out and code == 1
    # One statement over two lines, both edited by the clamp of the first call; the call
    # left is on the second, after the clamp, which moves it right.
    (tmp_path / "b.py").write_text(
        "import torch\nfrom deep_gemm import get_paged_mqa_logits_metadata\n\n\n"
        "def build(seq_lens, num_sms):\n"
        "    a = (get_paged_mqa_logits_metadata(seq_lens\n"
        "        // 4, 64, num_sms), get_paged_mqa_logits_metadata(*(seq_lens // 8, 64, num_sms)))\n"
        "    return a\n"
    )
    code, out, err = run(tmp_path, "--fix", "b.py")
    assert err == "zerolint: fixed 1 error in b.py\n", out
    left = (tmp_path / "b.py").read_text().splitlines()[6]
    column = left.index("get_paged_mqa_logits_metadata(*") + 1
    assert f"b.py:7:{column}: ZL910 not fixed: the call has no plain positional argument 0" in out
    assert f"b.py:7:{column}: ZL001 " in out


def test_a_file_named_through_two_hard_links_is_fixed_once(tmp_path: Path) -> None:
    (tmp_path / "real.py").write_text(BUG)
    os.link(tmp_path / "real.py", tmp_path / "hard.py")
    code, out, err = run(tmp_path, "--diff", "real.py", "hard.py")
    assert out.count("+++ ") == 1 and code == 1
    code, out, err = run(tmp_path, "real.py", "hard.py")  # reported by both names, as Ruff
    assert "hard.py:7:12: ZL001 " in out and "real.py:7:12: ZL001 " in out and code == 1
    code, out, err = run(tmp_path, "--fix", "real.py", "hard.py")
    assert (code, err) == (0, "zerolint: fixed 1 error in hard.py\n"), out
    assert "Found 1 error (1 fixed, 0 remaining)." in out
    assert (tmp_path / "real.py").read_text() == FIXED
    assert os.path.samefile(tmp_path / "real.py", tmp_path / "hard.py")


# Without `import torch`: the fix adds it at the top, beside the first lines (a BOM, the
# latin-1 text), which the hunk's context then holds.
UNIMPORTED = BUG.replace("import torch\n", "").encode()
LATIN1 = b"# -*- coding: latin-1 -*-\nNOTE = 'caf\xe9'\n" + UNIMPORTED


def apply_the_diff(cwd: Path, name: str) -> None:
    """Run ``--diff`` on the file ``name`` (a real process: the diff is bytes on its
    stdout), and apply what it prints with ``git apply``."""
    diff = subprocess.run(
        [sys.executable, "-m", "zerolint", *ARGS, "--diff", name],
        cwd=cwd,
        capture_output=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert diff.returncode == 1 and diff.stdout.startswith(f"--- {name}\n".encode()), diff.stderr
    (cwd / "a.diff").write_bytes(diff.stdout)
    applied = subprocess.run(["git", "apply", "a.diff"], cwd=cwd, capture_output=True, check=False)
    assert applied.returncode == 0, applied.stderr


@pytest.mark.parametrize("data", [b"\xef\xbb\xbf" + UNIMPORTED, LATIN1], ids=["bom", "latin-1"])
@pytest.mark.skipif(shutil.which("git") is None, reason="git applies the patch")
def test_the_diff_applies_to_the_file_as_fix_writes_it(tmp_path: Path, data: bytes) -> None:
    (tmp_path / "a.py").write_bytes(data)
    (tmp_path / "fixed").mkdir()
    shutil.copy(tmp_path / "a.py", tmp_path / "fixed" / "a.py")
    assert run(tmp_path / "fixed", "--fix", "a.py")[0] == 0
    apply_the_diff(tmp_path, "a.py")
    assert (tmp_path / "a.py").read_bytes() == (tmp_path / "fixed" / "a.py").read_bytes()


def test_the_recheck_of_a_fix_follows_the_paths_into_other_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fixed text is checked again before it is written, with the files its paths
    came through: alone, the caller of a helper that divides has no finding, fixed or not.
    Here the planner is made to forget where the paths reach the sink (as it did before),
    so it clamps the wrapper's first argument; the re-check must catch that."""
    import dataclasses

    import zerolint.fix

    plain = zerolint.fix.targets_from_findings

    def forgetful(*args, **kwargs):
        found = plain(*args, **kwargs)
        return {
            path: [dataclasses.replace(t, sink_line=0, sink_elsewhere="") for t in targets]
            for path, targets in found.items()
        }

    monkeypatch.setattr(zerolint.fix, "targets_from_findings", forgetful)
    (tmp_path / "h.py").write_text(HELPER)
    (tmp_path / "b.py").write_text(CALLER)  # its import names the sink: taken for it
    code, out, _ = run(tmp_path, "--fix", ".")
    assert "ZL910 not fixed: the fixed source still has findings; file left unchanged" in out
    assert (tmp_path / "b.py").read_text() == CALLER and code == 1


def test_the_import_goes_below_a_docstring_that_shares_its_line(tmp_path: Path) -> None:
    # With an import line after the docstring's, and with the only imports on its line.
    after = '"""Builders."""; import sys\n' + BUG.replace("import torch\n", "")
    alone = after.replace("; import sys\nfrom deep_gemm", "; from deep_gemm")
    for source in (after, alone):
        (tmp_path / "a.py").write_text(source)
        code, out, err = run(tmp_path, "--fix", "a.py")
        assert (code, err) == (0, "zerolint: fixed 1 error in a.py\n"), out
        fixed = (tmp_path / "a.py").read_text()
        assert fixed.startswith(source.split("\n", 1)[0] + "\n"), fixed
        assert ast.get_docstring(ast.parse(fixed)) == "Builders."  # still the module's


def test_a_sink_call_in_a_comprehension_over_lines_is_fixed(tmp_path: Path) -> None:
    """The path's step at the sink is the element's line, not the statement's first."""
    source = (
        "import torch\nfrom deep_gemm import get_paged_mqa_logits_metadata\n\n\n"
        "def build(seq_lens, num_sms, chunks):\n"
        "    out = [\n"
        "        get_paged_mqa_logits_metadata(\n"
        "            seq_lens[rows] // 4, 64, num_sms\n"
        "        )\n"
        "        for rows in chunks\n"
        "    ]\n"
        "    return out\n"
    )
    (tmp_path / "a.py").write_text(source)
    code, out, err = run(tmp_path, "--fix", "a.py")
    assert (code, err) == (0, "zerolint: fixed 1 error in a.py\n"), out
    assert "torch.clamp(seq_lens[rows] // 4, min=1), 64" in (tmp_path / "a.py").read_text()


@pytest.mark.skipif(shutil.which("git") is None, reason="git applies the patch")
def test_the_diff_names_a_file_as_the_file_system_does(tmp_path: Path) -> None:
    """A latin-1 file whose name latin-1 cannot spell: the name is the file system's
    bytes (UTF-8), the lines the file's."""
    name = "модуль.py"
    (tmp_path / name).write_bytes(LATIN1)
    apply_the_diff(tmp_path, name)
    assert b"torch.clamp(lens, min=1)" in (tmp_path / name).read_bytes()
    assert b"NOTE = 'caf\xe9'" in (tmp_path / name).read_bytes()
