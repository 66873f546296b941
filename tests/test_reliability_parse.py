"""No file can take the run down, and no finding is dropped without a word (issue 18.7, 18.8).

Programs CPython compiles but that nest deeper than LibCST can follow get one ZL905 line
each (LibCST's native parser used to crash the whole process on them, its Python side and
the analyser to end the run in ``RecursionError``), while the other files' findings stand;
programs nesting less deep are analysed. ``# noqa`` inside a string suppresses nothing,
brackets inside strings and comments are not nesting, a file declaring its encoding (PEP
263) is read in it, and a symlinked folder is checked.

Each case runs the real command in a child process, so a crash fails the test, not pytest.
"""

from __future__ import annotations

import ast
import platform
import re
import subprocess
import sys
from pathlib import Path

import pytest

ARGS = ["check", "--no-cache", "--color", "never"]
SINK_IMPORT = "from deep_gemm import get_paged_mqa_logits_metadata\n"
GOOD = (
    SINK_IMPORT
    + """

def build(seq_lens, num_sms):
    return get_paged_mqa_logits_metadata(seq_lens // 4, 64, num_sms)
"""
)
GOOD_FINDING = re.compile(r"^good\.py:5:12: ZL001 ", re.MULTILINE)


def zerolint(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zerolint", *ARGS, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def builder(expression: str, before: str = "") -> str:
    """A module whose sink receives ``expression`` (``before`` goes in the function first)."""
    return (
        SINK_IMPORT
        + "\n\ndef build(a, seq_lens, num_sms):\n"
        + before
        + f"    return get_paged_mqa_logits_metadata(seq_lens // 4, {expression}, num_sms)\n"
    )


def elifs(n: int) -> str:
    return "    if a:\n        pass\n" + "".join(
        f"    elif a == {i}:\n        pass\n" for i in range(n)
    )


def strings(n: int) -> str:
    return "(\n" + "".join(f"        'part{i}'\n" for i in range(n)) + "    )"


# What the issue found, at the sizes it found them, plus a few more of the same kind.
TOO_DEEP = {
    "and_10000": builder(" and ".join(["a"] * 10_000)),
    "or_10000": builder(" or ".join(["a"] * 10_000)),
    "and_500": builder(" and ".join(["a"] * 500)),
    "elif_1000": builder("64", before=elifs(1000)),
    "strings_1000": builder(strings(1000)),
    "fstrings_1000": builder("(" + " ".join(f"f'{{a}}{i}'" for i in range(1000)) + ")"),
    "sum_1000": builder(" + ".join(["a"] * 1000)),
    "attributes_1000": builder("a" + ".b" * 1000),
}
# The same shapes, less deep: analysed, the finding in them reported.
DEEP_ENOUGH = {
    "and_200": builder(" and ".join(["a"] * 200)),
    "elif_200": builder("64", before=elifs(200)),
    "strings_200": builder(strings(200)),
    "sum_200": builder(" + ".join(["a"] * 200)),
}


def test_too_deep_files_get_one_line_each_and_the_run_goes_on(tmp_path: Path) -> None:
    for name, text in TOO_DEEP.items():
        (tmp_path / f"{name}.py").write_text(text)
        compile(text, name, "exec")  # CPython takes every one of them
    (tmp_path / "good.py").write_text(GOOD)
    proc = zerolint(".", cwd=tmp_path)
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    for name in TOO_DEEP:
        lines = [line for line in proc.stdout.splitlines() if line.startswith(f"{name}.py")]
        assert lines == [f"{name}.py: ZL905 nests more than 250 levels deep; not analysed"]
    assert GOOD_FINDING.search(proc.stdout)


@pytest.mark.parametrize("name", sorted(DEEP_ENOUGH))
def test_less_deep_files_are_analysed(tmp_path: Path, name: str) -> None:
    (tmp_path / f"{name}.py").write_text(DEEP_ENOUGH[name])
    proc = zerolint(f"{name}.py", cwd=tmp_path)
    assert "ZL9" not in proc.stdout, proc.stdout
    assert re.search(rf"^{name}\.py:\d+:12: ZL001 ", proc.stdout, re.MULTILINE), proc.stdout
    assert proc.returncode == 1


# --- 18.8: findings dropped with no word -------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        '    return get_paged_mqa_logits_metadata(seq_lens // 4, "# noqa", num_sms)',
        "    return get_paged_mqa_logits_metadata(seq_lens // 4, '# noqa: ZL001', num_sms)",
        '    return get_paged_mqa_logits_metadata(seq_lens // 4, "# zerolint: ignore", num_sms)',
    ],
)
def test_noqa_inside_a_string_suppresses_nothing(tmp_path: Path, line: str) -> None:
    (tmp_path / "bug.py").write_text(SINK_IMPORT + "\n\ndef build(seq_lens, num_sms):\n" + line)
    proc = zerolint("bug.py", cwd=tmp_path)
    assert re.search(r"^bug\.py:5:12: ZL001 ", proc.stdout, re.MULTILINE), proc.stdout


