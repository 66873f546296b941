"""The model objects survive a trip through the cache's JSON unchanged."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zerolint.cache import (
    diagnostic_from_dict,
    diagnostic_to_dict,
    finding_from_dict,
    finding_to_dict,
    report_from_dict,
    report_to_dict,
)
from zerolint.model import Diagnostic, Finding, Flow, Op, Report, Step, Verdict

text = st.text(max_size=20)
small = st.integers(min_value=0, max_value=10**6)
ops = st.builds(Op, kind=text, arg=st.none() | st.integers() | text)
steps = st.builds(
    Step,
    path=text,
    line=small,
    col=small,
    code=text,
    role=st.sampled_from(["source", "flow", "call", "return", "sanitizer", "sink"]),
    op=ops,
    note=text,
)
flows = st.builds(Flow, steps=st.tuples(steps) | st.lists(steps, max_size=4).map(tuple))
verdicts = st.builds(
    Verdict,
    status=st.sampled_from(["unsafe", "safe", "unknown"]),
    witness=st.dictionaries(text, st.integers(), max_size=4),
    reason=text,
    flow_index=st.none() | small,
)
findings = st.builds(
    Finding,
    code=text,
    path=text,
    line=small,
    col=small,
    message=text,
    sink=text,
    argument=text,
    flows=st.lists(flows, max_size=3),
    verdict=st.none() | verdicts,
    end_line=small,
    end_col=small,
)
diagnostics = st.builds(Diagnostic, code=text, path=text, message=text, line=small, col=small)
reports = st.builds(
    Report,
    findings=st.lists(findings, max_size=3),
    proved=st.lists(findings, max_size=2),
    diagnostics=st.lists(diagnostics, max_size=2),
    files_checked=small,
)


def through_json(data: dict[str, Any]) -> Any:
    return json.loads(json.dumps(data))


@given(findings)
def test_a_finding_round_trips(finding: Finding) -> None:
    assert finding_from_dict(through_json(finding_to_dict(finding))) == finding


@given(diagnostics)
def test_a_diagnostic_round_trips(diagnostic: Diagnostic) -> None:
    assert diagnostic_from_dict(through_json(diagnostic_to_dict(diagnostic))) == diagnostic


@given(reports)
def test_a_report_round_trips(report: Report) -> None:
    assert report_from_dict(through_json(report_to_dict(report))) == report


def test_an_int_operand_stays_an_int_and_a_symbol_a_str() -> None:
    step = Step(
        "b.py", 3, 4, "x //= self.compress_ratio", "flow", Op("floordiv", "self.compress_ratio")
    )
    finding = Finding(
        "ZL001",
        "b.py",
        9,
        8,
        "m",
        "get_paged_mqa_logits_metadata",
        "0",
        [Flow((step, Step("b.py", 9, 8, "f(x)", "sink", Op("pad_zero", 1))))],
        Verdict(
            "unsafe",
            {"B": 32, "seq_len": 1, "compress_ratio": 4},
            flow_index=0,
            outcome="every context length 0",
        ),
    )
    back = finding_from_dict(through_json(finding_to_dict(finding)))
    assert back.flows[0].steps[1].op.arg == 1
    assert back.flows[0].steps[0].op.arg == "self.compress_ratio"
    assert back.verdict is not None and back.verdict.witness_text() == (
        "B=32, seq_len=1, compress_ratio=4 -> every context length 0"
    )


@pytest.mark.parametrize(
    "broken",
    [
        {},
        {"code": "ZL001"},
        {
            "code": 1,
            "path": "a",
            "line": 1,
            "col": 0,
            "message": "",
            "sink": "",
            "argument": "0",
            "flows": [],
            "verdict": None,
            "end_line": 0,
            "end_col": 0,
        },
        {
            "code": "ZL001",
            "path": "a",
            "line": True,
            "col": 0,
            "message": "",
            "sink": "",
            "argument": "0",
            "flows": [],
            "verdict": None,
            "end_line": 0,
            "end_col": 0,
        },
        {
            "code": "ZL001",
            "path": "a",
            "line": 1,
            "col": 0,
            "message": "",
            "sink": "",
            "argument": "0",
            "flows": [{"steps": [{"path": "a"}]}],
            "verdict": None,
            "end_line": 0,
            "end_col": 0,
        },
        {
            "code": "ZL001",
            "path": "a",
            "line": 1,
            "col": 0,
            "message": "",
            "sink": "",
            "argument": "0",
            "flows": [],
            "end_line": 0,
            "end_col": 0,
            "verdict": {
                "status": "unsafe",
                "witness": {"B": "32"},
                "reason": "",
                "flow_index": None,
            },
        },
    ],
)
def test_data_that_is_not_a_finding_is_rejected(broken: dict[str, Any]) -> None:
    with pytest.raises((KeyError, TypeError)):
        finding_from_dict(broken)
