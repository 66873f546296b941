"""The prescan's child: which files mention a sink, and, while it stays, which files hold a
text. Its answers must be exactly what the analysis would find by reading the files itself
(``Project.files_containing``), whatever the files hold: a BOM, another declared encoding,
a NUL byte, an override of the text."""

from __future__ import annotations

import functools
import os
import re
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from devtools.wheels import vllm_tree
from tests.test_cli_conventions import zerolint
from zerolint.prescan import MIN_FILES, _called, _scan, _Texts, prescan, shared_keys
from zerolint.project import Project

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the prescan forks")

NEEDLES = [
    "sink_fn",
    "sink_fn_fp8",  # holds an answered text: answered from that one's files
    "Base(",  # before "Base": no answered text lies in it, so the index answers it
    "Base",
    "Child)",
    "Child(",
    "GrandChild(",
    "Elsewhere(",
    "Latin(",
    "nowhere at all",
    "café(",
    "x\ufeffy",
]


def tree(tmp_path: Path) -> list[Path]:
    """MIN_FILES plain modules, and a few that test the edges."""
    files = []
    for i in range(MIN_FILES):
        body = f"def f{i}():\n    return {i}\n"
        if i % 50 == 0:
            body += "sink_fn(x)\n"
        if i == 0:  # a mentioning file: the child guesses its classes' questions
            body += "class Base:\n    pass\n\nclass Child(Base):\n    pass\n"
        if i == 120:
            body += "class GrandChild(Child):\n    pass\n\nv = GrandChild()\n"
        if i == 60:  # a sink whose name holds another sink's
            body += "sink_fn_fp8(y)\n"
        if i == 130:  # a text found inside a longer identifier
            body += "x = MyBase()\n"
        if i == 150:
            body += "w = Base()\nz = Child()\n"
        if i in (7, 140):  # a star import (a text the report answers, no mention)
            body = f"from .m{i + 1:03d} import *\n" + body
        path = tmp_path / f"m{i:03d}.py"
        path.write_text(body)
        files.append(path)
    special = {
        "bom.py": "\ufeffclass Elsewhere:\n    pass\nElsewhere()\n".encode(),
        "latin.py": "# -*- coding: latin-1 -*-\nLatin()  # caf\xe9\n".encode("latin-1"),
        "nul.py": b"Base(\x00)\n",
        "utf8.py": "caf\u00e9(1)\nsink_fn(caf\u00e9)\n".encode(),
    }
    for name, data in special.items():
        path = tmp_path / name
        path.write_bytes(data)
        files.append(path)
    return sorted(files)


@pytest.mark.parametrize("pause", [0.0, 0.5], ids=["asked-at-once", "indexed-first"])
def test_hits_bad_and_every_answer_match_reading_the_files(tmp_path: Path, pause: float) -> None:
    """Asked at once, the child scans the files for each text; given time (while the
    caller imports), it has indexed the names they call and their identifiers and answers
    from the indexes: the same answers, also for a text inside a longer identifier
    (``MyBase(`` holds ``Base(``)."""
    files = tree(tmp_path)
    scan = prescan(
        files, {"sink_fn", "sink_fn_fp8"}, lambda: time.sleep(pause), jobs=2, also=["import *"]
    )
    assert scan is not None
    try:
        reference = Project(files)
        texts = {p: reference.text(p) for p in files}
        assert scan.bad == {tmp_path / "latin.py", tmp_path / "nul.py"}
        mentioning = {p for p, t in texts.items() if t and ("sink_fn" in t or "sink_fn_fp8" in t)}
        assert scan.hits == mentioning - scan.bad
        # Answered with the report, without a question, and no mention.
        assert scan.known["import *"] == {tmp_path / "m007.py", tmp_path / "m140.py"}
        assert tmp_path / "m060.py" in scan.hits
        for needle in NEEDLES:
            answer = scan.containing(needle)
            if "\ufeff" in needle:
                assert answer is None  # a BOM is in the bytes, not in the text
                continue
            assert answer == {p for p in scan.covered() if needle in (texts[p] or "")}, needle
    finally:
        scan.close()
    assert scan.containing("Base") is None  # gone: the caller looks itself


