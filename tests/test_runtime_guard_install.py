"""install() / uninstall() on fake module trees shaped like DeepGEMM and vLLM 0.27.1.

The trees live in tests/runtime_guard_fixtures (see its README). Their "kernel" is the
reference model, so an unguarded all-zero batch of 32 raises the illegal-address error,
and a guarded one returns the schedule of the clamped lengths.
"""

from __future__ import annotations

import importlib
import logging
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest
import torch

import runtime_guard
from runtime_guard import is_guarded, reference, unguarded

FIXTURES = Path(__file__).parent / "runtime_guard_fixtures"
FAKE_PACKAGES = ("deep_gemm", "vllm", "sglang_like", "fake_sm90")
INDEXER = "vllm.v1.attention.backends.mla.indexer"
FUNCTION = "get_paged_mqa_logits_metadata"
IMPL = "_get_paged_mqa_logits_metadata_impl"

# A FULL CUDA-graph capture of 32 decode requests: seq_len 1, and 1 // 4 == 0 (docs/vllm-facts.md).
CAPTURE_SEQ_LENS = torch.ones(32, dtype=torch.int32)


def drop_fake_modules() -> None:
    for name in list(sys.modules):
        if name.split(".")[0] in FAKE_PACKAGES:
            del sys.modules[name]


