"""`zerolint audit`: exposed, protected or not affected, and why.

Two kinds of stacks:

* the real wheels from PyPI (docs/hazards/README.md, "DeepGEMM builds"), unpacked without
  dependencies into cached site-packages folders (their ``.py`` files, DeepGEMM's scheduler
  headers and the ``.dist-info``), plus this project's own wheel, built here, for the
  runtime guard;
* small stacks written here: a ``vllm`` package with an indexer-like call, a vendored or
  pip-installed ``deep_gemm`` holding one of ``fixtures/headers/synthetic/*.cuh``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from devtools import wheels
from zerolint.audit import (
    GUARD_OFF_VALUES,
    Audit,
    AuditError,
    audit,
    detect_gpu,
    guard_status,
    render_text,
)
from zerolint.cli import main
from zerolint.headers.measured import Measurement, file_sha256
from zerolint.installed import find_environment

ROOT = Path(__file__).resolve().parents[1]
SYNTHETIC = ROOT / "tests" / "fixtures" / "headers" / "synthetic"
INDEXER = "vllm/v1/attention/backends/mla/indexer.py"
SM90_HEADER = "sm90_paged_mqa_logits.cuh"
MULTIPLES_OF_32_UP_TO_512 = list(range(32, 513, 32))
# The serving environment: no ZEROLINT_GUARD, no VLLM_PLUGINS, no nvidia-smi on PATH.
CLEAN_ENV: dict[str, str] = {"PATH": ""}


def site_of(requirement: str) -> Path:
    """A site-packages folder holding one wheel from PyPI (downloaded and unpacked once)."""
    return wheels.serving_site(requirement)


@pytest.fixture(scope="module")
def audited():
    """audit() over real wheels, memoized: several tests read the same answer."""
    answers: dict[tuple, Audit] = {}

    def run(*requirements: str, gpu: str = "sm90") -> Audit:
        key = (requirements, gpu)
        if key not in answers:
            folders = [site_of(r) for r in requirements]
            answers[key] = audit(folders, gpu=gpu, environ=CLEAN_ENV)
        return answers[key]

    return run


@pytest.fixture(scope="session")
def zerolint_wheel(tmp_path_factory) -> Path:
    """This project's wheel, built by its own build backend, as pip would install it."""
    out = tmp_path_factory.mktemp("wheel")
    code = "import sys, hatchling.build as b; print(b.build_wheel(sys.argv[1]))"
    subprocess.run(
        [sys.executable, "-c", code, str(out)], cwd=ROOT, check=True, capture_output=True
    )
    (wheel,) = out.glob("zerolint-*.whl")
    return wheel


