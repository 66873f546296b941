"""The cache never changes what a run says: a cached run prints what ``--no-cache`` prints.

Each case is a way the cache once answered from the past (issue 18, items 2-5; issue 16,
item 1): bytes edited while a run read them, a cache committed to git or edited by hand,
results that depend on which other files are checked, an edit that keeps size and mtime,
corrupt buckets, and paths shown from the folder the cache was written in.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from zerolint.cache import ResultCache
from zerolint.cli import main

BUG = """\
from deep_gemm import get_paged_mqa_logits_metadata


def build(seq_lens, num_sms):
    lens = seq_lens // 4
    return get_paged_mqa_logits_metadata(lens, 64, num_sms)
"""
# The same size in bytes, with no division: what a user's editor might hold for a moment.
SAFE = BUG.replace("lens = seq_lens // 4", "lens = seq_lens *  4")

BUILDER = """\
from deep_gemm import get_paged_mqa_logits_metadata

from helpers import shrink


def build(seq_lens, num_sms):
    return get_paged_mqa_logits_metadata(shrink(seq_lens), 64, num_sms)
"""
HELPERS = """\
def shrink(seq_lens):
    return seq_lens // 4
"""
FINDING = "ZL001"


@pytest.fixture(autouse=True)
def own_machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's own user cache folder, where the cache key lives."""
    home = tmp_path / "machine-a"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    return home


def write(root: Path, files: dict[str, str | bytes]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text)


def check(cwd: Path, *args: str, cache: bool = True, fmt: str = "text") -> tuple[int, str]:
    options = ["check", "--color", "never", "--format", fmt, *([] if cache else ["--no-cache"])]
    old = Path.cwd()
    os.chdir(cwd)
    try:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main([*options, *args])
    finally:
        os.chdir(old)
    return code, out.getvalue()


def same_as_uncached(cwd: Path, *args: str, fmt: str = "text") -> str:
    """The cached run's exit code and output, checked against a ``--no-cache`` run's."""
    cached = check(cwd, *args, fmt=fmt)
    fresh = check(cwd, *args, cache=False, fmt=fmt)
    assert cached == fresh
    return cached[1]


def buckets(root: Path) -> list[Path]:
    return sorted((root / ".zerolint_cache").glob("*/*.json"))


def hide_findings(bucket: Path) -> None:
    """What someone editing the cache by hand would do: empty every stored result."""
    data = json.loads(bucket.read_bytes())
    payload = data.get("payload", data)
    for entry in payload["results"].values():
        entry["result"].update({"f": [], "p": [], "d": []})
    if "payload" in data:
        data["payload"] = payload
    bucket.write_text(json.dumps(data))


# --- 18.2: analyse exactly the bytes that were hashed ------------------------------------


def test_an_edit_during_a_run_cannot_poison_the_cache(tmp_path: Path, monkeypatch) -> None:
    write(tmp_path, {"pyproject.toml": "[tool.zerolint]\n", "bug.py": BUG})
    bug = tmp_path / "bug.py"
    from zerolint.engine import Engine

    real_run = Engine.run

    def saved_then_restored(self, files, **kwargs):
        # The user saves a clamped version after zerolint hashed the file, then undoes it.
        bug.write_text(SAFE)
        try:
            return real_run(self, files, **kwargs)
        finally:
            bug.write_text(BUG)

    monkeypatch.setattr(Engine, "run", saved_then_restored)
    first = check(tmp_path, ".")
    monkeypatch.setattr(Engine, "run", real_run)
    assert FINDING in first[1]  # the bytes hashed are the bytes analysed
    assert FINDING in same_as_uncached(tmp_path, ".")


# --- 18.3: a cache committed to git, or edited by hand, is not believed -------------------


def git(*args: str, cwd: Path) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
    }
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env)