def test_which_files_may_hold_a_suppression_comes_ahead_of_the_answers(tmp_path: Path) -> None:
    """Asked for, the child's first answer (sent after its report, unasked) is the files
    that may hold a suppression comment (ZL920); a question asked before that is read
    gets its own answer, not that one."""
    from zerolint.suppression import file_may_hold_ours

    files = tree(tmp_path)
    (tmp_path / "m007.py").write_text("x = 1  # noqa: ZL001\n")
    (tmp_path / "m008.py").write_text("# ZeroLint: noqa\n")
    (tmp_path / "m009.py").write_text("x = 1  # noqa: E501\n")  # another tool's: not ours
    scan = prescan(files, {"sink_fn"}, lambda: None, jobs=2, suppressions=True)
    assert scan is not None
    try:
        reference = Project(files)
        texts = {p: reference.text(p) for p in files}
        assert scan.containing("Base(") == {p for p in scan.covered() if "Base(" in texts[p]}
        may = scan.may_suppress()
        assert may == {p for p in scan.covered() if file_may_hold_ours(p.read_bytes())}
        assert {tmp_path / "m007.py", tmp_path / "m008.py"} <= may
        assert tmp_path / "m009.py" not in may
        assert scan.containing("Child(") == {p for p in scan.covered() if "Child(" in texts[p]}
    finally:
        scan.close()
    unasked = prescan(files, {"sink_fn"}, lambda: None, jobs=2)
    assert unasked is not None
    try:
        assert unasked.may_suppress() is None
    finally:
        unasked.close()


def test_a_project_asking_the_child_finds_what_one_reading_finds(tmp_path: Path) -> None:
    files = tree(tmp_path)
    overridden = tmp_path / "m003.py"
    scan = prescan(files, {"sink_fn"}, lambda: None, jobs=2)
    assert scan is not None
    try:
        asking, reading = Project(files), Project(files)
        asking.search_with(scan.containing, scan.covered())
        for project in (asking, reading):
            project.set_text(overridden, "class Child2(Base):\n    Base()\n")
        answered = [n for n in NEEDLES if "\ufeff" not in n] + ["Child2("]
        for needle in answered:
            assert asking.files_containing(needle) == reading.files_containing(needle), needle
        # The child's files are not read for those answers (it holds their texts) ...
        assert tmp_path / "m010.py" not in asking._texts
        # ... but they are for a text it does not take.
        assert asking.files_containing("x\ufeffy") == reading.files_containing("x\ufeffy")
        assert tmp_path / "m010.py" in asking._texts
    finally:
        scan.close()


def test_on_hit_runs_once_when_a_file_names_a_name_and_never_otherwise(tmp_path: Path) -> None:
    """``on_hit`` (the check starts importing z3) runs once the child has found a file
    that names a sink, before its report is complete; never for a tree that names none.
    The report is the same either way."""
    files = tree(tmp_path)
    for names, expected in (({"sink_fn"}, 1), ({"nowhere_at_all"}, 0)):
        calls: list[int] = []
        scan = prescan(
            files, names, lambda: None, jobs=2, on_hit=functools.partial(calls.append, 1)
        )
        assert scan is not None
        try:
            assert len(calls) == expected
            want = {p for p in files if any(n.encode() in p.read_bytes() for n in names)}
            assert scan.hits == want
            assert bool(scan.hits) == bool(expected)
        finally:
            scan.close()


