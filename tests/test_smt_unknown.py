"""When Z3 gives up, or a path leaves the model, nobody hears "safe".

A solver that gives up has proved nothing. Each case here makes Z3 really give up on a real
query, by lowering the judge's work limit (``smt.RESOURCE_LIMIT``, Z3's ``rlimit``) to one
unit, and checks what each public entry point makes of that: the judge says ``unknown`` (and the
finding is still reported), the capture-size search raises instead of returning an empty
hazard list. A path through an operation the model cannot express (an unknown call) is
``unknown`` too, unless what follows it proves every row >= 1 whatever it returned.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import z3

from zerolint import decode_model, smt
from zerolint.capture import CaptureConfig, analyze
from zerolint.cli import main
from zerolint.model import Flow, Op, Step, Verdict
from zerolint.rules import rule_by_code

# ZL001's predicate and witness hints, as its rule file declares them: the judge holds none.
_RULE = rule_by_code("ZL001")
assert _RULE is not None
FAULT = _RULE.predicate
HINTS = _RULE.options["witness-hints"]


def judge_flow(f: Flow, **kw: Any) -> Verdict:
    return smt.judge_flow(f, FAULT, hints=HINTS, **kw)


DIV = Op("floordiv", "self.compress_ratio")
CLAMP1 = Op("clamp_min", 1)
HELPER = Op("opaque", "helper()")  # a call the analysis could not see into
UNCLAMPED = """\
from deep_gemm import get_paged_mqa_logits_metadata


