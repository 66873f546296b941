"""`zerolint audit` and the measured attention and logits rules (ZL003-ZL006).

On the real vLLM wheels' site folders (``devtools.wheels.serving_site``): for each sink a
rule names its probe measurements of, the audit says which build the installed stack runs
and whether that build was measured to fail (``exposed``) or not measured (``unknown``);
never ``protected``. The verdict stays ZL001's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from devtools import wheels
from zerolint.audit import audit, render_text, to_dict
from zerolint.audit_kernels import measured_rules
from zerolint.cli import main

CLEAN_ENV: dict[str, str] = {"PATH": ""}
REPORT = json.loads((Path(__file__).parent.parent / "docs/probe-report.json").read_text())
PROBED_WHEELS = {k["name"]: k["wheel"] for k in REPORT["kernels"]}

# (rule, sink as vLLM imports it): every measured sink a vLLM 0.26.0+ wheel ships.
VLLM_SINKS = {
    ("ZL003", "vllm.third_party.deep_gemm.fp8_paged_mqa_logits"),
    ("ZL003", "vllm.utils.deep_gemm.fp8_fp4_paged_mqa_logits"),
    ("ZL004", "vllm.v1.attention.ops.triton_decode_attention.decode_attention_fwd"),
    ("ZL005", "vllm.v1.attention.ops.flashmla.flash_mla_with_kvcache"),
    ("ZL005", "vllm.v1.attention.ops.flashmla.flash_mla_with_kvcache_fp8"),
    ("ZL006", "vllm.v1.attention.ops.flashmla.flash_mla_with_kvcache"),
    ("ZL006", "vllm.v1.attention.ops.flashmla.flash_mla_with_kvcache_fp8"),
}


@pytest.fixture(scope="module")
def audited():
    answers = {}

    def run(requirement: str):
        if requirement not in answers:
            site = wheels.serving_site(requirement)
            answers[requirement] = audit([site], gpu="sm90", environ=CLEAN_ENV)
        return answers[requirement]

    return run


def hazards(result) -> dict[tuple[str, str], tuple[str, str]]:
    (engine,) = result.engines
    return {(h.rule, h.sink): (h.status, h.build) for h in engine.kernel_hazards}


@pytest.mark.network
@pytest.mark.slow
def test_vllm_0_26_0_runs_the_measured_builds_so_every_sink_is_exposed(audited):
    found = hazards(audited("vllm==0.26.0"))
    assert set(found) == VLLM_SINKS
    assert {status for status, _ in found.values()} == {"exposed"}
    assert found[("ZL003", "vllm.utils.deep_gemm.fp8_fp4_paged_mqa_logits")][1].startswith(
        "DeepGEMM 2.5.0 (vendored in vllm 0.26.0)"
    )
    # The probe's wheel is this one: the measurement is of these very files.
    assert PROBED_WHEELS["triton_mla_decode"].startswith("vllm-0.26.0-")


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.parametrize("requirement", ["vllm==0.27.1", "vllm==0.28.0", "vllm==0.33.0"])
def test_a_build_the_probe_did_not_run_is_unknown_never_protected(audited, requirement):
    found = hazards(audited(requirement))
    assert set(found) == VLLM_SINKS
    assert {status for status, _ in found.values()} == {"unknown"}
    version = requirement.split("==")[1]
    assert found[("ZL004", next(s for r, s in VLLM_SINKS if r == "ZL004"))][1] == f"vLLM {version}"


@pytest.mark.network
@pytest.mark.slow
def test_the_verdict_stays_zl001s_and_the_text_and_json_carry_the_hazards(audited):
    result = audited("vllm==0.26.0")
    # DeepGEMM 2.5.0's scheduler guards the all-zero case: protected, whatever ZL004 says.
    assert result.verdict == "protected"
    text = render_text(result)
    assert "measured attention and logits hazards" in text
    line = next(x for x in text.splitlines() if "ZL004 vllm.v1.attention.ops" in x)
    assert "vLLM 0.26.0: exposed: measured a row of length 0: NaN in its output" in line
    assert "triton_mla_decode" in line
    rows = to_dict(result)["engines"][0]["kernel_hazards"]
    assert {(r["rule"], r["sink"], r["status"]) for r in rows} == {
        (rule, sink, "exposed") for rule, sink in VLLM_SINKS
    }


@pytest.mark.network
@pytest.mark.slow
def test_deep_gemm_2_8_1_stays_a_negative_result(audited):
    """vLLM 0.33.0's DeepGEMM 2.8.1 scheduler tolerates every case: its hazards are
    protected, its unclamped call sites are no exposure, and its logits kernel (never
    measured) is unknown rather than protected."""
    result = audited("vllm==0.33.0")
    (engine,) = result.engines
    assert engine.kernel is not None and engine.kernel.deep_gemm.version == "2.8.1"
    assert {h.hazard: h.status for h in engine.kernel.hazards} == {
        "ZL001": "protected",
        "empty-batch": "protected",
    }
    assert engine.findings  # the call sites ZL001 still reports in the code ...
    assert result.verdict == "protected"  # ... are not an exposure with this build
    logits = [h for h in engine.kernel_hazards if h.rule == "ZL003"]
    assert logits and {h.status for h in logits} == {"unknown"}


def test_a_stack_without_the_sink_modules_lists_none(tmp_path):
    """A vLLM without the attention modules (and no DeepGEMM) has no measured sink."""
    (tmp_path / "vllm").mkdir()
    (tmp_path / "vllm" / "__init__.py").write_text("__version__ = '0.26.0'\n")
    result = audit([tmp_path], gpu="sm90", environ=CLEAN_ENV)
    assert [e.kernel_hazards for e in result.engines] == [[]]


def test_a_sink_module_of_a_measured_version_is_exposed_and_of_another_unknown(tmp_path):
    """The build is matched by the measurement key: the vLLM version for vLLM's kernels."""
    for version, expected in (("0.26.0", "exposed"), ("0.26.1", "unknown")):
        site = tmp_path / version
        ops = site / "vllm" / "v1" / "attention" / "ops"
        ops.mkdir(parents=True)
        (ops / "triton_decode_attention.py").write_text("def decode_attention_fwd(): ...\n")
        (site / "vllm" / "__init__.py").write_text("")
        info = site / f"vllm-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n")
        (info / "top_level.txt").write_text("vllm\n")
        result = audit([site], gpu="sm90", environ=CLEAN_ENV)
        (engine,) = result.engines
        assert [(h.rule, h.status) for h in engine.kernel_hazards] == [("ZL004", expected)]


def test_the_audit_knows_every_measured_rule() -> None:
    assert {r.code for r in measured_rules()} >= {"ZL003", "ZL004", "ZL005", "ZL006"}


def test_the_json_output_has_the_hazards_on_the_command_line(tmp_path, capsys):
    ops = tmp_path / "vllm" / "v1" / "attention" / "ops"
    ops.mkdir(parents=True)
    (ops / "flashmla.py").write_text("def flash_mla_with_kvcache(): ...\n")
    (tmp_path / "vllm" / "__init__.py").write_text("")
    capsys.readouterr()
    main(["audit", "--site-packages", str(tmp_path), "--gpu", "sm90", "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    rows = doc["engines"][0]["kernel_hazards"]
    assert {(r["rule"], r["status"]) for r in rows} == {
        ("ZL005", "unknown"),
        ("ZL006", "unknown"),
    }
