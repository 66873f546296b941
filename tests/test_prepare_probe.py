"""devtools/prepare_probe.py on the real wheels: the pieces it writes are the ones the
committed probe report names (same wheels, same file digests)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from devtools import prepare_probe

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("probe") / ".probe"
    return out, prepare_probe.prepare(out)


@pytest.mark.network
@pytest.mark.slow
def test_the_manifest_matches_the_committed_report(prepared: tuple[Path, dict]) -> None:
    _, manifest = prepared
    committed = json.loads((ROOT / "docs" / "probe-report.json").read_text())["pieces"]["probe"]
    assert manifest == committed


@pytest.mark.network
@pytest.mark.slow
def test_every_extracted_file_has_the_recorded_digest(prepared: tuple[Path, dict]) -> None:
    out, manifest = prepared
    vllm = out / manifest["vllm"]["path"]
    for name, digest in manifest["vllm"]["files"].items():
        assert hashlib.sha256((vllm / name).read_bytes()).hexdigest() == digest, name
    guarded = manifest["guarded_scheduler"]
    header = out / guarded["path"] / "include" / guarded["header"]
    assert hashlib.sha256(header.read_bytes()).hexdigest() == guarded["header_sha256"]
    assert guarded["deep_gemm_version"] == "2.8.1"
    files = [p for p in (out / guarded["path"] / "include").rglob("*") if p.is_file()]
    assert len(files) == guarded["files"]
    assert sum(p.stat().st_size for p in files) == guarded["bytes"]