@pytest.fixture(autouse=True)
def clean_process(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("ZEROLINT_GUARD", raising=False)
    runtime_guard.uninstall()
    drop_fake_modules()
    yield
    runtime_guard.uninstall()
    drop_fake_modules()


@pytest.fixture(params=["pip", "vendored"])
def deep_gemm_name(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Put the fake trees on sys.path: vLLM with its vendored DeepGEMM, plus a pip-installed
    DeepGEMM for the "pip" case. Returns the DeepGEMM module vLLM will use."""
    monkeypatch.syspath_prepend(str(FIXTURES / "kernel"))
    monkeypatch.syspath_prepend(str(FIXTURES / "vllm_site"))
    if request.param == "pip":
        monkeypatch.syspath_prepend(str(FIXTURES / "pip_site"))
        return "deep_gemm"
    return "vllm.third_party.deep_gemm"


@pytest.fixture
def with_pip_deep_gemm(monkeypatch: pytest.MonkeyPatch) -> None:
    for site in ("kernel", "vllm_site", "pip_site"):
        monkeypatch.syspath_prepend(str(FIXTURES / site))


def build_capture_schedule() -> torch.Tensor:
    return importlib.import_module(INDEXER).build_decode_schedule(CAPTURE_SEQ_LENS)


def clamped_capture_schedule() -> torch.Tensor:
    return reference.schedule(torch.ones(32, 1, dtype=torch.int32), 132).as_tensor()


def holders(*modules: str) -> dict[tuple[str, str], object]:
    """What each module global of interest holds now."""
    return {
        (module, name): getattr(sys.modules[module], name)
        for module in modules
        for name in (FUNCTION, IMPL)
        if hasattr(sys.modules[module], name)
    }


# --- the fake trees reproduce the bug ------------------------------------------------------


def test_unguarded_indexer_crashes_on_the_capture_batch(deep_gemm_name: str) -> None:
    with pytest.raises(RuntimeError, match="illegal memory access"):
        build_capture_schedule()


# --- install() before DeepGEMM is imported: the import hook ---------------------------------


def test_install_before_import_guards_deep_gemm_when_it_loads(deep_gemm_name: str) -> None:
    assert runtime_guard.install()
    assert deep_gemm_name not in sys.modules
    assert torch.equal(build_capture_schedule(), clamped_capture_schedule())
    assert is_guarded(getattr(sys.modules[deep_gemm_name], FUNCTION))
    assert is_guarded(getattr(sys.modules[f"{deep_gemm_name}._C"], FUNCTION))


def test_hooked_import_leaves_the_real_loader_on_the_module(deep_gemm_name: str) -> None:
    runtime_guard.install()
    module = importlib.import_module(deep_gemm_name)
    assert type(module.__loader__).__name__ == "SourceFileLoader"
    assert module.__spec__.loader is module.__loader__


def test_module_imported_after_install_gets_the_guard(with_pip_deep_gemm: None) -> None:
    runtime_guard.install()
    sglang_like = importlib.import_module("sglang_like")
    assert is_guarded(sglang_like.get_paged_mqa_logits_metadata)


# --- install() after vLLM has imported and resolved DeepGEMM ------------------------------


def test_install_after_first_call_replaces_the_resolved_impl(deep_gemm_name: str) -> None:
    indexer = importlib.import_module(INDEXER)
    indexer.build_decode_schedule(torch.full((8,), 900, dtype=torch.int32))  # resolves the impl
    vllm_wrapper = indexer.get_paged_mqa_logits_metadata

    runtime_guard.install()

    assert is_guarded(getattr(sys.modules["vllm.utils.deep_gemm"], IMPL))
    assert torch.equal(build_capture_schedule(), clamped_capture_schedule())
    # vLLM's wrapper stays: it calls the guarded impl, so the indexer is clamped once.
    assert indexer.get_paged_mqa_logits_metadata is vllm_wrapper
    assert not is_guarded(vllm_wrapper)


def test_install_after_import_replaces_names_imported_by_value(with_pip_deep_gemm: None) -> None:
    sglang_like = importlib.import_module("sglang_like")
    original = sglang_like.get_paged_mqa_logits_metadata

    runtime_guard.install()

    assert is_guarded(sglang_like.get_paged_mqa_logits_metadata)
    assert unguarded(sglang_like.get_paged_mqa_logits_metadata) is original
    assert sys.modules["deep_gemm"].get_paged_mqa_logits_metadata is (
        sglang_like.get_paged_mqa_logits_metadata
    )


# --- uninstall() --------------------------------------------------------------------------


def test_uninstall_restores_every_global_it_replaced(deep_gemm_name: str) -> None:
    indexer = importlib.import_module(INDEXER)
    indexer.build_decode_schedule(torch.full((8,), 900, dtype=torch.int32))
    watched = (deep_gemm_name, f"{deep_gemm_name}._C", "vllm.utils.deep_gemm", INDEXER)
    before = holders(*watched)

    runtime_guard.install()
    assert holders(*watched) != before
    runtime_guard.uninstall()

    after = holders(*watched)
    assert after.keys() == before.keys()
    assert all(after[key] is before[key] for key in before)
    assert not runtime_guard.is_installed()
    with pytest.raises(RuntimeError, match="illegal memory access"):
        build_capture_schedule()


def test_uninstall_restores_modules_imported_while_installed(with_pip_deep_gemm: None) -> None:
    runtime_guard.install()
    sglang_like = importlib.import_module("sglang_like")
    runtime_guard.uninstall()
    assert not is_guarded(sglang_like.get_paged_mqa_logits_metadata)
    assert (
        sglang_like.get_paged_mqa_logits_metadata
        is sys.modules["deep_gemm._C"].get_paged_mqa_logits_metadata
    )


def test_uninstall_removes_the_import_hook(deep_gemm_name: str) -> None:
    finders_before = list(sys.meta_path)
    runtime_guard.install()
    runtime_guard.uninstall()
    assert sys.meta_path == finders_before
    assert not is_guarded(getattr(importlib.import_module(deep_gemm_name), FUNCTION))


def test_uninstall_without_install_does_nothing() -> None:
    assert runtime_guard.uninstall() is False


def test_install_again_after_uninstall_guards_again(deep_gemm_name: str) -> None:
    importlib.import_module(deep_gemm_name)
    runtime_guard.install()
    runtime_guard.uninstall()
    runtime_guard.install()
    assert is_guarded(getattr(sys.modules[deep_gemm_name], FUNCTION))
    assert torch.equal(build_capture_schedule(), clamped_capture_schedule())


# --- idempotence, threads, logging, the off switch -------------------------------------------


def guard_log(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "runtime_guard"]


def test_install_twice_guards_once_and_logs_once(
    deep_gemm_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    module = importlib.import_module(deep_gemm_name)
    original = getattr(module, FUNCTION)
    caplog.set_level(logging.INFO, logger="runtime_guard")

    assert runtime_guard.install() and runtime_guard.install()

    assert unguarded(getattr(module, FUNCTION)) is original
    assert sum(type(f).__name__ == "_DeepGemmFinder" for f in sys.meta_path) == 1
    [line] = guard_log(caplog)
    assert f"guarded now: {deep_gemm_name}" in line


def test_hook_logs_one_line_when_it_guards_an_import(
    deep_gemm_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="runtime_guard")
    runtime_guard.install()
    importlib.import_module(deep_gemm_name)
    assert guard_log(caplog)[1:] == [
        f"runtime_guard: guarded {deep_gemm_name}.{FUNCTION} on import (2 module globals replaced)"
    ]


def run_in_threads(count: int, target: Callable[[int], None]) -> None:
    barrier = threading.Barrier(count)
    errors: list[BaseException] = []

    def worker(index: int) -> None:
        try:
            barrier.wait()
            target(index)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


def test_concurrent_installs_act_once(
    deep_gemm_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    module = importlib.import_module(deep_gemm_name)
    original = getattr(module, FUNCTION)
    caplog.set_level(logging.INFO, logger="runtime_guard")

    run_in_threads(16, lambda _: runtime_guard.install())

    assert len(guard_log(caplog)) == 1
    assert unguarded(getattr(module, FUNCTION)) is original
    assert sum(type(f).__name__ == "_DeepGemmFinder" for f in sys.meta_path) == 1


def test_concurrent_install_and_uninstall_leave_a_consistent_state(deep_gemm_name: str) -> None:
    module = importlib.import_module(deep_gemm_name)
    original = getattr(module, FUNCTION)

    def flip(index: int) -> None:
        for _ in range(20):
            (runtime_guard.install if index % 2 else runtime_guard.uninstall)()

    run_in_threads(8, flip)

    installed = runtime_guard.is_installed()
    assert is_guarded(getattr(module, FUNCTION)) == installed
    assert unguarded(getattr(module, FUNCTION)) is original
    runtime_guard.uninstall()
    assert getattr(module, FUNCTION) is original


@pytest.mark.parametrize("value", ["0", "false", "OFF", " no "])
def test_zerolint_guard_0_turns_install_off(
    value: str, deep_gemm_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ZEROLINT_GUARD", value)
    module: ModuleType = importlib.import_module(deep_gemm_name)
    assert runtime_guard.install() is False
    assert not runtime_guard.is_installed()
    assert not is_guarded(getattr(module, FUNCTION))


@pytest.mark.parametrize("value", ["1", "", "yes"])
def test_other_zerolint_guard_values_leave_it_on(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ZEROLINT_GUARD", value)
    assert runtime_guard.install() is True


# --- ZEROLINT_GUARD_OFF: the log names only what is guarded ------------------------------------


def test_with_the_clamp_turned_off_install_does_not_say_it_clamps(
    deep_gemm_name: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("ZEROLINT_GUARD_OFF", "deep_gemm_metadata")
    module = importlib.import_module(deep_gemm_name)
    caplog.set_level(logging.INFO, logger="runtime_guard")
    assert runtime_guard.install()  # the other sinks are guarded
    assert not is_guarded(getattr(module, FUNCTION))
    off, line = guard_log(caplog)
    assert off == "runtime_guard: turned off by ZEROLINT_GUARD_OFF for deep_gemm_metadata"
    assert line.startswith("runtime_guard: guarding deep_gemm_logits, triton_mla, flashmla (")
    assert "clamp" not in line and FUNCTION not in line


def test_the_log_names_only_the_modules_of_the_sinks_left_on(
    deep_gemm_name: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("ZEROLINT_GUARD_OFF", "triton_mla flashmla")
    caplog.set_level(logging.INFO, logger="runtime_guard")
    assert runtime_guard.install()
    line = guard_log(caplog)[-1]
    assert line.startswith(
        "runtime_guard: clamping DeepGEMM get_paged_mqa_logits_metadata context_lens to >= 1 "
        "and guarding deep_gemm_metadata, deep_gemm_logits ("
    )
    assert line.endswith(
        "later imports of deep_gemm and vllm.third_party.deep_gemm are guarded too)"
    )


def test_every_sink_turned_off_installs_nothing_and_says_so(
    deep_gemm_name: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("ZEROLINT_GUARD_OFF", "all")
    module = importlib.import_module(deep_gemm_name)
    caplog.set_level(logging.INFO, logger="runtime_guard")
    assert runtime_guard.install() is False
    assert not runtime_guard.is_installed()
    assert not is_guarded(getattr(module, FUNCTION))
    every = "deep_gemm_metadata, deep_gemm_logits, triton_mla, flashmla"
    said = f"turned off by ZEROLINT_GUARD_OFF=all for every sink ({every}), nothing left to guard"
    assert guard_log(caplog) == [f"runtime_guard: {said}"]
