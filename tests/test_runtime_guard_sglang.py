"""The SGLang switch: ``ZEROLINT_GUARD_SGLANG`` and the ``zerolint_guard.pth`` line, run by
Python's own site machinery in fresh interpreters, with the fake DeepGEMM of
tests/runtime_guard_fixtures imported afterwards as SGLang imports it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib
import zipfile
from pathlib import Path

import pytest

from runtime_guard.sglang_hook import PTH_LINE, PTH_NAME

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "runtime_guard_fixtures"

PROBE = """
import site, sys
site.addsitedir(sys.argv[1])  # processes zerolint_guard.pth as site-packages would
loaded = "runtime_guard" in sys.modules
import sglang_like, deep_gemm
from runtime_guard import is_guarded, is_installed
print(loaded, is_installed(), is_guarded(deep_gemm.get_paged_mqa_logits_metadata),
      is_guarded(sglang_like.get_paged_mqa_logits_metadata))
"""


@pytest.fixture
def site_dir(tmp_path: Path) -> Path:
    (tmp_path / PTH_NAME).write_text((ROOT / "runtime_guard" / PTH_NAME).read_text())
    return tmp_path


def run(site: Path, **env: str) -> str:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("ZEROLINT_GUARD")}
    paths = [str(ROOT), str(FIXTURES / "kernel"), str(FIXTURES / "pip_site")]
    environ.update(env, PYTHONPATH=os.pathsep.join(paths))
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(site)],
        env=environ,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return done.stdout.strip()


def test_the_pth_file_is_the_documented_line() -> None:
    assert (ROOT / "runtime_guard" / PTH_NAME).read_text() == PTH_LINE
    assert PTH_LINE.startswith("import ") and PTH_LINE.count("\n") == 1


def test_set_it_guards_deep_gemm_when_sglang_imports_it(site_dir: Path) -> None:
    assert run(site_dir, ZEROLINT_GUARD_SGLANG="1") == "True True True True"


def test_unset_it_imports_nothing_and_guards_nothing(site_dir: Path) -> None:
    assert run(site_dir) == "False False False False"


@pytest.mark.parametrize(
    "env", [{"ZEROLINT_GUARD_SGLANG": "0"}, {"ZEROLINT_GUARD_SGLANG": "1", "ZEROLINT_GUARD": "off"}]
)
def test_off_values_keep_it_off(site_dir: Path, env: dict[str, str]) -> None:
    assert run(site_dir, **env).split()[1:] == ["False", "False", "False"]


def test_the_wheel_puts_the_pth_file_in_site_packages() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    force = config["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    assert force[f"runtime_guard/{PTH_NAME}"] == PTH_NAME


@pytest.mark.slow
def test_a_built_wheel_holds_the_pth_file_at_its_root(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            str(ROOT),
            "-w",
            str(tmp_path),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("zerolint-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        assert zf.read(PTH_NAME).decode() == PTH_LINE


@pytest.mark.slow
@pytest.mark.network
def test_an_editable_install_puts_the_pth_file_in_site_packages_too(tmp_path: Path) -> None:
    """``pip install -e`` builds hatchling's editable wheel, which carries the force-included
    files: the .pth line is installed and runs at start-up, as docs/runtime-guard.md says."""
    clone = tmp_path / "clone"  # what the wheel is built from
    for folder in ("zerolint", "runtime_guard", "rules"):
        ignore = shutil.ignore_patterns("__pycache__")
        shutil.copytree(ROOT / folder, clone / folder, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, clone / name)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "-e", str(clone)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    assert (site / PTH_NAME).read_text() == PTH_LINE
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("ZEROLINT_", "PYTHON"))}
    probe = "import sys; print('runtime_guard.sglang_hook' in sys.modules)"
    for switch, hooked in (("1", "True"), ("", "False")):
        done = subprocess.run(
            [str(python), "-c", probe],
            env={**environ, "ZEROLINT_GUARD_SGLANG": switch},
            check=True,
            capture_output=True,
            text=True,
            cwd=tmp_path,
        )
        assert done.stdout.strip() == hooked, done.stderr
    page = (ROOT / "docs" / "runtime-guard.md").read_text()
    assert "An editable install (`pip install -e`) installs the `.pth` line too" in page
