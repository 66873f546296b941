"""``zerolint audit``: is this installed serving stack exposed, and is it protected?

For the operator who runs vLLM (or SGLang) and needs an answer before the next restart.
Static: it reads package metadata and files and never imports vllm, deep_gemm or sglang.

For each serving package found (vLLM, SGLang; or DeepGEMM alone when neither is there):

1. which DeepGEMM it would import (``installed``), and whether that DeepGEMM's SM90
   paged-MQA scheduler header guards the all-zero case (``headers``);
2. the unclamped call sites ZL001 finds in the package's own code (``engine``);
3. for vLLM, the CUDA-graph capture sizes and runtime batches that make every length 0,
   for the given ``vllm serve`` arguments (``capture``);
4. whether the runtime guard is installed and enabled: vLLM's plugin, or for SGLang the
   ``zerolint_guard.pth`` line and ``ZEROLINT_GUARD_SGLANG``;

then one verdict: ``exposed``, ``protected`` (saying by what, and whether the code is still
unclamped) or ``not affected``, with the reasons. The runtime guard protects only with its
DeepGEMM metadata clamp on (``ZEROLINT_GUARD_OFF`` not naming ``deep_gemm_metadata``).

Each DeepGEMM build found also carries its list of hazards (``KernelCheck.hazards``), one
per header recognizer (``zerolint.headers.registry``): ZL001's all-zero case, the empty
batch, each ``exposed``, ``protected`` or ``unknown`` from its header and, where a GPU run
of that very header is recorded, from the run. The verdict above is ZL001's; the other
hazards are reported per build (docs/audit.md, "Hazards of each build"). The attention and
logits kernels of the measured rules (ZL003-ZL006) are reported per sink the engine can
import, ``exposed`` for a build the zero-length probe measured failing and ``unknown``
otherwise (``zerolint.audit_kernels``); they do not change the verdict either.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

# Imports no torch (runtime_guard.patch promises it; tests/test_runtime_guard_import.py).
from runtime_guard.patch import OFF_VALUES, OFF_VAR, disabled_sinks
from runtime_guard.sglang_hook import ENV_VAR as SGLANG_GUARD_ENV
from runtime_guard.sglang_hook import PTH_NAME
from runtime_guard.sinks import NOT_GUARDED, SINKS
from zerolint.audit_kernels import KernelHazard, hazard_dict, kernel_hazards
from zerolint.gpus import GPU_CHOICES as KNOWN_GPUS
from zerolint.gpus import UNAFFECTED_GPUS
from zerolint.headers import (
    HeaderCheck,
    HeaderError,
    Recognizer,
    check_header,
    find_scheduler_header,
    recognizers,
)
from zerolint.headers.measured import Measurement, measurement
from zerolint.installed import (
    DeepGemm,
    Environment,
    Plugin,
    SitePackagesError,
    default_site_packages,
    find_environment,
    module_on_path,
)

if TYPE_CHECKING:
    from zerolint.capture import CaptureResult
    from zerolint.model import Finding

AuditVerdict = Literal["exposed", "protected", "not affected"]
HazardStatus = Literal["exposed", "protected", "unknown"]
ZL001 = "ZL001"
# The runtime_guard.sinks name of ZL001's kernel (DeepGEMM's metadata scheduler).
ZL001_SINK = next(sink.name for sink in SINKS if sink.rule == ZL001)
GPU_CHOICES = ("auto", *KNOWN_GPUS)
GUARD_PACKAGE = "runtime_guard"
GUARD_ENV = "ZEROLINT_GUARD"
# The values runtime_guard.patch.guard_enabled() reads as "off": its own set, one source.
GUARD_OFF_VALUES = OFF_VALUES
_SEVERITY: dict[str, int] = {"not affected": 0, "protected": 1, "exposed": 2}
NO_CAPTURE_MODEL = (
    "capture sizes not modelled for this engine; live decode batches whose lengths are all "
    "below the compress ratio reach the kernel"
)
UNKNOWN_CALLERS = (
    "no vLLM or SGLang found beside it to check its callers: any caller that passes "
    "all-zero context lengths with a batch that is a multiple of 32 faults"
)


# ------------------------------------------------------------------------ results


@dataclass(frozen=True, slots=True)
class Gpu:
    """Which scheduler the GPUs run: ``sm90`` (Hopper), ``sm100`` (Blackwell), one of the
    architectures that run no paged-MQA scheduler (``sm80``, ``sm89``, ``sm120``: the
    Blackwell workstation cards) or ``other``."""

    arch: str
    source: str
    assumed: bool = False

    def describe(self) -> str:
        return f"{self.arch} ({'assumed: ' if self.assumed else ''}{self.source})"


@dataclass(frozen=True, slots=True)
class GuardStatus:
    """Whether the engine's processes would install the runtime guard (vLLM's plugin,
    SGLang's ``zerolint_guard.pth`` switch), read from the files and the environment."""

    active: bool
    reason: str
    plugin: Plugin | None = None
    # The ZEROLINT_GUARD_OFF value when it turns off the guard of ZL001's sink (the DeepGEMM
    # metadata clamp, runtime_guard.sinks "deep_gemm_metadata"); "" when that sink is on.
    clamp_off: str = ""

    @property
    def protects(self) -> bool:
        """Whether the guard keeps ZL001's fault away: active, its DeepGEMM clamp not off."""
        return self.active and not self.clamp_off

    def clamp_off_reason(self) -> str:
        return (
            f"runtime guard active, but {OFF_VAR}={self.clamp_off} turns off its DeepGEMM "
            f"metadata clamp ({self.reason})"
        )


