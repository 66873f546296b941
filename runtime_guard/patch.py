"""install() / uninstall(): put the guards in front of the hazardous kernels in a running process.

Every sink of ``runtime_guard.sinks`` is guarded the same way; for DeepGEMM's metadata
scheduler (ZL001), what gets replaced is DeepGEMM's own ``get_paged_mqa_logits_metadata``
object, wherever a module global holds it: the ``deep_gemm`` and ``vllm.third_party.deep_gemm`` packages, their
``_C`` extension, and vLLM's lazily resolved
``vllm.utils.deep_gemm._get_paged_mqa_logits_metadata_impl``. vLLM's own wrapper ``vllm.utils.deep_gemm.get_paged_mqa_logits_metadata`` is left alone: it
calls that impl, so the indexer, which imported the wrapper by name, is clamped exactly once
without being touched. A DeepGEMM package imported after install() is patched as soon as it
finishes executing, by a finder on ``sys.meta_path`` that watches only the modules that define a sink. The
attention sinks (vLLM's Triton MLA decode, FlashMLA's dense decode) and DeepGEMM's paged
logits are replaced the same way, each with the sanitizer ``runtime_guard.attention`` gives it.
"""

from __future__ import annotations

import os
import sys
import threading
import types

from runtime_guard.clamp import is_guarded, log
from runtime_guard.sinks import BY_NAME, SINKS, Sink, module_names, sinks_of

TYPE_CHECKING = False  # not typing's: see clamp.py
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping
    from typing import Any

ENV_VAR = "ZEROLINT_GUARD"
OFF_VAR = "ZEROLINT_GUARD_OFF"
"""Comma-separated sink names (``runtime_guard.sinks``) whose guard stays off, or ``all``."""
OFF_VALUES = frozenset(
    {"0", "false", "f", "no", "n", "off", "disable", "disabled", "none", "never", "skip"}
)
"""Values of ``ZEROLINT_GUARD`` that turn the guard off (after strip() and lower())."""
ON_VALUES = frozenset({"", "1", "true", "t", "yes", "y", "on", "enable", "enabled", "clamp"})
"""Values that leave it on; ``clamp`` also keeps the clamp out of the scheduler."""
_OFF_VALUES = OFF_VALUES  # the name zerolint's audit has read

_WATCHED = module_names()
_lock = threading.RLock()
_finder: _DeepGemmFinder | None = None
# id(original) -> (original, its guard); the tuple keeps both alive while installed.
_guards: dict[int, tuple[Callable[..., Any], Callable[..., Any]]] = {}


def guard_enabled() -> bool:
    """False when ``ZEROLINT_GUARD`` is one of ``OFF_VALUES`` (``0``, ``false``, ``no``,
    ``off``, ``disabled``, ...), in any case and with surrounding spaces. Any other value
    leaves the guard on; one that is in neither list is logged as a warning by install()."""
    return _switch() not in OFF_VALUES


def _switch() -> str:
    return os.environ.get(ENV_VAR, "").strip().lower()


def disabled_sinks(environ: Mapping[str, str] | None = None) -> frozenset[str]:
    """The sinks ``ZEROLINT_GUARD_OFF`` turns off (names of ``runtime_guard.sinks``, any
    case, comma- or space-separated; ``all`` is every sink), read from ``environ`` (default:
    this process's). Unknown names are logged as a warning by install() and ignored."""
    raw = (os.environ if environ is None else environ).get(OFF_VAR, "")
    raw = raw.replace(",", " ").lower().split()
    if "all" in raw:
        return frozenset(BY_NAME)
    return frozenset(name for name in raw if name in BY_NAME)


def sink_enabled(name: str) -> bool:
    """Whether the guard of sink ``name`` is on: ``ZEROLINT_GUARD`` not off and ``name``
    not in ``ZEROLINT_GUARD_OFF``."""
    return guard_enabled() and name not in disabled_sinks()


def fused_enabled() -> bool:
    """False when ``ZEROLINT_GUARD=clamp``: always a clamp kernel in front of DeepGEMM, even
    where the clamp could be fused into the scheduler (``runtime_guard.fused``)."""
    return os.environ.get(ENV_VAR, "").strip().lower() != "clamp"


def is_installed() -> bool:
    """Whether install() is in effect in this process."""
    return _finder is not None


