"""The results cache: a warm run on an unchanged tree reads one JSON file and parses nothing.

Layout, at the project root::

    .zerolint_cache/
        .gitignore              "*": the folder never shows up in ``git status``
        CACHEDIR.TAG            backup tools skip the folder
        v2/<fingerprint>.json   one bucket per fingerprint (tool version, rules, config)

A bucket holds, per file (keyed by its path relative to the root):

- ``files``: ``[size, mtime_ns, ctime_ns, inode, digest]``, the content digest last seen
  with that stat;
- ``results``: ``{"digest", "result", "deps"}``, a JSON result computed from content with
  that digest, valid while every ``(path, digest)`` in ``deps`` still holds.

Whether a file changed is decided by its content: the stat only saves reading it. When the
whole stat matches what was recorded, the recorded digest is trusted; otherwise the file is
read and hashed (BLAKE2b-128). As git does, the stat includes the inode and the change time,
which no tool can set back, so an edit that restores the size and mtime is still seen; and a
stat taken less than two seconds after the file's mtime or ctime is not recorded ("racily
clean"), so an edit within the filesystem's timestamp granularity cannot hide behind it.

A bucket is signed: its first field is a keyed BLAKE2b of the rest, made with a random key
that lives in the user's own cache folder (``$XDG_CACHE_HOME/zerolint/cache-key``), never in
the project. A bucket this user did not write (one committed to git and cloned, copied from
another machine, or edited by hand) fails the check and is an empty cache: results are
believed only where this machine computed them. Without a usable key there is no cache.
What is in the folder is the project's too, links included: a cache folder that is a
symbolic link means no cache (a warning says so), and a file of the cache that is one is
neither read nor written through (a write replaces the link), so the cache writes nothing
outside the project.

Concurrent runs are safe: a bucket is written by atomic replace, so a reader sees one whole
bucket; writers take turns (a lock file beside the bucket) and each merges in what the
others saved. A missing, corrupt, foreign or implausible bucket or entry is a miss, never an
error or a hang: dependencies are read only when they are regular files. The cache is a
plain optimisation:
``ResultCache.disabled()`` gives one that always misses and writes nothing (``--no-cache``).
A result is any JSON value but None (which means a miss); decoding it is the caller's job,
and a caller should treat a result it cannot decode as a miss.

The model objects are stored as plain dicts: ``finding_to_dict`` / ``finding_from_dict``
and friends below round-trip every field.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import stat as stat_module
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from zerolint import paths
from zerolint.atomic import atomic_write_bytes
from zerolint.model import Diagnostic, Finding, Flow, Op, Report, Step, Verdict

CACHE_DIR_NAME = ".zerolint_cache"
FORMAT = "v2"
# Buckets of other fingerprints (older versions or configs) kept besides the current one.
KEEP_BUCKETS = 8
# A stat this close to the file's mtime may miss a same-tick edit: hash instead.
RACY_NS = 2_000_000_000
CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by zerolint.\n"
    "# For information about cache directory tags, see https://bford.info/cachedir/\n"
)

KEY_BYTES = 32
_MAC_HEAD = b'{"mac":"'
_MAC_LEN = 64  # hex digits of a 32-byte BLAKE2b
_PAYLOAD_HEAD = b'","payload":'
# Linked cache folders already warned about: a run makes a cache per configuration.
_WARNED: set[str] = set()

T = TypeVar("T")
Stat = tuple[int, int, int, int]  # size, mtime_ns, ctime_ns, inode


def content_digest(data: bytes) -> str:
    """The digest the cache keys content by (hex BLAKE2b-128 of the bytes)."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def read_regular(
    path: str | os.PathLike[str], *, follow_symlinks: bool = True
) -> tuple[bytes, os.stat_result]:
    """The bytes of the regular file at ``path`` and its stat, taken on the open file.

    Raises ``OSError`` for anything else (a FIFO, a device such as ``/dev/zero``, a
    folder, and without ``follow_symlinks`` a symlink) without blocking on it.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat_module.S_ISREG(st.st_mode):
            raise OSError(f"{os.fspath(path)}: not a regular file")
        # Plain reads to the end (no buffered file object: a third of the time over a
        # tree's thousands of files); the first asks for one byte more than the size, so
        # that a file of that size takes one read and the end-of-file one.
        parts = []
        want = st.st_size + 1
        while chunk := os.read(fd, want):
            parts.append(chunk)
            want = 1 << 16
        data = parts[0] if len(parts) == 1 else b"".join(parts)
        return data, os.fstat(fd)
    finally:
        os.close(fd)


@dataclass(slots=True)
class FileLookup:
    """One file as the cache saw it: the cached result on a hit, else the bytes to analyze.

    ``content()`` reads the file at most once; analyze exactly those bytes and hand this
    object back to ``ResultCache.store`` so that the stored digest is of what was analyzed.
    """

    path: Path
    key: str
    result: Any | None
    _stat: Stat | None
    _content: bytes | None = None
    _digest: str | None = None
    _started_ns: int = 0
    _deps: tuple[tuple[str, str], ...] = ()
    _taken: bool = False

    @property
    def hit(self) -> bool:
        return self.result is not None

    @property
    def deps(self) -> tuple[tuple[str, str], ...]:
        """On a hit, the ``(path, digest)`` pairs the result was stored with (all current)."""
        return self._deps

    @property
    def was_read(self) -> bool:
        """Whether ``content()`` has read the file (then ``digest()`` is of those bytes)."""
        return self._content is not None or self._taken

    def content(self) -> bytes:
        if self._taken:
            raise ValueError("content() after take(): the bytes were handed over")
        if self._content is None:
            data, st = read_regular(self.path)
            if self._stat is not None and _stat_of(st, self._started_ns) != self._stat:
                self._stat = None  # changed since the lookup: that stat is not of these bytes
            digest = content_digest(data)
            if self._digest is not None and digest != self._digest:
                self.result, self._deps = None, ()  # edited since the lookup: no hit
            self._content, self._digest = data, digest
        return self._content

    def peek(self) -> bytes:
        """The bytes ``content()`` holds, else the file's bytes now, neither hashed nor kept:
        for a reader in another process (the prescan's child), which cannot hand back what it
        read; whoever analyses the file reads it through ``content()`` or ``take()``."""
        if self._content is not None:
            return self._content
        return read_regular(self.path)[0]

    def take(self) -> bytes:
        """``content()``, and let go of it here: for a caller that keeps its own copy (the
        analyser keeps the text), so that a large tree is not held twice."""
        data = self.content()
        self._content, self._taken = None, True
        return data

    def digest(self) -> str:
        if self._digest is None:
            self.content()
        assert self._digest is not None
        return self._digest


class ResultCache:
    """Per-file JSON results for one fingerprint, under ``<root>/.zerolint_cache``."""

    def __init__(
        self,
        root: Path,
        fingerprint: str,
        *,
        enabled: bool = True,
        key_file: Path | None = None,
    ) -> None:
        self.root = Path(os.path.abspath(root))
        self._prefix = os.path.join(str(self.root), "")
        self._started_ns = time.time_ns()
        self.fingerprint = fingerprint
        name = hashlib.blake2b(fingerprint.encode(), digest_size=8).hexdigest()
        self.bucket_path = self.root / CACHE_DIR_NAME / FORMAT / f"{name}.json"
        self._files: dict[str, list[Any]] = {}
        self._results: dict[str, dict[str, Any]] = {}
        self._touched: set[str] = set()  # keys whose files/results this run wrote
        self._current: dict[str, str | None] = {}  # digests read this run, by key
        self._keys: dict[str, str] = {}  # path as given -> key (the folder does not change)
        self._cwd = paths.current_folder()
        # Run from the root (as usual), a relative path that stays below it is its own key,
        # normalised: the root's own path need not be joined to it and taken off again.
        self._here = os.sep == "/" and self._cwd == str(self.root)
        self._key = machine_key(key_file) if enabled else None
        self.enabled = enabled and self._key is not None and not self._linked_folder()
        if self.enabled:
            self._files, self._results = self._read_bucket()

    @classmethod
    def disabled(cls, root: Path | None = None) -> ResultCache:
        """A cache that always misses and never writes."""
        return cls(root or Path.cwd(), "", enabled=False)

    def lookup(self, path: str | os.PathLike[str]) -> FileLookup:
        """The cached result for ``path`` if its content and dependencies are unchanged.

        Raises ``OSError`` when the file cannot be read, as reading it would.
        """
        path = path if isinstance(path, Path) else Path(path)
        key = self._key_of(path)
        stat = self._stat(path)
        found = FileLookup(path, key, None, stat, _started_ns=self._started_ns)
        if not self.enabled:
            return found
        known = self._files.get(key)
        if stat is not None and _stat_matches(known, stat):
            found._digest = known[4]  # type: ignore[index]
        digest = found.digest()  # reading the file may find it changed since the stat
        self._remember(key, found._stat, digest)
        entry = self._results.get(key)
        if isinstance(entry, dict) and entry.get("digest") == digest:
            deps = entry.get("deps")
            # Most files name no sink: nothing traced through others to look at again.
            if deps == [] or self._deps_hold(deps):
                found.result = entry.get("result")
                if deps:
                    found._deps = tuple((self._path_of(k), d) for k, d in deps)
        return found

    def store(
        self,
        lookup: FileLookup,
        result: Any,
        deps: Iterable[tuple[str | os.PathLike[str], str]] = (),
    ) -> None:
        """Record ``result`` (JSON-serialisable, not None) for the content ``lookup`` read.

        ``deps`` are the other files the result depends on, each with the digest of the
        content the analysis used (``FileLookup.digest()`` or ``content_digest``).
        """
        if not self.enabled:
            return
        if result is None:
            raise ValueError("a cached result cannot be None (None means a miss)")
        self._results[lookup.key] = {
            "digest": lookup.digest(),
            "result": result,
            "deps": sorted({(self._key_of(Path(p)), d) for p, d in deps}),
        }
        self._remember(lookup.key, lookup._stat, lookup.digest())
        self._touched.add(lookup.key)

    def key_of(self, path: str | os.PathLike[str]) -> str:
        """How the cache names ``path``: relative to the root, else absolute; ``/``-separated."""
        return self._key_of(path)

    def save(self) -> bool:
        """Write the bucket if this run changed it; False if it could not be written."""
        if not self.enabled or not self._touched:
            return True
        try:
            self._make_cache_dir()
            with _exclusive(self.bucket_path.with_suffix(".lock")):
                # Keep what another run saved meanwhile; ours wins for the files we saw.
                on_disk_files, on_disk_results = self._read_bucket()
                payload = {
                    "fingerprint": self.fingerprint,
                    "files": self._merged(on_disk_files, self._files),
                    "results": self._merged(on_disk_results, self._results),
                }
                atomic_write_bytes(self.bucket_path, self._signed(payload), follow_symlinks=False)
        except OSError:
            return False
        self._touched.clear()
        self._prune_buckets()
        return True

    # --- internals ----------------------------------------------------------------------

    def _signed(self, payload: dict[str, Any]) -> bytes:
        body = json.dumps(payload, separators=(",", ":")).encode()
        return _MAC_HEAD + self._mac(body) + _PAYLOAD_HEAD + body + b"}"

    def _mac(self, body: bytes) -> bytes:
        assert self._key is not None
        return hashlib.blake2b(body, key=self._key, digest_size=32).hexdigest().encode()

    def _merged(self, on_disk: dict[str, T], ours: dict[str, T]) -> dict[str, T]:
        merged = {k: v for k, v in on_disk.items() if self._still_there(k)}
        for key in self._touched:
            if key in ours:
                merged[key] = ours[key]
            else:
                merged.pop(key, None)
        return merged

    def _still_there(self, key: str) -> bool:
        if key in self._current:
            return self._current[key] is not None
        return os.path.exists(key if os.path.isabs(key) else self.root / key)

    def _key_of(self, path: str | os.PathLike[str]) -> str:
        name = os.fspath(path)
        key = self._keys.get(name)
        if key is None:
            key = self._keys[name] = self._compute_key(name)
        return key

    def _compute_key(self, path: str) -> str:
        if self._here and not os.path.isabs(path):
            relative = os.path.normpath(path)
            if relative != "." and relative != ".." and not relative.startswith("../"):
                return relative
        absolute = paths.absolute(path, self._cwd)
        if absolute.startswith(self._prefix):
            relative = absolute[len(self._prefix) :]
        else:
            relative = absolute  # outside the root: keyed by absolute path
        return relative if os.sep == "/" else relative.replace(os.sep, "/")

    def _path_of(self, key: str) -> str:
        return key if os.path.isabs(key) else str(self.root / key)

    def _stat(self, path: Path) -> Stat | None:
        """The stat to record, or None when it may not see a same-tick edit."""
        return _stat_of(os.stat(path), self._started_ns)

    def _remember(self, key: str, stat: Stat | None, digest: str) -> None:
        self._current[key] = digest
        if stat is None:
            if self._files.pop(key, None) is not None:
                self._touched.add(key)
            return
        entry = [*stat, digest]
        if self._files.get(key) != entry:
            self._files[key] = entry
            self._touched.add(key)

    def _deps_hold(self, deps: object) -> bool:
        if not isinstance(deps, list):
            return False
        for dep in deps:
            if not (isinstance(dep, list) and len(dep) == 2):
                return False
            key, digest = dep
            if not (isinstance(key, str) and isinstance(digest, str) and key):
                return False
            if self._current_digest(key) != digest:
                return False
        return True

    def _current_digest(self, key: str) -> str | None:
        if key in self._current:
            return self._current[key]
        path = Path(key) if os.path.isabs(key) else self.root / key
        try:
            stat = self._stat(path)
            known = self._files.get(key)
            if stat is not None and _stat_matches(known, stat):
                digest = known[4]  # type: ignore[index]
            else:
                data, st = read_regular(path)
                if stat is not None and _stat_of(st, self._started_ns) != stat:
                    stat = None
                digest = content_digest(data)
        except (OSError, ValueError):  # ValueError: a NUL byte in a path
            self._current[key] = None
            return None
        self._remember(key, stat, digest)
        return digest

    def _read_bucket(self) -> tuple[dict[str, list[Any]], dict[str, dict[str, Any]]]:
        try:
            # Not through a link: what it leads to is no bucket this cache wrote here.
            data, _ = read_regular(self.bucket_path, follow_symlinks=False)
        except OSError:
            return {}, {}
        head = len(_MAC_HEAD) + _MAC_LEN
        if not (
            data.startswith(_MAC_HEAD)
            and data[head : head + len(_PAYLOAD_HEAD)] == _PAYLOAD_HEAD
            and data.endswith(b"}")
        ):
            return {}, {}
        body = data[head + len(_PAYLOAD_HEAD) : -1]
        if not hmac.compare_digest(data[len(_MAC_HEAD) : head], self._mac(body)):
            return {}, {}  # not written by this machine's user: believe none of it
        try:
            payload = json.loads(body)
        except (ValueError, RecursionError):
            return {}, {}
        if not isinstance(payload, dict) or payload.get("fingerprint") != self.fingerprint:
            return {}, {}
        files, results = payload.get("files"), payload.get("results")
        if not isinstance(files, dict) or not isinstance(results, dict):
            return {}, {}
        return files, results

    def _make_cache_dir(self) -> None:
        """Make the cache's folders and their tags; ``OSError`` where a folder is not one.

        The folder is the project's, and so are any links in it (a cloned repository's):
        each folder is made without following one, and a file is written in place of a
        link, never through it, so that the cache writes nothing outside the project."""
        top = self.root / CACHE_DIR_NAME
        for folder in (top, self.bucket_path.parent):
            with contextlib.suppress(FileExistsError):
                os.mkdir(folder)
            if not stat_module.S_ISDIR(os.lstat(folder).st_mode):
                raise NotADirectoryError(f"{folder}: not a folder")
        if not (top / ".gitignore").exists():
            atomic_write_bytes(
                top / ".gitignore", b"# Created by zerolint.\n*\n", follow_symlinks=False
            )
        if not (top / "CACHEDIR.TAG").exists():
            atomic_write_bytes(top / "CACHEDIR.TAG", CACHEDIR_TAG.encode(), follow_symlinks=False)

    def _linked_folder(self) -> bool:
        """Whether a cache folder is a symbolic link, said once on stderr: then there is no
        cache. Wherever it leads, the project put it there, and the cache would read and
        write (and prune) that folder's files; a cloned repository's could lead anywhere."""
        for folder in (self.root / CACHE_DIR_NAME, self.bucket_path.parent):
            if os.path.islink(folder):
                if str(folder) not in _WARNED:
                    _WARNED.add(str(folder))
                    print(
                        f"zerolint: warning: {paths.display_path(folder)} is a symbolic link;"
                        " not using the cache",
                        file=sys.stderr,
                    )
                return True
        return False

    def _prune_buckets(self) -> None:
        """Drop all but the newest ``KEEP_BUCKETS`` other buckets (another run may race us)."""
        aged = []
        for bucket in self.bucket_path.parent.glob("*.json"):
            try:
                aged.append((bucket.stat().st_mtime_ns, bucket))
            except OSError:
                continue
        others = sorted((a for a in aged if a[1] != self.bucket_path), reverse=True)
        for _, old in others[KEEP_BUCKETS:]:
            for path in (old, old.with_suffix(".lock")):
                try:
                    path.unlink()
                except OSError:
                    continue


def default_key_file() -> Path:
    """Where this user's cache key lives: outside every project, so never committed."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base, "zerolint", "cache-key")


