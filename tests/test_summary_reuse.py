"""A round of ``Engine.analyse`` after the first keeps the summaries that the new modules
cannot change (``DepNode``): a summary made without asking about a module that was neither
parsed nor known to reach a sink is what interpreting it again would give, and so are the
functions of a recursion none of which asked. A summary that asked about a module the new
round adds is made again, with every function of its recursion. The findings are those of
a run that makes every summary again."""

from __future__ import annotations

from pathlib import Path

from tests.test_cli_check import write
from zerolint.config import Settings
from zerolint.dataflow import Analyzer
from zerolint.dataflow.frames import MAX_DEPTH, PARSED
from zerolint.engine import Engine
from zerolint.formats import render
from zerolint.model import Report
from zerolint.project import Project

FILES = {
    "pkg/__init__.py": "",
    # Mentions the sink: a candidate of the first round. `schedule` forwards to the sink,
    # so the files naming it are the second round's candidates.
    "pkg/kernels.py": """\
from deep_gemm import get_paged_mqa_logits_metadata

from pkg import helpers


def schedule(lens, num_sms):
    return get_paged_mqa_logits_metadata(lens, 64, num_sms)


def scaled(lens):
    return helpers.halve(lens)


def plain(x):
    return x + 1


def via_builder(lens):
    from pkg import builder

    return builder.build(lens, 132)


def outer(lens):
    return via_builder(lens)


def refers():
    from pkg import builder

    return builder.build


def ping(n):
    return pong(n - 1)


def pong(n):
    return ping(n)


def tick(lens):
    return tock(lens)


def tock(lens):
    via_builder(lens)
    return tick(lens)
""",
    # Names only the wrapper: found in the second round.
    "pkg/builder.py": """\
from pkg.kernels import schedule


def build(seq_lens, num_sms):
    return schedule(seq_lens // 4, num_sms)
""",
    "pkg/helpers.py": "def halve(x):\n    return x // 2\n",
}
# Deep enough that interpreting the first meets the depth limit (MAX_DEPTH * 4 summaries
# being made at once): that summary, and those made from it, depend on the order.
FILES["pkg/kernels.py"] += (
    "".join(f"\n\ndef chain{i}(x):\n    return chain{i + 1}(x)\n" for i in range(40))
    + "\n\ndef chain40(x):\n    return x\n"
)


class Rounds(Analyzer):
    """The analyzer, with each round's summaries kept aside for the test to compare."""

    def __init__(self, *args, keep: bool = True, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.keep = keep
        self.rounds: list[dict] = []

    def reset_summaries(self) -> None:
        self.rounds.append(dict(self.summaries))
        if not self.keep:  # as before: every summary made again
            self.summary_deps.clear()
        super().reset_summaries()


def analyse(tmp_path: Path, keep: bool) -> tuple[Rounds, str]:
    write(tmp_path, FILES)
    paths = [tmp_path / name for name in FILES]
    engine = Engine(Settings())
    project = Project(sorted(paths))
    analyzer = Rounds(project, engine.rules, keep=keep)
    modules, _ = engine.analyse(project, analyzer, None, set())
    findings = [f for mod in modules for f in engine.findings_in(mod, analyzer)]
    return analyzer, render(Report(findings=findings), "text", root=str(tmp_path))


def by_name(summaries: dict) -> dict:
    return {(k.mod.name, k.node.name.value if k.node else None): s for k, s in summaries.items()}


def test_the_second_round_keeps_what_the_new_modules_cannot_change(tmp_path: Path) -> None:
    analyzer, _ = analyse(tmp_path, keep=True)
    # Two rounds: the first before `schedule` was known to forward to the sink.
    assert len(analyzer.rounds) == 2
    first = by_name(analyzer.rounds[1])
    final = by_name(analyzer.summaries)
    kept = {k for k in first if final.get(k) is first[k]}
    # helpers is neither parsed nor reaches a sink in either round: `scaled` stands.
    assert {
        ("pkg.kernels", "schedule"),
        ("pkg.kernels", "scaled"),
        ("pkg.kernels", "plain"),
    } <= kept
    # `via_builder` asked about pkg.builder, which the second round parses: made again,
    # and so is `outer`, which used its summary.
    # `refers` only named something of it (no call).
    for name in ("via_builder", "outer", "refers"):
        assert ("pkg.kernels", name) not in kept
        assert ("pkg.kernels", name) in final
    # A recursion none of whose functions asked about the new modules stands: each read
    # the other's summary while it was being made, an edge like any other (CYCLE).
    assert {("pkg.kernels", "ping"), ("pkg.kernels", "pong")} <= kept
    # One whose function asked is made again, all of it: `tick` read `tock` while it was
    # being made, and `tock` used `via_builder`.
    assert not {("pkg.kernels", "tick"), ("pkg.kernels", "tock")} & kept
    assert {("pkg.kernels", "tick"), ("pkg.kernels", "tock")} <= set(final)
    # Where the depth limit was met, the summary depends on the depth the question came
    # at: made again, and so is every summary made from it; past the limit, kept.
    limit = MAX_DEPTH * 4
    assert not {("pkg.kernels", f"chain{i}") for i in range(limit + 1)} & kept
    assert {("pkg.kernels", f"chain{i}") for i in range(limit + 1, 41)} <= kept
    assert analyzer.kept_summaries == len(kept)


def test_keeping_summaries_finds_what_making_them_again_finds(tmp_path: Path) -> None:
    kept, found = analyse(tmp_path / "kept", keep=True)
    again, expected = analyse(tmp_path / "again", keep=False)
    assert again.kept_summaries == 0 and kept.kept_summaries > 0
    assert found == expected
    assert "pkg/builder.py:5:12: ZL001" in expected


def test_a_listing_of_subclasses_changes_only_with_a_subclass(tmp_path: Path) -> None:
    """An answer that listed the parsed modules' subclasses of a class (``PARSED``) is
    told otherwise only where a module parsed since holds another: not by every parse."""
    files = {
        "pkg/__init__.py": "",
        "pkg/base.py": "class Base:\n    pass\n",
        "pkg/other.py": "class Other:\n    pass\n",
        "pkg/sub.py": "from pkg.base import Base\n\n\nclass Sub(Base):\n    pass\n",
    }
    write(tmp_path, files)
    project = Project(sorted(tmp_path / name for name in files))
    analyzer = Analyzer(project, Engine(Settings()).rules)
    base = project.module("pkg.base")
    assert base is not None
    cls = base.classes["Base"]
    parsed = project.parsed()
    token = (PARSED, len(parsed), cls, tuple(map(id, analyzer.subclasses_in(cls, parsed))))
    assert not analyzer._changed(token)
    project.module("pkg.other")
    assert len(project.parsed()) == len(parsed) + 1
    assert not analyzer._changed(token)
    project.module("pkg.sub")
    assert analyzer._changed(token)
