"""The results cache: what makes an entry hit, what invalidates it, and what it survives."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from zerolint.cache import CACHE_DIR_NAME, KEEP_BUCKETS, ResultCache, content_digest

FP = "zerolint 0.1.0|ZL001|config-hash"
OLD = time.time_ns() - 3600 * 10**9  # an mtime far enough back to trust the stat


def make(tmp_path: Path, name: str, text: str, *, mtime_ns: int | None = OLD) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if mtime_ns is not None:
        os.utime(path, ns=(mtime_ns, mtime_ns))
    return path


def analyze(cache: ResultCache, path: Path, deps: tuple[Path, ...] = ()) -> tuple[bool, object]:
    """What the checker does per file: use a hit, or compute, store and save."""
    found = cache.lookup(path)
    if found.hit:
        return True, found.result
    result = {"lines": found.content().decode().count("\n")}
    cache.store(found, result, [(d, cache.lookup(d).digest()) for d in deps])
    cache.save()
    return False, result


def test_a_stored_result_is_a_hit_in_the_next_run(tmp_path: Path) -> None:
    path = make(tmp_path, "a.py", "x = 1\n")
    assert analyze(ResultCache(tmp_path, FP), path) == (False, {"lines": 1})
    assert analyze(ResultCache(tmp_path, FP), path) == (True, {"lines": 1})


def test_a_warm_hit_does_not_read_the_file(tmp_path: Path, monkeypatch) -> None:
    # The files were just made, so their change time is now: let the stat be trusted anyway.
    monkeypatch.setattr("zerolint.cache.RACY_NS", -3600 * 10**9)
    paths = [make(tmp_path, f"pkg/m{i}.py", f"x = {i}\n") for i in range(50)]
    cold = ResultCache(tmp_path, FP)
    for path in paths:
        analyze(cold, path)
    warm = ResultCache(tmp_path, FP)
    lookups = [warm.lookup(path) for path in paths]
    assert all(found.hit for found in lookups)
    assert all(found._content is None for found in lookups)


def test_changed_content_is_a_miss(tmp_path: Path) -> None:
    path = make(tmp_path, "a.py", "x = 1\n")
    analyze(ResultCache(tmp_path, FP), path)
    make(tmp_path, "a.py", "x = 1\ny = 2\n")
    assert analyze(ResultCache(tmp_path, FP), path) == (False, {"lines": 2})


def test_a_touched_but_unchanged_file_is_still_a_hit(tmp_path: Path) -> None:
    path = make(tmp_path, "a.py", "x = 1\n")
    analyze(ResultCache(tmp_path, FP), path)
    os.utime(path, ns=(OLD + 10**9, OLD + 10**9))
    assert analyze(ResultCache(tmp_path, FP), path)[0] is True


def test_an_edit_within_the_mtime_tick_is_not_missed(tmp_path: Path) -> None:
    # Same size, same mtime, new content: only safe because a fresh file's stat is not
    # trusted (git's racily-clean rule).
    now = time.time_ns()
    path = make(tmp_path, "a.py", "x = 1\n", mtime_ns=now)
    analyze(ResultCache(tmp_path, FP), path)
    make(tmp_path, "a.py", "x = 2\n", mtime_ns=now)
    found = ResultCache(tmp_path, FP).lookup(path)
    assert not found.hit


def test_another_fingerprint_is_a_miss(tmp_path: Path) -> None:
    path = make(tmp_path, "a.py", "x = 1\n")
    analyze(ResultCache(tmp_path, FP), path)
    assert not ResultCache(tmp_path, FP + "|select=ZL002").lookup(path).hit
    assert ResultCache(tmp_path, FP).lookup(path).hit


def test_a_changed_dependency_is_a_miss(tmp_path: Path) -> None:
    user = make(tmp_path, "builder.py", "from helpers import lens\n")
    helper = make(tmp_path, "helpers.py", "def lens(x): return x // 4\n")
    analyze(ResultCache(tmp_path, FP), user, deps=(helper,))
    assert analyze(ResultCache(tmp_path, FP), user, deps=(helper,))[0] is True
    make(tmp_path, "helpers.py", "def lens(x): return max(x // 4, 1)\n")
    assert analyze(ResultCache(tmp_path, FP), user, deps=(helper,))[0] is False


def test_a_deleted_dependency_is_a_miss(tmp_path: Path) -> None:
    user = make(tmp_path, "builder.py", "from helpers import lens\n")
    helper = make(tmp_path, "helpers.py", "def lens(x): return x // 4\n")
    analyze(ResultCache(tmp_path, FP), user, deps=(helper,))
    helper.unlink()
    assert not ResultCache(tmp_path, FP).lookup(user).hit


def test_a_dependency_outside_the_root_is_tracked_by_absolute_path(tmp_path: Path) -> None:
    root = tmp_path / "project"
    user = make(root, "builder.py", "import site_helpers\n")
    outside = make(tmp_path, "site_helpers.py", "N = 4\n")
    analyze(ResultCache(root, FP), user, deps=(outside,))
    assert ResultCache(root, FP).lookup(user).hit
    make(tmp_path, "site_helpers.py", "N = 16\n")
    assert not ResultCache(root, FP).lookup(user).hit


@pytest.mark.parametrize(
    "name",
    [
        "a.py",
        "pkg/a.py",
        "./pkg/a.py",
        "pkg//a.py",
        "pkg/./a.py",
        "pkg/../a.py",
        "pkg/",
        ".",
        "",
        "..",
        "../x.py",
        "pkg/../../x.py",
        "a/b/../../..",
        "...py",
        "..a/b.py",
    ],
)
@pytest.mark.parametrize("where", ["root", "below"])
def test_a_file_is_keyed_by_its_path_from_the_root(
    tmp_path: Path, monkeypatch, name: str, where: str
) -> None:
    # Named from the root (where a relative path is taken from the root itself, the key
    # is worked out without the root's own path) or from a folder below it.
    root = tmp_path / "root"
    below = root / "sub"
    below.mkdir(parents=True)
    monkeypatch.chdir(root if where == "root" else below)
    cache = ResultCache(root, FP)
    full = os.path.normpath(os.path.join(os.getcwd(), name))
    inside = full.startswith(str(root) + os.sep)
    expected = full[len(str(root)) + 1 :] if inside else full
    assert cache.key_of(name) == expected.replace(os.sep, "/")


@pytest.mark.parametrize(
    "garbage",
    [
        b"\x00\xff not json",
        b'{"fingerprint": "zerolint 0.1.0|ZL001|config-hash", "files": [], "results": 3}',
        b"[1, 2, 3]",
        (
            b'{"fingerprint": "zerolint 0.1.0|ZL001|config-hash", "files": {"a.py": "x"},'
            b' "results": {"a.py": {"digest": 5, "deps": "no"}}}'
        ),
        (
            b'{"fingerprint": "zerolint 0.1.0|ZL001|config-hash", "files": {},'
            b' "results": {"a.py": {"digest": "%s", "result": 1, "deps": [[1]]}}}'
        ),
    ],
)
def test_a_corrupt_bucket_is_an_empty_cache_and_gets_rewritten(
    tmp_path: Path, garbage: bytes
) -> None:
    path = make(tmp_path, "a.py", "x = 1\n")
    cache = ResultCache(tmp_path, FP)
    bucket = cache.bucket_path
    bucket.parent.mkdir(parents=True)
    bucket.write_bytes(garbage.replace(b"%s", content_digest(b"x = 1\n").encode()))

    assert analyze(ResultCache(tmp_path, FP), path) == (False, {"lines": 1})
    assert analyze(ResultCache(tmp_path, FP), path) == (True, {"lines": 1})
    json.loads(bucket.read_bytes())


def test_the_cache_folder_is_tagged_and_ignored_by_git(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    path = make(tmp_path, "a.py", "x = 1\n")
    subprocess.run(["git", "-C", str(tmp_path), "add", "a.py"], check=True)
    analyze(ResultCache(tmp_path, FP), path)

    top = tmp_path / CACHE_DIR_NAME
    assert (
        (top / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    )
    status = subprocess.run(
        ["git", "-C", str(tmp_path), "status", "--porcelain", "--untracked-files=all"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert status == "A  a.py\n"


def test_a_disabled_cache_never_hits_and_writes_nothing(tmp_path: Path) -> None:
    path = make(tmp_path, "a.py", "x = 1\n")
    for _ in range(2):
        assert analyze(ResultCache.disabled(tmp_path), path) == (False, {"lines": 1})
    assert not (tmp_path / CACHE_DIR_NAME).exists()


def test_an_unwritable_cache_does_not_fail_the_run(tmp_path: Path) -> None:
    path = make(tmp_path, "a.py", "x = 1\n")
    (tmp_path / CACHE_DIR_NAME).write_text("a file where the folder should be")
    cache = ResultCache(tmp_path, FP)
    found = cache.lookup(path)
    cache.store(found, {"lines": 1})
    assert cache.save() is False


def test_two_runs_saving_at_once_keep_both_results(tmp_path: Path) -> None:
    a = make(tmp_path, "a.py", "x = 1\n")
    b = make(tmp_path, "b.py", "y = 2\n")
    first, second = ResultCache(tmp_path, FP), ResultCache(tmp_path, FP)
    analyze(first, a)
    analyze(second, b)
    fresh = ResultCache(tmp_path, FP)
    assert fresh.lookup(a).hit and fresh.lookup(b).hit


def test_entries_of_deleted_files_are_dropped_on_save(tmp_path: Path) -> None:
    a = make(tmp_path, "a.py", "x = 1\n")
    b = make(tmp_path, "b.py", "y = 2\n")
    cache = ResultCache(tmp_path, FP)
    analyze(cache, a)
    analyze(cache, b)
    a.unlink()
    analyze(ResultCache(tmp_path, FP), make(tmp_path, "c.py", "z = 3\n"))
    bucket = json.loads(ResultCache(tmp_path, FP).bucket_path.read_bytes())["payload"]
    assert sorted(bucket["results"]) == ["b.py", "c.py"]


WRITER = """
import sys
from pathlib import Path
from zerolint.cache import ResultCache
root, worker = Path(sys.argv[1]), sys.argv[2]
for i in range(25):
    path = root / f"{worker}{i}.py"
    path.write_text(f"x = {i}\\n")
    cache = ResultCache(root, "fp")
    cache.store(cache.lookup(path), {"i": i})
    assert cache.save()
