"""The language server replays the summaries an edit cannot have changed, and still says,
file by file, what a cold check of the same contents says.

A warm run (``server_index.Context.run``) records every question each summary's making
asks (a module, a text, a search, another summary, whether a name wraps a sink, ...) with
its answer; the next run installs a kept summary when the same questions, asked again at
the same point, get the same answers (``Analyzer.replay``). These tests check the output
against a cold check after random edits (on a fixture made to exercise recursion, fields,
lazy calls and wrappers, and on vLLM 0.33.0's tree), that the replay really happens, and
that a replay whose side effects changed an answer it had got makes the run start over.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.test_server_incremental import (
    apply_random_edit,
    cold,
    delete_line,
    diagnostic_key,
    findings_key,
    indexed,
    insert_line,
    replace,
    warm,
)
from zerolint.dataflow import Analyzer
from zerolint.engine import Engine
from zerolint.server_index import Context, WorkspaceIndex

KERNELS = """\
import deep_gemm


def schedule(lens, num_sms):
    return deep_gemm.get_paged_mqa_logits_metadata(lens, 64, num_sms)
"""
# ping and pong call each other: their summaries are made from partial ones, then again.
RECURSIVE = """\
from .kernels import schedule


def ping(n, lens):
    if n > 0:
        return pong(n - 1, lens)
    return lens // 4


def pong(n, lens):
    return ping(n, lens)


def build(seq_lens, num_sms):
    lens = ping(3, seq_lens)
    return schedule(lens, num_sms)
"""
STATE = """\
from .kernels import schedule


class Meta:
    def __init__(self, seq_lens):
        self.lens = seq_lens // 4


class Builder:
    def __init__(self, num_sms):
        self.num_sms = num_sms

    def run(self, meta: Meta):
        return schedule(meta.lens, self.num_sms)

    def again(self, meta: Meta):
        return self.run(meta)
"""
# A call into a module no sink reaches: a placeholder, bound when a path needs it.
LAZY = """\
from .helpers import halve
from .kernels import schedule


def plan(seq_lens, num_sms):
    fn = halve(seq_lens)
    return schedule(fn, num_sms)


def plan_bound_again(seq_lens, num_sms):
    fn = halve(seq_lens)
    seq_lens = seq_lens[:1]  # the call's operand renamed in `fn`: a copy of the call
    return schedule(fn, num_sms)
"""
HELPERS = """\
def halve(x):
    return x // 2
"""
# top -> mid -> leaf -> schedule: an edit of leaf changes mid's summary, whose module is
# not edited, and so top's.
LEAF = """\
from .kernels import schedule


def leaf(lens, num_sms):
    return schedule(lens, num_sms)
"""
MID = """\
from .leaf import leaf


def mid(lens, num_sms):
    return leaf(lens, num_sms)
"""
TOP = """\
from .mid import mid


