"""Which path the attention guards take (runtime_guard.attention), on CPU.

The Triton MLA guard replaces vLLM's second stage with its own only where vLLM's module is the
one verified on the GPU. These tests load vLLM's real ``triton_decode_attention.py`` (0.26.0,
the verified one, and 0.33.0, whose second stage differs) from the published wheels, with
stand-ins for ``vllm.platforms`` (as the probe has) and for Triton: a ``triton.jit`` that keeps
the Python function and records each launch (``kernel[grid](...)``) instead of compiling it.
So vLLM's and the guard's own Python launchers run for real and the launches they make are
compared; what the kernels compute is the GPU probe's (docs/zero-length-probe.md), or Triton's
interpreter's where Triton is installed (the last tests).
"""

from __future__ import annotations

import importlib
import logging
import math
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

import runtime_guard
from devtools.wheels import vllm_tree
from probe.standins import PLATFORMS
from runtime_guard.attention import (
    TRITON_DECODE_STAGE1,
    guard_flash_mla_with_kvcache,
    guard_paged_mqa_logits,
    guard_triton_mla_decode,
    triton_decode_structure,
)

ROOT = Path(__file__).resolve().parent.parent
KERNEL_FILE = "vllm/v1/attention/ops/triton_decode_attention.py"
MODULE = "vllm.v1.attention.ops.triton_decode_attention"


class Launches(list):
    """(kernel name, grid) of every launch, in order."""


