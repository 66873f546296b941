"""The ``--fix`` codemod, specified by golden files.

Each ``tests/fixtures/fix/NAME.in.py`` is rewritten at every call of
``get_paged_mqa_logits_metadata`` and must equal ``NAME.out.py``; the result must compile,
and fixing it again must change nothing. A new case is two files, no test code
(``python -m devtools.update_golden fix`` writes a first ``NAME.out.py``: read it).
"""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from tests import golden
from zerolint.fix import FixTarget, apply_fixes, fix_source, targets_from_findings
from zerolint.model import Finding

FIXTURES = Path(__file__).parent / "fixtures" / "fix"
CASES = sorted(p.name.removesuffix(".in.py") for p in FIXTURES.glob("*.in.py"))
SINK = "get_paged_mqa_logits_metadata"


def sink_targets(source: str) -> list[FixTarget]:
    """Every call of the sink, as the analyzer would report it (independent of zerolint)."""
    wrapper = MetadataWrapper(cst.parse_module(source))
    positions = wrapper.resolve(PositionProvider)
    targets = []
    for node, where in positions.items():
        if not isinstance(node, cst.Call):
            continue
        func = node.func
        name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
        if name != SINK:
            continue
        by_keyword = any(
            a.keyword is not None and a.keyword.value == "context_lens" for a in node.args
        )
        targets.append(
            FixTarget(
                where.start.line,
                where.start.column,
                "context_lens" if by_keyword else 0,
                where.end.line,
                where.end.column,
            )
        )
    return targets


def test_there_are_enough_golden_cases() -> None:
    assert len(CASES) >= 10
    for name in CASES:
        assert (FIXTURES / f"{name}.out.py").is_file(), f"{name}.in.py has no {name}.out.py"


def fixed(name: str) -> str:
    """``NAME.in.py`` with every sink call fixed."""
    source = (FIXTURES / f"{name}.in.py").read_text(encoding="utf-8")
    targets = sink_targets(source)
    assert targets, f"{name}.in.py has no sink call"
    return fix_source(source, targets)


@golden.suite("fix")
def goldens() -> list[golden.Golden]:
    return [golden.Golden(FIXTURES / f"{n}.out.py", lambda n=n: fixed(n)) for n in CASES]


@pytest.mark.parametrize("name", CASES)
def test_golden(name: str) -> None:
    result = fixed(name)
    golden.assert_matches(FIXTURES / f"{name}.out.py", result)
    compile(result, f"{name}.out.py", "exec")
    assert fix_source(result, sink_targets(result)) == result


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("already_clamped", "already clamped"),
        ("torch_shadowed", "`torch` names something else at the call"),
    ],
)
def test_unchanged_cases_say_why(name: str, reason: str) -> None:
    source = (FIXTURES / f"{name}.in.py").read_text()
    outcome = apply_fixes(source, sink_targets(source))
    assert not outcome.changed
    assert outcome.applied == ()
    assert {why for _, why in outcome.skipped} == {reason}


def test_a_target_that_matches_no_call_is_skipped() -> None:
    source = "import torch\nf(x)\n"
    outcome = apply_fixes(source, [FixTarget(2, 1, 0)])
    assert outcome.fixed == source
    # The column as findings show it: 1-based (the target's is 0-based).
    assert outcome.skipped == ((FixTarget(2, 1, 0), "no call starts at 2:2"),)


@pytest.mark.parametrize(
    ("source", "argument", "reason"),
    [
        (
            "import torch\nsink(block_kv=64)\n",
            "context_lens",
            "the call has no `context_lens=` argument",
        ),
        ("import torch\nsink(*lens)\n", 0, "the call has no plain positional argument 0"),
        ("import torch\nsink()\n", 0, "the call has no plain positional argument 0"),
    ],
)
def test_a_missing_argument_is_skipped(source: str, argument: int | str, reason: str) -> None:
    outcome = apply_fixes(source, [FixTarget(2, 0, argument)])
    assert outcome.fixed == source
    assert [why for _, why in outcome.skipped] == [reason]