def build(seq_lens, num_sms):
    return get_paged_mqa_logits_metadata(seq_lens // 4, 64, num_sms)
"""


def flow(*ops: Op) -> Flow:
    steps = [Step("indexer.py", 900, 8, "seq_lens = common.seq_lens[:n]", "source")]
    steps += [Step("indexer.py", 910 + i, 8, op.describe(), "flow", op) for i, op in enumerate(ops)]
    steps.append(Step("indexer.py", 950, 8, "get_paged_mqa_logits_metadata(seq_lens)", "sink"))
    return Flow(tuple(steps))


@pytest.fixture
def solver_gives_up(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every solver the judge makes meanwhile stops after one resource unit: ``check()``
    is unknown.

    The judge's memo is emptied on both sides so that no verdict crosses the boundary."""
    smt._judge_ops.cache_clear()
    monkeypatch.setattr(smt, "RESOURCE_LIMIT", 1)
    try:
        yield
    finally:
        smt._judge_ops.cache_clear()


def test_the_limit_really_makes_z3_give_up(solver_gives_up: None) -> None:
    solver = smt.Encoder(z3, smt.freeze_ratios(None)).solver()
    x = z3.Int("x")
    solver.add(x * x == 49, x > 0)
    assert solver.check() == z3.unknown


def _spent(solver: Any) -> int:
    stats = solver.statistics()
    keys = stats.keys()  # Statistics has no `in` of its own: its keys are a list
    return stats.get_key_value("rlimit count") if "rlimit count" in keys else 0


def _check_another(solver: Any, k: int) -> tuple[Any, int]:
    """One more check on ``solver``, of a question of its own (pushed, then popped), and
    the resource units it spent: Z3's count runs on across checks and solvers."""
    solver.push()
    y = z3.Int(f"y{k}")
    solver.add(y * y * y == 343, y > 0, y != k + 100)
    before = _spent(solver)
    answer = solver.check()
    spent = _spent(solver) - before
    solver.pop()
    return answer, spent


def test_the_limit_counts_from_each_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """The witness search asks one solver many times: each check gets the whole limit,
    so the later checks of a long search are not starved by the earlier ones."""
    probe = smt.Encoder(z3, smt.freeze_ratios(None)).solver()
    answer, one_check = _check_another(probe, 0)
    assert answer == z3.sat and one_check > 0
    monkeypatch.setattr(smt, "RESOURCE_LIMIT", one_check * 2)
    solver = smt.Encoder(z3, smt.freeze_ratios(None)).solver()
    checks = [_check_another(solver, k) for k in range(1, 7)]
    assert [answer for answer, _ in checks] == [z3.sat] * 6
    # Together they spent several times the limit: a limit shared by the solver's checks
    # would have stopped the later ones.
    assert sum(spent for _, spent in checks) > 2 * smt.RESOURCE_LIMIT


@pytest.mark.parametrize(
    "ops",
    [
        [DIV],  # really unsafe: the witness search gave up
        [DIV, CLAMP1, Op("add", -1), Op("floordiv", "block_size")],  # really unsafe too
    ],
    ids=["divided", "clamped then shifted down"],
)
def test_a_solver_that_gives_up_is_unknown_not_safe(solver_gives_up: None, ops: list[Op]) -> None:
    verdict = judge_flow(flow(*ops))
    assert verdict.status == "unknown"
    assert verdict.reason == "solver gave up (work limit of 1 units reached)"


def test_the_same_flows_are_decided_without_the_limit() -> None:
    """The cases above are not unknown by themselves: with Z3 unrestricted they are unsafe."""
    smt._judge_ops.cache_clear()
    assert judge_flow(flow(DIV)).status == "unsafe"


def test_a_given_up_finding_is_still_reported(
    solver_gives_up: None,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "bad.py").write_text(UNCLAMPED, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    code = main(["check", "--no-cache", "--color", "never", "bad.py"])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "bad.py:5:12: ZL001 " in out
    assert "All checks passed!" not in out


def test_capture_sizes_search_that_gives_up_raises(solver_gives_up: None) -> None:
    shape = decode_model.DecodeShape(next_n=1, native=True)
    with pytest.raises(smt.SolverGaveUp, match=r"solver gave up \(work limit of 1 units reached\)"):
        decode_model.faulting_sizes(
            shape,
            [DIV],
            [1, 2, 4, 8, 32, 64],
            seq_len=1,
            predicate=FAULT,
            ratios={"compress_ratio": (4,)},
        )


def test_capture_analysis_that_gives_up_raises_not_an_empty_hazard_list(
    solver_gives_up: None,
) -> None:
    with pytest.raises(smt.SolverGaveUp):
        analyze(CaptureConfig())


@pytest.mark.parametrize(
    ("ops", "status"),
    [
        ([HELPER], "unknown"),
        ([HELPER, DIV], "unknown"),
        ([HELPER, Op("clamp_min", 0)], "unknown"),  # 0 stays 0
        ([HELPER, CLAMP1, Op("add", -1)], "unknown"),  # 1 - 1 is 0
        ([HELPER, CLAMP1], "safe"),
        ([HELPER, DIV, CLAMP1, Op("mul", 2)], "safe"),
    ],
    ids=[
        "alone",
        "then divided",
        "then clamped to 0",
        "then clamped and -1",
        "then clamped",
        "clamped then doubled",
    ],
)
def test_after_an_unmodelled_call_only_a_clamp_that_holds_proves_safe(
    ops: list[Op], status: str
) -> None:
    assert judge_flow(flow(*ops)).status == status


def test_after_an_unmodelled_call_a_solver_that_gives_up_proves_nothing(
    solver_gives_up: None,
) -> None:
    assert judge_flow(flow(HELPER, CLAMP1)).status == "unknown"


# Z3 gives up on a question as a whole, and answers it once per assignment of its
# configured symbols (``smt._by_cases``): fixed, a division or shift by one is linear.
R, SHIFT, LO = "self.compress_ratio", "shift", "lo"
RATIOS = {"compress_ratio": tuple(range(2, 9)), "shift": (0, 1, 2, 3), "lo": (-2, -1, 0, 1, 2)}
# The first was drawn by tests/test_smt_properties.py's brute-force test, which failed on it
# before the split; the second's smallest length (4) needs the largest lo (2).
UNSAFE_WHOLE_GIVEN_UP = {
    "drawn": [
        Op("floordiv", R),
        Op("rshift", SHIFT),
        Op("floordiv", R),
        Op("floordiv", R),
        Op("add", LO),
        Op("rshift", SHIFT),
    ],
    "length 4": [
        Op("floordiv", R),
        Op("rshift", SHIFT),
        Op("add", LO),
        Op("rshift", SHIFT),
        Op("floordiv", R),
        Op("add", -2),
    ],
}
# Safe, and its proof costs Z3 about 314,000 units as a whole, under 1,500 per assignment.
SAFE_WHOLE_HARD = [
    Op("add", LO),
    Op("ceildiv", R),
    Op("rshift", SHIFT),
    Op("add", 1),
    Op("ceildiv", R),
]
SAFE_LIMIT = 20_000


def _whole_answer(ops: list[Op], ratios: dict[str, tuple[int, ...]]) -> Any:
    """Z3's answer to the whole question, with the judge's encoding, context of its own and
    work limit (Z3's work depends on the terms made before in its context)."""
    enc = smt.Encoder(smt.OwnContext(z3), smt.freeze_ratios(ratios))
    flow_encoding = smt._FlowEncoding(enc, tuple(ops), FAULT)
    solver = enc.solver()
    solver.add(flow_encoding.fault)
    return solver.check()


@pytest.mark.parametrize("name", sorted(UNSAFE_WHOLE_GIVEN_UP))
def test_a_question_given_up_as_a_whole_is_answered_by_cases(name: str) -> None:
    from tests.test_smt_properties import BATCHES, brute_force, check_against_brute_force

    ops = UNSAFE_WHOLE_GIVEN_UP[name]
    smt._judge_ops.cache_clear()
    assert _whole_answer(ops, RATIOS) == z3.unknown
    # unsafe, with the smallest batch and length brute force finds, and a witness that replays
    check_against_brute_force(ops, BATCHES)
    assert brute_force(ops, BATCHES) == ((32, 4) if name == "length 4" else (32, 1))


def test_a_safe_question_given_up_as_a_whole_is_proved_by_cases(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests.test_smt_properties import BATCHES, brute_force

    smt._judge_ops.cache_clear()
    monkeypatch.setattr(smt, "RESOURCE_LIMIT", SAFE_LIMIT)
    assert _whole_answer(SAFE_WHOLE_HARD, RATIOS) == z3.unknown
    assert brute_force(SAFE_WHOLE_HARD, BATCHES) is None
    assert judge_flow(flow(*SAFE_WHOLE_HARD), ratios=RATIOS).status == "safe"
    smt._judge_ops.cache_clear()


def test_cases_that_give_up_too_prove_nothing(solver_gives_up: None) -> None:
    verdict = judge_flow(flow(*SAFE_WHOLE_HARD), ratios=RATIOS)
    assert verdict.status == "unknown"
    assert verdict.reason == "solver gave up (work limit of 1 units reached)"


def test_more_assignments_than_the_limit_are_not_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    smt._judge_ops.cache_clear()
    monkeypatch.setattr(smt, "RESOURCE_LIMIT", SAFE_LIMIT)
    monkeypatch.setattr(smt, "CASES_LIMIT", 7 * 4 * 5 - 1)  # one fewer than this question has
    verdict = judge_flow(flow(*SAFE_WHOLE_HARD), ratios=RATIOS)
    assert verdict.status == "unknown"
    assert verdict.reason == f"solver gave up (work limit of {SAFE_LIMIT} units reached)"
    smt._judge_ops.cache_clear()


@pytest.mark.parametrize(
    ("ops", "ratios"),
    [
        ([Op("floordiv", "block_size")], RATIOS),  # a divisor without configured values
        ([Op("mul", "scale")], RATIOS),  # a factor without configured values
    ],
    ids=["unconfigured divisor", "unconfigured factor"],
)
def test_a_question_nonlinear_under_every_assignment_is_not_split(
    ops: list[Op], ratios: dict[str, tuple[int, ...]]
) -> None:
    enc = smt.Encoder(z3, smt.freeze_ratios(ratios))
    flow_encoding = smt._FlowEncoding(enc, tuple(SAFE_WHOLE_HARD + ops), FAULT)
    solver = enc.solver()
    solver.add(flow_encoding.fault)
    assert set(enc.domains) == {R, SHIFT, LO}
    assert smt._by_cases(enc, solver) is None
    # configured, the same symbol is split over like the others
    configured = smt.Encoder(z3, smt.freeze_ratios({**ratios, ops[0].arg: (2, 3)}))
    smt._FlowEncoding(configured, tuple(SAFE_WHOLE_HARD + ops), FAULT)
    assert smt._by_cases(configured, configured.solver()) is not None


def test_cases_stop_when_their_budget_is_spent(monkeypatch: pytest.MonkeyPatch) -> None:
    """The checks of a split share one budget of Z3's work: spent, the rest are not asked
    and prove nothing, so a question of hard cases ends as unknown, not after hours."""
    smt._judge_ops.cache_clear()
    monkeypatch.setattr(smt, "RESOURCE_LIMIT", SAFE_LIMIT)
    monkeypatch.setattr(smt, "CASES_BUDGET", 10_000)  # a few of its 140 assignments
    verdict = judge_flow(flow(*SAFE_WHOLE_HARD), ratios=RATIOS)
    assert verdict.status == "unknown"
    assert verdict.reason == f"solver gave up (work limit of {SAFE_LIMIT} units reached)"
    smt._judge_ops.cache_clear()
