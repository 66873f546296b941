"""Every shipped rule's declared predicate is what the zero-length probe measured.

docs/probe-report.json holds, per probed kernel, the predicate the probe inferred from its
outcomes (``kernels[].predicates.plain``). A rule's ``[predicate]`` must be one clause of a
measured fault of the kernel it names, and every build its ``fixed-in`` lists must have
been measured tolerating every case; a rule whose predicate no measurement backs fails.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from zerolint.hazards import AnyRowZero, EveryRowZero, NoRows, Predicate
from zerolint.rules import load_rules

REPORT = json.loads((Path(__file__).parent.parent / "docs/probe-report.json").read_text())
KERNELS = {k["name"]: k for k in REPORT["kernels"]}
# The probe's kernel entries for each DeepGEMM build of the scheduler (the rule's sink).
SCHEDULER_BUILDS = {
    "DeepGEMM 2.5.0": "deep_gemm_2_5_0_metadata",
    "DeepGEMM 2.6.1": "deep_gemm_2_6_1_scheduler",
    "DeepGEMM 2.8.1": "deep_gemm_2_8_1_scheduler",
}


def clause(predicate: Predicate) -> str:
    """The probe's wording of the fault a predicate states."""
    if isinstance(predicate, EveryRowZero):
        return f"every row 0 and B % {predicate.batch_multiple} == 0"
    if isinstance(predicate, NoRows):
        return "B == 0"
    if isinstance(predicate, AnyRowZero):
        return "any row 0"
    raise AssertionError(f"no probe wording for {predicate.KIND}")


def clauses(fault: str) -> set[str]:
    return {c.strip().strip("()") for c in re.split(r"\bor\b(?![^(]*\))", fault)}


SCHEDULER_RULES = [
    r for r in load_rules() if r.sinks[0].function == "get_paged_mqa_logits_metadata"
]


@pytest.mark.parametrize("rule", SCHEDULER_RULES, ids=lambda r: r.code)
def test_the_declared_predicate_is_a_measured_fault(rule) -> None:
    measured = [
        name
        for build, name in SCHEDULER_BUILDS.items()
        if clause(rule.predicate) in clauses(KERNELS[name]["predicates"]["plain"].get("fault", ""))
    ]
    assert measured, f"{rule.code}: no probed build faults on {clause(rule.predicate)}"
    # Under memcheck too: the same predicate, not a different failure.
    for name in measured:
        memcheck = KERNELS[name]["predicates"]["memcheck"].get("fault", "")
        assert clause(rule.predicate) in clauses(memcheck)


@pytest.mark.parametrize("rule", SCHEDULER_RULES, ids=lambda r: r.code)
def test_fixed_in_builds_were_measured_tolerating_every_case(rule) -> None:
    for build in rule.fixed_in:
        name = SCHEDULER_BUILDS.get(build)
        if name is None:
            continue  # a build outside the probe (documented in docs/hazards/)
        assert KERNELS[name]["predicates"]["plain"] == {"all": "ok"}, build


def test_the_rules_cover_both_measured_faults_of_the_2_6_1_header() -> None:
    fault = KERNELS["deep_gemm_2_6_1_scheduler"]["predicates"]["plain"]["fault"]
    assert clauses(fault) == {clause(r.predicate) for r in SCHEDULER_RULES}


# Sinks that name their measurements (`measured = { build = probe kernel }`): the attention
# and logits kernels. Their bad outcome need not be a fault (a launch refused, NaN rows).
MEASURED_SINKS = [(rule, spec) for rule in load_rules() for spec in rule.sinks if spec.measured]


def bad_outcomes(predicates: dict[str, str]) -> set[str]:
    """Every clause of every outcome other than ok the probe explained by a predicate."""
    found: set[str] = set()
    for outcome, fault in predicates.items():
        if outcome != "all" and not fault.startswith("unexplained"):
            found |= clauses(fault)
    return found


@pytest.mark.parametrize(
    ("rule", "spec"), MEASURED_SINKS, ids=lambda x: getattr(x, "code", getattr(x, "function", ""))
)
def test_a_sinks_declared_predicate_is_what_its_builds_measured(rule, spec) -> None:
    wanted = clause(rule.predicate_for(spec))
    for build, name in spec.measured:
        assert name in KERNELS, f"{rule.code}: {build} names {name}, not in the probe report"
        assert "guarded" not in name, f"{rule.code}: {name} is the guarded kernel, not the sink"
        for mode in ("plain", "memcheck"):
            measured = bad_outcomes(KERNELS[name]["predicates"][mode])
            assert wanted in measured, f"{rule.code} {spec.function} {build} {mode}: {measured}"


def test_every_unguarded_attention_and_logits_kernel_of_the_probe_has_a_rule() -> None:
    """The probe's measured hazards are each some rule's (the schedulers are checked above)."""
    covered = {name for _, spec in MEASURED_SINKS for _, name in spec.measured}
    probed = {
        k["name"]
        for k in REPORT["kernels"]
        if "guarded" not in k["name"]
        and k["predicates"]["plain"] != {"all": "ok"}
        and k["name"] not in SCHEDULER_BUILDS.values()
    }
    assert probed <= covered, probed - covered
