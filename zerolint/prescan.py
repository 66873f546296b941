"""Read every file once, in a second process, while the first imports and runs the analyzer.

Deciding which files may reach a sink means reading the whole tree; importing LibCST takes
about as long. On a POSIX machine with two cores the two overlap: a forked child reads and
scans the files and sends back the few that mention a sink, while the parent imports.

The child then stays, holding every file's bytes, to answer the analysis's other questions
of the whole tree: which files contain a given text (who constructs a class, who derives
from it, who names a helper). Each scan of a large tree costs tens of milliseconds; between
questions, on the core the parent does not use, the child indexes the files. First the
names each file calls (a third of the work: four hundred thousand calls in vLLM's 50 MB),
which answer the most frequent question, who calls ``Name(``, exactly; then every
identifier of every file (several million), after which any other question costs a
look-up and a check of the few files it names.
"""

from __future__ import annotations

import bisect
import json
import os
import re
import select
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

# A star import's text, as written (`from .kernels import *`): the analysis looks for the
# files that hold one (engine.star_reexported), so the child finds them as it reads.
STAR_IMPORT = "import *"
# Below this many files a fork costs more than it saves.
MIN_FILES = 200
# Identifier bytes (ASCII): the index's words are the maximal runs of them.
_WORD = re.compile(rb"[A-Za-z0-9_]+")
_WORD_BYTES = bytes(
    c if chr(c).isascii() and (chr(c).isalnum() or c == ord("_")) else ord(" ") for c in range(256)
)
# The same, keeping "(" too: what precedes each "(" is then a run of identifier bytes.
_CALL_BYTES = _WORD_BYTES[: ord("(")] + b"(" + _WORD_BYTES[ord("(") + 1 :]
# A text the names called answer: identifier bytes, then "(" (`Name(`, who calls Name).
_CALL = re.compile(rb"[A-Za-z0-9_]+\(")


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
        # Texts answered in the report (the names scanned for): no question needed.
        self.known: dict[str, set[Path]] = {}
        # Where asked for (``suppressions``), the child's first answer, sent after the
        # report: the covered files whose bytes may hold a comment that ZL920 reports.
        self._suppressions_due = False
        self._may_suppress: set[Path] | None = None
        # Seconds the two sides took: ``meanwhile()`` here, and the child's reading and
        # scanning of the tree up to its report (--timings: "imports" and "scan").
        self.meanwhile_seconds = 0.0
        self.scan_seconds = 0.0

    def covered(self) -> set[Path]:
        """The files whose text the child holds: read, and decoded as plain UTF-8."""
        return set(self.files) - self.bad

    def containing(self, needle: str) -> set[Path] | None:
        """The covered files whose text contains ``needle``; None when the child cannot say
        (gone, or a text it does not take), and the caller must look itself.

        A text is looked for in the files' UTF-8 bytes, which finds exactly what a search
        of the decoded text finds (UTF-8 is self-synchronising); a BOM is in the bytes but
        not in the text, so a needle holding one is not taken."""
        if needle in self.known:
            return set(self.known[needle])
        if self._requests is None or self._answers is None or "\n" in needle or "\ufeff" in needle:
            return None
        try:
            _write_all(self._requests, needle.encode() + b"\n")
        except OSError:
            self.close()
            return None
        self._take_suppressions()  # ahead of this answer on the pipe
        found = self._read_answer()
        return None if found is None else {self.files[i] for i in found}

    def may_suppress(self) -> set[Path] | None:
        """The covered files whose bytes may hold a comment that ZL920 reports
        (``suppression.file_may_hold_ours``), where ``prescan`` was asked for them; else
        None."""
        self._take_suppressions()
        return self._may_suppress

    def _take_suppressions(self) -> None:
        if self._suppressions_due:
            self._suppressions_due = False
            found = self._read_answer()
            self._may_suppress = None if found is None else {self.files[i] for i in found}

    def _read_answer(self) -> list[int] | None:
        """The child's next answer line; None (and the child let go) if there is none."""
        try:
            line = self._answers.readline() if self._answers is not None else b""
            found = json.loads(line) if line else None
        except (OSError, ValueError):
            found = None
        if not isinstance(found, list):
            self.close()
            return None
        return found

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
    on_hit: Callable[[], None] | None = None,
    each_hit: Callable[[Path], None] | None = None,
    suppressions: bool = False,
    also: Sequence[str] = (),
) -> Scan | None:
    """The files whose bytes mention one of ``names`` and the files that could not be read
    or are not plain UTF-8 text, computed in a child process while ``meanwhile()`` runs
    here; the child stays to answer ``Scan.containing`` until ``Scan.close()``.
    ``on_hit()`` runs here, once ``meanwhile()`` is done, as soon as the child has found a
    file that mentions a name (while it reads on): the caller's work that only such a
    file makes worth doing can start then. ``each_hit(path)`` runs here, after ``on_hit()``,
    for each file that mentions a name, in the order found, while the child reads on: never
    once its report has begun to come (the caller's own work on the files then goes in
    its own order), so that what it does only moves work the caller would do anyway into
    time it would spend waiting.

    Returns None, having run ``meanwhile()``, where forking is not possible or not worth it,
    or ``jobs`` is 1; the caller then scans as usual. ``jobs`` 0 decides by the machine. A
    mention here is only a hint: the analyzer applies its own, stricter test to the
    candidates, so the result never depends on ``jobs``. ``read`` gives a file's bytes
    (the caller's, so that the child scans what the caller hashed where it did).
    ``suppressions``: the child also says, after its report (off the caller's way), which
    files may hold a suppression comment (``Scan.may_suppress``), so that ZL920 reads only
    those. ``also``: other texts the analysis will look for, answered with the report
    (found in the same pass over the tree, not counted as mentions).
    """
    cores = os.cpu_count() or 1
    if jobs == 1 or len(files) < MIN_FILES or not hasattr(os, "fork") or (jobs == 0 and cores < 2):
        meanwhile()
        return None
    # A name that holds another is found wherever that one is: looking for it too would
    # find no other file (hits are the same), only cost another pass over the tree.
    encoded = {n.encode() for n in names}
    needles = sorted(n for n in encoded if not any(m != n and m in n for m in encoded))
    report_r, report_w = os.pipe()
    ask_r, ask_w = os.pipe()
    answer_r, answer_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: scan, report, answer, exit without running the parent's cleanup
        started = time.perf_counter()
        os.close(report_r)
        os.close(ask_w)
        os.close(answer_r)
        try:
            sent: list[int] = []

            def hit(i: int) -> None:  # no more than the pipe holds while the parent imports
                if len(sent) < MAX_HITS_SENT:
                    sent.append(i)
                    _write_all(report_w, b"%s%d\n" % (HIT, i))

            extra = [t.encode() for t in also]
            datas, hits, bad, found = _scan(files, needles, read, hit, extra)
            # Each name's files come with the report: the analysis asks for them first.
            named = {}
            for n in sorted(encoded | set(extra)):
                if n not in found:
                    found[n] = _narrowed(n, found, datas) or []
                named[n.decode()] = found[n]
            seconds = time.perf_counter() - started
            report = {"hits": hits, "bad": bad, "named": named, "seconds": seconds}
            with os.fdopen(report_w, "wb") as out:
                out.write(json.dumps(report).encode())
            if suppressions:  # the first answer, unasked
                from zerolint.suppression import file_may_hold_ours

                maybe = [i for i, d in enumerate(datas) if d and file_may_hold_ours(d)]
                _write_all(answer_w, json.dumps(maybe).encode() + b"\n")
            _answer(datas, found, ask_r, answer_w)
        finally:
            os._exit(0)
    for fd in (report_w, ask_r, answer_w):
        os.close(fd)
    scan = Scan(files, set(), set(), pid, ask_w, answer_r)
    scan._suppressions_due = suppressions
    try:
        try:
            clock = time.perf_counter()
            meanwhile()
            scan.meanwhile_seconds = time.perf_counter() - clock
        except BaseException:
            os.close(report_r)  # a child blocked writing its report is let go, then waited for
            raise
        result = _take_report(report_r, files, on_hit, each_hit)
    except BaseException:
        scan.close()
        raise
    if result is None:
        return None  # the child died: scan in-process instead
    scan.hits = {files[i] for i in result["hits"]}
    scan.bad = {files[i] for i in result["bad"]}
    scan.known = {n: {files[i] for i in found} for n, found in result["named"].items()}
    scan.scan_seconds = float(result["seconds"])
    return scan


