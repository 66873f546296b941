"""A check's findings do not depend on what a package's modules are called.

The modules' names decide the order in which they are parsed and their functions
interpreted. Where modules import each other, a function's summary can be asked for while a
global, a field or a value it needs is still being worked out further up (by a function of
another module, interpreted first), and it is then made from a partial answer; and a
function interpreted before a method was found to wrap a sink does not follow calls of that
method. Each must be made again once the answer is complete, or the findings depend on the
names (``docs/architecture.md``, "Summaries made from partial answers").

``devtools/order_fuzz.py`` checks random packages (the warm fuzz's generator) as named and
with their modules renamed by a random permutation, and compares the findings. The code
before these repairs gave different findings for 22 of the first 300 seeds; each repair's
mutant in ``devtools/mutants.toml`` makes some of them differ again.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from devtools import order_fuzz


def test_the_comparison_maps_renamed_findings_back(tmp_path: Path) -> None:
    """The comparison itself: a renamed package's findings are mapped back to the names
    they had, so a package whose findings are in several modules compares equal, and the
    renaming reaches the imports (the renamed package still has its findings)."""
    texts = order_fuzz.package(3, 10)
    perm = order_fuzz.permutation(3, texts)
    assert sorted(perm) != [perm[k] for k in sorted(perm)]  # not the identity
    as_named = order_fuzz.check(tmp_path / "a", texts)
    assert len({rel for rel, *_ in as_named}) >= 2
    assert order_fuzz.run_seed(3, 10, tmp_path / "b") is None
    moved = order_fuzz.check(tmp_path / "c", order_fuzz.renamed(texts, perm))
    assert len(moved) == len(as_named)


@pytest.mark.parametrize("first", range(0, 300, 50))
def test_random_packages_have_the_same_findings_whatever_their_modules_are_called(
    tmp_path: Path, first: int
) -> None:
    differ = [
        found
        for seed in range(first, first + 50)
        if (found := order_fuzz.run_seed(seed, 10, tmp_path / f"seed{seed}")) is not None
    ]
    assert not differ, [(d["seed"], d["as_named_only"], d["renamed_only"]) for d in differ]


@pytest.mark.parametrize("first", range(3000, 3300, 50))
def test_random_packages_after_many_edits_have_the_same_findings_whatever_their_names(
    tmp_path: Path, first: int
) -> None:
    """As above, with up to 30 edits: larger packages, with more modules that import each
    other, where seeds 3410 and 5690 (below) were found."""
    differ = [
        found
        for seed in range(first, first + 50)
        if (found := order_fuzz.run_seed(seed, 30, tmp_path / f"seed{seed}")) is not None
    ]
    assert not differ, [(d["seed"], d["as_named_only"], d["renamed_only"]) for d in differ]


def test_a_field_made_from_its_writers_partial_summary_is_made_again(tmp_path: Path) -> None:
    """Seed 758, after up to 30 edits: a constructor sets ``self.fn = sched3`` and reads
    ``self.fn`` itself. Interpreted first, its read makes the field's values while the
    constructor's summary is still being made (a recursion: none yet), and those values
    were kept after the constructor was made again, so every ``h.fn(...)`` of the package
    missed the kernel; interpreted after another function had asked for the field, they
    were complete."""
    found = order_fuzz.run_seed(758, 30, tmp_path)
    assert found is None, (found["as_named_only"], found["renamed_only"])


def test_what_is_made_from_a_summary_to_be_made_again_is_made_again(tmp_path: Path) -> None:
    """Seed 2416: ``sched6`` is first made while ``sched3``, which it calls, is being made
    (a recursion through a chain of wrappers across modules), and is to be made again. A
    module's summary made meanwhile from ``sched6``'s partial summary (``OUT12 =
    sched6(LENS_T12, 132)``) must be made again after it too: it was kept without its call
    reaching the kernel when the modules were renamed."""
    found = order_fuzz.run_seed(2416, 10, tmp_path)
    assert found is None, (found["as_named_only"], found["renamed_only"])


def test_a_class_re_exported_by_a_module_not_parsed_yet_is_found(tmp_path: Path) -> None:
    """Seed 5690, after up to 30 edits: ``sched(meta: GMeta8)`` imports the class from a
    module that only re-exports it (``from .m2 import GMeta8``). Resolving the annotation
    parsed the re-exporting module but not the one it names, so the class, and the
    construction that gives its field ``lens // 4``, were found only where another call had
    parsed that module first: under other names."""
    found = order_fuzz.run_seed(5690, 30, tmp_path)
    assert found is None, (found["as_named_only"], found["renamed_only"])


def test_a_summary_that_reads_one_not_remade_yet_is_made_again(tmp_path: Path) -> None:
    """Seed 3410, after up to 30 edits: after a recursion, ``Holder7.again`` is made again
    before ``sched5``, which its ``self.fn`` holds and which its first making did not call,
    and so read ``sched5``'s summary made while ``sched3`` was (not reaching the kernel):
    its call was missed unless the modules' names put ``sched5`` first."""
    found = order_fuzz.run_seed(3410, 30, tmp_path)
    assert found is None, (found["as_named_only"], found["renamed_only"])