def test_a_hand_edited_cache_does_not_hide_a_finding(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": "[tool.zerolint]\n", "bug.py": BUG})
    assert FINDING in check(tmp_path, ".")[1]
    (bucket,) = buckets(tmp_path)
    hide_findings(bucket)
    assert FINDING in same_as_uncached(tmp_path, ".")


def test_a_cache_committed_to_git_does_not_hide_findings_in_a_clone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    origin = tmp_path / "origin"
    write(origin, {"pyproject.toml": "[tool.zerolint]\n", "bug.py": BUG})
    git("init", "-q", cwd=origin)
    check(origin, ".")
    (bucket,) = buckets(origin)
    hide_findings(bucket)  # whoever committed it made it say "clean"
    git("add", "-A", cwd=origin)
    git("add", "-f", ".zerolint_cache", cwd=origin)
    git("commit", "-qm", "add a cache", cwd=origin)
    clone = tmp_path / "clone"
    git("clone", "-q", str(origin), str(clone), cwd=tmp_path)
    assert buckets(clone)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "machine-b"))
    assert FINDING in same_as_uncached(clone, ".")


def test_a_cache_copied_from_another_machine_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, {"bug.py": BUG})
    first = ResultCache(tmp_path, "fp")
    found = first.lookup(tmp_path / "bug.py")
    first.store(found, {"clean": True})
    assert first.save()
    assert ResultCache(tmp_path, "fp").lookup(tmp_path / "bug.py").hit
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "machine-b"))
    assert not ResultCache(tmp_path, "fp").lookup(tmp_path / "bug.py").hit


