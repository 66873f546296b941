"""``--fix`` and ``--diff`` where a review found them wrong: what could not be checked
hidden by ``--diff``, a patch broken by a form feed, the re-check run with another
folder's configuration or counting findings the run did not report, a wrapper's argument
taken for the sink's, stdin's diff followed by the report, a file named twice, and a
last line ended by a lone carriage return."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.test_reliability_fix import ARGS, BUG, FIXED, run

ROOT = Path(__file__).resolve().parent.parent
WRAPPED = """\
import torch
from deep_gemm import get_paged_mqa_logits_metadata


def my_meta(num_sms, lens):
    return get_paged_mqa_logits_metadata(lens, 64, num_sms)


def build(seq_lens, num_sms):
    lens = seq_lens // 4
    return my_meta(num_sms, lens)
"""


def run_stdin(cwd: Path, text: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zerolint", *ARGS, *args],
        cwd=cwd,
        input=text,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def test_diff_names_what_it_could_not_check_and_fails(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text(
        "from deep_gemm import get_paged_mqa_logits_metadata\ndef f(:\n"
    )
    (tmp_path / "bug.py").write_text(BUG)
    code, out, err = run(tmp_path, "--diff", "bad.py", "bug.py")
    assert out.startswith("--- bug.py\n+++ bug.py\n")  # stdout holds the diff alone
    assert "bad.py:2:7: ZL901 syntax error" in err
    assert code == 1
    code, out, err = run(tmp_path, "--diff", "bad.py", "nope.py")
    assert out == ""
    assert "bad.py:2:7: ZL901 syntax error" in err
    assert "zerolint: error: path not found: nope.py" in err
    assert code == 2


def test_a_diff_of_a_file_with_a_form_feed_applies(tmp_path: Path) -> None:
    """``str.splitlines`` also breaks at a form feed; ``patch`` and ``git apply`` do not."""
    source = BUG.replace(
        "    lens = seq_lens // 4\n", "    lens = seq_lens // 4  # \f\v\x1c\u2028\n"
    )
    (tmp_path / "a.py").write_text(source, newline="")
    code, diff, _ = run(tmp_path, "--diff", "a.py")
    assert code == 1
    (tmp_path / "fix.diff").write_text(diff, newline="")
    applied = subprocess.run(
        ["git", "apply", "-p0", "fix.diff"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert applied.returncode == 0, applied.stderr
    assert (tmp_path / "a.py").read_bytes().decode() == source.replace(
        "metadata(lens,", "metadata(torch.clamp(lens, min=1),"
    )


def test_the_fix_is_made_with_the_files_own_configuration(tmp_path: Path) -> None:
    """A folder's configuration adds a sink (with ZL001's fix) and a sanitizer: its files
    are fixed from the project's root as from the folder, with that sink's fix, and the
    re-check of the fixed text knows the sanitizer."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "zerolint.toml").write_text(
        'extra-sinks = [{ function = "mylib.plan", position = 0, rule = "ACME1", '
        'based-on = "ZL001" }]\nextra-sanitizers = ["mylib.ensure_positive"]\n'
    )
    source = (
        "import torch\nfrom mylib import ensure_positive, plan\n\n\n"
        "def build(seq_lens):\n    lens = seq_lens // 4\n"
        "    plan(ensure_positive(lens))\n    return plan(lens)\n"
    )
    (tmp_path / "sub" / "m.py").write_text(source)
    code, out, err = run(tmp_path, "--fix", ".")
    assert "ZL910" not in out
    assert err == "zerolint: fixed 1 error in sub/m.py\n"
    assert code == 0
    assert (tmp_path / "sub" / "m.py").read_text() == source.replace(
        "return plan(lens)", "return plan(torch.clamp(lens, min=1))"
    )