def test_the_fields_of_a_re_exported_class_are_not_judged_on_the_re_exporters_text(
    tmp_path: Path,
) -> None:
    """Seed 12374: ``plan_p7(meta: PMeta7)`` imports the dataclass from a module that only
    re-exports it, and reads ``meta.context_lens``, which the class's ``__post_init__``
    writes. Whether an unparsed class may have the field was decided on its module's
    text (``Resolution.may_write_field``): the re-exporting module's, which writes no
    field, so the read held nothing unless another path had parsed that module first."""
    found = order_fuzz.run_seed(12374, 10, tmp_path)
    assert found is None, (found["as_named_only"], found["renamed_only"])


def test_a_field_of_a_class_imported_through_a_re_export_reaches_the_kernel(
    tmp_path: Path,
) -> None:
    """The same, whatever the order: no other path parses the re-exporting module."""
    texts = {
        "pkg/__init__.py": "",
        "pkg/meta.py": (
            "from dataclasses import dataclass, field\n\n\n@dataclass\nclass Meta:\n"
            "    seq_lens: object\n    ratio: int\n"
            "    context_lens: object = field(init=False)\n\n"
            "    def __post_init__(self):\n"
            "        self.context_lens = self.seq_lens // self.ratio\n"
        ),
        "pkg/api.py": "from .meta import Meta\n",
        "pkg/plan.py": (
            "import deep_gemm\n\nfrom .api import Meta\n\n\n"
            "def plan(meta: Meta, num_sms):\n"
            "    return deep_gemm.get_paged_mqa_logits_metadata(meta.context_lens, 64, num_sms)\n"
        ),
    }
    assert order_fuzz.check(tmp_path, texts) == [("pkg/plan.py", 7, 12, "ZL001")]


def test_a_summary_that_read_a_wrappers_partial_summary_is_made_again_after_it(
    tmp_path: Path,
) -> None:
    """Seed 21201: ``Builder8.build`` calls ``swrap5``, a wrapper of a wrapper across two
    modules that import each other. It was first made inside ``swrap5``'s making (a
    constructor's search interprets every function of the module that builds the class),
    so it read ``swrap5``'s partial summary, which reaches no kernel, and finished first.
    Made again after the recursion in the order they first finished, it came before
    ``swrap5`` and read that partial summary again. Under other names it was first made
    after ``swrap5`` was complete. Now a round makes a summary after those it read
    (``Analyzer._remake_order``)."""
    found = order_fuzz.run_seed(21201, 10, tmp_path)
    assert found is None, (found["as_named_only"], found["renamed_only"])


def test_a_call_through_a_parsed_re_export_is_bound_once_its_module_may_be_parsed(
    tmp_path: Path,
) -> None:
    """Seed 19977, and below the same cut down: ``norm`` is imported from a module that
    re-exports it from one no path has parsed. Asked first while no module may be parsed
    (the first pass over a sink call's paths), the call was marked bound when the
    re-exporting module was parsed already (by an earlier finding's paths), though the
    module it names was not: its callee stayed unknown when parsing was allowed, and the
    finding was lost where the modules' names put that earlier finding first."""
    found = order_fuzz.run_seed(19977, 10, tmp_path / "seed")
    assert found is None, (found["as_named_only"], found["renamed_only"])
    texts = {
        "pkg/__init__.py": "",
        "pkg/a.py": (
            "import deep_gemm\n\nfrom .meta import Meta\n\n\n"
            "def plan(meta: Meta, num_sms):\n"
            "    return deep_gemm.get_paged_mqa_logits_metadata(meta.lens, 64, num_sms)\n"
        ),
        "pkg/meta.py": (
            "from .impl import norm\n\n\nclass Meta:\n"
            "    def __init__(self, seq_lens):\n        self.lens = seq_lens // 4\n"
        ),
        "pkg/impl.py": "def norm(seq_lens, ratio):\n    return seq_lens // ratio\n",
        "pkg/b.py": (
            "import deep_gemm\n\nfrom .meta import norm\n\n\n"
            "def run(seq_lens, num_sms):\n    lens = norm(seq_lens, 4)\n"
            "    return deep_gemm.get_paged_mqa_logits_metadata(lens, 64, num_sms)\n"
        ),
    }
    assert order_fuzz.check(tmp_path / "cut", texts) == [
        ("pkg/a.py", 7, 12, "ZL001"),
        ("pkg/b.py", 8, 12, "ZL001"),
    ]


@pytest.mark.parametrize("seed", [14152, 23770])
def test_a_subclass_of_a_subclass_is_found_whatever_was_parsed_before(
    tmp_path: Path, seed: int
) -> None:
    """Seeds 14152 and 23770, after up to 30 edits: a field of ``GMeta10`` (``Base12_r``)
    is written by the constructor of a subclass of a subclass, in a module that names only
    the class it derives from. The modules searched for subclasses were those naming the
    class asked about, so that constructor was found only where another path had parsed
    its module first."""
    found = order_fuzz.run_seed(seed, 30, tmp_path)
    assert found is None, (found["as_named_only"], found["renamed_only"])


