"""The results cache: a warm run on an unchanged tree reads one JSON file and parses nothing.

Layout, at the project root::

    .zerolint_cache/
        .gitignore              "*": the folder never shows up in ``git status``
        CACHEDIR.TAG            backup tools skip the folder
        v1/<fingerprint>.json   one bucket per fingerprint (tool version, rules, config)

A bucket holds, per file (keyed by its path relative to the root):

- ``files``: ``[size, mtime_ns, digest]``, the content digest last seen with that stat;
- ``results``: ``{"digest", "result", "deps"}``, a JSON result computed from content with
  that digest, valid while every ``(path, digest)`` in ``deps`` still holds.

Whether a file changed is decided by its content: the stat pair only saves reading it.
When size and mtime match what was recorded, the recorded digest is trusted; otherwise
the file is read and hashed (BLAKE2b-128). A stat taken less than two seconds after the
file's mtime is not recorded (git's "racily clean" rule), so an edit within the
filesystem's timestamp granularity cannot hide behind an unchanged mtime.

Concurrent runs are safe: a bucket is written by atomic replace, so a reader sees one whole
bucket; writers take turns (a lock file beside the bucket) and each merges in what the
others saved. A missing, corrupt or
foreign bucket is an empty cache, never an error. The cache is a plain optimisation:
``ResultCache.disabled()`` gives one that always misses and writes nothing (``--no-cache``).
A result is any JSON value but None (which means a miss); decoding it is the caller's job,
and a caller should treat a result it cannot decode as a miss.

The model objects are stored as plain dicts: ``finding_to_dict`` / ``finding_from_dict``
and friends below round-trip every field.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from zerolint.atomic import atomic_write_bytes
from zerolint.model import Diagnostic, Finding, Flow, Op, Report, Step, Verdict

CACHE_DIR_NAME = ".zerolint_cache"
FORMAT = "v1"
# Buckets of other fingerprints (older versions or configs) kept besides the current one.
KEEP_BUCKETS = 8
# A stat this close to the file's mtime may miss a same-tick edit: hash instead.
RACY_NS = 2_000_000_000
CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by zerolint.\n"
    "# For information about cache directory tags, see https://bford.info/cachedir/\n"
)

T = TypeVar("T")


def content_digest(data: bytes) -> str:
    """The digest the cache keys content by (hex BLAKE2b-128 of the bytes)."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


@dataclass(slots=True)
class FileLookup:
    """One file as the cache saw it: the cached result on a hit, else the bytes to analyze.

    ``content()`` reads the file at most once; analyze exactly those bytes and hand this
    object back to ``ResultCache.store`` so that the stored digest is of what was analyzed.
    """

    path: Path
    key: str
    result: Any | None
    _stat: tuple[int, int] | None
    _content: bytes | None = None
    _digest: str | None = None

    @property
    def hit(self) -> bool:
        return self.result is not None

    def content(self) -> bytes:
        if self._content is None:
            self._content = self.path.read_bytes()
            self._digest = content_digest(self._content)
        return self._content

    def digest(self) -> str:
        if self._digest is None:
            self.content()
        assert self._digest is not None
        return self._digest