def test_noqa_in_a_comment_still_suppresses(tmp_path: Path) -> None:
    text = GOOD.replace("num_sms)\n", 'num_sms)  # see "a (" # noqa: ZL001\n')
    (tmp_path / "good.py").write_text(text)
    assert zerolint("good.py", cwd=tmp_path).stdout == "All checks passed!\n"


@pytest.mark.parametrize(
    "where",
    [
        '    doc = "' + "(" * 201 + '"\n',
        "    # " + "(" * 201 + "\n",
        '    doc = """\n' + "(\n" * 201 + '    """\n',
    ],
    ids=["string", "comment", "docstring"],
)
def test_brackets_inside_strings_and_comments_are_not_nesting(tmp_path: Path, where: str) -> None:
    (tmp_path / "good.py").write_text(GOOD.replace("    return", where + "    return"))
    proc = zerolint("good.py", cwd=tmp_path)
    assert "ZL905" not in proc.stdout
    assert re.search(r"^good\.py:\d+:12: ZL001 ", proc.stdout, re.MULTILINE), proc.stdout


def test_a_file_in_its_declared_encoding_is_read_in_it(tmp_path: Path) -> None:
    text = "# -*- coding: latin-1 -*-\n" + GOOD.replace("num_sms)\n", "num_sms)  # d\xe9j\xe0 vu\n")
    (tmp_path / "good.py").write_bytes(text.encode("latin-1"))
    proc = zerolint("good.py", cwd=tmp_path)
    assert "ZL903" not in proc.stdout
    assert re.search(r"^good\.py:6:12: ZL001 ", proc.stdout, re.MULTILINE), proc.stdout
    fixed = zerolint("--fix", "good.py", cwd=tmp_path)
    assert fixed.returncode == 0, fixed.stdout
    after = (tmp_path / "good.py").read_bytes().decode("latin-1")
    assert "torch.clamp(seq_lens // 4, min=1)" in after and "d\xe9j\xe0 vu" in after


def test_a_wrongly_declared_encoding_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_bytes(
        b"# -*- coding: ascii -*-\n" + SINK_IMPORT.encode() + b"x = '\xe9'\n"
    )
    (tmp_path / "good.py").write_text(GOOD)
    proc = zerolint(".", cwd=tmp_path)
    (line,) = [line for line in proc.stdout.splitlines() if line.startswith("bad.py")]
    assert line.startswith("bad.py: ZL903 not valid ascii"), line
    assert GOOD_FINDING.search(proc.stdout)


def test_a_symlinked_folder_is_checked_once_and_a_loop_is_not_followed(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "good.py").write_text(GOOD)
    project = tmp_path / "project"
    project.mkdir()
    (project / "linked").symlink_to(real, target_is_directory=True)
    (real / "loop").symlink_to(real, target_is_directory=True)  # real/loop/loop/... forever
    proc = zerolint(".", cwd=project)
    shown = re.findall(r"^(\S+):5:12: ZL001 ", proc.stdout, re.MULTILINE)
    assert shown == ["linked/good.py"], proc.stdout
    assert proc.returncode == 1


# ------------------------------------------------------------------ LibCST without node checks


@pytest.mark.network
def test_the_unchecked_parse_builds_the_tree_libcst_builds() -> None:
    """``parse_cst`` skips LibCST's check of each node it builds: on real serving modules
    the tree is the same as ``libcst.parse_module``'s, and prints back the same source."""
    import libcst as cst

    from devtools.wheels import vllm_tree
    from zerolint.project import parse_cst

    backends = vllm_tree("0.33.0") / "vllm" / "v1" / "attention"
    for path in sorted(backends.rglob("*.py"))[:40]:
        text = path.read_text(encoding="utf-8")
        unchecked = parse_cst(text)
        assert unchecked.deep_equals(cst.parse_module(text)), path
        assert unchecked.code == text, path