def test_a_field_written_by_a_subclass_of_a_subclass_reaches_the_kernel(tmp_path: Path) -> None:
    """The same cut down, a missed finding whatever the order: ``Leaf`` names ``Mid``, not
    ``Base``, whose ``plan`` passes the field to the kernel."""
    texts = {
        "pkg/__init__.py": "",
        "pkg/base.py": (
            "import deep_gemm\n\n\nclass Base:\n"
            "    def __init__(self, seq_lens):\n        self.lens = seq_lens.clamp(min=1)\n\n"
            "    def plan(self, num_sms):\n"
            "        return deep_gemm.get_paged_mqa_logits_metadata(self.lens, 64, num_sms)\n"
        ),
        "pkg/mid.py": "from .base import Base\n\n\nclass Mid(Base):\n    pass\n",
        "pkg/leaf.py": (
            "from .mid import Mid\n\n\nclass Leaf(Mid):\n"
            "    def __init__(self, seq_lens):\n        super().__init__(seq_lens)\n"
            "        self.lens = seq_lens // 4\n"
        ),
    }
    assert order_fuzz.check(tmp_path, texts) == [("pkg/base.py", 9, 16, "ZL001")]


def test_a_field_written_by_a_subclass_in_another_module_is_read_through_the_base(
    tmp_path: Path,
) -> None:
    """Seed 136672 (up to 30 edits), and below the same cut down: ``plan(meta: Meta)``
    reads ``meta.lens`` of a dataclass whose module writes no field and that nobody
    constructs; a subclass of a subclass, in another module, writes it. Decided on the
    class's module's text alone (``Resolution.may_write_field``), the read held nothing
    unless another path had parsed that module first, and then the subclasses' writes
    were found: the finding depended on the modules' names. A class statement that names
    the class among its bases now makes the text's answer "may"."""
    found = order_fuzz.run_seed(136672, 30, tmp_path / "seed")
    assert found is None, (found["as_named_only"], found["renamed_only"])
    texts = {
        "pkg/__init__.py": "",
        "pkg/meta.py": (
            "from dataclasses import dataclass\n\n\n@dataclass\nclass Meta:\n    lens: object\n"
        ),
        "pkg/holder.py": "from .meta import Meta\n\n\nclass Holder(Meta):\n    pass\n",
        "pkg/plan.py": (
            "import deep_gemm\n\nfrom .holder import Holder\nfrom .meta import Meta\n\n\n"
            "def plan(meta: Meta, num_sms):\n"
            "    return deep_gemm.get_paged_mqa_logits_metadata(meta.lens, 64, num_sms)\n\n\n"
            "class Halved(Holder):\n"
            "    def __init__(self, seq_lens):\n"
            "        self.lens = seq_lens // 2\n"
        ),
    }
    assert order_fuzz.check(tmp_path / "cut", texts) == [("pkg/plan.py", 8, 12, "ZL001")]


ARMS_CASE = Path(__file__).parent / "fixtures" / "wholeprogram" / "imports_in_two_arms"


def _arms_case_numbered() -> dict[str, str]:
    """The ``imports_in_two_arms`` case with its modules named ``m0``, ``m1`` ... (in the
    order of their names), every import of them rewritten to match; ``api/`` keeps its
    name."""
    files = sorted(ARMS_CASE.rglob("*.py"))
    names = sorted(p.stem for p in files if p.parent.name == "pkg" and p.stem != "__init__")
    number = {name: f"m{i}" for i, name in enumerate(names)}
    word = re.compile(r"\b(pkg\.|from pkg import )(" + "|".join(map(re.escape, names)) + r")\b")
    texts = {"pyproject.toml": (ARMS_CASE / "pyproject.toml").read_text()}
    for path in files:
        rel = path.relative_to(ARMS_CASE).as_posix()
        if path.parent.name == "pkg" and path.stem in number:
            rel = f"pkg/{number[path.stem]}.py"
        texts[rel] = word.sub(lambda m: m.group(1) + number[m.group(2)], path.read_text())
    return texts


@pytest.mark.parametrize("seed", range(6))
def test_names_bound_in_two_arms_are_followed_whatever_the_modules_are_called(
    tmp_path: Path, seed: int
) -> None:
    """Annotations, base classes and re-exports of a name two arms bind were first read
    through what the module's code binds: which classes that found depended on the
    summaries made before (found as named, missed in 7 of 8 renamings). The case's
    findings, all of them, whatever the modules are called."""
    texts = _arms_case_numbered()
    want = order_fuzz.check(tmp_path / "as-named", texts)
    assert len(want) == 19, want  # every finding of expected.txt, numbered
    perm = order_fuzz.permutation(seed, texts)
    back = {v: k for k, v in perm.items()}
    got = order_fuzz.check(tmp_path / "renamed", order_fuzz.renamed(texts, perm))
    unnamed = sorted(
        (order_fuzz.MODULE_WORD.sub(lambda m: f"m{back[int(m.group(1))]}", rel), *rest)
        for rel, *rest in got
    )
    assert unnamed == want