# Written ahead of the report for each file that mentions a name, with its index and a
# newline, as the child finds it (the report, JSON, never starts with it); for the first
# MAX_HITS_SENT such files only, about 8 KB, which a pipe holds while the parent imports.
HIT = b"!"
MAX_HITS_SENT = 1000


def _take_report(
    fd: int,
    files: Sequence[Path],
    on_hit: Callable[[], None] | None,
    each_hit: Callable[[Path], None] | None,
) -> dict[str, Any] | None:
    """The child's report, read from ``fd`` (closed here), or None where the child died
    before it sent one whole; the hits that come ahead of it are handed to ``on_hit``
    (the first) and ``each_hit`` (each, one at a time, while no byte of the report has
    come: whatever has come is looked at before each)."""
    head = b""  # what has come and is not the report
    report: list[bytes] = []  # the report's parts, once it has begun to come
    waiting: list[int] = []  # hits come, not handed over yet
    seen_hit = False
    poll = select.poll()
    poll.register(fd, select.POLLIN)
    try:
        while True:
            ready = bool(poll.poll(0 if waiting else None))
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                if report:
                    report.append(chunk)
                    continue
                head += chunk
            while head.startswith(HIT):
                end = head.find(b"\n")
                if end < 0:
                    break
                try:
                    waiting.append(int(head[len(HIT) : end]))
                except ValueError:
                    return None
                head = head[end + 1 :]
            if waiting and not seen_hit:
                seen_hit = True
                if on_hit is not None:
                    on_hit()
            if head and not head.startswith(HIT):
                report.append(head)  # the report is coming: the rest is the caller's to order
                head = b""
                waiting.clear()
            if waiting and not ready:
                index = waiting.pop(0)
                if each_hit is not None:
                    each_hit(files[index])
    finally:
        os.close(fd)
    try:
        result = json.loads(b"".join(report))
    except ValueError:
        return None
    return result if isinstance(result, dict) else None