@dataclass(frozen=True, slots=True)
class HazardCheck:
    """One hazard of one DeepGEMM build: what its header says and what a GPU run measured."""

    hazard: str  # "ZL001", "empty-batch"
    label: str  # the input, a few words: "B == 0"
    header: HeaderCheck
    measured: Measurement | None = None

    @property
    def status(self) -> HazardStatus:
        """A recorded run decides; else the header: unguarded is exposed, guarded protected."""
        if self.measured is not None:
            return "exposed" if self.measured.outcome == "fault" else "protected"
        return {"unguarded": "exposed", "guarded": "protected"}.get(self.header.status, "unknown")

    def describe(self) -> str:
        header = self.header
        where = header.location() if header.hazards or header.guards else Path(header.path).name
        text = f"{self.hazard} ({self.label}): {self.status}: header {header.status} ({where})"
        if self.measured is None:
            return text + "; not measured"
        run = self.measured
        return f"{text}; measured: {run.outcome} ({run.detail}; {run.source})"


@dataclass(slots=True)
class KernelCheck:
    """A DeepGEMM and what its scheduler header says, for ZL001 and for every hazard."""

    deep_gemm: DeepGemm
    header: HeaderCheck  # ZL001's all-zero recognizer
    hazards: list[HazardCheck] = field(default_factory=list)

    def describe(self) -> str:
        status = self.header.status
        where = self.header.location()
        return f"{self.deep_gemm.label()}: kernel {status} ({where})"

    def hazard(self, name: str) -> HazardCheck | None:
        return next((h for h in self.hazards if h.hazard == name), None)


@dataclass(slots=True, frozen=True)
class SinkCoverage:
    """Whether the runtime guard covers one guarded sink this engine can import (#15)."""

    sink: str  # runtime_guard.sinks name, or "" for a sink with no guard
    rule: str
    module: str
    path: str  # where the module's file is, on the search path
    sanitizer: str
    covered: bool
    reason: str


@dataclass(slots=True)
class EngineAudit:
    """One serving package (or DeepGEMM alone) and its verdict."""

    name: str  # vllm | sglang | deep_gemm
    version: str | None
    path: Path | None
    kernel: KernelCheck | None = None
    fallback: KernelCheck | None = None
    import_order: tuple[str, ...] = ()  # the DeepGEMM modules it tries, first to last
    findings: list[Finding] = field(default_factory=list)
    clamped: list[Finding] = field(default_factory=list)
    capture: CaptureResult | None = None
    guard: GuardStatus | None = None
    coverage: list[SinkCoverage] = field(default_factory=list)
    # The attention and logits sinks of the measured rules (ZL003-ZL006, audit_kernels.py):
    # reported, never part of the verdict.
    kernel_hazards: list[KernelHazard] = field(default_factory=list)
    verdict: AuditVerdict = "not affected"
    reasons: list[str] = field(default_factory=list)

    def title(self) -> str:
        names = {"vllm": "vLLM", "sglang": "SGLang", "deep_gemm": "DeepGEMM"}
        return f"{names.get(self.name, self.name)} {self.version or ''}".strip()


@dataclass(slots=True)
class Audit:
    """The whole answer: the worst verdict over the engines found, with its reasons."""

    verdict: AuditVerdict
    reasons: list[str]
    gpu: Gpu
    environment: Environment
    engines: list[EngineAudit]
    vllm_args: str = ""

    @property
    def exposed(self) -> bool:
        return self.verdict == "exposed"


class AuditError(Exception):
    """Input the audit cannot use (a missing folder, bad --vllm-args): one line."""


# ------------------------------------------------------------------------ the audit


