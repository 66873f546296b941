"""``zerolint audit``'s guard coverage (#15 item 4): per guarded sink the engine can import,
whether the installed guard covers it, on small site-packages trees read statically."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime_guard.sglang_hook import PTH_LINE, PTH_NAME
from tests.test_audit import (
    CLAMPED,
    CLEAN_ENV,
    GUARDED_HEADER,
    SGLANG_INDEXER,
    UNGUARDED_HEADER,
    deep_gemm_package,
    dist_info,
    guard_site,
    small_stack,
    write,
)
from zerolint.audit import audit, render_text, to_dict
from zerolint.cli import main

ATTENTION = (
    "vllm/v1/attention/ops/triton_decode_attention.py",
    "vllm/third_party/flashmla/flash_mla_interface.py",
    "vllm/v1/attention/ops/flashmla.py",
)


def coverage(site: Path, **environ: str) -> dict[str, tuple[bool, str]]:
    result = audit([site], gpu="sm90", environ={**CLEAN_ENV, **environ})
    [engine] = to_dict(result)["engines"]
    return {
        f"{row['sink'] or 'none'} {row['module']}": (row["covered"], row["reason"])
        for row in engine["guard_coverage"]
    }


@pytest.fixture
def vllm_site(tmp_path: Path) -> Path:
    site = small_stack(tmp_path / "site")
    for path in ATTENTION:
        write(site / path, "")
    return site


def test_every_importable_sink_is_listed_and_not_covered_without_the_guard(
    vllm_site: Path,
) -> None:
    rows = coverage(vllm_site)
    assert set(rows) == {
        "deep_gemm_metadata vllm.third_party.deep_gemm",
        "deep_gemm_logits vllm.third_party.deep_gemm",
        "triton_mla vllm.v1.attention.ops.triton_decode_attention",
        "flashmla vllm.third_party.flashmla.flash_mla_interface",
        "none vllm.v1.attention.ops.flashmla",
    }
    assert not any(covered for covered, _ in rows.values())
    assert (
        "no vllm.general_plugins entry point"
        in rows["triton_mla " + ATTENTION[0][:-3].replace("/", ".")][1]
    )


def test_the_plugin_covers_every_guarded_sink_but_the_fp8_one(vllm_site: Path) -> None:
    rows = coverage(guard_site(vllm_site))
    assert {name: covered for name, (covered, _) in rows.items()} == {
        "deep_gemm_metadata vllm.third_party.deep_gemm": True,
        "deep_gemm_logits vllm.third_party.deep_gemm": True,
        "triton_mla vllm.v1.attention.ops.triton_decode_attention": True,
        "flashmla vllm.third_party.flashmla.flash_mla_interface": True,
        "none vllm.v1.attention.ops.flashmla": False,
    }
    assert "no sanitizer was measured" in rows["none vllm.v1.attention.ops.flashmla"][1]


def test_a_sink_turned_off_is_reported_not_covered(vllm_site: Path) -> None:
    rows = coverage(guard_site(vllm_site), ZEROLINT_GUARD_OFF="flashmla")
    covered, reason = rows["flashmla vllm.third_party.flashmla.flash_mla_interface"]
    assert not covered and "ZEROLINT_GUARD_OFF=flashmla" in reason
    assert rows["triton_mla vllm.v1.attention.ops.triton_decode_attention"][0]


def test_the_text_report_has_one_line_per_sink(vllm_site: Path) -> None:
    text = render_text(audit([guard_site(vllm_site)], gpu="sm90", environ=CLEAN_ENV))
    lines = [line.strip() for line in text.splitlines() if "guard coverage:" in line]
    assert len(lines) == 5
    assert any(
        line.startswith("guard coverage: triton_mla (") and ": covered:" in line for line in lines
    )


@pytest.fixture
def sglang_site(tmp_path: Path) -> Path:
    site = tmp_path / "sglang_site"
    write(site / "sglang/__init__.py", "")
    dist_info(site, "sglang", "0.0.1")
    deep_gemm_package(site / "deep_gemm", "2.0.0", UNGUARDED_HEADER)
    dist_info(site, "deep-gemm", "2.0.0")
    guard_site(site, entry_point=False)
    return site


def test_sglang_is_covered_only_with_its_switch_and_the_pth_line(sglang_site: Path) -> None:
    names = {"deep_gemm_metadata deep_gemm", "deep_gemm_logits deep_gemm"}
    rows = coverage(sglang_site, ZEROLINT_GUARD_SGLANG="1")
    assert set(rows) == names and not any(c for c, _ in rows.values())
    assert "no zerolint_guard.pth" in rows["deep_gemm_logits deep_gemm"][1]
    write(sglang_site / PTH_NAME, PTH_LINE)
    assert all(c for c, _ in coverage(sglang_site, ZEROLINT_GUARD_SGLANG="1").values())
    assert not any(c for c, _ in coverage(sglang_site).values())
    off = coverage(sglang_site, ZEROLINT_GUARD_SGLANG="1", ZEROLINT_GUARD="0")
    assert not any(c for c, _ in off.values())


# --- the verdict: the guard protects from ZL001 only with its DeepGEMM clamp on ----------------

CLAMP_OFF = "turns off its DeepGEMM metadata clamp"


@pytest.mark.parametrize("off", ["deep_gemm_metadata", "all", " Deep_GEMM_Metadata,flashmla "])
def test_a_guard_whose_deep_gemm_clamp_is_off_leaves_the_stack_exposed(
    tmp_path: Path, off: str
) -> None:
    site = guard_site(small_stack(tmp_path / "site"))
    result = audit([site], gpu="sm90", environ={**CLEAN_ENV, "ZEROLINT_GUARD_OFF": off})
    assert result.verdict == "exposed", result.reasons
    text = "\n".join(result.reasons)
    assert f"runtime guard active, but ZEROLINT_GUARD_OFF={off} {CLAMP_OFF}" in text
    assert "code unclamped: vllm/v1/indexer.py:6" in text
    assert "runtime guard not active" not in text
    [engine] = result.engines
    assert engine.guard is not None and engine.guard.active and not engine.guard.protects
    line = next(x for x in render_text(result).splitlines() if "runtime guard:" in x)
    assert line.strip().startswith("runtime guard: active: entry point zerolint_guard")
    assert line.endswith(f"; ZEROLINT_GUARD_OFF={off} {CLAMP_OFF}")


@pytest.mark.parametrize(
    "stack, options, verdict, first",
    [
        ({"vendored": GUARDED_HEADER}, {}, "protected", "kernel guarded: "),
        ({"indexer": CLAMPED}, {}, "protected", "the serving code clamps the lengths"),
        ({}, {"vllm_args": "--max-num-seqs 16"}, "not affected", "no capture size"),
    ],
)
def test_a_clamp_turned_off_is_said_whatever_else_decides(
    tmp_path: Path, stack: dict, options: dict, verdict: str, first: str
) -> None:
    site = guard_site(small_stack(tmp_path / "site", **stack))
    environ = {**CLEAN_ENV, "ZEROLINT_GUARD_OFF": "deep_gemm_metadata"}
    result = audit([site], environ=environ, **{"gpu": "sm90", **options})
    assert result.verdict == verdict, result.reasons
    assert first in result.reasons[0]
    assert any(CLAMP_OFF in reason for reason in result.reasons)
    assert not any(
        reason.startswith("vLLM 0.0.1: runtime guard active:") for reason in result.reasons
    )


def test_turning_off_another_sink_leaves_the_stack_protected(tmp_path: Path) -> None:
    site = guard_site(small_stack(tmp_path / "site"))
    result = audit([site], gpu="sm90", environ={**CLEAN_ENV, "ZEROLINT_GUARD_OFF": "flashmla"})
    assert result.verdict == "protected"
    assert result.reasons[0].startswith("vLLM 0.0.1: runtime guard active: entry point")
    assert not any(CLAMP_OFF in reason for reason in result.reasons)


def test_the_cli_exits_1_when_the_clamp_is_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    site = guard_site(small_stack(tmp_path / "site"))
    for name in ("ZEROLINT_GUARD", "VLLM_PLUGINS", "ZEROLINT_GUARD_SGLANG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ZEROLINT_GUARD_OFF", "deep_gemm_metadata")
    assert main(["audit", "--site-packages", str(site), "--gpu", "sm90"]) == 1
    out = capsys.readouterr().out
    assert "\nverdict: exposed\n" in out
    assert f"ZEROLINT_GUARD_OFF=deep_gemm_metadata {CLAMP_OFF}" in out
    monkeypatch.delenv("ZEROLINT_GUARD_OFF")
    assert main(["audit", "--site-packages", str(site), "--gpu", "sm90"]) == 0
    assert "\nverdict: protected\n" in capsys.readouterr().out


# --- SGLang: the verdict reads the guard its switch installs ---------------------------------


@pytest.fixture
def sglang_stack(sglang_site: Path) -> Path:
    """SGLang with an unclamped call of the unguarded pip-installed DeepGEMM, and the guard's
    package installed (no .pth line yet)."""
    write(sglang_site / "sglang/srt/indexer.py", SGLANG_INDEXER)
    return sglang_site


def sglang_audit(site: Path, **environ: str):
    return audit([site], gpu="sm90", environ={**CLEAN_ENV, **environ})


def test_sglang_with_its_switch_and_the_pth_line_is_protected(sglang_stack: Path) -> None:
    write(sglang_stack / PTH_NAME, PTH_LINE)
    result = sglang_audit(sglang_stack, ZEROLINT_GUARD_SGLANG="1")
    assert result.verdict == "protected", result.reasons
    assert result.reasons[0] == (
        "SGLang 0.0.1: runtime guard active: zerolint_guard.pth found, ZEROLINT_GUARD_SGLANG=1"
    )
    text = "\n".join(result.reasons)
    assert "kernel still unguarded: " in text
    assert "code still unclamped: sglang/srt/indexer.py:5" in text
    [engine] = to_dict(result)["engines"]
    assert engine["runtime_guard"] == {
        "active": True,
        "protects": True,
        "reason": "zerolint_guard.pth found, ZEROLINT_GUARD_SGLANG=1",
        "entry_point": None,
    }
    assert "runtime guard: active: zerolint_guard.pth found" in render_text(result)


@pytest.mark.parametrize(
    "pth, environ, why",
    [
        (False, {"ZEROLINT_GUARD_SGLANG": "1"}, "runtime guard not active: no zerolint_guard.pth"),
        (True, {}, "runtime guard not active: zerolint_guard.pth found, ZEROLINT_GUARD_SGLANG not"),
        (
            True,
            {"ZEROLINT_GUARD_SGLANG": "1", "ZEROLINT_GUARD": "0"},
            "runtime guard not active: zerolint_guard.pth found, disabled by ZEROLINT_GUARD=0",
        ),
        (
            True,
            {"ZEROLINT_GUARD_SGLANG": "1", "ZEROLINT_GUARD_OFF": "deep_gemm_metadata"},
            (
                "runtime guard active, but ZEROLINT_GUARD_OFF=deep_gemm_metadata turns off its "
                "DeepGEMM metadata clamp (zerolint_guard.pth found, ZEROLINT_GUARD_SGLANG=1)"
            ),
        ),
    ],
)
def test_sglang_without_a_guard_that_clamps_is_exposed_and_says_why(
    sglang_stack: Path, pth: bool, environ: dict[str, str], why: str
) -> None:
    if pth:
        write(sglang_stack / PTH_NAME, PTH_LINE)
    result = sglang_audit(sglang_stack, **environ)
    assert result.verdict == "exposed", result.reasons
    assert any(reason.startswith(f"SGLang 0.0.1: {why}") for reason in result.reasons)