def machine_key(key_file: Path | None = None) -> bytes | None:
    """The random key that signs this user's buckets, made on first use; None if it can
    neither be read nor made (then nothing is cached)."""
    path = key_file or default_key_file()
    for _ in range(2):
        try:
            data, _ = read_regular(path)
        except FileNotFoundError:
            data = b""
        except OSError:
            return None
        if len(data) == KEY_BYTES:
            return data
        if data:
            return None  # not a key we made: do not trust, do not overwrite
        try:
            _create_key(path)
        except FileExistsError:
            continue  # another run made it first: read that one
        except OSError:
            return None
    return None


def _create_key(path: Path) -> None:
    """Write a fresh key with owner-only access; linking it into place fails if one exists."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(os.urandom(KEY_BYTES))
            handle.flush()
            os.fsync(handle.fileno())
        os.link(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


@contextlib.contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``lock_path`` while writers read, merge and replace."""
    try:
        import fcntl
    except ImportError:  # Windows: writes stay atomic; a racing run's entries may be lost
        yield
        return
    # Opened without following a link (one planted in the project's cache folder would have
    # the file it leads to created); such a link is replaced by the lock file.
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(lock_path, flags, 0o666)
    except OSError:
        if not os.path.islink(lock_path):
            raise
        os.unlink(lock_path)
        fd = os.open(lock_path, flags, 0o666)
    with os.fdopen(fd, "ab") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _stat_of(st: os.stat_result, started_ns: int) -> Stat | None:
    # Measured from the run's start: anything modified since is racy too.
    if max(st.st_mtime_ns, st.st_ctime_ns) > started_ns - RACY_NS:
        return None
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino


def _stat_matches(known: object, stat: Stat) -> bool:
    return (
        isinstance(known, list)
        and len(known) == 5
        and tuple(known[:4]) == stat
        and isinstance(known[4], str)
    )


# --- model objects as plain dicts ------------------------------------------------------
# Each *_from_dict raises KeyError or TypeError on data that is not a *_to_dict result.


def op_to_dict(op: Op) -> dict[str, Any]:
    return {"kind": op.kind, "arg": op.arg}


def op_from_dict(data: Mapping[str, Any]) -> Op:
    arg = data["arg"]
    if arg is not None and not isinstance(arg, (int, str)):
        raise TypeError(f"an Op argument must be an int, a str or null, not {arg!r}")
    return Op(_str(data, "kind"), arg)


def step_to_dict(step: Step) -> dict[str, Any]:
    return {
        "path": step.path,
        "line": step.line,
        "col": step.col,
        "code": step.code,
        "role": step.role,
        "op": op_to_dict(step.op),
        "note": step.note,
    }


def step_from_dict(data: Mapping[str, Any]) -> Step:
    return Step(
        path=_str(data, "path"),
        line=_int(data, "line"),
        col=_int(data, "col"),
        code=_str(data, "code"),
        role=_str(data, "role"),  # type: ignore[arg-type]
        op=op_from_dict(data["op"]),
        note=_str(data, "note"),
    )