def install() -> bool:
    """Guard every sink of ``runtime_guard.sinks`` in this process.

    Patches every module global that holds a loaded sink's function and every sink module
    imported later; for DeepGEMM's ``get_paged_mqa_logits_metadata`` that is the clamp. For DeepGEMM 2.6.1 the guard fuses the clamp into its own copy of the SM90
    scheduler (``runtime_guard.fused``) unless ``ZEROLINT_GUARD=clamp``. Idempotent and
    thread-safe; logs one line (logger ``runtime_guard``) when it acts, naming only the sinks
    it guards (the clamp only while ``deep_gemm_metadata`` is on). Returns False, doing
    nothing but logging why, when ``ZEROLINT_GUARD`` turns it off (``guard_enabled``),
    ``ZEROLINT_GUARD_OFF`` turns every sink off, or torch cannot be imported. Sinks named in
    ``ZEROLINT_GUARD_OFF`` are left alone, and one INFO line names them.
    """
    global _finder
    if not guard_enabled():
        log(
            "info",
            "runtime_guard: turned off by %s=%s, DeepGEMM and every other sink left unguarded",
            ENV_VAR,
            os.environ.get(ENV_VAR, ""),
        )
        return False
    unknown = sorted(
        set(os.environ.get(OFF_VAR, "").replace(",", " ").lower().split()) - set(BY_NAME) - {"all"}
    )
    if unknown:
        log(
            "warning",
            "runtime_guard: %s names unknown sinks %s (known: %s); ignored",
            OFF_VAR,
            ", ".join(unknown),
            ", ".join(BY_NAME),
        )
    off = disabled_sinks()
    on = [s for s in SINKS if s.name not in off]
    if not on:
        log(
            "info",
            "runtime_guard: turned off by %s=%s for every sink (%s), nothing left to guard",
            OFF_VAR,
            os.environ.get(OFF_VAR, ""),
            ", ".join(s.name for s in SINKS),
        )
        return False
    if off:
        log(
            "info",
            "runtime_guard: turned off by %s for %s",
            OFF_VAR,
            ", ".join(s.name for s in SINKS if s.name in off),
        )
    if _switch() not in ON_VALUES:
        log(
            "warning",
            "runtime_guard: %s=%r is not a known value (off: %s); the guard stays on",
            ENV_VAR,
            os.environ.get(ENV_VAR, ""),
            ", ".join(sorted(OFF_VALUES)),
        )
    if not _torch_importable():
        log(
            "warning",
            "runtime_guard: PyTorch cannot be imported in this process; DeepGEMM (which "
            "needs it) is left unguarded",
        )
        return False
    with _lock:
        if _finder is not None:
            return True
        _finder = _DeepGemmFinder()
        sys.meta_path.insert(0, _finder)
        guarded = _guard_loaded_providers()
        replaced = _replace_everywhere(_by_id(_guards.values()))
    # Only what is guarded: the clamp only while its sink is on, the modules of the sinks on.
    clamp = "deep_gemm_metadata" not in off
    log(
        "info",
        "runtime_guard: %sguarding %s (guarded now: %s; %d module globals replaced; later "
        "imports of %s are guarded too)",
        "clamping DeepGEMM get_paged_mqa_logits_metadata context_lens to >= 1 and "
        if clamp
        else "",
        ", ".join(s.name for s in on),
        ", ".join(guarded) or "none loaded yet",
        replaced,
        " and ".join(sorted({name for s in on for name in s.modules})),
    )
    return True


def _torch_importable() -> bool:
    if "torch" in sys.modules:
        return True
    import importlib.util

    try:
        return importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):
        return False


def uninstall() -> bool:
    """Undo install(): every global the guard replaced holds the original again.

    Returns False when the guard was not installed.
    """
    global _finder
    with _lock:
        if _finder is None:
            return False
        sys.meta_path[:] = [f for f in sys.meta_path if f is not _finder]
        _finder = None
        restored = _replace_everywhere(_by_id((g, o) for o, g in _guards.values()))
        _guards.clear()
    log("info", "runtime_guard: guards removed (%d module globals restored)", restored)
    return True


def _guard_loaded_providers() -> list[str]:
    """Make a guard for each sink function of each module already imported; return the
    ``module.attribute`` names guarded."""
    names = []
    for name in sorted(module_names()):
        names += _guard_provider(sys.modules.get(name))
    return names


