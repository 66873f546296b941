"""The install commands the README and docs give work as written: zerolint is not on PyPI,
so each installs from this project's files (a clone, a built wheel, a git URL) into a
fresh virtualenv, whose ``zerolint`` then checks the bundled example.

Dependencies come from the configured package index (pip's own configuration).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.test_precommit import snapshot_of_this_project

PROJECT = Path(__file__).resolve().parent.parent
README = (PROJECT / "README.md").read_text()


def sh(
    *cmd: str | os.PathLike[str],
    cwd: Path = PROJECT,
    timeout: float = 600,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [os.fspath(c) for c in cmd],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def installing_section() -> str:
    return README.split("## Installing", 1)[1].split("\n## ", 1)[0]


def test_no_doc_says_pip_install_zerolint_from_pypi() -> None:
    docs = [PROJECT / "README.md", *PROJECT.glob("docs/**/*.md"), *PROJECT.glob("rules/*.md")]
    texts = {p: p.read_text() for p in docs}
    texts |= {p: p.read_text() for p in PROJECT.glob("docs/github-actions/*.yml")}
    bare = re.compile(r"pip install (-\S+ )*['\"]?zerolint(\[\w+\])?(?!\s*@)['\"]?(\s|$|`)")
    for path, text in texts.items():
        assert not bare.search(text), f"{path.relative_to(PROJECT)}: {bare.search(text)[0]!r}"


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("venv")
    sh(sys.executable, "-m", "venv", folder)
    return folder


def check_example(venv: Path) -> None:
    run = subprocess.run(
        [venv / "bin" / "zerolint", "check", "--no-cache", "examples/"],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 1, run.stderr
    assert "examples/indexer_builder.py:36:45: ZL001" in run.stdout


@pytest.mark.slow
@pytest.mark.network
def test_the_readme_install_commands(venv: Path, tmp_path: Path) -> None:
    section = installing_section()
    pip = venv / "bin" / "pip"
    # A built wheel, as the README builds it.
    assert "pip wheel --no-deps . -w dist" in section
    sh(pip, "wheel", "-q", "--no-deps", ".", "-w", tmp_path / "dist", cwd=PROJECT)
    (wheel,) = (tmp_path / "dist").glob("zerolint-*.whl")
    assert f"dist/{wheel.name}" in section
    sh(pip, "install", "-q", wheel)
    check_example(venv)
    sh(venv / "bin" / "zerolint", "rule", "ZL901")
    # A git URL at a commit, as the README writes it and as the workflows' step runs it.
    repo = tmp_path / "clone"
    repo.mkdir()
    rev = snapshot_of_this_project(repo)
    assert '"git+file:///path/to/zerolint@<commit sha>"' in section
    for workflow in sorted((PROJECT / "docs" / "github-actions").glob("*.yml")):
        jobs = yaml.safe_load(workflow.read_text())["jobs"]["zerolint"]["steps"]
        (step,) = [s["run"] for s in jobs if s.get("name") == "Install zerolint"]
        sh(pip, "uninstall", "-q", "-y", "zerolint")
        path = f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"
        env = {**os.environ, "PATH": path, "ZEROLINT_GIT": f"file://{repo}", "ZEROLINT_REV": rev}
        sh("bash", "-c", step, env=env)
        check_example(venv)
    # The [vllm] extra from a clone resolves, with torch (resolved only: not downloaded).
    assert '"/path/to/zerolint[vllm]"' in section
    report = sh(pip, "install", "--dry-run", "-q", "--report", "-", f"{repo}[vllm]").stdout
    assert '"name": "torch"' in report
