"""The vLLM plugin, found the way vLLM finds it: through importlib.metadata entry points of
an installed wheel of this project, in a fresh virtual environment without site packages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import runtime_guard
from runtime_guard import plugin

ROOT = Path(__file__).resolve().parent.parent

# What vLLM's load_general_plugins() does, then a report of the process's state.
LOAD_LIKE_VLLM = """
import json, sys
from importlib.metadata import entry_points
found = {ep.name: ep.value for ep in entry_points(group="vllm.general_plugins")}
for ep in entry_points(group="vllm.general_plugins"):
    ep.load()()
import runtime_guard
print(json.dumps({
    "entry_points": found,
    "installed": runtime_guard.is_installed(),
    "hooks": [type(f).__name__ for f in sys.meta_path],
    "location": runtime_guard.__file__,
    "torch_imported": "torch" in sys.modules,
}))
"""


@pytest.fixture(scope="module")
def venv_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv (no system site packages) with this project's wheel installed, no deps."""
    tmp = tmp_path_factory.mktemp("plugin")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp / "dist"), str(ROOT)],
        check=True,
    )
    [wheel] = (tmp / "dist").glob("zerolint-*.whl")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp / "venv")], check=True)
    python = tmp / "venv" / "bin" / "python"
    subprocess.run(
        [*pip, "--python", str(python), "install", "--no-deps", "--no-index", str(wheel)],
        check=True,
    )
    return python


def load_plugins_in(python: Path, *, torch_stub: Path | None = None, **env: str) -> dict:
    clean_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ZEROLINT_GUARD")}
    if torch_stub is not None:
        clean_env["PYTHONPATH"] = str(torch_stub)
    done = subprocess.run(
        [str(python), "-c", LOAD_LIKE_VLLM],
        env={**clean_env, **env},
        cwd=python.parent,  # not the checkout: the import must come from the wheel
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def torch_stub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding a ``torch`` package that fails if imported: install() may look for
    torch, never import it."""
    root = tmp_path_factory.mktemp("torch_stub")
    (root / "torch").mkdir()
    (root / "torch" / "__init__.py").write_text("raise ImportError('torch was imported')\n")
    return root


@pytest.mark.slow
def test_installed_wheel_registers_the_plugin_and_it_installs_the_guard(
    venv_python: Path, torch_stub: Path
) -> None:
    state = load_plugins_in(venv_python, torch_stub=torch_stub)
    assert state["entry_points"] == {"zerolint_guard": "runtime_guard.plugin:register"}
    assert state["installed"] is True
    assert "_DeepGemmFinder" in state["hooks"]
    # The wheel was installed without dependencies: registering imports no torch.
    assert state["torch_imported"] is False
    assert "site-packages" in state["location"]


@pytest.mark.slow
def test_installed_plugin_without_torch_leaves_deep_gemm_alone(venv_python: Path) -> None:
    # Issue 18 item 13: it used to log "clamping" and fail on the first call instead.
    state = load_plugins_in(venv_python)
    assert state["installed"] is False
    assert "_DeepGemmFinder" not in state["hooks"]


@pytest.mark.slow
def test_installed_plugin_honours_zerolint_guard_0(venv_python: Path) -> None:
    state = load_plugins_in(venv_python, ZEROLINT_GUARD="0")
    assert state["installed"] is False
    assert "_DeepGemmFinder" not in state["hooks"]


def test_register_never_raises_into_vllm(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken_install() -> bool:
        raise OSError("disk on fire")

    monkeypatch.setattr(plugin, "install", broken_install)
    plugin.register()
    assert "could not install the DeepGEMM guard" in caplog.text
    assert "disk on fire" in caplog.text


def test_register_installs_in_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ZEROLINT_GUARD", raising=False)
    runtime_guard.uninstall()
    try:
        plugin.register()
        assert runtime_guard.is_installed()
    finally:
        runtime_guard.uninstall()


@pytest.mark.slow
def test_installed_wheel_ships_the_rules_and_their_docs(venv_python: Path) -> None:
    # The rules are data in rules/ of the checkout; the wheel carries them as zerolint/rules.
    done = subprocess.run(
        [
            str(venv_python),
            "-c",
            (
                "from zerolint.rules import load_rules, rules_dir; "
                "r = load_rules()[0]; print(rules_dir().parent.name, r.code, r.doc.splitlines()[0])"
            ),
        ],
        cwd=venv_python.parent,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split() == [
        "zerolint",
        "ZL001",
        "#",
        "ZL001:",
        "unclamped-zero-lengths-to-mqa-metadata",
    ]