def test_findings_the_run_does_not_report_do_not_refuse_the_fix(tmp_path: Path) -> None:
    """Another rule's finding that per-file-ignores hides, or one not touching
    ``--touching``'s file, stays after the fix: the fix is still written."""
    (tmp_path / "zerolint.toml").write_text(
        'extra-sinks = [{ function = "mylib.plan", position = 0, rule = "ACME1", '
        'based-on = "ZL001" }]\nper-file-ignores = { "p.py" = ["ACME1"] }\n'
    )
    (tmp_path / "p.py").write_text(
        BUG.replace("import torch\n", "import torch\nfrom mylib import plan\n").replace(
            "    return get_paged", "    plan(lens)\n    return get_paged"
        )
    )
    code, out, err = run(tmp_path, "--fix", "p.py")
    assert (code, err) == (0, "zerolint: fixed 1 error in p.py\n"), out
    assert "    plan(lens)\n" in (tmp_path / "p.py").read_text()

    touched = tmp_path / "touched"
    touched.mkdir()
    (touched / "h1.py").write_text("def lens_of(x):\n    return x // 4\n")
    (touched / "sink.py").write_text(
        BUG.replace("import torch\n", "import torch\nfrom h1 import lens_of\n")
        + "\n\ndef one(seq_lens, num_sms):\n"
        "    return get_paged_mqa_logits_metadata(lens_of(seq_lens), 64, num_sms)\n"
    )
    code, out, err = run(touched, "--fix", "--touching", "h1.py")
    assert (code, err) == (0, "zerolint: fixed 1 error in sink.py\n"), out
    text = (touched / "sink.py").read_text()
    assert "metadata(torch.clamp(lens_of(seq_lens), min=1)," in text
    assert "metadata(lens, 64" in text  # the finding not touching h1.py is left


def test_a_call_of_a_wrapper_is_not_fixed_as_if_it_were_the_sink(tmp_path: Path) -> None:
    """The wrapper's arguments are in its own order: clamping the sink's first argument
    there would clamp ``num_sms``. It is not fixed, and not said to be fixable."""
    source = WRAPPED
    (tmp_path / "w.py").write_text(source)
    findings = json.loads(run(tmp_path, "--format", "json", "w.py")[1])["findings"]
    assert [(f["line"], f["fixable"]) for f in findings] == [(11, False)]
    code, out, _ = run(tmp_path, "--fix", "w.py")
    assert "w.py:11:12: ZL910 not fixed: this call is `my_meta`, not the sink" in out
    assert (tmp_path / "w.py").read_text() == source
    assert code == 1


def test_a_diff_of_stdin_is_the_diff_alone_and_says_what_it_cannot_fix(tmp_path: Path) -> None:
    proc = run_stdin(tmp_path, BUG, "--diff", "--format", "json", "-", "--stdin-filename", "x.py")
    assert proc.stdout.startswith("--- x.py\n+++ x.py\n") and "{" not in proc.stdout
    assert proc.returncode == 1
    shadowed = BUG.replace(
        "    lens = seq_lens // 4\n", "    torch = 1\n    lens = seq_lens // 4\n"
    )
    proc = run_stdin(tmp_path, shadowed, "--diff", "-", "--stdin-filename", "x.py")
    assert proc.stdout == ""
    assert "x.py:8:12: ZL910 not fixed: " in proc.stderr
    assert proc.returncode == 1