class ResultCache:
    """Per-file JSON results for one fingerprint, under ``<root>/.zerolint_cache``."""

    def __init__(self, root: Path, fingerprint: str, *, enabled: bool = True) -> None:
        self.root = Path(os.path.abspath(root))
        self._prefix = os.path.join(str(self.root), "")
        self._started_ns = time.time_ns()
        self.fingerprint = fingerprint
        self.enabled = enabled
        name = hashlib.blake2b(fingerprint.encode(), digest_size=8).hexdigest()
        self.bucket_path = self.root / CACHE_DIR_NAME / FORMAT / f"{name}.json"
        self._files: dict[str, list[Any]] = {}
        self._results: dict[str, dict[str, Any]] = {}
        self._touched: set[str] = set()  # keys whose files/results this run wrote
        self._current: dict[str, str | None] = {}  # digests read this run, by key
        if enabled:
            self._files, self._results = self._read_bucket()

    @classmethod
    def disabled(cls, root: Path | None = None) -> ResultCache:
        """A cache that always misses and never writes."""
        return cls(root or Path.cwd(), "", enabled=False)

    def lookup(self, path: str | os.PathLike[str]) -> FileLookup:
        """The cached result for ``path`` if its content and dependencies are unchanged.

        Raises ``OSError`` when the file cannot be read, as reading it would.
        """
        path = Path(path)
        key = self._key(path)
        stat = self._stat(path)
        found = FileLookup(path, key, None, stat)
        if not self.enabled:
            return found
        known = self._files.get(key)
        if stat is not None and _stat_matches(known, stat):
            found._digest = known[2]  # type: ignore[index]
        self._remember(key, stat, found.digest())
        entry = self._results.get(key)
        if (
            isinstance(entry, dict)
            and entry.get("digest") == found.digest()
            and self._deps_hold(entry.get("deps"))
        ):
            found.result = entry.get("result")
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
            "deps": sorted({(self._key(Path(p)), d) for p, d in deps}),
        }
        self._remember(lookup.key, lookup._stat, lookup.digest())
        self._touched.add(lookup.key)

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
                data = json.dumps(payload, separators=(",", ":")).encode()
                atomic_write_bytes(self.bucket_path, data)
        except OSError:
            return False
        self._touched.clear()
        self._prune_buckets()
        return True

    # --- internals ----------------------------------------------------------------------

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

    def _key(self, path: Path) -> str:
        absolute = os.path.abspath(path)
        if absolute.startswith(self._prefix):
            relative = absolute[len(self._prefix) :]
        else:
            relative = absolute  # outside the root: keyed by absolute path
        return relative if os.sep == "/" else relative.replace(os.sep, "/")

    def _stat(self, path: Path) -> tuple[int, int] | None:
        """(size, mtime_ns), or None when the stat may not see a same-tick edit."""
        st = os.stat(path)
        # Measured from the run's start: anything modified since is racy too.
        if st.st_mtime_ns > self._started_ns - RACY_NS:
            return None
        return st.st_size, st.st_mtime_ns

    def _remember(self, key: str, stat: tuple[int, int] | None, digest: str) -> None:
        self._current[key] = digest
        if stat is None:
            if self._files.pop(key, None) is not None:
                self._touched.add(key)
            return
        entry = [stat[0], stat[1], digest]
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
                digest = known[2]  # type: ignore[index]
            else:
                digest = content_digest(path.read_bytes())
        except OSError:
            self._current[key] = None
            return None
        self._remember(key, stat, digest)
        return digest

    def _read_bucket(self) -> tuple[dict[str, list[Any]], dict[str, dict[str, Any]]]:
        try:
            payload = json.loads(self.bucket_path.read_bytes())
        except (OSError, ValueError):
            return {}, {}
        if not isinstance(payload, dict) or payload.get("fingerprint") != self.fingerprint:
            return {}, {}
        files, results = payload.get("files"), payload.get("results")
        if not isinstance(files, dict) or not isinstance(results, dict):
            return {}, {}
        return files, results

    def _make_cache_dir(self) -> None:
        top = self.root / CACHE_DIR_NAME
        self.bucket_path.parent.mkdir(parents=True, exist_ok=True)
        if not (top / ".gitignore").exists():
            atomic_write_bytes(top / ".gitignore", b"# Created by zerolint.\n*\n")
        if not (top / "CACHEDIR.TAG").exists():
            atomic_write_bytes(top / "CACHEDIR.TAG", CACHEDIR_TAG.encode())

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


@contextlib.contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``lock_path`` while writers read, merge and replace."""
    try:
        import fcntl
    except ImportError:  # Windows: writes stay atomic; a racing run's entries may be lost
        yield
        return
    with open(lock_path, "ab") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _stat_matches(known: object, stat: tuple[int, int]) -> bool:
    return (
        isinstance(known, list)
        and len(known) == 3
        and known[0] == stat[0]
        and known[1] == stat[1]
        and isinstance(known[2], str)
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
    }


def finding_from_dict(data: Mapping[str, Any]) -> Finding:
    verdict = data["verdict"]
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
    )


def diagnostic_to_dict(diagnostic: Diagnostic) -> dict[str, Any]:
    return {
        "code": diagnostic.code,
        "path": diagnostic.path,
        "message": diagnostic.message,
        "line": diagnostic.line,
        "col": diagnostic.col,
    }


def diagnostic_from_dict(data: Mapping[str, Any]) -> Diagnostic:
    return Diagnostic(
        code=_str(data, "code"),
        path=_str(data, "path"),
        message=_str(data, "message"),
        line=_int(data, "line"),
        col=_int(data, "col"),
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
