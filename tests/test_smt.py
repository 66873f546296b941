"""The SMT judge on the paths the analyzer reports: examples that read as its specification.

Each example is an op chain (source to sink), the configured ratios, and the verdict with
its exact witness. The vLLM 0.27.1 paths come from docs/hazards/ZL001.md.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from zerolint import smt
from zerolint.model import Finding, Flow, Op, Step, Verdict
from zerolint.rules import rule_by_code

# ZL001's predicate and witness hints, as its rule file declares them: the judge holds none.
_RULE = rule_by_code("ZL001")
assert _RULE is not None
FAULT = _RULE.predicate
HINTS = _RULE.options["witness-hints"]


def judge_flow(f: Flow, **kw: Any) -> Verdict:
    return smt.judge_flow(f, FAULT, hints=HINTS, **kw)


def judge(f: Finding, **kw: Any) -> Verdict:
    return smt.judge(f, FAULT, hints=HINTS, **kw)


V4 = {"compress_ratio": (4,)}
DIV = Op("floordiv", "self.compress_ratio")
PAD = Op("pad_zero", "num_decodes")
CLAMP1 = Op("clamp_min", 1)
PROVED = "no batch of B % 32 == 0 rows has every length 0"


def flow(*ops: Op) -> Flow:
    steps = [Step("indexer.py", 900, 8, "seq_lens = common.seq_lens[:n]", "source")]
    steps += [Step("indexer.py", 910 + i, 8, op.describe(), "flow", op) for i, op in enumerate(ops)]
    steps.append(Step("indexer.py", 950, 8, "get_paged_mqa_logits_metadata(seq_lens)", "sink"))
    return Flow(tuple(steps))


# (name, ops, ratios, status, witness text or reason fragment)
EXAMPLES = [
    # vLLM 0.27.1, buffer view: seq_lens //= self.compress_ratio
    (
        "vllm buffer view",
        [DIV],
        V4,
        "unsafe",
        "B=32, seq_len=1, compress_ratio=4 -> every context length 0",
    ),
    # vLLM 0.27.1, expanded buffer: [:n] = seq_lens // ratio; [n:m] = 0
    (
        "vllm expanded buffer",
        [DIV, PAD, Op("identity")],
        V4,
        "unsafe",
        "B=32, seq_len=1, compress_ratio=4 -> every context length 0",
    ),
    (
        "unconfigured compress_ratio: the witness shows DeepSeek-V4's 4",
        [DIV],
        None,
        "unsafe",
        "B=32, seq_len=1, compress_ratio=4 -> every context length 0",
    ),
    (
        "unconfigured compress_ratio where 4 cannot fault: the smallest that does",
        [Op("add", 4), DIV],
        None,
        "unsafe",
        "B=32, seq_len=1, compress_ratio=6 -> every context length 0",
    ),
    (
        "another unconfigured divisor is >= 2",
        [Op("floordiv", "self.block_ratio")],
        None,
        "unsafe",
        "B=32, seq_len=1, block_ratio=2 -> every context length 0",
    ),
    (
        "the largest configured ratio is not needed",
        [DIV],
        {"compress_ratio": (4, 128)},
        "unsafe",
        "B=32, seq_len=1, compress_ratio=4 -> every context length 0",
    ),
    ("the seed's clamp", [DIV, PAD, CLAMP1], V4, "safe", PROVED),
    ("torch.clamp(x, min=1) alone", [Op("floordiv", 4), CLAMP1], None, "safe", PROVED),
    (
        "clamp(min=0) does not help",
        [Op("floordiv", 4), Op("clamp_min", 0)],
        None,
        "unsafe",
        "B=32, seq_len=1 -> every context length 0",
    ),
    ("ceil division (x + 3) // 4", [Op("add", 3), Op("floordiv", 4)], None, "safe", PROVED),
    (
        "ceil division with the ratio",
        [Op("add", "self.compress_ratio"), Op("add", -1), DIV],
        None,
        "safe",
        PROVED,
    ),
    ("cdiv", [Op("ceildiv", "self.compress_ratio")], V4, "safe", PROVED),
    (
        "a shift by 2",
        [Op("rshift", 2)],
        None,
        "unsafe",
        "B=32, seq_len=1 -> every context length 0",
    ),
    (
        "the smallest seq_len that subtracts to 0",
        [Op("add", -5)],
        None,
        "unsafe",
        "B=32, seq_len=5 -> every context length 0",
    ),
    ("max(x, 1) after the division", [DIV, Op("clamp_min", 1)], None, "safe", PROVED),
    ("zero rows set to 1 after the division", [DIV, Op("zero_to", 1)], None, "safe", PROVED),
    (
        "zero rows set to 1, then 1 subtracted: the rows that were 1 are 0",
        [DIV, Op("zero_to", 1), Op("add", -1)],
        None,
        "unsafe",
        "B=32, seq_len=1, compress_ratio=4 -> every context length 0",
    ),
    ("rows below 1 set to 8", [DIV, Op("below1_to", 8)], None, "safe", PROVED),
    (
        "rows below 1 set to 0",
        [DIV, Op("below1_to", 0)],
        None,
        "unsafe",
        "B=32, seq_len=1, compress_ratio=4 -> every context length 0",
    ),
    (
        "min(x, 0) zeroes every row",
        [Op("clamp_max", 0)],
        None,
        "unsafe",
        "B=32, seq_len=1 -> every context length 0",
    ),
    (
        # `buf[n:m] = 0` pads after real rows: a symbolic start leaves at least one of them.
        "a clamp before the padding: the real rows stay >= 1",
        [DIV, CLAMP1, PAD],
        V4,
        "safe",
        PROVED,
    ),
    ("zeros everywhere", [Op("fill_zero")], None, "unsafe", "B=32 -> every context length 0"),
    (
        "padding from row 40 on: B=32 is all real rows",
        [Op("floordiv", 4), Op("pad_zero", 40), CLAMP1],
        None,
        "safe",
        PROVED,
    ),
    ("padding from row 0 on", [Op("pad_zero", 0), CLAMP1], None, "safe", PROVED),
    (
        "a later division of padding stays 0",
        [Op("pad_zero", 8), Op("floordiv", 2)],
        None,
        "unsafe",
        "B=32, seq_len=1 -> every context length 0",
    ),
    ("real rows that cannot reach 0", [Op("mul", 2), Op("pad_zero", 8)], None, "safe", PROVED),
    ("undivided lengths are >= 1", [], None, "safe", PROVED),
    # Bounds by Python's max/min with a constant (model.bounded): the operand is the bound,
    # the witness shows the symbol inside it, within the bound.
    (
        "a divisor max(r, 1): r=1 divides by 1, r=2 gives 0",
        [Op("floordiv", "max(r,1)")],
        None,
        "unsafe",
        "B=32, seq_len=1, r=2 -> every context length 0",
    ),
    (
        "a divisor max(r, 8): the witness respects the bound",
        [Op("floordiv", "max(r,8)")],
        None,
        "unsafe",
        "B=32, seq_len=1, r=8 -> every context length 0",
    ),
    (
        "a divisor max(ratio, 8), ratio configured: (1 + 7) // 16 is 0",
        [Op("add", 7), Op("floordiv", "max(self.compress_ratio,8)")],
        {"compress_ratio": (4, 16)},
        "unsafe",
        "B=32, seq_len=1, compress_ratio=16 -> every context length 0",
    ),
    (
        "a divisor max(ratio, 8), ratio configured 4: (x + 7) // 8 is >= 1",
        [Op("add", 7), Op("floordiv", "max(self.compress_ratio,8)")],
        V4,
        "safe",
        PROVED,
    ),
    ("a divisor min(r, 1) is 1", [Op("floordiv", "min(r,1)")], None, "safe", PROVED),
    (
        "known rows below a divisor min(r, 4)",
        [Op("known_rows", "8"), Op("floordiv", "min(r,4)")],
        None,
        "safe",
        PROVED,
    ),
    (
        "a clamp to max(m, 1)",
        [Op("floordiv", 4), Op("clamp_min", "max(m,1)")],
        None,
        "safe",
        PROVED,
    ),
    (
        "a clamp to max(m, 0) can be a clamp to 0",
        [Op("floordiv", 4), Op("clamp_min", "max(m,0)")],
        None,
        "unsafe",
        "B=32, seq_len=1, m=0 -> every context length 0",
    ),
    (
        "a clamp to max(min(m, 8), 1)",
        [Op("floordiv", 4), Op("clamp_min", "max(min(m,8),1)")],
        None,
        "safe",
        PROVED,
    ),
    (
        "an unknown call",
        [DIV, Op("opaque", "my_kernel_prep(x)")],
        V4,
        "unknown",
        "outside the model: my_kernel_prep(x)",
    ),
    ("division by a literal 0", [Op("floordiv", 0)], None, "unknown", "outside the model"),
    (
        "an op kind the model does not know",
        [Op("bitwise_and", 3)],
        None,
        "unknown",
        "outside the model",
    ),
]


@pytest.mark.parametrize(
    ("ops", "ratios", "status", "expected"),
    [
        pytest.param(ops, ratios, status, text, id=name)
        for name, ops, ratios, status, text in EXAMPLES
    ],
)
def test_judge_flow(ops, ratios, status, expected):
    verdict = judge_flow(flow(*ops), ratios=ratios)
    assert verdict.status == status, verdict
    if status == "unsafe":
        assert verdict.witness_text() == expected
    elif status == "safe":
        assert (verdict.reason, verdict.witness) == (expected, {})
    else:
        assert expected in verdict.reason
        assert verdict.witness == {}


def test_judge_takes_the_worst_flow_and_names_it():
    finding = _finding([flow(DIV, CLAMP1), flow(Op("opaque", "f()")), flow(DIV, PAD)])
    verdict = judge(finding, ratios=V4)
    assert (verdict.status, verdict.flow_index) == ("unsafe", 2)
    assert verdict.witness == {"B": 32, "seq_len": 1, "compress_ratio": 4}


def test_judge_is_unknown_when_no_flow_is_unsafe_but_one_is_unproved():
    verdict = judge(_finding([flow(DIV, CLAMP1), flow(Op("opaque", "f()"))]), ratios=V4)
    assert (verdict.status, verdict.flow_index) == ("unknown", 1)


def test_judge_is_safe_only_when_every_flow_is_proved():
    verdict = judge(_finding([flow(DIV, CLAMP1), flow(Op("ceildiv", 4))]), ratios=V4)
    assert (verdict.status, verdict.flow_index) == ("safe", None)


def test_a_finding_without_flows_is_unknown():
    assert judge(_finding([])).status == "unknown"


def test_cached_verdicts_do_not_share_witness_dicts():
    first = judge_flow(flow(DIV), ratios=V4)
    first.witness["B"] = 0
    assert judge_flow(flow(DIV), ratios=V4).witness["B"] == 32


def test_configured_ratios_must_be_positive():
    with pytest.raises(ValueError, match="compress_ratio"):
        judge_flow(flow(DIV), ratios={"compress_ratio": (0, 4)})


def test_a_witness_that_does_not_replay_is_not_printed(monkeypatch):
    # Fault injection: break the plain-Python semantics of //, which the replay uses.
    # The solver still finds its model; the replay must refuse it.
    real = smt.apply_int

    def wrong_floordiv(op, value, env):
        return value if op.kind == "floordiv" else real(op, value, env)

    monkeypatch.setattr(smt, "apply_int", wrong_floordiv)
    smt._judge_ops.cache_clear()
    verdict = judge_flow(flow(Op("floordiv", 7)), ratios=None)
    smt._judge_ops.cache_clear()
    assert verdict.status == "unknown"
    assert "did not replay" in verdict.reason


def test_z3_is_imported_only_when_a_question_reaches_the_solver():
    code = (
        "import sys\n"
        "from zerolint import smt\n"
        "from zerolint.model import Flow, Op, Step\n"
        "from zerolint.hazards import EveryRowZero\n"
        "p = EveryRowZero(batch_multiple=32)\n"
        "f = Flow((Step('a.py', 1, 0, 'x', 'flow', Op('opaque', 'g()')),))\n"
        "assert smt.judge_flow(f, p).status == 'unknown'\n"
        "assert 'z3' not in sys.modules, 'opaque paths must not load z3'\n"
        "f = Flow((Step('a.py', 1, 0, 'x', 'flow', Op('floordiv', 4)),))\n"
        "assert smt.judge_flow(f, p).status == 'unsafe'\n"
        "assert 'z3' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def _finding(flows: list[Flow]) -> Finding:
    return Finding(
        code="ZL001",
        path="indexer.py",
        line=950,
        col=8,
        message="zero-able lengths reach get_paged_mqa_logits_metadata",
        sink="get_paged_mqa_logits_metadata",
        argument="seq_lens",
        flows=flows,
    )


def test_verdict_round_trip_through_the_model():
    verdict = judge(_finding([flow(DIV)]), ratios=V4)
    assert isinstance(verdict, Verdict)
    assert verdict.witness_text() == "B=32, seq_len=1, compress_ratio=4 -> every context length 0"


def test_z3_is_imported_on_a_thread_while_the_analysis_goes_on() -> None:
    """``import_z3_meanwhile`` (a check whose files name a sink) leaves z3 imported, by a
    thread of its own, in a process that had not imported it; and does nothing where it
    already is."""
    program = (
        "import sys, threading\n"
        "from zerolint import smt\n"
        "assert 'z3' not in sys.modules\n"
        "smt.import_z3_meanwhile()\n"
        "threads = [t for t in threading.enumerate() if t.name == 'zerolint-z3']\n"
        "assert len(threads) == 1, threads\n"
        "threads[0].join(60)\n"
        "assert 'z3' in sys.modules\n"
        "smt.import_z3_meanwhile()\n"
        "assert not [t for t in threading.enumerate() if t.name == 'zerolint-z3']\n"
        "print('ok')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], check=False, capture_output=True, text=True
    )
    assert done.stdout.strip() == "ok", done.stderr