def _scan(
    files: Sequence[Path],
    needles: Sequence[bytes],
    read: Callable[[Path], bytes],
    on_hit: Callable[[int], None] | None = None,
    extra: Sequence[bytes] = (),
) -> tuple[list[bytes | None], list[int], list[int], dict[bytes, list[int]]]:
    """Every file's bytes (None if unreadable or not UTF-8), the files that mention a
    needle, the bad ones, and which files hold each needle or ``extra`` text (which is no
    mention); ``on_hit(i)`` is called as each file that mentions a needle is found."""
    datas: list[bytes | None] = []
    hits: list[int] = []
    bad: list[int] = []
    found: dict[bytes, list[int]] = {n: [] for n in needles}
    groups = shared_keys(needles)
    found.update((key, []) for key in groups)
    found.update((text, []) for text in extra)
    for i, path in enumerate(files):
        data: bytes | None
        try:
            data = read(path)
        except OSError:
            data = None
        if data is not None and b"\x00" in data:
            data = None
        if data is not None and not data.isascii():  # ASCII is UTF-8: no decode needed
            try:
                data.decode("utf-8-sig")
            except UnicodeDecodeError:
                data = None
        datas.append(data)
        if data is None:
            bad.append(i)
            continue
        for text in extra:
            if text in data:
                found[text].append(i)
        mentioned = False
        for key, members in groups.items():
            if key not in data:
                continue
            if key not in members:
                found[key].append(i)
            for n in members:
                if n == key or n in data:
                    found[n].append(i)
                    mentioned = True
        if mentioned:
            if on_hit is not None:
                on_hit(i)
            hits.append(i)
    return datas, hits, bad, found


# The shortest text shared by needles that is looked for in their stead (below, a common
# word such as `_metadata` would be found in many files, each then searched again).
MIN_KEY = 12


def shared_keys(needles: Sequence[bytes]) -> dict[bytes, list[bytes]]:
    """Texts to look for, each with the needles it stands for: a file holds a needle only
    if it holds the needle's key, which lies in it. Needles sharing a long enough text
    share it as their key (the one shared by the most, then the longest), so that a tree is
    passed over once per key rather than once per needle; any other needle is its own key.
    The sink names of several rules share parts (``paged_mqa_logits`` is in three)."""
    left = list(dict.fromkeys(needles))
    groups: dict[bytes, list[bytes]] = {}
    while left:
        counts: dict[bytes, int] = {}
        for n in left:
            parts = {
                n[start : start + size]
                for size in range(MIN_KEY, len(n) + 1)
                for start in range(len(n) - size + 1)
            }
            for part in parts:
                counts[part] = counts.get(part, 0) + 1
        shared = [(count, len(part), part) for part, count in counts.items() if count > 1]
        if not shared:
            groups.update((n, [n]) for n in left)
            break
        key = max(shared)[2]
        groups[key] = [n for n in left if key in n]
        left = [n for n in left if key not in n]
    return groups