def audit(
    site_packages: Sequence[Path | str] | None = None,
    *,
    vllm_args: str = "",
    gpu: str = "auto",
    compress_ratios: Sequence[int] = (4,),
    environ: Mapping[str, str] | None = None,
) -> Audit:
    """Audit the serving stack installed in ``site_packages`` (default: this interpreter's).

    ``vllm_args`` is a ``vllm serve`` argument string for the capture check (vLLM's
    defaults when empty); ``gpu`` is ``sm90``, ``sm100`` or ``auto`` (nvidia-smi, else
    SM90 is assumed, the worst case); ``compress_ratios`` are the model's indexer compress
    ratios (DeepSeek-V4: 4); ``environ`` is the serving process's environment (default:
    this one), read for ``ZEROLINT_GUARD``, ``ZEROLINT_GUARD_OFF``, ``VLLM_PLUGINS`` and
    ``ZEROLINT_GUARD_SGLANG``.
    Raises AuditError on input it cannot use.
    """
    environ = os.environ if environ is None else environ
    if any(ratio < 1 for ratio in compress_ratios):
        raise AuditError(f"--compress-ratio must be >= 1, got {list(compress_ratios)}")
    folders = [Path(p) for p in site_packages] if site_packages else default_site_packages()
    try:
        env = find_environment(folders)
    except SitePackagesError as exc:
        raise AuditError(str(exc)) from None
    detected = detect_gpu(gpu, environ)
    ratios = tuple(compress_ratios)
    engines: list[EngineAudit] = []
    if env.vllm is not None:
        engines.append(_audit_vllm(env, detected, vllm_args, ratios, environ))
    if env.sglang is not None:
        engines.append(_audit_sglang(env, detected, ratios, environ))
    if not engines and env.pip_deep_gemm is not None:
        engines.append(_audit_deep_gemm_alone(env, detected, ratios))
    if not engines:
        where = ", ".join(str(p) for p in env.site_packages)
        reason = f"no vLLM, SGLang or DeepGEMM installed in {where}"
        return Audit("not affected", [reason], detected, env, [], vllm_args)
    worst = max(engines, key=lambda e: _SEVERITY[e.verdict])
    reasons = [
        f"{e.title()}: {r}" for e in engines if e.verdict == worst.verdict for r in e.reasons
    ]
    return Audit(worst.verdict, reasons, detected, env, engines, vllm_args)


def _audit_vllm(
    env: Environment,
    gpu: Gpu,
    vllm_args: str,
    ratios: tuple[int, ...],
    environ: Mapping[str, str],
) -> EngineAudit:
    assert env.vllm is not None
    dist = env.vllm.distribution
    engine = EngineAudit("vllm", dist.version if dist else None, env.vllm.path)
    engine.import_order = env.vllm_import_order
    chosen = env.vllm_deep_gemm()
    engine.kernel = _kernel(chosen) if chosen else None
    fallback = env.vllm_fallback_deep_gemm()
    engine.fallback = _kernel(fallback) if fallback else None
    engine.findings, engine.clamped = _zl001(env.vllm.path, ratios)
    engine.capture = _capture(vllm_args, gpu, ratios)
    engine.guard = guard_status(env, environ)
    engine.coverage = guard_coverage(env, engine, environ)
    _measured_kernels(env, engine)
    engine.verdict, engine.reasons = decide(engine, gpu, ratios)
    return engine


def _measured_kernels(env: Environment, engine: EngineAudit) -> None:
    """The measured attention and logits hazards (zerolint/audit_kernels.py)."""
    chosen = engine.kernel.deep_gemm if engine.kernel is not None else None
    engine.kernel_hazards = kernel_hazards(
        env, engine.name, engine.version, chosen, env.search_path
    )


def _audit_sglang(
    env: Environment, gpu: Gpu, ratios: tuple[int, ...], environ: Mapping[str, str]
) -> EngineAudit:
    assert env.sglang is not None
    dist = env.sglang.distribution
    # SGLang vendors no DeepGEMM: it imports the deep_gemm package (sgl-deep-gemm).
    engine = EngineAudit("sglang", dist.version if dist else None, env.sglang.path)
    engine.import_order = ("deep_gemm",)
    engine.kernel = _kernel(env.pip_deep_gemm) if env.pip_deep_gemm else None
    engine.findings, engine.clamped = _zl001(env.sglang.path, ratios)
    engine.guard = sglang_guard_status(env, environ)
    engine.coverage = guard_coverage(env, engine, environ)
    _measured_kernels(env, engine)
    engine.verdict, engine.reasons = decide(engine, gpu, ratios)
    return engine


def _audit_deep_gemm_alone(env: Environment, gpu: Gpu, ratios: tuple[int, ...]) -> EngineAudit:
    assert env.pip_deep_gemm is not None
    found = env.pip_deep_gemm
    version = found.distribution.version if found.distribution else found.version
    engine = EngineAudit("deep_gemm", version, found.path, kernel=_kernel(found))
    engine.verdict, engine.reasons = decide(engine, gpu, ratios)
    return engine


def _kernel(deep_gemm: DeepGemm) -> KernelCheck:
    header_path = find_scheduler_header(deep_gemm.path)
    if header_path is None:
        folder = deep_gemm.path / "include" / "deep_gemm" / "scheduler"
        header = HeaderCheck(
            str(folder), "unknown", "no paged-MQA scheduler header in this DeepGEMM"
        )
    else:
        try:
            header = check_header(header_path)
        except HeaderError as exc:
            header = HeaderCheck(str(header_path), "unknown", str(exc))
    hazards = [_hazard(deep_gemm, found, header) for found in recognizers()]
    return KernelCheck(deep_gemm, header, hazards)


def _hazard(deep_gemm: DeepGemm, found: Recognizer, zl001: HeaderCheck) -> HazardCheck:
    """One recognizer's verdict on a build; ZL001's is the header check already made."""
    path = found.find_header(deep_gemm.path)
    header = zl001 if found.hazard == ZL001 else found.check_package(deep_gemm.path)
    return HazardCheck(found.hazard, found.label, header, measurement(found.hazard, path))