def test_a_file_named_twice_is_fixed_once(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(BUG)
    (tmp_path / "b.py").symlink_to("a.py")
    code, out, err = run(tmp_path, "--fix", ".")
    assert "ZL910" not in out
    assert err == "zerolint: fixed 1 error in a.py\n"
    assert "Found 1 error (1 fixed, 0 remaining)." in out
    assert code == 0
    assert (tmp_path / "a.py").read_text() == FIXED and (tmp_path / "b.py").is_symlink()


def test_a_symlink_and_its_target_are_reported_as_ruff_does_and_fixed_once(
    tmp_path: Path,
) -> None:
    """Both names are checked and reported, as ``ruff check`` reports a link and its
    target; ``--fix`` finds one file: one fix, written once to the target (the link stays
    a link), reported once under the target's name, as Ruff counts a link's fixes once."""
    (tmp_path / "target.py").write_text(BUG)
    (tmp_path / "link.py").symlink_to("target.py")  # sorts first
    code, out, err = run(tmp_path, ".")
    assert "link.py:7:12: ZL001 " in out and "target.py:7:12: ZL001 " in out
    assert "Found 2 errors." in out and code == 1
    code, out, err = run(tmp_path, "--diff", ".")
    assert out.startswith("--- target.py\n+++ target.py\n") and out.count("+++ ") == 1
    code, out, err = run(tmp_path, "--fix", ".")
    assert (code, err) == (0, "zerolint: fixed 1 error in target.py\n"), out
    assert "Found 1 error (1 fixed, 0 remaining)." in out
    assert (tmp_path / "target.py").read_text() == FIXED
    assert (tmp_path / "link.py").is_symlink() and os.readlink(tmp_path / "link.py") == "target.py"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.py", "target.py"]  # no temp left


def test_a_path_through_a_linked_folder_and_up_is_taken_as_written(tmp_path: Path) -> None:
    """`lnk/../a.py`, where `lnk` links to a folder elsewhere, is `a.py` as Ruff takes it:
    the file read is the file reported and fixed. The system's `lnk/..` is the folder
    above the link's target, whose `a.py` (the same text) was read while the project's
    `a.py` was reported and fixed."""
    elsewhere, project = tmp_path / "elsewhere", tmp_path / "project"
    (elsewhere / "dir").mkdir(parents=True)
    project.mkdir()
    (elsewhere / "a.py").write_text(BUG)
    (project / "lnk").symlink_to(elsewhere / "dir")
    code, out, err = run(project, "lnk/../a.py")  # the project has no a.py
    assert (code, err) == (2, "zerolint: error: path not found: a.py\n"), (out, err)
    (project / "a.py").write_text(BUG.replace("lens = seq_lens // 4", "lens = seq_lens"))
    code, out, err = run(project, "a.py", "lnk/../a.py")
    assert (code, out.splitlines()[-1]) == (0, "All checks passed!"), (out, err)
    (project / "a.py").write_text(BUG)
    code, out, err = run(project, "--fix", "lnk/../a.py")
    assert (code, err) == (0, "zerolint: fixed 1 error in a.py\n"), (out, err)
    assert "Found 1 error (1 fixed, 0 remaining)." in out
    assert (project / "a.py").read_text() == FIXED
    assert (elsewhere / "a.py").read_text() == BUG  # not named: never read, never written


def test_a_last_line_ended_by_a_lone_carriage_return_is_not_lost(tmp_path: Path) -> None:
    """LibCST drops it when it writes the tree back: the fix is made in the file's own
    text, and the line it edits (the last) keeps its carriage return."""
    source = BUG.replace("\n", "\r")
    (tmp_path / "cr.py").write_text(source, newline="")
    code, out, err = run(tmp_path, "--fix", "cr.py")
    assert err == "zerolint: fixed 1 error in cr.py\n", out
    fixed = (tmp_path / "cr.py").read_bytes().decode()
    assert fixed == source.replace("metadata(lens,", "metadata(torch.clamp(lens, min=1),")
    assert fixed.endswith("num_sms)\r") and code == 0


def test_diff_names_the_findings_it_has_no_fix_for_and_fails(tmp_path: Path) -> None:
    """ZL004 (on by default) has no fix: ``--fix`` leaves its finding in the report, and
    ``--diff``, whose stdout is the diff alone, names it on stderr; both exit 1."""
    fixture = ROOT / "tests" / "fixtures" / "ZL004" / "src_zeros_keyword.py"
    (tmp_path / "z.py").write_text(fixture.read_text())
    code, out, err = run(tmp_path, "z.py")
    assert code == 1 and " ZL004 " in out
    code, out, err = run(tmp_path, "--diff", "z.py")
    assert out == ""
    assert ": ZL910 not fixed: ZL004 has no fix" in err
    assert code == 1


DECORATED = """\
import torch
from deep_gemm import get_paged_mqa_logits_metadata


def outer(seq_lens, ratio):
    @some_decorator(get_paged_mqa_logits_metadata(seq_lens // ratio, 64, 132))
    def inner():
        pass

    return inner
"""


def test_a_sink_call_in_a_decorator_is_fixed_and_a_wrappers_is_not(tmp_path: Path) -> None:
    """The call is the sink's own, evaluated where the def runs: its argument is clamped.
    It was refused as a wrapper's call ("reaches the sink inside it"), since the def's
    lines were taken from its ``def``, below its decorators, where the sink step is."""
    (tmp_path / "dec.py").write_text(DECORATED)
    code, out, err = run(tmp_path, "--fix", "dec.py")
    assert "ZL910" not in out
    assert (code, err) == (0, "zerolint: fixed 1 error in dec.py\n"), out
    assert (tmp_path / "dec.py").read_text() == DECORATED.replace(
        "metadata(seq_lens // ratio,", "metadata(torch.clamp(seq_lens // ratio, min=1),"
    )
    wrapped = WRAPPED.replace(
        "    lens = seq_lens // 4\n    return my_meta(num_sms, lens)\n",
        "    @some_decorator(my_meta(num_sms, seq_lens // 4))\n"
        "    def inner():\n        pass\n\n    return inner\n",
    )
    (tmp_path / "wrapped.py").write_text(wrapped)
    code, out, err = run(tmp_path, "--fix", "wrapped.py")
    assert "wrapped.py:10:21: ZL910 not fixed: this call is `my_meta`, not the sink" in out
    assert (tmp_path / "wrapped.py").read_text() == wrapped and code == 1
