"""ZL001 on real code: the whole ``vllm/`` tree of the vLLM 0.27.1 wheel from PyPI.

The wheel is downloaded once (``pip download --no-deps``) and cached outside the repo.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from devtools.wheels import vllm_tree

pytestmark = [pytest.mark.network, pytest.mark.slow]

INDEXER = "vllm/v1/attention/backends/mla/indexer.py"
CALL_LINE = 951


def zerolint(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zerolint", "check", "--no-cache", "--color", "never", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="module")
def tree() -> Path:
    return vllm_tree("0.27.1")


@pytest.fixture(scope="module")
def patched(tree: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the tree with the seed's fix: torch.clamp(seq_lens, min=1) at the call."""
    root = tmp_path_factory.mktemp("vllm-patched")
    shutil.copytree(tree / "vllm", root / "vllm")
    path = root / INDEXER
    lines = path.read_text().splitlines(keepends=True)
    assert "get_paged_mqa_logits_metadata(" in lines[CALL_LINE - 1]
    assert lines[CALL_LINE].strip() == "seq_lens,"
    lines[CALL_LINE] = lines[CALL_LINE].replace("seq_lens,", "torch.clamp(seq_lens, min=1),")
    path.write_text("".join(lines))
    return root


def test_exactly_one_finding_at_the_indexer_call(tree: Path) -> None:
    run = zerolint(tree, "--format", "json", "vllm")
    assert run.returncode == 1, run.stderr
    report = json.loads(run.stdout)
    findings = report["findings"]
    assert [(f["path"], f["line"], f["code"]) for f in findings] == [(INDEXER, CALL_LINE, "ZL001")]
    assert report["diagnostics"] == []


def test_the_path_shows_both_branches_and_the_unsqueeze(tree: Path) -> None:
    report = json.loads(zerolint(tree, "--format", "json", "vllm").stdout)
    flows = report["findings"][0]["flows"]
    codes = [[step["code"] for step in flow["steps"]] for flow in flows]
    in_place = [c for c in codes if any("seq_lens //= self.compress_ratio" in s for s in c)]
    copied = [
        c for c in codes if any("self.expanded_seq_lens_buffer[:num_decodes] =" in s for s in c)
    ]
    assert in_place and copied, codes
    assert any(
        "self.expanded_seq_lens_buffer[num_decodes:num_decode_tokens] = 0" in s for s in copied[0]
    )
    for flow in (in_place[0], copied[0]):
        assert any("seq_lens.unsqueeze(-1)" in s for s in flow)
        assert "get_paged_mqa_logits_metadata(" in flow[-1]


def test_the_text_output_carries_a_witness_that_is_real(tree: Path) -> None:
    run = zerolint(tree, "vllm")
    first = run.stdout.splitlines()[0]
    assert first.startswith(f"{INDEXER}:{CALL_LINE}:")
    witness = [line for line in run.stdout.splitlines() if "witness" in line]
    assert witness, run.stdout
    values = dict(
        part.split("=")
        for part in witness[0].split(":", 1)[1].split("->")[0].replace(" ", "").split(",")
    )
    batch, seq_len, ratio = int(values["B"]), int(values["seq_len"]), int(values["compress_ratio"])
    # The kernel's fault predicate, evaluated on the witness itself.
    assert batch % 32 == 0 and batch > 0
    assert seq_len >= 1 and seq_len // ratio == 0


def test_the_seed_clamp_makes_the_tree_clean_and_proved(patched: Path) -> None:
    run = zerolint(patched, "vllm")
    assert run.returncode == 0, run.stdout + run.stderr
    proved = json.loads(zerolint(patched, "--format", "json", "--show-proved", "vllm").stdout)
    assert proved["findings"] == []
    assert [(p["path"], p["line"]) for p in proved["proved"]] == [(INDEXER, CALL_LINE)]
    assert proved["proved"][0]["verdict"]["status"] == "safe"


@pytest.mark.parametrize("version", ["0.27.1", "0.33.0"])
def test_output_is_identical_whatever_the_number_of_reading_processes(version: str) -> None:
    """With two processes the prescan's child also answers the whole-tree searches (who
    constructs or subclasses a class: many on 0.33.0); alone, the analyser reads the files."""
    tree = vllm_tree(version)
    args = ("--format", "json", "--show-proved", "vllm")
    one = zerolint(tree, "--jobs", "1", *args)
    two = zerolint(tree, "--jobs", "2", *args)
    assert (one.returncode, one.stdout) == (two.returncode, two.stdout)
    assert json.loads(one.stdout)["findings"]


@pytest.mark.network
def test_module_names_are_each_files_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """``module_names`` works a folder out once for all its files: the names are what
    ``module_name_for`` gives each file alone, on vLLM 0.33.0 and on paths written oddly
    (through ``..``, absolute)."""
    import os

    from zerolint.paths import module_name_for, module_names

    tree = vllm_tree("0.33.0")
    monkeypatch.chdir(tree)
    files = sorted(Path("vllm").rglob("*.py"))
    files += [
        Path("vllm/../vllm/__init__.py"),
        Path(os.path.abspath("vllm/v1/__init__.py")),
        Path("vllm/v1/attention/../worker/gpu_worker.py"),
    ]
    names = module_names(files)
    assert {f: module_name_for(f) for f in files} == names
    assert names[Path("vllm/v1/attention/../worker/gpu_worker.py")] == "vllm.v1.worker.gpu_worker"