def _zl001(package: Path, ratios: tuple[int, ...]) -> tuple[list[Finding], list[Finding]]:
    """ZL001 over the installed package: (unclamped call sites, call sites proved clamped)."""
    from zerolint.config import Settings
    from zerolint.engine import check_paths

    # Explicit settings: a pyproject.toml above site-packages is not the operator's intent.
    # An installed package's folders without an __init__.py are namespace packages, as
    # Python imports them (SGLang's `sglang/srt`): its imports are followed through them.
    settings = Settings(
        select=frozenset({"ZL001"}),
        compress_ratios=ratios,
        namespace_packages=(str(package),),
    )
    report = check_paths([package], settings)
    return list(report.findings), list(report.proved)


def _capture(vllm_args: str, gpu: Gpu, ratios: tuple[int, ...]) -> CaptureResult:
    from zerolint.capture import CaptureConfig, CaptureConfigError, analyze, parse_vllm_args
    from zerolint.smt import SolverGaveUp

    try:
        fields = parse_vllm_args(vllm_args) if vllm_args else {}
        arch = gpu.arch if gpu.arch in ("sm90", "sm100") else "sm90"
        return analyze(CaptureConfig(**{**fields, "gpu": arch, "compress_ratios": ratios}))
    except (CaptureConfigError, SolverGaveUp) as exc:
        raise AuditError(f"--vllm-args: {exc}") from None


# ------------------------------------------------------------------------ the verdict


def decide(engine: EngineAudit, gpu: Gpu, ratios: Sequence[int]) -> tuple[AuditVerdict, list[str]]:
    """The verdict for one engine and the reasons for it, most decisive first."""
    if gpu.arch != "sm90":
        why = f"GPU is {gpu.describe()}: the fault is in DeepGEMM's SM90 scheduler, not run here"
        return "not affected", [why]
    if engine.kernel is None:
        return "not affected", ["no DeepGEMM importable: the paged-MQA indexer cannot run"]
    if max(ratios, default=1) <= 1:
        return "not affected", ["no compress ratio > 1: no length is floor-divided to 0"]
    # The runtime guard protects only with its DeepGEMM clamp on (ZEROLINT_GUARD_OFF).
    guard_protects = engine.guard is not None and engine.guard.protects
    if engine.kernel.header.status == "guarded" or guard_protects:
        return "protected", _protected_reasons(engine, engine.kernel)
    kernel = _unguarded_reason(engine.kernel)
    if engine.name == "deep_gemm":
        return "exposed", [kernel, UNKNOWN_CALLERS]
    clamp_off = _clamp_off_reasons(engine)
    if not engine.findings and engine.clamped:
        return "protected", [_clamped_reason(engine), kernel, *clamp_off]
    if not engine.findings:
        return "not affected", [
            "no call of get_paged_mqa_logits_metadata in the serving code",
            kernel,
            *clamp_off,
        ]
    unclamped = f"code unclamped: {_unclamped_reason(engine)}"
    capture = engine.capture
    if capture is not None and not capture.exposed:
        quiet = f"no capture size and no runtime batch makes every length 0 ({capture.summary()})"
        return "not affected", [quiet, kernel, unclamped, *clamp_off]
    return "exposed", [kernel, unclamped, *_exposure_reasons(engine, gpu)]


def _protected_reasons(engine: EngineAudit, kernel: KernelCheck) -> list[str]:
    """By what (a guarded kernel, the runtime guard), and what is still unprotected."""
    guarded = kernel.header.status == "guarded"
    reasons = [f"kernel guarded: {_kernel_reason(kernel)}"] if guarded else []
    if engine.guard is not None and engine.guard.protects:
        reasons.append(f"runtime guard active: {engine.guard.reason}")
        if not guarded:
            reasons.append(f"kernel still unguarded: {_kernel_reason(kernel)}")
    reasons += _clamp_off_reasons(engine)
    if engine.findings:
        reasons.append(f"code still unclamped: {_unclamped_reason(engine)}")
    elif engine.clamped:
        reasons.append(_clamped_reason(engine))
    return reasons + _fallback_reasons(engine)


def _clamp_off_reasons(engine: EngineAudit) -> list[str]:
    """The runtime guard active with its DeepGEMM clamp turned off, said, or nothing."""
    guard = engine.guard
    if guard is not None and guard.active and guard.clamp_off:
        return [guard.clamp_off_reason()]
    return []


def _unguarded_reason(kernel: KernelCheck) -> str:
    if kernel.header.status == "unknown":
        return f"kernel guard not found, assuming unguarded: {_kernel_reason(kernel)}"
    return f"kernel unguarded: {_kernel_reason(kernel)}"


def _exposure_reasons(engine: EngineAudit, gpu: Gpu) -> list[str]:
    """What feeds the unguarded kernel all-zero lengths, and what does not stop it."""
    if engine.capture is not None:
        reasons = _capture_reasons(engine.capture)
    else:
        reasons = [NO_CAPTURE_MODEL]
    if engine.guard is not None and not engine.guard.active:
        reasons.append(f"runtime guard not active: {engine.guard.reason}")
    reasons += _clamp_off_reasons(engine)
    reasons += _fallback_reasons(engine)
    if gpu.assumed:
        reasons.append(f"GPU {gpu.describe()}")
    return reasons