def standin_triton(launches: Launches) -> tuple[types.ModuleType, types.ModuleType]:
    """A ``triton`` package whose ``jit`` keeps the function (``.fn``, as Triton's does) and
    records launches; ``triton.language`` has what kernel signatures name at definition."""
    triton = types.ModuleType("triton")
    language = types.ModuleType("triton.language")

    class Kernel:
        def __init__(self, fn):
            self.fn = fn
            self.__name__ = fn.__name__

        def __getitem__(self, grid):
            def launch(*args, **kwargs):
                launches.append((self.fn.__name__, tuple(grid)))

            return launch

    triton.jit = Kernel
    triton.__version__ = "3.6.0"
    triton.next_power_of_2 = lambda n: 1 << max(int(n) - 1, 0).bit_length()
    triton.cdiv = lambda a, b: -(-a // b)
    triton.language = language
    language.constexpr = type("constexpr", (), {})
    language.int64 = "int64"
    language.float32 = "float32"
    return triton, language


def vllm_package(tmp_path: Path, version: str) -> Path:
    """vLLM ``version``'s Triton decode module as a package under ``tmp_path``, with the
    probe's platform stand-in and a ``vllm.triton_utils`` that re-exports ``triton``."""
    root = tmp_path / f"vllm-{version}"
    source = (vllm_tree(version) / KERNEL_FILE).read_text()
    for package in ("vllm", "vllm/v1", "vllm/v1/attention", "vllm/v1/attention/ops"):
        (root / package).mkdir(parents=True, exist_ok=True)
        (root / package / "__init__.py").write_text("")
    (root / KERNEL_FILE).write_text(source)
    (root / "vllm/platforms").mkdir()
    (root / "vllm/platforms/__init__.py").write_text(PLATFORMS)
    (root / "vllm/triton_utils").mkdir()
    (root / "vllm/triton_utils/__init__.py").write_text(
        "import triton\nimport triton.language as tl\n"
    )
    return root


@pytest.fixture
def launches(monkeypatch: pytest.MonkeyPatch) -> Iterator[Launches]:
    """The Triton stand-in in ``sys.modules`` (and the guard's kernels loaded against it)."""
    recorded = Launches()
    triton, language = standin_triton(recorded)
    monkeypatch.setitem(sys.modules, "triton", triton)
    monkeypatch.setitem(sys.modules, "triton.language", language)
    monkeypatch.delitem(sys.modules, "runtime_guard.empty_rows", raising=False)
    yield recorded
    # Loaded against the stand-in: never leave it for another test (monkeypatch then puts
    # back whatever was there before).
    sys.modules.pop("runtime_guard.empty_rows", None)
    for name in list(sys.modules):
        if name.split(".")[0] == "vllm":
            del sys.modules[name]


def load(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, version: str) -> types.ModuleType:
    for name in list(sys.modules):
        if name.split(".")[0] == "vllm":
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.syspath_prepend(str(vllm_package(tmp_path, version)))
    return importlib.import_module(MODULE)


def mla_call(fn, lens=(0, 7, 0, 130, 1), heads=16, kv_heads=1, d_qk=576, d_v=512, splits=4):
    batch = len(lens)
    cache = torch.zeros(4, 64, kv_heads, d_qk, dtype=torch.bfloat16)
    fn(
        torch.zeros(batch, heads, d_qk, dtype=torch.bfloat16),
        cache,
        cache[..., :d_v],
        torch.zeros(batch, heads, d_v, dtype=torch.bfloat16),
        torch.zeros(batch, heads, dtype=torch.bfloat16),
        torch.zeros(batch, 4, dtype=torch.int32),
        torch.tensor(lens, dtype=torch.int32),
        torch.zeros(batch, heads, splits, d_v + 1),
        splits,
        d_qk**-0.5,
        64,
        k_scale=torch.ones(()),
        v_scale=torch.ones(()),
        is_mla=kv_heads == 1,
    )


# -- the verified module: vLLM's first stage, then the guard's second ---------------------------


def test_the_verified_module_is_recognised_by_what_it_exposes(
    launches: Launches, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    module = load(monkeypatch, tmp_path, "0.26.0")
    stage1, why = triton_decode_structure(module.decode_attention_fwd)
    assert why == ""
    assert stage1 == {name: getattr(module, name) for name in TRITON_DECODE_STAGE1}


@pytest.mark.parametrize(
    ("shape", "first"),
    [
        ({"heads": 16, "kv_heads": 1}, "_fwd_grouped_kernel_stage1"),  # MLA
        ({"heads": 32, "kv_heads": 8, "d_qk": 128, "d_v": 128}, "_fwd_grouped_kernel_stage1"),
        ({"heads": 8, "kv_heads": 8, "d_qk": 128, "d_v": 128}, "_fwd_kernel_stage1"),  # MHA
    ],
    ids=["mla", "gqa", "mha"],
)
def test_the_guard_launches_vllms_first_stage_then_its_own_second_instead_of_vllms(
    launches: Launches,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    shape: dict,
    first: str,
) -> None:
    module = load(monkeypatch, tmp_path, "0.26.0")
    with caplog.at_level(logging.INFO, logger="runtime_guard"):
        guarded = guard_triton_mla_decode(module.decode_attention_fwd)
    assert runtime_guard.guard_path(guarded) == "stage2"
    assert "own second stage" in caplog.text
    mla_call(module.decode_attention_fwd, **shape)
    plain = list(launches)
    launches.clear()
    mla_call(guarded, **shape)
    heads = shape["heads"]
    assert plain[0][0] == first and plain[1] == ("_fwd_kernel_stage2", (5, heads))
    # The same launches, as many as vLLM's, with the second one the guard's own.
    assert launches == [plain[0], ("_merge_splits_kernel", (5, heads))]


def test_an_empty_batch_launches_nothing(
    launches: Launches, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    module = load(monkeypatch, tmp_path, "0.26.0")
    mla_call(guard_triton_mla_decode(module.decode_attention_fwd), lens=())
    assert launches == []


def test_a_call_vllm_refuses_still_reaches_vllm(
    launches: Launches, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    module = load(monkeypatch, tmp_path, "0.26.0")
    guarded = guard_triton_mla_decode(module.decode_attention_fwd)
    with pytest.raises(AssertionError):  # vLLM's own: num_kv_splits == attn_logits.shape[2]
        guarded(*[torch.zeros(1, 16, 8)] * 7, torch.zeros(1, 16, 3, 9), 4, 0.1)
    assert launches == []


# -- anything else: the mask after the kernel, and the log says why ------------------------------


def test_another_vllm_version_gets_the_mask(
    launches: Launches,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    module = load(monkeypatch, tmp_path, "0.33.0")  # 64-bit row offsets in its second stage
    with caplog.at_level(logging.INFO, logger="runtime_guard"):
        guarded = guard_triton_mla_decode(module.decode_attention_fwd)
    assert runtime_guard.guard_path(guarded) == "mask"
    assert "second stage is not the verified one" in caplog.text
    mla_call(guarded)
    assert [name for name, _ in launches] == ["_fwd_grouped_kernel_stage1", "_fwd_kernel_stage2"]


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (lambda m: delattr(m, "_fwd_kernel_stage2"), "has no _fwd_kernel_stage2"),
        (lambda m: delattr(m, "_decode_grouped_att_m_fwd"), "has no _decode_grouped_att_m_fwd"),
        (lambda m: setattr(m, "is_hip_", True), "not a CUDA build"),
        (lambda m: setattr(m, "decode_attention_fwd", print), "another object"),
    ],
    ids=["no second stage", "no first stage", "ROCm", "entry point replaced"],
)
def test_a_module_of_another_structure_gets_the_mask(
    launches: Launches, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, change, why: str
) -> None:
    module = load(monkeypatch, tmp_path, "0.26.0")
    fn = module.decode_attention_fwd
    change(module)
    launchers, reason = triton_decode_structure(fn)
    assert launchers is None and why in reason
    assert runtime_guard.guard_path(guard_triton_mla_decode(fn)) == "mask"


def test_without_triton_the_verified_module_gets_the_mask(
    launches: Launches,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    module = load(monkeypatch, tmp_path, "0.26.0")
    monkeypatch.setitem(sys.modules, "triton", None)  # import triton now fails
    with caplog.at_level(logging.INFO, logger="runtime_guard"):
        guarded = guard_triton_mla_decode(module.decode_attention_fwd)
    assert runtime_guard.guard_path(guarded) == "mask"
    assert "Triton cannot be imported" in caplog.text


def test_guard_path_names_each_attention_guard() -> None:
    def kernel(*args, **kwargs):
        return None

    assert runtime_guard.guard_path(kernel) == "none"
    assert runtime_guard.guard_path(guard_triton_mla_decode(kernel)) == "mask"
    assert runtime_guard.guard_path(guard_paged_mqa_logits(kernel)) == "empty-batch"
    assert runtime_guard.guard_path(guard_flash_mla_with_kvcache(kernel)) in {
        "lse-kernel",
        "mask",
    }


# -- FlashMLA: the LSE fix-up alone --------------------------------------------------------------


def flashmla_writing(value: float):
    """A dense decode that writes ``value`` into the output of rows of length 0 (the real
    kernel writes 0: the probe's measurement) and +inf into their LSE."""

    def flash_mla_with_kvcache(q, k_cache, block_table, cache_seqlens, head_dim_v, meta,
                               num_splits=None, softmax_scale=None, causal=False,
                               is_fp8_kvcache=False, indices=None, out=None):  # fmt: skip
        batch, s_q, h_q, _ = q.shape
        gen = torch.Generator().manual_seed(5)
        result = torch.randn(batch, s_q, h_q, head_dim_v, generator=gen).to(q.dtype)
        lse = torch.randn(batch, h_q, s_q, generator=gen)
        result[cache_seqlens == 0] = value
        lse[cache_seqlens == 0] = math.inf
        return result, lse

    return flash_mla_with_kvcache


def test_flashmla_guard_leaves_the_output_as_the_kernel_wrote_it() -> None:
    kernel = flashmla_writing(7.0)
    lens = torch.tensor([0, 3, 0, 9], dtype=torch.int32)
    q = torch.zeros(4, 1, 16, 576, dtype=torch.bfloat16)
    plain_out, plain_lse = kernel(q, None, None, lens, 512, None)
    out, lse = guard_flash_mla_with_kvcache(kernel)(q, None, None, lens, 512, None)
    assert torch.equal(out, plain_out)  # 7.0 stays: the guard writes no output
    assert torch.isneginf(lse[[0, 2]]).all() and torch.equal(lse[[1, 3]], plain_lse[[1, 3]])


def test_flashmla_guard_without_triton_masks_the_lse(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "triton", None)
    monkeypatch.delitem(sys.modules, "runtime_guard.empty_rows", raising=False)
    guarded = guard_flash_mla_with_kvcache(flashmla_writing(0.0))
    assert runtime_guard.guard_path(guarded) == "mask"
    lens = torch.tensor([0, 3], dtype=torch.int32)
    _, lse = guarded(torch.zeros(2, 1, 16, 576), None, None, lens, 512, None)
    assert torch.isneginf(lse[0]).all() and torch.isfinite(lse[1]).all()


def test_flashmla_guard_with_triton_takes_the_kernel(launches: Launches) -> None:
    guarded = guard_flash_mla_with_kvcache(flashmla_writing(0.0))
    assert runtime_guard.guard_path(guarded) == "lse-kernel"


# -- with Triton installed: its interpreter runs both second stages on CPU -----------------------

INTERPRETED = """
import sys, tempfile, torch
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from tests.test_runtime_guard_stage2 import interpreted_check
print(interpreted_check(Path(sys.argv[2])))
"""


def interpreted_check(tree: Path) -> str:
    """Run in a process with ``TRITON_INTERPRET=1``: vLLM 0.26.0's decode and the guard on the
    same CPU inputs; what differs, or ``same``."""
    import random

    from probe import stage2_check

    sys.path.insert(0, str(tree))
    module = importlib.import_module(MODULE)
    guarded = guard_triton_mla_decode(module.decode_attention_fwd)
    assert runtime_guard.guard_path(guarded) == "stage2"
    rng = random.Random(3)
    shape = stage2_check.SHAPES[0]
    for splits in (1, 3):
        x = stage2_check.make(torch, rng, shape, torch.bfloat16, 16, splits, "cpu")
        x["lens"][0] = 0
        x["lens_t"][0] = 0
        plain_o, plain_lse = stage2_check.call(torch, module.decode_attention_fwd, x, shape)
        o, lse = stage2_check.call(torch, guarded, x, shape)
        keep = [i for i, n in enumerate(x["lens"]) if n]
        if not (plain_o[0].isnan().all() and torch.isneginf(plain_lse[0]).all()):
            return f"vLLM's zero row is not NaN / -inf with {splits} splits"
        if not (torch.equal(o[keep], plain_o[keep]) and torch.equal(lse[keep], plain_lse[keep])):
            return f"non-zero rows differ with {splits} splits"
        if not ((o[0] == 0).all() and torch.isneginf(lse[0]).all()):
            return f"zero row is not the identity with {splits} splits"
    from runtime_guard.empty_rows import fill_empty_lse_

    lse = torch.randn(3, 2, 16).transpose(1, 2)
    before = lse.clone()
    fill_empty_lse_(lse, torch.tensor([4, 0, 1], dtype=torch.int32))
    if not (torch.isneginf(lse[1]).all() and torch.equal(lse[[0, 2]], before[[0, 2]])):
        return "fill_empty_lse_ wrote the wrong rows"
    return "same"


def test_the_guards_second_stage_matches_vllms_in_tritons_interpreter(tmp_path: Path) -> None:
    pytest.importorskip("triton")
    tree = tmp_path / "tree"
    tree.mkdir()
    source = vllm_tree("0.26.0") / KERNEL_FILE
    from probe.standins import TRITON_UTILS

    for package in ("vllm", "vllm/v1", "vllm/v1/attention", "vllm/v1/attention/ops"):
        (tree / package).mkdir(parents=True, exist_ok=True)
        (tree / package / "__init__.py").write_text("")
    (tree / KERNEL_FILE).write_text(source.read_text())
    for name, text in (("platforms", PLATFORMS), ("triton_utils", TRITON_UTILS)):
        (tree / "vllm" / name).mkdir()
        (tree / "vllm" / name / "__init__.py").write_text(text)
    done = subprocess.run(
        [sys.executable, "-c", INTERPRETED, str(ROOT), str(tree)],
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "TRITON_INTERPRET": "1"},
        timeout=600,
        check=False,
    )
    assert done.stdout.strip().splitlines()[-1:] == ["same"], done.stderr[-2000:]