def test_each_hit_comes_in_order_while_the_child_reads_and_never_after_its_report(
    tmp_path: Path,
) -> None:
    """``each_hit`` hands the caller each file that mentions a name as the child finds it
    (the check parses it meanwhile, ``Project.parse_ahead``): all of them, in order, while
    the child is still reading; none once the report has come (the caller then orders its
    own work), where the caller's side is the slower. The report is the same either way.
    Marker files order the two processes: the child reads its last file only once every
    hit has been handed; the caller's side ends only after the child has read its last."""
    files = tree(tmp_path)
    want = sorted(p for p in files if b"sink_fn" in p.read_bytes())
    assert len(want) > 2
    files.append(tmp_path / "z_last.py")  # read after the last hit
    files[-1].write_text("z = 0\n")
    handed_all, read_all = tmp_path / "handed_all", tmp_path / "read_all"

    def wait_for(marker: Path) -> None:
        deadline = time.monotonic() + 20
        while not marker.exists():
            assert time.monotonic() < deadline, marker
            time.sleep(0.005)

    def read_last_when_handed(path: Path) -> bytes:  # the child's
        if path == files[-1]:
            wait_for(handed_all)
        return path.read_bytes()

    def read_saying_when_done(path: Path) -> bytes:  # the child's
        data = path.read_bytes()
        if path == files[-1]:
            read_all.touch()
        return data

    def hand(path: Path) -> None:
        handed.append(path)
        if len(handed) == len(want):
            handed_all.touch()

    def after_the_child() -> None:
        wait_for(read_all)
        time.sleep(0.5)  # its report, a few lines of JSON, is written meanwhile

    for read, meanwhile, expected in (
        (read_last_when_handed, lambda: None, want),
        (read_saying_when_done, after_the_child, []),
    ):
        handed: list[Path] = []
        calls: list[int] = []
        scan = prescan(
            files,
            {"sink_fn"},
            meanwhile,
            jobs=2,
            read=read,
            on_hit=functools.partial(calls.append, 1),
            each_hit=hand,
        )
        assert scan is not None
        try:
            assert handed == expected
            assert calls == [1]
            assert sorted(scan.hits) == want
        finally:
            scan.close()


@pytest.mark.parametrize(
    ("first", "then", "handed"),
    [
        (b"!2\n!0\n", b'{"hits": [0, 2]}', [2, 0]),  # hits that came together, in order
        (b"!2\n!0\n{", b'"hits": [0, 2]}', []),  # the report had begun: none handed
    ],
    ids=["hits-alone", "report-begun"],
)
def test_the_report_is_read_with_the_hits_ahead_of_it(
    first: bytes, then: bytes, handed: list[int]
) -> None:
    """The parent's side of the pipe, written to by hand: what has come is read before
    each hit is handed over, and no hit is once the report has begun to come, even where
    the rest of it is late."""
    import threading

    from zerolint.prescan import _take_report

    read, write = os.pipe()
    os.write(write, first)
    got: list[Path] = []
    every = threading.Event()  # every hit handed over, where they are to be

    def hand(path: Path) -> None:
        got.append(path)
        if len(got) == len(handed):
            every.set()

    def rest() -> None:
        every.wait(20 if handed else 0.3)
        os.write(write, then)
        os.close(write)

    later = threading.Thread(target=rest)
    later.start()
    files = [Path(f"f{i}.py") for i in range(3)]
    hits: list[int] = []
    try:
        report = _take_report(read, files, functools.partial(hits.append, 1), hand)
    finally:
        later.join()
    assert report == {"hits": [0, 2]}
    assert got == [files[i] for i in handed]
    assert hits == [1]


def test_a_report_cut_short_or_garbled_is_no_report() -> None:
    """A child that dies before its report is whole (or writes a hit line that is not one)
    gives None: the check then reads the tree itself."""
    from zerolint.prescan import _take_report

    for sent in (b"!0\n", b'!0\n{"hits": [0', b"!x\n{}", b"[1, 2]", b""):
        read, write = os.pipe()
        os.write(write, sent)
        os.close(write)
        assert _take_report(read, [Path("f0.py")], None, None) is None, sent


def test_a_module_parsed_ahead_joins_the_project_when_asked_for(tmp_path: Path) -> None:
    """``Project.parse_ahead`` parses a file before the analysis asks for it; the module
    is the one ``module_at`` then gives, and it joins ``parsed()`` only then, in the order
    the analysis asks (which modules are parsed, and in what order, decides what is
    followed). A file that does not parse is left for ``module_at`` to report, and a text
    set since is parsed again."""
    paths = []
    for name, text in (("a", "x = 1\n"), ("b", "def f(:\n"), ("c", "y = 2\n")):
        paths.append(tmp_path / f"{name}.py")
        paths[-1].write_text(text)
    a, b, c = paths
    project = Project(paths)
    for path in (c, b, a):
        project.parse_ahead(path)
    assert project.parsed() == [] and not project.tried(a)
    first = project.module_at(a)
    assert first is not None and project.module_at(c) is not None
    assert [m.path for m in project.parsed()] == [a, c]
    assert project.taken_ahead == 2
    assert project.module_at(b) is None and project.diagnostics[b].code == "ZL901"
    project.parse_ahead(c)  # asked for already: nothing to do
    assert project.taken_ahead == 2
    fresh = Project(paths)
    fresh.parse_ahead(a)
    fresh.set_text(a, "x = 2\n")
    again = fresh.module_at(a)
    assert again is not None and again.text == "x = 2\n" and fresh.taken_ahead == 0