def _kernel_reason(kernel: KernelCheck) -> str:
    header = kernel.header
    where = header.location() if header.status == "unguarded" else f"{Path(header.path).name}:"
    return f"{kernel.deep_gemm.label()}, {where} {header.reason}"


def _unclamped_reason(engine: EngineAudit) -> str:
    return "; ".join(_finding_text(engine, f) for f in engine.findings)


def _clamped_reason(engine: EngineAudit) -> str:
    sites = ", ".join(_site(engine, f) for f in engine.clamped)
    return f"the serving code clamps the lengths before the kernel ({sites})"


def _finding_text(engine: EngineAudit, finding: Finding) -> str:
    text = f"{_site(engine, finding)} {finding.message}"
    verdict = finding.verdict
    if verdict is not None and verdict.status == "unsafe" and verdict.witness:
        text += f" (witness {verdict.witness_text()})"
    return text


def _site(engine: EngineAudit, finding: Finding) -> str:
    return f"{_relative(engine, finding.path)}:{finding.line}"


def _relative(engine: EngineAudit, path: str) -> str:
    """``vllm/v1/...``: the path as an import would name it, from its site-packages."""
    if engine.path is None:
        return path
    for found, package in (
        (Path(path), engine.path),
        (Path(path).resolve(), engine.path.resolve()),
    ):
        try:
            return (Path(engine.path.name) / found.relative_to(package)).as_posix()
        except ValueError:
            continue
    return path


def _capture_reasons(capture: CaptureResult) -> list[str]:
    reasons = []
    sizes = capture.hazardous_sizes
    if sizes:
        reasons.append(
            f"CUDA-graph capture faults at {len(sizes)} of {len(capture.rows)} sizes: "
            + ", ".join(map(str, sizes))
        )
    for case in capture.runtime:
        if case.exposed and case.verdict.status != "safe":
            witness = case.verdict.witness_text() or case.verdict.reason
            reasons.append(f"runtime: {case.name} ({case.verdict.status}: {witness})")
    return reasons


def _fallback_reasons(engine: EngineAudit) -> list[str]:
    if engine.fallback is None or engine.kernel is None:
        return []
    preferred, fallback = engine.kernel.deep_gemm.label(), engine.fallback.describe()
    return [f"if {preferred} fails to import, vLLM falls back to {fallback}"]


# ------------------------------------------------------------------------ the runtime guard


def guard_status(env: Environment, environ: Mapping[str, str]) -> GuardStatus:
    """Would vLLM load and run the runtime guard's plugin in this environment?

    Needs a ``vllm.general_plugins`` entry point into ``runtime_guard`` whose package is on
    the path, ``ZEROLINT_GUARD`` not off, and ``VLLM_PLUGINS`` (vLLM's allow-list, split
    on commas as vllm/envs.py does) unset or naming the plugin.
    """
    plugins = [p for p in env.plugins if _is_guard(p)]
    if not plugins:
        return GuardStatus(False, "no vllm.general_plugins entry point into runtime_guard")
    plugin = plugins[0]
    origin = f"entry point {plugin.name} = {plugin.value} ({plugin.distribution.label()})"
    if module_on_path(GUARD_PACKAGE, env.search_path) is None:
        return GuardStatus(False, f"{origin}, but runtime_guard is not installed", plugin)
    switch = environ.get(GUARD_ENV)
    if switch is not None and switch.strip().lower() in GUARD_OFF_VALUES:
        return GuardStatus(False, f"{origin}, disabled by {GUARD_ENV}={switch}", plugin)
    allowed = environ.get("VLLM_PLUGINS")
    if allowed is not None and plugin.name not in allowed.split(","):
        return GuardStatus(
            False, f"{origin}, not in VLLM_PLUGINS={allowed} (vLLM loads only those)", plugin
        )
    return GuardStatus(True, origin, plugin, _clamp_off(environ))


def sglang_guard_status(env: Environment, environ: Mapping[str, str]) -> GuardStatus:
    """Would an SGLang process of this environment install the guard at start-up
    (``zerolint_guard.pth`` on the path and ``ZEROLINT_GUARD_SGLANG`` set, not off)?"""
    pth = next(
        (folder / PTH_NAME for folder in env.search_path if (folder / PTH_NAME).is_file()), None
    )
    if pth is None:
        return GuardStatus(False, f"no {PTH_NAME} on the path (zerolint's wheel installs it)")
    if module_on_path(GUARD_PACKAGE, env.search_path) is None:
        return GuardStatus(False, f"{pth.name} found, but runtime_guard is not installed")
    value = environ.get(SGLANG_GUARD_ENV, "")
    if not value.strip() or value.strip().lower() in GUARD_OFF_VALUES:
        return GuardStatus(False, f"{pth.name} found, {SGLANG_GUARD_ENV} not set")
    switch = environ.get(GUARD_ENV)
    if switch is not None and switch.strip().lower() in GUARD_OFF_VALUES:
        return GuardStatus(False, f"{pth.name} found, disabled by {GUARD_ENV}={switch}")
    origin = f"{pth.name} found, {SGLANG_GUARD_ENV}={value}"
    return GuardStatus(True, origin, None, _clamp_off(environ))