def test_the_key_is_private_to_its_user(own_machine: Path, tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": "[tool.zerolint]\n", "bug.py": BUG})
    check(tmp_path, ".")
    (key,) = own_machine.glob("zerolint/cache-key")
    assert key.stat().st_mode & 0o077 == 0
    assert not list(tmp_path.glob(".zerolint_cache/**/cache-key"))


# --- 18.4: results that depend on more than the file's own bytes ------------------------


def test_one_file_checked_after_the_whole_tree(tmp_path: Path) -> None:
    # What pre-commit does: the helper holding the division is not among the files named.
    write(tmp_path, {"pyproject.toml": "[tool.zerolint]\n", "builder.py": BUILDER})
    write(tmp_path, {"helpers.py": HELPERS})
    assert FINDING in same_as_uncached(tmp_path, ".")
    assert FINDING not in same_as_uncached(tmp_path, "builder.py")
    assert FINDING in same_as_uncached(tmp_path, ".")


def test_a_changed_exclude(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": "[tool.zerolint]\n", "builder.py": BUILDER})
    write(tmp_path, {"helpers.py": HELPERS})
    assert FINDING in same_as_uncached(tmp_path, ".")
    write(tmp_path, {"pyproject.toml": '[tool.zerolint]\nexclude = ["helpers.py"]\n'})
    assert FINDING not in same_as_uncached(tmp_path, ".")


def test_a_removed_init_py(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": "[tool.zerolint]\n", "pkg/__init__.py": ""})
    write(tmp_path, {"pkg/builder.py": BUILDER.replace("from helpers", "from pkg.helpers")})
    write(tmp_path, {"pkg/helpers.py": HELPERS})
    assert FINDING in same_as_uncached(tmp_path, "pkg/builder.py", "pkg/helpers.py")
    # Without it, pkg/helpers.py is the module `helpers`, and `pkg.helpers` is not found.
    (tmp_path / "pkg/__init__.py").unlink()
    assert FINDING not in same_as_uncached(tmp_path, "pkg/builder.py", "pkg/helpers.py")


def test_an_edit_that_keeps_size_and_mtime(tmp_path: Path, monkeypatch) -> None:
    # Trust every stat at once, as if the file had been written long ago.
    monkeypatch.setattr("zerolint.cache.RACY_NS", 0)
    write(tmp_path, {"pyproject.toml": "[tool.zerolint]\n", "bug.py": SAFE})
    bug = tmp_path / "bug.py"
    os.utime(bug, ns=(10**18, 10**18))
    assert FINDING not in check(tmp_path, ".")[1]
    assert FINDING not in check(tmp_path, ".")[1]  # now known by its stat
    assert len(BUG) == len(SAFE)
    bug.write_text(BUG)
    os.utime(bug, ns=(10**18, 10**18))  # `touch -r`, `rsync -t`, an editor restoring it
    assert FINDING in same_as_uncached(tmp_path, ".")


# --- 18.5: corrupt caches are misses, never a crash or a hang ---------------------------

CRASHER = """
import sys
from pathlib import Path
from zerolint.cache import ResultCache
root = Path(sys.argv[1])
cache = ResultCache(root, "fp")
print(cache.lookup(root / "a.py").hit)
"""


def run_lookup(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CRASHER, str(root)],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ),
    )


@pytest.mark.parametrize("depth", [100_000])
def test_deeply_nested_json_is_a_miss(tmp_path: Path, depth: int) -> None:
    write(tmp_path, {"a.py": "x = 1\n"})
    bucket = ResultCache(tmp_path, "fp").bucket_path
    bucket.parent.mkdir(parents=True)
    bucket.write_bytes(b"[" * depth + b"]" * depth)
    proc = run_lookup(tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "False\n", "")


def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize(
    "dependency",
    [
        lambda tmp: Path("/dev/zero"),
        fifo,
        lambda tmp: tmp,  # a folder
        lambda tmp: Path("/nonexistent/x.py"),
    ],
    ids=["dev-zero", "fifo", "folder", "missing"],
)
def test_a_dependency_that_is_no_regular_file_is_a_miss(tmp_path: Path, dependency) -> None:
    write(tmp_path, {"a.py": "x = 1\n"})
    dep = dependency(tmp_path)
    cache = ResultCache(tmp_path, "fp")
    cache.store(cache.lookup(tmp_path / "a.py"), {"r": 1}, [(dep, "0" * 32)])
    assert cache.save()
    proc = run_lookup(tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "False\n", "")


@pytest.mark.parametrize(
    "deps",
    [[[1, "x"]], [["a.py"]], [[None, None]], "x", [["", "x"]], [["a\0b", "x"]], [[["a"], 2]]],
)
def test_implausible_deps_of_a_signed_bucket_are_a_miss(tmp_path: Path, deps) -> None:
    # Even an entry that passes the signature is checked before it is believed.
    write(tmp_path, {"a.py": "x = 1\n"})
    cache = ResultCache(tmp_path, "fp")
    found = cache.lookup(tmp_path / "a.py")
    cache.store(found, {"r": 1})
    cache._results[found.key]["deps"] = deps
    assert cache.save()
    assert not ResultCache(tmp_path, "fp").lookup(tmp_path / "a.py").hit


def test_a_corrupt_bucket_leaves_the_cli_run_whole(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": "[tool.zerolint]\n", "bug.py": BUG})
    check(tmp_path, ".")
    (bucket,) = buckets(tmp_path)
    bucket.write_bytes(b'{"payload": ' + b"[" * 50_000)
    assert FINDING in same_as_uncached(tmp_path, ".")


# --- 16.1: paths are shown from where the run is ----------------------------------------


@pytest.mark.parametrize("fmt", ["text", "json", "github", "sarif"])
def test_cached_paths_are_shown_from_the_current_folder(tmp_path: Path, fmt: str) -> None:
    write(tmp_path, {"pyproject.toml": "[tool.zerolint]\n", "sub/builder.py": BUILDER})
    write(tmp_path, {"sub/helpers.py": HELPERS})
    check(tmp_path, "sub")  # the cache is written from the root
    sub = tmp_path / "sub"
    out = same_as_uncached(sub, ".", fmt=fmt)
    assert "sub/builder.py" not in out and "sub/helpers.py" not in out
    assert "builder.py" in out and "helpers.py" in out
    # And from above, after a run below.
    assert "sub/builder.py" in same_as_uncached(tmp_path, "sub", fmt=fmt)


def test_the_tree_and_one_file_are_both_served_from_the_cache(tmp_path: Path) -> None:
    # Pre-commit's one file and a whole-tree run, alternating, each stay warm.
    write(tmp_path, {"pyproject.toml": "[tool.zerolint]\n", "builder.py": BUILDER})
    write(tmp_path, {"helpers.py": HELPERS})
    for _ in range(2):
        same_as_uncached(tmp_path, ".")
        same_as_uncached(tmp_path, "builder.py")
    timings = io.StringIO()
    for args in ([], ["builder.py"]):
        with contextlib.redirect_stderr(timings):
            check(tmp_path, "--timings", *args)
    assert timings.getvalue().count("cached=1") == 2, timings.getvalue()
    # A change to the helper, which only the tree's result was traced through, is seen.
    write(tmp_path, {"helpers.py": HELPERS.replace("seq_lens // 4", "max(seq_lens // 4, 1)")})
    assert FINDING not in same_as_uncached(tmp_path, "builder.py")
    assert FINDING not in same_as_uncached(tmp_path, ".")