class _Texts:
    """The files' bytes, and two indexes of them built a slice at a time between questions:
    the names each file calls, then every file's identifiers, each in one text. A question
    asked before an index is complete is answered from the files indexed so far and by a
    scan of the others."""

    CHUNK = 8  # files indexed between two looks for a question: the wait a question may have
    CALL_CHUNK = 48  # the same for the names called, a third of the work per file

    def __init__(self, datas: Sequence[bytes | None]) -> None:
        self.datas = datas
        self.readable = [i for i, d in enumerate(datas) if d is not None]
        self.calls = _Lines()  # readable[:calls.done]: the names each calls, a file a line
        self.words = _Lines()  # readable[:words.done]: its distinct identifiers, a line

    @property
    def complete(self) -> bool:
        return self.words.done == len(self.readable)

    def index_some(self) -> None:
        if self.calls.done < len(self.readable):
            for i in self.readable[self.calls.done : self.calls.done + self.CALL_CHUNK]:
                self.calls.add(_called(self.datas[i]))  # type: ignore[arg-type]
            self.calls.finish_if(len(self.readable))
            return
        for i in self.readable[self.words.done : self.words.done + self.CHUNK]:
            words = self.datas[i].translate(_WORD_BYTES).split()  # type: ignore[union-attr]
            self.words.add(set(words))
        self.words.finish_if(len(self.readable))

    def search(self, needle: bytes) -> list[int]:
        """The files holding ``needle``. A call, ``Name(``, from the names called: a file
        holds it exactly when a name it calls ends with ``Name`` (the run of identifier
        bytes before a "(" is a name called). Any other text by the identifiers where it
        can say: ``needle`` lies in a file only if its longest run of identifier bytes
        (ASCII letters, digits, ``_``) lies in one of the file's identifiers; each such
        file is then checked. Files not indexed yet are scanned."""
        datas = self.datas
        if _CALL.fullmatch(needle):
            out = [self.readable[line] for line in self.calls.lines_holding(needle[:-1] + b" ")]
            rest = self.readable[self.calls.done :]
        else:
            key = max(_WORD.findall(needle), key=len, default=b"")
            if not key:
                return [i for i in self.readable if needle in datas[i]]  # type: ignore[operator]
            out = []
            for line in self.words.lines_holding(key):
                i = self.readable[line]
                if needle in datas[i]:  # type: ignore[operator]
                    out.append(i)
            rest = self.readable[self.words.done :]
        return out + [i for i in rest if needle in datas[i]]  # type: ignore[operator]


def _called(data: bytes) -> set[bytes]:
    """The names ``data`` calls: each run of identifier bytes just before a "(" (with
    ``def`` and ``class`` lines' names, and a call's name's last part, ``b`` of ``a.b(``)."""
    before = data.translate(_CALL_BYTES).split(b"(")
    before.pop()  # what follows the last "(" comes before none
    names = {text[text.rfind(b" ") + 1 :] for text in before}
    names.discard(b"")
    return names


class _Lines:
    """One index: a line of words per file, in file order, in one text once complete."""

    def __init__(self) -> None:
        self.done = 0  # the files indexed
        self.parts: list[bytes] = []
        self.starts = [0]  # where each file's line starts in their concatenation
        self._text: bytes | None = b""

    def add(self, words: set[bytes]) -> None:
        # Every word is followed by a space: a word ending in a text is found as text + " ".
        self.parts.append(b" ".join(words) + b" \n")
        self.starts.append(self.starts[-1] + len(self.parts[-1]))
        self.done += 1
        self._text = None

    def finish_if(self, total: int) -> None:
        if self.done == total:
            self._text, self.parts = b"".join(self.parts), []

    def lines_holding(self, key: bytes) -> list[int]:
        """The files (by line) one of whose words holds ``key``; a key ending in a space,
        one of whose words ends with the rest."""
        if self._text is None:
            self._text = b"".join(self.parts)
        text, starts, out = self._text, self.starts, []
        at = text.find(key)
        while at >= 0:
            line = bisect.bisect_right(starts, at) - 1
            out.append(line)
            at = text.find(key, starts[line + 1])  # the next file's line
        return out


def _answer(
    datas: Sequence[bytes | None], found: dict[bytes, list[int]], ask: int, answer: int
) -> None:
    """Answer each question (one text a line) with the indices of the files that hold it,
    until the questions end; between questions, index the names the files call, then their
    identifiers (``_Texts``)."""
    texts = _Texts(datas)
    pending = b""
    while True:
        ready, _, _ = select.select([ask], [], [], None if texts.complete else 0)
        if not ready:
            texts.index_some()
            continue
        chunk = os.read(ask, 65536)
        if not chunk:
            return
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for needle in lines:
            hits = found.get(needle)
            if hits is None:
                hits = found[needle] = _narrowed(needle, found, datas)
                if hits is None:
                    hits = found[needle] = texts.search(needle)
            _write_all(answer, json.dumps(hits).encode() + b"\n")


def _narrowed(
    needle: bytes, found: dict[bytes, list[int]], datas: Sequence[bytes | None]
) -> list[int] | None:
    """The files holding ``needle``, from the files of a text already answered that lies
    inside it (a file holding ``needle`` holds that text too): a look at a few files where
    the index or a scan would look at them all. None when no answered text lies in it."""
    inside = [known for known in found if known and known in needle]
    if not inside:
        return None
    fewest = min((found[known] for known in inside), key=len)
    return [i for i in fewest if needle in datas[i]]  # type: ignore[operator]


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
