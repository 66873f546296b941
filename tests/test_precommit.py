"""The pre-commit hook, as a user meets it: ``repo:`` + ``rev:`` in their own repository.

The slow test builds a throwaway serving repository with a builder modelled on vLLM
0.27.1's indexer decode branch (docs/vllm-facts.md), points ``.pre-commit-config.yaml``
at a commit of this project, and runs the real ``pre-commit run --all-files``: pre-commit
makes a virtualenv and pip-installs zerolint from that commit (PyPI for the dependencies).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

import yaml

PROJECT = Path(__file__).resolve().parent.parent

# The decode branch of DeepseekV32IndexerMetadataBuilder in vLLM 0.27.1, reduced to the
# path the lengths take: floor division by the compress ratio (in place on a buffer view,
# or into a buffer whose padding rows are set to 0), unsqueeze, then the scheduler.
BUILDER = '''\
"""DeepSeek-V4 indexer metadata for decode, in the shape of vLLM 0.27.1's builder."""

from dataclasses import dataclass

import torch

from vllm.utils.deep_gemm import get_paged_mqa_logits_metadata, has_deep_gemm


@dataclass
class DecodeMetadata:
    seq_lens: torch.Tensor
    schedule_metadata: torch.Tensor


class IndexerMetadataBuilder:
    def __init__(self, compress_ratio: int, storage_block_size: int, num_sms: int,
                 max_tokens: int, device: torch.device) -> None:
        self.compress_ratio = compress_ratio
        self.storage_block_size = storage_block_size
        self.num_sms = num_sms
        self.expanded_seq_lens_buffer = torch.zeros(max_tokens, dtype=torch.int32, device=device)
        self.scheduler_metadata_buffer = torch.empty(
            (num_sms + 1, 2), dtype=torch.int32, device=device
        )

    def build_decode(self, seq_lens: torch.Tensor, num_decodes: int, num_decode_tokens: int,
                     seq_lens_is_buffer_view: bool) -> DecodeMetadata:
        # For DeepSeek-V4 the indexer KV cache holds compressed tokens.
        if self.compress_ratio > 1:
            if seq_lens_is_buffer_view:
                seq_lens //= self.compress_ratio
            else:
                self.expanded_seq_lens_buffer[:num_decodes] = seq_lens // self.compress_ratio
                self.expanded_seq_lens_buffer[num_decodes:num_decode_tokens] = 0
                seq_lens = self.expanded_seq_lens_buffer[:num_decode_tokens]
        if seq_lens.dim() == 1:
            seq_lens = seq_lens.unsqueeze(-1)
        if has_deep_gemm():
            self.scheduler_metadata_buffer[:] = get_paged_mqa_logits_metadata(
                seq_lens,
                self.storage_block_size,
                self.num_sms,
            )
        return DecodeMetadata(seq_lens, self.scheduler_metadata_buffer)