def test_only_a_file_naming_a_sink_as_code_is_a_first_candidate(tmp_path: Path) -> None:
    """The files parsed ahead are those the analysis's first round parses: a sink's name in
    code, not in a comment or in backticks (``mentions``), which the child's plain search
    also reports."""
    from zerolint.config import Settings
    from zerolint.engine import Engine

    texts = {
        "code.py": "from deep_gemm import get_paged_mqa_logits_metadata\n",
        "comment.py": "# get_paged_mqa_logits_metadata is called elsewhere\nx = 1\n",
        "docs.py": '"""See `get_paged_mqa_logits_metadata`."""\n',
    }
    paths = []
    for name, text in texts.items():
        paths.append(tmp_path / name)
        paths[-1].write_text(text)
    engine = Engine(Settings())
    first = engine.first_candidate(engine.project_for(paths))
    assert [first(p) for p in paths] == [True, False, False]


@pytest.mark.network
@pytest.mark.slow
def test_every_candidate_parsed_ahead_gives_the_same_report_on_vllm() -> None:
    """The check parses ahead, in the order the prescan's child finds them, the files its
    first round will parse (``Engine.first_candidate``). Parsed ahead in the reverse order,
    every one of them, vLLM 0.33.0 with every rule gives the report it gives without."""
    from zerolint.config import SELECT_ALL, Settings
    from zerolint.discovery import discover
    from zerolint.engine import Engine
    from zerolint.formats import render

    tree = vllm_tree("0.33.0")
    settings = Settings(select=frozenset({SELECT_ALL}), ignore=frozenset({"ZL920"}))
    files = discover([tree / "vllm"], settings.exclude, settings.root).files
    plain = Engine(settings).run(files).report
    engine = Engine(settings)
    project = engine.project_for(files)
    wanted = engine.first_candidate(project)
    ahead = [path for path in reversed(files) if wanted(path)]
    assert len(ahead) > 10
    for path in ahead:
        project.parse_ahead(path)
    report = engine.run(files, project=project).report
    assert project.taken_ahead == len(ahead)
    assert report.findings
    shown = [render(r, "json", show_proved=True, root=str(tree)) for r in (plain, report)]
    assert shown[0] == shown[1]


def test_each_side_of_the_prescan_is_timed(tmp_path: Path) -> None:
    """The prescan takes as long as the longer of its sides: ``meanwhile()`` here (the
    check imports the analyzer) and the child's reading of the tree. Each side is timed,
    the child's by the child, and ``--timings`` shows both ("imports", "scan"), so that
    one can see which bounds the phase."""
    files = tree(tmp_path)
    scan = prescan(files, {"sink_fn"}, lambda: time.sleep(0.3), jobs=2)
    assert scan is not None
    try:
        assert 0.3 <= scan.meanwhile_seconds < 30
        assert 0 < scan.scan_seconds < 30
    finally:
        scan.close()
    slow = functools.partial(_slow_read, 0.002)  # the child's side the longer one now
    started = time.perf_counter()
    scan = prescan(files, {"sink_fn"}, lambda: None, jobs=2, read=slow)
    elapsed = time.perf_counter() - started
    assert scan is not None
    try:
        assert len(files) * 0.002 <= scan.scan_seconds <= elapsed
        assert scan.meanwhile_seconds < scan.scan_seconds
    finally:
        scan.close()

    def timings(*args: str) -> dict[str, float]:
        run = zerolint("check", "--no-cache", "--timings", *args, ".", cwd=tmp_path)
        line = next(x for x in run.stderr.splitlines() if x.startswith("zerolint: timings:"))
        return {k: float(v) for k, v in re.findall(r"(\w+)=([0-9.]+)s", line)}

    shown = timings("--jobs", "2")
    assert 0 < shown["imports"] <= shown["prescan"]
    assert 0 < shown["scan"] <= shown["prescan"]
    alone = timings("--jobs", "1")  # no child: nothing to show side by side
    assert "prescan" in alone and "imports" not in alone and "scan" not in alone


