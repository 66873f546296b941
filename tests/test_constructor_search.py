"""A field read on an instance asks what constructions of its class wrote into it
(``Resolution.constructor_writes``): the tree is searched for ``Cls(``, and every module
naming it is interpreted. A construction of a class with an ``__init__`` of its own
writes what that ``__init__`` writes (``Calls.construct``), so such a class is searched
for only when its ``__init__`` writes the field; a class without one (a dataclass, a
plain class given keywords) always is."""

from __future__ import annotations

from pathlib import Path

from tests.test_cli_check import write
from zerolint.config import Settings
from zerolint.engine import Engine
from zerolint.project import Project

FILES = {
    "pkg/__init__.py": "",
    "pkg/kernels.py": """\
import torch
from deep_gemm import get_paged_mqa_logits_metadata


class Meta:
    def __init__(self, seq_lens, num_sms):
        self.seq_lens = seq_lens
        self.num_sms = num_sms


class Loose:
    def __init__(self, **extra):
        self.extra = extra


class Plain:
    pass


class Builder:
    def __init__(self, device):
        self.device = device

    def prepare(self, n):
        self.buffer = torch.ones(n, dtype=torch.int32)

    def build(self, n):
        lens = self.buffer[:n]
        return Meta(seq_lens=lens // 4, num_sms=132)


def run(meta: Meta):
    return get_paged_mqa_logits_metadata(meta.seq_lens, 64, meta.num_sms)


def run_loose(loose: Loose):
    return get_paged_mqa_logits_metadata(loose.lens, 64, 132)


def run_plain(plain: Plain):
    return get_paged_mqa_logits_metadata(plain.lens, 64, 132)
""",
    "pkg/app.py": """\
import torch

from pkg.kernels import Builder, Loose, Meta, Plain

builder = Builder(device="cuda")
meta = Meta(seq_lens=torch.zeros(8, dtype=torch.int32), num_sms=132)
loose = Loose(lens=torch.zeros(8, dtype=torch.int32))
plain = Plain(lens=torch.zeros(8, dtype=torch.int32))
""",
}


class Searches(Project):
    """The project, recording each text the analysis searches the tree for."""

    def __init__(self, files: list[Path]) -> None:
        super().__init__(files)
        self.asked: list[str] = []

    def files_containing(self, needle: str) -> list[Path]:
        self.asked.append(needle)
        return super().files_containing(needle)


def test_only_classes_whose_construction_can_write_the_field_are_searched(tmp_path: Path) -> None:
    write(tmp_path, FILES)
    paths = [tmp_path / name for name in FILES]
    project = Searches(sorted(paths))
    outcome = Engine(Settings()).run(sorted(paths), project=project)
    # `self.buffer` of a Builder, `loose.lens`: their __init__ does not write them.
    assert not {"Builder(", "Loose("} & set(project.asked)
    # Meta's __init__ writes `seq_lens`; Plain has no __init__ of its own: each is
    # searched, and what its constructions wrote is found.
    assert {"Meta(", "Plain("} <= set(project.asked)
    found = [(f.line, f.message.split(" when ")[0]) for f in outcome.report.findings]
    assert found == [
        (33, "`meta.seq_lens` can be all zero"),
        (41, "`plain.lens` can be all zero"),
    ]


def test_a_class_of_the_same_name_elsewhere_does_not_feed_the_field(tmp_path: Path) -> None:
    """Constructions are recorded by the class's short name. A field read on `a.Meta`,
    whose __init__ does not write `seq_lens`, took what a construction of an unrelated
    `b.Meta` wrote there, and reported it. Such a class is no longer searched for, so the
    other class's zeros no longer reach the sink through it (found in review; a deliberate
    change: `a.Meta` objects never hold them)."""
    files = {
        "pkg/__init__.py": "",
        "pkg/a.py": (
            "from deep_gemm import get_paged_mqa_logits_metadata\n\n\n"
            "class Meta:\n"
            "    def __init__(self, num_sms):\n"
            "        self.num_sms = num_sms\n\n\n"
            "def run(meta: Meta):\n"
            "    return get_paged_mqa_logits_metadata(meta.seq_lens, 64, meta.num_sms)\n"
        ),
        "pkg/b.py": (
            "import torch\n\n\n"
            "class Meta:\n"
            "    pass\n\n\n"
            "meta = Meta(seq_lens=torch.zeros(8, dtype=torch.int32))\n"
        ),
    }
    write(tmp_path, files)
    paths = [tmp_path / name for name in files]
    outcome = Engine(Settings()).run(sorted(paths), project=Project(sorted(paths)))
    assert outcome.report.findings == []
