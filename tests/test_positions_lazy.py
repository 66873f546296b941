"""A module's positions (Python's tree, parsed again for the purpose) are worked out only
where a finding needs them: for its lines and steps (a finding proved safe too), and to
order two sink calls of one statement. A module whose sink calls no zero-able length
reaches, each in a statement of its own, is not parsed again."""

from __future__ import annotations

from pathlib import Path

from zerolint.config import Settings
from zerolint.dataflow import Analyzer
from zerolint.engine import Engine
from zerolint.project import Project

SAFE = """\
from deep_gemm import get_paged_mqa_logits_metadata


def build(seq_lens, num_sms):
    get_paged_mqa_logits_metadata(seq_lens, 64, num_sms)
    return get_paged_mqa_logits_metadata(seq_lens + 1, 64, num_sms)
"""
UNSAFE = """\
from deep_gemm import get_paged_mqa_logits_metadata


def build(seq_lens, num_sms):
    inner = get_paged_mqa_logits_metadata
    return get_paged_mqa_logits_metadata(inner(seq_lens // 4, 64, num_sms) // 8, 64, num_sms)
"""


def test_positions_are_made_only_where_a_finding_needs_them(tmp_path: Path) -> None:
    paths = []
    for name, text in {"safe.py": SAFE, "unsafe.py": UNSAFE}.items():
        (tmp_path / name).write_text(text)
        paths.append(tmp_path / name)
    engine = Engine(Settings())
    project = Project(paths)
    analyzer = Analyzer(project, engine.rules)
    modules, _ = engine.analyse(project, analyzer, None, set())
    safe, unsafe = modules
    assert [f for mod in modules for f in engine.findings_in(mod, analyzer)]
    assert safe._positions is None
    assert unsafe._positions is not None
    # Two calls of one statement come in the order of their places (the inner call's
    # lengths were met first): what one finding resolves is kept for the next.
    assert [(f.line, f.col) for f in engine.findings_in(unsafe, analyzer)] == [(6, 12), (6, 42)]
