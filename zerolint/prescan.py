"""Read every file once, in a second process, while the first imports and runs the analyzer.

Deciding which files may reach a sink means reading the whole tree; importing LibCST takes
about as long. On a POSIX machine with two cores the two overlap: a forked child reads and
scans the files and sends back the few that mention a sink, while the parent imports.

The child then stays, holding every file's bytes, to answer the analysis's other questions
of the whole tree: which files contain a given text (who constructs a class, who derives
from it). Each such scan of a large tree costs tens of milliseconds; the child answers the
questions it can foresee (the classes the mentioning files define, their subclasses) before
they are asked, on the core the parent does not use.
"""

from __future__ import annotations

import json
import os
import re
import select
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

# Below this many files a fork costs more than it saves.
MIN_FILES = 200
# How many texts the child looks for before it is asked (each is one scan of the tree).
MAX_GUESSES = 64

_CLASS = re.compile(rb"^[ \t]*class[ \t]+(\w+)", re.MULTILINE)


def mentions_any(data: bytes, needles: Sequence[bytes]) -> bool:
    return any(n in data for n in needles)


class Scan:
    """What the child found (``hits``, ``bad``), and the child itself, which answers
    ``containing`` until ``close()``."""

    def __init__(
        self,
        files: Sequence[Path],
        hits: set[Path],
        bad: set[Path],
        pid: int | None = None,
        requests: int | None = None,
        answers: int | None = None,
    ) -> None:
        self.files = files
        self.hits = hits
        self.bad = bad
        self._pid = pid
        self._requests = requests
        self._answers = os.fdopen(answers, "rb") if answers is not None else None

    def covered(self) -> set[Path]:
        """The files whose text the child holds: read, and decoded as plain UTF-8."""
        return set(self.files) - self.bad

    def containing(self, needle: str) -> set[Path] | None:
        """The covered files whose text contains ``needle``; None when the child cannot say
        (gone, or a text it does not take), and the caller must look itself.

        A text is looked for in the files' UTF-8 bytes, which finds exactly what a search
        of the decoded text finds (UTF-8 is self-synchronising); a BOM is in the bytes but
        not in the text, so a needle holding one is not taken."""
        if self._requests is None or self._answers is None or "\n" in needle or "\ufeff" in needle:
            return None
        try:
            _write_all(self._requests, needle.encode() + b"\n")
            line = self._answers.readline()
            found = json.loads(line) if line else None
        except (OSError, ValueError):
            found = None
        if not isinstance(found, list):
            self.close()
            return None
        return {self.files[i] for i in found}

    def close(self) -> None:
        """Let the child go (it exits when its questions end) and wait for it."""
        if self._requests is not None:
            os.close(self._requests)
            self._requests = None
        if self._answers is not None:
            self._answers.close()
            self._answers = None
        if self._pid is not None:
            os.waitpid(self._pid, 0)
            self._pid = None


def prescan(
    files: Sequence[Path],
    names: set[str],
    meanwhile: Callable[[], None],
    *,
    jobs: int = 0,
    read: Callable[[Path], bytes] = Path.read_bytes,
) -> Scan | None:
    """The files whose bytes mention one of ``names`` and the files that could not be read
    or are not plain UTF-8 text, computed in a child process while ``meanwhile()`` runs
    here; the child stays to answer ``Scan.containing`` until ``Scan.close()``.

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
    needles = sorted(n.encode() for n in names)
    report_r, report_w = os.pipe()
    ask_r, ask_w = os.pipe()
    answer_r, answer_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: scan, report, answer, exit without running the parent's cleanup
        os.close(report_r)
        os.close(ask_w)
        os.close(answer_r)
        try:
            datas, hits, bad, found = _scan(files, needles, read)
            with os.fdopen(report_w, "wb") as out:
                out.write(json.dumps({"hits": hits, "bad": bad}).encode())
            _answer(datas, found, _guesses(datas, hits), ask_r, answer_w)
        finally:
            os._exit(0)
    for fd in (report_w, ask_r, answer_w):
        os.close(fd)
    scan = Scan(files, set(), set(), pid, ask_w, answer_r)
    try:
        with os.fdopen(report_r, "rb") as incoming:
            meanwhile()
            result = json.loads(incoming.read())
    except BaseException as exc:
        scan.close()
        if isinstance(exc, ValueError):
            return None  # the child died: scan in-process instead
        raise
    scan.hits = {files[i] for i in result["hits"]}
    scan.bad = {files[i] for i in result["bad"]}
    return scan


def _scan(
    files: Sequence[Path], needles: Sequence[bytes], read: Callable[[Path], bytes]
) -> tuple[list[bytes | None], list[int], list[int], dict[bytes, list[int]]]:
    """Every file's bytes (None if unreadable or not UTF-8), the files that mention a
    needle, the bad ones, and which files hold each needle."""
    datas: list[bytes | None] = []
    hits: list[int] = []
    bad: list[int] = []
    found: dict[bytes, list[int]] = {n: [] for n in needles}
    for i, path in enumerate(files):
        data: bytes | None
        try:
            data = read(path)
        except OSError:
            data = None
        if data is not None and b"\x00" in data:
            data = None
        if data is not None:
            try:
                data.decode("utf-8-sig")
            except UnicodeDecodeError:
                data = None
        datas.append(data)
        if data is None:
            bad.append(i)
            continue
        mentioned = False
        for n in needles:
            if n in data:
                found[n].append(i)
                mentioned = True
        if mentioned:
            hits.append(i)
    return datas, hits, bad, found


def _guesses(datas: Sequence[bytes | None], hits: Iterable[int]) -> deque[bytes]:
    """The classes the mentioning files define: whose constructors and subclasses the
    analysis of those files looks for in the whole tree."""
    out: deque[bytes] = deque()
    for i in hits:
        data = datas[i]
        if data is not None:
            out.extend(m.group(1) for m in _CLASS.finditer(data))
    return out


def _answer(
    datas: Sequence[bytes | None],
    found: dict[bytes, list[int]],
    guesses: deque[bytes],
    ask: int,
    answer: int,
) -> None:
    """Answer each question (one text a line) with the indices of the files that hold it,
    until the questions end; between questions, look for the guessed texts: a class's name,
    its call, and the classes that name it among their bases, guessed in their turn."""
    readable = [i for i, d in enumerate(datas) if d is not None]

    def search(needle: bytes, within: Iterable[int] = readable) -> list[int]:
        return [i for i in within if needle in datas[i]]  # type: ignore[operator]

    pending = b""
    guessed = 0
    while True:
        ready, _, _ = select.select([ask], [], [], 0 if guesses and guessed < MAX_GUESSES else None)
        if ready:
            chunk = os.read(ask, 65536)
            if not chunk:
                return
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for needle in lines:
                hits = found.get(needle)
                if hits is None:
                    hits = found[needle] = search(needle)
                _write_all(answer, json.dumps(hits).encode() + b"\n")
            continue
        name = guesses.popleft()
        if name in found:
            continue
        guessed += 1
        within = found[name] = search(name)
        found.setdefault(name + b"(", search(name + b"(", within))
        base = re.compile(
            rb"^[ \t]*class[ \t]+(\w+)[ \t]*\([^)]*\b" + re.escape(name) + rb"\b", re.MULTILINE
        )
        for i in within:
            guesses.extend(m.group(1) for m in base.finditer(datas[i]))  # type: ignore[arg-type]


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