def test_nodes_built_by_hand_are_still_checked_after_a_parse() -> None:
    """The check is off only while the parser builds: a node a fix builds by hand afterwards
    is checked as LibCST always does (an empty name is refused)."""
    import libcst as cst

    from zerolint.project import parse_cst

    parse_cst("x = 1\n")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("")
    with pytest.raises(cst.ParserSyntaxError):
        parse_cst("x = (\n")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("")


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
    reason="malloc_trim is glibc's",
)
def test_freed_memory_is_given_back_after_a_large_file(tmp_path: Path) -> None:
    """On glibc the call that gives LibCST's freed memory back is found (else the peak
    memory of a large tree grows by what its largest parse freed) and runs after a parse of
    a large file, which still gives the module."""
    from zerolint import project

    calls: list[int] = []
    project._looked_for_malloc_trim = False
    project.give_back_free_memory()
    assert callable(project._malloc_trim)
    trim = project._malloc_trim
    project._malloc_trim = lambda pad: calls.append(pad) or trim(pad)
    try:
        large = "x = 1\n" * (project.TRIM_AFTER // 6 + 1)
        info = project.parse_module("m", tmp_path / "m.py", "m.py", large)
        assert len(info.module.body) == large.count("\n") and calls == [0]
        project.parse_module("s", tmp_path / "s.py", "s.py", "x = 1\n")
        assert calls == [0]
    finally:
        project._malloc_trim = trim


def test_with_another_thread_running_the_parse_keeps_the_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The check is switched off for the whole process: where another thread might build
    nodes meanwhile (the language server builds fixes while it parses), parse_cst leaves it
    on. Seen from inside the parse: a node built by hand there is checked, or not."""
    import threading

    import libcst as cst

    from zerolint import project

    seen: list[bool] = []

    def parser_building_a_bad_node(text: str) -> cst.Module:
        try:
            cst.Name("")
            seen.append(False)
        except cst.CSTValidationError:
            seen.append(True)
        return cst.Module(body=[])

    monkeypatch.setattr(cst, "parse_module", parser_building_a_bad_node)
    project.parse_cst("x = 1\n")
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        project.parse_cst("x = 1\n")
    finally:
        release.set()
        other.join()
    assert seen == [False, True]


# --- the nesting measure's shortcut --------------------------------------------------------


def unpruned_depth(tree: ast.AST, text: str) -> int:
    """``nesting.deeper_than``'s measure with no shortcut: every node walked."""
    from zerolint import nesting

    lines = text.encode().splitlines(keepends=True)
    deepest = 0
    stack = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, ast.BoolOp):
            depth += len(node.values) - 2
        elif isinstance(node, (ast.Constant, ast.JoinedStr)) and hasattr(node, "end_lineno"):
            depth += nesting._string_parts(node, lines) - 1
        deepest = max(deepest, depth)
        children = ast.iter_child_nodes(node)
        if isinstance(node, ast.JoinedStr):
            children = (c for c in node.values if isinstance(c, ast.FormattedValue))
        stack += [(child, depth + 1) for child in children]
    return deepest


def elif_chain(n: int, last: str) -> str:
    return "if a:\n    pass\n" + "".join(f"elif b{i}:\n    pass\n" for i in range(n)) + last


@pytest.mark.parametrize(
    "text",
    [elif_chain(n, "elif c:\n    x\n") for n in range(240, 252)]
    + [elif_chain(n, "elif c:\n    return\n") for n in range(244, 250)]
    + [elif_chain(n, "elif c:\n    x = y\n") for n in range(244, 250)]
    + [
        "def f():\n"
        + "".join("    " * (i + 1) + "if a:\n" for i in range(n))
        + "    " * (n + 1)
        + "x\n"
        for n in (60, 90)
    ],
)
def test_the_shortcut_measures_what_walking_every_node_measures(text: str) -> None:
    """A statement or expression is skipped when its length in bytes (plus one for a
    statement, which an expression statement's value spans whole) cannot reach the limit:
    whether a file goes over the limit is what walking every node says."""
    from zerolint.nesting import MAX_DEPTH, deeper_than

    tree = ast.parse(text)
    assert (deeper_than(tree, text) is not None) == (unpruned_depth(tree, text) > MAX_DEPTH)