def test_calls_starting_at_the_same_place_are_told_apart_by_their_end() -> None:
    # make_sink()(lens): the outer call and `make_sink()` both start at column 0.
    source = "import torch\nmake_sink(lens)(lens)\n"
    inner = FixTarget(2, 0, 0, end_line=2, end_col=15)
    outer = FixTarget(2, 0, 0, end_line=2, end_col=21)
    assert (
        fix_source(source, [inner]) == "import torch\nmake_sink(torch.clamp(lens, min=1))(lens)\n"
    )
    assert (
        fix_source(source, [outer]) == "import torch\nmake_sink(lens)(torch.clamp(lens, min=1))\n"
    )
    # Without an end, the outermost call is meant (the sink is what is called last).
    assert fix_source(source, [FixTarget(2, 0, 0)]) == fix_source(source, [outer])


def test_two_targets_for_one_argument_clamp_it_once() -> None:
    """Two findings on one argument (two rules on one sink, or a file named twice): the
    one clamp fixes both, so both are applied; a second rule whose fix differs is not."""
    source = "import torch\nsink(lens)\n"
    by_name = FixTarget(2, 0, "context_lens", position=0)
    fixed = apply_fixes(source, [FixTarget(2, 0, 0), by_name])
    assert fixed.fixed == "import torch\nsink(torch.clamp(lens, min=1))\n"
    assert fixed.applied == (FixTarget(2, 0, 0), by_name) and fixed.skipped == ()
    assert fixed.fixed_calls() == ((2, 0),)
    other = FixTarget(2, 0, 0, template="torch.clamp({arg}, min=2)")
    fixed = apply_fixes(source, [FixTarget(2, 0, 0), other])
    assert fixed.applied == (FixTarget(2, 0, 0),)
    assert fixed.skipped == ((other, "another rule's fix already wraps it"),)


def test_targets_come_from_findings_grouped_by_file() -> None:
    def finding(path: str, line: int, argument: str) -> Finding:
        return Finding("ZL001", path, line, 5, "msg", SINK, argument, [], end_line=line, end_col=41)

    grouped = targets_from_findings(
        [finding("a.py", 3, "0"), finding("b.py", 7, "context_lens"), finding("a.py", 9, "0")]
    )
    # Findings count columns from 1 (as users read them), LibCST from 0.
    assert grouped == {
        "a.py": [FixTarget(3, 4, 0, 3, 40, sink=SINK), FixTarget(9, 4, 0, 9, 40, sink=SINK)],
        "b.py": [FixTarget(7, 4, "context_lens", 7, 40, position=0, sink=SINK)],
    }


def test_a_parameter_named_by_a_finding_is_found_where_the_call_puts_it() -> None:
    # The analyzer names the parameter (`context_lens`); vLLM passes it positionally.
    source = "import torch\nget_paged_mqa_logits_metadata(lens, 64, 132)\n"
    finding = Finding(
        "ZL001", "a.py", 2, 1, "msg", SINK, "context_lens", [], end_line=2, end_col=46
    )
    (target,) = targets_from_findings([finding])["a.py"]
    assert target.position == 0
    assert fix_source(source, [target]) == (
        "import torch\nget_paged_mqa_logits_metadata(torch.clamp(lens, min=1), 64, 132)\n"
    )


def test_a_finding_fixes_the_call_it_points_at() -> None:
    source = "import torch\nx = make_sink(lens)(lens)\n"
    # What a user reads: 2:5 is the outer call, ending one past column 25.
    outer = Finding("ZL001", "a.py", 2, 5, "msg", SINK, "0", [], end_line=2, end_col=26)
    inner = Finding("ZL001", "a.py", 2, 5, "msg", "make_sink", "0", [], end_line=2, end_col=20)
    assert fix_source(source, targets_from_findings([outer])["a.py"]) == (
        "import torch\nx = make_sink(lens)(torch.clamp(lens, min=1))\n"
    )
    assert fix_source(source, targets_from_findings([inner])["a.py"]) == (
        "import torch\nx = make_sink(torch.clamp(lens, min=1))(lens)\n"
    )