def _clamp_off(environ: Mapping[str, str]) -> str:
    """``ZEROLINT_GUARD_OFF``'s value when it turns off ZL001's sink, as install() reads it
    (``runtime_guard.patch.disabled_sinks``); else ""."""
    if ZL001_SINK in disabled_sinks(environ):
        return environ.get(OFF_VAR, "")
    return ""


def _module_file(module: str, search: Sequence[Path]) -> Path | None:
    """The file ``import module`` would load, found statically (a .py or a package)."""
    parts = module.split(".")
    for folder in search:
        base = folder.joinpath(*parts)
        for candidate in (base / "__init__.py", base.with_suffix(".py")):
            if candidate.is_file():
                return candidate
    return None


def guard_coverage(
    env: Environment, engine: EngineAudit, environ: Mapping[str, str]
) -> list[SinkCoverage]:
    """For each guarded sink (``runtime_guard.sinks``) the engine can import, whether the
    installed guard covers it: the guard active for this engine (vLLM's plugin, SGLang's
    switch) and the sink not in ``ZEROLINT_GUARD_OFF``. Sinks with no guard are listed as
    not covered, saying why."""
    status = engine.guard  # set by _audit_vllm / _audit_sglang before this runs
    off = disabled_sinks(environ)
    rows = []
    for sink in SINKS:
        for module in sink.modules:
            mine = module.startswith(f"{engine.name}.") or module in engine.import_order
            path = _module_file(module, env.search_path) if mine else None
            if path is None:
                continue
            if status is None or not status.active:
                covered, reason = (
                    False,
                    f"runtime guard not active: {status.reason if status else 'none'}",
                )
            elif sink.name in off:
                covered, reason = (
                    False,
                    f"turned off by {OFF_VAR}={environ.get(OFF_VAR, '')}",
                )
            else:
                covered, reason = True, status.reason
            rows.append(
                SinkCoverage(
                    sink.name, sink.rule, module, str(path), sink.sanitizer, covered, reason
                )
            )
    if engine.name == "vllm":
        for what, why in NOT_GUARDED:
            path = _module_file("vllm.v1.attention.ops.flashmla", env.search_path)
            if path is not None:
                rows.append(
                    SinkCoverage(
                        "", what, "vllm.v1.attention.ops.flashmla", str(path), "none", False, why
                    )
                )
    return rows


def _is_guard(plugin: Plugin) -> bool:
    return plugin.module == GUARD_PACKAGE or plugin.module.startswith(GUARD_PACKAGE + ".")


# ------------------------------------------------------------------------ the GPU


