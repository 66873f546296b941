"""The attention and logits hazards of an installed serving stack, for ``zerolint audit``.

The rules whose sinks name their zero-length probe measurements (``measured`` in
``rules/ZL003.toml`` ... ``ZL006.toml``) describe kernels the audit cannot read a header
of: vLLM's Triton MLA decode, FlashMLA's compiled decode, DeepGEMM's compiled logits
kernel. For each such sink the engine can import, the audit says which build it would run
and whether that build was **measured** to fail (``exposed``, with the measured outcome) or
was not measured at all (``unknown``). A build not measured is never reported as
protected: the probe ran vLLM 0.26.0's builds only (docs/zero-length-probe.md).

A build is matched by the kind of its measurement key: ``vLLM X`` is the vLLM package
(its vendored FlashMLA and Triton kernels); ``DeepGEMM X`` is the DeepGEMM the engine
imports, by its version string. The rules' call sites are not searched here (a whole-tree
check of four more rules would multiply the audit's time): ``zerolint check --select
ZL003,ZL004,ZL005,ZL006`` over the package lists them. These hazards do not change the
audit's verdict, which stays ZL001's (docs/audit.md).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from zerolint.rules import Rule, SinkSpec, load_rules

if TYPE_CHECKING:
    from zerolint.installed import DeepGemm, Environment

Status = Literal["exposed", "unknown"]


@dataclass(frozen=True, slots=True)
class KernelHazard:
    """One measured sink an engine can import, and what is known of the build it runs."""

    rule: str
    sink: str  # module.function, as the engine imports it
    path: str  # the module's file
    build: str  # what the engine would run, e.g. "vLLM 0.33.0"
    status: Status
    detail: str

    def describe(self) -> str:
        return f"{self.rule} {self.sink}: {self.build}: {self.status}: {self.detail}"


def measured_rules() -> list[Rule]:
    """The shipped rules with at least one sink that names its measurements."""
    return [r for r in load_rules() if any(s.measured for s in r.sinks)]


def kernel_hazards(
    env: Environment,
    engine_name: str,
    version: str | None,
    deep_gemm: DeepGemm | None,
    search: Sequence[Path],
) -> list[KernelHazard]:
    """Every measured sink of the shipped rules that ``engine_name`` can import."""
    out = []
    for rule in measured_rules():
        for spec in rule.sinks:
            if not spec.measured:
                continue
            found = _importable(spec, engine_name, search)
            if found is None:
                continue
            module, path = found
            build = _build(spec, engine_name, version, deep_gemm)
            status, detail = _status(rule, spec, build)
            out.append(
                KernelHazard(
                    rule.code, f"{module}.{spec.function}", str(path), build, status, detail
                )
            )
    return out


def _importable(spec: SinkSpec, engine: str, search: Sequence[Path]) -> tuple[str, Path] | None:
    """The first of the sink's modules that belongs to the engine (or is DeepGEMM, which
    every engine imports) and whose file is on the search path."""
    from zerolint.audit import _module_file

    for module in spec.modules:
        top = module.split(".")[0]
        if top != engine and top != "deep_gemm":
            continue
        path = _module_file(module, search)
        if path is not None:
            return module, path
    return None


def _build(spec: SinkSpec, engine: str, version: str | None, deep_gemm: DeepGemm | None) -> str:
    """What the engine runs for this sink, in the words of the measurement keys."""
    kinds = {key.split(" ", 1)[0] for key, _ in spec.measured}
    if "DeepGEMM" in kinds:
        if deep_gemm is None:
            return "DeepGEMM (none importable)"
        return deep_gemm.label()
    names = {"vllm": "vLLM", "sglang": "SGLang"}
    return f"{names.get(engine, engine)} {version or 'unknown version'}"


def _status(rule: Rule, spec: SinkSpec, build: str) -> tuple[Status, str]:
    measured = dict(spec.measured)
    outcome = rule.predicate_for(spec).text()
    for key, kernel in measured.items():
        if build == key or build.startswith(key + " "):
            return "exposed", f"measured {outcome} ({kernel}, docs/probe-report.json)"
    keys = ", ".join(sorted(measured))
    return "unknown", f"this build was not measured (the probe measured {keys}: {outcome})"


def hazard_dict(hazard: KernelHazard) -> dict[str, Any]:
    return dataclasses.asdict(hazard)