"""


def test_concurrent_processes_neither_corrupt_nor_lose_results(tmp_path: Path) -> None:
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), name]) for name in ("a", "b")
    ]
    bucket = ResultCache(tmp_path, "fp").bucket_path
    while any(w.poll() is None for w in writers):
        if bucket.exists():
            json.loads(bucket.read_bytes())  # a reader sees one whole bucket or the other
    assert [w.returncode for w in writers] == [0, 0]
    results = json.loads(bucket.read_bytes())["payload"]["results"]
    # Writers take turns and merge: neither loses the other's results.
    assert sorted(results) == sorted(f"{w}{i}.py" for w in "ab" for i in range(25))
    assert sorted(p.suffix for p in bucket.parent.iterdir()) == [".json", ".lock"]


def test_only_the_newest_buckets_of_other_fingerprints_are_kept(tmp_path: Path) -> None:
    path = make(tmp_path, "a.py", "x = 1\n")
    for version in range(KEEP_BUCKETS + 3):
        analyze(ResultCache(tmp_path, f"zerolint 0.{version}"), path)
        bucket = ResultCache(tmp_path, f"zerolint 0.{version}").bucket_path
        os.utime(bucket, ns=(OLD + version * 10**9, OLD + version * 10**9))
    kept = {p.stem for p in bucket.parent.iterdir()}
    expected = {
        ResultCache(tmp_path, f"zerolint 0.{v}").bucket_path.stem
        for v in range(2, KEEP_BUCKETS + 3)
    }
    assert kept == expected  # the newest other KEEP_BUCKETS and the current one, with locks


def test_the_fingerprint_follows_the_analyzers_own_code(tmp_path: Path) -> None:
    from zerolint.check import cache_fingerprint
    from zerolint.config import Settings

    package = tmp_path / "zerolint"
    package.mkdir()
    (package / "dataflow.py").write_text("RULE = 1\n")
    before = cache_fingerprint(Settings(), package)
    assert cache_fingerprint(Settings(), package) == before
    (package / "dataflow.py").write_text("RULE = 2\n")
    assert cache_fingerprint(Settings(), package) != before


def _installed(site: Path, module: str, dist_info: str | None) -> None:
    """A package as pip lays it out: its folder, and its ``.dist-info`` beside it."""
    import importlib

    for old in site.glob("*.dist-info"):
        old.rmdir()
    (site / module).mkdir(parents=True, exist_ok=True)
    (site / module / "__init__.py").write_text("VALUE = 1\n")
    if dist_info is not None:
        (site / dist_info).mkdir()
    importlib.invalidate_caches()


def test_the_fingerprint_follows_the_python_and_the_libraries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An upgrade of LibCST or Z3 (or of Python) can change what a check finds and how it
    words it, so it must not reuse results of the old ones; a reinstall of the same
    versions (a CI job's fresh virtualenv) must."""
    from zerolint.check import cache_fingerprint, runtime_stamp
    from zerolint.config import Settings

    site = tmp_path / "site-packages"
    monkeypatch.syspath_prepend(str(site))
    deps = [("zl_dep_probe", "zl-dep.probe")]
    package = tmp_path / "zerolint"
    package.mkdir()
    (package / "engine.py").write_text("X = 1\n")

    _installed(site, "zl_dep_probe", "zl_dep_probe-1.0.dist-info")
    assert runtime_stamp(deps).endswith("; zl_dep_probe 1.0")
    before = cache_fingerprint(Settings(), package, deps)
    _installed(site, "zl_dep_probe", "zl_dep_probe-1.0.dist-info")  # reinstalled: new times
    assert cache_fingerprint(Settings(), package, deps) == before
    _installed(site, "zl_dep_probe", "ZL_Dep.Probe-1.1.dist-info")  # upgraded
    assert runtime_stamp(deps).endswith("; zl_dep_probe 1.1")
    assert cache_fingerprint(Settings(), package, deps) != before
    _installed(site, "zl_dep_probe", "other-1.1.dist-info")  # no dist-info of its own
    unversioned = runtime_stamp(deps)
    assert str(site / "zl_dep_probe" / "__init__.py") in unversioned
    os.utime(site / "zl_dep_probe" / "__init__.py", ns=(OLD, OLD))
    assert runtime_stamp(deps) != unversioned  # known by its file's time instead
    assert runtime_stamp([("zl_no_such_module", "x")]).endswith("; zl_no_such_module absent")

    python = ".".join(map(str, sys.version_info[:3]))
    assert runtime_stamp(deps).startswith(f"{sys.implementation.name} {python}; ")


def test_the_real_libraries_are_known_by_their_versions() -> None:
    from importlib.metadata import version

    from zerolint.check import runtime_stamp

    stamp = runtime_stamp()
    assert f"libcst {version('libcst')}" in stamp.split("; ")
    assert f"z3 {version('z3-solver')}" in stamp.split("; ")