def detect_gpu(choice: str, environ: Mapping[str, str] | None = None) -> Gpu:
    """An architecture as given (``sm90``, ``sm100``, or one that does not run the SM90
    scheduler: ``sm80``, ``sm89``, ``sm120``); ``auto`` asks nvidia-smi (compute capability
    9.x is ``sm90``, 12.x ``sm120``, 10.x and up otherwise ``sm100``), else assumes SM90
    (the worst)."""
    if choice in ("sm90", "sm100"):
        return Gpu(choice, "--gpu")
    if choice in UNAFFECTED_GPUS:
        return Gpu(choice, f"--gpu: {UNAFFECTED_GPUS[choice]}")
    if choice != "auto":
        raise AuditError(f"--gpu: expected one of {', '.join(GPU_CHOICES)}, got {choice!r}")
    environ = os.environ if environ is None else environ
    smi = shutil.which("nvidia-smi", path=environ.get("PATH"))
    if smi is None:
        return Gpu("sm90", "no nvidia-smi on PATH; pass --gpu", assumed=True)
    try:
        done = subprocess.run(
            [smi, "--query-gpu=index,uuid,name,compute_cap", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return Gpu("sm90", f"nvidia-smi failed ({exc}); pass --gpu", assumed=True)
    gpus = _visible(_parse_smi(done.stdout), environ.get("CUDA_VISIBLE_DEVICES"))
    if done.returncode != 0 or not gpus:
        return Gpu("sm90", "nvidia-smi listed no visible GPU; pass --gpu", assumed=True)
    names = ", ".join(sorted({f"{name} ({cap})" for _, _, name, cap in gpus}))
    majors = {cap.split(".", 1)[0] for *_, cap in gpus}
    if "9" in majors:
        return Gpu("sm90", f"nvidia-smi: {names}")
    if majors == {"12"}:  # Blackwell workstation (RTX PRO 6000, RTX 50): not the SM100 family
        return Gpu("sm120", f"nvidia-smi: {names}")
    if all(m.isdigit() and int(m) >= 10 for m in majors):
        return Gpu("sm100", f"nvidia-smi: {names}")
    return Gpu("other", f"nvidia-smi: {names}")


def _parse_smi(text: str) -> list[tuple[str, str, str, str]]:
    rows = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 4 and parts[3]:
            rows.append((parts[0], parts[1], parts[2], parts[3]))
    return rows


def _visible(
    gpus: list[tuple[str, str, str, str]], visible: str | None
) -> list[tuple[str, str, str, str]]:
    """The GPUs CUDA_VISIBLE_DEVICES lets a process see (indices or UUID prefixes)."""
    if visible is None:
        return gpus
    chosen = []
    for item in (v.strip() for v in visible.split(",")):
        if not item:
            continue
        for gpu in gpus:
            index, uuid = gpu[0], gpu[1]
            if item == index or (not item.isdigit() and uuid.startswith(item)):
                chosen.append(gpu)
    return chosen


# ------------------------------------------------------------------------ output


def render_text(result: Audit) -> str:
    """The human report: each engine's facts, then the verdict and its reasons."""
    out = [
        f"site-packages: {', '.join(str(p) for p in result.environment.site_packages)}",
        f"GPU: {result.gpu.describe()}",
    ]
    out += [f"note: {note}" for note in result.environment.notes]
    for engine in result.engines:
        out.append("")
        out.append(f"{engine.title()}  ({engine.path})")
        out.extend("  " + line for line in _engine_lines(engine))
        out.append(f"  verdict: {engine.verdict}")
    builds = _builds(result)
    if builds:
        out.append("")
        out.append("hazards by DeepGEMM build (SM90 scheduler header; the verdict is ZL001's):")
        for kernel in builds:
            found = ", ".join(f"{h.hazard} {h.status}" for h in kernel.hazards)
            out.append(f"  {kernel.deep_gemm.label()}: {found}")
    out.append("")
    out.append(f"verdict: {result.verdict}")
    out.extend(f"  - {reason}" for reason in result.reasons)
    return "\n".join(out) + "\n"


def _builds(result: Audit) -> list[KernelCheck]:
    """Every DeepGEMM build the engines would import or fall back to, each once."""
    seen: dict[Path, KernelCheck] = {}
    for engine in result.engines:
        for kernel in (engine.kernel, engine.fallback):
            if kernel is not None:
                seen.setdefault(kernel.deep_gemm.path, kernel)
    return list(seen.values())


def _engine_lines(engine: EngineAudit) -> list[str]:
    lines = []
    if engine.import_order:
        lines.append(f"imports DeepGEMM from: {', then '.join(engine.import_order)}")
    if engine.kernel is None:
        lines.append("DeepGEMM: none importable")
    else:
        lines += _kernel_lines("DeepGEMM", engine.kernel)
    if engine.fallback is not None:
        lines += _kernel_lines("fallback", engine.fallback)
    if engine.name != "deep_gemm":
        if engine.findings:
            lines += [f"ZL001: {_finding_text(engine, f)}" for f in engine.findings]
        else:
            lines.append("ZL001: no unclamped call site")
        lines += [f"clamped: {_site(engine, f)}" for f in engine.clamped]
    if engine.capture is not None:
        lines.append(f"capture: {engine.capture.summary()}")
        if engine.capture.hazardous_sizes:
            lines.append(
                "  hazardous sizes: " + ", ".join(map(str, engine.capture.hazardous_sizes))
            )
    if engine.guard is not None:
        state = "active" if engine.guard.active else "not active"
        line = f"runtime guard: {state}: {engine.guard.reason}"
        if engine.guard.active and engine.guard.clamp_off:
            line += f"; {OFF_VAR}={engine.guard.clamp_off} turns off its DeepGEMM metadata clamp"
        lines.append(line)
    for row in engine.coverage:
        name = row.sink or "no guard"
        state = "covered" if row.covered else "NOT covered"
        lines.append(f"guard coverage: {name} ({row.rule}) in {row.module}: {state}: {row.reason}")
    if engine.kernel_hazards:
        lines.append(
            "measured attention and logits hazards (zero-length probe; not in the verdict):"
        )
        lines += [f"  {h.describe()}" for h in engine.kernel_hazards]
    return lines


def _kernel_lines(label: str, kernel: KernelCheck) -> list[str]:
    header = kernel.header
    lines = [
        f"{label}: {kernel.deep_gemm.label()} at {kernel.deep_gemm.path}",
        f"  header: {header.path}",
        f"  kernel: {header.status}: {header.reason}",
    ]
    for evidence in (*header.hazards, *header.guards):
        lines.append(f"    {Path(header.path).name}:{evidence.line}  {evidence.code}")
    if kernel.hazards:
        lines.append("  hazards:")
    for hazard in kernel.hazards:
        lines.append(f"    {hazard.describe()}")
        if hazard.hazard == ZL001:  # its evidence is printed above
            continue
        name = Path(hazard.header.path).name
        lines.append(f"      {hazard.header.reason}")
        for evidence in (*hazard.header.hazards, *hazard.header.guards):
            lines.append(f"      {name}:{evidence.line}  {evidence.code}")
    return lines


def to_dict(result: Audit) -> dict[str, Any]:
    """The JSON document: the same facts as the text, keyed."""
    env = result.environment
    return {
        "verdict": result.verdict,
        "reasons": result.reasons,
        "gpu": {
            "arch": result.gpu.arch,
            "source": result.gpu.source,
            "assumed": result.gpu.assumed,
        },
        "site_packages": [str(p) for p in env.site_packages],
        "vllm_args": result.vllm_args,
        "notes": env.notes,
        "packages": {
            name: {"version": d.version, "location": str(d.location)}
            for name, d in sorted(env.distributions.items())
            if name in ("vllm", "sglang", "sgl-deep-gemm", "deep-gemm", "zerolint")
        },
        "engines": [_engine_dict(e) for e in result.engines],
        "builds": [
            {
                "deep_gemm": kernel.deep_gemm.label(),
                "path": str(kernel.deep_gemm.path),
                "hazards": {h.hazard: h.status for h in kernel.hazards},
            }
            for kernel in _builds(result)
        ],
    }


def _engine_dict(engine: EngineAudit) -> dict[str, Any]:
    capture = engine.capture
    return {
        "name": engine.name,
        "version": engine.version,
        "path": str(engine.path) if engine.path else None,
        "verdict": engine.verdict,
        "reasons": engine.reasons,
        "deep_gemm_import_order": list(engine.import_order),
        "deep_gemm": _kernel_dict(engine.kernel),
        "fallback_deep_gemm": _kernel_dict(engine.fallback),
        "unclamped": [_finding_dict(engine, f) for f in engine.findings],
        "clamped": [_finding_dict(engine, f) for f in engine.clamped],
        "capture": None
        if capture is None
        else {
            "summary": capture.summary(),
            "sizes": [row.size for row in capture.rows],
            "hazardous_sizes": capture.hazardous_sizes,
            "runtime": [
                {
                    "case": c.name,
                    "status": c.verdict.status,
                    "exposed": c.exposed,
                    "witness": c.verdict.witness,
                    "note": c.note,
                }
                for c in capture.runtime
            ],
            "exposed": capture.exposed,
        },
        "runtime_guard": None
        if engine.guard is None
        else {
            "active": engine.guard.active,
            "protects": engine.guard.protects,
            "reason": engine.guard.reason,
            "entry_point": engine.guard.plugin.value if engine.guard.plugin else None,
        },
        "guard_coverage": [
            {
                "sink": row.sink or None,
                "rule": row.rule,
                "module": row.module,
                "path": row.path,
                "sanitizer": row.sanitizer,
                "covered": row.covered,
                "reason": row.reason,
            }
            for row in engine.coverage
        ],
        "kernel_hazards": [hazard_dict(h) for h in engine.kernel_hazards],
    }


def _kernel_dict(kernel: KernelCheck | None) -> dict[str, Any] | None:
    if kernel is None:
        return None
    dg = kernel.deep_gemm
    return {
        "origin": dg.origin,
        "version": dg.version,
        "path": str(dg.path),
        "distribution": dg.distribution.label() if dg.distribution else None,
        "header": kernel.header.to_dict(),
        "hazards": [_hazard_dict(h) for h in kernel.hazards],
    }


def _hazard_dict(hazard: HazardCheck) -> dict[str, Any]:
    run = hazard.measured
    return {
        "hazard": hazard.hazard,
        "input": hazard.label,
        "status": hazard.status,
        "header": hazard.header.to_dict(),
        "measured": None
        if run is None
        else {
            "outcome": run.outcome,
            "detail": run.detail,
            "build": run.build,
            "header_sha256": run.header_sha256,
            "source": run.source,
        },
    }


def _finding_dict(engine: EngineAudit, finding: Finding) -> dict[str, Any]:
    verdict = finding.verdict
    return {
        "path": _relative(engine, finding.path),
        "line": finding.line,
        "col": finding.col,
        "code": finding.code,
        "message": finding.message,
        "verdict": None
        if verdict is None
        else {
            "status": verdict.status,
            "witness": verdict.witness,
            "reason": verdict.reason,
        },
    }


# ------------------------------------------------------------------------ command line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--site-packages",
        action="append",
        type=Path,
        metavar="DIR",
        default=None,
        help="a site-packages folder to audit, searched in the order given (repeatable; "
        "default: this interpreter's)",
    )
    parser.add_argument(
        "--vllm-args",
        metavar="ARGS",
        default="",
        help="the `vllm serve` argument string, for the capture check (default: vLLM's defaults)",
    )
    parser.add_argument(
        "--gpu",
        choices=GPU_CHOICES,
        default="auto",
        help="the GPU the server runs on (auto: nvidia-smi, else assume sm90)",
    )
    parser.add_argument(
        "--compress-ratio",
        type=int,
        action="append",
        metavar="N",
        help="a compress ratio of the model's indexer layers (repeatable; default 4, DeepSeek-V4)",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text")


def run(args: argparse.Namespace) -> int:
    """Print the audit; exit 1 when the stack is exposed."""
    from zerolint.cli import EXIT_CLEAN, EXIT_FINDINGS, UsageError

    try:
        result = audit(
            args.site_packages,
            vllm_args=args.vllm_args,
            gpu=args.gpu,
            compress_ratios=tuple(args.compress_ratio or (4,)),
        )
    except AuditError as exc:
        raise UsageError(f"audit: {exc}") from None
    if args.format == "json":
        sys.stdout.write(json.dumps(to_dict(result), indent=2) + "\n")
    else:
        sys.stdout.write(render_text(result))
    return EXIT_FINDINGS if result.exposed else EXIT_CLEAN