@pytest.fixture
def vllm_0_27_1_with_guard(tmp_path, zerolint_wheel) -> Path:
    """One site-packages folder: vLLM 0.27.1 and this project's wheel installed beside it."""
    site = tmp_path / "site-packages"
    site.mkdir()
    vllm = site_of("vllm==0.27.1")
    for entry in vllm.iterdir():
        if not entry.name.startswith("."):
            (site / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    with zipfile.ZipFile(zerolint_wheel) as wheel:
        wheel.extractall(site)
    return site


def reasons_text(result: Audit) -> str:
    return "\n".join(result.reasons)


# ------------------------------------------------------------------ real wheels


@pytest.mark.network
@pytest.mark.slow
def test_vllm_0_26_0_generic_scheduler_is_guarded(audited):
    result = audited("vllm==0.26.0")
    (engine,) = result.engines
    assert engine.kernel is not None
    assert (engine.kernel.deep_gemm.origin, engine.kernel.deep_gemm.version) == (
        "vendored",
        "2.5.0",
    )
    assert Path(engine.kernel.header.path).name == "paged_mqa_logits.cuh"
    assert engine.kernel.header.status == "guarded"
    assert result.verdict == "protected"
    assert result.reasons[0].startswith("vLLM 0.26.0: kernel guarded")


@pytest.mark.network
@pytest.mark.slow
def test_vllm_0_27_1_on_sm90_is_exposed(audited):
    result = audited("vllm==0.27.1")
    assert result.verdict == "exposed"
    text = reasons_text(result)
    assert f"{INDEXER}:951" in text
    assert f"{SM90_HEADER}:113" in text
    assert ", ".join(map(str, MULTIPLES_OF_32_UP_TO_512)) in text
    (engine,) = result.engines
    assert engine.capture is not None
    assert engine.capture.hazardous_sizes == MULTIPLES_OF_32_UP_TO_512
    assert engine.guard is not None and not engine.guard.active


@pytest.mark.network
@pytest.mark.slow
def test_json_and_exit_code_for_an_exposed_stack(capsys):
    site = site_of("vllm==0.27.1")
    code = main(["audit", "--site-packages", str(site), "--gpu", "sm90", "--format", "json"])
    assert code == 1
    document = json.loads(capsys.readouterr().out)
    assert document["verdict"] == "exposed"
    (engine,) = document["engines"]
    assert engine["version"] == "0.27.1"
    assert [(f["path"], f["line"]) for f in engine["unclamped"]] == [(INDEXER, 951)]
    header = engine["deep_gemm"]["header"]
    assert header["status"] == "unguarded"
    assert header["hazards"][0]["line"] == 113
    assert engine["capture"]["hazardous_sizes"] == MULTIPLES_OF_32_UP_TO_512


@pytest.mark.network
@pytest.mark.slow
def test_vllm_0_27_1_with_the_runtime_guard_is_protected(vllm_0_27_1_with_guard):
    result = audit([vllm_0_27_1_with_guard], gpu="sm90", environ=CLEAN_ENV)
    assert result.verdict == "protected"
    text = reasons_text(result)
    assert (
        "runtime guard active: entry point zerolint_guard = runtime_guard.plugin:register" in text
    )
    assert "kernel still unguarded: " in text and f"{SM90_HEADER}:113" in text
    assert f"code still unclamped: {INDEXER}:951" in text


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.parametrize(
    "environ, active",
    [
        ({"ZEROLINT_GUARD": "0"}, False),
        ({"VLLM_PLUGINS": "lora_filesystem_resolver"}, False),
        ({"VLLM_PLUGINS": "lora_filesystem_resolver,zerolint_guard"}, True),
        ({"ZEROLINT_GUARD": "1", "VLLM_PLUGINS": "zerolint_guard"}, True),
    ],
)
def test_the_installed_guard_can_be_switched_off(vllm_0_27_1_with_guard, environ, active):
    status = guard_status(find_environment([vllm_0_27_1_with_guard]), environ)
    assert status.active is active, status.reason


@pytest.mark.network
@pytest.mark.slow
def test_a_disabled_guard_leaves_the_stack_exposed(vllm_0_27_1_with_guard):
    result = audit([vllm_0_27_1_with_guard], gpu="sm90", environ={"ZEROLINT_GUARD": "0"})
    assert result.verdict == "exposed"
    assert "disabled by ZEROLINT_GUARD=0" in reasons_text(result)


@pytest.mark.network
@pytest.mark.slow
def test_vllm_0_28_0_is_guarded_although_its_deep_gemm_says_2_6_1(audited):
    old, new = audited("vllm==0.27.1"), audited("vllm==0.28.0")
    old_kernel, new_kernel = old.engines[0].kernel, new.engines[0].kernel
    assert old_kernel is not None and new_kernel is not None
    assert old_kernel.deep_gemm.version == new_kernel.deep_gemm.version == "2.6.1"
    assert (old_kernel.header.status, new_kernel.header.status) == ("unguarded", "guarded")
    assert {g.kind for g in new_kernel.header.guards} == {"bound", "zero-total"}
    assert new.verdict == "protected"


@pytest.mark.network
@pytest.mark.slow
def test_vllm_0_33_0_is_guarded_and_still_unclamped(audited):
    result = audited("vllm==0.33.0")
    assert result.verdict == "protected"
    text = reasons_text(result)
    assert "kernel guarded" in text
    # 0.33.0 keeps the indexer's two unclamped calls and adds one in a DeepSeek-V4.1 module.
    unclamped = text.split("code still unclamped: ", 1)[1]
    assert f"{INDEXER}:1747" in unclamped and f"{INDEXER}:1829" in unclamped


@pytest.mark.network
@pytest.mark.slow
def test_sgl_deep_gemm_ships_the_unguarded_header(audited):
    result = audited("sgl-deep-gemm==0.2.3.post2")
    (engine,) = result.engines
    assert engine.name == "deep_gemm"
    assert engine.kernel is not None
    assert engine.kernel.deep_gemm.distribution is not None
    assert engine.kernel.deep_gemm.distribution.label() == "sgl-deep-gemm 0.2.3.post2"
    assert engine.kernel.header.status == "unguarded"
    assert engine.kernel.header.location() == f"{SM90_HEADER}:113"
    assert result.verdict == "exposed"


@pytest.mark.network
@pytest.mark.slow
def test_a_pip_installed_deep_gemm_wins_over_the_vendored_one(audited):
    """vLLM 0.28.0's own kernel is guarded, but sgl-deep-gemm installs `deep_gemm`."""
    result = audited("vllm==0.28.0", "sgl-deep-gemm==0.2.3.post2")
    (engine,) = result.engines
    assert engine.kernel is not None and engine.fallback is not None
    assert engine.kernel.deep_gemm.origin == "pip"
    assert engine.kernel.header.status == "unguarded"
    assert engine.fallback.header.status == "guarded"
    assert result.verdict == "exposed"


@pytest.mark.network
@pytest.mark.slow
def test_sm100_does_not_run_the_sm90_scheduler(audited):
    result = audited("vllm==0.27.1", gpu="sm100")
    assert result.verdict == "not affected"
    assert "SM90 scheduler" in reasons_text(result)


@pytest.mark.parametrize("gpu", ["sm80", "sm89", "sm120"])
def test_other_architectures_are_not_affected_and_named(audited, gpu):
    """Issue 16.9: an operator with an A100, L40S or RTX PRO can say so."""
    result = audited("vllm==0.27.1", gpu=gpu)
    assert result.verdict == "not affected"
    assert result.gpu.arch == gpu and not result.gpu.assumed
    assert "SM90 scheduler" in reasons_text(result)


def test_audit_cli_accepts_every_architecture_capture_does(tmp_path):
    from zerolint.gpus import GPU_CHOICES

    for gpu in GPU_CHOICES:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "zerolint",
                "audit",
                "--gpu",
                gpu,
                "--site-packages",
                str(tmp_path),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, (gpu, done.stderr)
        assert f"GPU: {gpu} (--gpu" in done.stdout


# ------------------------------------------------------------------ small stacks

UNCLAMPED = """\
from vllm.utils.deep_gemm import get_paged_mqa_logits_metadata


def build(seq_lens, compress_ratio, block_size, num_sms):
    seq_lens = seq_lens // compress_ratio
    return get_paged_mqa_logits_metadata(seq_lens.unsqueeze(-1), block_size, num_sms)
"""
CLAMPED = UNCLAMPED.replace("seq_lens.unsqueeze(-1),", "seq_lens.unsqueeze(-1).clamp(min=1),")
PIP_FIRST = """\
import importlib


def _import_deep_gemm():
    try:
        return importlib.import_module("deep_gemm")
    except ImportError:
        return importlib.import_module("vllm.third_party.deep_gemm")
"""
VENDORED_FIRST = """\
import importlib


def _import_deep_gemm():
    try:
        return importlib.import_module("vllm.third_party.deep_gemm")
    except ImportError:
        return importlib.import_module("deep_gemm")
"""
UNGUARDED_HEADER = "disjunction.cuh"
GUARDED_HEADER = "enclosing_nonzero_test.cuh"


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def dist_info(
    site: Path, name: str, version: str, entry_points: str = "", top_level: str = ""
) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    write(info / "METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    write(info / "RECORD", "")
    if entry_points:
        write(info / "entry_points.txt", entry_points)
    if top_level:
        write(info / "top_level.txt", top_level + "\n")


def deep_gemm_package(folder: Path, version: str, header: str) -> None:
    write(folder / "__init__.py", f"__version__ = '{version}'\n")
    scheduler = folder / "include" / "deep_gemm" / "scheduler"
    scheduler.mkdir(parents=True)
    shutil.copy(SYNTHETIC / header, scheduler / SM90_HEADER)


def small_stack(
    site: Path,
    *,
    indexer: str = UNCLAMPED,
    vendored: str | None = UNGUARDED_HEADER,
    pip: str | None = None,
    import_order: str = PIP_FIRST,
) -> Path:
    """A vLLM-shaped package: an indexer-like call, the DeepGEMM import order, DeepGEMMs."""
    write(site / "vllm/__init__.py", "")
    write(site / "vllm/utils/__init__.py", "")
    write(site / "vllm/utils/deep_gemm.py", import_order)
    write(site / "vllm/v1/indexer.py", indexer)
    dist_info(site, "vllm", "0.0.1")
    if vendored is not None:
        deep_gemm_package(site / "vllm/third_party/deep_gemm", "1.0.0", vendored)
    if pip is not None:
        deep_gemm_package(site / "deep_gemm", "2.0.0", pip)
        dist_info(site, "deep-gemm", "2.0.0")
    return site


SMALL_STACKS = [
    # stack options, audit options, verdict, a phrase of the reasons
    ({}, {}, "exposed", "code unclamped: vllm/v1/indexer.py:6"),
    ({"vendored": GUARDED_HEADER}, {}, "protected", "code still unclamped: vllm/v1/indexer.py:6"),
    ({"indexer": CLAMPED}, {}, "protected", "serving code clamps the lengths"),
    ({}, {"compress_ratios": (1,)}, "not affected", "no compress ratio > 1"),
    ({}, {"vllm_args": "--max-num-seqs 16"}, "not affected", "no capture size and no runtime"),
    ({}, {"gpu": "sm100"}, "not affected", "SM90 scheduler"),
    ({"vendored": None}, {}, "not affected", "no DeepGEMM importable"),
    ({"pip": GUARDED_HEADER}, {}, "protected", "DeepGEMM 2.0.0 (pip-installed deep_gemm"),
    (
        {"pip": GUARDED_HEADER, "import_order": VENDORED_FIRST},
        {},
        "exposed",
        "DeepGEMM 1.0.0 (vendored in vllm 0.0.1)",
    ),
    (
        {"indexer": "def build():\n    return 0\n"},
        {},
        "not affected",
        "no call of get_paged_mqa_logits_metadata",
    ),
]


@pytest.mark.parametrize("stack, options, verdict, phrase", SMALL_STACKS)
def test_small_stack_verdict(tmp_path, stack, options, verdict, phrase):
    site = small_stack(tmp_path, **stack)
    result = audit([site], environ=CLEAN_ENV, **{"gpu": "sm90", **options})
    assert result.verdict == verdict, result.reasons
    assert phrase in reasons_text(result)


SGLANG_INDEXER = """\
import deep_gemm


def plan(seq_lens, block_size, num_sms):
    return deep_gemm.get_paged_mqa_logits_metadata(seq_lens // 4, block_size, num_sms)
"""


@pytest.mark.parametrize(
    "header, verdict", [(UNGUARDED_HEADER, "exposed"), (GUARDED_HEADER, "protected")]
)
def test_sglang_uses_the_pip_installed_deep_gemm(tmp_path, header, verdict):
    write(tmp_path / "sglang/__init__.py", "")
    write(tmp_path / "sglang/srt/indexer.py", SGLANG_INDEXER)
    dist_info(tmp_path, "sglang", "0.0.2")
    deep_gemm_package(tmp_path / "deep_gemm", "0.2.3.post2", header)
    dist_info(tmp_path, "sgl-deep-gemm", "0.2.3.post2", top_level="deep_gemm")
    result = audit([tmp_path], gpu="sm90", environ=CLEAN_ENV)
    (engine,) = result.engines
    assert (engine.name, engine.version, engine.capture) == ("sglang", "0.0.2", None)
    assert engine.guard is not None and not engine.guard.active
    assert engine.kernel is not None
    assert engine.kernel.deep_gemm.label() == (
        "DeepGEMM 0.2.3.post2 (pip-installed deep_gemm from sgl-deep-gemm 0.2.3.post2)"
    )
    assert [(f.line, Path(f.path).name) for f in engine.findings] == [(5, "indexer.py")]
    assert result.verdict == verdict


def test_a_kernel_without_a_readable_guard_is_assumed_unguarded(tmp_path):
    site = small_stack(tmp_path, vendored="no_search.cuh")
    result = audit([site], gpu="sm90", environ=CLEAN_ENV)
    assert result.verdict == "exposed"
    assert "kernel guard not found, assuming unguarded" in reasons_text(result)


def test_cli_exit_codes_and_text(tmp_path, capsys):
    exposed = small_stack(tmp_path / "a")
    guarded = small_stack(tmp_path / "b", vendored=GUARDED_HEADER)
    assert main(["audit", "--site-packages", str(exposed), "--gpu", "sm90"]) == 1
    out = capsys.readouterr().out
    assert "verdict: exposed" in out and f"{SM90_HEADER}:18" in out
    assert main(["audit", "--site-packages", str(guarded), "--gpu", "sm90"]) == 0
    assert "verdict: protected" in capsys.readouterr().out


def test_an_empty_folder_is_not_affected(tmp_path, capsys):
    assert main(["audit", "--site-packages", str(tmp_path), "--gpu", "sm90"]) == 0
    assert "no vLLM, SGLang or DeepGEMM installed" in capsys.readouterr().out


def test_bad_input_is_one_line(tmp_path, capsys):
    missing = tmp_path / "nowhere"
    assert main(["audit", "--site-packages", str(missing)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"zerolint: error: audit: {missing}: no such site-packages folder"
    site = small_stack(tmp_path / "site")
    assert main(["audit", "--site-packages", str(site), "--vllm-args", "--max-num-seqs x"]) == 2
    assert capsys.readouterr().err.strip().startswith("zerolint: error: audit: --vllm-args")
    with pytest.raises(AuditError):
        audit([missing])


# ------------------------------------------------------------------ the runtime guard

GUARD_ENTRY_POINT = "[vllm.general_plugins]\nzerolint_guard = runtime_guard.plugin:register\n"


def guard_site(site: Path, *, entry_point: bool = True, package: bool = True) -> Path:
    dist_info(site, "zerolint", "0.1.0", GUARD_ENTRY_POINT if entry_point else "")
    if package:
        write(site / "runtime_guard/__init__.py", "")
        write(site / "runtime_guard/plugin.py", "def register():\n    pass\n")
    return site


GUARD_CASES = [
    # site options, environment, active, a phrase of the reason
    ({}, {}, True, "entry point zerolint_guard = runtime_guard.plugin:register (zerolint 0.1.0)"),
    ({"entry_point": False}, {}, False, "no vllm.general_plugins entry point into runtime_guard"),
    ({"package": False}, {}, False, "runtime_guard is not installed"),
    ({}, {"ZEROLINT_GUARD": "off"}, False, "disabled by ZEROLINT_GUARD=off"),
    ({}, {"VLLM_PLUGINS": ""}, False, "not in VLLM_PLUGINS="),
    (
        {},
        {"VLLM_PLUGINS": "a, zerolint_guard"},
        False,
        "not in VLLM_PLUGINS",
    ),  # vLLM does not strip
    ({}, {"VLLM_PLUGINS": "a,zerolint_guard"}, True, "zerolint_guard"),
]


@pytest.mark.parametrize("options, environ, active, phrase", GUARD_CASES)
def test_guard_status(tmp_path, options, environ, active, phrase):
    status = guard_status(find_environment([guard_site(tmp_path, **options)]), environ)
    assert status.active is active
    assert phrase in status.reason


@pytest.mark.parametrize("value", ["0", "1", "false", "FALSE", " off ", "no", "yes", ""])
def test_guard_switch_reads_as_the_runtime_guard_does(monkeypatch, value):
    from runtime_guard.patch import ENV_VAR, guard_enabled

    monkeypatch.setenv(ENV_VAR, value)
    assert guard_enabled() is (value.strip().lower() not in GUARD_OFF_VALUES)


def test_the_guard_protects_a_small_exposed_stack(tmp_path):
    site = guard_site(small_stack(tmp_path))
    result = audit([site], gpu="sm90", environ=CLEAN_ENV)
    assert result.verdict == "protected"
    assert "runtime guard active" in result.reasons[0]


def test_this_project_declares_the_plugin_entry_point(zerolint_wheel, tmp_path):
    with zipfile.ZipFile(zerolint_wheel) as wheel:
        wheel.extractall(tmp_path)
    status = guard_status(find_environment([tmp_path]), {})
    assert status.active, status.reason


# ------------------------------------------------------------------ the GPU

SMI = "#!/bin/sh\nprintf '%s\\n' {rows}\n"


def fake_smi(folder: Path, rows: list[str]) -> dict[str, str]:
    """An nvidia-smi on PATH that prints the given CSV rows; returns the environment."""
    script = folder / "nvidia-smi"
    script.write_text(SMI.format(rows=" ".join(f"'{r}'" for r in rows)))
    script.chmod(0o755)
    return {"PATH": str(folder)}


H200 = "0, GPU-aaaa, NVIDIA H200, 9.0"
B200 = "1, GPU-bbbb, NVIDIA B200, 10.0"
A100 = "0, GPU-cccc, NVIDIA A100-SXM4-80GB, 8.0"
RTX_PRO_6000 = "0, GPU-dddd, NVIDIA RTX PRO 6000 Blackwell Workstation Edition, 12.0"


@pytest.mark.parametrize(
    "rows, visible, arch, assumed",
    [
        ([H200], None, "sm90", False),
        ([B200], None, "sm100", False),
        ([A100], None, "other", False),
        ([RTX_PRO_6000], None, "sm120", False),
        ([RTX_PRO_6000, RTX_PRO_6000.replace("0, GPU-dddd", "1, GPU-eeee")], None, "sm120", False),
        ([H200, RTX_PRO_6000], None, "sm90", False),
        ([H200, B200], None, "sm90", False),
        ([H200, B200], "1", "sm100", False),
        ([H200, B200], "GPU-aaaa", "sm90", False),
        ([H200], "", "sm90", True),  # nothing visible: assume the worst
        ([], None, "sm90", True),
    ],
)
def test_detect_gpu_from_nvidia_smi(tmp_path, rows, visible, arch, assumed):
    environ = fake_smi(tmp_path, rows)
    if visible is not None:
        environ["CUDA_VISIBLE_DEVICES"] = visible
    gpu = detect_gpu("auto", environ)
    assert (gpu.arch, gpu.assumed) == (arch, assumed), gpu.source


def test_an_sm120_card_found_by_nvidia_smi_is_audited_as_sm120(tmp_path, capsys):
    """An RTX PRO 6000 (compute capability 12.0) is the workstation Blackwell, not the SM100
    family: `--gpu auto` says what `--gpu sm120` says, and the capture section is not the
    SM100 model."""
    site = small_stack(tmp_path / "site")
    environ = fake_smi(tmp_path, [RTX_PRO_6000])
    auto = audit([site], gpu="auto", environ=environ)
    named = audit([site], gpu="sm120", environ=CLEAN_ENV)
    assert (auto.gpu.arch, auto.verdict) == ("sm120", "not affected")
    assert auto.engines[0].capture is not None and named.engines[0].capture is not None
    assert auto.engines[0].capture.config.gpu == named.engines[0].capture.config.gpu == "sm90"
    assert auto.engines[0].capture.summary() == named.engines[0].capture.summary()
    assert "RTX PRO 6000 Blackwell Workstation Edition (12.0)" in auto.reasons[0]


def test_without_nvidia_smi_sm90_is_assumed_and_said(tmp_path):
    gpu = detect_gpu("auto", {"PATH": str(tmp_path)})
    assert (gpu.arch, gpu.assumed) == ("sm90", True)
    assert "no nvidia-smi" in gpu.describe()


def test_an_explicit_gpu_is_taken_as_given():
    assert detect_gpu("sm100", {}).arch == "sm100"
    assert not detect_gpu("sm90", {}).assumed


def test_audit_never_imports_the_serving_packages(tmp_path):
    site = small_stack(tmp_path, pip=GUARDED_HEADER)
    write(site / "vllm/__init__.py", "raise SystemExit('vllm was imported')\n")
    write(site / "deep_gemm/__init__.py", "__version__ = '2.0.0'\nraise SystemExit('imported')\n")
    code = (
        "import sys; from zerolint.audit import audit; "
        f"r = audit([{str(site)!r}], gpu='sm90', environ={{}}); "
        "print(r.verdict); assert 'vllm' not in sys.modules and 'deep_gemm' not in sys.modules"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "protected"


# ------------------------------------------------------------------ hazards of each build

# requirement, {hazard: (status, measured outcome or None)}; docs/audit.md, "Hazards of each
# build", has the same table.
BUILD_HAZARDS = [
    ("vllm==0.26.0", {"ZL001": ("protected", None), "empty-batch": ("exposed", "fault")}),
    ("vllm==0.27.1", {"ZL001": ("exposed", "fault"), "empty-batch": ("exposed", "fault")}),
    ("vllm==0.28.0", {"ZL001": ("protected", None), "empty-batch": ("protected", None)}),
    ("vllm==0.33.0", {"ZL001": ("protected", "ok"), "empty-batch": ("protected", "ok")}),
    (
        "sgl-deep-gemm==0.2.3.post2",
        {"ZL001": ("exposed", "fault"), "empty-batch": ("exposed", "fault")},
    ),
]


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.parametrize("requirement, expected", BUILD_HAZARDS, ids=[b[0] for b in BUILD_HAZARDS])
def test_hazards_of_each_real_build(audited, requirement, expected):
    (engine,) = audited(requirement).engines
    assert engine.kernel is not None
    found = {
        h.hazard: (h.status, h.measured.outcome if h.measured else None)
        for h in engine.kernel.hazards
    }
    assert found == expected


@pytest.mark.network
@pytest.mark.slow
def test_an_empty_batch_does_not_change_the_zl001_verdict(audited):
    """vLLM 0.26.0 faults at B == 0 (measured), but its verdict stays ZL001's: protected."""
    result = audited("vllm==0.26.0")
    kernel = result.engines[0].kernel
    assert kernel is not None
    empty = kernel.hazard("empty-batch")
    assert empty is not None and empty.header.status == "unguarded"
    assert empty.header.hazards[0].line == 116
    assert result.verdict == "protected"
    out = render_text(result)
    assert "hazards by DeepGEMM build" in out
    assert "DeepGEMM 2.5.0 (vendored in vllm 0.26.0): ZL001 protected, empty-batch exposed" in out
    assert "empty-batch (B == 0): exposed: header unguarded (paged_mqa_logits.cuh:116); " in out
    assert "measured: fault (context_lens of shape (0, next_n)" in out


@pytest.mark.network
@pytest.mark.slow
def test_json_lists_the_hazards_of_each_build(capsys):
    site = site_of("vllm==0.27.1")
    main(["audit", "--site-packages", str(site), "--gpu", "sm90", "--format", "json"])
    document = json.loads(capsys.readouterr().out)
    (build,) = document["builds"]
    assert build["deep_gemm"] == "DeepGEMM 2.6.1 (vendored in vllm 0.27.1)"
    assert build["hazards"] == {"ZL001": "exposed", "empty-batch": "exposed"}
    hazards = {h["hazard"]: h for h in document["engines"][0]["deep_gemm"]["hazards"]}
    assert hazards["ZL001"]["measured"]["source"] == "docs/sm90-verification.md"
    assert hazards["empty-batch"]["measured"]["source"] == "docs/hazards/empty-batch-ZL001.md"
    assert hazards["empty-batch"]["header"]["hazards"][0]["line"] == 113


def test_a_measurement_holds_for_the_exact_header_only(tmp_path):
    """A run is keyed by the header's bytes: an edited copy is not measured, only read."""
    header = SYNTHETIC / UNGUARDED_HEADER
    recorded = Measurement(
        "empty-batch", file_sha256(header) or "", "a test build", "fault", "B = 0", "here"
    )
    site = small_stack(tmp_path / "same")
    edited = small_stack(tmp_path / "edited")
    copy = edited / "vllm/third_party/deep_gemm/include/deep_gemm/scheduler" / SM90_HEADER
    copy.write_text(copy.read_text() + "\n// edited\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("zerolint.headers.measured.MEASURED", (recorded,))
        same = audit([site], gpu="sm90", environ=CLEAN_ENV).engines[0].kernel
        other = audit([edited], gpu="sm90", environ=CLEAN_ENV).engines[0].kernel
    assert same is not None and other is not None
    assert same.hazard("empty-batch").measured == recorded
    assert other.hazard("empty-batch").measured is None


def test_each_build_is_listed_once_with_its_fallback(tmp_path, capsys):
    site = small_stack(tmp_path, pip=GUARDED_HEADER)
    main(["audit", "--site-packages", str(site), "--gpu", "sm90", "--format", "json"])
    builds = json.loads(capsys.readouterr().out)["builds"]
    assert [b["deep_gemm"] for b in builds] == [
        "DeepGEMM 2.0.0 (pip-installed deep_gemm from deep-gemm 2.0.0)",
        "DeepGEMM 1.0.0 (vendored in vllm 0.0.1)",
    ]
    main(["audit", "--site-packages", str(site), "--gpu", "sm90"])
    out = capsys.readouterr().out
    section = out.split("hazards by DeepGEMM build", 1)[1].split("\nverdict:", 1)[0]
    assert section.count("DeepGEMM 2.0.0") == 1 and section.count("DeepGEMM 1.0.0") == 1


def test_sglang_namespace_packages_are_followed(tmp_path):
    """SGLang's `sglang/srt` has no `__init__.py`: the audit names its modules as Python
    imports them, so a division in a module the indexer imports (`sglang.srt.lens`) is
    followed to the kernel call. Before, the import led nowhere, no call was unclamped,
    and an exposed stack (SGLang 0.5.23 with sgl-deep-gemm 0.2.3.post2) read as
    protected by its clamped calls elsewhere."""
    write(tmp_path / "sglang/__init__.py", "")
    write(tmp_path / "sglang/srt/lens.py", "def compressed(seq_lens):\n    return seq_lens // 4\n")
    write(
        tmp_path / "sglang/srt/layers/indexer.py",
        "import deep_gemm\n\n"
        "from sglang.srt.lens import compressed\n\n\n"
        "def plan(seq_lens, block_size, num_sms):\n"
        "    return deep_gemm.get_paged_mqa_logits_metadata(compressed(seq_lens), block_size, num_sms)\n",
    )
    dist_info(tmp_path, "sglang", "0.0.2")
    deep_gemm_package(tmp_path / "deep_gemm", "0.2.3.post2", UNGUARDED_HEADER)
    dist_info(tmp_path, "sgl-deep-gemm", "0.2.3.post2", top_level="deep_gemm")
    result = audit([tmp_path], gpu="sm90", environ=CLEAN_ENV)
    (engine,) = result.engines
    assert [(f.line, Path(f.path).name) for f in engine.findings] == [(7, "indexer.py")]
    assert result.verdict == "exposed"