def _slow_read(pause: float, path: Path) -> bytes:
    time.sleep(pause)
    return path.read_bytes()


def test_a_failing_caller_leaves_no_child_behind(tmp_path: Path) -> None:
    files = tree(tmp_path)

    def fail() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        prescan(files, {"sink_fn"}, fail, jobs=2)
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)  # reaped: no child of this process is left


def test_a_failing_caller_lets_go_of_a_child_whose_report_fills_the_pipe(tmp_path: Path) -> None:
    """A report larger than a pipe holds (here each of 3,000 files holds every text asked
    for, and each text's files are in it): the child is still writing it when the caller's
    side fails. The caller's end of the pipe is closed before the child is waited for, or
    both would wait for ever (an alarm ends the test instead)."""
    import signal

    texts = [f"text_number_{i}" for i in range(8)]
    body = "sink_fn(x)\n" + "".join(f"{t} = 1\n" for t in texts)
    files = []
    for i in range(3000):
        files.append(tmp_path / f"m{i:04d}.py")
        files[-1].write_text(body)

    def fail() -> None:
        time.sleep(0.5)  # the child has filled the pipe by now
        raise KeyboardInterrupt

    def hung(signum: int, frame: object) -> None:
        raise TimeoutError("the prescan waits for its child for ever")

    before = signal.signal(signal.SIGALRM, hung)
    signal.alarm(20)
    try:
        with pytest.raises(KeyboardInterrupt):
            prescan(files, {"sink_fn"}, fail, jobs=2, also=texts)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, before)
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


def test_an_index_in_the_making_answers_as_a_scan_does(tmp_path: Path) -> None:
    """Between questions the child indexes a slice of the files, the names they call,
    then their identifiers: a question asked after none, some or all slices of either gets
    the files a scan finds."""
    datas = [p.read_bytes() for p in tree(tmp_path)]
    texts = _Texts([None if b"\x00" in d else d for d in datas])
    texts.CHUNK = texts.CALL_CHUNK = 50
    while True:
        # A text whose longest identifier is one (`(Base)`), starts one (`.Bas`, ` f1`),
        # ends one (`f1(`), or lies inside one (`yBas`).
        # A call whose name ends a longer one's (`Base(` in `MyBase(`), or begins one.
        extra = ["MyBase(", "f1(", "(Base)", ".Bas", " f1", "= GrandChild()", "yBas", "(Bas)"]
        extra += ["Bas(", "Grand(", "1(", "_(", "(", "Base(("]
        for needle in (n.encode() for n in NEEDLES + extra):
            scanned = [i for i in texts.readable if needle in datas[i]]
            assert texts.search(needle) == scanned, (needle, texts.calls.done, texts.words.done)
        if texts.complete:
            break
        texts.index_some()


def test_the_names_called_are_the_runs_of_identifier_bytes_before_a_paren() -> None:
    """A name is called where it stands just before "(": the last part of a dotted call,
    a ``def`` or ``class`` line's name, a call after non-ASCII letters; not one a space or
    a non-ASCII letter parts from its "(", nor the text after the last "("."""
    text = "f(x) + a.b(c)(d)\nclass K(Base):\n  def m(self): g ((1))\né2h(2) café(3) tail"
    assert _called(text.encode()) == {b"f", b"b", b"K", b"m", b"2h"}
    assert _called(b"") == set()
    assert _called(b"no call here") == set()


