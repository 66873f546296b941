"""A limit of the analysis that is reached is reported, never a clean exit (issue 18, item 8).

Paths are followed through at most MAX_DEPTH nested calls. A chain of helpers within the
limit is reported as a finding; a deeper one gives ZL930 at the sink call, exit status 1,
and no "All checks passed!".
"""

from __future__ import annotations

import json
import subprocess
import sys
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


def stack_in_a_field(methods: int) -> str:
    """A class that keeps a stack in a field, as pickle's unpickler does: each method puts
    back what it read from the stack, and one calls what it finds there."""
    out = ["from deep_gemm import get_paged_mqa_logits_metadata", "", "", "class Machine:"]
    for i in range(methods):
        out += [
            f"    def pair_{i}(self):",
            "        self.stack[-2:] = [(self.stack[-2], self.stack[-1])]",
            "",
        ]
    out += ["    def call(self):", "        func = self.stack[-1]", "        return func()", ""]
    return "\n".join(out) + "\n"


def stack_in_a_global(methods: int) -> str:
    """The same stack in a module-level name, rebound by functions that declare it global."""
    out = ["from deep_gemm import get_paged_mqa_logits_metadata", "", "STACK = []", ""]
    for i in range(methods):
        out += [
            f"def pair_{i}():",
            "    global STACK",
            "    STACK = [(STACK[-2], STACK[-1])]",
            "",
        ]
    out += ["def call():", "    func = STACK[-1]", "    return func()", ""]
    return "\n".join(out) + "\n"


def fields_reading_the_next(reads: int) -> str:
    """Nine fields, each a list of ``reads`` reads of the next, and a call of what the
    first holds: each field is reached by reads^depth paths."""
    out = ["from deep_gemm import get_paged_mqa_logits_metadata", "", "", "class Chain:"]
    for i in range(9):
        items = ", ".join(f"self.f{i + 1}[{j}]" for j in range(reads))
        out += [f"    def m{i}(self):", f"        self.f{i} = [{items}]", ""]
    out += ["    def call(self):", "        func = self.f0[0]", "        return func()", ""]
    return "\n".join(out) + "\n"


SINK_CALL = "    return get_paged_mqa_logits_metadata(seq_lens // 4, 64, 132)"


@pytest.mark.parametrize(
    "make",
    [stack_in_a_field, stack_in_a_global, fields_reading_the_next],
    ids=["field", "global", "chain"],
)
def test_a_value_reached_again_is_resolved_once(tmp_path: Path, make) -> None:
    """What ``func`` may be is what the stack holds, and every value the stack holds reads
    the stack again. Each read is a placeholder of its own, and each was once resolved
    again inside the resolution of the stack, down to MAX_DEPTH: (reads)^MAX_DEPTH
    resolutions, so that three such methods took 13 s and four more than two minutes
    (the standard library's pickle.py alone, with a sink call added, more than five).
    A chain of fields, each reading the next several times, was resolved once per path
    (six reads: 32 s). A placeholder one resolution has resolved is resolved again only
    from nearer its start: each case takes a fraction of a second, and the file's finding
    is still reported."""
    text = make(6 if make is not fields_reading_the_next else 7)
    text += "\n\ndef build(seq_lens):\n" + SINK_CALL + "\n"
    Path(tmp_path / "machine.py").write_text(text)
    done = subprocess.run(
        [sys.executable, "-m", "zerolint", "check", "--no-cache", "--color", "never", "machine.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    sink_line = text.splitlines().index(SINK_CALL) + 1
    assert [ln.split(" ZL")[0] for ln in done.stdout.splitlines() if " ZL001 " in ln] == [
        f"machine.py:{sink_line}:12:"
    ]
