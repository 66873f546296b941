"""A limit of the analysis that is reached is reported, never a clean exit (issue 18, item 8).

Paths are followed through at most MAX_DEPTH nested calls. A chain of helpers within the
limit is reported as a finding; a deeper one gives ZL930 at the sink call, exit status 1,
and no "All checks passed!".
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from zerolint.cli import main
from zerolint.dataflow import MAX_DEPTH


def helper_chain(helpers: int) -> str:
    """``plan`` calls helper_{n-1}, which calls ... helper_0, which divides the lengths."""
    out = ["from deep_gemm import get_paged_mqa_logits_metadata", "", ""]
    out += ["def helper_0(seq_lens, ratio):", "    return seq_lens // ratio", "", ""]
    for i in range(1, helpers):
        out += [f"def helper_{i}(seq_lens, ratio):", f"    return helper_{i - 1}(seq_lens, ratio)"]
        out += ["", ""]
    out += [
        "def plan(seq_lens, ratio):",
        f"    lens = helper_{helpers - 1}(seq_lens, ratio)",
        "    return get_paged_mqa_logits_metadata(lens, 64, 132)",
    ]
    return "\n".join(out) + "\n"


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    monkeypatch.chdir(tmp_path)

    def check(helpers: int, *args: str) -> tuple[int, str]:
        Path("chain.py").write_text(helper_chain(helpers))
        status = main(["check", "--no-cache", "--color", "never", *args, "chain.py"])
        return status, capsys.readouterr().out

    return check


def test_a_chain_within_the_limit_is_a_finding(run) -> None:
    status, out = run(MAX_DEPTH)
    assert status == 1
    assert "chain.py:" in out and " ZL001 " in out
    assert "ZL930" not in out


@pytest.mark.parametrize("helpers", [MAX_DEPTH + 2, 3 * MAX_DEPTH])
def test_a_chain_past_the_limit_is_reported_not_passed(run, helpers: int) -> None:
    status, out = run(helpers)
    assert status == 1, out
    assert "All checks passed!" not in out
    last = helper_chain(helpers).count("\n")
    assert f"chain.py:{last}:12: ZL930 " in out, out
    assert f"more than {MAX_DEPTH} nested calls" in out


def test_the_limit_is_a_diagnostic_in_json(run) -> None:
    status, out = run(MAX_DEPTH + 2, "--format", "json")
    report = json.loads(out)
    assert status == 1
    assert [d["code"] for d in report["diagnostics"]] == ["ZL930"]


@pytest.mark.parametrize("cache", [False, True], ids=["no-cache", "from-the-cache"])
def test_a_file_with_a_limit_was_checked(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    cache: bool,
) -> None:
    """The limit is reached in a file that was read and analysed: it counts as checked, in
    a run served from the cache as well (where it once made the run "check" no file and
    exit 2, a usage error); the summary names the limit, not a file that could not be
    checked."""
    monkeypatch.chdir(tmp_path)
    Path("chain.py").write_text(helper_chain(MAX_DEPTH + 2))
    args = ["check", "--color", "never", *(() if cache else ("--no-cache",)), "chain.py"]
    runs = 2 if cache else 1
    for _ in range(runs):
        capsys.readouterr()
        status = main([*args, "--format", "json"])
        summary = json.loads(capsys.readouterr().out)["summary"]
        assert status == 1
        assert (summary["files_checked"], summary["files_not_checked"]) == (1, 0)
    assert main(args) == 1
    last = capsys.readouterr().out.splitlines()[-1]
    assert last == "No errors found. 1 analysis limit reached."


SELF_REFERENCES = {
    "method of itself": "ops = ops.child()",
    "call of itself": "ops = ops()",
    "attribute of itself": "cfg = cfg.sub",
    "chained calls": "ops = ops.child().grand()",
    "in a comprehension": "ops = [ops.a() for _ in range(2)]",
    "two names through each other": "a = b.x()\nb = a.y()",
}


@pytest.mark.parametrize("line", SELF_REFERENCES.values(), ids=SELF_REFERENCES.keys())
def test_a_module_level_name_defined_through_itself_ends(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    line: str,
) -> None:
    """Reading ``ops`` in ``ops = ops.child()`` while the module's summary is made asks for
    the values of ``ops``, whose only value reads ``ops``: that once recursed until Python
    stopped it, and the whole run ended in an internal error (exit 2) with no finding of any
    file. The values asked for again while being worked out are none; the file's other
    function is still checked."""
    monkeypatch.chdir(tmp_path)
    Path("mod.py").write_text(
        "from deep_gemm import get_paged_mqa_logits_metadata\n\n"
        f"{line}\n\n\n"
        "def build(lens):\n"
        "    return get_paged_mqa_logits_metadata(lens // 4, 64, 132)\n"
    )
    status = main(["check", "--no-cache", "--color", "never", "mod.py"])
    out = capsys.readouterr().out
    assert status == 1, out
    assert [ln.split(" ZL")[0] for ln in out.splitlines() if " ZL001 " in ln] == [
        f"mod.py:{line.count(chr(10)) + 7}:12:"
    ]