def flow_to_dict(flow: Flow) -> dict[str, Any]:
    return {"steps": [step_to_dict(s) for s in flow.steps]}


def flow_from_dict(data: Mapping[str, Any]) -> Flow:
    return Flow(tuple(step_from_dict(s) for s in data["steps"]))


def verdict_to_dict(verdict: Verdict) -> dict[str, Any]:
    return {
        "status": verdict.status,
        "witness": dict(verdict.witness),
        "reason": verdict.reason,
        "flow_index": verdict.flow_index,
        "outcome": verdict.outcome,
    }


def verdict_from_dict(data: Mapping[str, Any]) -> Verdict:
    witness = data["witness"]
    if not isinstance(witness, dict) or not all(isinstance(v, int) for v in witness.values()):
        raise TypeError(f"a witness maps names to ints, not {witness!r}")
    flow_index = data["flow_index"]
    if flow_index is not None and not isinstance(flow_index, int):
        raise TypeError(f"flow_index must be an int or null, not {flow_index!r}")
    return Verdict(
        status=_str(data, "status"),  # type: ignore[arg-type]
        witness=dict(witness),
        reason=_str(data, "reason"),
        flow_index=flow_index,
        outcome=str(data.get("outcome", "")),
    )


def finding_to_dict(finding: Finding) -> dict[str, Any]:
    return {
        "code": finding.code,
        "path": finding.path,
        "line": finding.line,
        "col": finding.col,
        "end_line": finding.end_line,
        "end_col": finding.end_col,
        "message": finding.message,
        "sink": finding.sink,
        "argument": finding.argument,
        "flows": [flow_to_dict(f) for f in finding.flows],
        "verdict": None if finding.verdict is None else verdict_to_dict(finding.verdict),
        "fixable": finding.fixable,
    }


