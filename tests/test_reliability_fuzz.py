"""Fuzzing: generated Python programs never crash zerolint, and --fix output stays valid.

Each program comes from Python's grammar (hypothesmith), with a sink call appended that
zerolint must report, so every program is parsed and analysed rather than skipped by the
pre-filter. For each: ``check`` ends with exit 0 or 1 and no internal error; ``--fix``
leaves a file that compiles and, unless it said it could not fix something (ZL910),
checks clean. The number of programs and the time are bounded so the test runs in CI
(``FUZZ_EXAMPLES`` raises the count for a longer local run).
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
import warnings
from pathlib import Path

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zerolint.cli import main

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "200"))
SINK_IMPORT = "from deep_gemm import get_paged_mqa_logits_metadata\n"
SINK_CALL = """

def _zerolint_fuzz_build(seq_lens, num_sms):
    return get_paged_mqa_logits_metadata(seq_lens // 4, 64, num_sms)
"""
ARGS = ["check", "--no-cache", "--color", "never"]


def zerolint(cwd: Path, *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    old = Path.cwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([*ARGS, *args])
    finally:
        os.chdir(old)
    return code, out.getvalue(), err.getvalue()


def program_with_a_sink(generated: str, inside: bool) -> str | None:
    """The program at module level before the sink's function, or (``inside``) as that
    function's body before the sink call, where it meets the lengths' dataflow."""
    if inside:
        body = "".join(f"    {line}" for line in generated.splitlines(keepends=True))
        source = (
            SINK_IMPORT
            + "\n\ndef _zerolint_fuzz_build(seq_lens, num_sms):\n"
            + body.rstrip("\n")
            + "\n    return get_paged_mqa_logits_metadata(seq_lens // 4, 64, num_sms)\n"
        )
    else:
        source = SINK_IMPORT + generated.rstrip("\n") + "\n" + SINK_CALL
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(source, "fuzz.py", "exec")
    except (SyntaxError, ValueError):  # e.g. `from __future__` no longer first
        return None
    return source


@pytest.mark.slow
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,  # the same programs on every run: a CI failure can be reproduced
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(st.one_of(hypothesmith.from_grammar(), hypothesmith.from_node()), st.booleans())
def test_generated_programs_neither_crash_nor_break_under_fix(generated: str, inside: bool) -> None:
    source = program_with_a_sink(generated, inside)
    if source is None:
        return
    with tempfile.TemporaryDirectory() as folder:
        cwd = Path(folder)
        (cwd / "fuzz.py").write_text(source, encoding="utf-8")
        code, out, err = zerolint(cwd, "fuzz.py")
        assert code in (0, 1) and "internal error" not in err and "Traceback" not in err, err
        code, out, err = zerolint(cwd, "--fix", "fuzz.py")
        assert "internal error" not in err and "Traceback" not in err, err
        fixed = (cwd / "fuzz.py").read_text(encoding="utf-8")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(fixed, "fuzz.py", "exec")
        if " ZL9" not in out:
            again = zerolint(cwd, "fuzz.py")
            assert " ZL001 " not in again[1], (fixed, again[1])
