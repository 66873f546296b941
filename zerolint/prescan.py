"""Read every file once, in a second process, while the first imports the analyzer.

Deciding which files may reach a sink means reading the whole tree; importing LibCST takes
about as long. On a POSIX machine with two cores the two overlap: a forked child reads and
scans the files and sends back the few that mention a sink, while the parent imports.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path

# Below this many files a fork costs more than it saves.
MIN_FILES = 200


def mentions_any(data: bytes, needles: Sequence[bytes]) -> bool:
    return any(n in data for n in needles)


def prescan(
    files: Sequence[Path],
    names: set[str],
    meanwhile: Callable[[], None],
    *,
    jobs: int = 0,
    read: Callable[[Path], bytes] = Path.read_bytes,
) -> tuple[set[Path], set[Path]] | None:
    """(files whose bytes mention one of ``names``, files that could not be read or are
    not plain UTF-8 text), computed in a child process while ``meanwhile()`` runs here.

    Returns None, having run ``meanwhile()``, where forking is not possible or not worth it,
    or ``jobs`` is 1; the caller then scans as usual. ``jobs`` 0 decides by the machine. A
    mention here is only a hint: the analyzer applies its own, stricter test to the
    candidates, so the result never depends on ``jobs``. ``read`` gives a file's bytes
    (the caller's, so that the child scans what the caller hashed).
    """
    cores = os.cpu_count() or 1
    if jobs == 1 or len(files) < MIN_FILES or not hasattr(os, "fork") or (jobs == 0 and cores < 2):
        meanwhile()
        return None
    needles = [n.encode() for n in names]
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: scan, report, exit without running the parent's cleanup
        os.close(read_fd)
        try:
            hits, bad = _scan(files, needles, read)
            payload = json.dumps({"hits": hits, "bad": bad}).encode()
            with os.fdopen(write_fd, "wb") as out:
                out.write(payload)
        finally:
            os._exit(0)
    os.close(write_fd)
    try:
        meanwhile()
        with os.fdopen(read_fd, "rb") as incoming:
            payload = incoming.read()
    finally:
        os.waitpid(pid, 0)
    try:
        result = json.loads(payload)
    except ValueError:
        return None  # the child died: scan in-process instead
    return ({files[i] for i in result["hits"]}, {files[i] for i in result["bad"]})


def _scan(
    files: Sequence[Path], needles: Sequence[bytes], read: Callable[[Path], bytes]
) -> tuple[list[int], list[int]]:
    hits: list[int] = []
    bad: list[int] = []
    for i, path in enumerate(files):
        try:
            data = read(path)
        except OSError:
            bad.append(i)
            continue
        if b"\x00" in data:
            bad.append(i)
            continue
        try:
            data.decode("utf-8-sig")
        except UnicodeDecodeError:
            bad.append(i)
            continue
        if mentions_any(data, needles):
            hits.append(i)
    return hits, bad