def top(seq_lens, num_sms):
    return mid(seq_lens // 4, num_sms)
"""
FILES = {
    "pkg/__init__.py": "",
    "pkg/kernels.py": KERNELS,
    "pkg/recursive.py": RECURSIVE,
    "pkg/state.py": STATE,
    "pkg/lazy.py": LAZY,
    "pkg/helpers.py": HELPERS,
    "pkg/leaf.py": LEAF,
    "pkg/mid.py": MID,
    "pkg/top.py": TOP,
}
EDITS = {
    "pkg/kernels.py": [
        replace("return deep_gemm", "lens = lens.clamp(min=1)\n    return deep_gemm"),
        replace("    lens = lens.clamp(min=1)\n", ""),
        replace("def schedule(", "def schedule2("),
        replace("def schedule2(", "def schedule("),
        insert_line("# a comment\n"),
    ],
    "pkg/recursive.py": [
        replace("return lens // 4", "return (lens // 4).clamp(min=1)"),
        replace("return (lens // 4).clamp(min=1)", "return lens // 4"),
        replace("return ping(n, lens)", "return lens"),
        replace("return lens\n\n\ndef build", "return ping(n, lens)\n\n\ndef build"),
        insert_line("# a comment\n"),
        delete_line,
    ],
    "pkg/state.py": [
        replace("self.lens = seq_lens // 4", "self.lens = (seq_lens // 4).clamp(min=1)"),
        replace("self.lens = (seq_lens // 4).clamp(min=1)", "self.lens = seq_lens // 4"),
        insert_line("# a comment\n"),
        insert_line("\n"),
    ],
    "pkg/lazy.py": [
        replace("fn = halve(seq_lens)", "fn = halve(seq_lens).clamp(min=1)"),
        replace("fn = halve(seq_lens).clamp(min=1)", "fn = halve(seq_lens)"),
        insert_line("# a comment\n"),
    ],
    "pkg/helpers.py": [
        replace("return x // 2", "return (x // 2).clamp(min=1)"),
        replace("return (x // 2).clamp(min=1)", "return x // 2"),
        insert_line("# a comment\n"),
    ],
    "pkg/leaf.py": [
        replace("schedule(lens, num_sms)", "schedule(lens.clamp(min=1), num_sms)"),
        replace("schedule(lens.clamp(min=1), num_sms)", "schedule(lens, num_sms)"),
    ],
}


def the_context(index: WorkspaceIndex, path: Path) -> Context:
    context = index.context_for(path)
    assert context is not None
    return context


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_replayed_runs_after_edits_equal_a_cold_check(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    root = tmp_path / "ws"
    texts = dict(FILES)
    index = indexed(root, texts, texts)
    context = the_context(index, root / "pkg/kernels.py")
    assert warm(index, root, texts) == cold(tmp_path / "cold", texts)
    replayed = interpreted = 0
    for step in range(30):
        rel = apply_random_edit(rng, EDITS, texts)
        if rel is None:
            continue
        index.analyse(root / rel, texts[rel])
        assert warm(index, root, texts) == cold(tmp_path / "cold", texts), (seed, step, rel)
        replayed += int(context.engine.stats.get("replayed", 0))
        interpreted += int(context.engine.stats.get("interpreted", 0))
    # The replay did its part: most summaries were replayed, not made again.
    assert replayed > interpreted


def test_an_edit_elsewhere_replays_recursive_summaries_and_fields(tmp_path: Path) -> None:
    """ping and pong are made more than once a run (from each other's partial summaries,
    then again); Meta.lens is a field's values: an edit of another file replays them all."""
    root = tmp_path / "ws"
    index = indexed(root, FILES, ["pkg/lazy.py"])
    context = the_context(index, root / "pkg/lazy.py")
    before = context.analyzer
    assert before is not None
    made = {k.name: v for k, v in before.made.items()}
    assert len(made["ping"]) >= 2 and len(made["pong"]) >= 2  # a recursion: made again
    fields = {k[1] for k in before.made_fields}
    assert "lens" in fields

    index.analyse(root / "pkg/lazy.py", FILES["pkg/lazy.py"] + "# an edit\n")
    after = context.analyzer
    assert after is not None and after is not before
    for name in ("ping", "pong", "build", "Builder.run", "Meta.__init__"):
        then = [summary for summary, _, _ in made[name]]
        now = [summary for summary, _, _ in {k.name: v for k, v in after.made.items()}[name]]
        assert now == then, name  # the same objects: replayed, not made again
    assert context.engine.stats["interpreted"] < context.engine.stats["replayed"]
    for key, values in after.made_fields.items():
        if key[1] == "lens":
            assert values[0][2] is before.made_fields[key][0][2]  # the same values


CHAIN = {
    "pkg/__init__.py": "",
    "pkg/kernels.py": KERNELS,
    # Each module reaches the kernel: a call into it asks for a summary (a call into a
    # module that cannot reach one is a lazy call site).
    "pkg/helper.py": (
        "from .kernels import schedule\n\n\ndef quarter(lens):\n    return lens // 4\n\n\n"
        "def direct(lens, num_sms):\n    return schedule(lens.clamp(min=1), num_sms)\n"
    ),
    "pkg/mid.py": (
        "from .helper import direct, quarter\n\n\ndef mid(lens):\n    return quarter(lens)\n\n\n"
        "def also(lens, num_sms):\n    return direct(lens, num_sms)\n"
    ),
    "pkg/top.py": (
        "from .kernels import schedule\nfrom .mid import mid\n\n\n"
        "def top(seq_lens, num_sms):\n    return schedule(mid(seq_lens), num_sms)\n\n\n"
        "def other(seq_lens, num_sms):\n    return schedule(seq_lens.clamp(min=1), num_sms)\n"
    ),
}


def key_named(analyzer: Analyzer, name: str) -> object:
    return next(k for k in analyzer.made if k.name == name)


def test_a_making_that_asked_for_a_summary_an_edit_makes_anew_is_not_replayed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``mid`` asked for the summary of ``quarter``, in the file edited; ``top`` asked for
    ``mid``'s. Neither can be replayed (asked again, each summary is a new one), so neither
    replay is begun: no question of theirs is asked before they are interpreted, as a cold
    run's making asks them once (``Analyzer.doomed``). ``other`` is replayed, and the
    findings are a cold check's."""
    root = tmp_path / "ws"
    texts = dict(CHAIN)
    index = indexed(root, texts, ["pkg/top.py"])
    context = the_context(index, root / "pkg/top.py")
    before = context.analyzer
    assert before is not None
    made = {k.name: [e for _, _, e in v] for k, v in before.made.items()}
    # The makings that asked for the summary of ``quarter`` (``mid``) or of ``mid``
    # (``top``'s second: its first, before ``mid`` was known to reach the kernel, asked
    # nothing of it).
    asked = {
        name: [id(e) for e in made[name] if any(q[:2] == ("summary", callee) for q in e)]
        for name, callee in (
            ("mid", key_named(before, "quarter")),
            ("top", key_named(before, "mid")),
        )
    }
    assert asked["mid"] and asked["top"]
    replayed: list[int] = []
    replay_events = Analyzer._replay_events

    def seen(self: Analyzer, events: list[tuple]) -> bool:
        replayed.append(id(events))
        return replay_events(self, events)

    monkeypatch.setattr(Analyzer, "_replay_events", seen)
    texts["pkg/helper.py"] = "# an edit\n" + CHAIN["pkg/helper.py"]
    index.analyse(root / "pkg/helper.py", texts["pkg/helper.py"])
    for name in ("mid", "top"):
        assert not set(asked[name]) & set(replayed), name
    assert {id(e) for e in made["other"]} <= set(replayed)
    assert context.runs_made_again == 0
    assert warm(index, root, texts) == cold(tmp_path / "cold", texts)
    assert warm(index, root, texts), "top's finding"


def test_a_making_that_met_a_recursion_is_replayed_only_where_it_meets_it_again(
    tmp_path: Path,
) -> None:
    """pong's first making asked for ping while ping was being made (it got ping's partial
    summary). Asked for on its own, nothing is being made: the replay must refuse."""
    root = tmp_path / "ws"
    index = indexed(root, FILES, ["pkg/lazy.py"])
    context = the_context(index, root / "pkg/lazy.py")
    before = context.analyzer
    assert before is not None
    pong = next(k for k in before.made if k.name == "pong")
    first = before.made[pong][0][2]
    assert first is not None and any(e[0] == "recursion" for e in first)
    fresh = Analyzer(context.project, before.rules)
    fresh.adopt(before)
    assert not fresh._in_progress
    assert fresh.replay(pong, 0) is None
    # Where ping is being made, as when pong's first making asked, it replays.
    ping = next(k for k in before.made if k.name == "ping")
    fresh._in_progress.add(ping)
    fresh.summaries.clear()
    assert fresh.replay(pong, 0) is before.made[pong][0][0]


KERNELS_META = """\
import deep_gemm


class Meta:
    pass


def schedule(lens, num_sms):
    return deep_gemm.get_paged_mqa_logits_metadata(lens, 64, num_sms)
"""
USE_META = """\
import deep_gemm

from .kernels import Meta


def run(meta: Meta, num_sms):
    return deep_gemm.get_paged_mqa_logits_metadata(meta.lens, 64, num_sms)
"""
MAKER_A = """\
from .kernels import Meta


def make_a(seq_lens):
    return Meta(lens=seq_lens // 4)


def helper(x):
    return x + 1
"""
MAKER_B = """\
from .kernels import Meta


def make_b(seq_lens):
    return Meta(lens=seq_lens // 8)
"""
CALLER = """\
import deep_gemm


def g(x, num_sms):
    return deep_gemm.get_paged_mqa_logits_metadata(x, 64, num_sms)
"""


def test_a_field_made_with_parsing_allowed_is_not_replayed_where_it_is_not(
    tmp_path: Path,
) -> None:
    """``meta.lens`` is made twice a run: while summaries are made (only the parsed
    modules that build a ``Meta`` count) and while the path is resolved (every module
    that names ``Meta(`` is parsed). After an edit that makes ``maker_a`` parsed early,
    the first making must not be replayed from the second: a cold run's first making
    sees ``maker_a``'s construction only, not ``maker_b``'s."""
    texts = {
        "pkg/__init__.py": "",
        "pkg/kernels.py": KERNELS_META,
        "pkg/use.py": USE_META,
        "pkg/maker_a.py": MAKER_A,
        "pkg/maker_b.py": MAKER_B,
        "pkg/a.py": CALLER,
    }
    root = tmp_path / "ws"
    index = indexed(root, texts, texts)
    assert warm(index, root, texts) == cold(tmp_path / "cold", texts)
    texts["pkg/a.py"] = CALLER.replace(
        "import deep_gemm\n", "import deep_gemm\n\nfrom .maker_a import helper\n"
    ).replace("metadata(x,", "metadata(helper(x),")
    index.analyse(root / "pkg/a.py", texts["pkg/a.py"])
    assert warm(index, root, texts) == cold(tmp_path / "cold", texts)


RESOLVING_M1 = """\
from .m3 import schedule

alias = schedule


def meta(context_lens, num_sms):
    return alias(context_lens, num_sms)


class Base:
    def compress(self, seq_lens):
        return seq_lens
"""
RESOLVING_M2 = """\
import deep_gemm
from .m1 import Base


class Sub(Base):
    def build(self, seq_lens):
        return super().compress(seq_lens)


def direct(lens, num_sms):
    return deep_gemm.get_paged_mqa_logits_metadata(lens, 64, num_sms)
"""
RESOLVING_M3 = """\
import deep_gemm
from .m1 import alias

schedule = lambda context_lens, num_sms: deep_gemm.get_paged_mqa_logits_metadata(
    context_lens, 64, num_sms
)
OUT = alias(SEQ // 2, 132)
"""


def test_a_summary_made_during_a_replay_sees_what_the_replayed_making_was_resolving(
    tmp_path: Path,
) -> None:
    """``meta`` resolves ``alias``, and ``m3``'s module summary is first made inside that
    resolution: its own ``alias(...)`` meets the value being resolved and stops there.
    (Found by fuzzing the warm index against cold checks.) That summary was then kept
    without the finding at ``OUT``; now it is made again once ``meta``'s is, and reports
    it (``Analyzer.cut_since``). Replayed, ``meta`` resolves ``alias`` again while it asks
    for that summary, as the cold run's making did, and the warm index reports what a
    cold check reports."""
    texts = {
        "pkg/__init__.py": "",
        "pkg/m1.py": RESOLVING_M1,
        "pkg/m2.py": RESOLVING_M2,
        "pkg/m3.py": RESOLVING_M3,
    }
    root = tmp_path / "ws"
    index = indexed(root, texts, sorted(texts))
    assert warm(index, root, texts) == cold(tmp_path / "cold", texts)
    texts["pkg/m2.py"] += "# an edit\n"
    index.analyse(root / "pkg/m2.py", texts["pkg/m2.py"])
    assert the_context(index, root / "pkg/m2.py").engine.stats["replayed"] > 0
    assert warm(index, root, texts) == cold(tmp_path / "cold", texts)


FIELD_META = """\
import deep_gemm
import torch


def clamped_schedule(lens, block_kv, num_sms):
    return deep_gemm.get_paged_mqa_logits_metadata(torch.clamp(lens, min=1), block_kv, num_sms)


class Meta:
    def __init__(self):
        self.schedule = clamped_schedule
"""
FIELD_USE = """\
import deep_gemm
import torch

from .meta import Meta


def plan(meta: Meta, seq_lens, num_sms):
    return meta.schedule(seq_lens // 4, 64, num_sms)


def plan_directly(seq_lens, num_sms):
    lens = torch.clamp(seq_lens // 4, min=1)
    return deep_gemm.get_paged_mqa_logits_metadata(lens, 64, num_sms)
"""
FIELD_SUBCLASS = """\
import deep_gemm

from .meta import Meta


class Direct(Meta):
    def __init__(self):
        super().__init__()
        self.schedule = deep_gemm.get_paged_mqa_logits_metadata
"""


def test_a_making_that_read_a_field_another_module_now_writes_is_not_replayed(
    tmp_path: Path,
) -> None:
    """``plan`` calls ``meta.schedule``, which ``Meta`` sets to a function that clamps:
    no finding (``plan_directly`` names the kernel, so ``use.py`` is analysed from the
    start and ``plan``'s making asks for the field's values). An edit of another module
    adds a subclass that sets it to the kernel itself. No summary ``plan``'s making asked
    for is made anew, but the field's values are: its replay must compare them with what
    it got, and not keep the summary made without the subclass's kernel (the cold check
    reports the call)."""
    texts = {
        "pkg/__init__.py": "",
        "pkg/meta.py": FIELD_META,
        "pkg/use.py": FIELD_USE,
        "pkg/other.py": "from .meta import Meta\n",
    }
    root = tmp_path / "ws"
    index = indexed(root, texts, sorted(texts))
    assert warm(index, root, texts) == cold(tmp_path / "cold", texts)
    assert not any(found for found, _ in warm(index, root, texts).values())
    texts["pkg/other.py"] = FIELD_SUBCLASS
    index.analyse(root / "pkg/other.py", texts["pkg/other.py"])
    assert the_context(index, root / "pkg/other.py").engine.stats["replayed"] > 0
    after = warm(index, root, texts)
    assert after == cold(tmp_path / "cold", texts)
    assert after["pkg/use.py"][0]  # through the subclass's kernel


def test_a_question_whose_asking_parses_a_module_is_not_asked_twice_otherwise(
    tmp_path: Path,
) -> None:
    """The kept making of ``Base9.context_lens``'s values (made while paths are resolved)
    first asks for ``Base9``'s subclasses in the parsed modules. Asking parsed ``m3`` (to
    find ``Added803``'s bases) and got another answer than the last run's; the making that
    followed asked again and, ``m3`` parsed then, found ``Added860`` too, which a cold
    run's single asking did not. The run was made again without replaying (the mutant
    ``replay-differing-question-not-checked``). Since the search for subclasses follows a
    subclass's subclasses into the modules that name them, the first asking finds
    ``Added860`` too, and no run is made again; the warm index still reports what a cold
    check does after each edit. (Found by fuzzing the warm index against cold checks.)"""
    texts = {
        "pkg/__init__.py": "",
        "pkg/m1.py": "",
        "pkg/m2.py": SCHED,
        "pkg/m3.py": "",
        "pkg/m4.py": "from .m1 import Base9\n",
    }
    root = tmp_path / "ws"
    index = indexed(root, texts, sorted(texts))
    edits = {
        "pkg/m1.py": (
            "from .m3 import Added860\nfrom .m2 import Base9\n"
            "class Added803(Added860):\n        return self.seq_lens\n"
        ),
        "pkg/m2.py": SCHED
        + (
            "class Base9(ISub6):\n    def __init__(self, seq_lens, num_sms):\n"
            "        return sched1(self.context_lens, self.num_sms)\n"
        ),
        "pkg/m3.py": (
            "from .m4 import Sub9\nclass Added860(Sub9):\n"
            "    def __init__(self, seq_lens, num_sms):\n"
            "        self.context_lens = seq_lens // 2\n"
        ),
        "pkg/m4.py": (
            "from .m1 import Base9\nclass Sub9(Base9):\n"
            "        self.context_lens = halve5(seq_lens)\n"
        ),
    }
    context = the_context(index, root / "pkg/m2.py")
    for rel, text in edits.items():
        texts[rel] = text
        index.analyse(root / rel, text)
        assert warm(index, root, texts) == cold(tmp_path / "cold", texts), rel
    assert context.runs_made_again == 0


SCHED = """\
def sched1(lens, num_sms):
    return deep_gemm.get_paged_mqa_logits_metadata(lens, 64, num_sms)
"""


A_MODULE = """\
import deep_gemm

from .b import wrapped
from .c import RATIO


class Runner:
    def go(self, helper, seq_lens, num_sms):
        helper.wrapped(seq_lens)
        deep_gemm.get_paged_mqa_logits_metadata(seq_lens, 64, num_sms)
        out = wrapped(seq_lens // 4, num_sms)
        return out // RATIO
"""
B_MODULE = """\
import deep_gemm


def wrapped(lens, num_sms):
    return deep_gemm.get_paged_mqa_logits_metadata(lens, 64, num_sms)
"""
C_MODULE = """\
import deep_gemm

RATIO = 4


def unused(lens, num_sms):
    return deep_gemm.get_paged_mqa_logits_metadata(lens.clamp(min=1), 64, num_sms)
"""


def test_a_replay_that_changed_an_answer_it_got_makes_the_run_again(tmp_path: Path) -> None:
    """``Runner.go`` asks whether ``wrapped`` wraps a sink (not yet: no), then asks for
    ``wrapped``'s summary (whose replay makes it one), then reads module ``c``. After an
    edit of ``c`` its replay fails there, and asked again the first question is answered
    otherwise: the interpretation that follows would not go as a cold run's did, so the
    run is made again without replaying, and reports what a cold check does."""
    texts = {
        "pkg/__init__.py": "",
        "pkg/a.py": A_MODULE,
        "pkg/b.py": B_MODULE,
        "pkg/c.py": C_MODULE,
    }
    root = tmp_path / "ws"
    logged: list[tuple[str, str]] = []
    index = indexed(
        root, texts, ["pkg/a.py"], lambda level, message: logged.append((level, message))
    )
    context = the_context(index, root / "pkg/a.py")
    assert context.runs_made_again == 0
    texts["pkg/c.py"] = "# an edit\n" + C_MODULE
    index.analyse(root / "pkg/c.py", texts["pkg/c.py"])
    assert context.runs_made_again == 1
    assert [m for _, m in logged if "analysed again without replaying" in m], logged
    assert warm(index, root, texts) == cold(tmp_path / "cold", texts)
    # An edit that changes no answer a replay got: nothing is made again.
    texts["pkg/a.py"] = A_MODULE + "# an edit\n"
    index.analyse(root / "pkg/a.py", texts["pkg/a.py"])
    assert context.runs_made_again == 1
    assert warm(index, root, texts) == cold(tmp_path / "cold", texts)


VLLM_FILES = [
    "vllm/v1/attention/backends/mla/indexer.py",
    "vllm/utils/deep_gemm.py",
    "vllm/v1/attention/backends/mla/flashmla_sparse.py",
    "vllm/v1/attention/backends/mla/rocm_aiter_mla.py",
    "vllm/v1/attention/ops/flashmla.py",
]


def random_edit(text: str, rng: random.Random) -> str:
    """A comment line, a line deleted, a function renamed, or a return value clamped."""
    lines = text.splitlines(keepends=True)
    kind = rng.randrange(4)
    if kind == 0:
        i = rng.randrange(len(lines) + 1)
        return "".join(lines[:i] + ["# an edit\n"] + lines[i:])
    if kind == 1:
        i = rng.randrange(len(lines))
        return "".join(lines[:i] + lines[i + 1 :])
    if kind == 2:
        names = [ln.split("def ", 1)[1].split("(", 1)[0] for ln in lines if "def " in ln]
        name = rng.choice(names)
        return text.replace(f"def {name}(", f"def {name}_renamed(", 1)
    returns = [i for i, ln in enumerate(lines) if ln.strip().startswith("return ")]
    i = rng.choice(returns)
    indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
    lines[i] = f"{indent}return ({lines[i].strip()[7:]}).clamp(min=1)\n"
    return "".join(lines)


@pytest.mark.network
@pytest.mark.slow
def test_on_vllm_replayed_runs_after_edits_equal_a_cold_check() -> None:
    """vLLM 0.33.0's tree: after each of a seeded sequence of edits of five files (the
    indexer, DeepGEMM's wrappers, two attention backends, FlashMLA's ops), every finding
    and diagnostic of the warm index is a cold check's, and most summaries were
    replayed."""
    from devtools.wheels import vllm_tree

    root = vllm_tree("0.33.0").resolve()
    rng = random.Random(33)
    texts = {rel: (root / rel).read_text() for rel in VLLM_FILES}
    index = WorkspaceIndex([root], lambda level, message: None)
    index.analyse(root / VLLM_FILES[0], texts[VLLM_FILES[0]])
    context = the_context(index, root / VLLM_FILES[0])

    def keys(report_findings: list, report_diagnostics: list) -> list:
        found = [findings_key(f, root) for f in report_findings]
        found += [diagnostic_key(d, root) for d in report_diagnostics]
        return sorted(found, key=repr)

    replayed = 0
    for step in range(8):
        rel = rng.choice(VLLM_FILES)
        texts[rel] = random_edit(texts[rel], rng)
        index.analyse(root / rel, texts[rel])
        replayed += int(context.engine.stats.get("replayed", 0))
        results = context.results.values()
        got = keys(
            [f for r in results for f in r.findings], [d for r in results for d in r.diagnostics]
        )
        outcome = Engine(context.settings).run(
            context.files, overrides={root / r: t for r, t in texts.items()}
        )
        context.apply_settings(outcome.report)
        assert got == keys(outcome.report.findings, outcome.report.diagnostics), (step, rel)
    assert replayed > 1000


SGLANG_FILES = [
    "sglang/srt/layers/attention/deepseek_v4_backend.py",
    "sglang/srt/layers/attention/dsa_backend.py",
    "sglang/srt/layers/attention/dsv4/metadata.py",
]


@pytest.mark.network
@pytest.mark.slow
def test_on_sglang_an_edit_replays_once_and_equals_a_cold_check() -> None:
    """SGLang 0.5.23's tree, a comment line added in the middle of its DeepSeek-V4 backend,
    its DSA backend and the indexer's metadata, in turn: each run replays most summaries
    and is not made again, and its findings are a cold check's. A making that asked for
    the subclasses of ``PagedIndexerMetadata`` (when 23 modules were parsed), then for a
    summary the edit makes anew (whose making parses two more), would stop there if it
    were replayed; asked again, the subclasses' question listed 25 modules, and the run
    was made again, every summary anew (``Analyzer.doomed``: such a making is not
    replayed, it is interpreted from where a cold run's making started). Since the search
    for subclasses follows a subclass's subclasses into the modules that name them, the
    first asking parses what the second would, and the question no longer changes there
    (the mutants of ``doomed`` are equivalent on this tree)."""
    from devtools.wheels import sglang_tree

    root = sglang_tree("0.5.23").resolve()
    texts = {rel: (root / rel).read_text() for rel in SGLANG_FILES}
    index = WorkspaceIndex([root], lambda level, message: None)
    index.analyse(root / SGLANG_FILES[0], texts[SGLANG_FILES[0]])
    context = the_context(index, root / SGLANG_FILES[0])
    for rel in SGLANG_FILES:
        lines = texts[rel].splitlines(keepends=True)
        texts[rel] = "".join([*lines[: len(lines) // 2], "# an edit\n", *lines[len(lines) // 2 :]])
        index.analyse(root / rel, texts[rel])
        assert context.runs_made_again == 0, rel
        # Most of the run's makings are replays (565 of 938 after the first edit).
        stats = context.engine.stats
        assert stats["replayed"] > stats["interpreted"], (rel, stats)
        got = sorted(
            (findings_key(f, root) for r in context.results.values() for f in r.findings),
            key=repr,
        )
        outcome = Engine(context.settings).run(
            context.files, overrides={root / r: t for r, t in texts.items()}
        )
        context.apply_settings(outcome.report)
        assert got == sorted((findings_key(f, root) for f in outcome.report.findings), key=repr)
        assert got, "SGLang's two DeepSeek-V4 findings"


@pytest.mark.network
@pytest.mark.slow
def test_on_vllm_replayed_runs_do_not_keep_the_parses_edits_replaced() -> None:
    """What a failed replay tried is not kept: a field making of the last run whose replay
    failed is no dependency of this run's (its records name the last run's parses, and the
    next run would keep this one's). After six edits of FlashMLA's sparse backend, its old
    parses are not alive."""
    import gc

    from devtools.wheels import vllm_tree
    from zerolint.project import ModuleInfo

    root = vllm_tree("0.33.0").resolve()
    rel = "vllm/v1/attention/backends/mla/flashmla_sparse.py"
    text = (root / rel).read_text()
    index = WorkspaceIndex([root], lambda level, message: None)
    index.analyse(root / rel, text)
    for i in range(6):
        lines = text.splitlines(keepends=True)
        text = "".join(lines[: 100 * i] + [f"# edit {i}\n"] + lines[100 * i :])
        index.analyse(root / rel, text)
    gc.collect()
    alive = [o for o in gc.get_objects() if isinstance(o, ModuleInfo) and o.path == root / rel]
    # The current parse, and at most the one the last run's records still name.
    assert len(alive) <= 2


def test_random_packages_after_random_edits_equal_a_cold_check(tmp_path: Path) -> None:
    """``devtools/warm_fuzz.py`` for a few seeds (run it for more: thousands of packages
    and edits): random packages of four to eight modules, random edits of them, the warm
    index against a cold check after each file's edit. The edits change the findings
    often, and most summaries are replayed."""
    from devtools import warm_fuzz

    stats = dict.fromkeys(
        ("seeds", "with_findings", "edits", "changed", "runs", "replayed", "interpreted"), 0
    )
    stats["made_again"] = 0
    for seed in range(30):
        found = warm_fuzz.run_seed(seed, 25, tmp_path / f"seed{seed}", stats)
        assert found is None, found
    assert stats["with_findings"] >= 25
    assert stats["changed"] > stats["edits"] // 4
    assert stats["replayed"] > stats["interpreted"]