def finding_from_dict(data: Mapping[str, Any]) -> Finding:
    verdict = data["verdict"]
    fixable = data.get("fixable")
    if fixable is not None and not isinstance(fixable, bool):
        raise TypeError(f"fixable must be a bool or null, not {fixable!r}")
    return Finding(
        code=_str(data, "code"),
        path=_str(data, "path"),
        line=_int(data, "line"),
        col=_int(data, "col"),
        message=_str(data, "message"),
        sink=_str(data, "sink"),
        argument=_str(data, "argument"),
        flows=[flow_from_dict(f) for f in data["flows"]],
        verdict=None if verdict is None else verdict_from_dict(verdict),
        end_line=_int(data, "end_line"),
        end_col=_int(data, "end_col"),
        fixable=fixable,
    )


def diagnostic_to_dict(diagnostic: Diagnostic) -> dict[str, Any]:
    return {
        "code": diagnostic.code,
        "path": diagnostic.path,
        "message": diagnostic.message,
        "line": diagnostic.line,
        "col": diagnostic.col,
        "analysed": diagnostic.analysed,
    }


def diagnostic_from_dict(data: Mapping[str, Any]) -> Diagnostic:
    analysed = data.get("analysed", False)
    if not isinstance(analysed, bool):
        raise TypeError(f"analysed must be a boolean, not {analysed!r}")
    return Diagnostic(
        code=_str(data, "code"),
        path=_str(data, "path"),
        message=_str(data, "message"),
        line=_int(data, "line"),
        col=_int(data, "col"),
        analysed=analysed,
    )