'''

SINK_LINE = next(
    number
    for number, line in enumerate(BUILDER.splitlines(), 1)
    if "= get_paged_mqa_logits_metadata(" in line
)

GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "zerolint tests",
    "GIT_AUTHOR_EMAIL": "tests@zerolint.invalid",
    "GIT_COMMITTER_NAME": "zerolint tests",
    "GIT_COMMITTER_EMAIL": "tests@zerolint.invalid",
}


def run(
    *cmd: str | os.PathLike[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [os.fspath(c) for c in cmd],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def git(*args: str, cwd: Path) -> str:
    done = run(
        "git", "-c", "commit.gpgsign=false", *args, cwd=cwd, env={**os.environ, **GIT_IDENTITY}
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def commit_all(repo: Path, message: str) -> str:
    git("add", "-A", cwd=repo)
    git("commit", "-q", "--no-verify", "-m", message, cwd=repo)
    return git("rev-parse", "HEAD", cwd=repo).strip()


def snapshot_of_this_project(dest: Path) -> str:
    """A git repository holding this working tree's files (committed or not); its HEAD."""
    listed = git("ls-files", "-co", "--exclude-standard", "-z", cwd=PROJECT)
    for name in filter(None, listed.split("\0")):
        source = PROJECT / name
        if source.is_file():  # listed but deleted in the working tree: skip
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    git("init", "-q", cwd=dest)
    return commit_all(dest, "snapshot of the zerolint working tree")


def test_the_hook_manifest_is_valid() -> None:
    done = run(
        sys.executable,
        "-m",
        "pre_commit",
        "validate-manifest",
        ".pre-commit-hooks.yaml",
        cwd=PROJECT,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_hooks_run_zerolint_check_once_over_python_files() -> None:
    hooks = {h["id"]: h for h in yaml.safe_load((PROJECT / ".pre-commit-hooks.yaml").read_text())}
    assert hooks["zerolint"]["entry"] == "zerolint check --force-exclude --touching"
    assert hooks["zerolint-changed-only"]["entry"] == "zerolint check --force-exclude"
    for hook in hooks.values():
        assert hook["language"] == "python"
        assert hook["types"] == ["python"]
        assert hook.get("pass_filenames", True) is True
        assert hook["require_serial"] is True


def test_this_projects_config_is_valid() -> None:
    done = run(
        sys.executable,
        "-m",
        "pre_commit",
        "validate-config",
        ".pre-commit-config.yaml",
        cwd=PROJECT,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def local_hooks() -> dict[str, dict]:
    config = yaml.safe_load((PROJECT / ".pre-commit-config.yaml").read_text())
    return {h["id"]: h for repo in config["repos"] for h in repo["hooks"]}


def test_the_self_check_hook_installs_the_projects_dependencies() -> None:
    pyproject = tomllib.loads((PROJECT / "pyproject.toml").read_text())
    assert (
        local_hooks()["zerolint"]["additional_dependencies"] == pyproject["project"]["dependencies"]
    )


def test_the_self_check_hook_skips_the_deliberately_vulnerable_files() -> None:
    exclude = re.compile(local_hooks()["zerolint"]["exclude"])
    pyproject = tomllib.loads((PROJECT / "pyproject.toml").read_text())
    for folder in pyproject["tool"]["zerolint"]["exclude"]:
        assert exclude.search(f"{folder}/anything.py"), folder
    assert not exclude.search("zerolint/check.py")


@pytest.mark.slow
@pytest.mark.network
def test_pre_commit_fails_on_the_vulnerable_builder_and_passes_after_fix(tmp_path: Path) -> None:
    hook_repo = tmp_path / "zerolint"
    hook_repo.mkdir()
    rev = snapshot_of_this_project(hook_repo)

    server = tmp_path / "server"
    (server / "serving").mkdir(parents=True)
    (server / "serving" / "indexer.py").write_text(BUILDER)
    (server / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hook_repo}\n    rev: {rev}\n    hooks:\n      - id: zerolint\n"
    )
    git("init", "-q", cwd=server)
    commit_all(server, "a builder that feeds all-zero lengths to the scheduler")

    # A private pre-commit home, so the hook's environment is really built here.
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")}
    env.pop("VIRTUAL_ENV", None)
    pre_commit = (sys.executable, "-m", "pre_commit", "run", "--all-files", "--color", "never")

    started = time.perf_counter()
    first = run(*pre_commit, cwd=server, env=env, timeout=900)
    install_and_run = time.perf_counter() - started
    print(f"first pre-commit run (virtualenv + pip install + check): {install_and_run:.1f} s")
    output = first.stdout + first.stderr
    assert first.returncode == 1, output
    assert f"serving/indexer.py:{SINK_LINE}:" in output and "ZL001" in output, output

    fix = run(
        sys.executable,
        "-m",
        "zerolint",
        "check",
        "--fix",
        "serving/indexer.py",
        cwd=server,
        timeout=300,
    )
    assert fix.returncode == 0, fix.stdout + fix.stderr
    assert "torch.clamp(seq_lens, min=1)," in (server / "serving" / "indexer.py").read_text()
    git("add", "-A", cwd=server)

    started = time.perf_counter()
    second = run(*pre_commit, cwd=server, env=env, timeout=300)
    print(f"second pre-commit run (environment cached): {time.perf_counter() - started:.1f} s")
    assert second.returncode == 0, second.stdout + second.stderr
    assert "zerolint" in second.stdout and "Passed" in second.stdout


# --- the example GitHub Actions workflows ----------------------------------------------

WORKFLOWS = PROJECT / "docs" / "github-actions"


def workflow_job(name: str) -> dict:
    return yaml.safe_load((WORKFLOWS / name).read_text())["jobs"]["zerolint"]


def zerolint_step(job: dict) -> str:
    (command,) = [s["run"] for s in job["steps"] if s.get("run", "").startswith("zerolint ")]
    return command


def test_the_sarif_workflow_uploads_the_file_it_writes() -> None:
    job = workflow_job("zerolint-sarif.yml")
    assert job["permissions"]["security-events"] == "write"
    assert zerolint_step(job) == "zerolint check --format sarif --exit-zero > zerolint.sarif"
    (upload,) = [
        s
        for s in job["steps"]
        if s.get("uses", "").startswith("github/codeql-action/upload-sarif@")
    ]
    assert upload["with"]["sarif_file"] == "zerolint.sarif"


def test_the_annotations_workflow_uses_the_github_format() -> None:
    assert (
        zerolint_step(workflow_job("zerolint-annotations.yml")) == "zerolint check --format github"
    )


def run_workflow_step(name: str, tree: Path) -> subprocess.CompletedProcess[str]:
    (tree / "serving").mkdir(parents=True)
    (tree / "serving" / "indexer.py").write_text(BUILDER)
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
    return run("bash", "-c", zerolint_step(workflow_job(name)), cwd=tree, env=env)


def test_the_sarif_step_writes_a_zl001_result_and_exits_zero(tmp_path: Path) -> None:
    done = run_workflow_step("zerolint-sarif.yml", tmp_path)
    assert done.returncode == 0, done.stderr
    sarif = json.loads((tmp_path / "zerolint.sarif").read_text())
    assert sarif["version"] == "2.1.0"
    (result,) = sarif["runs"][0]["results"]
    assert result["ruleId"] == "ZL001"
    region = result["locations"][0]["physicalLocation"]["region"]
    assert region["startLine"] == SINK_LINE


def test_the_annotations_step_prints_an_error_command_and_fails(tmp_path: Path) -> None:
    done = run_workflow_step("zerolint-annotations.yml", tmp_path)
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith(f"::error file=serving/indexer.py,line={SINK_LINE},")


# --- the default hook sees paths that cross modules (docs/pre-commit.md) ---------------

HELPER = """\
def compressed(seq_lens, ratio):
    return seq_lens // ratio
"""
CALLER = """\
from deep_gemm import get_paged_mqa_logits_metadata

from serving.helper import compressed


def build(seq_lens, ratio, num_sms):
    lens = compressed(seq_lens, ratio)
    return get_paged_mqa_logits_metadata(lens, 64, num_sms)
"""


def documented_config(repo: Path, rev: str) -> str:
    """docs/pre-commit.md's configuration block, pointed at ``repo`` and ``rev``."""
    doc = (PROJECT / "docs" / "pre-commit.md").read_text()
    block = doc.split("<!-- tested:", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    assert "/path/to/zerolint" in block and "0" * 40 in block
    return block.replace("/path/to/zerolint", str(repo)).replace("0" * 40, rev)


@pytest.mark.slow
@pytest.mark.network
def test_the_default_hook_fails_when_a_path_crosses_into_an_unchanged_module(
    tmp_path: Path,
) -> None:
    hook_repo = tmp_path / "zerolint"
    hook_repo.mkdir()
    rev = snapshot_of_this_project(hook_repo)
    server = tmp_path / "server"
    (server / "serving").mkdir(parents=True)
    (server / "serving" / "__init__.py").write_text("")
    (server / "serving" / "helper.py").write_text(HELPER)
    (server / "serving" / "builder.py").write_text(CALLER)
    (server / "serving" / "other.py").write_text("VALUE = 1\n")
    config = documented_config(hook_repo, rev)
    config += "      - id: zerolint-changed-only\n"
    (server / ".pre-commit-config.yaml").write_text(config)
    git("init", "-q", cwd=server)
    commit_all(server, "a builder whose lengths are divided in a helper")

    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")}
    env.pop("VIRTUAL_ENV", None)

    def hook(name: str) -> subprocess.CompletedProcess[str]:
        # What `git commit` runs: the hook over the staged files only.
        return run(
            sys.executable,
            "-m",
            "pre_commit",
            "run",
            name,
            "--color",
            "never",
            cwd=server,
            env=env,
            timeout=900,
        )

    def stage_edit(name: str) -> None:
        path = server / "serving" / name
        path.write_text(path.read_text() + "# edited\n")
        git("add", "-A", cwd=server)

    stage_edit("builder.py")  # the sink's file changes; the division is in helper.py
    default = hook("zerolint")
    output = default.stdout + default.stderr
    assert default.returncode == 1, output
    assert "serving/builder.py:8:12: ZL001" in output
    assert "serving/helper.py:2: return seq_lens // ratio" in output
    # The other hook is installable and runs (what it sees of this path depends on what
    # the cache learnt from earlier whole-project runs).
    changed_only = hook("zerolint-changed-only")
    assert changed_only.returncode in (0, 1), changed_only.stdout + changed_only.stderr

    commit_all(server, "edit the builder")
    stage_edit("helper.py")  # only the division's file changes
    assert hook("zerolint").returncode == 1

    commit_all(server, "edit the helper")
    stage_edit("other.py")  # a file on no path: the commit is not blocked by old findings
    unrelated = hook("zerolint")
    assert unrelated.returncode == 0, unrelated.stdout + unrelated.stderr

    commit_all(server, "edit an unrelated module")
    script = server / "bin" / "serve"  # pre-commit takes it for Python by its shebang
    script.parent.mkdir()
    script.write_text("#!/usr/bin/env python3\n" + BUILDER)
    script.chmod(0o755)
    git("add", "-A", cwd=server)
    added = hook("zerolint")  # no walk of the project finds it: the hook checks it as named
    assert added.returncode == 1, added.stdout + added.stderr
    assert f"bin/serve:{SINK_LINE + 1}:" in added.stdout + added.stderr

    commit_all(server, "add a script")
    (server / "serving" / "ratios.py").write_text("def quarter(lens):\n    return lens // 4\n")
    git("add", "serving/ratios.py", cwd=server)
    # Not in the commit: a scratch file whose path runs through the staged module.
    (server / "serving" / "scratch.py").write_text(
        CALLER.replace("serving.helper import compressed", "serving.ratios import quarter").replace(
            "compressed(seq_lens, ratio)", "quarter(seq_lens)"
        )
    )
    untracked = hook("zerolint")
    assert untracked.returncode == 0, untracked.stdout + untracked.stderr
    git("add", "serving/scratch.py", cwd=server)
    staged = hook("zerolint")
    assert staged.returncode == 1, staged.stdout + staged.stderr
    assert "serving/scratch.py:8:12: ZL001" in staged.stdout + staged.stderr


@pytest.mark.slow
@pytest.mark.network
def test_the_hooks_check_a_staged_file_whose_name_starts_with_a_dash(tmp_path: Path) -> None:
    """pre-commit passes ``-q.py`` after the hook's arguments as it is; both hooks check it
    as a file (argparse alone took it for ``-q``), with options in ``args:`` too."""
    hook_repo = tmp_path / "zerolint"
    hook_repo.mkdir()
    rev = snapshot_of_this_project(hook_repo)
    server = tmp_path / "server"
    server.mkdir()
    (server / "ok.py").write_text("VALUE = 1\n")
    config = documented_config(hook_repo, rev)
    config += "      - id: zerolint-changed-only\n        args: [--select, ZL001]\n"
    (server / ".pre-commit-config.yaml").write_text(config)
    git("init", "-q", cwd=server)
    commit_all(server, "a clean module")
    (server / "-q.py").write_text(
        "from deep_gemm import get_paged_mqa_logits_metadata\n\n\n"
        "def build(seq_lens, ratio, num_sms):\n"
        "    return get_paged_mqa_logits_metadata(seq_lens // ratio, 64, num_sms)\n"
    )
    (server / "ok.py").write_text("VALUE = 2\n")
    git("add", "-A", cwd=server)
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")}
    env.pop("VIRTUAL_ENV", None)
    for hook in ("zerolint", "zerolint-changed-only"):
        command = (sys.executable, "-m", "pre_commit", "run", hook, "--color", "never")
        done = run(*command, cwd=server, env=env, timeout=900)
        output = done.stdout + done.stderr
        assert done.returncode == 1, output
        assert "-q.py:5:12: ZL001 " in output, output
        assert "unrecognized arguments" not in output and "usage:" not in output