def _guard_provider(module: types.ModuleType | None) -> list[str]:
    """Make a guard for each enabled sink function ``module`` defines; their names."""
    if module is None:
        return []
    made = []
    off = disabled_sinks()
    for sink in sinks_of(module.__name__):
        if sink.name in off:
            continue
        for attribute in sink.attributes:
            function = getattr(module, attribute, None)
            if function is None or is_guarded(function):
                continue
            if id(function) not in _guards:
                _guards[id(function)] = (function, _make_guard(sink, function, module))
            made.append(f"{module.__name__}.{attribute}")
    return made


def _make_guard(sink: Sink, function: Any, module: types.ModuleType) -> Any:
    import importlib

    module_name, _, factory_name = sink.factory.partition(":")
    factory = getattr(importlib.import_module(module_name), factory_name)
    if sink.name == "deep_gemm_metadata":
        return factory(function, fused=_fusable(module))
    return factory(function)


def covered(function: object) -> bool:
    """Whether ``function`` is a guard install() put in place (for ``zerolint audit``)."""
    return is_guarded(function) and any(g is function for _, g in _guards.values())


def _fusable(module: types.ModuleType) -> bool:
    """Whether ``module`` is a DeepGEMM whose scheduler ``runtime_guard.fused`` reproduces."""
    from runtime_guard.fused import DEEP_GEMM_VERSIONS

    return fused_enabled() and getattr(module, "__version__", None) in DEEP_GEMM_VERSIONS


def _on_provider_imported(module: types.ModuleType) -> None:
    """Called by the finder's loader once a module that defines a sink has executed."""
    with _lock:
        if _finder is None:
            return
        names = _guard_provider(module)
        if not names:
            return
        pairs = [
            _guards[id(getattr(module, name.rpartition(".")[2]))]
            for name in names
            if id(getattr(module, name.rpartition(".")[2])) in _guards
        ]
        replaced = _replace_everywhere(_by_id(pairs))
    log(
        "info",
        "runtime_guard: guarded %s on import (%d module globals replaced)",
        ", ".join(names),
        replaced,
    )


def _by_id(pairs: Iterable[tuple[object, object]]) -> dict[int, tuple[object, object]]:
    return {id(old): (old, new) for old, new in pairs}


def _replace_everywhere(replacements: dict[int, tuple[object, object]]) -> int:
    """In every loaded module, swap each global that *is* an ``old`` for its ``new``."""
    count = 0
    for namespace in _module_namespaces():
        for key, value in list(namespace.items()):
            pair = replacements.get(id(value))
            if pair is not None and pair[0] is value:
                namespace[key] = pair[1]
                count += 1
    return count


def _module_namespaces() -> Iterator[dict[str, Any]]:
    for module in list(sys.modules.values()):
        if isinstance(module, types.ModuleType):
            # object.__getattribute__ so that lazily loaded modules are not forced to load.
            namespace = object.__getattribute__(module, "__dict__")
            if isinstance(namespace, dict):
                yield namespace


class _DeepGemmFinder:
    """A meta-path finder that hands the modules defining a sink a loader that guards them."""

    def __init__(self) -> None:
        self._searching = threading.local()

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname not in _WATCHED or getattr(self._searching, "active", False):
            return None
        self._searching.active = True  # another finder may call find_spec on the path again
        try:
            spec = self._spec_from_other_finders(fullname, path, target)
        finally:
            self._searching.active = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        spec.loader = _GuardingLoader(spec.loader)
        return spec

    def _spec_from_other_finders(self, fullname: str, path: Any, target: Any) -> Any:
        for finder in list(sys.meta_path):
            find_spec = getattr(finder, "find_spec", None)
            if finder is self or find_spec is None:
                continue
            spec = find_spec(fullname, path, target)
            if spec is not None:
                return spec
        return None


class _GuardingLoader:
    """Delegates to the real loader; guards the module once it has executed."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        # Code that inspects module.__loader__ after import sees the real loader.
        spec = getattr(module, "__spec__", None)
        if spec is not None and spec.loader is self:
            spec.loader = self._loader
        if getattr(module, "__loader__", None) is self:
            module.__loader__ = self._loader
        self._loader.exec_module(module)
        _on_provider_imported(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)