def report_to_dict(report: Report) -> dict[str, Any]:
    return {
        "findings": [finding_to_dict(f) for f in report.findings],
        "proved": [finding_to_dict(f) for f in report.proved],
        "diagnostics": [diagnostic_to_dict(d) for d in report.diagnostics],
        "files_checked": report.files_checked,
    }


def report_from_dict(data: Mapping[str, Any]) -> Report:
    return Report(
        findings=[finding_from_dict(f) for f in data["findings"]],
        proved=[finding_from_dict(f) for f in data["proved"]],
        diagnostics=[diagnostic_from_dict(d) for d in data["diagnostics"]],
        files_checked=_int(data, "files_checked"),
    )


def relocated(data: dict[str, Any], rename: Callable[[str], str]) -> dict[str, Any]:
    """A finding's or diagnostic's dict with every file path (its own, its steps') renamed;
    what the cache stores is named by root, what a run shows by the current folder."""
    out = dict(data)
    out["path"] = rename(_str(data, "path"))
    if "flows" in data:
        out["flows"] = [
            {**flow, "steps": [{**s, "path": rename(_str(s, "path"))} for s in flow["steps"]]}
            for flow in data["flows"]
        ]
    return out


def _str(data: Mapping[str, Any], name: str) -> str:
    value = data[name]
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, not {value!r}")
    return value


def _int(data: Mapping[str, Any], name: str) -> int:
    value = data[name]
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, not {value!r}")
    return value
