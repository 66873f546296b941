"""Three ways the cache once answered other than ``--no-cache``, or wrote outside the project.

- Whether a file is a candidate depends on the other files of the run (a call of a wrapper
  counts only where the wrapper's file is checked too): one file checked alone must not
  make a later whole-tree run, served from the cache, miss the finding through the wrapper.
- A cache folder is the project's, and a project can be cloned: a symbolic link planted
  in it is never written through, so zerolint writes nothing outside the project.
- A file named twice on the command line is reported by a cached run as by a fresh one.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from tests.test_reliability_cache import check, same_as_uncached, write

FINDING = "ZL001"
KERN = """\
from deep_gemm import get_paged_mqa_logits_metadata


def meta(lens, num_sms):
    return get_paged_mqa_logits_metadata(lens, 64, num_sms)
"""
USER = """\
from kern import meta


def build(seq_lens, num_sms):
    return meta(seq_lens // 4, num_sms)
"""
# The same file before the wrapper was imported and called: it names nothing of kern.py.
USER_BEFORE = """\
def build(seq_lens, num_sms):
    return seq_lens
"""
BUG = """\
from deep_gemm import get_paged_mqa_logits_metadata


def build(seq_lens, num_sms):
    lens = seq_lens // 4
    return get_paged_mqa_logits_metadata(lens, 64, num_sms)
"""


@pytest.fixture(autouse=True)
def own_machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's own user cache folder, where the cache key lives."""
    home = tmp_path / "machine"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    return home


def served_from_cache(cwd: Path, *args: str) -> bool:
    timings = io.StringIO()
    with contextlib.redirect_stderr(timings):
        check(cwd, "--timings", *args)
    return "cached=1" in timings.getvalue()


# --- a file that is a candidate in one set of files and not in another ------------------


def test_one_file_checked_between_two_tree_runs_keeps_the_finding_through_the_wrapper(
    tmp_path: Path,
) -> None:
    write(tmp_path, {"pyproject.toml": "[tool.zerolint]\n", "kern.py": KERN, "user.py": USER})
    assert FINDING in same_as_uncached(tmp_path, ".")
    # Alone, user.py calls no sink: kern.py, where `meta` is seen to wrap one, is not checked.
    assert FINDING not in same_as_uncached(tmp_path, "user.py")
    # The tree's result for user.py was kept beside the one file's: still served warm, and
    # with the finding.
    assert served_from_cache(tmp_path, ".")
    assert FINDING in same_as_uncached(tmp_path, ".")


def test_a_file_edited_and_checked_alone_is_looked_at_again_by_the_tree(tmp_path: Path) -> None:
    # The tree's results were made before user.py called the wrapper; pre-commit then
    # checks the edited user.py alone, where it calls no sink.
    write(tmp_path, {"pyproject.toml": "[tool.zerolint]\n", "kern.py": KERN})
    write(tmp_path, {"user.py": USER_BEFORE})
    assert FINDING not in same_as_uncached(tmp_path, ".")
    write(tmp_path, {"user.py": USER})
    assert FINDING not in same_as_uncached(tmp_path, "user.py")
    assert FINDING in same_as_uncached(tmp_path, ".")


def test_the_tree_and_a_file_naming_no_sink_alternate_warm(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": "[tool.zerolint]\n", "kern.py": KERN, "user.py": USER})
    write(tmp_path, {"plain.py": "x = 1\n"})
    for _ in range(2):
        same_as_uncached(tmp_path, ".")
        same_as_uncached(tmp_path, "plain.py")
    assert served_from_cache(tmp_path, ".")
    assert served_from_cache(tmp_path, "plain.py")


# --- two files of one module name; a file that cannot be decoded ------------------------


def test_which_of_two_same_named_modules_imports_reach_is_part_of_the_set(
    tmp_path: Path,
) -> None:
    """`from helper import ratio` reaches the first file named `helper` in the run's order,
    which is by path as spelt: an absolute spelling sorts first. The same files spelt
    otherwise are another set for the cache, not one whose results can be shared."""
    write(
        tmp_path,
        {
            "pyproject.toml": "[tool.zerolint]\n",
            "x/helper.py": "def ratio(lens):\n    return max(lens // 4, 1)\n",
            "y/helper.py": "def ratio(lens):\n    return lens // 4\n",
            "main.py": "import deep_gemm\n\nfrom helper import ratio\n\n\ndef build(seq_lens):\n"
            "    return deep_gemm.get_paged_mqa_logits_metadata(ratio(seq_lens), 64, 132)\n",
        },
    )
    assert FINDING not in same_as_uncached(tmp_path, "main.py", "x", "y")
    assert FINDING in same_as_uncached(tmp_path, "main.py", "x", str(tmp_path / "y"))


def test_a_file_that_cannot_be_decoded_is_reported_by_every_set_it_is_in(
    tmp_path: Path,
) -> None:
    """It names no sink, so it is no candidate; but only reading it says it cannot be
    decoded, and a cached "no candidate" must not leave it unread."""
    write(tmp_path, {"pyproject.toml": "[tool.zerolint]\n", "ok.py": "x = 1\n"})
    write(tmp_path, {"bad.py": b'x = "caf\xe9"\n', "nul.py": b"x = 1\0\n"})
    assert "bad.py: ZL903 " in same_as_uncached(tmp_path, ".")
    assert "bad.py: ZL903 " in same_as_uncached(tmp_path, "bad.py")
    write(tmp_path, {"ok.py": "x = 2\n"})  # the tree again, not served warm
    for _ in range(2):
        out = same_as_uncached(tmp_path, ".", fmt="json")
        assert json.loads(out)["summary"]["files_checked"] == 1  # ok.py: the others not


# --- symbolic links planted in the cache folder -----------------------------------------


def bucket_name(tmp_path: Path) -> str:
    """The bucket's file name, as a planted link would be named: it is predictable."""
    probe = tmp_path / "probe"
    write(probe, {"pyproject.toml": "[tool.zerolint]\n", "bug.py": BUG})
    check(probe, ".")
    (bucket,) = (probe / ".zerolint_cache" / "v2").glob("*.json")
    return bucket.name


@pytest.mark.parametrize("existing", [True, False], ids=["to-a-file", "to-no-file"])
@pytest.mark.parametrize("name", ["bucket", "lock", "CACHEDIR.TAG", ".gitignore"])
def test_a_link_planted_in_the_cache_folder_is_not_written_through(
    tmp_path: Path, name: str, existing: bool
) -> None:
    project, victim = tmp_path / "project", tmp_path / "victim.txt"
    write(project, {"pyproject.toml": "[tool.zerolint]\n", "bug.py": BUG})
    if existing:
        victim.write_text("precious user data\n")
    bucket = bucket_name(tmp_path)
    where = {
        "bucket": f"v2/{bucket}",
        "lock": f"v2/{bucket.removesuffix('.json')}.lock",
    }.get(name, name)
    link = project / ".zerolint_cache" / where
    link.parent.mkdir(parents=True)
    link.symlink_to(victim)
    for _ in range(2):
        assert FINDING in same_as_uncached(project, ".")
        if existing:
            assert victim.read_text() == "precious user data\n"
        else:
            assert not victim.exists()
    if name == "bucket":  # the link was replaced by the bucket, which serves the next run
        assert not link.is_symlink()
        assert served_from_cache(project, ".")


@pytest.mark.parametrize("folder", [".zerolint_cache", ".zerolint_cache/v2"])
def test_a_linked_cache_folder_is_not_used(
    tmp_path: Path, folder: str, capsys: pytest.CaptureFixture[str]
) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    write(project, {"pyproject.toml": "[tool.zerolint]\n", "bug.py": BUG})
    # A folder of the user's, with more JSON files than the cache keeps buckets.
    kept = {f"{i}.json": "{}\n" for i in range(12)}
    write(elsewhere, kept)
    (project / folder).parent.mkdir(parents=True, exist_ok=True)
    (project / folder).symlink_to(elsewhere, target_is_directory=True)
    capsys.readouterr()
    for _ in range(2):
        assert FINDING in same_as_uncached(project, ".")
    assert sorted(p.name for p in elsewhere.iterdir()) == sorted(kept)
    warnings = [line for line in capsys.readouterr().err.splitlines() if "cache" in line]
    assert warnings and all("symbolic link" in line for line in warnings), warnings


def test_a_run_without_a_cache_key_is_a_run_without_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The user's cache folder cannot be made (a file stands where it would be): no key,
    # so no cache, as for a refused cache folder; the run itself is whole.
    (tmp_path / "not-a-folder").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "not-a-folder"))
    project = tmp_path / "project"
    write(project, {"pyproject.toml": "[tool.zerolint]\n", "bug.py": BUG})
    assert FINDING in same_as_uncached(project, ".")
    assert not (project / ".zerolint_cache").exists()


# --- one file named twice ---------------------------------------------------------------


def test_a_file_named_twice_is_reported_alike_cold_and_warm(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": "[tool.zerolint]\n", "bug.py": BUG})
    write(tmp_path, {"latin.py": b'x = "\xff"\n'})  # ZL903: one file that cannot be checked
    args = ("bug.py", str(tmp_path / "bug.py"), "latin.py", str(tmp_path / "latin.py"))
    cold = json.loads(same_as_uncached(tmp_path, *args, fmt="json"))
    warm = json.loads(same_as_uncached(tmp_path, *args, fmt="json"))
    assert served_from_cache(tmp_path, *args)
    assert warm == cold
    # Checked and reported once each, under the first spelling (discovery merges them).
    assert [(f["code"], f["path"]) for f in warm["findings"]] == [(FINDING, "bug.py")]
    assert [(d["code"], d["path"]) for d in warm["diagnostics"]] == [("ZL903", "latin.py")]
    assert warm["summary"]["files_checked"] == 1