_BODIES = st.lists(
    st.one_of(st.none(), st.text(alphabet="aAb_1(). é\n", max_size=40).map(str.encode)),
    min_size=1,
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(_BODIES, st.lists(st.text(alphabet="aAb_1", min_size=1, max_size=4), max_size=5))
def test_the_names_called_answer_who_calls_a_name_as_a_scan_does(
    datas: list[bytes | None], names: list[str]
) -> None:
    """``Name(`` is answered from the names the files call, exactly: the files that hold
    it, also where a longer name ends with ``Name`` or holds it elsewhere, after any number
    of the files' names are indexed."""
    texts = _Texts(datas)
    texts.CALL_CHUNK = 2
    needles = [n.encode() + b"(" for n in names]
    while True:
        for needle in needles:
            scanned = [i for i in texts.readable if needle in datas[i]]  # type: ignore[operator]
            assert texts.search(needle) == scanned, (needle, texts.calls.done)
        if texts.calls.done == len(texts.readable):
            break
        texts.index_some()


@pytest.mark.network
@pytest.mark.slow
def test_on_vllm_every_index_answers_as_a_scan_does() -> None:
    """On vLLM 0.33.0's tree, once both indexes are built: who calls a class (``Name(``)
    and who names it, for classes spread over the whole tree, are the files a scan finds."""
    from devtools.wheels import vllm_tree

    files = sorted((vllm_tree("0.33.0") / "vllm").rglob("*.py"))
    datas = [p.read_bytes() for p in files]
    texts = _Texts(datas)
    while not texts.complete:
        texts.index_some()
    classes = sorted({c for d in datas for c in re.findall(rb"(?m)^[ \t]*class (\w+)", d)})
    assert len(classes) > 1000
    for name in classes[:: len(classes) // 40]:
        for needle in (name + b"(", name):
            assert texts.search(needle) == [i for i, d in enumerate(datas) if needle in d], needle


def test_a_text_holding_an_answered_one_is_answered_from_that_ones_files() -> None:
    """``sink_fn_fp8`` holds ``sink_fn``: only the files holding ``sink_fn`` can hold it.
    The child looks at those alone (the index or a scan would look at every file), and its
    answer is still exactly the files holding the text."""
    from zerolint.prescan import _narrowed

    datas = [b"sink_fn(x)", b"sink_fn_fp8(y)", None, b"other_sink_fn_fp8", b"nothing"]
    found = {b"sink_fn": [0, 1, 3], b"fp8": [1, 3], b"": []}
    assert _narrowed(b"sink_fn_fp8", found, datas) == [1, 3]
    assert _narrowed(b"sink_fn_fp8(", found, datas) == [1]
    # Only the known files are looked at: one that holds the text but was not among them
    # (impossible for a true answer) is not found, which shows none other was read.
    assert _narrowed(b"fp8(", {b"fp8": [3]}, [b"fp8(", None, None, b"fp8("]) == [3]
    assert _narrowed(b"Base(", found, datas) is None  # nothing known lies inside it


def test_needles_looked_for_through_a_shared_key_are_found_as_one_by_one(tmp_path: Path) -> None:
    """Sink names sharing a long part are looked for through it (a pass over the tree per
    key): each needle's files, and the key's, are exactly those that hold it."""
    needles = [
        b"fp8_paged_mqa_logits",
        b"fp8_fp4_paged_mqa_logits",
        b"get_paged_mqa_logits_metadata",
        b"decode_attention_fwd",
        b"flash_mla_with_kvcache",
        b"flash_mla_with_kvcache_fp8",  # holds another needle, which is then its key
    ]
    groups = shared_keys(needles)
    assert groups[b"_paged_mqa_logits"] == needles[:3]
    assert sorted(n for members in groups.values() for n in members) == sorted(needles)
    assert all(key in n for key, members in groups.items() for n in members)
    bodies = [
        "x = fp8_paged_mqa_logits(q)\n",
        "from m import get_paged_mqa_logits_metadata\n",
        "paged_mqa_logits = 1  # no needle, nor the key\n",
        "y = _paged_mqa_logits\n",  # the key alone
        "fp8_fp4_paged_mqa_logits(a); decode_attention_fwd(b)\n",
        "flash_mla_with_kvcache_fp8(c)\n",
        "nothing here\n",
    ]
    files = []
    for i, body in enumerate(bodies):
        path = tmp_path / f"f{i}.py"
        path.write_text(body)
        files.append(path)
    datas, hits, bad, found = _scan(files, needles, Path.read_bytes)
    assert bad == []
    for text in [*needles, *groups]:
        assert found[text] == [i for i, d in enumerate(datas) if text in d], text
    assert hits == [i for i, d in enumerate(datas) if any(n in d for n in needles)]
    assert hits == [0, 1, 4, 5]
